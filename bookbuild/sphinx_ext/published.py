"""Where the book is published, as the pages say it: the address the build was given, the version in the footer,
the PDF button, each page's description and OpenGraph tags, and the sitemap."""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

from bookbuild.sphinx_ext.editions import translated_edition

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


# `make pdf` (bookbuild/build_pdf.py) writes each edition's PDF here; a build that finds its edition's links it
PDF_DIR = ("_build", "pdf")


PDF_NAME = "transformer-step-by-step.{edition}.pdf"


def _pdf(app) -> Path:
    return Path(app.srcdir).joinpath(*PDF_DIR) / PDF_NAME.format(edition="zh" if translated_edition(app) else "en")


def pdf_button(app, pagename, templatename, context, doctree) -> None:
    """"PDF" beside the download button of every page, when `make pdf` has made this edition's PDF (it is copied
    into the site as pdf/..., see copy_pdf); without the file, no button."""
    if app.builder.format != "html" or "header_buttons" not in context or not _pdf(app).exists():
        return
    zh = translated_edition(app)
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
    return base + "zh/" if translated_edition(app) else base


def seo_tags(app, pagename, templatename, context, doctree) -> None:
    """A ``<meta name="description">`` on every page, from the page's first paragraph (in its edition's language),
    and the OpenGraph and Twitter card tags that make a shared link show a title, that description and the book's
    image (book/social.png, at the site's root). Written here rather than by sphinxext-opengraph: the description
    is the same text in all three tags, and nothing is drawn per page at build time."""
    if app.builder.format != "html":
        return
    from html import escape

    zh = translated_edition(app)
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
    if exception is not None or app.builder.format != "html" or translated_edition(app):
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


def setup(app) -> None:
    app.connect("html-page-context", pdf_button, priority=901)  # after sphinx-book-theme's header buttons (501)
    app.connect("build-finished", copy_pdf)
    app.connect("config-inited", published_address, priority=100)  # before every use of the address
    app.connect("html-page-context", seo_tags)
    app.connect("build-finished", write_sitemap)
