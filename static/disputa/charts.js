// Charts from markup: <canvas data-chart='{"type": "bar", "data": {…}, "options": {…}}'> becomes a Chart.js chart.
// The config is plain JSON in the attribute (no inline script, no eval: the CSP allows neither). Chart.js sizes the
// canvas through element.style (CSSOM), which the CSP allows; it injects no <style> and no style attribute markup.
// Runs on page load and on htmx:load, which htmx fires for swapped-in content, out-of-band swaps from the
// WebSocket included. A drawn canvas is marked data-chart-ready="1" ("error" when its config is unusable).
(function () {
  "use strict";

  function configOf(canvas) {
    var config = JSON.parse(canvas.getAttribute("data-chart"));
    if (!config || typeof config !== "object" || !config.type || !config.data) {
      throw new Error("data-chart needs an object with type and data");
    }
    config.options = config.options || {};
    config.options.animation = false; // drawn at once: nothing moves under the reader, tests see it immediately
    return config;
  }

  function forgetDetached() {
    // A canvas replaced by a swap takes its chart with it: free the chart's observers and listeners.
    var instances = window.Chart.instances || {};
    Object.keys(instances).forEach(function (id) {
      var chart = instances[id];
      if (chart && chart.canvas && !document.documentElement.contains(chart.canvas)) chart.destroy();
    });
  }

  function drawCharts(root) {
    if (!window.Chart || !root || !root.querySelectorAll) return;
    var canvases = Array.prototype.slice.call(root.querySelectorAll("canvas[data-chart]:not([data-chart-ready])"));
    if (root.matches && root.matches("canvas[data-chart]:not([data-chart-ready])")) canvases.unshift(root);
    if (!canvases.length) return;
    forgetDetached();
    canvases.forEach(function (canvas) {
      try {
        new window.Chart(canvas, configOf(canvas));
        canvas.setAttribute("data-chart-ready", "1");
      } catch (error) {
        canvas.setAttribute("data-chart-ready", "error");
        if (window.console) console.error("chart " + (canvas.id || "") + " not drawn:", error);
      }
    });
  }

  document.addEventListener("htmx:load", function (event) { drawCharts(event.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { drawCharts(document); });
  } else {
    drawCharts(document);
  }
  window.disputaDrawCharts = drawCharts;
})();
