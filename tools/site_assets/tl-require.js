/* transformer_lite: load require.js, d3 and jquery from this site's own copies, and only on pages
 * that ask (the bertviz views written by transformer_lite.viz call window.tlRequire(run)).
 * Paths are resolved against this script's own URL, so the site works from any sub-path or offline. */
(function () {
  "use strict";
  var base = document.currentScript.src.replace(/[^\/]*$/, "");
  var queue = [], state = 0; // 0: not loaded, 1: loading, 2: ready
  function ready() {
    window.requirejs.config({
      paths: { d3: base + "d3/d3.min", jquery: base + "jquery/jquery.min" }
    });
    state = 2;
    queue.splice(0).forEach(function (f) { f(); });
  }
  window.tlRequire = function (f) {
    if (state === 2) { f(); return; }
    queue.push(f);
    if (state === 1) return;
    state = 1;
    if (typeof window.requirejs === "function") { ready(); return; }
    // not before the page's deferred scripts have run: with require.js on the page, their UMD wrappers
    // (clipboard.js, bootstrap) would register as anonymous AMD modules instead of globals
    var load = function () {
      var s = document.createElement("script");
      s.src = base + "requirejs/require.js";
      s.onload = ready;
      document.head.appendChild(s);
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", load);
    else load();
  };
})();
