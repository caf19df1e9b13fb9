"""Every page of the built site within the budgets that make it fast on a phone, without a browser.

Lighthouse (bookbuild/lighthouse.py, `make bench`) measures the pages in its default mobile emulation: a
mid-range phone on slow 4G (1.6 Mbit/s, 150 ms round trips, a CPU 4x slower than a desktop's). Its timings move
with the machine that runs it; what they follow does not, and is checked here, on EVERY page of both editions
(50 pages today, a few seconds: reading and gzip-compressing files, no timing):

* the compressed bytes on the critical path (the page, its stylesheets and the web fonts its first layout asks
  for at the highest priority: Lighthouse's simulation counts them all before the first paint) and the compressed
  bytes loaded before first use (those, the page's scripts and its images that are not lazy);
* the DOM elements (the content of a folded cell waits in a <template>, outside the DOM: accessibility.py);
* no script that blocks rendering (every script file is deferred or async), no math script at all (the math is
  typeset when the site is built: tl_math.py), and no search index on pages other than search.html.

The budgets and how they imply the scores: at 1.6 Mbit/s (200 KB/s), CRITICAL_KIB on the critical path arrives in
about 1.3 s; with the round trips Lighthouse adds (DNS, connection, the page, then its stylesheets in parallel:
about 0.6 s) the first and largest contentful paint (text) come before 2.5 s. TBT follows the main thread's work
after the first paint: the page's scripts (BEFORE_USE_KIB bounds them) and the style and layout of its DOM
(DOM_ELEMENTS). The budgets are set from the pages measured to meet the goals (benchmarks/lighthouse.json), with
the measured values in the comments.
"""
from __future__ import annotations

import gzip
import os
import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
HTML = Path(os.environ.get("SITE_HTML", ROOT / "_build" / "html"))

CRITICAL_KIB = 200      # the page + its stylesheets + its fonts, gzip (measured: 186 KiB at most, zh chapter 12;
                        # the fonts alone were 386 KB on chapter 3 before bookbuild/slim_static.py)
BEFORE_USE_KIB = 260    # + its scripts and eager images (measured: 243 KiB at most, zh chapter 12)
DOM_ELEMENTS = 7_700    # elements outside <template> (measured: 7,235 at most, chapter 2; 9,949 before the plain
                        # code spans were unwrapped)
TEXT = {".html", ".css", ".js", ".json", ".svg", ".mjs"}


def pages() -> list[Path]:
    if not (HTML / "index.html").exists():
        pytest.skip("site not built (make book)")
    return sorted(p for p in HTML.rglob("*.html")
                  if not {"_static", "reports", "_sources"} & set(p.relative_to(HTML).parts)
                  and "<body" in p.read_text(encoding="utf-8", errors="replace")[:100_000])


@cache
def compressed(path: Path) -> int:
    data = path.read_bytes()
    return len(gzip.compress(data, 6)) if path.suffix in TEXT else len(data)


def parse(page: Path):
    import lxml.html

    return lxml.html.fromstring(page.read_bytes())


def local(page: Path, url: str) -> Path | None:
    """The file a page-relative URL names (None for data:, other hosts, anchors)."""
    if not url or url.startswith(("data:", "#", "http:", "https:", "//", "mailto:")):
        return None
    path = (page.parent / unquote(urlsplit(url).path)).resolve()
    return path if path.is_file() else None


def fonts(page: Path, text: str | None) -> list[Path]:
    """The web fonts the page's first layout asks for, at the browser's highest priority: Font Awesome's (the
    header's icons, the admonitions' and arrows' characters: bookbuild/slim_static.py keeps three small WOFF files)
    and each MathJax font its formulas draw in (bookbuild/slim_static.py page_formula_characters)."""
    from bookbuild import slim_static

    text = page.read_text(encoding="utf-8") if text is None else text
    found = sorted((HTML / "_static" / slim_static.FA_FONTS).glob("*.woff"))
    found += [HTML / slim_static.SITE_MATHJAX_FONTS / name for name in slim_static.page_formula_characters(text)]
    return [f for f in found if f.is_file()]


def outside_templates(doc, xpath: str):
    return doc.xpath(xpath + "[not(ancestor::template)]")


def measure(page: Path) -> dict:
    doc = parse(page)
    styles = [local(page, link.get("href")) for link in outside_templates(doc, "//link")
              if "stylesheet" in (link.get("rel") or "")]
    scripts = [s for s in outside_templates(doc, "//script") if s.get("src")]
    images = [local(page, i.get("src")) for i in outside_templates(doc, "//img") if i.get("loading") != "lazy"]
    critical = (compressed(page) + sum(compressed(p) for p in styles if p)
                + sum(compressed(f) for f in fonts(page, text=None)))
    before_use = critical + sum(compressed(p) for p in (local(page, s.get("src")) for s in scripts) if p) \
        + sum(compressed(p) for p in images if p)
    # in the head: the browser renders nothing until such a script has arrived and run (the search page's own
    # scripts, at the end of its body, come after everything it shows); a script of another type (page_speed.py's
    # LATER_TYPE: loaded after the first frame by static/tl-lazy.js) is neither loaded nor run by the browser
    blocking = [s.get("src") for s in doc.xpath("//head//script[@src]")
                if s.get("defer") is None and s.get("async") is None
                and s.get("type") in (None, "", "text/javascript", "application/javascript")]
    text = page.read_text(encoding="utf-8")
    return dict(critical=critical, before_use=before_use, dom=len(outside_templates(doc, "//*")),
                blocking=blocking, scripts=[s.get("src") for s in scripts], text=text, doc=doc)


@cache
def site() -> dict:
    return {str(p.relative_to(HTML)): measure(p) for p in pages()}


def _heaviest(key: str) -> str:
    name, row = max(site().items(), key=lambda kv: kv[1][key])
    return f"heaviest: {name} {row[key]:,}"


def test_every_page_is_checked():
    names = set(site())
    assert "notebooks/12_inference.html" in names and "book/intro.html" in names
    if (HTML / "zh" / "index.html").exists():
        assert "zh/notebooks/12_inference.html" in names


def test_critical_path_bytes():
    over = {n: f"{r['critical'] / 1024:.0f} KiB" for n, r in site().items() if r["critical"] > CRITICAL_KIB * 1024}
    assert not over, f"pages over {CRITICAL_KIB} KiB (gzip) on the critical path: {over}"


def test_bytes_before_first_use():
    over = {n: f"{r['before_use'] / 1024:.0f} KiB" for n, r in site().items()
            if r["before_use"] > BEFORE_USE_KIB * 1024}
    assert not over, f"pages loading over {BEFORE_USE_KIB} KiB (gzip) before first use: {over}"


def test_dom_elements():
    over = {n: r["dom"] for n, r in site().items() if r["dom"] > DOM_ELEMENTS}
    assert not over, f"pages with more than {DOM_ELEMENTS:,} DOM elements ({_heaviest('dom')}): {over}"


SEARCH_SCRIPTS = ("searchtools.js", "language_data.js", "searchindex.js")  # search.html's own (the theme's template)


def test_no_render_blocking_script():
    """No page's head holds a script that blocks rendering, but the search page (its results are what it shows; its
    template's searchtools.js runs at once and needs doctools.js before it: page_speed.py leaves its scripts as they
    are). It loads the search index, and it alone."""
    blocking = {n: r["blocking"] for n, r in site().items() if not n.endswith("search.html")}
    assert any(s.endswith(SEARCH_SCRIPTS) for s in site()["search.html"]["blocking"])
    blocking = {n: b for n, b in blocking.items() if b}
    assert not blocking, f"scripts without defer/async (they block the page's rendering): {blocking}"


def test_no_math_script():
    """The math is typeset at build time (bookbuild/sphinx_ext/tl_math.py): no MathJax (or other math) script anywhere,
    and every formula of every page is already MathJax's CommonHTML, with its assistive MathML for screen readers."""
    found = {n: s for n, r in site().items() for s in r["scripts"]
             if re.search(r"mathjax|katex|tex-chtml|tex-svg", s, re.I)}
    assert not found, f"math scripts on pages: {found}"
    inline = [n for n, r in site().items() if "window.MathJax" in r["text"]]
    assert not inline, f"MathJax configured inline on: {inline}"
    unrendered, no_mml, no_css = [], [], []
    for name, r in site().items():
        math = outside_templates(r["doc"], "//*[contains(concat(' ', @class, ' '), ' math ')]")
        if not math:
            continue
        unrendered += [name] if any(not m.xpath(".//mjx-container") for m in math) else []
        no_mml += [name] if any(not m.xpath(".//mjx-assistive-mml//math") for m in math) else []
        no_css += [name] if 'id="tl-math-css"' not in r["text"] else []
    assert not unrendered, f"formulas not typeset at build time on: {unrendered}"
    assert not no_mml, f"formulas without their assistive MathML on: {no_mml}"
    assert not no_css, f"pages with math but without its stylesheet: {no_css}"
    assert any(outside_templates(r["doc"], "//mjx-container") for r in site().values()), "no math on the site at all?"


def test_search_index_only_on_the_search_page():
    loads = [n for n, r in site().items() if not n.endswith("search.html")
             and any(s.endswith("searchindex.js") or "searchtools.js" in s for s in r["scripts"])]
    assert not loads, f"pages loading the search index before the reader searches: {loads}"
    assert any("searchindex.js" in s for s in site()["search.html"]["scripts"]), "search.html lost its index"


def test_one_static_folder():
    """The Chinese edition loads the English edition's _static/; its own holds only what differs by language."""
    zh = HTML / "zh" / "_static"
    if not zh.is_dir():
        pytest.skip("no Chinese edition")
    own = sorted(str(p.relative_to(zh)) for p in zh.rglob("*") if p.is_file())
    assert own == ["documentation_options.js", "tl/tl-translator.js", "translations.js"], own
    assert sum(p.stat().st_size for p in zh.rglob("*") if p.is_file()) < 64 * 1024
    missing = {n: s for n, r in site().items() if n.startswith("zh/")
               for s in r["scripts"] + [link.get("href") for link in r["doc"].xpath("//link[@rel='stylesheet']")]
               if s and not s.startswith(("http", "data:")) and local(HTML / n, s) is None}
    assert not missing, f"Chinese pages referring to files that are not there: {missing}"


def test_every_page_describes_itself():
    """SEO: a meta description (the page's first paragraph, in its edition's language), OpenGraph for link previews."""
    bad = {}
    for name, r in site().items():
        doc = r["doc"]
        description = doc.xpath("//meta[@name='description']/@content")
        og = {m.get("property"): m.get("content") for m in doc.xpath("//meta[starts-with(@property, 'og:')]")}
        if len(description) != 1 or len(description[0]) < 20:
            bad[name] = f"description {description}"
        elif not {"og:title", "og:description", "og:image", "og:url"} <= set(og):
            bad[name] = f"OpenGraph {sorted(og)}"
        elif name.startswith("zh/notebooks/") and not re.search(r"[\u4e00-\u9fff]", description[0]):
            bad[name] = f"a Chinese page described in English: {description[0][:60]}"
    assert not bad, bad
    assert (HTML / "sitemap.xml").is_file() and (HTML / "social.png").is_file()
    sitemap = (HTML / "sitemap.xml").read_text(encoding="utf-8")
    assert "notebooks/03_self_attention.html</loc>" in sitemap
    assert "zh/notebooks/03_self_attention.html</loc>" in sitemap
