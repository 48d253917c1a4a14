// Inference Lab: what Panel, Material UI and Bokeh draw without telling a screen reader
// (apps/ui/shell/page_semantics.py says what and why).
(function () {
  "use strict";
  if (window.__labPageSemantics) { return; }
  window.__labPageSemantics = true;

  function each(root, visit) {
    var all = root.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      visit(all[i]);
      if (all[i].shadowRoot) { each(all[i].shadowRoot, visit); }
    }
  }

  function set(el, name, value) {
    if (value === null) {
      if (el.hasAttribute(name)) { el.removeAttribute(name); }
    } else if (el.getAttribute(name) !== value) {
      el.setAttribute(name, value);
    }
  }

  function chartName(model) {
    // "Chart: Step time, Ideal decode step time (ms) against Batch (sequences)".
    var text = function (axes) {
      return (axes || []).map(function (a) { return a.axis_label; })
        .filter(function (t) { return typeof t === "string" && t.trim(); }).join(", ");
    };
    var title = model.title && typeof model.title.text === "string" ? model.title.text.trim() : "";
    var y = text(model.left), x = text(model.below);
    var axes = y && x ? y + " against " + x : (y || x);
    return "Chart: " + [title, axes].filter(Boolean).join(", ");
  }

  var hooked = new WeakSet();

  function mend() {
    each(document, function (el) {
      // Panel's card header is a button that opens and closes the card: its chevron says which.
      if (el.tagName === "BUTTON" && el.classList.contains("card-header")) {
        set(el, "aria-expanded",
            el.querySelector(".icon-tabler-chevron-down") ? "true"
              : el.querySelector(".icon-tabler-chevron-right") ? "false" : null);
        var chevron = el.querySelector(".card-button svg");  // the state above says it
        if (chevron) { set(chevron, "aria-hidden", "true"); }
      }
      // Material UI's page header leaves empty headings: a heading with no text is no heading.
      if (/^H[1-6]$/.test(el.tagName)) {
        set(el, "aria-hidden", el.textContent.trim() ? null : "true");
      }
    });
    // A chart drawn again later (an input changed) is named again: each Bokeh document's
    // changes ask for a walk too.
    var documents = (window.Bokeh && window.Bokeh.documents) || [];
    for (var i = 0; i < documents.length; i++) {
      if (!hooked.has(documents[i]) && typeof documents[i].on_change === "function") {
        hooked.add(documents[i]);
        documents[i].on_change(soon);
      }
    }
    // Each chart's drawing is a stack of canvases: one image named by its title and axes.
    var index = window.Bokeh && window.Bokeh.index;
    if (index && typeof index.all_views === "function") {
      for (var view of index.all_views()) {
        var model = view.model;
        if (!model || (model.type !== "Figure" && model.type !== "Plot")) { continue; }
        var canvas = view.canvas_view && view.canvas_view.el;
        if (!canvas) { continue; }
        set(canvas, "role", "img");
        set(canvas, "aria-label", chartName(model));
        if (canvas.shadowRoot) {  // its layers and legend swatches: parts of that one image
          each(canvas.shadowRoot, function (layer) {
            if (layer.tagName === "CANVAS") { set(layer, "aria-hidden", "true"); }
          });
        }
      }
    }
  }

  // One walk when the browser is idle, however many events ask for one: never inside the
  // event itself (a number box selects its text on the frame after a focus move).
  var pending = false;
  var idle = window.requestIdleCallback || function (fn) { return setTimeout(fn, 200); };
  function soon() {
    if (pending) { return; }
    pending = true;
    idle(function () { pending = false; mend(); }, { timeout: 1000 });
  }
  [500, 2000, 5000, 10000].forEach(function (wait) { setTimeout(soon, wait); });
  document.addEventListener("focusin", soon, true);
  document.addEventListener("click", soon, true);
  document.addEventListener("keyup", soon, true);
})();
