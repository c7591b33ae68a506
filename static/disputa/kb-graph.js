// The KB graph: cytoscape (vendored) over the JSON the page embeds with json_script. No inline script: CSP.
(function () {
  "use strict";
  var STATUS_COLOURS = { robust: "#1f7a3f", strong: "#5a9e3a", contested: "#c58a00", weak: "#d96c2c", refuted: "#b3261e", baseless: "#6b6b6b" };
  var EDGE_COLOURS = { supports: "#1f7a3f", contradicts: "#b3261e", refutes: "#7a1410", "depends-on": "#2457c5", refines: "#6b4fbb",
    exaggerates: "#d96c2c", confounds: "#9a6400", "derived-from-source": "#8a94a0", addresses: "#0b7285", "tangential-to": "#adb5bd",
    "scope-mismatch-with": "#e64980", "layer-shift-from": "#f08c00" };
  function start() {
    var box = document.getElementById("kb-graph");
    var data = document.getElementById("kb-graph-data");
    if (!box || !data || typeof cytoscape === "undefined") return;
    var graph = JSON.parse(data.textContent);
    // Cytoscape injects a <style> element (`.__________cytoscape_container { position: relative; }`) unless an
    // element with its id is already in the document; the CSP refuses inline styles, so the browser blocked it
    // and logged a violation. Claim the id with an inert element and apply the one rule through the CSSOM.
    if (!document.getElementById("__________cytoscape_stylesheet")) {
      var marker = document.createElement("meta");
      marker.id = "__________cytoscape_stylesheet";
      document.head.appendChild(marker);
    }
    if (window.getComputedStyle(box).position === "static") box.style.position = "relative";
    var cy = cytoscape({
      container: box,
      elements: graph.nodes.concat(graph.edges),
      style: [
        { selector: "node[kind = 'argument']", style: { "background-color": function (n) { return STATUS_COLOURS[n.data("status")] || "#999"; }, label: "data(label)", "font-size": 9, color: "#1d232b" } },
        { selector: "node[kind = 'source']", style: { shape: "round-rectangle", "background-color": "#dde2e8", label: "data(label)", "font-size": 7, width: 14, height: 14 } },
        { selector: "edge", style: { width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle", "arrow-scale": 0.7,
          "line-color": function (e) { return EDGE_COLOURS[e.data("type")] || "#999"; }, "target-arrow-color": function (e) { return EDGE_COLOURS[e.data("type")] || "#999"; } } },
        { selector: "edge[?engagement]", style: { "line-style": "dashed", width: 2 } }
      ],
      layout: { name: "cose", animate: false, randomize: false, nodeRepulsion: 9000 }
    });
    cy.on("tap", "node[kind = 'argument']", function (event) {
      window.location.href = window.location.pathname.replace(/\/$/, "") + "/arguments/" + event.target.id() + "/";
    });
    box.dataset.ready = "true";
    box.dataset.nodes = String(cy.nodes().length);
    box.dataset.edges = String(cy.edges().length);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
