#!/usr/bin/env python3
"""Print each edition of the built book to one PDF (`make pdf`, after `make book`).

    python -m bookbuild.build_pdf            # _build/pdf/transformer-step-by-step.en.pdf and .zh.pdf
    python -m bookbuild.build_pdf --edition zh

How: the pages the book build already wrote (_build/html, _build/html/zh) are joined, in _toc.yml's order, into
ONE document: a cover (title, edition, version, date), a table of contents, then every chapter's article. Nothing
is built or executed again, so it takes seconds, not a second Sphinx run per edition. Debian's Chromium
(tests/chromium.py's binary, driven by Playwright; no browser is downloaded) loads that document from a local
server beside the site's own files (its images, CSS and MathJax's fonts; the math was typeset when the site
was built), waits for the fonts to load, and prints it with ``page.pdf(outline=True, tagged=True)``: the PDF's bookmarks
come from the headings (each chapter an h1, its sections h2, h3...).

For paper: the precomputed controls (transformer_lite.book.interactive) show their default figure with a line
saying where they are live; the in-browser translator box becomes such a line; code cells whose source the site
folds away are left out, folded solutions are printed open; code wraps at the page edge (print CSS below).
The Chinese edition is rendered in the system's CJK font (fonts-noto-cjk).

The site links each edition's PDF from the download menu of every page when the file exists at build time
(bookbuild/sphinx_ext/published.py, ``pdf_button``): run `make book` again after `make pdf` to add the links.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import html
import http.server
import json
import os
import posixpath
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from bs4 import BeautifulSoup

from bookbuild.build_book import ROOT, finish, read_yaml, toc_entries

HTML = ROOT / "_build" / "html"
OUT = ROOT / "_build" / "pdf"
MAX_PDF = 40 * 1024 * 1024
EDITIONS = {"en": "", "zh": "zh"}  # edition -> its folder under _build/html
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
# the page the joined document is served as: one folder deep, like every page of the book (book/, notebooks/),
# so the pages' relative links to ../_images and ../_static resolve unchanged
PRINT_PAGE = "notebooks" + "/__print__.html"

WORDS = {
    "en": {"edition": "English edition", "contents": "Contents", "version": "Version",
           "live": "Interactive in the online book and in the notebook (Jupyter, Colab): {what}. "
                   "Printed here in its default state.",
           "bertviz": "choose the attention and the layer, hover a token or a head",
           "box": "In the online book and in the notebook (Jupyter, Colab) a box here lets you type your own input.",
           "site": "The online book: {site}; the notebooks and the code: {url}"},
    "zh": {"edition": "中文版", "contents": "目录", "version": "版本",
           "live": "在线版和笔记本（Jupyter、Colab）中可交互：{what}。此处印出的是默认状态。",
           "bertviz": "选择注意力类型和层，将鼠标悬停在词元或注意力头上",
           "box": "在线版和笔记本（Jupyter、Colab）中，此处有一个输入框，可输入你自己的句子。",
           "site": "在线版：{site}；笔记本与代码：{url}"},
}

# the theme's and search's scripts do nothing for paper (and expect the theme's page around the article)
DROP_SCRIPTS = re.compile(r"bootstrap\.js|pydata-sphinx-theme\.js|sphinx-book-theme\.js|searchtools\.js|"
                          r"searchindex\.js|language_data\.js|copybutton\.js|clipboard\.min\.js|togglebutton\.js|"
                          r"design-tabs\.js|sphinx_highlight\.js")

PRINT_CSS = """
@page { size: A4; margin: 16mm 14mm 16mm 14mm; }
html, body { background: #fff !important; }
body { font-size: 10pt; margin: 0; }
.bd-content, .bd-article-container, article.bd-article { max-width: none !important; width: auto !important;
  padding: 0 !important; margin: 0 !important; overflow: visible !important; }
.tl-pdf-chapter { break-before: page; }
h1, h2, h3, h4 { break-after: avoid; }
.headerlink, .copybtn, .tl-controls, .tl-tr-row, .tl-pdf-drop { display: none !important; }
pre, code, kbd, samp, .highlight pre, .output pre, .cell_output pre {
  white-space: pre-wrap !important; overflow-wrap: anywhere !important; word-break: break-word !important;
  overflow: visible !important; max-width: 100% !important; }
div.highlight, .cell_output, .output, .cell, .cell_input, .pst-scrollable-table-container, .table-wrapper,
  .tl-explore, .tl-frame, div.math-wrapper, .math { overflow: visible !important; max-width: 100% !important; }
table { max-width: 100% !important; table-layout: auto; }
td, th { overflow-wrap: anywhere; word-break: break-word; }
img, svg, canvas, video { max-width: 100% !important; height: auto; }
figure, img, .cell_output img { break-inside: avoid; }
mjx-container[display="true"] { max-width: 100% !important; overflow: visible !important; }
a { color: inherit; text-decoration: none; }
.tl-pdf-note { font-style: italic; font-size: 0.9em; color: #444; border-left: 3px solid #999;
  padding-left: 0.6em; margin: 0.3em 0 0.8em; }
.tl-pdf-cover { height: 250mm; display: flex; flex-direction: column; justify-content: center; text-align: center; }
.tl-pdf-cover .tl-pdf-title { font-size: 30pt; font-weight: 700; margin: 0 0 0.4em; }
.tl-pdf-cover img { width: 40mm; margin: 0 auto 10mm; }
.tl-pdf-cover p { font-size: 13pt; margin: 0.3em 0; }
.tl-pdf-cover .tl-pdf-licence, .tl-pdf-cover .tl-pdf-licence p { font-size: 9pt; margin-top: 1.5em; }
.tl-pdf-toc { break-before: page; }
.tl-pdf-toc ol { list-style: none; padding-left: 0; }
.tl-pdf-toc ol ol { padding-left: 1.4em; font-size: 0.92em; }
.tl-pdf-toc .tl-pdf-part { font-weight: 700; margin-top: 0.8em; }
.tl-pdf-toc li { margin: 0.1em 0; }
"""

# require.js gives up on d3/jquery after 7 s, which a busy machine loading the whole book can exceed
WAIT_FOR_REQUIRE = ("(function(){var t=setInterval(function(){if(window.requirejs&&window.requirejs.config)"
                    "{window.requirejs.config({waitSeconds:0});clearInterval(t);}},5);})();")

FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#555">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


def log(msg: str) -> None:
    print(f"[build_pdf] {msg}", file=sys.stderr, flush=True)


def pdf_path(edition: str, out: Path = OUT) -> Path:
    return out / f"transformer-step-by-step.{edition}.pdf"


def version() -> str:
    """The package's version and the commit the book was built from, with that commit's date."""
    import tomllib

    v = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    try:
        commit = subprocess.run(["git", "log", "-1", "--format=%h %cs"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
        return f"{v} ({commit[0]}), {commit[1]}"
    except (OSError, subprocess.CalledProcessError, IndexError):
        return f"{v}, {datetime.date.today().isoformat()}"


def parts(toc: Path = ROOT / "_toc.yml") -> list[tuple[str | None, list[str]]]:
    """(caption, documents) in order; the root document first, without a caption."""
    data = read_yaml(toc)
    out = [(None, [data["root"]])]
    for part in data.get("parts", []):
        out.append((part.get("caption"), [c["file"] for c in part.get("chapters", [])]))
    assert [d for _, docs in out for d in docs] == toc_entries(toc)
    return out


def _clean_text(tag) -> str:
    return re.sub(r"\s+", " ", tag.get_text(" ", strip=True).replace("#", "")).strip()


def joined_document(edition: str, html_root: Path) -> tuple[str, list[str]]:
    """The one HTML document of an edition and its chapter titles (what the bookmarks must hold)."""
    words = WORDS[edition]
    head_items, seen_head = [], set()
    chapters, titles, used_ids = [], [], set()
    toc_html = []
    first_page = None
    docs = [d for _, ds in parts() for d in ds]
    anchor_of = {doc: "tl-pdf-" + re.sub(r"[^A-Za-z0-9_-]", "-", doc) for doc in docs}
    id_maps: dict[str, dict[str, str]] = {}
    soups = {}
    for doc in docs:
        page = html_root / f"{doc}.html"
        # the ids of the precomputed controls and the bertviz views count from 1 on every page, and their scripts
        # find their elements by id: each page's get its prefix, so chapter 9's view does not draw into chapter 4's
        text = re.sub(r"\b(tl-(?:bertviz|explore|live)-\d+)", anchor_of[doc] + r"-\1", page.read_text(encoding="utf-8"))
        soup = BeautifulSoup(text, "lxml")
        soups[doc] = soup
        first_page = first_page or soup
        for el in soup.head.find_all(["link", "script", "style"]):
            if el.name == "link" and "stylesheet" not in (el.get("rel") or []):
                continue
            src = el.get("src") or el.get("href") or ""
            if src and DROP_SCRIPTS.search(src):
                continue
            key = re.sub(r"\?.*", "", src) if src else str(el)
            if key not in seen_head:
                seen_head.add(key)
                head_items.append(str(el))
        # ids: the first page to use one keeps it; a later page's repeat ("exercises") gets the page's prefix
        ids = {}
        for el in soup.select("article.bd-article [id]"):
            old = el["id"]
            new = old if old not in used_ids else f"{anchor_of[doc]}--{old}"
            used_ids.add(new)
            ids[old] = new
        id_maps[doc] = ids

    site = published()["site"].rstrip("/") + "/" + (f"{EDITIONS[edition]}/" if EDITIONS[edition] else "")

    def target(doc: str, href: str) -> str | None:
        return printed_href(doc, href, anchor_of, id_maps, site)

    for caption, ds in parts():
        if caption:
            toc_html.append(f'<li class="tl-pdf-part">{html.escape(translate_caption(caption, edition))}</li>')
        for doc in ds:
            soup = soups[doc]
            article = soup.select_one("article.bd-article")
            for el in article.select(".headerlink, script[src]"):
                el.decompose()
            for el in article.select(".tl-explore script"):  # the frame switcher and its frames: not for paper
                el.decompose()
            for el in article.select("template.tl-lazy"):  # a folded cell's content, put in place on the site
                el.unwrap()                                 # when its fold opens (static/tl-lazy.js)
            for el in article.select(".tag_hide-input > details, .tag_remove-input > details"):
                el.decompose()  # the source the site folds away (a figure's plotting code): its output stays
            # folded solutions and deep dives: printed open, without the toggle
            for details in article.select("details.hide, details.tl-deep-dive-fold"):
                details["open"] = ""
                if details.summary:
                    details.summary.decompose()
            for el in article.select(".tl-explore"):
                names = [_clean_text(lab.find(string=True, recursive=False) or "") or _clean_text(lab)
                         for lab in el.select(".tl-controls label")]
                if "tl-live" in (el.get("class") or []):
                    note = words["box"]
                else:
                    note = words["live"].format(what=", ".join(n for n in names if n))
                p = soup.new_tag("p", attrs={"class": "tl-pdf-note"})
                p.string = note
                el.insert(0, p)
                for old in el.select(".tl-note"):
                    old.decompose()
            for el in article.select(".tl-bertviz"):  # bertviz's views: drawn in their first layer and attention
                p = soup.new_tag("p", attrs={"class": "tl-pdf-note"})
                p.string = words["live"].format(what=words["bertviz"])
                el.insert_before(p)
            for el in article.select(".tl-translator, .tl-explainer"):  # they run in the browser: a note instead
                p = soup.new_tag("p", attrs={"class": "tl-pdf-note"})
                p.string = words["box"]
                el.replace_with(p)
            for img in article.find_all("img"):
                if img.get("loading"):
                    del img["loading"]
            for el in article.select("[id]"):
                el["id"] = id_maps[doc].get(el["id"], el["id"])
            for a in article.find_all("a", href=True):
                new = target(doc, a["href"])
                if new is None:
                    del a["href"]
                else:
                    a["href"] = new
            h1 = article.find("h1")
            title = _clean_text(h1) if h1 else doc
            titles.append(title)
            sections = [h2 for h2 in article.find_all("h2")]
            sub = "".join(f'<li><a href="#{h2.get("id") or (h2.parent.get("id") if h2.parent else "")}">'
                          f'{html.escape(_clean_text(h2))}</a></li>' for h2 in sections)
            toc_html.append(f'<li><a href="#{anchor_of[doc]}">{html.escape(title)}</a>'
                            + (f"<ol>{sub}</ol>" if sub else "") + "</li>")
            chapters.append(f'<section class="tl-pdf-chapter" id="{anchor_of[doc]}"><div class="bd-content">'
                            f'<div class="bd-article-container">{article}</div></div></section>')

    lang = first_page.html.get("lang", "en")
    title = book_title(edition)
    footer = first_page.find("div", class_="extra_footer")  # the site's footer: the licences (one source: _config.yml)
    logo = "../_static/logo.svg" if (html_root / "_static" / "logo.svg").exists() else None
    cover = ('<div class="tl-pdf-cover">'
             + (f'<img src="{logo}" alt="">' if logo else "")
             + f'<p class="tl-pdf-title">{html.escape(title)}</p>'
             f'<p>{html.escape(words["edition"])}</p>'
             f'<p>{html.escape(words["version"])} {html.escape(version())}</p>'
             f'<p style="font-size:10pt;margin-top:2em">{html.escape(words["site"].format(**published()))}</p>'
             + (f'<div class="tl-pdf-licence">{footer.decode_contents()}</div>' if footer else "")
             + '</div>')
    contents = (f'<nav class="tl-pdf-toc"><h1 id="tl-pdf-contents">{html.escape(words["contents"])}</h1>'
                f'<ol>{"".join(toc_html)}</ol></nav>')
    doc_html = (f'<!DOCTYPE html><html lang="{lang}" data-theme="light" data-mode="light"><head><meta charset="utf-8">'
                f'<title>{html.escape(title)}</title>{"".join(head_items)}<style>{PRINT_CSS}</style>'
                f'<script>{WAIT_FOR_REQUIRE}</script></head>'
                f'<body><div class="bd-page-width">{cover}{contents}{"".join(chapters)}</div></body></html>')
    return doc_html, titles


def printed_href(doc: str, href: str, anchor_of: dict[str, str], id_maps: dict[str, dict[str, str]],
                 site: str) -> str | None:
    """Where a link of page ``doc`` points in the printed book: an in-document ``#id`` for a page of the book, the
    published page for a link that carries a query (a sentence and a step for the explainer's view, which runs only in
    a browser: in the PDF the view is a note, and its chapter would lose both), the href itself for http(s) and
    mailto, None for anything else. ``site``: the edition's published address, ending in "/"."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I):
        return href  # http(s), mailto: kept as they are
    url = urlsplit(urljoin(f"/{doc}.html", href))
    path = posixpath.normpath(url.path).lstrip("/")
    other = path[:-5] if path.endswith(".html") else None
    if other not in anchor_of:
        return None
    if url.query:
        return site + path + "?" + url.query + ("#" + url.fragment if url.fragment else "")
    if url.fragment:
        return "#" + id_maps[other].get(url.fragment, url.fragment)
    return "#" + anchor_of[other]


def book_title(edition: str) -> str:
    title = read_yaml(ROOT / "_config.yml")["title"]
    if edition == "zh":
        from bookbuild.translation.edition import translated

        return translated(title)
    return title


def translate_caption(caption: str, edition: str) -> str:
    if edition != "zh":
        return caption
    from bookbuild.translation.edition import translated

    try:
        return translated(caption)
    except KeyError:
        return caption


def published() -> dict:
    """``url`` and ``site``: where the printed site was built to be published (bookbuild/build_book.py's record of it),
    else the address in force now (bookbuild/repository.py)."""
    try:
        info = json.loads((ROOT / "_build" / "build-info.json").read_text(encoding="utf-8"))
        return {"url": info["repository"], "site": info["site"]}
    except (OSError, ValueError, KeyError):
        from bookbuild import repository

        address = repository.address()
        return {"url": address.url, "site": address.site}


class _Handler(http.server.SimpleHTTPRequestHandler):
    documents: dict[str, bytes] = {}

    def do_GET(self):  # noqa: N802
        body = self.documents.get(urlsplit(self.path).path)
        if body is None:
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def print_pdf(url: str, dest: Path, browser) -> dict:
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.emulate_media(media="print", color_scheme="light")
    t = time.time()
    page.goto(url, wait_until="load", timeout=180_000)
    log(f"  loaded in {time.time() - t:.0f} s")
    # the math was typeset when the site was built (bookbuild/sphinx_ext/tl_math.py): only its fonts must load
    page.evaluate("() => document.fonts.ready.then(() => true)")
    # every section shown (static/tl-lazy.js lays them out a few at a time on the site); the bertviz views draw
    # themselves (d3) once require.js has loaded d3 and jquery, on the site when the reader comes near them
    page.evaluate("() => { if (window.tlShowSections) window.tlShowSections(); if (window.tlRequireAll) "
                  "window.tlRequireAll(); }")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.tl-bertviz [id$=\"-vis\"]'))"
                           ".every(v => v.querySelector('svg'))", timeout=120_000)
    math = page.evaluate("() => document.querySelectorAll('mjx-container').length")
    raw = page.evaluate("() => document.querySelectorAll('.math').length")
    # every image decoded (the pages' figures are files and data: URIs)
    page.wait_for_function("() => Array.from(document.images).every(i => i.complete)", timeout=60_000)
    dest.parent.mkdir(parents=True, exist_ok=True)
    headings = page.evaluate("() => Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6'))"
                             ".filter(h => h.offsetParent !== null || h.getClientRects().length)"
                             ".map(h => h.textContent.replace(/\\s+/g, ' ').trim())")
    page.pdf(path=str(dest), format="A4", print_background=True, outline=True, tagged=True,
             display_header_footer=True, header_template="<div></div>", footer_template=FOOTER,
             margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
    page.close()
    fixed = fix_outline(dest, headings)
    return {"math": math, "math_blocks": raw, "errors": errors, "outline_fixed": fixed}


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def fix_outline(pdf: Path, headings: list[str]) -> int:
    """Chromium's bookmarks repeat the first line of some headings ("The mathThe math": seen on headings it
    lays out at the top of a page). Each bookmark is given the text of its heading in the document (the
    bookmarks are the headings, in order). Returns how many titles changed."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    writer = PdfWriter(clone_from=PdfReader(str(pdf)))
    root = writer.root_object.get("/Outlines")
    if root is None:
        return 0
    items = []

    def walk(node):
        while node is not None:
            node = node.get_object()
            items.append(node)
            if "/First" in node:
                walk(node["/First"])
            node = node.get("/Next")

    walk(root.get_object().get("/First"))
    changed, i = 0, 0
    for item in items:
        title = str(item.get("/Title", ""))
        for j in range(i, min(i + 8, len(headings))):
            h = headings[j]
            if h and _squash(title).endswith(_squash(h)):
                i = j + 1
                if title != h:
                    item[NameObject("/Title")] = TextStringObject(h)
                    changed += 1
                break
    if changed:
        tmp = pdf.with_suffix(".tmp.pdf")
        with open(tmp, "wb") as f:
            writer.write(f)
        tmp.replace(pdf)
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edition", choices=sorted(EDITIONS), action="append",
                    help="one edition (default: both)")
    ap.add_argument("--html", type=Path, default=HTML, help="the built site (make book)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    editions = args.edition or list(EDITIONS)
    t0 = time.time()
    for e in editions:
        if not (args.html / EDITIONS[e] / "index.html").exists():
            raise SystemExit(f"{args.html / EDITIONS[e]}: no built site; run `make book` first")
    documents = {}
    for e in editions:
        doc, titles = joined_document(e, args.html / EDITIONS[e])
        documents["/" + posixpath.join(EDITIONS[e], PRINT_PAGE).lstrip("/")] = doc.encode("utf-8")
        log(f"{e}: {len(titles)} chapters joined into one document ({len(doc) / 2**20:.1f} MiB) "
            f"in {time.time() - t0:.1f} s")
    _Handler.documents = documents
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_Handler, directory=str(args.html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    problems = []
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for e in editions:
                t1 = time.time()
                path = "/" + posixpath.join(EDITIONS[e], PRINT_PAGE).lstrip("/")
                dest = pdf_path(e, args.out)
                info = print_pdf(f"http://127.0.0.1:{server.server_port}{path}", dest, browser)
                size = dest.stat().st_size
                log(f"{e}: {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest} "
                    f"{size / 2**20:.1f} MiB, {info['math']} formulas typeset, "
                    f"{info['outline_fixed']} bookmark titles fixed, printed in {time.time() - t1:.0f} s"
                    + (f"; page errors: {info['errors'][:3]}" if info["errors"] else ""))
                if size > MAX_PDF:
                    problems.append(f"{dest.name}: {size / 2**20:.1f} MiB > {MAX_PDF / 2**20:.0f} MiB")
                if info["math_blocks"] and not info["math"]:
                    problems.append(f"{dest.name}: MathJax typeset nothing")
            browser.close()
    finally:
        server.shutdown()
    # what the covers name (bookbuild/release.py checks it against the site the release zips)
    (args.out / "pdf-info.json").write_text(json.dumps({**published(), "editions": editions}, indent=1) + "\n",
                                            encoding="utf-8")
    return finish(problems, t0, log)


if __name__ == "__main__":
    sys.exit(main())
