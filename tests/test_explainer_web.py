"""The explainer's page of the built site (book/explainer.md, _static/tl/tl-explainer.js) in Chromium.

The page draws, step by step, the trace window.tlExplainer.trace computes in the browser (tests/test_translator_web.py
holds that trace equal to transformer_lite.book.explain.trace). Here: the page loads nothing of the model until the
reader starts; it draws every step in both editions, over http and from disk, each step's title and prose in the
edition's language (a screenshot of each step lands in _build/screenshots/); the numbers it shows (the tables under
the heatmaps, the norms, the probabilities, the tokens) are Python's for sentences this test writes; a link's
?s=&step=&model= opens that step with that sentence; the arrow keys, Home and End step; axe finds no violation; no
request leaves the site and the browser logs no error. How fast a trace is: `make bench` (benchmarks/explainer_page.py).
"""
from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, urlparse

import pytest

from benchmarks.explainer_page import PAGE, View, url
from test_site import AXE, AXE_TAGS, SHOTS, _need
from test_translator_web import assert_same_trace
from transformer_lite.book import explain, i18n
from transformer_lite.book.explain_view import step_ids, step_title
from transformer_lite.book.i18n import tr

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("site")]

# sentences this test writes, as a person types them, every word in the model's vocabulary
SENTENCE = {"grammar": "Does she read books at school every day?", "real": "My teacher likes to drink green tea."}
HAN = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture
def language():
    """Sets the package's language for the titles a test expects; English again afterwards."""
    before = i18n.language()
    yield i18n.set_language
    i18n.set_language(before)


def _base(request, scheme: str) -> str:
    return (request.getfixturevalue("site") if scheme == "http"
            else request.getfixturevalue("built").resolve().as_uri() + "/")


def _clean(view: View) -> None:
    assert not view.external, f"requests to other hosts: {view.external}"
    assert not view.console, f"console errors or warnings: {view.console}"


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def _tables(view: View) -> list[list[list[float]]]:
    """Every numbers table of the step shown (under each heatmap), as rows of floats, in the page's order."""
    rows = view.root.evaluate(
        "r => [...r.querySelectorAll('.tlx-view .tlx-numbers table')].map(t => [...t.rows].slice(1)"
        ".map(row => [...row.cells].slice(1).map(c => c.textContent)))")
    return [[[-math.inf if c == "\u2212\u221e" else _number(c) for c in row] for row in t] for t in rows]


def _value_table(view: View) -> list[list[str]]:
    """The step's table of labelled values (the norms), as its rows' texts."""
    return view.root.evaluate("r => [...r.querySelector('.tlx-view .tlx-values table').rows].slice(1)"
                              ".map(row => [...row.cells].map(c => c.textContent))")


def assert_close(shown, python, decimals: int, where: str) -> None:
    """What the page shows, rounded to ``decimals``, is Python's value: within the rounding plus 1e-4 relative (the
    browser's float32 against Python's, as tests/test_translator_web.py allows)."""
    assert len(shown) == len(python), f"{where}: {len(shown)} rows, Python has {len(python)}"
    for i, (a, b) in enumerate(zip(shown, python)):
        assert len(a) == len(b), f"{where}: row {i} has {len(a)} values, Python's {len(b)}"
        for j, (x, y) in enumerate(zip(a, b)):
            assert abs(x - y) <= 0.5 * 10 ** -decimals + 1e-4 * max(1.0, abs(y)) + 1e-9, \
                f"{where}[{i}][{j}]: the page shows {x}, Python computes {y}"


def _norm(row) -> float:
    return math.sqrt(sum(x * x for x in row))


def test_the_model_loads_only_when_the_reader_starts(browser, site):
    view = View(browser, site)
    try:
        assert view.state() == "idle"
        assert not view.loaded("tl-translator.js") and not [u for u in view.requests if "/translator/" in u], \
            "nothing of the model may load with the page"
        assert view.root.locator(".tlx-nav").is_hidden()
        assert view.start() == "ready", view.status()
        assert view.loaded("tl-translator.js") and view.loaded("explain-grammar.js") and view.loaded("model-grammar.js")
        assert not view.loaded("explain-real.js") and not view.loaded("model-real.js")
        _clean(view)
    finally:
        view.close()


# English over http in light mode and Chinese from disk in dark mode take the screenshots; the other two pairs check
# that the view draws the same steps there
@pytest.mark.parametrize("edition,scheme", [("en", "http"), ("zh", "file"), ("en", "file"), ("zh", "http")])
def test_the_view_draws_every_step_in_its_editions_language(browser, request, language, edition, scheme):
    colour = "light" if scheme == "http" else "dark"
    view = View(browser, _base(request, scheme), PAGE[edition], colour=colour)
    language(edition)
    shots = (edition, scheme) in (("en", "http"), ("zh", "file"))
    try:
        assert view.root.locator(".tlx-start").inner_text() == tr("Start")
        assert view.start(SENTENCE["grammar"]) == "ready", view.status()
        trace = view.trace()
        ids = view.step_ids()
        cfg = trace["config"]
        assert ids == step_ids(cfg["num_encoder_layers"], cfg["num_decoder_layers"], lens="logit_lens" in trace)
        for i, step in enumerate(ids):
            view.go(step)
            title = view.root.locator(".tlx-view .tlx-title").inner_text()
            assert title == step_title(step), f"{step}: {title!r}"
            assert view.status() == tr("Step {i} of {n}: {title}", i=i + 1, n=len(ids), title=title)
            drawn = view.root.evaluate("r => r.querySelectorAll('.tlx-view svg, .tlx-view table, .tlx-view ol').length")
            assert drawn >= 1, f"{step}: nothing drawn"
            prose = view.root.locator(".tlx-view > p:not(.tlx-more)").all_inner_texts()
            assert prose, f"{step}: no text"
            if edition == "zh":  # every sentence of the step is Chinese (tokens and formulas aside)
                assert all(HAN.search(p) for p in prose), f"{step}: {prose}"
            else:  # English prose: Chinese only in the tokens the model writes
                assert all(re.search(r"[A-Za-z]{3}", p) for p in prose), f"{step}: {prose}"
            link = view.root.locator(".tlx-view .tlx-more a").first
            assert re.search(r"notebooks/\d\d_\w+\.html$", link.get_attribute("href")), link.get_attribute("href")
            if shots:
                SHOTS.mkdir(parents=True, exist_ok=True)
                view.root.screenshot(path=str(SHOTS / f"explainer-{edition}-{i + 1:02d}-{step}.png"))
        if shots:
            assert len(list(SHOTS.glob(f"explainer-{edition}-*.png"))) >= len(ids)
        _clean(view)
    finally:
        view.close()


@pytest.mark.parametrize("key,scheme", [("grammar", "http"), ("real", "file")])
def test_the_numbers_shown_are_pythons(browser, request, key, scheme):
    text = SENTENCE[key]
    view = View(browser, _base(request, scheme), url("en", text, "enc1-scores", key))
    try:
        assert view.wait() == "ready", view.status()
        py = explain.trace(key, text)
        assert_same_trace(view.trace(), py, f"{key} {text!r}")  # what the page draws from
        enc, dec = py["encoder"], py["decoder"]
        # chapter 3's steps, head 1 and then head 3: the numbers under the heatmap
        assert view.step() == "enc1-scores"
        assert_close(_tables(view)[0], enc[0]["attention_steps"]["scores"][0], 3, "enc1 scores, head 1")
        view.root.locator(".tlx-head").select_option(index=2)  # (a string may match a label)
        assert_close(_tables(view)[0], enc[0]["attention_steps"]["scores"][2], 3, "enc1 scores, head 3")
        view.go("enc1-scaled")
        assert_close(_tables(view)[0], enc[0]["attention_steps"]["scaled"][2], 3, "enc1 scaled, head 3")
        view.go("enc2-softmax")
        assert_close(_tables(view)[0], enc[1]["attention"][2], 3, "enc2 softmax, head 3")
        # chapter 5: the norms before and after the first Add & Norm of layer 2
        view.go("enc2-norm1")
        rows = _value_table(view)
        assert [r[0] for r in rows] == py["src_tokens"]
        x, out = enc[0]["norm2"]["output"], enc[1]["norm1"]
        python = [[_norm(a), _norm(s), _norm(b), _norm(c)] for a, s, b, c in
                  zip(x, enc[1]["attention_steps"]["output"], out["input"], out["output"])]
        assert_close([[_number(c) for c in r[1:5]] for r in rows], python, 2, "enc2 norms")
        # chapter 7: the causal mask's blocked cells, chapter 9: the cross-attention of the last layer
        view.go("dec1-causal")
        masked = _tables(view)[0]
        blocked = dec[0]["self_attention_steps"]["mask"]
        assert all((m == -math.inf) == bool(b) for mr, br in zip(masked, blocked) for m, b in zip(mr, br))
        view.go(f"dec{len(dec)}-cross")
        assert_close(_tables(view)[0], dec[-1]["cross_attention"][2], 3, "last cross-attention, head 3")
        # chapter 12: each step's most probable tokens and their probabilities
        view.go("next")
        shown = view.root.evaluate("r => [...r.querySelectorAll('ol.tlx-candidates > li')].map(li => [...li"
                                   ".querySelectorAll('ul.tlx-bars li')].map(c => [c.querySelector('.tlx-cand')"
                                   ".textContent, c.querySelector('.tlx-p').textContent]))")
        assert [[w for w, _ in row] for row in shown] == [[w for w, _ in row] for row in py["steps"]]
        assert_close([[_number(p) for _, p in row] for row in shown], [[p for _, p in row] for row in py["steps"]],
                     3, "next-token probabilities")
        view.go("tokens")
        tokens = view.root.locator("ol.tlx-tokens .tlx-token").all_inner_texts()
        assert tokens == py["src_tokens"]
        _clean(view)
    finally:
        view.close()


def test_a_link_opens_on_its_step_with_its_sentence(browser, built, language):
    base = built.resolve().as_uri() + "/"
    text = SENTENCE["real"]
    view = View(browser, base, url("zh", text, "dec2-cross", "real"), colour="dark")
    language("zh")
    try:
        assert view.wait() == "ready", view.status()
        assert view.step() == "dec2-cross"
        assert view.root.locator(".tlx-input").input_value() == text
        assert view.root.locator(".tlx-model").input_value() == "real"
        assert view.trace()["src_tokens"] == explain.trace("real", text)["src_tokens"]
        assert view.root.locator(".tlx-view .tlx-title").inner_text() == step_title("dec2-cross")
        # stepping keeps the address in step: a copied address opens where the reader is
        view.root.locator(".tlx-next").click()
        query = parse_qs(urlparse(view.page.url).query)
        assert query["step"] == ["dec2-ffn"] and query["s"] == [text] and query["model"] == ["real"]
        _clean(view)
    finally:
        view.close()
    view = View(browser, base, url("en", "She has two cats", "enc9-scores"))
    language("en")
    try:  # a step the model does not have: the first step, and the reader is told
        assert view.wait() == "ready", view.status()
        assert view.step() == "tokens"
        assert tr("The step {step} does not exist for this translator: showing the first step.",
                  step="enc9-scores") in view.status()
        _clean(view)
    finally:
        view.close()


def test_the_keyboard_steps_forward_and_back(browser, site):
    view = View(browser, site)
    try:
        assert view.start() == "ready", view.status()
        ids = view.step_ids()
        nxt, prev = view.root.locator(".tlx-next"), view.root.locator(".tlx-prev")
        assert view.step() == ids[0] and prev.is_disabled()
        nxt.focus()
        view.page.keyboard.press("ArrowRight")
        assert view.step() == ids[1]
        view.page.keyboard.press("Enter")  # the focused button
        assert view.step() == ids[2]
        view.page.keyboard.press("ArrowLeft")
        assert view.step() == ids[1]
        view.page.keyboard.press("End")
        assert view.step() == ids[-1] and nxt.is_disabled()
        # the focus was on the button that is now disabled: it moved to the other one, not to the page's top
        assert view.page.evaluate("document.activeElement.classList.contains('tlx-prev')")
        view.page.keyboard.press("ArrowRight")  # at the end: stays
        assert view.step() == ids[-1]
        view.page.keyboard.press("Home")
        assert view.step() == ids[0]
        # in the text box the arrows move the caret, not the step
        view.root.locator(".tlx-input").focus()
        view.page.keyboard.press("ArrowRight")
        assert view.step() == ids[0]
        # Tab reaches the step control from the text box
        for _ in range(12):
            view.page.keyboard.press("Tab")
            if view.page.evaluate("document.activeElement.classList.contains('tlx-next')"):
                break
        else:
            pytest.fail("Tab never reached the next-step button")
        view.page.keyboard.press("ArrowRight")
        assert view.step() == ids[1]
        _clean(view)
    finally:
        view.close()


@pytest.mark.parametrize("edition,colour", [("en", "light"), ("zh", "dark")])
def test_the_page_is_accessible(browser, site, edition, colour):
    _need(AXE.exists(), f"axe-core not found at {AXE}: run `npm ci`")
    view = View(browser, site, PAGE[edition], colour=colour)
    axe = ("async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}, "
           "resultTypes: ['violations']})).violations.map(v => v.id + ': ' + v.help + ' ' + "
           "v.nodes.map(n => n.target.join(' ')).slice(0, 5).join('; '))")
    try:
        view.page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        assert view.page.evaluate(axe, AXE_TAGS) == [], "before the start"
        assert view.start() == "ready", view.status()
        for step in ("tokens", "embedding", "enc1-scores", "enc1-heads", "enc1-norm1", "dec1-causal", "dec1-cross",
                     "next"):
            view.go(step)
            view.root.evaluate("r => r.querySelectorAll('details').forEach(d => { d.open = true; })")
            violations = view.page.evaluate(axe, AXE_TAGS)
            assert not violations, f"{step}: {violations}"
        _clean(view)
    finally:
        view.close()


# the chapters that teach a step of the view link to it with their own sentence (their markdown, both editions)
LINKED = ["01_tokens_and_embeddings", "02_positional_encoding", "03_self_attention", "04_multi_head_attention",
          "05_add_norm_ffn", "07_masking", "08_encoder", "09_decoder", "10_training", "12_inference"]


def _chapter_links(html_path) -> list[dict]:
    hrefs = re.findall(r'href="([^"]*book/explainer\.html\?[^"]*)"', html_path.read_text(encoding="utf-8"))
    return [dict(href=h, **{k: v[0] for k, v in parse_qs(urlparse(h.replace("&amp;", "&")).query).items()})
            for h in hrefs]


def test_every_chapter_that_teaches_a_step_links_to_it_in_its_edition(built):
    """On the pages, relative to the edition's own page (from disk too, and in a fork's build); in the site's copies of
    the notebooks (the download button, opened in Jupyter), the page of the address the site was built for."""
    import json

    from transformer_lite.book.translate import read_english, reading_of, shipped_translator

    site = json.loads((built.parent / "build-info.json").read_text(encoding="utf-8"))["site"]
    for edition in ("", "zh/"):
        for stem in LINKED:
            links = _chapter_links(built / f"{edition}notebooks/{stem}.html")
            assert len(links) == 1, f"{edition}{stem}: {links}"
            link = links[0]
            # the page of the same edition, from disk too: relative, and its query as the chapter wrote it
            assert link["href"].startswith("../book/explainer.html?") and "&amp;amp;" not in link["href"], link
            assert link["step"] in step_ids(2, 2), link
            model, data = shipped_translator(link["model"])
            assert read_english(link["s"], data.src_vocab, model.max_len, reading_of(data))[0], link
            source = (built / f"{edition}_sources/notebooks/{stem}.ipynb").read_text(encoding="utf-8")
            query = link["href"].split("?", 1)[1].replace("&amp;", "&")
            assert f"{site}{edition}book/explainer.html?{query}" in source, f"{edition}_sources/{stem}"


def test_a_chapters_link_opens_its_step(browser, site, language):
    """Chapter 9's link, followed in the Chinese edition: the view opens on its step, with its sentence."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    page = ctx.new_page()
    try:
        page.goto(site + "zh/notebooks/09_decoder.html", wait_until="load")
        link = page.locator('a[href*="book/explainer.html?"]').first
        query = parse_qs(urlparse(link.get_attribute("href")).query)
        link.scroll_into_view_if_needed()
        link.click()
        page.wait_for_url("**/zh/book/explainer.html?**")
        opened = page.url
    finally:
        ctx.close()
    # the address it opened, in a page of its own (View records its requests and console from the start)
    view = View(browser, site, "zh/book/explainer.html?" + urlparse(opened).query)
    language("zh")
    try:
        assert view.wait() == "ready", view.status()
        assert view.step() == query["step"][0]
        assert view.root.locator(".tlx-input").input_value() == query["s"][0]
        assert view.root.locator(".tlx-model").input_value() == query["model"][0]
        assert view.root.locator(".tlx-view .tlx-title").inner_text() == step_title(query["step"][0])
        _clean(view)
    finally:
        view.close()


@pytest.mark.parametrize("edition,scheme", [("en", "http"), ("zh", "file")])
def test_switching_heads_off_traces_again_and_shows_the_new_translation(browser, request, language, edition, scheme):
    """The boxes under "Switch heads off": clearing every cross-attention head traces the sentence again without
    them, as explain.trace(heads_off=...) does, and says what the translation became and what it was; a new sentence
    is traced with every head on."""
    view = View(browser, _base(request, scheme), PAGE[edition])
    language(edition)
    text = SENTENCE["grammar"]
    try:
        assert view.start(text) == "ready", view.status()
        before = view.trace()["tgt_tokens"]
        panel = view.root.locator(".tlx-heads-off")
        assert panel.is_visible() and view.root.locator(".tlx-heads-result").inner_text() == ""
        panel.locator("summary").click()
        boxes = panel.locator("input[data-head^='cross:']")
        cfg = view.trace()["config"]
        assert boxes.count() == cfg["num_decoder_layers"] * cfg["nhead"]
        assert panel.locator("input[type=checkbox]").count() == (cfg["num_encoder_layers"] + 2 * cfg[
            "num_decoder_layers"]) * cfg["nhead"]
        for i in range(boxes.count()):
            view.root.evaluate("r => { r.dataset.tlState = 'typing'; }")
            boxes.nth(i).uncheck()
            assert view.wait() == "ready", view.status()
        off = [("cross", layer, head) for layer in range(cfg["num_decoder_layers"]) for head in range(cfg["nhead"])]
        page = view.trace()
        assert_same_trace(page, explain.trace("grammar", text, heads_off=off), f"heads off {off}")
        assert page["tgt_tokens"] != before
        result = view.root.locator(".tlx-heads-result").inner_text()
        assert " ".join(page["tgt_tokens"]) in result and " ".join(before) in result, result
        assert result.startswith(tr("Heads switched off: {n}. The translation:", n=len(off))), result
        assert view.step() in view.step_ids()
        if edition == "en" and scheme == "http":
            SHOTS.mkdir(parents=True, exist_ok=True)
            view.root.screenshot(path=str(SHOTS / "explainer-en-heads-off.png"))
        # another sentence: every head on again
        assert view.start("She has two cats") == "ready", view.status()
        assert "heads_off" not in view.trace() and panel.locator("input:not(:checked)").count() == 0
        assert view.root.locator(".tlx-heads-result").inner_text() == ""
        _clean(view)
    finally:
        view.close()
