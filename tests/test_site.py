"""The built site in a real browser: every page, offline, accessible, no errors, math rendered, every control alive.

Opens EVERY page of _build/html once in Debian's Chromium through Playwright (no browser download): the
English edition served over HTTP on 127.0.0.1, as the site will be hosted (light colour mode), and the Chinese
edition from disk (file://), as a reader who downloaded the site opens it (dark colour mode). The two editions
are built from the same notebooks' code, templates, scripts and style sheets, so every chapter is read in both
ways and in both colour modes, each page once (a second visit of every page in the other way and mode cost half
of the site tests' time and found nothing the first did not). On each page it runs axe-core (WCAG 2.0 and
2.1, levels A and AA); axe-core comes from npm (package.json's devDependencies) and is injected by the
test: it is not on the site.
Builds the site first when _build/html is missing (`make test` builds it anyway). Screenshots of every
page (the first screen, or the whole page with TL_FULL_SCREENSHOTS=1) go to _build/screenshots/.
The two passes run on two pytest-xdist workers at once (conftest.py puts the file:// tests in a group of
their own). Skipped when Chromium, Playwright or axe-core is missing,
except under CI=true, where that is a failure.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urljoin

import pytest

from chromium import need as _need

# one xdist worker runs this file and tests/test_site.py/test_translator_web.py: they share the served site,
# the browser and the pages' reports (`make test` runs `pytest -n 3 --dist loadgroup`)
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("site")]

ROOT = Path(__file__).resolve().parent.parent
HTML = Path(os.environ.get("SITE_HTML", ROOT / "_build" / "html"))  # SITE_HTML: test another build
SHOTS = ROOT / "_build" / "screenshots"
# The first screen of every page, as the reader sees it on opening it. A whole chapter is ~33,000 px tall: its
# full-page PNG takes 2.5 s and 6 MB, which is most of what a page's visit costs; TL_FULL_SCREENSHOTS=1 takes them.
FULL_PAGE_SHOTS = os.environ.get("TL_FULL_SCREENSHOTS", "") == "1"

# axe-core from npm (`npm ci` installs devDependencies too). WCAG 2.0 and 2.1, A and AA: 2.1 adds
# "label in name" (2.5.3), which the theme's and myst-nb's buttons need (bookbuild/sphinx_ext/accessibility.py).
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SCHEMES = ["http", "file"]
# The theme follows the reader's system colour mode (html_context.default_mode: auto); the file:// pass
# reads its pages in dark mode, so axe checks both modes' colours.
COLOUR = {"http": "light", "file": "dark"}

# TeX left unrendered in the visible text (outside code): \( \[ $$ or a $...$ holding TeX-ish characters
RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\$[^$\n]{0,80}?[\\^_{}][^$\n]{0,80}?\$")


def pages() -> list[str]:
    return sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
                  if "_static" not in p.parts and "reports" not in p.parts)


# SITE_FILE_PAGES=all: the file:// pass opens every page of both editions (tests/test_release.py: the site as a
# reader downloads it, every page from disk)
FILE_PAGES_ALL = os.environ.get("SITE_FILE_PAGES", "") == "all"


def pages_of(scheme: str) -> list[str]:
    """The pages one pass opens: the English edition over http, the Chinese one (zh/) from disk (SITE_FILE_PAGES=all:
    every page from disk)."""
    if scheme == "file" and FILE_PAGES_ALL:
        return pages()
    return [p for p in pages() if p.startswith("zh/") == (scheme == "file")]


# JS run in the page after load: finds every problem the reader would see.
# a chapter's sections are shown a few at a time once it has loaded (static/tl-lazy.js); a reader scrolls to one
# after that, and what a test reads of the page (its text, what is visible, axe) it reads once they all are
SECTIONS_SHOWN = "document.documentElement.dataset.tlShown !== undefined"

_INSPECT = r"""
async (pattern) => {
  const out = {math: 0, mathRendered: 0, rawTex: [], badImages: [], controls: [], widgets: 0};
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const math = document.querySelectorAll('.math, span.math, div.math');
  out.math = math.length;
  out.mathRendered = [...math].filter(e => e.querySelector('mjx-container')).length;
  const walker = document.createTreeWalker(document.querySelector('main') || document.body, NodeFilter.SHOW_TEXT);
  const re = new RegExp(pattern);
  while (walker.nextNode()) {
    const n = walker.currentNode, p = n.parentElement;
    if (!p || p.closest('pre, code, script, style, mjx-container, .highlight, textarea')) continue;
    if (re.test(n.textContent)) out.rawTex.push(n.textContent.trim().slice(0, 80));
  }
  for (const img of document.images) {
    if (img.loading === 'lazy') { img.loading = 'eager'; }
    if (!img.complete) { await new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 3000); }); }
    if (!(img.naturalWidth > 0)) out.badImages.push((img.currentSrc || img.src).slice(0, 100));
  }
  out.widgets = document.querySelectorAll('.jupyter-widgets, .widget-area, script[type*="jupyter.widget"]').length;
  // the article's prose (not code, outputs, math or controls): how much of it is Chinese
  out.han = 0; out.latin = 0;
  const article = document.querySelector('article') || document.querySelector('main');
  if (article) {
    const w = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    while (w.nextNode()) {
      const p = w.currentNode.parentElement;
      if (!p || p.closest('pre, code, script, style, mjx-container, .highlight, .cell_output, .output, .math, ' +
                          '.tl-explore, .tl-translator, .tl-explainer, .tl-bertviz, figure img, .headerlink')) continue;
      const t = w.currentNode.textContent;
      out.han += (t.match(/[\u3400-\u9fff]/g) || []).length;
      out.latin += (t.match(/[A-Za-z]/g) || []).length;
    }
  }
  out.lang = document.documentElement.lang;
  // what the reader sees in a frame (theme scripts may decorate the DOM, e.g. copy buttons on <pre>)
  const sig = f => f.textContent + [...f.querySelectorAll('img')].map(i => i.src).join('|');
  // the frames swap synchronously in the controls' event handlers (transformer_lite.book.interactive, bertviz's
  // d3); two animation frames let the browser lay out what changed before it is read
  const settle = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const setTo = async (el, v) => {
    el.value = String(v);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    await settle();
  };
  // our precomputed controls: each control, moved to each of its other values, must change the frame
  for (const root of document.querySelectorAll('.tl-explore')) {
    const frame = root.querySelector('.tl-frame');
    // its frames load on first use (bookbuild/sphinx_ext/page_speed.py lazy_explore_data): as a reader's pointer would
    if (window.tlExploreData && root.querySelector('script.tl-data[data-tl-key]')) await window.tlExploreData(root);
    for (const el of root.querySelectorAll('[data-tl-axis]')) {
      const values = el.tagName === 'SELECT' ? [...el.options].map(o => o.value)
                   : [...Array(+el.max + 1).keys()].map(String);
      const start = el.value, before = sig(frame);
      let changed = 0;
      for (const v of values) {
        if (v === start) continue;
        await setTo(el, v);
        if (sig(frame) !== before) changed++;
        const img = frame.querySelector('img');
        if (img && !img.complete) await new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 2000); });
        if (img && !(img.naturalWidth > 0)) out.badImages.push('frame of ' + root.id);
      }
      await setTo(el, start);
      out.controls.push({id: root.id + '/' + (el.id || el.tagName), values: values.length, changed,
                         restored: sig(frame) === before});
    }
  }
  // bertviz views: drawn (an SVG), and each drop-down changes the drawing
  for (const root of document.querySelectorAll('.tl-bertviz')) {
    // a view draws itself when the reader comes near it (bookbuild/site_assets/tl-require.js), a fold open around it
    for (let d = root.closest('details'); d; d = d.parentElement.closest('details')) d.open = true;
    await settle();
    root.scrollIntoView();
    for (const t0 = Date.now(); Date.now() - t0 < 15000 && !root.querySelector('svg');) await settle();
    const svg = () => root.querySelector('svg');
    if (!svg()) {
      out.controls.push({id: root.firstElementChild.id + '/svg', values: 0, changed: -1, restored: false});
      continue;
    }
    for (const el of root.querySelectorAll('select')) {
      const values = [...el.options].map(o => o.value), start = el.value;
      const before = svg().outerHTML;
      let changed = 0;
      for (const v of values) {
        if (v === start) continue;
        await setTo(el, v);
        if (svg() && svg().outerHTML !== before) changed++;
      }
      await setTo(el, start);
      out.controls.push({id: root.firstElementChild.id + '/' + el.id, values: values.length, changed, restored: true});
    }
  }
  return out;
}
"""

# axe-core over the whole page, after _INSPECT has put every control back. Over file:// axe must not
# preload the style sheets: it fetches them with XMLHttpRequest, which Chromium refuses for file://
# (a console error the page itself does not cause); the one rule that reads them (css-orientation-lock)
# runs in the HTTP pass, on the same CSS.
# Every rule runs on every page, in the pass that opens it: so the colour rules (axe's category "cat.color":
# color-contrast, link-in-text-block) read every chapter in light mode (English, http) and in dark mode (Chinese,
# file://). The two editions are built from the same templates with the same style sheets (no rule depends on the
# language), so each colour mode reads every chapter's elements in the colours it gives them.
_AXE_RUN = r"""
async ([tags, preload]) => {
  const rules = axe.getRules(tags).map(r => r.ruleId);
  if (!rules.includes('color-contrast')) throw new Error('axe has no color-contrast rule among ' + rules);
  const r = await axe.run(document, {runOnly: {type: 'rule', values: rules}, resultTypes: ['violations'], preload});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                 nodes: v.nodes.map(n => n.target.join(' '))}));
}
"""


_REPORTS: dict[str, dict] = {}


def _favicon(page_path: str, base: str) -> str:
    """The icon a browser asks for on this page: its <link rel="icon">, else /favicon.ico at the root."""
    m = re.search(r'<link rel="icon" href="([^"]+)"', (HTML / page_path).read_text(encoding="utf-8"))
    return urljoin(base + page_path, m.group(1)) if m else urljoin(base, "/favicon.ico")


def _visit_all(browser, scheme: str, base: str) -> dict:
    """Open every page once over ``scheme``; collect everything the tests below assert on."""
    axe = AXE.read_text(encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    mine = {_shot_name(p) for p in pages_of(scheme)}
    for old in SHOTS.glob("*.png"):  # this pass's pages' screenshots only: the other pass runs at the same time
        if old.name in mine:
            old.unlink()
    results = {}
    for page_path in pages_of(scheme):
        ctx = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block",
                                  color_scheme=COLOUR[scheme])
        page = ctx.new_page()
        r = {"external": [], "failed": [], "console": [], "where": f"{scheme}, {COLOUR[scheme]} mode"}

        def route(rt, r=r):
            url = rt.request.url
            if url.startswith(base) or url.startswith("data:") or url.startswith("blob:"):
                rt.continue_()
            else:
                r["external"].append(url)
                rt.abort()

        page.route("**/*", route)
        page.on("requestfailed", lambda q, r=r: r["failed"].append(f"{q.url} ({q.failure})")
                if q.url.startswith(base) else None)
        page.on("response", lambda s, r=r: r["failed"].append(f"{s.url} (HTTP {s.status})")
                if s.status >= 400 else None)
        page.on("console", lambda m, r=r: r["console"].append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e, r=r: r["console"].append(f"uncaught: {e}"))
        page.goto(base + page_path, wait_until="load")
        # the root index.html is a bare redirect (<meta http-equiv="Refresh">): wait for the page it opens
        page.wait_for_function("document.readyState === 'complete' && "
                               "!document.querySelector('meta[http-equiv=Refresh i]')")
        if scheme == "http":  # (over file:// Playwright's "networkidle" sometimes never comes; _INSPECT waits itself)
            page.wait_for_load_state("networkidle")
        # every section shown, a few at a time once the page has loaded (static/tl-lazy.js): what axe must see
        page.wait_for_function(SECTIONS_SHOWN)
        r.update(page.evaluate(_INSPECT, RAW_TEX.pattern))
        # after _INSPECT swapped frames, the theme makes an overflowing <pre> keyboard-scrollable (tabindex=0)
        # from a MutationObserver debounced by 300 ms; axe must see the page once that has run
        page.wait_for_timeout(500)
        page.add_script_tag(content=axe)
        r["axe"] = page.evaluate(_AXE_RUN, [AXE_TAGS, scheme != "file"])
        if scheme == "http":
            # Chromium fetches the favicon itself, outside the page's events, and not at all while
            # page.route intercepts requests; so ask the server for it as the browser would
            icon = _favicon(page_path, base)
            status = page.request.get(icon).status
            if status >= 400:
                r["failed"].append(f"{icon} (HTTP {status}; the page's favicon)")
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(SHOTS / _shot_name(page_path)), full_page=FULL_PAGE_SHOTS)
        ctx.close()
        results[page_path] = r
    return results


def _shot_name(page_path: str) -> str:
    return page_path.replace("/", "__")[:-5] + ".png"


def _report(scheme: str, browser, request) -> dict:
    if scheme not in _REPORTS:
        base = (request.getfixturevalue("site") if scheme == "http"
                else request.getfixturevalue("built").resolve().as_uri() + "/")
        _REPORTS[scheme] = _visit_all(browser, scheme, base)
    return _REPORTS[scheme]


@pytest.fixture(scope="session", params=SCHEMES)
def report(request, browser):
    """Each edition's pages opened once, the English over http://127.0.0.1, the Chinese over file://: what the tests
    assert on."""
    _need(AXE.exists(), f"axe-core not found at {AXE}: run `npm ci`")
    return _report(request.param, browser, request)


def _problems(report, key):
    return {p: r[key] for p, r in report.items() if r[key]}


def test_site_has_the_book_pages():
    names = pages() if HTML.exists() else []
    if not names:
        pytest.skip("site not built")
    assert "book/intro.html" in names and "book/references.html" in names


def test_no_request_leaves_the_site(report):
    assert not _problems(report, "external")


def test_no_request_fails(report):
    assert not _problems(report, "failed")


def test_no_console_errors(report):
    assert not _problems(report, "console")


def test_no_accessibility_violations(report):
    """axe-core, WCAG 2.0/2.1 A and AA, on every page: 0 violations."""
    found = [f"{v['id']} ({v['impact']}) on {page} ({r['where']}): {v['help']}; nodes: {'; '.join(v['nodes'][:10])}"
             + (f" (+{len(v['nodes']) - 10} more)" if len(v["nodes"]) > 10 else "")
             for page, r in report.items() for v in r["axe"]]
    assert not found, f"{len(found)} axe-core violation(s) ({', '.join(AXE_TAGS)}):\n" + "\n".join(found)


def test_the_two_passes_open_every_page_once_and_every_chapter_both_ways():
    names = pages() if HTML.exists() else []
    if not names:
        pytest.skip("site not built")
    http, file = pages_of("http"), pages_of("file")
    assert sorted(http + file) == names and not set(http) & set(file)
    chapters = {p for p in names if p.startswith("notebooks/")}
    assert chapters and chapters == {p for p in http if p.startswith("notebooks/")} \
        == {p.removeprefix("zh/") for p in file if p.startswith("zh/notebooks/")}


def test_every_page_has_the_favicon(built):
    """The book's favicon is declared by every theme page, exists, and is also at the site's root, where
    a browser looks for it on a page that declares none (the root index.html is a bare redirect)."""
    missing = []
    for name in pages():
        text = (built / name).read_text(encoding="utf-8")
        if "<body" not in text:
            continue  # the redirect page
        m = re.search(r'<link rel="icon" href="([^"]+)"', text)
        if not m or not (built / name).parent.joinpath(m.group(1)).resolve().is_file():
            missing.append(name)
    assert not missing, "pages without a working <link rel=\"icon\">"
    assert (built / "favicon.ico").is_file(), "no /favicon.ico at the site's root"


def test_math_is_rendered(report):
    unrendered = {p: f"{r['mathRendered']}/{r['math']}" for p, r in report.items() if r["mathRendered"] != r["math"]}
    assert not unrendered, "pages with math MathJax did not render"
    assert not _problems(report, "rawTex")
    assert any(r["math"] for r in report.values()), "no page has math at all?"


def test_images_load(report):
    assert not _problems(report, "badImages")


def test_no_ipywidgets_on_the_static_site(report):
    assert not {p: r["widgets"] for p, r in report.items() if r["widgets"]}


def test_every_control_changes_the_page(report):
    dead = {p: [c for c in r["controls"] if (c["values"] != 1 and c["changed"] < 1) or not c["restored"]]
            for p, r in report.items()}
    dead = {p: c for p, c in dead.items() if c}
    assert not dead


def test_screenshots_of_every_page(report):
    shots = [SHOTS / _shot_name(p) for p in report]
    assert all(s.exists() and s.stat().st_size > 5000 for s in shots)


# -- the two editions: English at the root, Chinese under zh/ (bookbuild/i18n.py, make book) ----------------------

# The share of Chinese in a Chinese page's prose: Han characters over Han characters plus Latin letters, in the
# article's text outside code, outputs, math and controls. A translated chapter still names code, papers and
# people in Latin letters: measured on this book's Chinese pages, 0.62 (the glossary, whose English column stays)
# to 0.90; an English page measures 0.00 to 0.02. Half is far below every translated page and far above an
# untranslated one. The bibliography (English titles and names) and the search page (no prose) are not counted.
MIN_CHINESE_SHARE = 0.5
NO_PROSE = ("zh/book/references.html", "zh/search.html", "zh/genindex.html",
            "zh/book/notices.html")  # a table of software names, versions and licence identifiers, like the references


def _editions():
    names = set(pages())
    zh = sorted(n for n in names if n.startswith("zh/"))
    en = sorted(n for n in names if not n.startswith("zh/"))
    return en, zh


def test_every_english_page_has_its_chinese_page():
    en, zh = _editions()
    if not zh:
        pytest.skip("site not built")
    theme_pages = [n for n in en if "<body" in (HTML / n).read_text(encoding="utf-8")]
    assert {f"zh/{n}" for n in theme_pages} <= set(zh)


def test_every_page_links_to_the_same_page_in_the_other_edition():
    """EN <-> 中文 at the top of every page (bookbuild/sphinx_ext/templates/tl-language.html), both ways."""
    en, zh = _editions()
    if not zh:
        pytest.skip("site not built")
    bad = []
    for name in en + zh:
        path = HTML / name
        text = path.read_text(encoding="utf-8")
        if "<body" not in text or name.endswith(("search.html", "genindex.html")):
            continue
        m = re.search(r'<a class="btn btn-sm tl-language" href="([^"]+)" hreflang="([^"]+)"', text)
        if not m:
            bad.append(f"{name}: no language link")
            continue
        target = (path.parent / m.group(1)).resolve()
        expected = (HTML / (name[3:] if name.startswith("zh/") else f"zh/{name}")).resolve()
        if target != expected or not target.is_file():
            bad.append(f"{name}: links to {m.group(1)}, expected {expected.relative_to(HTML.resolve())}")
        if m.group(2) != ("en" if name.startswith("zh/") else "zh-CN"):
            bad.append(f"{name}: hreflang {m.group(2)}")
    assert not bad, bad


def test_each_edition_is_in_its_language(report):
    """The Chinese pages' prose is Chinese (and they say so in <html lang>); the English pages' is not."""
    shares = {p: r["han"] / max(1, r["han"] + r["latin"]) for p, r in report.items()
              if r.get("lang") is not None and p not in NO_PROSE}
    if any(p.startswith("zh/") for p in report):
        print("\nChinese share of the prose: " + ", ".join(f"{p[3:]} {v:.2f}" for p, v in sorted(shares.items())))
        langs = {p: r["lang"] for p, r in report.items() if r.get("lang") is not None}
        assert set(langs.values()) == {"zh-CN"}, langs
        low = {p: round(v, 2) for p, v in shares.items() if v < MIN_CHINESE_SHARE}
        assert not low, f"Chinese pages whose prose is mostly not Chinese (share < {MIN_CHINESE_SHARE}): {low}"
    else:
        assert max(shares.values()) < MIN_CHINESE_SHARE  # the English edition is not Chinese


@pytest.mark.parametrize("edition, query", [("", "attention"), ("zh/", "注意力")])
def test_search_finds_pages_within_its_own_edition(browser, site, edition, query):
    ctx = browser.new_context()
    page = ctx.new_page()
    try:
        page.goto(f"{site}{edition}search.html?q={query}")
        page.wait_for_function("document.querySelectorAll('#search-results li, ul.search li').length > 0",
                               timeout=30000)
        links = page.eval_on_selector_all("#search-results li a, ul.search li a", "as => as.map(a => a.href)")
        assert links and all(("/zh/" in u) == bool(edition) for u in links), links[:10]
        if edition:  # the theme speaks Chinese there
            assert "搜索" in page.inner_text("body")
    finally:
        ctx.close()


# Words of the Chinese edition's prose that no page title holds, each with a page that teaches it. The search finds
# them only through its index's words (jieba, bookbuild/i18n.py): without jieba Sphinx indexes no Chinese word and falls
# back to matching titles. The first five are body text of their page (and in no heading long enough for that
# fallback); 残差 is a word inside the headings of chapter 5 ("为什么需要残差连接"), which therefore ranks first.
ZH_QUERIES = [("核采样", "notebooks/12_inference"), ("置换等变性", "notebooks/08_encoder"),
              ("词对齐", "notebooks/09_decoder"), ("梯度裁剪", "notebooks/10_training"),
              ("波长", "notebooks/02_positional_encoding"), ("残差", "notebooks/05_add_norm_ffn")]
# words of a page's text, in no title: found by the text alone. 学习率预热 is chapter 10's, but it is no longer a
# search for chapter 10: the recipes that chapters 11, 13 and 15 print name it too, now in Chinese, and search ranks
# their text matches beside chapter 10's
BODY_QUERIES = ZH_QUERIES[:3] + [("学习率预热", "notebooks/10_training"), ZH_QUERIES[4]]


def _search(browser, url: str) -> list[str]:
    """The result links of a search page, in order, once the search has finished: searchtools.js lists the results
    one by one, then writes the summary ("found N pages", or none found), empty until then. (Search is a const of
    its script, not a property of window; its "Searching..." pulse can restart after it stopped: no signal.)"""
    ctx = browser.new_context()
    page = ctx.new_page()
    try:
        page.goto(url)
        page.wait_for_function("() => typeof Search !== 'undefined' && Search.status && Search.status.innerText.trim()",
                               timeout=30000)
        return page.eval_on_selector_all("#search-results li a", "as => as.map(a => a.href)")
    finally:
        ctx.close()


@pytest.mark.parametrize("query, doc", ZH_QUERIES, ids=[q for q, _ in ZH_QUERIES])
def test_chinese_search_finds_a_page_by_the_words_of_its_text(browser, site, query, doc):
    links = _search(browser, f"{site}zh/search.html?q={query}")
    pages = list(dict.fromkeys(u.split("#")[0] for u in links))
    assert all("/zh/" in u for u in pages), pages[:10]
    target = f"{site}zh/{doc}.html"
    assert target in pages[:3], f"{query}: {target} not in the first three results: {pages[:6]}"
    if doc == "notebooks/05_add_norm_ffn":
        assert pages[0] == target


def test_the_chinese_search_index_holds_the_words_of_the_prose():
    """Without a browser: the built index (bookbuild/build_book.py's check), and each query of ZH_QUERIES's first five
    is a word of its page's text, in no page title, and in no heading the title-only search would match."""

    from bookbuild import build_book

    if not (HTML / "zh" / "searchindex.js").exists():
        pytest.skip("Chinese edition not built")
    assert build_book.chinese_search_problems(HTML / "zh") == []
    index = build_book.search_index(HTML / "zh" / "searchindex.js")
    for query, doc in BODY_QUERIES:
        found = index["terms"].get(query)
        found = [found] if isinstance(found, int) else found or []
        assert doc in [index["docnames"][i] for i in found], f"{query} is not a word of {doc}'s text"
        assert not any(query in title for title in index["titles"]), query
        # searchtools.js matches a heading that contains the query and is at most twice as long
        assert not [t for t in index["alltitles"] if query in t and len(query) >= len(t) / 2], query
    assert "attent" in build_book.search_index(HTML / "searchindex.js")["terms"]  # the English index: English stems


@pytest.mark.parametrize("edition, show, hide",
                         [("", "Show solution", "Hide solution"), ("zh/", "显示答案", "隐藏答案")])
def test_a_solution_folds_under_a_toggle_in_its_editions_language(browser, site, edition, show, hide):
    """A chapter's solution is folded under "Show solution" (English) / 显示答案 (Chinese, as its prose says:
    bookbuild/i18n.py CODE_PROMPTS); opened, the toggle reads "Hide solution" / 隐藏答案 and the code shows."""
    ctx = browser.new_context()
    page = ctx.new_page()
    try:
        page.goto(f"{site}{edition}notebooks/05_add_norm_ffn.html")
        page.wait_for_function(SECTIONS_SHOWN)
        solutions = page.locator("div.cell.tag_solution")
        assert solutions.count() >= 3
        for i in range(solutions.count()):
            summary, code = solutions.nth(i).locator("details > summary"), solutions.nth(i).locator("pre").first
            summary.scroll_into_view_if_needed()
            assert summary.inner_text().strip() == show and not code.is_visible()
        first = solutions.first
        first.locator("details > summary").click()
        assert first.locator("details > summary").inner_text().strip() == hide
        # the code comes out of its <template> on the fold's toggle event, a task after the click (static/tl-lazy.js):
        # wait for it (a fresh CI-style run once looked in between)
        first.locator("pre").first.wait_for(state="visible", timeout=5000)
        assert "check.exercise_5_1(" in first.locator("pre").first.inner_text()
    finally:
        ctx.close()


def _deep_dive_page() -> tuple[str, str]:
    """(page, id of its first deep dive's first sub-section or of the deep dive) of the first chapter with a deep
    dive."""
    for page in sorted(p for p in pages() if p.startswith("notebooks/")):
        text = (HTML / page).read_text(encoding="utf-8")
        m = re.search(r'<section class="tl-deep-dive" id="([^"]+)"', text)
        if m:
            inner = re.search(r'<details class="tl-deep-dive-fold">.*?<section id="([^"]+)"', text[m.end():], re.S)
            return page, inner[1] if inner else m[1]
    pytest.fail("no page has a deep dive (a section headed 'Deep dive: ...', bookbuild/chapters.py)")


@pytest.mark.parametrize("edition, show, hide", [("", "Open this deep dive", "Close this deep dive"),
                                                 ("zh/", "展开这段深入内容", "收起这段深入内容")])
def test_a_deep_dive_folds_under_its_heading_and_a_link_into_it_opens_it(browser, site, edition, show, hide):
    """A deep dive shows its heading and first paragraph; the rest is folded behind a toggle in the edition's language;
    following a link to a section inside it opens the fold (bookbuild/sphinx_ext/static/tl-deep-dive.js)."""
    page_name, inner = _deep_dive_page()
    ctx = browser.new_context()
    page = ctx.new_page()
    try:
        page.goto(f"{site}{edition}{page_name}")
        page.wait_for_function(SECTIONS_SHOWN)
        dive = page.locator("section.tl-deep-dive").first
        fold = dive.locator("details.tl-deep-dive-fold").first
        assert dive.locator("h2, h3, h4").first.is_visible() and dive.locator(":scope > p").first.is_visible()
        assert fold.get_attribute("open") is None
        summary = fold.locator(":scope > summary")
        assert summary.inner_text().strip() == show
        folded = fold.locator(":scope > :not(summary)").first
        assert not folded.is_visible()
        summary.click()
        assert summary.inner_text().strip() == hide and folded.is_visible()
        page.goto(f"{site}{edition}{page_name}#{inner}")
        page.wait_for_function("id => { const t = document.getElementById(id); const d = t && t.closest('details');"
                               " return !d || d.open; }", arg=inner, timeout=5_000)
    finally:
        ctx.close()


def test_every_chapter_folds_its_deep_dives_on_the_site():
    """Each deep dive of a notebook (bookbuild/chapters.py) is a folded section on its page, in both editions."""

    from bookbuild import chapters

    en, zh = _editions()
    if not zh:
        pytest.skip("site not built")
    for path in chapters.chapters():
        want = len(chapters.deep_dive_heads(json.loads(path.read_text(encoding="utf-8"))))
        for prefix in ("", "zh/"):
            text = (HTML / prefix / "notebooks" / f"{path.stem}.html").read_text(encoding="utf-8")
            assert text.count('<section class="tl-deep-dive"') == want, (prefix, path.stem)
            assert text.count('<details class="tl-deep-dive-fold">') == want, (prefix, path.stem)


def test_every_solution_of_the_chinese_edition_reads_xianshi_daan():
    """Every folded solution of every Chinese page: 显示答案 / 隐藏答案; the other folded cells: 显示代码 / 隐藏代码;
    nothing left in English (the English pages keep theirs)."""
    en, zh = _editions()
    if not zh:
        pytest.skip("site not built")
    toggle = re.compile(r'<p class="(?:collapsed|expanded) admonition-title">([^<]*)</p>')
    found = {}
    for name in zh:
        for text in toggle.findall((HTML / name).read_text(encoding="utf-8")):
            found.setdefault(text, set()).add(name)
    assert set(found) <= {"显示答案", "隐藏答案", "显示代码", "隐藏代码"}, {k: sorted(v)[:3] for k, v in found.items()}
    chapters = {n for n in zh if n.startswith("zh/notebooks/")}
    assert found.get("显示答案") == found.get("隐藏答案") == chapters  # every chapter has exercises
    for name in sorted(chapters):  # as many as the English page has
        english = toggle.findall((HTML / name[3:]).read_text(encoding="utf-8"))
        chinese = toggle.findall((HTML / name).read_text(encoding="utf-8"))
        assert english.count("Show solution") == chinese.count("显示答案") > 0, name
        assert english.count("Show code cell source") == chinese.count("显示代码"), name


def test_the_chinese_edition_opens_the_chinese_notebooks():
    """Colab and Binder, and the page's .ipynb download, give the Chinese notebook (notebooks/zh/) in the Chinese
    edition and the English one in the English edition: the repository's file, its links to the explainer's page on
    the site the build was made for (sphinx_ext/tl_explainer.py published_sources)."""
    from bookbuild.sphinx_ext.tl_explainer import published_text

    en, zh = _editions()
    if not zh:
        pytest.skip("site not built")
    site = json.loads((HTML.parent / "build-info.json").read_text(encoding="utf-8"))["site"]
    chapters = [n for n in zh if n.startswith("zh/notebooks/")]
    assert chapters
    for name in chapters:
        stem = Path(name).stem
        text = (HTML / name).read_text(encoding="utf-8")
        assert f"/blob/main/notebooks/zh/{stem}.ipynb" in text, f"{name}: Colab does not open the Chinese notebook"
        english = (HTML / name[3:]).read_text(encoding="utf-8")
        assert f"/notebooks/{stem}.ipynb" in english and f"/notebooks/zh/{stem}.ipynb" not in english
        download = HTML / "zh" / "_sources" / "notebooks" / f"{stem}.ipynb"
        ours = (ROOT / "notebooks" / "zh" / f"{stem}.ipynb").read_text(encoding="utf-8")
        assert download.read_text(encoding="utf-8") == published_text(ours, site), name


def test_every_page_names_the_licences_in_its_own_language():
    """The footer of every theme page, in both editions: text and figures CC BY-SA 4.0, code MIT, and the data's
    licence."""
    en, zh = _editions()
    if not en:
        pytest.skip("site not built")
    bad = []
    for name in en + zh:
        text = (HTML / name).read_text(encoding="utf-8")
        if "<body" not in text:
            continue  # the root redirect
        footer = text[text.find("bd-footer-content"):]  # the theme's content footer, where extra_footer goes
        words = ("文字和图", "代码：MIT", "hsk-sentences-audio") if name.startswith("zh/") else \
                ("Text and figures", "code: MIT", "hsk-sentences-audio")
        if ('href="https://creativecommons.org/licenses/by-sa/4.0/"' not in footer
                or not all(w in footer for w in words)):
            bad.append(name)
    assert not bad, f"pages whose footer does not name the licences: {bad[:5]}"


# the layout of every element of a chapter, as page coordinates: what a section's containment must not move
_POSITIONS = """() => Array.from(document.querySelectorAll('article.bd-article *'), e => {
  const r = e.getBoundingClientRect();
  return [Math.round(r.left), Math.round(r.top + scrollY), Math.round(r.height)]; })"""


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_sections_are_laid_out_a_few_at_a_time_and_nothing_moves_when_they_show(browser, site, edition):
    """A chapter's head gives <html> the class tl-cv: its off-screen sections are skipped (content-visibility: auto)
    until static/tl-lazy.js shows them, one an idle moment after the first frame, and says when all are shown. A
    skipped section is contained; every section is laid out as a contained one always (tl-book.css), so containing
    them all moves no element of the page, on a phone and on a desktop."""
    for width in (412, 1280):
        ctx = browser.new_context(viewport={"width": width, "height": 800})
        page = ctx.new_page()
        try:
            page.goto(f"{site}{edition}notebooks/03_self_attention.html", wait_until="commit")
            page.wait_for_function("document.body !== null")
            assert page.evaluate("document.documentElement.classList.contains('tl-cv')")
            page.wait_for_function(SECTIONS_SHOWN, timeout=20_000)
            assert not page.evaluate("document.documentElement.classList.contains('tl-cv')")
            # the scripts loaded after the first frame (page_speed.py AFTER_FIRST_FRAME) ran: every code block has its
            # copy button (sphinx-copybutton), Sphinx's Documentation object exists
            page.wait_for_function("document.querySelectorAll('div.highlight pre + button.copybtn').length > 20 && "
                                   "typeof Documentation === 'object'", timeout=20_000)
            before = page.evaluate(_POSITIONS)
            assert len(before) > 3000
            page.add_style_tag(content="article.bd-article section section { contain: layout style paint; }")
            after = page.evaluate(_POSITIONS)
            moved = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
            assert not moved, f"{len(moved)} elements moved at width {width}"
        finally:
            ctx.close()


def test_a_bertviz_view_draws_itself_when_the_reader_comes_near_it(browser, site):
    """require.js, jquery and d3 are not loaded with the page: a view asks for them as it comes within a screen of
    the reader (bookbuild/site_assets/tl-require.js), and then draws itself."""
    ctx = browser.new_context(viewport={"width": 412, "height": 800})
    page = ctx.new_page()
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    try:
        page.goto(f"{site}notebooks/04_multi_head_attention.html", wait_until="load")
        page.wait_for_timeout(1500)
        views = page.locator(".tl-bertviz")
        assert views.count() >= 2
        assert not [u for u in asked if "require.js" in u or "d3.min" in u]
        assert page.locator(".tl-bertviz svg").count() == 0
        # chapter 4's views sit in a deep dive: the reader opens it, then scrolls to the first view
        page.evaluate("() => { const v = document.querySelector('.tl-bertviz');"
                      " for (let d = v.closest('details'); d; d = d.parentElement.closest('details')) d.open = true; }")
        views.first.scroll_into_view_if_needed()
        page.wait_for_function("document.querySelector('.tl-bertviz svg') !== null", timeout=20_000)
        assert [u for u in asked if "require.js" in u] and [u for u in asked if "d3.min" in u]
    finally:
        ctx.close()
