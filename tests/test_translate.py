"""The translator box's Python side: reading typed text, what the box shows, the ONNX export.

transformer_lite.book.translate reads the reader's text and computes what the box shows;
tools/web_export.py (build-only) exports the model for the browser. The page itself is checked
against these in tests/test_translator_web.py.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from transformer_lite import Transformer
from transformer_lite.data import BOS, EOS, UNK, Vocab
from transformer_lite.book.pretrained import tiny_translator
from transformer_lite.book.translate import (MAX_BEAM, read_english, reading_rules, translation_details,
                                             translator_box_html)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from web_export import cached_export, classic_ort_script, export_onnx, export_key  # noqa: E402  (build-only code)


@pytest.fixture(scope="module")
def shipped():
    model, data, _ = tiny_translator()
    return model, data


VOCAB = Vocab(["i", "have", "a", "cat", "?"])


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
    assert "translator/model.js" not in html and "ort-wasm" not in html  # the model loads on first use
    assert "_static/tl/tl-translator.js" in html and "dataset.content_root" in html
    assert "<script>alert(1)" not in html  # the example is text, in the button and in the settings
    settings = json.loads(html.split('class="tl-tr-settings">')[1].split("</script>")[0])
    assert settings["examples"][1] == "</script><script>alert(1)</script>"
    assert settings["layers"] == model.config.num_decoder_layers and settings["heads"] == model.config.nhead
    with pytest.raises(ValueError, match="examples"):
        translator_box_html(model, data, [])


def test_classic_ort_script_turns_the_module_bundle_into_a_script():
    bundle = "var a=1,b=function(){return import.meta.url};export{a as Tensor,b as InferenceSession,a as env,b as default};\n" \
             "//# sourceMappingURL=ort.map"
    out = classic_ort_script(bundle)
    assert "import.meta" not in out and "export{" not in out and "sourceMappingURL" not in out
    assert "self.ort={InferenceSession:b,Tensor:a,env:a}" in out
    with pytest.raises(ValueError, match="export"):
        classic_ort_script("var a=1;")


def test_the_onnx_export_computes_what_pytorch_computes(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    torch.manual_seed(0)
    model = Transformer(11, 13, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                        dim_feedforward=32, max_len=20).eval()
    out = export_onnx(model, tmp_path)
    assert out["max_error"] < 1e-4 and out["encoder"].exists() and out["decoder"].exists()
    # other lengths than the ones traced: the source and target lengths are dynamic
    import onnxruntime as ort
    enc = ort.InferenceSession(str(out["encoder"]), providers=["CPUExecutionProvider"])
    dec = ort.InferenceSession(str(out["decoder"]), providers=["CPUExecutionProvider"])
    src = torch.tensor([[4, 5, 6, 7, 8, 9, 10, 4, 5, 6, 7, 8]])
    ys = torch.tensor([[BOS, 4, 5]])
    (memory,) = enc.run(None, {"src": src.numpy()})
    logits, cross = dec.run(None, {"memory": memory, "src": src.numpy(), "ys": ys.numpy()})
    with torch.no_grad():
        expected = model(src, ys)
        maps = model.attention_maps(src, ys).cross
    assert abs(logits - expected.numpy()).max() < 1e-4
    assert cross.shape == (1, 2, 2, 3, 12) and abs(cross[0, 1] - maps[1][0].numpy()).max() < 1e-4


def test_the_export_is_reused_only_while_its_inputs_are_unchanged(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    import web_export

    torch.manual_seed(0)
    model = Transformer(11, 13, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=32, max_len=20).eval()
    calls = []
    real = web_export.export_onnx
    monkeypatch.setattr(web_export, "export_onnx", lambda m, d: calls.append(1) or real(m, d))
    first = cached_export(model, tmp_path)
    again = cached_export(model, tmp_path)
    assert (first["cached"], again["cached"], len(calls)) == (False, True, 1)
    assert again["encoder"] == first["encoder"] and again["decoder"] == first["decoder"]
    key = export_key(model)
    with torch.no_grad():
        model.output_projection.weight[0, 0] += 1e-3  # another model: another key, a new export
    assert export_key(model) != key
    assert cached_export(model, tmp_path)["cached"] is False and len(calls) == 2


def test_the_export_is_checked_with_the_onnx_runtime_release_the_page_runs():
    import re

    root = Path(__file__).resolve().parent.parent
    pinned = re.search(r"^onnxruntime==(\S+)", (root / "requirements.txt").read_text(encoding="utf-8"), re.M)
    web = json.loads((root / "package.json").read_text(encoding="utf-8"))["dependencies"]["onnxruntime-web"]
    assert pinned and pinned.group(1) == web, (pinned and pinned.group(1), web)
