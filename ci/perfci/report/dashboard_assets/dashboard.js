// perfci dashboard: a hover read-out on chart points, the zoom, a filter on the index.
// No dependencies; the charts themselves are static SVG written by perfci.
(function () {
  "use strict";
  var readout = document.getElementById("readout");
  var points = document.querySelectorAll("svg.chart circle[data-label]");
  points.forEach(function (dot) {
    dot.addEventListener("mouseenter", function () {
      if (readout) { readout.textContent = dot.getAttribute("data-label"); }
    });
  });
  // the zoom: every chart's recent-nights drawing instead of the whole history, or back
  document.querySelectorAll("button[data-zoom]").forEach(function (button) {
    button.addEventListener("click", function () {
      var recent = button.getAttribute("data-zoom") === "recent";
      document.querySelectorAll(".zoom-recent").forEach(function (el) { el.hidden = !recent; });
      document.querySelectorAll(".zoom-all").forEach(function (el) { el.hidden = recent; });
      document.querySelectorAll("button[data-zoom]").forEach(function (b) {
        b.setAttribute("aria-pressed", String(b === button));
      });
      document.body.setAttribute("data-zoom", recent ? "recent" : "all");
      if (window.history && window.history.replaceState) {  // a link to the zoomed page: #recent
        window.history.replaceState(null, "", recent ? "#recent" : window.location.pathname);
      }
    });
  });
  var zoomIn = document.querySelector("button[data-zoom='recent']");
  if (zoomIn && window.location.hash === "#recent") { zoomIn.click(); }
  var filter = document.getElementById("filter");
  if (filter) {
    filter.addEventListener("input", function () {
      var needle = filter.value.toLowerCase();
      document.querySelectorAll("#cases tr").forEach(function (row, i) {
        if (i > 0) { row.hidden = row.textContent.toLowerCase().indexOf(needle) < 0; }
      });
    });
  }
  document.body.setAttribute("data-charts", String(document.querySelectorAll("svg.chart").length));
  document.body.setAttribute("data-ready", "1");
}());
