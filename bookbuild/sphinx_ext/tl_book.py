"""The book's Sphinx extension (listed in _config.yml): its templates and static files, the check of the patches it
relies on, and each of its concerns, one module each, set up in the order their handlers must run.

- markup.py: misconception notes styled alike, JupyterLab's anchors dropped;
- deep_dives.py: deep dives folded as JupyterLab and Colab fold them;
- page_speed.py: fast on a phone (images, scripts, the controls' frames);
- checks.py: predictions and exercise checks on the page;
- editions.py: the Chinese edition, and one _static/ for both;
- accessibility.py: what axe-core asks of the pages;
- published.py: the address, the version, the PDF button, descriptions, OpenGraph tags, the sitemap;
- tl_explainer.py: the explainer's view ({tl-explainer}). The math is tl_math.py, an extension of its own.
"""
from __future__ import annotations

from pathlib import Path

from bookbuild import patches as registry
from bookbuild.sphinx_ext import accessibility, checks, deep_dives, editions, markup, page_speed, published


def check_patches(app, config) -> None:
    """Fail the build (naming the patch and the installed version) when a private part of Sphinx, myst-nb or the
    theme that these extensions or their templates use is no longer what they were written for."""
    for name, entry in registry.PATCHES.items():
        if entry.applied_by.startswith("bookbuild/sphinx_ext/"):
            registry.check(name)


def our_templates_first(app, config) -> None:
    """templates/ overrides three pydata-sphinx-theme components and the page's head (layout.html: no search
    scripts on pages other than search.html) (see each file for why). And the book's
    title stays next to the logo, as text (translatable, in the theme's colours): with a logo and no
    ``logo.text`` the theme shows the image alone."""
    config.templates_path.insert(0, str(Path(__file__).parent / "templates"))
    config.html_theme_options.setdefault("logo", {}).setdefault("text", config.html_title)
    # EN <-> 中文 before the theme's buttons, on every page of both editions (templates/tl-language.html)
    config.html_theme_options.setdefault("article_header_end", ["tl-language.html", "article-header-buttons.html"])


def add_static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def setup(app):
    # {English toggle text: its translation} for the folded cells and deep dives (bookbuild/translation/notebooks.py
    # CODE_PROMPTS; empty in English)
    app.add_config_value("tl_code_prompts", {}, "html", types=[dict])
    app.connect("config-inited", check_patches)
    app.connect("config-inited", our_templates_first)
    app.connect("builder-inited", add_static)
    app.add_css_file("tl-book.css")
    # the order of the doctree-read handlers: the anchors go first (priority), then the notes, the deep dives, the
    # exercises' cells and the Chinese sidebar's captions; the scripts load in the order they are added
    for concern in (markup, deep_dives, page_speed, checks, editions, accessibility, published):
        concern.setup(app)
    app.setup_extension("bookbuild.sphinx_ext.tl_explainer")  # the explainer's view, {tl-explainer}
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
