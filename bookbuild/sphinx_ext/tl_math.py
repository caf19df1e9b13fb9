"""The book's math, typeset when the site is built (fast on a phone): no math script on any page.

Listed in _config.yml (``extensions`` and ``html_math_renderer: tl_static_math``), so both editions use it.
Sphinx hands every formula to this renderer instead of writing ``\\(...\\)`` for MathJax to typeset in the
reader's browser. The renderer passes it to MathJax 3.2.2 running in Node (bookbuild/sphinx_ext/tl_math.js;
npm ``mathjax-full``, the version of the ``mathjax`` package the pages loaded before) and writes what
MathJax would have put in the page: CommonHTML with its assistive MathML (screen readers read the MathML,
as before), inside the same ``<span class="math">`` / ``<div class="math">`` Sphinx writes. Each page
carries the CommonHTML stylesheet of its own glyphs in a ``<style>`` in its head; the glyphs' web fonts
are the site's own copy (``_static/tl/mathjax/output/chtml/fonts/woff-v2``, bookbuild/build_book.py).

A formula MathJax cannot read (an undefined macro, unbalanced braces) is a Sphinx warning at the formula,
so the strict build fails; in the browser it would have been red text.

Displayed equations are built as Sphinx's own MathJax renderer builds them (sphinx.ext.mathjax): equation
numbers with their permalink, several equations separated by blank lines aligned together, ``\\\\`` in
an equation wrapped in ``split``.
"""
from __future__ import annotations

import atexit
import json
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

logger = logging.getLogger(__name__)

SCRIPT = Path(__file__).with_name("tl_math.js")
FONTS = "_static/tl/mathjax/output/chtml/fonts/woff-v2"  # bookbuild/build_book.py copies MathJax's fonts there
FONT_PLACEHOLDER = "@TL_MATH_FONTS@"                     # tl_math.js writes it where the fonts' URL goes


class MathJaxNode:
    """One Node process running tl_math.js for the whole build; one request, one answer (JSON lines)."""

    def __init__(self, root: Path):
        self.root = root
        self.proc = None
        self.page_open = False  # a formula was typeset since the last page's stylesheet was taken

    def ask(self, request: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(["node", str(SCRIPT)], cwd=self.root, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)
            atexit.register(self.close)
        self.proc.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{SCRIPT.name} stopped (is `npm ci` done? it needs node_modules/mathjax-full)")
        return json.loads(line)

    def typeset(self, tex: str, display: bool) -> dict:
        if not self.page_open:
            self.ask({"page": True})
            self.page_open = True
        return self.ask({"tex": tex, "display": display})

    def stylesheet(self) -> str | None:
        """The CommonHTML stylesheet of the formulas typeset since the last call (None if there were none)."""
        if not self.page_open:
            return None
        self.page_open = False
        return self.ask({"css": True})["css"]

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


def _mathjax(app) -> MathJaxNode:
    if not hasattr(app, "_tl_mathjax"):
        app._tl_mathjax = MathJaxNode(Path(app.srcdir))
    return app._tl_mathjax


def _typeset(self, node, tex: str, display: bool) -> str:
    answer = _mathjax(self.builder.app).typeset(tex, display)
    if "error" in answer:
        logger.warning("MathJax cannot typeset %r: %s", tex[:200], answer["error"], location=node,
                       type="tl_math", subtype="tex")
        return self.encode(tex)
    return answer["html"]


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_typeset(self, node, node.astext(), display=False) + "</span>")
    raise nodes.SkipNode


def display_tex(node: nodes.math_block) -> str:
    """The TeX of a displayed equation, as sphinx.ext.mathjax writes it between \\[ and \\]."""
    parts = [part for part in node.astext().split("\n\n") if part.strip()]
    tex = []
    for i, part in enumerate(parts):
        tex.append(r"\begin{split}" + part + r"\end{split}" if r"\\" in part else part)
        if i < len(parts) - 1:
            tex.append(r"\\")
    body = "".join(tex)
    return r" \begin{align}\begin{aligned}" + body + r"\end{aligned}\end{align} " if len(parts) > 1 else body


def _focusable(html: str) -> str:
    """A displayed formula scrolls sideways when it is wider than the column (MathJax's CSS): it takes the keyboard
    focus, as MathJax in the browser made every formula (tabindex="0"), so that a keyboard can scroll it
    (WCAG 2.1.1; axe-core's scrollable-region-focusable)."""
    if not html.startswith("<mjx-container "):
        return html
    return html.replace("<mjx-container ", '<mjx-container tabindex="0" ', 1)


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node["nowrap"]:
        self.body.append(_focusable(_typeset(self, node, node.astext(), display=True)) + "</div>")
        raise nodes.SkipNode
    if node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append('<span class="eqno">(%s)' % number)
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append(_focusable(_typeset(self, node, display_tex(node), display=True)))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def page_stylesheet(app, pagename, templatename, context, doctree) -> None:
    """The page's CommonHTML stylesheet (its glyphs, the fonts' URL relative to the page) into its head."""
    if app.builder.format != "html" or getattr(app.builder, "math_renderer_name", None) != "tl_static_math":
        return
    css = _mathjax(app).stylesheet()
    if css is None:
        return
    css = css.replace(FONT_PLACEHOLDER, context["pathto"](FONTS, 1))
    context["metatags"] = context.get("metatags", "") + f'\n<style id="tl-math-css">{css}</style>\n'


def setup(app):
    app.add_html_math_renderer("tl_static_math", (visit_math, None), (visit_displaymath, None))
    app.connect("html-page-context", page_stylesheet, priority=990)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": False}
