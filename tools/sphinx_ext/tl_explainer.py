"""The explainer's view on a page of the book (book/explainer.md)::

    :::{tl-explainer}
    :model: grammar
    :::

writes transformer_lite.book.explain_view.explainer_html in the edition's language: the controls, the settings its
script reads (every text from the package's catalog) and the tags of tools/site_assets/tl-explainer.js and .css,
which the build copies into the site's _static/tl/. The Chinese edition's pages load the English edition's
_static/ (tl_book.shared_static), so the paths point there. Registered by tl_book's setup.

The chapters link to a step of the view with the address of the published page
(``https://<site>/book/explainer.html?s=...&step=...``), which works wherever a notebook is read (Jupyter, Colab);
on the site, each such link is made relative (``../book/explainer.html?s=...``), so that it opens the page of the
edition being read, from disk too (``local_explainer_links``).
"""
from __future__ import annotations

import html
import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


class Explainer(SphinxDirective):
    has_content = False
    option_spec = {"model": directives.unchanged}

    def run(self):
        from transformer_lite.book import i18n
        from transformer_lite.book.explain_view import explainer_html

        language = self.config.language or "en"
        zh = not language.startswith("en")
        up = "../" * self.env.docname.count("/")
        before = i18n.language()
        i18n.set_language("zh" if zh else "en")
        try:
            text = explainer_html(self.options.get("model", "grammar"),
                                  static=up + ("../" if zh else "") + "_static/", chapters=up + "notebooks/")
        finally:
            i18n.set_language(before)
        return [nodes.raw("", text, format="html")]


# the published explainer page of any copy of the book (a fork's too), with its query and fragment
EXPLAINER_URL = re.compile(r"^https?://[^?#\s]+/book/explainer\.html(?P<rest>[?#][^\s]*)?$")


def local_explainer_links(app, doctree) -> None:
    """Every link to a published explainer page becomes a link to this edition's own page, relative to the page."""
    up = "../" * app.env.docname.count("/")
    for ref in doctree.findall(nodes.reference):
        m = EXPLAINER_URL.match(ref.get("refuri", ""))
        if m:
            # the notebook's markdown reaches the doctree with its "&" written as "&amp;", which the page would
            # escape again: the query is put back as the link wrote it
            ref["refuri"] = f"{up}book/explainer.html{html.unescape(m['rest'] or '')}"
            ref["internal"] = True  # a page of the site: no external-link styling


def setup(app):
    app.add_directive("tl-explainer", Explainer)
    app.connect("doctree-read", local_explainer_links)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
