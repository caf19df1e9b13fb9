"""The translator in the reader's browser (chapters 12 and 13 of the built site), against Python.

The static page runs the shipped translators with ONNX Runtime Web (bookbuild/web_export.py,
_static/tl/tl-translator.js): the grammar one, and the one trained on real HSK sentences, which the
box's selector switches to. In Chromium, over HTTP and from disk (file://), this test types held-out,
out-of-grammar and awkward sentences into the capstone's box, with either model, and checks, for each,
that the page's greedy and beam translations EQUAL transformer_lite.decoding's, and that the attention
weights and the step probabilities it shows agree with Python's within 1e-4; and that the page reads
English exactly as Python does (the real model: as real_data.tokenize_english, on every sentence of the
data and awkward ones). It checks the size budgets: the page's first load and the lazily loaded model files
(the other model's only when selected). Speed is not asserted here: `make bench` measures the first and the
later translations against their budgets (benchmarks/translator_page.py, which drives the page for both); a
test only bounds them far above their budgets (ten times for the first translation, a hundred for later ones),
which a busy core does not reach and a hang does. Bad input
gets a message or a translation, never markup and never a hang. No request may leave the site, and the
browser must log no error and no warning.
"""
from __future__ import annotations

import gzip
import statistics
import time

import pytest

from benchmarks.translator_page import CAPSTONE, FIRST_MS, HANG_FACTOR, LATER_MS, REAL_AWKWARD, Box, plan, sentences  # noqa: E402
from test_site import AXE, AXE_TAGS, HTML, _need  # the fixtures browser, built and site are in conftest.py
from test_translate import TRICKY
from transformer_lite.book import explain, real_data
from transformer_lite.book.pretrained import tiny_translator
from transformer_lite.book.translate import (
    DOWNLOAD_MB,
    MODEL_MB,
    SHIPPED,
    TOP_K,
    read_english,
    shipped_examples,
    shipped_translator,
    translation_details,
)

# one xdist worker runs this file and tests/test_site.py/test_translator_web.py: they share the served site,
# the browser and the pages' reports (`make test` runs `pytest -n 3 --dist loadgroup`)
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("site")]

CAPSTONE_ZH = "zh/notebooks/13_capstone_translator.html"
INFERENCE = "notebooks/12_inference.html"
ASSETS = HTML / "_static" / "tl" / "translator"
TOL = 1e-4
MB = 1e6


@pytest.fixture(scope="module")
def shipped():
    model, data, _ = tiny_translator()
    return model, data


@pytest.fixture(scope="module")
def real():
    return shipped_translator("real")


def _lazy_files():
    """What each model's first use loads (the runtime, the script and the model's file), and its file alone."""
    runtime = sum((ASSETS / f).stat().st_size for f in ("ort.js", "ort-wasm.js"))
    runtime += (HTML / "_static" / "tl" / "tl-translator.js").stat().st_size
    model = {key: (ASSETS / f"model-{key}.js").stat().st_size for key in SHIPPED}
    return {key: runtime + size for key, size in model.items()}, model


def assert_same(page_result, py):
    """The page computed what Python computes: equal tokens, attention and probabilities within 1e-4."""
    where = f"{py['text']!r} (beam size {py['beam_size']})"
    for key in ("words", "unknown", "greedy", "beam", "greedy_text", "beam_text"):
        assert page_result[key] == py[key], f"{where}: {key} {page_result[key]!r} != Python's {py[key]!r}"
    assert len(page_result["steps"]) == len(py["steps"])
    for t, (mine, theirs) in enumerate(zip(page_result["steps"], py["steps"])):
        assert [w for w, _ in mine] == [w for w, _ in theirs], f"{where}: step {t + 1}'s top tokens differ"
        assert max(abs(p - q) for (_, p), (_, q) in zip(mine, theirs)) <= TOL, f"{where}: step {t + 1}"
    diff = max(abs(a - b) for la, lb in zip(page_result["cross"], py["cross"]) for ha, hb in zip(la, lb)
               for ra, rb in zip(ha, hb) for a, b in zip(ra, rb))
    shape = lambda c: (len(c), len(c[0]), len(c[0][0]), len(c[0][0][0]))  # noqa: E731
    assert shape(page_result["cross"]) == shape(py["cross"]) and diff <= TOL, f"{where}: attention differs by {diff}"
    return diff


# A later translation: 10 s, a hundred times its budget. Ten times (1 s) is not generous: the real model's later
# translations reached 676 ms while the other pytest worker held both cores.
LATER_HANG_MS = 100 * LATER_MS


def assert_no_hang(key, first_ready, timings):
    """Bounds far above the budgets, not the budgets: a translation of ~10 ms took 100-700 ms while the other pytest
    worker held the cores, so only a hang exceeds these; `make bench` tells whether the budgets are met."""
    assert first_ready <= HANG_FACTOR * FIRST_MS[key], \
        f"the {key} model's first translation took {first_ready:.0f} ms after first use " \
        f"(a hang? budget {FIRST_MS[key]} ms)"
    assert max(timings) <= LATER_HANG_MS, \
        f"a later translation took {max(timings):.0f} ms (a hang? budget {LATER_MS} ms): {timings}"


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_the_page_translates_exactly_as_python(browser, request, shipped, scheme):
    model, data = shipped
    base = (request.getfixturevalue("site") if scheme == "http"
            else request.getfixturevalue("built").resolve().as_uri() + "/")
    box = Box(browser, base, CAPSTONE, colour="light" if scheme == "http" else "dark")
    try:
        assert not [u for u in box.requests if "/translator/" in u], "the model must not load with the page"
        # from disk, a third of them: what differs there is how the files load; the sentences are the http pass's
        texts = sentences("grammar") if scheme == "http" else sentences("grammar")[::3]
        assert texts[0] == data.test_pairs[0][0]
        first = box.first_use("grammar", texts[0])
        assert first["model"] == "grammar" and box.loaded("model-grammar.js")
        first_ready = box.first_ready()
        worst = assert_same(first, translation_details(model, data, texts[0], beam_size=4))
        timings = []  # each translation after the first, as the page timed it
        for text, beam in plan(texts):
            worst = max(worst, assert_same(box.type(text, beam=beam),
                                           translation_details(model, data, text, beam_size=beam)))
            timings.append(box.last_ms())
        # the greedy and beam outputs on the page are Python's words
        last = translation_details(model, data, plan(texts)[-1][0], beam_size=8)
        assert box.root.locator(".tl-tr-greedy").inner_text() == last["greedy_text"]
        assert box.root.locator(".tl-tr-beam-out").inner_text() == last["beam_text"]
        # another layer and head: the heatmap shows Python's weights for them
        box.root.locator(".tl-tr-layer").select_option(index=0)  # (a string may match a label: "2" is the value 1)
        box.root.locator(".tl-tr-head").select_option(index=2)
        cells = box.root.locator("table.tl-tr-attn tr").nth(1).locator("td").all_inner_texts()
        assert cells == [f"{w:.2f}" for w in last["cross"][0][2][0]]
        assert "layer 1, head 3" in box.root.locator("table.tl-tr-attn caption").inner_text()
        assert not box.loaded("model-real.js"), "the real model's file loads only when the reader selects it"
        print(f"\n{scheme}: first translation ready {first_ready:.0f} ms after first use; later ones: median "
              f"{statistics.median(timings):.0f} ms, max {max(timings):.0f} ms over {len(timings)}; "
              f"largest difference from Python {worst:.1e}")
        assert_no_hang("grammar", first_ready, timings)
        assert not box.external, f"requests to other hosts: {box.external}"
        assert not box.console, f"console errors or warnings: {box.console}"
    finally:
        box.close()


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_the_real_model_translates_exactly_as_python_once_selected(browser, request, real, scheme):
    model, data = real
    base = (request.getfixturevalue("site") if scheme == "http"
            else request.getfixturevalue("built").resolve().as_uri() + "/")
    box = Box(browser, base, CAPSTONE, colour="dark" if scheme == "http" else "light")
    try:
        # selected before any use: the runtime and the real model load, the grammar model does not
        first = box.first_use("real")
        first_ready = box.first_ready()
        assert first["model"] == "real" and box.loaded("model-real.js") and not box.loaded("model-grammar.js")
        worst = assert_same(first, translation_details(model, data, first["text"], beam_size=4))
        # the box shows the real model's examples and words, and the layers and heads of its decoder
        shown = box.root.locator(".tl-tr-examples:visible button").all_inner_texts()
        assert shown == shipped_examples("real") and box.root.locator(".tl-tr-examples:visible").count() == 1
        assert "Real sentences (HSK)" in box.root.locator(".tl-tr-vocab:visible summary").inner_text()
        assert box.root.locator(".tl-tr-layer option").count() == model.config.num_decoder_layers
        assert box.root.locator(".tl-tr-head option").count() == model.config.nhead
        texts = sentences("real") if scheme == "http" else sentences("real")[::3]
        timings = []
        for text, beam in plan(texts):
            worst = max(worst, assert_same(box.type(text, beam=beam),
                                           translation_details(model, data, text, beam_size=beam)))
            timings.append(box.last_ms())
        # Chinese characters, written without spaces: the page shows Python's text
        last = translation_details(model, data, plan(texts)[-1][0], beam_size=8)
        assert box.root.locator(".tl-tr-greedy").inner_text() == last["greedy_text"] and " " not in last["greedy_text"]
        assert box.root.locator(".tl-tr-beam-out").inner_text() == last["beam_text"]
        # an example button of the real model translates its sentence
        box.root.evaluate("r => { r.dataset.tlState = 'typing'; }")
        box.root.locator(".tl-tr-examples:visible button").nth(1).click()
        assert_same(box.wait_result(shipped_examples("real")[1], 8),
                    translation_details(model, data, shipped_examples("real")[1], beam_size=8))
        print(f"\n{scheme}, real model: first translation ready {first_ready:.0f} ms after it was selected; later "
              f"ones: median {statistics.median(timings):.0f} ms, max {max(timings):.0f} ms over {len(timings)}; "
              f"largest difference from Python {worst:.1e}")
        assert_no_hang("real", first_ready, timings)
        # and back: the grammar model loads now, and translates as Python does
        model_g, data_g = shipped_translator("grammar")
        back = box.select("grammar")
        assert_same(back, translation_details(model_g, data_g, back["text"], beam_size=8))
        assert box.root.locator(".tl-tr-examples:visible button").all_inner_texts()[0] == back["text"]
        assert not box.external, f"requests to other hosts: {box.external}"
        assert not box.console, f"console errors or warnings: {box.console}"
    finally:
        box.close()


def test_the_page_reads_english_exactly_as_python(browser, site, shipped, real):
    """Both readings, on every English sentence of the HSK data and on awkward text: the same tokens as
    read_english (for the real model, real_data.tokenize_english), or the same message."""
    pairs, _ = real_data.load_pairs()
    texts = [p.english for p in pairs] + TRICKY + REAL_AWKWARD + ["a " * 64, "a " * 65, "no, " * 33, "?" * 65]
    box = Box(browser, site, CAPSTONE)
    try:
        for key, (model, data) in (("grammar", shipped), ("real", real)):
            page = box.page.evaluate("([t, k]) => tlTranslator.read(t, k)", [texts, key])
            reading = "hsk" if key == "real" else "grammar"
            for text, mine in zip(texts, page):
                try:
                    theirs = read_english(text, data.src_vocab, model.max_len, reading)[0]
                except ValueError as e:
                    theirs = str(e)
                assert mine == theirs, f"{key}: {text!r}: the page read {mine!r}, Python {theirs!r}"
        assert not box.console and not box.external, (box.console, box.external)
    finally:
        box.close()


def test_budgets_first_load_and_model_files(browser, site):
    """The page's first load, and what loads on first use, in bytes (1 MB = 10^6 bytes)."""
    lazy, model_files = _lazy_files()
    assert sorted(f.name for f in ASSETS.iterdir()) == \
        sorted(["ort.js", "ort-wasm.js"] + [f"{kind}-{k}.js" for k in SHIPPED for kind in ("model", "explain")])
    for key in SHIPPED:  # the explainer's graphs hold the model's weights once more, and nothing else heavy
        explainer = (ASSETS / f"explain-{key}.js").stat().st_size
        assert explainer <= 1.1 * model_files[key], (key, explainer / MB, model_files[key] / MB)
    box = Box(browser, site, CAPSTONE)
    try:
        box.page.wait_for_load_state("networkidle")
        loaded = {u: r.body() for u, r in list(box.bodies.items())}
        raw = sum(len(b) for b in loaded.values())
        compressible = lambda u: not u.split("?")[0].endswith((".woff2", ".woff", ".png", ".ico"))  # noqa: E731
        wire = sum(len(gzip.compress(b, 6)) if compressible(u) else len(b) for u, b in loaded.items())
        assert not [u for u in loaded if "/translator/" in u]
        assert not [u for u in box.requests if "/translator/explain-" in u], "the explainer loads only on a trace"
        print(f"\nfirst load: {raw / MB:.2f} MB as files, {wire / MB:.2f} MB gzip-compressed as static hosts send it, "
              f"{len(loaded)} files; loaded on first use: " + ", ".join(f"{k} {v / MB:.2f} MB" for k, v in lazy.items())
              + "; " + ", ".join(f"{f.name} {f.stat().st_size / MB:.2f} MB" for f in sorted(ASSETS.iterdir())))
        assert wire <= 2 * MB, f"the page's first load is {wire / MB:.2f} MB compressed (at most 2 MB)"
        for key in SHIPPED:
            assert lazy[key] <= 15 * MB, f"the {key} model's first use loads {lazy[key] / MB:.2f} MB (at most 15 MB)"
            # the sizes the box tells the reader before it loads are the sizes it loads
            assert round(lazy[key] / MB) == DOWNLOAD_MB[key], (key, lazy[key] / MB, DOWNLOAD_MB[key])
            assert round(model_files[key] / MB) == MODEL_MB[key], (key, model_files[key] / MB, MODEL_MB[key])
        assert model_files["real"] <= 8 * MB, \
            f"the real model adds {model_files['real'] / MB:.2f} MB to the site (at most 8 MB)"
        assert f"about {DOWNLOAD_MB['grammar']} MB" in box.root.locator(".tl-tr-status").inner_text()
    finally:
        box.close()
    # the Chinese edition has no copy of the model files: its boxes load the English edition's
    assert not (HTML / "zh" / "_static" / "tl" / "translator").exists()


BAD = [
    ("", "message", "type an english sentence"),
    ("   \t  ", "message", "type an english sentence"),
    (("i have a cat " * 40)[:500], "message", "reads at most 64"),
    ("a" * 500, "result", None),
    ("i have a 🐱 and a 🐶", "result", None),
    ("我有一只猫", "result", "this box reads english"),
    ('<script>window.tlPwned=1</script><img src=x onerror="window.tlPwned=2">', "result", None),
]


def test_bad_input_gets_a_message_or_a_translation_never_markup(browser, site, shipped):
    model, data = shipped
    box = Box(browser, site, CAPSTONE)
    try:
        box.type("i have a cat")  # the model's scripts are loaded: from now on no element may appear
        elements = box.page.evaluate("document.querySelectorAll('script, img, iframe, object').length")
        for text, kind, says in BAD:
            if kind == "message":
                status = box.type(text, wait="message")
                assert says in status.lower(), f"{text[:30]!r}: {status!r}"
                assert box.root.locator(".tl-tr-result").inner_text() == ""
                with pytest.raises(ValueError):
                    translation_details(model, data, text)
            else:
                result = box.type(text, beam=4)
                assert_same(result, translation_details(model, data, text, beam_size=4))
                if says:
                    assert says in box.root.locator(".tl-tr-result").inner_text().lower()
        # the HTML was read as words and shown as text: nothing was injected, nothing ran
        assert "<script>window.tlpwned=1</script><img" in box.root.locator(".tl-tr-result").inner_text()
        assert box.page.evaluate("window.tlPwned") is None
        assert box.page.evaluate("document.querySelectorAll('script, img, iframe, object').length") == elements
        # the translator still works after all that
        assert box.type("the cat eats rice")["greedy_text"] == \
            translation_details(model, data, "the cat eats rice")["greedy_text"]
        assert not box.console and not box.external, (box.console, box.external)
    finally:
        box.close()


@pytest.mark.parametrize("colour", ["light", "dark"])
@pytest.mark.parametrize("key", list(SHIPPED))
def test_the_box_with_a_translation_is_accessible(browser, site, colour, key):
    _need(AXE.exists(), f"axe-core not found at {AXE}: run `npm ci`")
    box = Box(browser, site, CAPSTONE, colour=colour)
    try:
        if key != "grammar":
            box.select(key)  # the selector, the other model's examples and words, its translation
        box.type("she has six cats ?" if key == "grammar" else "It's 3.5 km, don't go!", beam=4)
        select = box.root.locator(".tl-tr-model")
        assert select.evaluate("s => s.labels.length") == 1 and select.input_value() == key
        assert [o.strip() for o in select.locator("option").all_inner_texts()] == list(SHIPPED.values())
        box.page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        violations = box.page.evaluate(
            "async (tags) => (await axe.run('.tl-translator', {runOnly: {type: 'tag', values: tags}, "
            "resultTypes: ['violations']})).violations.map(v => v.id + ': ' + v.help + ' ' + "
            "v.nodes.map(n => n.target.join(' ')).slice(0, 5).join('; '))", AXE_TAGS)
        assert not violations, violations
    finally:
        box.close()


def test_the_chinese_editions_box_loads_the_english_editions_files(browser, site, real):
    model, data = real
    box = Box(browser, site, CAPSTONE_ZH)
    try:
        first = box.select("real")
        assert_same(first, translation_details(model, data, first["text"], beam_size=4))
        assert box.loaded("model-real.js") and all(u.startswith(site + "_static/tl/translator/")
                                                   for u in box.requests if "/translator/" in u)
        assert not box.console and not box.external, (box.console, box.external)
    finally:
        box.close()


def test_chapter_12s_box_translates_too(browser, site, shipped):
    model, data = shipped
    box = Box(browser, site, INFERENCE)
    try:
        for text in ("cat", "i have"):
            assert_same(box.type(text, beam=3), translation_details(model, data, text, beam_size=3))
        assert not box.console and not box.external, (box.console, box.external)
    finally:
        box.close()


# -- the explainer: window.tlExplainer.trace, the same dict as transformer_lite.book.explain.trace --------------

def assert_same_trace(page, py, where="trace") -> float:
    """The page's trace is Python's: the same keys and lengths, equal strings, integers and booleans (the tokens,
    ids, masks, config), every float within 1e-4, relative to the value where it is above 1 in size (float32 keeps
    a raw attention score of 357, the grammar translator's largest, to 3e-5: two orders of its sum differ by 1e-4;
    bookbuild/web_export.py's _difference). Returns the largest difference of a float, so measured."""
    if isinstance(py, dict):
        assert isinstance(page, dict) and set(page) == set(py), f"{where}: keys {sorted(page)} != {sorted(py)}"
        return max((assert_same_trace(page[k], v, f"{where}.{k}") for k, v in py.items()), default=0.0)
    if isinstance(py, list):
        assert isinstance(page, list) and len(page) == len(py), f"{where}: {str(page)[:80]} != Python's {str(py)[:80]}"
        return max((assert_same_trace(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(page, py))), default=0.0)
    if isinstance(py, float):
        assert isinstance(page, (int, float)) and not isinstance(page, bool), f"{where}: {page!r} != {py!r}"
        difference = abs(page - py) / max(1.0, abs(py))
        assert difference <= TOL, f"{where}: {page!r} != Python's {py!r}"
        return difference
    assert page == py and isinstance(page, bool) == isinstance(py, bool), f"{where}: {page!r} != Python's {py!r}"
    return 0.0


def explained(key: str) -> list[str]:
    """A held-out sentence and an awkward one (unknown words, upper case, punctuation) for each model."""
    if key == "grammar":
        return [tiny_translator()[1].test_pairs[0][0], "Will SHE drink TEA? xyzzy"]
    return [real_data.split_pairs()["test"][0].english, REAL_AWKWARD[0]]


TRACE_BAD = [  # (text, key, k) -> the error the page's API rejects with
    (5, "grammar", None, "TypeError: text must be a string"),
    ("   ", "grammar", None, "RangeError: text must hold an English sentence"),
    ("i have a cat", "french", None, "RangeError: key must be one of grammar, real"),
    ("i have a cat", None, None, "RangeError: key must be one of grammar, real"),
    ("i have a cat", "grammar", 0, "RangeError: k must be a positive integer"),
    ("i have a cat", "grammar", 2.5, "RangeError: k must be a positive integer"),
    ("a " * 65, "grammar", None, "RangeError: text has 65 words; the model reads at most"),
]


# The grammar model over http, the real one from disk: what differs between the schemes is how the files load, and
# each model's numbers are checked once; one page visit each, a few sentences.
@pytest.mark.parametrize("key,scheme", [("grammar", "http"), ("real", "file")])
def test_the_browsers_trace_is_pythons(browser, request, key, scheme):
    base = (request.getfixturevalue("site") if scheme == "http"
            else request.getfixturevalue("built").resolve().as_uri() + "/")
    box = Box(browser, base, CAPSTONE)
    try:
        assert box.page.evaluate("tlExplainer.keys") == list(SHIPPED)
        assert not [u for u in box.requests if "/translator/" in u], "nothing of the explainer loads with the page"
        texts = explained(key)
        calls = [(text, TOP_K) for text in texts] + [(texts[0], 2)]
        t0 = time.perf_counter()
        page = box.page.evaluate(
            "async ([calls, key]) => { const out = [];"
            " for (const [text, k] of calls) out.push(await tlExplainer.trace(text, key, k)); return out; }",
            [calls, key])
        seconds = time.perf_counter() - t0
        worst = 0.0
        for (text, k), mine in zip(calls, page):
            worst = max(worst, assert_same_trace(mine, explain.trace(key, text, k=k), f"{key} {text!r} k={k}"))
        other = next(k for k in SHIPPED if k != key)
        assert box.loaded(f"explain-{key}.js") and not box.loaded(f"explain-{other}.js")
        assert not box.loaded(f"model-{other}.js")
        if key == "grammar":  # bad input: a rejected Promise with a clear Error, and the explainer still works
            errors = box.page.evaluate(
                "async (bad) => { const out = []; for (const [text, key, k] of bad) {"
                " try { await tlExplainer.trace(text, key, k === null ? undefined : k); out.push(null); }"
                " catch (e) { out.push(e.name + ': ' + e.message); } } return out; }",
                [[text, k_, k] for text, k_, k, _ in TRACE_BAD])
            for (text, _, _, says), got in zip(TRACE_BAD, errors):
                assert got is not None and got.startswith(says), f"{str(text)[:20]!r}: {got!r}"
            again = box.page.evaluate("t => tlExplainer.trace(t, 'grammar')", texts[1])
            assert_same_trace(again, explain.trace(key, texts[1]))
        print(f"\n{key} over {scheme}: {len(calls)} traces (the model and its explainer loaded by the first) in "
              f"{seconds:.1f} s; largest difference from Python {worst:.1e}")
        assert not box.external, f"requests to other hosts: {box.external}"
        assert not box.console, f"console errors or warnings: {box.console}"
    finally:
        box.close()


def heads_to_switch_off(key: str) -> list[list]:
    """Head sets for the browser's trace: one head of each part, and every cross-attention head (the decoder then reads
    nothing of the source, so the translation changes)."""
    model, _ = shipped_translator(key)
    c = model.config
    return [[("encoder", c.num_encoder_layers - 1, 1), ("self", 0, c.nhead - 1),
             ("cross", c.num_decoder_layers - 1, 0)],
            [("cross", layer, head) for layer in range(c.num_decoder_layers) for head in range(c.nhead)]]


# each model over both schemes: the head masks are inputs of the explainer's graphs, fed by the page
@pytest.mark.parametrize("key,scheme", [("grammar", "http"), ("real", "file"), ("grammar", "file"), ("real", "http")])
def test_the_browsers_trace_with_heads_off_is_pythons(browser, request, key, scheme):
    base = (request.getfixturevalue("site") if scheme == "http"
            else request.getfixturevalue("built").resolve().as_uri() + "/")
    box = Box(browser, base, CAPSTONE)
    try:
        text = explained(key)[0]
        calls = [[list(h) for h in off] for off in heads_to_switch_off(key)]
        page = box.page.evaluate(
            "async ([text, key, calls]) => { const out = [];"
            " for (const off of calls) out.push(await tlExplainer.trace(text, key, undefined, off)); return out; }",
            [text, key, calls])
        worst = 0.0
        for off, mine in zip(calls, page):
            py = explain.trace(key, text, heads_off=[tuple(h) for h in off])
            worst = max(worst, assert_same_trace(mine, py, f"{key} {text!r} heads_off={off}"))
        assert page[1]["tgt_tokens"] != explain.trace(key, text)["tgt_tokens"], \
            "without cross-attention the decoder reads nothing of the source: another translation"
        # bad heads: a rejected Promise naming headsOff, and the explainer still works
        bad = box.page.evaluate(
            "async ([text, key]) => { try { await tlExplainer.trace(text, key, undefined, [['cross', 0, 99]]);"
            " return null; } catch (e) { return e.name + ': ' + e.message; } }", [text, key])
        assert bad and bad.startswith("RangeError: headsOff:"), bad
        print(f"\n{key} over {scheme}: heads off, largest difference from Python {worst:.1e}")
        assert not box.external, f"requests to other hosts: {box.external}"
        assert not box.console, f"console errors or warnings: {box.console}"
    finally:
        box.close()
