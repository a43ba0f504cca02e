// perfci dashboard: a hover read-out on chart points and a filter on the index.
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
