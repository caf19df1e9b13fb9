// A folded cell's content waits in a <template class="tl-lazy"> (tools/sphinx_ext/tl_book.py): thousands of
// highlighted-code elements a reader mostly never opens stay out of the page's first layout (issue 27). It is put
// in place when its fold opens (a click, a link into it, the browser's find), before printing, and by
// window.tlMaterialize() (tools/build_pdf.py, the tests). Each new code block gets the copy button its
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

  // A precomputed control's frames (tl_book.py lazy_explore_data): _data/<key>.js, loaded as a script on the
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
    if (details && details.tagName === "DETAILS" && details.open) within(details);
  }, true);
  // a fold opened before this deferred script ran
  document.querySelectorAll("details[open]").forEach(within);
  window.addEventListener("beforeprint", function () { window.tlMaterialize(); });
})();
