// A link to a section inside a folded deep dive (from the page's contents, another chapter, a search result) opens
// the fold first, so that the browser can scroll to it (bookbuild/sphinx_ext/deep_dives.py).
(function () {
  "use strict";
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    var fold = target.closest("details.tl-deep-dive-fold");
    if (!fold || fold.open) return;
    while (fold) {
      fold.open = true;
      fold = fold.parentElement && fold.parentElement.closest("details.tl-deep-dive-fold");
    }
    target.scrollIntoView();
  }
  window.addEventListener("hashchange", openTarget);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", openTarget);
  else openTarget();
})();
