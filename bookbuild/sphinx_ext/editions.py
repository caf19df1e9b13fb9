"""The Chinese edition: its chapters read from the Chinese notebooks' executions, its sidebar, theme words, search,
Colab links and downloads in Chinese, and one _static/ shared with the English edition."""
from __future__ import annotations

import re
from pathlib import Path

from bookbuild import patches as registry


def translated_edition(app) -> bool:
    return bool(app.config.language) and not app.config.language.startswith("en")


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
        raise registry.PATCHES["myst-nb-output-folder-per-edition"].fail("the build environment has no mystnb_config")
    app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(Path(folder).resolve()))


def translate_toctree_captions(app, doctree) -> None:
    """The Chinese edition's sidebar headings. Sphinx's i18n transform runs before sphinx-external-toc adds
    the toctrees, so their captions (from _toc.yml; the catalogs have them) are translated here."""
    if not translated_edition(app) or not app.config.locale_dirs:
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
    if not translated_edition(app) or not config.locale_dirs:
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
    if not translated_edition(app) or not str(config.language).startswith("zh"):
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


def chinese_launch_links(app, pagename, templatename, context, doctree) -> None:
    """In the Chinese edition, Colab and Binder open the Chinese notebook (notebooks/zh/, bookbuild/i18n.py)."""
    if not translated_edition(app) or not pagename.startswith("notebooks/"):
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
    if exception is not None or not translated_edition(app) or app.builder.format != "html":
        return
    import shutil

    target = Path(app.outdir) / "_sources" / "notebooks"
    for nb in sorted((Path(app.srcdir) / "notebooks" / "zh").glob("*.ipynb")):
        if (target / nb.name).exists():
            shutil.copyfile(nb, target / nb.name)


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
    if app.builder.format != "html" or not translated_edition(app):
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


def setup(app) -> None:
    app.connect("doctree-read", translate_toctree_captions)
    app.connect("html-page-context", chinese_launch_links, priority=900)  # after sphinx-book-theme's (501)
    app.connect("build-finished", chinese_notebook_downloads)
    app.connect("config-inited", chinese_search)
    app.connect("config-inited", theme_catalog)  # after every extension's setup: the theme's catalog is there first
    # {docname: notebook to read instead of the docname's own file} (the Chinese edition: bookbuild/translation/
    # edition.py build_edition)
    app.add_config_value("tl_notebook_sources", {}, "env", types=[dict])
    app.connect("source-read", notebook_sources)
    app.add_config_value("tl_nb_output_folder", "", "env", types=[str])
    app.connect("builder-inited", notebook_output_folder, priority=600)  # after myst-nb's create_mystnb_config (500)
    app.connect("html-page-context", shared_static, priority=100)  # before the themes' handlers use pathto
