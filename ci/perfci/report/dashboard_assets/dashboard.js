// perfci dashboard: a hover read-out on chart points (with the commits since the night before),
// the zoom (the last nights; a brush to any nights), a filter on the index.
// No dependencies; the charts themselves are static SVG written by perfci.
(function () {
  "use strict";
  var readout = document.getElementById("readout");
  var points = document.querySelectorAll("svg.chart circle[data-label]");
  points.forEach(function (dot) {
    dot.addEventListener("mouseenter", function () {
      if (!readout) { return; }
      readout.textContent = dot.getAttribute("data-label");
      var compare = dot.getAttribute("data-compare");
      if (compare) {  // the commits since the night before (a build: server's upstream)
        var a = document.createElement("a");
        a.href = compare;
        a.textContent = " · commits since the night before";
        readout.appendChild(a);
      }
      var flame = dot.getAttribute("data-flame");
      if (flame) {  // a confirmed regression's flame graph (B against A), kept with the history
        var f = document.createElement("a");
        f.href = flame;
        f.textContent = " · flame graph (B against A)";
        readout.appendChild(f);
      }
    });
  });

  // the brush: drag across a chart to draw every chart on those nights only, on their own
  // scale; #nights=A-B links to it. Points carry their night (data-i) and value (data-v).
  function attr(el, name) { return parseFloat(el.getAttribute(name)); }
  function zoomChart(svg, from, to) {
    var plot = svg.querySelector("rect.plot");
    if (!plot) { return; }
    var x0 = attr(plot, "x"), w = attr(plot, "width"), y0 = attr(plot, "y"), h = attr(plot, "height");
    var dots = svg.querySelectorAll("circle[data-i]");
    var lo = Infinity, hi = -Infinity, shown = 0;
    dots.forEach(function (d) {
      if (!d.hasAttribute("data-cx0")) {
        d.setAttribute("data-cx0", d.getAttribute("cx"));
        d.setAttribute("data-cy0", d.getAttribute("cy"));
      }
      var i = attr(d, "data-i"), v = attr(d, "data-v");
      if (i >= from && i <= to) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    });
    var pad = (hi - lo) * 0.1 || Math.abs(hi) * 0.05 || 1;
    lo -= pad; hi += pad;
    var line = [];
    dots.forEach(function (d) {
      var i = attr(d, "data-i"), v = attr(d, "data-v");
      var inside = i >= from && i <= to;
      var holder = d.parentNode.tagName.toLowerCase() === "a" ? d.parentNode : d;
      holder.style.display = inside ? "" : "none";
      if (!inside) { return; }
      var cx = x0 + w * (to > from ? (i - from) / (to - from) : 0.5), cy = y0 + h * (1 - (v - lo) / (hi - lo));
      d.setAttribute("cx", cx.toFixed(1));
      d.setAttribute("cy", cy.toFixed(1));
      if (d.hasAttribute("data-label")) { line.push([i, cx.toFixed(1) + "," + cy.toFixed(1)]); shown += 1; }
    });
    var series = svg.querySelector("polyline.series");
    if (series) {
      if (!series.hasAttribute("data-points0")) { series.setAttribute("data-points0", series.getAttribute("points")); }
      line.sort(function (a, b) { return a[0] - b[0]; });
      series.setAttribute("points", line.map(function (p) { return p[1]; }).join(" "));
    }
    svg.classList.add("zoomed");
    svg.setAttribute("data-shown", String(shown));
  }
  function unzoomChart(svg) {
    svg.querySelectorAll("circle[data-cx0]").forEach(function (d) {
      d.setAttribute("cx", d.getAttribute("data-cx0"));
      d.setAttribute("cy", d.getAttribute("data-cy0"));
      (d.parentNode.tagName.toLowerCase() === "a" ? d.parentNode : d).style.display = "";
    });
    var series = svg.querySelector("polyline.series");
    if (series && series.hasAttribute("data-points0")) { series.setAttribute("points", series.getAttribute("data-points0")); }
    svg.classList.remove("zoomed");
    svg.removeAttribute("data-shown");
  }
  var unzoom = document.getElementById("unzoom");
  function zoomAll(from, to) {
    document.querySelectorAll(".zoom-all svg.chart").forEach(function (svg) { zoomChart(svg, from, to); });
    document.body.setAttribute("data-nights", from + "-" + to);
    if (unzoom) { unzoom.hidden = false; }
    if (window.history && window.history.replaceState) { window.history.replaceState(null, "", "#nights=" + from + "-" + to); }
  }
  if (unzoom) {
    unzoom.addEventListener("click", function () {
      document.querySelectorAll("svg.chart.zoomed").forEach(unzoomChart);
      document.body.removeAttribute("data-nights");
      unzoom.hidden = true;
      if (window.history && window.history.replaceState) { window.history.replaceState(null, "", window.location.pathname); }
    });
  }
  document.querySelectorAll(".zoom-all svg.chart").forEach(function (svg) {
    var start = null, box = null;
    function at(event) {  // the pointer in the chart's own coordinates
      var m = svg.getScreenCTM();
      return m ? (event.clientX - m.e) / m.a : 0;
    }
    svg.addEventListener("mousedown", function (event) {
      start = at(event);
      box = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      box.setAttribute("class", "brush");
      box.setAttribute("y", "0");
      box.setAttribute("height", svg.viewBox.baseVal.height);
      box.setAttribute("x", start);
      box.setAttribute("width", "0");
      svg.appendChild(box);
      event.preventDefault();
    });
    svg.addEventListener("mousemove", function (event) {
      if (start === null || !box) { return; }
      var now = at(event);
      box.setAttribute("x", Math.min(start, now));
      box.setAttribute("width", Math.abs(now - start));
    });
    window.addEventListener("mouseup", function (event) {
      if (start === null) { return; }
      var a = Math.min(start, at(event)), b = Math.max(start, at(event));
      start = null;
      if (box) { box.remove(); box = null; }
      var nights = [];
      svg.querySelectorAll("circle[data-label]").forEach(function (d) {
        var cx = attr(d, "cx");
        if (cx >= a && cx <= b && d.parentNode.style.display !== "none" && d.style.display !== "none") {
          nights.push(attr(d, "data-i"));
        }
      });
      if (nights.length >= 2) { zoomAll(Math.min.apply(null, nights), Math.max.apply(null, nights)); }
    });
  });
  var asked = /^#nights=(\d+)-(\d+)$/.exec(window.location.hash);
  if (asked && +asked[1] < +asked[2]) { zoomAll(+asked[1], +asked[2]); }
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
