// A folded cell's content waits in a <template class="tl-lazy"> (bookbuild/sphinx_ext/accessibility.py): thousands of
// highlighted-code elements a reader mostly never opens stay out of the page's first layout. It is put
// in place when its fold opens (a click, a link into it, the browser's find), before printing, and by
// window.tlMaterialize() (bookbuild/build_pdf.py, the tests). Each new code block gets the copy button its
// neighbours got from sphinx-copybutton.
(function () {
  "use strict";
  var counter = 0;

  function copyButtons(root) {
    var model = document.querySelector("button.copybtn");
    if (!model) return;
    root.querySelectorAll("div.highlight pre").forEach(function (pre) {
      if (pre.nextElementSibling && pre.nextElementSibling.classList.contains("copybtn")) return;
      pre.id = pre.id || "tl-lazy-code-" + (++counter);
      var button = model.cloneNode(true);
      button.setAttribute("data-clipboard-target", "#" + pre.id);
      pre.insertAdjacentElement("afterend", button);
    });
  }

  function materialize(template) {
    var parent = template.parentNode;
    if (!parent) return;
    var content = document.importNode(template.content, true);
    var holder = document.createElement("div");
    holder.appendChild(content);
    copyButtons(holder);
    while (holder.firstChild) parent.insertBefore(holder.firstChild, template);
    parent.removeChild(template);
  }

  // the templates this fold holds itself (not those of a fold inside it, which wait for their own)
  // (again, for a template that one of them held)
  function within(details) {
    for (var done = false; !done;) {
      var mine = Array.prototype.slice.call(details.querySelectorAll("template.tl-lazy")).filter(function (t) {
        return t.parentNode && t.parentNode.closest("details") === details;
      });
      mine.forEach(materialize);
      done = mine.length === 0;
    }
  }

  // A precomputed control's frames (page_speed.py lazy_explore_data): _data/<key>.js, loaded as a script on the
  // control's first use; window.tlExploreData(root) -> a promise of its data.
  var pending = {};
  window.tlExploreData = function (root) {
    var holder = root.querySelector("script.tl-data");
    var key = holder && holder.dataset.tlKey;
    if (!key) return Promise.reject(new Error("no frames for " + root.id));
    window.tlData = window.tlData || {};
    if (window.tlData[key]) return Promise.resolve(window.tlData[key]);
    if (!pending[key]) {
      pending[key] = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = holder.dataset.tlSrc;
        s.onload = function () { resolve(window.tlData[key]); };
        s.onerror = function () { delete pending[key]; reject(new Error("cannot load " + s.src)); };
        document.head.appendChild(s);
      });
    }
    return pending[key];
  };
  // the reader reaching for a control starts loading its frames
  ["pointerover", "touchstart", "focusin"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var root = event.target && event.target.closest && event.target.closest(".tl-explore");
      if (root && root.querySelector("script.tl-data[data-tl-key]")) window.tlExploreData(root).catch(function () {});
    }, {passive: true, capture: true});
  });

  window.tlMaterialize = function (root) {
    for (var all; (all = (root || document).querySelectorAll("template.tl-lazy")).length;) {
      Array.prototype.slice.call(all).forEach(materialize);
    }
  };
  // "toggle" does not bubble: listen in the capture phase, for every <details> of the page
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (details && details.tagName === "DETAILS" && details.open) {
      within(details);
      if (window.tlTabStops) window.tlTabStops();  // a code block the fold shows may scroll (bookbuild/slim_static.py)
    }
  }, true);
  // a fold opened before this deferred script ran
  document.querySelectorAll("details[open]").forEach(within);

  // A chapter's sections are laid out a few at a time. The page's head gives <html> the class "tl-cv",
  // under which tl-book.css lets the browser skip the style and layout of a section while it is off screen
  // (content-visibility: auto): a phone lays out the first screen, not the whole chapter at once. Once the page
  // has loaded, each idle moment shows one more section (class "tl-shown"), so the rest is laid out in small
  // steps, and when every section is shown the class goes and the page is as it would be without it
  // (data-tl-shown on <html> says so: bookbuild/build_pdf.py and the tests wait for it). The sections' own layout is
  // the same contained or not (tl-book.css), so nothing moves when one is shown.
  var root = document.documentElement;

  // The scripts nothing on the first screen needs (page_speed.py AFTER_FIRST_FRAME: the copy buttons, Sphinx's
  // shortcuts...) wait in the head as <script type="text/x-tl-after-first-frame">; after the page's first frame
  // they load, in their order.
  function loadLater() {
    document.querySelectorAll('script[type="text/x-tl-after-first-frame"]').forEach(function (waiting) {
      var s = document.createElement("script");
      s.src = waiting.getAttribute("src");
      s.async = false;
      waiting.parentNode.replaceChild(s, waiting);
    });
  }
  window.tlLoadLater = loadLater;
  var afterFirstFrame = function () { requestAnimationFrame(function () { setTimeout(loadLater, 0); }); };
  if (document.readyState === "complete") afterFirstFrame();
  else window.addEventListener("load", afterFirstFrame);

  function showAll() {
    root.classList.remove("tl-cv");
    root.dataset.tlShown = "";
  }
  window.tlShowSections = showAll;
  if (root.classList.contains("tl-cv")) {
    var idle = window.requestIdleCallback || function (f) { return setTimeout(f, 30); };
    var start = function () {
      var sections = Array.prototype.slice.call(document.querySelectorAll("article.bd-article section section"));
      var i = 0;
      (function next() {
        if (!root.classList.contains("tl-cv")) return;
        if (i < sections.length) { sections[i++].classList.add("tl-shown"); idle(next, {timeout: 500}); return; }
        showAll();
        if (window.tlTabStops) window.tlTabStops();  // the tab stops of what was skipped (bookbuild/slim_static.py)
      })();
    };
    // not before the page's first frame (requestAnimationFrame waits for it): the first screen is drawn first
    var begin = function () { requestAnimationFrame(function () { setTimeout(function () { idle(start, {timeout: 500}); }, 0); }); };
    if (document.readyState === "complete") begin();
    else window.addEventListener("load", begin);
  } else {
    root.dataset.tlShown = "";
  }
  window.addEventListener("beforeprint", function () { showAll(); window.tlMaterialize(); });
})();
