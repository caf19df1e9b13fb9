/* transformer_lite: load require.js, d3 and jquery from this site's own copies, and only on pages
 * that ask (the bertviz views written by transformer_lite.viz call window.tlRequire(run)), when a view is near.
 * Paths are resolved against the site's _static/tl/: the script's own folder, or, when the build writes the script
 * into the page (bookbuild/sphinx_ext/page_speed.py), its tag's data-tl-base (relative to the page); so the site works
 * from any sub-path or offline. */
(function () {
  "use strict";
  var me = document.currentScript;
  var base = me.dataset.tlBase ? new URL(me.dataset.tlBase, document.baseURI).href : me.src.replace(/[^\/]*$/, "");
  var queue = [], state = 0; // 0: not loaded, 1: loading, 2: ready
  function ready() {
    window.requirejs.config({
      paths: { d3: base + "d3/d3.min", jquery: base + "jquery/jquery.min" }
    });
    state = 2;
    queue.splice(0).forEach(function (f) { f(); });
  }
  // A view is drawn when it comes within a screen of the reader, not as the page loads: require.js, jquery and d3
  // and the drawing cost a phone ~1 s of work the first screen does not need. window.tlRequireAll()
  // draws every view now (bookbuild/build_pdf.py, the tests; printing).
  var waiting = [];
  function drawAll() { waiting.splice(0).forEach(function (w) { w(); }); }
  window.tlRequireAll = drawAll;
  window.addEventListener("beforeprint", drawAll);
  window.tlRequire = function (f) {
    var place = document.currentScript && document.currentScript.parentNode;
    if (!place || !("IntersectionObserver" in window)) { draw(f); return; }
    var observer, go = function () {
      observer.disconnect();
      var i = waiting.indexOf(go);
      if (i >= 0) waiting.splice(i, 1);
      draw(f);
    };
    observer = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) go();
    }, { rootMargin: "100% 0px" });
    observer.observe(place);
    waiting.push(go);
  };
  function draw(f) {
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
