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

import re
from pathlib import Path

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


# ---------------------------------------------------------------- deep dives (tools/chapters.py)

# A section whose title starts with one of these is a deep dive: its title and first paragraph show, the rest folds.
DEEP_DIVE = ("Deep dive:", "深入：")
DEEP_DIVE_PROMPTS = ("Open this deep dive", "Close this deep dive")  # translated by tl_code_prompts (tools/i18n.py)


class deep_dive_fold(nodes.General, nodes.Element):
    """The folded part of a deep dive: a <details> on the site (the PDF prints it open, tools/build_pdf.py)."""


def fold_deep_dives(app, doctree) -> None:
    """A deep dive, as JupyterLab and Colab collapse it under its heading (tools/chapters.py): everything after the
    section's title and its first paragraph goes into one fold. Sub-sections fold with it."""
    for section in list(doctree.findall(nodes.section)):
        title = section.children[0] if section.children else None
        if not isinstance(title, nodes.title) or not title.astext().strip().startswith(DEEP_DIVE):
            continue
        keep = 2 if len(section.children) > 1 and isinstance(section.children[1], nodes.paragraph) else 1
        rest = section.children[keep:]
        if not rest:
            continue
        section["classes"].append("tl-deep-dive")
        fold = deep_dive_fold()
        for child in rest:
            section.remove(child)
        fold.extend(rest)
        section += fold


def visit_deep_dive_fold(self, node) -> None:
    prompts = self.config.tl_code_prompts or {}
    show, hide = (prompts.get(t, t) for t in DEEP_DIVE_PROMPTS)
    from html import escape

    self.body.append(f'<details class="tl-deep-dive-fold">\n<summary>'
                     f'<span class="tl-when-closed">{escape(show)}</span>'
                     f'<span class="tl-when-open">{escape(hide)}</span></summary>\n')


def depart_deep_dive_fold(self, node) -> None:
    self.body.append("</details>\n")


def _skip(self, node) -> None:
    pass


# ---------------------------------------------------------------- accessibility (axe-core, WCAG 2.1 A/AA)

def visit_citation(self, node) -> None:
    """docutils' citation with role="listitem" instead of the deprecated DPUB role "doc-biblioentry"
    (DPUB-ARIA 1.1; w3c/dpub-aria#22): a role="list" needs listitem children (axe aria-required-children,
    aria-deprecated-role on the references page)."""
    if not isinstance(node.previous_sibling(), type(node)):
        self.body.append('<div role="list" class="citation-list">\n')
    self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))


def depart_citation(self, node) -> None:
    self.body.append("</div>\n")
    if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
        self.body.append("</div>\n")


def visit_hidden_cell(self, node) -> None:
    """myst-nb's folded cell without aria-label="Toggle hidden content": the summary's visible text
    ("Show code cell source", "Show solution") is its name (WCAG 2.5.3, axe label-content-name-mismatch).
    In the Chinese edition the texts are tools/i18n.py's CODE_PROMPTS (config ``tl_code_prompts``)."""
    from html import escape

    prompts = self.config.tl_code_prompts or {}
    show, hide = (prompts.get(node[k], node[k]) for k in ("prompt_show", "prompt_hide"))
    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n<summary>\n'
                     f'<p class="collapsed admonition-title">{escape(show)}</p>\n'
                     f'<p class="expanded admonition-title">{escape(hide)}</p>\n</summary>\n')


def depart_hidden_cell(self, node) -> None:
    self.body.append("</details>\n")


def alt_text_from_outputs() -> None:
    """A notebook's image takes its ``<img alt>`` from the output's own metadata, ``{"image/png": {"alt": ...}}``:
    what ``transformer_lite.book.plotting`` gives every matplotlib figure (its titles, axis labels, legend), in the
    notebook's language. myst-nb 1.x reads only ``width`` and ``height`` there (``alt`` only from the cell's
    ``mystnb.image`` metadata), and Sphinx writes the file's path when an image has no alt: myst-nb's
    ``render_image`` is wrapped to add it. A cell's own ``mystnb.image.alt`` still wins."""
    from myst_nb.core.render import NbElementRenderer

    render = NbElementRenderer.render_image
    if getattr(render, "tl_alt_text", False):
        return

    def render_image(self, data):
        made = render(self, data)
        alt = (data.output_metadata or {}).get(data.mime_type, {}).get("alt")
        if isinstance(alt, str) and alt.strip():
            for node in made:
                if isinstance(node, nodes.image) and not node.get("alt"):
                    node["alt"] = alt.strip()
        return made

    render_image.tl_alt_text = True
    NbElementRenderer.render_image = render_image


def notebook_sources(app, docname, source) -> None:
    """The Chinese edition reads each chapter from the notebook that config ``tl_notebook_sources`` names for it
    (tools/i18n.py zh_site_notebooks: the English markdown, which the catalogs translate, with the Chinese
    notebook's executed code cells) instead of the English file; that notebook is a dependency of the page, so
    an incremental build re-reads the page when it changes. Empty (the English edition): nothing changes."""
    path = (app.config.tl_notebook_sources or {}).get(docname)
    if path:
        source[0] = Path(path).read_text(encoding="utf-8")
        app.env.note_dependency(str(path))


def notebook_output_folder(app) -> None:
    """myst-nb writes a page's output files (its figures' PNGs) into ``jupyter_execute/`` beside the output folder,
    whence Sphinx copies them into ``_images/``; for the Chinese edition, built into ``_build/html/zh``, that is
    ``_build/html/jupyter_execute``, inside the English site. Config ``tl_nb_output_folder`` puts it elsewhere."""
    folder = app.config.tl_nb_output_folder
    if folder and hasattr(app.env, "mystnb_config"):
        app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(Path(folder).resolve()))


def our_templates_first(app, config) -> None:
    """templates/ overrides three pydata-sphinx-theme components (see each file for why). And the book's
    title stays next to the logo, as text (translatable, in the theme's colours): with a logo and no
    ``logo.text`` the theme shows the image alone."""
    config.templates_path.insert(0, str(Path(__file__).parent / "templates"))
    config.html_theme_options.setdefault("logo", {}).setdefault("text", config.html_title)
    # EN <-> 中文 before the theme's buttons, on every page of both editions (templates/tl-language.html)
    config.html_theme_options.setdefault("article_header_end", ["tl-language.html", "article-header-buttons.html"])


def _translated_edition(app) -> bool:
    return bool(app.config.language) and not app.config.language.startswith("en")


def translate_toctree_captions(app, doctree) -> None:
    """The Chinese edition's sidebar headings. Sphinx's i18n transform runs before sphinx-external-toc adds
    the toctrees, so their captions (from _toc.yml; the catalogs have them) are translated here."""
    if not _translated_edition(app) or not app.config.locale_dirs:
        return
    from sphinx import addnodes
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    toctrees = [n for n in doctree.findall(addnodes.toctree) if n.get("caption")]
    if not toctrees:
        return
    domain = docname_to_domain(app.env.docname, app.config.gettext_compact)
    dirs = [str(Path(app.srcdir) / d) for d in app.config.locale_dirs]
    catalog, found = init_locale(dirs, app.config.language, domain, namespace=f"tl-toc-{app.env.docname}")
    if found:
        for node in toctrees:
            node["caption"] = catalog.gettext(node["caption"])


def chinese_search(app, config) -> None:
    """The Chinese edition's search index is cut into words by jieba (sphinx/search/zh.py). jieba logs four lines
    to stderr ("Building prefix dict...") when it loads its dictionary: only its warnings are kept. And Sphinx's
    Chinese splitter keeps every Latin word it met in a list that its stem() scans once per distinct word of each
    page: a set instead. The index is byte for byte the same; a full Chinese build took 41 s of CPU without jieba,
    65 s with it and that list, 34 s with it and the set (measured on the book, Sphinx 7.4, jieba 0.42.1)."""
    if not _translated_edition(app) or not str(config.language).startswith("zh"):
        return
    import logging

    try:
        import jieba
    except ImportError:  # Sphinx then indexes no Chinese word; tools/i18n.py's build_edition refuses to build
        return
    from sphinx.search.zh import SearchChinese

    jieba.setLogLevel(logging.WARNING)

    class ChineseWithLatinSet(SearchChinese):
        def init(self, options) -> None:
            super().init(options)
            self.latin_terms = set()

        def split(self, input: str) -> list[str]:
            latin = [term.strip() for term in self.latin1_letters.findall(input)]
            self.latin_terms.update(latin)
            return list(jieba.cut_for_search(input)) + latin

    app.add_search_language(ChineseWithLatinSet)


def add_static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def chinese_launch_links(app, pagename, templatename, context, doctree) -> None:
    """In the Chinese edition, Colab and Binder open the Chinese notebook (notebooks/zh/, tools/i18n.py)."""
    if not _translated_edition(app) or not pagename.startswith("notebooks/"):
        return
    english, chinese = f"{pagename}.ipynb", pagename.replace("notebooks/", "notebooks/zh/", 1) + ".ipynb"

    def fix(node):
        if isinstance(node, dict):
            url = node.get("url")
            if isinstance(url, str) and "_sources" not in url and english in url:
                node["url"] = url.replace(english, chinese)
            for value in node.values():
                fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)

    fix(context.get("header_buttons", []))


def chinese_notebook_downloads(app, exception) -> None:
    """In the Chinese edition, the page's ".ipynb" download is the Chinese notebook."""
    if exception is not None or not _translated_edition(app) or app.builder.format != "html":
        return
    import shutil

    target = Path(app.outdir) / "_sources" / "notebooks"
    for nb in sorted((Path(app.srcdir) / "notebooks" / "zh").glob("*.ipynb")):
        if (target / nb.name).exists():
            shutil.copyfile(nb, target / nb.name)


# `make pdf` (tools/build_pdf.py) writes each edition's PDF here; a build that finds its edition's links it
PDF_DIR = ("_build", "pdf")
PDF_NAME = "transformer-step-by-step.{edition}.pdf"


def _pdf(app) -> Path:
    return Path(app.srcdir).joinpath(*PDF_DIR) / PDF_NAME.format(edition="zh" if _translated_edition(app) else "en")


def pdf_button(app, pagename, templatename, context, doctree) -> None:
    """"PDF" beside the download button of every page, when `make pdf` has made this edition's PDF (it is copied
    into the site as pdf/..., see copy_pdf); without the file, no button."""
    if app.builder.format != "html" or "header_buttons" not in context or not _pdf(app).exists():
        return
    zh = _translated_edition(app)
    button = {"type": "link", "url": context["pathto"](f"pdf/{_pdf(app).name}", 1), "text": "PDF",
              "tooltip": "整本书（PDF）" if zh else "The whole book as a PDF", "icon": "fas fa-book",
              "label": "tl-book-pdf-button"}
    buttons = context["header_buttons"]
    at = next((i + 1 for i, b in enumerate(buttons) if b.get("label") == "download-buttons"), len(buttons))
    buttons.insert(at, button)


def copy_pdf(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or not _pdf(app).exists():
        return
    import shutil

    (Path(app.outdir) / "pdf").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_pdf(app), Path(app.outdir) / "pdf" / _pdf(app).name)


# ---------------------------------------------------------------- JupyterLab's section anchors (tools/i18n.py anchors)

# The notebooks put `<div id="slug"></div>` before each heading that a link targets, for JupyterLab, which does not
# name headings by MyST's slugs. The site's sections already have those ids: the blocks go, one element per id.
JUPYTER_ANCHOR = re.compile(r'(<div id="[^"<>\s]+"></div>)+\s*')


def drop_jupyter_anchors(app, doctree) -> None:
    """Remove every raw HTML node that is exactly such an anchor line (before fold_deep_dives: a stray node at the
    end of a deep dive would make an empty fold)."""
    for node in list(doctree.findall(nodes.raw)):
        if node.get("format") == "html" and JUPYTER_ANCHOR.fullmatch(node.astext()):
            node.parent.remove(node)


def setup(app):
    from myst_nb.sphinx_ import HideCodeCellNode

    app.connect("doctree-read", drop_jupyter_anchors, priority=400)  # before the others (500)
    app.connect("doctree-read", convert)
    app.connect("doctree-read", fold_deep_dives)
    app.add_node(deep_dive_fold, html=(visit_deep_dive_fold, depart_deep_dive_fold),
                 latex=(_skip, _skip), text=(_skip, _skip), man=(_skip, _skip), texinfo=(_skip, _skip))
    app.add_js_file("tl-deep-dive.js", loading_method="defer")
    app.connect("doctree-read", translate_toctree_captions)
    app.connect("html-page-context", chinese_launch_links, priority=900)  # after sphinx-book-theme's (501)
    app.connect("build-finished", chinese_notebook_downloads)
    app.connect("html-page-context", pdf_button, priority=901)  # after sphinx-book-theme's header buttons (501)
    app.connect("build-finished", copy_pdf)
    app.connect("config-inited", our_templates_first)
    app.connect("config-inited", chinese_search)
    # {English toggle text: its translation} for the folded cells (tools/i18n.py CODE_PROMPTS; empty in English)
    app.add_config_value("tl_code_prompts", {}, "html", types=[dict])
    # {docname: notebook to read instead of the docname's own file} (the Chinese edition: tools/i18n.py build_edition)
    app.add_config_value("tl_notebook_sources", {}, "env", types=[dict])
    app.connect("source-read", notebook_sources)
    app.add_config_value("tl_nb_output_folder", "", "env", types=[str])
    app.connect("builder-inited", notebook_output_folder, priority=600)  # after myst-nb's create_mystnb_config (500)
    app.add_node(nodes.citation, override=True, html=(visit_citation, depart_citation))
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    alt_text_from_outputs()
    app.connect("builder-inited", add_static)
    app.add_css_file("tl-book.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
