"""The book's own Sphinx extension (listed in _config.yml): misconception notes, one style everywhere.

A chapter names a common error as a block quote whose first words are **Misconception.** ::

    > **Misconception.** "LayerNorm divides by the unbiased variance (n − 1)." ...what circulates...
    >
    > **What is true.** ...
    >
    > **Checked** in the next cell.

In Jupyter and Colab that is an ordinary quote, readable as it is. On the site this extension turns it
into an admonition with the class ``misconception`` (styled by static/tl-book.css), so every chapter's
notes look the same. ``tests/test_book_conventions.py`` checks the three parts in the notebooks.
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes

# The first words of a misconception note, per language (the Chinese edition's catalogs translate them).
MARKERS = ("Misconception.", "常见误解。", "常见误解.")


def _misconception_quotes(doctree):
    for quote in list(doctree.findall(nodes.block_quote)):
        first = quote.children[0] if quote.children else None
        if not isinstance(first, nodes.paragraph) or not first.children:
            continue
        lead = first.children[0]
        if isinstance(lead, nodes.strong) and lead.astext().strip() in MARKERS:
            yield quote, first, lead


def convert(app, doctree) -> None:
    for quote, first, lead in _misconception_quotes(doctree):
        title_text = lead.astext().strip().rstrip(".。")
        first.remove(lead)
        if first.children and isinstance(first.children[0], nodes.Text):
            first.children[0].parent.replace(first.children[0], nodes.Text(first.children[0].astext().lstrip()))
        box = nodes.admonition("", classes=["misconception"])
        box += nodes.title(title_text, title_text)
        box.extend(quote.children)
        box.source, box.line = quote.source, quote.line
        quote.replace_self(box)


def add_static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def setup(app):
    app.connect("doctree-read", convert)
    app.connect("builder-inited", add_static)
    app.add_css_file("tl-book.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
