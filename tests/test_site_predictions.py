"""The static site asks back: predictions and exercise checks answered in the reader's browser (bookbuild/sphinx_ext/
static/tl-check.js, from what transformer_lite/book/check/page.py wrote into the build's outputs).

On chapter 5, in Debian's Chromium, as tests/test_site.py reads the editions: the English one over http://127.0.0.1, the
Chinese one from disk (file://):
* the prediction's field records a guess typed and entered from the keyboard, and the reveal button gives, letter for
  letter, the verdict ``check.reveal`` gives in Jupyter for that guess and the value the build measured;
* exercise 5.1 (numbers and four outputs) is checked on the page as its check does (the same verdicts, right and
  wrong, hint included); exercise 5.2 (a function) says it needs Python and links to its cell in Colab;
* no request leaves the site, and nothing is logged as an error.
And on every built chapter (from the HTML, without a browser): each prediction has its field and its measured value,
each exercise its check. Uses the session's served site and Chromium (tests/conftest.py).
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import torch

from chromium import need
from transformer_lite.book import check
from transformer_lite.book.i18n import set_language

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("site")]

ROOT = Path(__file__).resolve().parent.parent
PAGE = "notebooks/05_add_norm_ffn.html"
EDITIONS = ["", "zh/"]
# each edition in one of the two ways (the page's script is the same in both editions, and loads the same way)
EDITION_SCHEME = [("", "http"), ("zh/", "file")]


@pytest.fixture(autouse=True)
def _fresh_checks(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LITE_STATIC", raising=False)
    monkeypatch.delenv(check.STRICT_ENV, raising=False)
    check._PREDICTIONS.clear()
    yield
    check._PREDICTIONS.clear()
    set_language("en")


def _page(browser, request, scheme: str, edition: str):
    built = request.getfixturevalue("built")
    need((built / edition / PAGE).exists(), f"{edition}{PAGE} was not built")
    base = request.getfixturevalue("site") if scheme == "http" else built.resolve().as_uri() + "/"
    ctx = browser.new_context(service_workers="block")
    page = ctx.new_page()
    log = {"external": [], "errors": []}

    def route(rt):
        url = rt.request.url
        if url.startswith((base, "data:", "blob:")):
            rt.continue_()
        else:
            log["external"].append(url)
            rt.abort()

    page.route("**/*", route)
    page.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log["errors"].append(f"uncaught: {e}"))
    page.goto(base + edition + PAGE, wait_until="load")
    page.wait_for_function("document.documentElement.dataset.tlShown !== undefined")
    return ctx, page, log


def _verdict(ask):
    return ask.locator("xpath=preceding-sibling::div[contains(@class, 'tl-verdict')][1]")


def _text(locator) -> str:
    return locator.evaluate("e => e.textContent")


@pytest.mark.parametrize("edition, scheme", EDITION_SCHEME)
def test_a_prediction_is_recorded_and_revealed_with_the_verdict_of_check_reveal(browser, request, scheme, edition):
    set_language("zh" if edition else "en")
    ctx, page, log = _page(browser, request, scheme, edition)
    try:
        ask, reveal = page.locator(".tl-ask-predict").first, page.locator(".tl-ask-reveal").first
        assert ask.is_visible() and reveal.is_visible()
        assert ask.get_attribute("data-tl-number") == reveal.get_attribute("data-tl-number") == "5.1"
        measured = json.loads(reveal.get_attribute("data-tl-measured"))
        assert measured["kind"] == "number" and measured["abs"] == 0.05 and 0.5 < measured["measured"] < 0.8
        field = ask.locator("input")
        label = ask.locator("label")
        assert label.get_attribute("for") == field.get_attribute("id")
        assert _verdict(ask).get_attribute("role") == "status" and _verdict(reveal).get_attribute("role") == "status"

        # revealed before a guess: what was measured, nothing compared
        reveal.locator("button").click()
        assert "tl-verdict-todo" in _verdict(reveal).get_attribute("class")
        assert measured["shown"] in _text(_verdict(reveal))

        for guess in (round(measured["measured"] - 0.04, 2), round(measured["measured"] + 0.2, 2)):
            # by keyboard: type, Enter records; Tab reaches the button
            field.fill("")
            field.focus()
            page.keyboard.type(str(guess))
            page.keyboard.press("Enter")
            recorded = _text(_verdict(ask))
            assert recorded.startswith("✓") and str(guess) in recorded and "±0.05" in recorded
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.textContent") == ask.locator("button").inner_text()
            reveal.locator("button").focus()
            page.keyboard.press("Enter")
            shown = _text(_verdict(reveal))
            check.predict("5.1", guess)
            expected = repr(check.reveal("5.1", measured["measured"]))
            assert shown == expected.replace(check._show(measured["measured"]), measured["shown"])

        # a guess that is not a number is not recorded: the rule is shown again
        field.fill("two thirds")
        ask.locator("button").click()
        assert "tl-verdict-wrong" in _verdict(ask).get_attribute("class")
        assert field.get_attribute("aria-invalid") == "true"
        assert not log["external"] and not log["errors"], log
    finally:
        ctx.close()


@pytest.mark.parametrize("edition, scheme", EDITION_SCHEME)
def test_an_exercise_of_numbers_is_checked_on_the_page_as_its_check_does(browser, request, scheme, edition):
    set_language("zh" if edition else "en")
    ctx, page, log = _page(browser, request, scheme, edition)
    try:
        ask = page.locator('.tl-ask-exercise[data-tl-exercise="5.1"]')
        assert ask.is_visible()
        fields = {name: ask.locator(f"#{ask.locator('label', has_text=name).get_attribute('for')}")
                  for name in ("my_mean", "my_variance", "my_output")}
        verdict = _verdict(ask)
        output = [-1.3416, -0.4472, 0.4472, 1.3416]
        cases = [(5, 5, output), (5, 6.6667, output), (4, 5, output), (5, 5, output[:3]), (5, 5, [0, 0, 0, 0])]
        for mean, variance, out in cases:
            fields["my_mean"].fill(str(mean))
            fields["my_variance"].fill(str(variance))
            fields["my_output"].fill(str(out))
            ask.locator("button").click()
            expected = repr(check.exercise_5_1(float(mean), float(variance), torch.tensor(out)))
            assert _text(verdict) == expected
        fields["my_mean"].fill("five")
        ask.locator("button").click()
        assert _text(verdict) == repr(check.exercise_5_1("five", 5.0, torch.tensor(output)))
        assert not log["external"] and not log["errors"], log
    finally:
        ctx.close()


AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_fields_and_buttons_pass_axe(browser, request, edition):
    """axe-core (WCAG 2.0/2.1 A and AA) on the prediction's and the exercises' fields, buttons, links and verdicts,
    in the page's colours (tests/test_site.py runs it on whole pages)."""
    need(AXE.exists(), f"axe-core not found at {AXE}: run `npm ci`")
    ctx, page, _ = _page(browser, request, "http", edition)
    try:
        page.locator(".tl-ask-predict input").first.fill("0.5")
        page.locator(".tl-ask-predict button").first.click()
        page.locator(".tl-ask-reveal button").first.click()
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        violations = page.evaluate("""async (tags) => {
            const r = await axe.run({include: [['.tl-ask'], ['.tl-verdict']]},
                                    {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
            return r.violations.map(v => ({id: v.id, nodes: v.nodes.map(n => n.target.join(' '))}));
        }""", ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
        assert not violations, violations
    finally:
        ctx.close()


@pytest.mark.parametrize("edition", EDITIONS)
def test_an_exercise_of_code_links_to_its_cell_in_colab(browser, request, edition):
    ctx, page, log = _page(browser, request, "http", edition)
    try:
        ask = page.locator('.tl-ask-exercise[data-tl-exercise="5.2"]')
        link = ask.locator("a")
        assert ask.is_visible() and link.is_visible()
        href = link.get_attribute("href")
        notebook = ("notebooks/zh/" if edition else "notebooks/") + "05_add_norm_ffn.ipynb#scrollTo=ex-5-2-answer"
        assert href.startswith("https://colab.research.google.com/github/") and href.endswith(notebook), href
        assert "Python" in _text(_verdict(ask)) and ask.locator("input").count() == 0
        assert link.inner_text() == ("在 Colab 中打开这个单元格" if edition else "Open this cell in Colab")
        assert not log["external"] and not log["errors"], log
    finally:
        ctx.close()


def _chapters(built):
    return sorted(p for p in (built / "notebooks").glob("*.html"))


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_prediction_and_exercise_of_the_built_site_can_be_answered(request, edition):
    built = request.getfixturevalue("built")
    pages = [built / edition / "notebooks" / p.name for p in _chapters(built)]
    need(any(p.exists() for p in pages), "no chapter was built")
    keys = asked = 0
    for path in pages:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        predicted = re.findall(r'class="tl-ask tl-ask-predict" hidden data-tl-number="([^"]+)"', text)
        revealed = re.findall(r'class="tl-ask tl-ask-reveal" hidden data-tl-number="([^"]+)"', text)
        assert predicted and predicted == revealed, f"{path.name}: predictions {predicted}, reveals {revealed}"
        for m in re.finditer(r'data-tl-measured="([^"]*)"', text):
            data = json.loads(html.unescape(m[1]))
            assert data["measured"] is not None and data["shown"], path.name
        exercises = re.findall(r'class="tl-ask tl-ask-exercise" hidden data-tl-exercise="([^"]+)"', text)
        assert exercises, f"{path.name}: no exercise check on the page"
        keyed = re.findall(r'class="tl-exercise-key" hidden data-tl-exercise="([^"]+)"', text)
        assert set(keyed) <= set(exercises), path.name
        keys, asked = keys + len(set(keyed)), asked + len(set(exercises))
    assert asked and keys, "no exercise is checked on the page"
