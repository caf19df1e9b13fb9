"""The explainer's view on a page of the book (book/explainer.md)::

    :::{tl-explainer}
    :model: grammar
    :::

writes transformer_lite.book.explain_view.explainer_html in the edition's language: the controls, the settings its
script reads (every text from the package's catalog) and the tags of transformer_lite/book/web/tl-explainer.js and .css,
which the build copies into the site's _static/tl/. The Chinese edition's pages load the English edition's
_static/ (editions.shared_static), so the paths point there. Registered by tl_book's setup.

The chapters link to a step of the view with the published page's address
(``https://<site>/book/explainer.html?s=...&step=...``): a relative link would not reach the page from Jupyter or
Colab. bookbuild/repository.py's ``set`` moves these links with the address. A build for another address
(BOOK_REPOSITORY, GITHUB_REPOSITORY) must not point at this one's page, so:

- on the pages, each such link is made relative (``../book/explainer.html?s=...``): it opens the page of the
  edition being read, from disk too (``local_explainer_links``);
- the site's ``_sources/`` copies of the notebooks (its download button, which Jupyter opens) name the address the
  site is built for (``html_baseurl``, which the build sets to its address): Sphinx copies each source there as it
  writes the page, and the Chinese edition then puts its own notebooks there (chinese_notebook_downloads, when the
  build has finished), so they are rewritten after both (``published_sources``).
"""
from __future__ import annotations

import html
import re
from pathlib import Path

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


# the published explainer page of any copy of the book (a fork's too), with its query and fragment: a link's target
EXPLAINER_URL = re.compile(r"^https?://[^?#\s]+/book/explainer\.html(?P<rest>[?#][^\s]*)?$")
# the same page's address in a text (a notebook's JSON, its markdown): the site, then the edition's page
EXPLAINER_IN_TEXT = re.compile(r"https?://[^\s\"'<>()\[\]?#\\/]+/(?:[^\s\"'<>()\[\]?#\\]*?/)??"
                               r"(?P<page>(?:zh/)?book/explainer\.html)")


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


def published_text(text: str, site: str) -> str:
    """``text`` with every published explainer page's address (any copy's, either edition's) on ``site``."""
    site = site.rstrip("/") + "/"
    return EXPLAINER_IN_TEXT.sub(lambda m: site + m["page"], text)


# what Sphinx copies into _sources/: the notebooks, and the pages' markdown
SOURCE_SUFFIXES = (".ipynb", ".md", ".txt")


def published_sources(app, exception) -> None:
    """The site's _sources/ name the explainer's page at the address the site is built for."""
    site = (app.config.html_baseurl or "").strip()
    if exception is not None or app.builder.format != "html" or not site:
        return
    for path in sorted((Path(app.outdir) / "_sources").rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        new = published_text(text, site)
        if new != text:
            path.write_text(new, encoding="utf-8")


def setup(app):
    app.add_directive("tl-explainer", Explainer)
    app.connect("doctree-read", local_explainer_links)
    # after Sphinx's copies and the Chinese notebooks' (chinese_notebook_downloads, at the default priority, 500)
    app.connect("build-finished", published_sources, priority=800)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
