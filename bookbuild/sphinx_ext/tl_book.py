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

It also makes the site fast on a phone (tests/test_budgets.py, bookbuild/lighthouse.py): folded cells'
content waits in <template>s (static/tl-lazy.js), the controls' frames load on first use, images carry their size
and load lazily below the first, no script blocks rendering, the Chinese edition shares the English edition's
_static/; and it writes each page's description and OpenGraph tags and the sitemap. The math: tl_math.py.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.util import logging as sphinx_logging

logger = sphinx_logging.getLogger(__name__)


def patches():
    """bookbuild/patches.py, the one list of what the build changes in or takes from third-party packages."""
    from bookbuild import patches as registry

    return registry


def check_patches(app, config) -> None:
    """Fail the build (naming the patch and the installed version) when a private part of Sphinx, myst-nb or the
    theme that this extension or its templates use is no longer what they were written for."""
    registry = patches()
    for name, entry in registry.PATCHES.items():
        if entry.applied_by.startswith("bookbuild/sphinx_ext/"):
            registry.check(name)

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


# ---------------------------------------------------------------- deep dives (bookbuild/chapters.py)

# A section whose title starts with one of these is a deep dive: its title and first paragraph show, the rest folds.
DEEP_DIVE = ("Deep dive:", "深入：")
DEEP_DIVE_PROMPTS = ("Open this deep dive", "Close this deep dive")  # translated by tl_code_prompts (bookbuild/i18n.py)


class deep_dive_fold(nodes.General, nodes.Element):
    """The folded part of a deep dive: a <details> on the site (the PDF prints it open, bookbuild/build_pdf.py)."""


def fold_deep_dives(app, doctree) -> None:
    """A deep dive, as JupyterLab and Colab collapse it under its heading (bookbuild/chapters.py): everything after the
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
    node["tl_body_start"] = len(self.body)


# a code cell's source in a deep dive's fold: it waits in a <template> until the fold opens (static/tl-lazy.js)
_FOLDED_CODE = re.compile(r'(?<!<template class="tl-lazy">)(<div class="cell_input docutils container">)'
                          r'(\s*<div class="highlight-[\w-]+ notranslate">'
                          r'<div class="highlight"><pre>.*?</pre></div>\s*</div>\s*)'
                          r'(</div>)', re.S)


def depart_deep_dive_fold(self, node) -> None:
    """The fold closes; the code cells' sources inside it wait in <template>s (a chapter's deep dives
    hold thousands of highlighted-code elements that a reader who does not open them never sees)."""
    start = node.get("tl_body_start")
    if start is not None:
        folded = "".join(self.body[start:])
        del self.body[start:]
        self.body.append(_FOLDED_CODE.sub(r'\1<template class="tl-lazy">\2</template>\3', folded))
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
    In the Chinese edition the texts are bookbuild/i18n.py's CODE_PROMPTS (config ``tl_code_prompts``)."""
    from html import escape

    prompts = self.config.tl_code_prompts or {}
    show, hide = (prompts.get(node[k], node[k]) for k in ("prompt_show", "prompt_hide"))
    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n<summary>\n'
                     f'<p class="collapsed admonition-title">{escape(show)}</p>\n'
                     f'<p class="expanded admonition-title">{escape(hide)}</p>\n</summary>\n')
    node["tl_body_start"] = len(self.body)


# What a folded cell may not hold for its content to wait in a <template>: a script (a control's, which must run
# with the page), a heading (a link target of the page's contents).
_NOT_LAZY = re.compile(r"<script\b|<h[1-6]\b")


def depart_hidden_cell(self, node) -> None:
    """The folded cell's content (highlighted code: thousands of elements per chapter) waits inside a
    <template> until the reader opens the fold (static/tl-lazy.js puts it in place; printing and
    bookbuild/build_pdf.py do too): the page's DOM is the part the reader sees."""
    start = node.get("tl_body_start")
    if start is not None and not _NOT_LAZY.search("".join(self.body[start:])):
        self.body.insert(start, '<template class="tl-lazy">')
        self.body.append("</template>")
    self.body.append("</details>\n")


def alt_text_from_outputs() -> None:
    """A notebook's image takes its ``<img alt>`` from the output's own metadata, ``{"image/png": {"alt": ...}}``:
    what ``transformer_lite.book.plotting`` gives every matplotlib figure (its titles, axis labels, legend), in the
    notebook's language. myst-nb 1.x reads only ``width`` and ``height`` there (``alt`` only from the cell's
    ``mystnb.image`` metadata), and Sphinx writes the file's path when an image has no alt: myst-nb's
    ``render_image`` is wrapped to add it. A cell's own ``mystnb.image.alt`` still wins."""
    from myst_nb.core.render import NbElementRenderer

    def wrap(render):
        def render_image(self, data):
            made = render(self, data)
            alt = (data.output_metadata or {}).get(data.mime_type, {}).get("alt")
            if isinstance(alt, str) and alt.strip():
                for node in made:
                    if isinstance(node, nodes.image) and not node.get("alt"):
                        node["alt"] = alt.strip()
            return made

        render_image.tl_alt_text = True
        return render_image

    patches().monkeypatch("myst-nb-image-alt-from-output-metadata", NbElementRenderer, "render_image", wrap)


def notebook_sources(app, docname, source) -> None:
    """The Chinese edition reads each chapter from the notebook that config ``tl_notebook_sources`` names for it
    (bookbuild/i18n.py zh_site_notebooks: the English markdown, which the catalogs translate, with the Chinese
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
    if not folder:
        return
    if not hasattr(app.env, "mystnb_config"):
        raise patches().PATCHES["myst-nb-output-folder-per-edition"].fail("the build environment has no mystnb_config")
    app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(Path(folder).resolve()))


def our_templates_first(app, config) -> None:
    """templates/ overrides three pydata-sphinx-theme components and the page's head (layout.html: no search
    scripts on pages other than search.html) (see each file for why). And the book's
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


# sphinx-book-theme's message catalog (its header buttons' words: "Repository", "Open issue", "Launch on Colab")
THEME_CATALOG = "booktheme"


def theme_catalog(app, config) -> None:
    """The theme's words that its own catalog leaves in English, from the book's catalogs
    (``locales/zh_CN/LC_MESSAGES/booktheme.po``). Sphinx compiles only ``sphinx.po`` of the book's catalogs when it
    starts (the theme's footer and Sphinx's own words: ours come first there); this one is compiled here and added
    after the theme's own catalog, so it gives only what the theme lacks (tests/test_chinese_site.py checks that it
    holds nothing else)."""
    if not _translated_edition(app) or not config.locale_dirs:
        return
    from sphinx.util.i18n import CatalogRepository

    repo = CatalogRepository(app.srcdir, config.locale_dirs, config.language, config.source_encoding)
    for catalog in repo.catalogs:
        if catalog.domain == THEME_CATALOG and catalog.is_outdated():
            catalog.write_mo(config.language, config.gettext_allow_fuzzy_translations)
    for locale_dir in repo.locale_dirs:
        app.add_message_catalog(THEME_CATALOG, locale_dir)


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
    except ImportError:  # Sphinx then indexes no Chinese word; bookbuild/i18n.py's build_edition refuses to build
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


# Set by bookbuild/build_book.py from bookbuild/repository.py (the environment's address, else _config.yml's): the
# repository the Colab, Binder, repository and issue buttons name, and the site the sitemap and OpenGraph tags name.
REPOSITORY_VAR, SITE_VAR = "TL_BUILD_REPOSITORY_URL", "TL_BUILD_SITE_URL"
VERSION_WORDS = {"en": "Version {version}.", "zh": "版本 {version}。"}


def published_address(app, config) -> None:
    """The address the build was given, in place of _config.yml's (which Jupyter Book copied into the
    configuration), and the book's version, pyproject.toml's, at the end of every page's footer."""
    import os
    import tomllib

    options = dict(config.html_theme_options or {})
    if os.environ.get(REPOSITORY_VAR):
        options["repository_url"] = os.environ[REPOSITORY_VAR]
    if os.environ.get(SITE_VAR):
        config.html_baseurl = os.environ[SITE_VAR]
    pyproject = Path(app.srcdir) / "pyproject.toml"
    if pyproject.exists():
        version = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
        words = VERSION_WORDS["zh" if (config.language or "").startswith("zh") else "en"]
        options["extra_footer"] = (options.get("extra_footer") or "") + " " + words.format(version=version)
    config.html_theme_options = options


def add_static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def chinese_launch_links(app, pagename, templatename, context, doctree) -> None:
    """In the Chinese edition, Colab and Binder open the Chinese notebook (notebooks/zh/, bookbuild/i18n.py)."""
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


# `make pdf` (bookbuild/build_pdf.py) writes each edition's PDF here; a build that finds its edition's links it
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


# ---------------------------------------------------------------- JupyterLab's section anchors (bookbuild/i18n.py
# anchors)

# The notebooks put `<div id="slug"></div>` before each heading that a link targets, for JupyterLab, which does not
# name headings by MyST's slugs. The site's sections already have those ids: the blocks go, one element per id.
JUPYTER_ANCHOR = re.compile(r'(<div id="[^"<>\s]+"></div>)+\s*')


def drop_jupyter_anchors(app, doctree) -> None:
    """Remove every raw HTML node that is exactly such an anchor line (before fold_deep_dives: a stray node at the
    end of a deep dive would make an empty fold)."""
    for node in list(doctree.findall(nodes.raw)):
        if node.get("format") == "html" and JUPYTER_ANCHOR.fullmatch(node.astext()):
            node.parent.remove(node)


_EXERCISE_CELL = re.compile(r'(<div class="tl-ask tl-ask-exercise"[^>]*? data-tl-cell=")[^"]*(")')


def exercise_cells(app, doctree) -> None:
    """An exercise's check that needs Python links to its cell in Colab (static/tl-check.js): the kernel that wrote
    the check's output does not know the cell's id, the notebook does. The link opens the reader's answer cell (the
    one tagged "exercise" just above the check), else the check's own."""
    import json

    docname = app.env.docname
    source = (app.config.tl_notebook_sources or {}).get(docname) or app.env.doc2path(docname)
    if not str(source).endswith(".ipynb"):
        return
    cells = None
    for container in doctree.findall(nodes.container):
        if container.get("nb_element") != "cell_code" or container.get("cell_index") is None:
            continue
        for raw in list(container.findall(nodes.raw)):
            text = raw.astext()
            if 'class="tl-ask tl-ask-exercise"' not in text:
                continue
            if cells is None:
                cells = json.loads(Path(source).read_text(encoding="utf-8"))["cells"]
            i = container["cell_index"]
            above = cells[i - 1] if 0 < i <= len(cells) else {}
            cell = above if "exercise" in (above.get("metadata", {}).get("tags") or []) else \
                (cells[i] if i < len(cells) else {})
            text = _EXERCISE_CELL.sub(lambda m, cell=cell: m.group(1) + str(cell.get("id", "")) + m.group(2), text)
            raw.replace_self(nodes.raw("", text, format="html", classes=raw.get("classes", [])))


def predictions_and_checks(app) -> None:
    """The predictions and exercise checks answer on the page (static/tl-check.js reads what
    transformer_lite/book/check/page.py wrote into the build's outputs): deferred, it runs when the page is parsed;
    an exercise's Colab link names its cell (exercise_cells)."""
    app.add_js_file("tl-check.js", loading_method="defer")
    app.connect("doctree-read", exercise_cells)


def setup(app):
    from myst_nb.sphinx_ import HideCodeCellNode

    app.connect("doctree-read", drop_jupyter_anchors, priority=400)  # before the others (500)
    app.connect("doctree-read", convert)
    app.connect("doctree-read", fold_deep_dives)
    app.add_node(deep_dive_fold, html=(visit_deep_dive_fold, depart_deep_dive_fold),
                 latex=(_skip, _skip), text=(_skip, _skip), man=(_skip, _skip), texinfo=(_skip, _skip))
    app.add_js_file("tl-deep-dive.js", loading_method="defer")
    app.add_js_file("tl-lazy.js", loading_method="defer")
    predictions_and_checks(app)
    # sections laid out a few at a time (static/tl-lazy.js, tl-book.css); in the head, before the body is laid out
    app.add_js_file(None, body='document.documentElement.classList.add("tl-cv");', priority=200)
    app.connect("doctree-read", translate_toctree_captions)
    app.connect("html-page-context", chinese_launch_links, priority=900)  # after sphinx-book-theme's (501)
    app.connect("build-finished", chinese_notebook_downloads)
    app.connect("html-page-context", pdf_button, priority=901)  # after sphinx-book-theme's header buttons (501)
    app.connect("build-finished", copy_pdf)
    app.connect("config-inited", published_address, priority=100)  # before every use of the address
    app.connect("config-inited", check_patches)
    app.connect("config-inited", our_templates_first)
    app.connect("config-inited", chinese_search)
    app.connect("config-inited", theme_catalog)  # after every extension's setup: the theme's catalog is there first
    # {English toggle text: its translation} for the folded cells (bookbuild/i18n.py CODE_PROMPTS; empty in English)
    app.add_config_value("tl_code_prompts", {}, "html", types=[dict])
    # {docname: notebook to read instead of the docname's own file} (the Chinese edition: bookbuild/i18n.py
    # build_edition)
    app.add_config_value("tl_notebook_sources", {}, "env", types=[dict])
    app.connect("source-read", notebook_sources)
    app.add_config_value("tl_nb_output_folder", "", "env", types=[str])
    app.connect("builder-inited", notebook_output_folder, priority=600)  # after myst-nb's create_mystnb_config (500)
    app.add_node(nodes.citation, override=True, html=(visit_citation, depart_citation))
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    alt_text_from_outputs()
    app.connect("builder-inited", add_static)
    app.add_css_file("tl-book.css")
    app.connect("html-page-context", seo_tags)
    app.connect("build-finished", write_sitemap)
    app.add_node(nodes.image, override=True, html=(visit_image, depart_image))
    app.connect("html-page-context", shared_static, priority=100)  # before the themes' handlers use pathto
    app.connect("html-page-context", unblocked_scripts, priority=950)  # after the extensions added theirs
    app.connect("doctree-resolved", lazy_explore_data)
    app.setup_extension("bookbuild.sphinx_ext.tl_explainer")  # the explainer's view, {tl-explainer}
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


# ---------------------------------------------------------------- shared links and search engines

DESCRIPTION_CHARS = {"en": 160, "zh": 90}  # what search results and link previews show of a description


def _plain(node) -> str:
    """A paragraph's text as a reader sees it: formulas as their TeX source, whitespace collapsed."""
    return re.sub(r"\s+", " ", node.astext()).strip()


def _shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at the end of a sentence when one ends in its second half,
    else at a word (or, in Chinese, a character), with an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)|[。！？]", head)]
    if ends and ends[-1] >= limit // 2:
        return head[:ends[-1]].strip()
    cut = head.rsplit(" ", 1)[0] if " " in head[limit // 2:] else head[:-1]
    return cut.rstrip(",;:，；：、 ") + "…"


def page_description(doctree, zh: bool) -> str | None:
    """The page's own first paragraph of prose (its first paragraph of at least a sentence's length, outside
    notes and tables), shortened for a search result: the chapter's opening, in the edition's language."""
    if doctree is None:
        return None
    skip = (nodes.admonition, nodes.table, nodes.footnote, nodes.citation, nodes.field_list, nodes.sidebar)
    for para in doctree.findall(nodes.paragraph):
        parent, inside = para.parent, False
        while parent is not None:
            if isinstance(parent, skip):
                inside = True
                break
            parent = parent.parent
        text = _plain(para)
        if inside or len(text) < (30 if zh else 60):
            continue
        return _shorten(text, DESCRIPTION_CHARS["zh" if zh else "en"])
    return None


def site_url(app) -> str:
    """The published edition's address, ending in "/": _config.yml's ``html.baseurl`` (the English edition),
    with ``zh/`` for the Chinese one. Empty when the book does not say where it is published."""
    base = (app.config.html_baseurl or "").strip()
    if not base:
        return ""
    base = base.rstrip("/") + "/"
    return base + "zh/" if _translated_edition(app) else base


def seo_tags(app, pagename, templatename, context, doctree) -> None:
    """A ``<meta name="description">`` on every page, from the page's first paragraph (in its edition's language),
    and the OpenGraph and Twitter card tags that make a shared link show a title, that description and the book's
    image (book/social.png, at the site's root). Written here rather than by sphinxext-opengraph: the description
    is the same text in all three tags, and nothing is drawn per page at build time."""
    if app.builder.format != "html":
        return
    from html import escape

    zh = _translated_edition(app)
    title = re.sub(r"<[^>]+>", "", context.get("title") or "") or app.config.html_title
    description = page_description(doctree, zh)
    if description is None:  # the index and the search page: the book's own opening (its root page's)
        try:
            description = page_description(app.env.get_and_resolve_doctree(app.config.root_doc, app.builder), zh)
        except Exception:  # noqa: BLE001 - no root page: the title
            description = None
    description = description or app.config.html_title
    tags = [f'<meta name="description" content="{escape(description)}" />',
            f'<meta property="og:title" content="{escape(title)}" />',
            f'<meta property="og:description" content="{escape(description)}" />',
            '<meta property="og:type" content="website" />',
            f'<meta property="og:site_name" content="{escape(app.config.html_title)}" />',
            f'<meta property="og:locale" content="{"zh_CN" if zh else "en_US"}" />',
            '<meta name="twitter:card" content="summary_large_image" />']
    base = site_url(app)
    if base:
        root = base[:-3] if zh else base  # the image is at the root of the English edition
        tags += [f'<meta property="og:url" content="{escape(base + pagename + ".html")}" />',
                 f'<meta property="og:image" content="{escape(root + SOCIAL_IMAGE)}" />',
                 '<meta property="og:image:width" content="1200" />',
                 '<meta property="og:image:height" content="630" />',
                 f'<meta property="og:image:alt" content="{escape(app.config.html_title)}" />']
    context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(tags) + "\n"


SOCIAL_IMAGE = "social.png"  # book/social.png (book/make_logo.py), copied to the site's root (html_extra_path)


def write_sitemap(app, exception) -> None:
    """sitemap.xml at the English edition's root: every page of both editions (the Chinese page beside its English
    one as its hreflang alternate), for search engines. Needs ``html.baseurl`` in _config.yml."""
    if exception is not None or app.builder.format != "html" or _translated_edition(app):
        return
    base = site_url(app)
    if not base:
        return
    from html import escape

    out = Path(app.outdir)
    urls = []
    for doc in sorted(app.env.found_docs):
        page = out / f"{doc}.html"
        if not page.exists():
            continue
        en, zh = base + f"{doc}.html", base + f"zh/{doc}.html"
        alternates = (f'<xhtml:link rel="alternate" hreflang="en" href="{escape(en)}"/>'
                      f'<xhtml:link rel="alternate" hreflang="zh-CN" href="{escape(zh)}"/>')
        for url in (en, zh):
            urls.append(f"<url><loc>{escape(url)}</loc>{alternates}</url>")
    (out / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
        + "\n".join(urls) + "\n</urlset>\n", encoding="utf-8")
    (out / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {base}sitemap.xml\n", encoding="utf-8")


# ---------------------------------------------------------------- images: sized, and lazy

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


# ---------------------------------------------------------------- one _static/ for both editions
# The Chinese edition (under zh/) is a second Sphinx build with its own _static/: the theme, MathJax's fonts, the
# book's scripts, the same bytes as the English edition's. Its pages load the English edition's _static/ instead,
# and the copy is removed when the build ends, but for the files that differ between the editions.

# the edition's language (its search, its strings), and the translator's loader (bookbuild/build_book.py
# zh_translator_loader)
ZH_OWN_STATIC = ("documentation_options.js", "translations.js", "tl/tl-translator.js")
_STATIC_URL = re.compile(r"^((?:\.\./)*)_static/([^?#]*)(.*)$", re.S)


def _shared_static_url(url: str) -> str:
    """A page-relative URL into the Chinese edition's _static/, moved to the English edition's (one level up)."""
    m = _STATIC_URL.match(url) if isinstance(url, str) else None
    if not m or m.group(2) in ZH_OWN_STATIC:
        return url
    return f"{m.group(1)}../_static/{m.group(2)}{m.group(3)}"


def shared_static(app, pagename, templatename, context, doctree) -> None:
    """In the Chinese edition, every URL the page's template makes into _static/ (pathto, the script and style
    tags, the favicon and logo Sphinx computed already) points at the English edition's _static/."""
    if app.builder.format != "html" or not _translated_edition(app):
        return
    pathto = context["pathto"]

    def shared_pathto(otheruri, resource=False, baseuri=None):
        url = pathto(otheruri, resource) if baseuri is None else pathto(otheruri, resource, baseuri)
        return _shared_static_url(url) if str(otheruri).startswith("_static/") else url

    def tag(render):
        return lambda asset, *a, **k: re.sub(r'((?:src|href)=")([^"]*)"',
                                             lambda m: m.group(1) + _shared_static_url(m.group(2)) + '"',
                                             str(render(asset, *a, **k)))

    context["pathto"] = shared_pathto
    for key in ("css_tag", "js_tag"):
        if callable(context.get(key)):
            context[key] = tag(context[key])
    for key, value in list(context.items()):
        if isinstance(value, str) and _STATIC_URL.match(value):
            context[key] = _shared_static_url(value)


def prune_zh_static(zh_outdir) -> list[str]:
    """The Chinese edition's _static/ loses every file the English edition's holds byte for byte (its pages load
    those from there: shared_static) and those the English one does not hold (left by an older build); a file that
    differs stays, and is a problem (returned; bookbuild/build_book.py fails the build on it). Run by the build once
    both editions are built (they are built at the same time), not by Sphinx."""
    import filecmp
    import os

    mine, english = Path(zh_outdir) / "_static", Path(zh_outdir).parent / "_static"
    if not english.is_dir():
        return [f"the Chinese edition's pages load the English edition's _static/, which is missing: {english}"]
    problems = []
    for path in sorted(mine.rglob("*"), reverse=True):
        rel = path.relative_to(mine)
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif str(rel) in ZH_OWN_STATIC:
            continue
        elif not (english / rel).is_file() or filecmp.cmp(path, english / rel, shallow=False):
            os.remove(path)  # the same file, or one the site no longer has (an older build's: Sphinx keeps them)
        else:
            problems.append(f"the Chinese edition's _static/{rel} differs from the English edition's: its pages "
                            "load the English one")
    return problems


# ---------------------------------------------------------------- no render-blocking script

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


# ---------------------------------------------------------------- the controls' frames: loaded on first use
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
