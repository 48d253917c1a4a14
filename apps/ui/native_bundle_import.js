// Inference Lab: panel-material-ui's widget bundle is imported by the browser itself, not
// through es-module-shims (apps/ui/panel_compat.py, NativeBundleImport, says why).
(function () {
  "use strict";
  var BUNDLE = /\/panel[-_]material[-_]ui\/panel-material-ui\.bundle\.js([?#]|$)/;

  function native(shim) {
    // The bundle imports nothing, so the browser's own loader gives the same module; any
    // other module, or a bundle the browser cannot load, goes through the shim as before.
    return new Proxy(shim, {
      apply: function (target, self, args) {
        var url = String(args[0]);
        if (!BUNDLE.test(url)) {
          return Reflect.apply(target, self, args);
        }
        return import(new URL(url, document.baseURI).href).catch(function () {
          return Reflect.apply(target, self, args);
        });
      }
    });
  }

  if (typeof window.importShim === "function") {
    window.importShim = native(window.importShim);
  } else {
    var wrapped;
    Object.defineProperty(window, "importShim", {
      configurable: true,
      get: function () { return wrapped; },
      set: function (shim) { wrapped = typeof shim === "function" ? native(shim) : shim; }
    });
  }
})();
