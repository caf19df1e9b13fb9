"""The translator box's Python side: reading typed text, what the box shows, the ONNX export.

transformer_lite.book.translate reads the reader's text and computes what the box shows;
bookbuild/web_export.py (build-only) exports the model for the browser. The page itself is checked
against these in tests/test_translator_web.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from transformer_lite import Transformer
from transformer_lite.book import real_data
from transformer_lite.book.pretrained import tiny_translator
from transformer_lite.book.translate import (
    MAX_BEAM,
    SHIPPED,
    read_english,
    reading_of,
    reading_rules,
    shipped_examples,
    shipped_key,
    shipped_translator,
    translate_pattern,
    translation_details,
    translator_box_html,
)
from transformer_lite.data import BOS, EOS, PAD, UNK, Vocab

ROOT = Path(__file__).resolve().parent.parent
from bookbuild.web_export import cached_export, classic_ort_script, export_key  # noqa: E402  (build-only code)


@pytest.fixture(scope="module")
def shipped():
    model, data, _ = tiny_translator()
    return model, data


@pytest.fixture(scope="module")
def real():
    return shipped_translator("real")


VOCAB = Vocab(["i", "have", "a", "cat", "?"])
# English that tests the real translator's reading: numbers, apostrophes (straight and curly), punctuation,
# letters beyond ASCII, full-width and compatibility forms (NFKC), case mappings that change length, digits
# of other scripts, emoji, Chinese, whitespace Python splits on and JavaScript's \s does not (and back)
TRICKY = ["It's 3.5 km\u2014don't go!", "I can\u2019t find my keys\u2026", "100,000 people live here.",
          "1.2.3 and 4,5 or 6, 7. 8", "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c6sop",
          "\uff21\uff22\uff23 \uff11\uff12\uff13 full-width",
          "\u0130stanbul \u1e9e STRASSE \u03a3\u039f\u03a6\u039f\u03a3", "\ufb01ne \u2460\u2461 x\u00b2 \u2153 \u2167",
          "\u0663\u0664 \u096a\u096b and \U0001d7d8", "\U0001f431 cats & dogs \U0001f436!",
          "\u6211\u6709\u4e00\u53ea\u732b",
          "e\u0301l\u00e8ve d\u0300", "snake_case and kebab-case", "'quoted' \"double\" `tick`",
          "a\x1cb\u3000c\ufeffd\u200be\x85f", "rock'n'roll isn't '90s'", "don''t", "HELLO, Teacher!!", "   ", ""]


def test_read_english_lowercases_splits_question_marks_and_lists_unknown_words_once():
    words, ids, unknown = read_english("  I have a CAT?\tA zebra,  a zebra ", VOCAB, 64)
    assert words == ["i", "have", "a", "cat", "?", "a", "zebra,", "a", "zebra"]
    assert ids[:5] == [VOCAB.stoi[w] for w in ("i", "have", "a", "cat", "?")] and ids[6] == UNK
    assert unknown == ["zebra,", "zebra"]  # each once, in order


def test_read_english_splits_on_pythons_whitespace_which_the_page_receives_as_data():
    rules = reading_rules()
    assert 0x1C in rules["whitespace"] and 0x3000 in rules["whitespace"]  # str.split() splits on both
    assert 0xFEFF not in rules["whitespace"] and 0x200B not in rules["whitespace"]  # JavaScript's \s has FEFF
    assert read_english("i\x1chave\u3000a", VOCAB, 64)[0] == ["i", "have", "a"]
    assert rules["split_before"] == "?"


@pytest.mark.parametrize("text, kind, words", [
    ("", ValueError, "no words"), (" \n\t ", ValueError, "no words"), ("a " * 65, ValueError, "at most 64"),
    (None, TypeError, "must be a str"), (b"i have", TypeError, "must be a str")])
def test_read_english_refuses_what_it_cannot_read_and_says_why(text, kind, words):
    with pytest.raises(kind, match=words):
        read_english(text, VOCAB, 64)


def test_read_english_takes_exactly_max_words():
    assert len(read_english("a " * 64, VOCAB, 64)[0]) == 64


def test_translation_details_are_the_decoders_outputs(shipped):
    model, data = shipped
    d = translation_details(model, data, "i have two big dogs", beam_size=1)
    assert d["greedy"] == d["beam"] and d["greedy"][-1] == EOS  # beam size 1 is greedy decoding
    assert d["greedy_text"] == data.tgt_vocab.decode(d["greedy"])
    # each step's first candidate is the token greedy decoding wrote there
    assert [row[0][0] for row in d["steps"]] == [data.tgt_vocab.itos[i] for i in d["greedy"]]
    cross = torch.tensor(d["cross"])  # (layers, heads, T, S)
    cfg = model.config
    assert cross.shape == (cfg.num_decoder_layers, cfg.nhead, len(d["greedy"]), len(d["words"]))
    assert torch.allclose(cross.sum(-1), torch.ones(cross.shape[:-1]), atol=1e-5)
    assert json.loads(json.dumps(d)) == d  # JSON-ready: what the page computes has the same form


def test_translation_details_lists_unknown_words_and_refuses_a_bad_beam_size(shipped):
    model, data = shipped
    assert translation_details(model, data, "she has six cats", beam_size=4)["unknown"] == ["six"]
    for bad in (0, MAX_BEAM + 1, 2.0, True):
        with pytest.raises(ValueError, match="beam_size"):
            translation_details(model, data, "cat", beam_size=bad)


def test_the_static_box_loads_nothing_heavy_and_escapes_its_examples(shipped):
    model, data = shipped
    html = translator_box_html(model, data, ["i have", "</script><script>alert(1)</script>"])
    assert "translator/model" not in html and "ort-wasm" not in html  # the model loads on first use
    assert "_static/tl/tl-translator.js" in html and "dataset.content_root" in html
    assert "<script>alert(1)" not in html  # the example is text, in the button and in the settings
    settings = json.loads(html.split('class="tl-tr-settings">')[1].split("</script>")[0])
    mine = settings["models"][settings["model"]]
    assert mine["examples"][1] == "</script><script>alert(1)</script>"
    assert mine["layers"] == model.config.num_decoder_layers and mine["heads"] == model.config.nhead
    with pytest.raises(ValueError, match="examples"):
        translator_box_html(model, data, [])


def test_classic_ort_script_turns_the_module_bundle_into_a_script():
    """The installed bundle (package.json's onnxruntime-web) through its two registered patches
    (bookbuild/patches.py)."""
    from bookbuild import patches

    bundle = patches.NODE / "onnxruntime-web" / "dist" / "ort.wasm.bundle.min.mjs"
    if not bundle.exists():
        pytest.skip("npm ci has not installed onnxruntime-web")
    out = classic_ort_script(bundle.read_text(encoding="utf-8"))
    assert "import.meta" not in out and "export{" not in out and "sourceMappingURL" not in out
    assert out.count("self.ort={InferenceSession:") == 1 and out.rstrip().endswith("})();")
    with pytest.raises(patches.PatchError, match="onnxruntime-web-as-a-classic-script-exports"):
        classic_ort_script("var a=1;")


def test_the_onnx_export_computes_what_pytorch_computes(shipped):
    """The graphs the page runs: the shipped grammar translator's export, from the build's cache
    (``_build/.onnx-cache``, written by ``make book``; exported here, about 13 s, and cached for the build when the
    book is not built yet). ``export_onnx`` checked them against PyTorch on its own batch when it made them; here
    they must match at other batch sizes and lengths than the ones traced, with padding."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    model, _ = shipped
    out = cached_export(model, ROOT / "_build" / ".onnx-cache")
    assert out["max_error"] < 1e-4
    enc = ort.InferenceSession(out["encoder"], providers=["CPUExecutionProvider"])
    dec = ort.InferenceSession(out["decoder"], providers=["CPUExecutionProvider"])
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, model.src_vocab_size, (3, 12), generator=g)
    src[2, 9:] = PAD
    ys = torch.randint(4, model.tgt_vocab_size, (3, 5), generator=g)
    ys[:, 0] = BOS
    (memory,) = enc.run(None, {"src": src.numpy()})
    logits, cross = dec.run(None, {"memory": memory, "src": src.numpy(), "ys": ys.numpy()})
    with torch.no_grad():
        expected = model(src, ys)
        maps = model.attention_maps(src, ys).cross
    layers = len(maps)
    assert abs(logits - expected.numpy()).max() < 1e-4
    assert cross.shape == (3, layers, model.config.nhead, 5, 12)
    assert abs(cross[:, -1] - maps[-1].numpy()).max() < 1e-4


def test_the_explainers_graphs_compute_what_explain_computes(shipped):
    """The explainer's graphs (explain.record_encoder / record_decoder exported: the browser's trace) at other
    lengths than the ones traced: every output, named by explain.flat, within 1e-4 of PyTorch's (relative to the
    value where it is above 1: float32 keeps a raw score of 300 to 3e-5)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    from bookbuild import web_export
    from transformer_lite.book import explain

    model, _ = shipped
    out = cached_export(model, ROOT / "_build" / ".onnx-cache")
    enc = ort.InferenceSession(out["explain_encoder"], providers=["CPUExecutionProvider"])
    dec = ort.InferenceSession(out["explain_decoder"], providers=["CPUExecutionProvider"])
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, model.src_vocab_size, (1, 11), generator=g)
    ys = torch.randint(4, model.tgt_vocab_size, (1, 6), generator=g)
    ys[:, 0] = BOS
    model.eval()
    with torch.no_grad():
        record = explain.flat(explain.record_encoder(model, src))
        memory = dict(record)["memory"][None]
        dec_record = explain.flat(explain.record_decoder(model, memory, src, ys))
    on = {k: v.numpy() for k, v in explain.head_masks(model).items()}  # every head counts (the graphs' head masks)
    got = enc.run(None, {"src": src.numpy(), "head_mask_encoder": on["encoder"]}) + \
        dec.run(None, {"memory": memory.numpy(), "src": src.numpy(), "ys": ys.numpy(),
                       "head_mask_self": on["self"], "head_mask_cross": on["cross"]})
    names = [o.name for o in enc.get_outputs()] + [o.name for o in dec.get_outputs()]
    assert names == [n for n, _ in record + dec_record]
    for (name, expected), value in zip(record + dec_record, got):
        assert value.shape == tuple(expected.shape), name
        assert web_export._difference(value, expected.double().numpy()) < 1e-4, name  # relative above 1 in size


def test_the_export_is_reused_only_while_its_inputs_are_unchanged(tmp_path, monkeypatch):
    from bookbuild import web_export

    torch.manual_seed(0)
    model = Transformer(11, 13, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=32, max_len=20).eval()
    calls = []

    def export(m, folder):  # the exporter's files, made up: what is tested is when it runs (the real one takes 13 s)
        calls.append(1)
        for k in web_export.GRAPHS:
            (Path(folder) / f"{k}.onnx").write_bytes(f"{k} {len(calls)}".encode())
        return dict({k: Path(folder) / f"{k}.onnx" for k in web_export.GRAPHS}, max_error=0.0)

    monkeypatch.setattr(web_export, "export_onnx", export)
    first = cached_export(model, tmp_path)
    again = cached_export(model, tmp_path)
    assert (first["cached"], again["cached"], len(calls)) == (False, True, 1)
    assert again["encoder"] == first["encoder"] and again["decoder"] == first["decoder"]
    key = export_key(model)
    with torch.no_grad():
        model.output_projection.weight[0, 0] += 1e-3  # another model: another key, a new export
    assert export_key(model) != key
    third = cached_export(model, tmp_path)
    assert third["cached"] is False and len(calls) == 2 and third["encoder"] == b"encoder 2"


def test_the_export_is_checked_with_the_onnx_runtime_release_the_page_runs():
    import re

    root = Path(__file__).resolve().parent.parent
    pinned = re.search(r"^onnxruntime==(\S+)", (root / "requirements.in").read_text(encoding="utf-8"), re.M)
    web = json.loads((root / "package.json").read_text(encoding="utf-8"))["dependencies"]["onnxruntime-web"]
    assert pinned and pinned.group(1) == web, (pinned and pinned.group(1), web)


# -- the real translator's reading, and both shipped translators in one box --------------------------------

def _all_english():
    pairs, _ = real_data.load_pairs()
    return [p.english for p in pairs] + TRICKY


def test_each_data_says_how_it_reads_english(shipped, real):
    assert reading_of(shipped[1]) == "grammar" and shipped_key(shipped[1]) == "grammar"
    assert reading_of(real[1]) == "hsk" and shipped_key(real[1]) == "real"
    assert reading_of(real_data.translation_data(min_freq=1)) == "hsk"  # any HSK data, not only the shipped one's
    with pytest.raises(TypeError, match="TranslationData"):
        reading_of("hsk")
    for bad, kind in ((None, TypeError), ("bpe", ValueError)):
        with pytest.raises(kind, match="reading"):
            read_english("i have", VOCAB, 64, reading=bad)
        with pytest.raises(kind, match="reading"):
            reading_rules(bad)
    for bad, kind in ((None, TypeError), ("hsk", ValueError)):
        with pytest.raises(kind, match="key"):
            shipped_translator(bad)


def test_the_real_translator_reads_english_as_its_data_was_tokenized(real):
    model, data = real
    for text in _all_english():
        tokens = real_data.tokenize_english(text)
        if not tokens:
            with pytest.raises(ValueError, match="no words"):
                read_english(text, data.src_vocab, model.max_len, reading="hsk")
            continue
        words, ids, unknown = read_english(text, data.src_vocab, model.max_len, reading="hsk")
        assert words == tokens and ids == data.src_vocab.encode(tokens)
        assert unknown == list(dict.fromkeys(t for t in tokens if t not in data.src_vocab))
    # the held-out pairs were tokenized by this rule: read again, they are the same tokens
    assert all(read_english(en, data.src_vocab, 64, "hsk")[0] == en.split() for en, _ in data.test_pairs)
    with pytest.raises(ValueError, match="at most 64"):
        read_english("no, " * 33, data.src_vocab, 64, reading="hsk")  # 66 tokens


def test_the_pattern_the_page_receives_matches_what_pythons_matches():
    """Python's \\w, \\d, \\s are Unicode classes; JavaScript's are ASCII (\\w, \\d) or another set (\\s). The page
    gets them written out as code points: the translation matches what the original matches, code point by
    code point and on every sentence of the data."""
    import re

    original = real_data._ENGLISH_TOKEN
    rules = reading_rules("hsk")
    assert (rules["kind"], rules["normalize"], rules["flags"], rules["join"]) == ("pattern", "NFKC", "gu", "")
    assert rules["replace"] == [["\u2019", "'"], ["\u2018", "'"]]
    js = rules["pattern"]
    assert "\\w" not in js and "\\d" not in js and "\\s" not in js and "\\u{4e00}" in js
    # the very string the page gets, read back into Python: \\u{...} -> \\U........
    same = re.compile(re.sub(r"\\u\{([0-9a-f]+)\}", lambda m: "\\U%08x" % int(m.group(1), 16), js))
    assert same.pattern == translate_pattern(original.pattern, target="python")
    every = "".join(map(chr, range(0x110000)))
    assert same.findall(every) == original.findall(every)  # each code point: what it matches and where runs break
    for cp in (0x5F, 0x2F, 0xB2, 0x2460, 0x0301, 0x1D7D8, 0xFEFF, 0x3000, 0x85):
        assert same.findall(chr(cp)) == original.findall(chr(cp)), hex(cp)

    def page_reading(text):  # what tl-translator.js does with the rules (JavaScript's normalize and toLowerCase)
        import unicodedata

        text = unicodedata.normalize(rules["normalize"], text)
        for a, b in rules["replace"]:
            text = text.replace(a, b)
        return same.findall(text.lower())

    assert all(page_reading(t) == real_data.tokenize_english(t) for t in _all_english())


@pytest.mark.parametrize("pattern, says", [(r"\bx", "escape"), (r"(?P<a>x)", "(?:"), (r"(?i)x", "(?:")])
def test_translate_pattern_refuses_what_it_cannot_translate(pattern, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        translate_pattern(pattern)


def test_the_real_translator_writes_chinese_without_spaces(real):
    model, data = real
    d = translation_details(model, data, "I will call you, teacher.", beam_size=4)
    assert d["words"] == ["i", "will", "call", "you", ",", "teacher", "."] and d["unknown"] == []
    assert d["greedy_text"] == "".join(data.tgt_vocab.decode(d["greedy"], join=False)) and " " not in d["greedy_text"]
    assert d["beam_text"] == "".join(data.tgt_vocab.decode(d["beam"], join=False))
    assert d["greedy"][-1] == EOS and [row[0][0] for row in d["steps"]] == [data.tgt_vocab.itos[i] for i in d["greedy"]]
    assert translation_details(model, data, "Xyzzy is here.", beam_size=1)["unknown"] == ["xyzzy"]


def test_the_static_box_offers_both_translators_opening_on_the_cells(shipped, real):
    for (model, data), key in ((shipped, "grammar"), (real, "real")):
        html = translator_box_html(model, data, ["My own example."])
        settings = json.loads(html.split('class="tl-tr-settings">')[1].split("</script>")[0])
        assert settings["model"] == key and list(settings["models"]) == list(SHIPPED)
        other = next(k for k in SHIPPED if k != key)
        assert settings["models"][key]["examples"] == ["My own example."]
        assert settings["models"][other]["examples"] == shipped_examples(other)
        for k, label in SHIPPED.items():
            assert f'<option value="{k}"{" selected" if k == key else ""}>{label}</option>' in html
            assert f'tl-tr-examples" data-tl-model="{k}"{"" if k == key else " hidden"}>' in html
            assert f'tl-tr-vocab" data-tl-model="{k}"{"" if k == key else " hidden"}>' in html
        assert "model-real.js" not in html and "model-grammar.js" not in html  # the page loads them on use
    assert shipped_examples("real") == [p.english for p in real_data.split_pairs()["test"][:4]]
    assert shipped_examples("grammar") == [en for en, _ in shipped[1].test_pairs[:4]]
