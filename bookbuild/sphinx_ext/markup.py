"""The notebooks' own markup, shown the site's way: misconception notes become styled admonitions, and the
anchors the notebooks write for JupyterLab go.

A chapter names a common error as a block quote whose first words are **Misconception.** ::

    > **Misconception.** "LayerNorm divides by the unbiased variance (n − 1)." ...what circulates...
    >
    > **What is true.** ...
    >
    > **Checked** in the next cell.

In Jupyter and Colab that is an ordinary quote, readable as it is. On the site it becomes an admonition with the
class ``misconception`` (styled by static/tl-book.css), so every chapter's notes look the same.
``tests/test_book_conventions.py`` checks the three parts in the notebooks.
"""
from __future__ import annotations

import re

from docutils import nodes

# The first words of a misconception note, per language (the Chinese edition's catalogs translate them). The
# Chinese puts its full stop after the bold, **常见误解**。 (locales/zh_CN/STYLE.md: **常见误解。**后面 does not
# render as bold); the stop is then the first character of the text after the marker, and is dropped with it.
MARKERS = ("Misconception.", "常见误解。", "常见误解.", "常见误解")


def _misconception_quotes(doctree):
    for quote in list(doctree.findall(nodes.block_quote)):
        first = quote.children[0] if quote.children else None
        if not isinstance(first, nodes.paragraph):
            continue
        # MyST starts a paragraph with an empty Text node before inline markup: skip blank text
        lead = next((c for c in first.children if not (isinstance(c, nodes.Text) and not c.astext().strip())), None)
        if isinstance(lead, nodes.strong) and lead.astext().strip() in MARKERS:
            yield quote, first, lead


def convert(app, doctree) -> None:
    for quote, first, lead in _misconception_quotes(doctree):
        title_text = lead.astext().strip().rstrip(".。")
        after = first.children[first.index(lead) + 1:]
        first.remove(lead)
        if after and isinstance(after[0], nodes.Text):  # the space after "Misconception.", or the 。 after **常见误解**
            rest = after[0].astext().lstrip()
            if not lead.astext().strip().endswith((".", "。")):
                rest = rest[1:].lstrip() if rest[:1] in ("。", ".") else rest
            first.replace(after[0], nodes.Text(rest))
        box = nodes.admonition("", classes=["misconception"])
        box += nodes.title(title_text, title_text)
        box.extend(quote.children)
        box.source, box.line = quote.source, quote.line
        quote.replace_self(box)


# The notebooks put `<div id="slug"></div>` before each heading that a link targets, for JupyterLab, which does not
# name headings by MyST's slugs. The site's sections already have those ids: the blocks go, one element per id.
JUPYTER_ANCHOR = re.compile(r'(<div id="[^"<>\s]+"></div>)+\s*')


def drop_jupyter_anchors(app, doctree) -> None:
    """Remove every raw HTML node that is exactly such an anchor line (before fold_deep_dives: a stray node at the
    end of a deep dive would make an empty fold)."""
    for node in list(doctree.findall(nodes.raw)):
        if node.get("format") == "html" and JUPYTER_ANCHOR.fullmatch(node.astext()):
            node.parent.remove(node)


def setup(app) -> None:
    app.connect("doctree-read", drop_jupyter_anchors, priority=400)  # before the others (500)
    app.connect("doctree-read", convert)
