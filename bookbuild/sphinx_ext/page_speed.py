"""The site fast on a phone (tests/test_budgets.py, bookbuild/lighthouse.py): images sized and lazy, no script that
blocks rendering, the controls' frames loaded on first use, sections laid out a few at a time (static/tl-lazy.js)."""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.util import logging as sphinx_logging

logger = sphinx_logging.getLogger(__name__)


def visit_image(self, node) -> None:
    """Sphinx's <img>, with the image's own width and height (the browser reserves its box before the file arrives:
    no layout shift; CSS keeps it fluid, static/tl-book.css) and loading="lazy": the figures load as the reader
    scrolls near them. Every one: on a phone the first paragraphs fill the first screen and are what Lighthouse
    finds as the largest paint, and an eager first figure (38 KB on chapter 3) only delayed it."""
    from sphinx.util.images import get_image_size

    path = Path(self.builder.srcdir) / node["uri"]
    start = len(self.body)
    type(self).visit_image(self, node)  # the translator's own (sphinx.writers.html5)
    for i in range(start, len(self.body)):
        tag = self.body[i]
        if not tag.startswith("<img ") or "width=" in tag or "height=" in tag:
            continue
        size = get_image_size(str(path)) if path.is_file() else None
        extra = (f' width="{size[0]}" height="{size[1]}"' if size else "") + ' loading="lazy"'
        self.body[i] = "<img" + extra + tag[4:]
        break


def depart_image(self, node) -> None:
    type(self).depart_image(self, node)


SITE_ASSETS = Path(__file__).resolve().parent.parent / "site_assets"


# scripts nothing on the first screen needs (Sphinx's keyboard shortcuts, search-word highlighting and their
# Chinese, the copy buttons, sphinx-togglebutton), each written to start whenever it runs (they check
# document.readyState): the page loads them after its first frame (static/tl-lazy.js), so a phone draws the first screen
# before it fetches and runs them. Their type keeps the browser from loading them before.
AFTER_FIRST_FRAME = ("doctools.js", "sphinx_highlight.js", "translations.js", "clipboard.min.js", "copybutton.js",
                     "togglebutton.js")


LATER_TYPE = "text/x-tl-after-first-frame"


def unblocked_scripts(app, pagename, templatename, context, doctree) -> None:
    """Every script file of the page's head is deferred (it runs after the page is parsed, before DOMContentLoaded,
    in order, as the theme's and the extensions' scripts expect) or, for AFTER_FIRST_FRAME, loaded in order after
    the page's first frame (static/tl-lazy.js), but two that inline scripts of the page use while
    it is parsed, which are written into the page instead: documentation_options.js (DOCUMENTATION_OPTIONS, set by
    the inline ``DOCUMENTATION_OPTIONS.pagename = ...``; rendered from Sphinx's own template with the page's
    context) and tl/tl-require.js (window.tlRequire, called by the bertviz views' inline scripts; the site's
    _static/tl/, whence it loads require.js, given in its tag's data-tl-base as the page's relative path to it)."""
    if app.builder.format != "html" or "script_files" not in context or pagename == "search":
        return  # the search page: its template's searchtools.js runs at once and needs doctools.js before it
    from sphinx.builders.html._assets import _JavaScript

    scripts = []
    for js in context["script_files"]:
        name = str(getattr(js, "filename", js) or "")
        attributes = dict(getattr(js, "attributes", {}) or {})
        priority = getattr(js, "priority", 500)
        if name.endswith("documentation_options.js"):
            body = _documentation_options(app, context)
            scripts.append(_JavaScript("", priority=priority, body=body))
        elif name.endswith("tl/tl-require.js"):
            source = (SITE_ASSETS / "tl-require.js").read_text(encoding="utf-8")
            scripts.append(_JavaScript("", priority=priority, body=source,
                                       **{"data-tl-base": context["pathto"]("_static/tl/", 1)}))
        elif name.rsplit("/", 1)[-1] in AFTER_FIRST_FRAME and attributes.get("type") in (None, "text/javascript"):
            attributes.pop("body", None)
            attributes.pop("type", None)
            scripts.append(_JavaScript(js.filename, priority=priority, type=LATER_TYPE, **attributes))
        elif (name and "async" not in attributes and "defer" not in attributes
              and attributes.get("type") in (None, "text/javascript")):
            attributes.pop("body", None)
            scripts.append(_JavaScript(js.filename, priority=priority, defer="defer", **attributes))
        else:
            scripts.append(js)
    context["script_files"] = scripts


def _documentation_options(app, context) -> str:
    """Sphinx's documentation_options.js for this page, from the basic theme's template and the page's context."""
    import sphinx

    template = Path(sphinx.__file__).parent / "themes" / "basic" / "static" / "documentation_options.js.jinja"
    return app.builder.templates.render_string(template.read_text(encoding="utf-8"), context)


# A precomputed control (transformer_lite.book.interactive.explore) carries every frame (figures as PNG data URIs)
# in a <script type="application/json" class="tl-data">: up to 370 KB (gzip) of a chapter's page, all on the
# critical path, for figures the reader sees only by moving a slider. Here the frames go to a file of their own,
# _data/<hash>.js (a script, not JSON: a page opened from disk may load scripts, not fetch files), and the holder
# keeps only its address; the control's own script (written so by interactive.py) then asks static/tl-lazy.js for
# them (window.tlExploreData) when the reader first moves it, or touches or focuses it. The page shows the
# control's first frame as before.

_EXPLORE_DATA = re.compile(r'<script type="application/json" class="tl-data">(.*?)</script>', re.S)


# what the control's script calls for frames that are not in the page (interactive.py _SCRIPT)
EXPLORE_LOADER = "window.tlExploreData(r)"


def lazy_explore_data(app, doctree, docname) -> None:
    """Move each control's frames out of the page (see above). A control whose script would not load them (an
    output an older transformer_lite wrote: its chapter must run again) keeps them, with a warning (the strict
    build fails)."""
    if app.builder.format != "html":
        return
    import hashlib

    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if 'class="tl-data"' not in text:
            continue
        if text.count(EXPLORE_LOADER) != len(_EXPLORE_DATA.findall(text)):
            logger.warning("%s: a precomputed control whose script does not load its frames on first use (%s): its "
                           "output was written by an older transformer_lite; run the chapter again (remove "
                           "_build/.jupyter_cache*)", docname, EXPLORE_LOADER, location=raw)
            continue
        up = "../" * docname.count("/")

        def move(m, up=up):
            data = m.group(1)
            key = hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]
            dest = Path(app.outdir) / "_data" / f"{key}.js"
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.exists():
                dest.write_text(f'(window.tlData=window.tlData||{{}})["{key}"]={data};\n', encoding="utf-8")
            return (f'<script type="application/json" class="tl-data" data-tl-key="{key}" '
                    f'data-tl-src="{up}_data/{key}.js"></script>')

        raw.replace_self(nodes.raw("", _EXPLORE_DATA.sub(move, text), format="html", classes=raw.get("classes", [])))


def setup(app) -> None:
    app.add_js_file("tl-lazy.js", loading_method="defer")
    # sections laid out a few at a time (static/tl-lazy.js, tl-book.css); in the head, before the body is laid out
    app.add_js_file(None, body='document.documentElement.classList.add("tl-cv");', priority=200)
    app.add_node(nodes.image, override=True, html=(visit_image, depart_image))
    app.connect("html-page-context", unblocked_scripts, priority=950)  # after the extensions added theirs
    app.connect("doctree-resolved", lazy_explore_data)
