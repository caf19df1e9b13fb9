"""The explainer's view on a page of the book (book/explainer.md)::

    :::{tl-explainer}
    :model: grammar
    :::

writes transformer_lite.book.explain_view.explainer_html in the edition's language: the controls, the settings its
script reads (every text from the package's catalog) and the tags of bookbuild/site_assets/tl-explainer.js and .css,
which the build copies into the site's _static/tl/. The Chinese edition's pages load the English edition's
_static/ (tl_book.shared_static), so the paths point there. Registered by tl_book's setup.
"""
from __future__ import annotations

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


def setup(app):
    app.add_directive("tl-explainer", Explainer)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
