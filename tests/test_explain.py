"""transformer_lite.book.explain.trace: the reader's sentence through every layer, as the model computes it.

Every shape the module's docstring lists, for both shipped translators and several sentences; the
attention rows; the chain of the residual stream; the logits rebuilt from the trace against the
model's own logits of greedy decoding, step by step; the box's translation; JSON and its size; bad input.
"""
from __future__ import annotations

import functools
import json
import math

import pytest
import torch

from transformer_lite.book import explain
from transformer_lite.book.explain import DECIMALS, MAX_JSON_BYTES, trace
from transformer_lite.book.translate import MAX_NEW_TOKENS, TOP_K, shipped_examples, translation_details
from transformer_lite.data import BOS
from transformer_lite.embeddings import sinusoidal_positional_encoding

KEYS = ("grammar", "real")
# The two first held-out sentences of each model, and one with a word neither vocabulary has (read as <unk>).
EXTRA = "they have four zyzzyvas"
TOL = 1e-5  # the trace's floats are rounded to 6 decimals: 5e-7 each


@functools.cache
def sentences(key: str) -> tuple[str, ...]:
    return tuple(shipped_examples(key)[:2]) + (EXTRA,)


@functools.cache
def traced(key: str, text: str, k: int = TOP_K) -> dict:
    return trace(key, text, k=k)


CASES = [(key, i) for key in KEYS for i in range(3)]


def case(key, i) -> dict:
    return traced(key, sentences(key)[i])


def t(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


def shape(x) -> tuple:
    return tuple(t(x).shape)


def check_steps(steps: dict, H: int, T: int, S: int, D_h: int, D: int) -> None:
    assert set(steps) == {"q", "k", "v", "scores", "scaled", "mask", "heads", "output"}
    assert shape(steps["q"]) == (H, T, D_h)
    assert shape(steps["k"]) == shape(steps["v"]) == (H, S, D_h)
    assert shape(steps["scores"]) == shape(steps["scaled"]) == (H, T, S)
    assert shape(steps["mask"]) == (T, S) and {v for row in steps["mask"] for v in row} <= {0, 1}
    assert shape(steps["heads"]) == (H, T, D_h)
    assert shape(steps["output"]) == (T, D)


@pytest.mark.parametrize("key,i", CASES)
def test_every_key_has_the_shape_the_docstring_gives(key, i):
    tr = case(key, i)
    c = tr["config"]
    D, H, D_h, F = c["d_model"], c["nhead"], c["head_dim"], c["dim_feedforward"]
    assert D_h * H == D
    S, T = len(tr["src_tokens"]), len(tr["tgt_tokens"])
    assert S == len(tr["src_ids"]) > 0 and T == len(tr["tgt_ids"]) == len(tr["decoder_input_tokens"]) > 0
    assert tr["decoder_input_tokens"] == ["<bos>"] + tr["tgt_tokens"][:-1]
    for name, L in (("embedding", S), ("target_embedding", T)):
        assert set(tr[name]) == {"token", "position", "sum"}
        assert all(shape(tr[name][part]) == (L, D) for part in ("token", "position", "sum"))
    assert len(tr["encoder"]) == c["num_encoder_layers"] and len(tr["decoder"]) == c["num_decoder_layers"]
    for layer in tr["encoder"]:
        assert set(layer) == {"attention", "attention_steps", "norm1", "ffn", "norm2"}
        assert shape(layer["attention"]) == (H, S, S)
        check_steps(layer["attention_steps"], H, S, S, D_h, D)
        assert shape(layer["ffn"]["hidden"]) == (S, F) and shape(layer["ffn"]["output"]) == (S, D)
        for n in ("norm1", "norm2"):
            assert shape(layer[n]["input"]) == shape(layer[n]["output"]) == (S, D)
    for layer in tr["decoder"]:
        assert set(layer) == {"self_attention", "self_attention_steps", "norm1", "cross_attention",
                              "cross_attention_steps", "norm2", "ffn", "norm3"}
        assert shape(layer["self_attention"]) == (H, T, T)
        check_steps(layer["self_attention_steps"], H, T, T, D_h, D)
        assert shape(layer["cross_attention"]) == (H, T, S)
        check_steps(layer["cross_attention_steps"], H, T, S, D_h, D)
        assert shape(layer["ffn"]["hidden"]) == (T, F)
        for n in ("norm1", "norm2", "norm3"):
            assert shape(layer[n]["input"]) == shape(layer[n]["output"]) == (T, D)
    assert shape(tr["memory"]) == (S, D) and shape(tr["decoder_output"]) == (T, D)
    assert len(tr["steps"]) == T and all(len(row) == TOP_K for row in tr["steps"])
    assert c["embedding_scale"] == pytest.approx(math.sqrt(D)) and c["attention_scale"] == pytest.approx(D_h ** -0.5)


@pytest.mark.parametrize("key,i", CASES)
def test_attention_rows_sum_to_one_and_give_masked_keys_nothing(key, i):
    tr = case(key, i)
    S, T = len(tr["src_tokens"]), len(tr["tgt_tokens"])
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)  # key after the query: may not attend
    maps = [(layer["attention"], layer["attention_steps"]) for layer in tr["encoder"]]
    for layer in tr["decoder"]:
        maps += [(layer["self_attention"], layer["self_attention_steps"]),
                 (layer["cross_attention"], layer["cross_attention_steps"])]
        assert torch.equal(torch.tensor(layer["self_attention_steps"]["mask"], dtype=torch.bool), causal)
        assert not any(map(any, layer["cross_attention_steps"]["mask"]))  # one sentence: no padding
    for layer in tr["encoder"]:
        assert not any(map(any, layer["attention_steps"]["mask"]))
    for weights, steps in maps:
        w, mask = t(weights), torch.tensor(steps["mask"], dtype=torch.bool)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64), rtol=0, atol=TOL)
        assert (w.masked_select(mask.expand_as(w)) == 0).all()
        assert (w >= 0).all()
        # chapter 3's steps lead to the module's own weights: scale, mask, softmax
        scaled = t(steps["scaled"])
        torch.testing.assert_close(scaled, t(steps["scores"]) * tr["config"]["attention_scale"], rtol=0, atol=TOL)
        torch.testing.assert_close(torch.softmax(scaled.masked_fill(mask, float("-inf")), -1), w, rtol=0, atol=TOL)
        torch.testing.assert_close(w @ t(steps["v"]), t(steps["heads"]), rtol=0, atol=TOL)  # steps 5 and 6
    assert len(maps) == len(tr["encoder"]) + 2 * len(tr["decoder"]) and S > 0


def _model(key):
    return explain._shipped(key)[0]


@pytest.mark.parametrize("key,i", CASES)
def test_the_heads_w_o_and_the_residual_stream_are_the_layers_own(key, i):
    tr = case(key, i)
    model = _model(key)
    for layers, mods, first, last in ((tr["encoder"], model.encoder.layers, tr["embedding"]["sum"], "norm2"),
                                      (tr["decoder"], model.decoder.layers, tr["target_embedding"]["sum"], "norm3")):
        x = t(first)
        for layer, mod in zip(layers, mods):
            attn = "attention_steps" if "attention_steps" in layer else "self_attention_steps"
            steps = layer[attn]
            w_o = mod.self_attn.out_proj
            heads = t(steps["heads"]).transpose(0, 1).reshape(len(x), -1)  # (H, L, D_h) -> (L, D): Concat(heads)
            torch.testing.assert_close(heads @ w_o.weight.double().T + w_o.bias.double(), t(steps["output"]),
                                       rtol=0, atol=TOL)
            q = t(steps["q"]).transpose(0, 1).reshape(len(x), -1)
            wq = mod.self_attn.q_proj
            torch.testing.assert_close(x @ wq.weight.double().T + wq.bias.double(), q, rtol=0, atol=1e-4)
            torch.testing.assert_close(t(layer["norm1"]["input"]), x + t(steps["output"]), rtol=0, atol=TOL)
            x = t(layer["norm1"]["output"])
            if "cross_attention_steps" in layer:
                torch.testing.assert_close(t(layer["norm2"]["input"]), x + t(layer["cross_attention_steps"]["output"]),
                                           rtol=0, atol=TOL)
                x = t(layer["norm2"]["output"])
            ffn_norm = layer["norm3"] if "norm3" in layer else layer["norm2"]
            hidden = t(layer["ffn"]["hidden"])
            assert (hidden >= 0).all()  # ReLU, the shipped models' activation
            l2 = mod.ff.linear2
            torch.testing.assert_close(hidden @ l2.weight.double().T + l2.bias.double(), t(layer["ffn"]["output"]),
                                       rtol=0, atol=1e-4)
            torch.testing.assert_close(t(ffn_norm["input"]), x + t(layer["ffn"]["output"]), rtol=0, atol=TOL)
            x = t(layer[last]["output"])
            for n in ("norm1", "norm2", "norm3") if "norm3" in layer else ("norm1", "norm2"):  # by the layer's own
                with torch.no_grad():
                    by_module = getattr(mod, n)(torch.tensor(layer[n]["input"])).double()
                torch.testing.assert_close(t(layer[n]["output"]), by_module, rtol=0, atol=TOL)
        if last == "norm2":
            torch.testing.assert_close(t(tr["memory"]), x, rtol=0, atol=0)
        else:
            torch.testing.assert_close(t(tr["decoder_output"]), x, rtol=0, atol=0)


@pytest.mark.parametrize("key,i", CASES)
def test_the_embeddings_are_the_scaled_rows_plus_the_sinusoids(key, i):
    tr = case(key, i)
    model = _model(key)
    D = tr["config"]["d_model"]
    for name, ids, embed in (("embedding", tr["src_ids"], model.src_embed),
                             ("target_embedding", [BOS] + tr["tgt_ids"][:-1], model.tgt_embed)):
        e = tr[name]
        torch.testing.assert_close(t(e["token"]), embed.weight.double()[ids] * math.sqrt(D), rtol=0, atol=TOL)
        torch.testing.assert_close(t(e["position"]), sinusoidal_positional_encoding(len(ids), D).double(),
                                   rtol=0, atol=TOL)
        torch.testing.assert_close(t(e["sum"]), t(e["token"]) + t(e["position"]), rtol=0, atol=2 * TOL)


@torch.no_grad()
def _greedy_step_logits(model, src_ids, tgt_ids) -> torch.Tensor:
    """The logits greedy decoding computes, one step at a time through the key/value cache (decoding.py's loop)."""
    src = torch.tensor([src_ids])
    memory, cache = model.encode(src), model.new_cache()
    ys = [BOS] + tgt_ids
    rows = [model.decode(torch.tensor([[ys[s]]]), memory, src=src, cache=cache)[0, -1] for s in range(len(tgt_ids))]
    return torch.stack(rows)  # (T, V)


@pytest.mark.parametrize("key,i", CASES)
def test_the_last_layer_through_the_output_projection_gives_the_models_logits_and_the_top_k(key, i):
    tr = case(key, i)
    model = _model(key)
    out = model.output_projection
    rebuilt = t(tr["decoder_output"]) @ out.weight.double().T + out.bias.double()  # (T, D) -> (T, V)
    src, ys_in = torch.tensor([tr["src_ids"]]), torch.tensor([[BOS] + tr["tgt_ids"][:-1]])
    with torch.no_grad():
        forced = model(src, ys_in)[0].double()  # the model's forward, teacher-forced: (T, V)
    torch.testing.assert_close(rebuilt, forced, rtol=0, atol=TOL)  # only the trace's rounding apart
    # and the logits greedy decoding computed, one token at a time through the cache: another order of the
    # same sums, so equal as chapter 12 and tests/test_decoding.py check it (rtol as well)
    own = _greedy_step_logits(model, tr["src_ids"], tr["tgt_ids"]).double()
    torch.testing.assert_close(rebuilt, own, rtol=TOL, atol=TOL)
    assert rebuilt.argmax(-1).tolist() == tr["tgt_ids"]  # greedy chose the most probable token
    probs = torch.softmax(rebuilt, -1)
    p, top = probs.topk(TOP_K, dim=-1)
    itos = explain._shipped(key)[1].tgt_vocab.itos
    for row, ps, ids, token in zip(tr["steps"], p.tolist(), top.tolist(), tr["tgt_tokens"]):
        assert [w for w, _ in row] == [itos[j] for j in ids]
        assert [q for _, q in row] == pytest.approx(ps, abs=TOL)
        assert row[0][0] == token


@pytest.mark.parametrize("key,i", CASES)
def test_the_logit_lens_reads_each_decoder_layer_through_the_output_projection(key, i):
    """Each layer's lens is the top k of its output (norm3's, from the trace) through the output projection; the
    last layer's is the model's own next-token choice (``steps``), and the lens has one entry per layer."""
    tr = case(key, i)
    model = _model(key)
    out, itos = model.output_projection, explain._shipped(key)[1].tgt_vocab.itos
    assert model.decoder.norm is None  # the shipped translators are Post-LN: the lens reads norm3's output as it is
    assert len(tr["logit_lens"]) == tr["config"]["num_decoder_layers"] and tr["logit_lens"][-1] == tr["steps"]
    for layer, lens in zip(tr["decoder"], tr["logit_lens"]):
        logits = t(layer["norm3"]["output"]) @ out.weight.double().T + out.bias.double()  # (T, D) -> (T, V)
        p, top = torch.softmax(logits, -1).topk(TOP_K, dim=-1)
        assert len(lens) == len(tr["tgt_tokens"])
        for row, ps, ids in zip(lens, p.tolist(), top.tolist()):
            assert [w for w, _ in row] == [itos[j] for j in ids]
            assert [q for _, q in row] == pytest.approx(ps, abs=TOL)


@pytest.mark.parametrize("key", KEYS)
def test_the_trace_translates_as_the_box_does(key):
    model, data = explain._shipped(key)
    for text in sentences(key):
        tr, box = traced(key, text), translation_details(model, data, text, beam_size=1)
        assert tr["src_tokens"] == box["words"] and tr["unknown"] == box["unknown"]
        assert tr["tgt_ids"] == box["greedy"]
        assert tr["tgt_tokens"] == [data.tgt_vocab.itos[j] for j in box["greedy"]]
        for mine, theirs in zip(tr["steps"], box["steps"]):
            assert [w for w, _ in mine] == [w for w, _ in theirs]
            assert [q for _, q in mine] == pytest.approx([q for _, q in theirs], abs=TOL)
    assert "<unk>" not in traced(key, EXTRA)["src_tokens"] and traced(key, EXTRA)["unknown"] == ["zyzzyvas"]


@pytest.mark.parametrize("key", KEYS)
def test_k_sets_the_candidates_and_the_trace_leaves_no_hook_behind(key):
    tr = traced(key, sentences(key)[0], k=1)
    assert all(len(row) == 1 for row in tr["steps"])
    assert [row[0][0] for row in tr["steps"]] == tr["tgt_tokens"]
    assert all(len(row) == 1 for layer in tr["logit_lens"] for row in layer)
    assert {name: v for name, v in tr.items() if name not in ("k", "steps", "logit_lens")} == \
        {name: v for name, v in traced(key, sentences(key)[0]).items() if name not in ("k", "steps", "logit_lens")}
    model = _model(key)
    assert not any(m._forward_hooks for m in model.modules())


def numbers(x) -> int:
    """How many numbers (floats and ints) a trace's nested lists and dicts hold."""
    if isinstance(x, bool):
        return 0
    if isinstance(x, (int, float)):
        return 1
    if isinstance(x, list):
        return sum(map(numbers, x))
    return sum(map(numbers, x.values())) if isinstance(x, dict) else 0


def expected_numbers(c: dict, S: int, T: int) -> int:
    """The count the module's docstring gives for the arrays of a trace."""
    D, H, F = c["d_model"], c["nhead"], c["dim_feedforward"]

    def attention(q, k):  # weights, scores, scaled (H, q, k); mask (q, k); q, heads, output (q, D); k, v (k, D)
        return 3 * H * q * k + q * k + 3 * q * D + 2 * k * D

    encoder_layer = attention(S, S) + 4 * S * D + S * (F + D)
    decoder_layer = attention(T, T) + attention(T, S) + 6 * T * D + T * (F + D)
    return 4 * (S + T) * D + c["num_encoder_layers"] * encoder_layer + c["num_decoder_layers"] * decoder_layer


ARRAYS = ("embedding", "target_embedding", "encoder", "memory", "decoder", "decoder_output")
BYTES_PER_NUMBER = 13  # "-123.456789, ": 6 decimals, a score in the hundreds


@pytest.mark.parametrize("key", KEYS)
def test_the_trace_is_json_and_its_size_is_bounded(key):
    sizes = []
    longest = trace(key, " ".join(["apple"] * 64))  # the most words the box reads
    for tr in [traced(key, text) for text in sentences(key)] + [longest]:
        text_json = json.dumps(tr, allow_nan=False)  # no NaN, no -inf: the masked scores are not written
        assert json.loads(text_json) == tr
        S, T = len(tr["src_ids"]), len(tr["tgt_ids"])
        n = numbers({name: tr[name] for name in ARRAYS})
        assert n == expected_numbers(tr["config"], S, T)
        size = len(text_json.encode())
        pairs = 40 * T * TOP_K * (1 + len(tr["logit_lens"]))  # the top-k pairs, a token and a float: steps and lens
        assert size <= BYTES_PER_NUMBER * n + pairs + 2_000
        sizes.append(size)
    assert max(sizes[:-1]) < {"grammar": 600_000, "real": 1_500_000}[key], sizes  # typical sentences
    c, model = longest["config"], _model(key)
    worst = (BYTES_PER_NUMBER * expected_numbers(c, model.max_len, MAX_NEW_TOKENS)
             + 40 * MAX_NEW_TOKENS * TOP_K * (1 + c["num_decoder_layers"]) + 2_000)
    assert sizes[-1] <= worst <= MAX_JSON_BYTES
    floats = [v for row in case(key, 0)["memory"] for v in row]
    assert all(round(v, DECIMALS) == v for v in floats)


@pytest.mark.parametrize("kwargs,kind,words", [
    (dict(key="french", text="hello"), ValueError, "key"),
    (dict(key=1, text="hello"), TypeError, "key"),
    (dict(key="grammar", text=b"hello"), TypeError, "text"),
    (dict(key="grammar", text=None), TypeError, "text"),
    (dict(key="grammar", text=""), ValueError, "text"),
    (dict(key="real", text="   "), ValueError, "text"),
    (dict(key="grammar", text="apple " * 65), ValueError, "text has 65 words"),
    (dict(key="grammar", text="hello", k=0), ValueError, "k"),
    (dict(key="grammar", text="hello", k=2.0), TypeError, "k"),
    (dict(key="grammar", text="hello", k=True), TypeError, "k"),
])
def test_bad_input_names_the_argument(kwargs, kind, words):
    with pytest.raises(kind, match=words):
        trace(**kwargs)


def test_the_records_are_the_traces_tensors_and_refuse_bad_input():
    """record_encoder / record_decoder (what the browser's explainer graphs are exported from) hold the trace's
    numbers as tensors, flat() names them by their paths, and bad input names the argument."""
    key, text = "grammar", sentences("grammar")[0]
    tr, model = traced(key, text), _model(key)
    src, ys_in = torch.tensor([tr["src_ids"]]), torch.tensor([[BOS] + tr["tgt_ids"][:-1]])
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            enc = explain.record_encoder(model, src)
            dec = explain.record_decoder(model, enc["memory"][None], src, ys_in)
    finally:
        model.train(was_training)
    names = dict(explain.flat(enc) + explain.flat(dec))
    assert "encoder.0.attention_steps.q" in names and "decoder.1.norm3.output" in names and "logits" in names
    lens = [names[f"logit_lens.{i}"] for i in range(len(tr["decoder"]))]  # one (T, V) per decoder layer
    torch.testing.assert_close(lens[-1], names["logits"])
    assert names["encoder.0.attention_steps.mask"].dtype == torch.int32  # the browser gets 0/1 integers
    for name, value in names.items():
        if name == "logits" or name.startswith("logit_lens."):  # the trace keeps their top k (the lens's test)
            continue
        node = tr
        for part in name.split("."):
            node = node[int(part)] if part.isdigit() else node[part]
        torch.testing.assert_close(t(node), value.double(), rtol=0, atol=TOL, msg=name)
    with pytest.raises(TypeError, match="model"):
        explain.record_encoder("grammar", src)
    with pytest.raises(TypeError, match="src"):
        explain.record_encoder(model, src.float())
    with pytest.raises(ValueError, match="src"):
        explain.record_encoder(model, src[0])
    with pytest.raises(TypeError, match="ys_in"):
        explain.record_decoder(model, enc["memory"][None], src, [[BOS]])
    with pytest.raises(ValueError, match="memory"):
        explain.record_decoder(model, enc["memory"], src, ys_in)
    with pytest.raises(TypeError, match="record"):
        explain.flat(torch.zeros(2))
    with pytest.raises(TypeError, match="record"):
        explain.flat({"a": 1.0})
    with pytest.raises(TypeError, match="model"):
        explain.config_of(None)
    assert explain.config_of(model) == tr["config"]


def test_a_head_switched_off_adds_nothing_and_can_change_the_translation():
    """heads_off zeroes the head's slice of what W_O reads: the layer's attention output is W_O applied to the other
    heads' outputs alone (rebuilt here from the trace's heads and the weights); with every cross-attention head off
    the decoder cannot read the source, so two different sentences get one translation; the hooks go afterwards."""
    key, text, other = "grammar", "she eats rice at school today", "we have two old books"
    model = _model(key)
    H, D_h = model.config.nhead, model.config.d_model // model.config.nhead
    base, off = trace(key, text), trace(key, text, heads_off=[("encoder", 0, 1)])
    assert "heads_off" not in base and off["heads_off"] == [["encoder", 0, 1]]
    steps = off["encoder"][0]["attention_steps"]
    heads = t(steps["heads"])  # (H, S, D_h): the head still computes its output...
    concat = heads.permute(1, 0, 2).reshape(heads.shape[1], H * D_h).clone()  # (S, H D_h)
    concat[:, D_h:2 * D_h] = 0  # ... which W_O no longer reads
    w_o = model.encoder.layers[0].self_attn.out_proj
    torch.testing.assert_close(t(steps["output"]), concat @ w_o.weight.double().T + w_o.bias.double(),
                               rtol=0, atol=TOL * 10)
    assert off["encoder"][0]["attention_steps"]["output"] != base["encoder"][0]["attention_steps"]["output"]
    blind = [("cross", layer, h) for layer in range(model.config.num_decoder_layers) for h in range(H)]
    assert trace(key, text)["tgt_tokens"] != trace(key, other)["tgt_tokens"]
    assert trace(key, text, heads_off=blind)["tgt_tokens"] == trace(key, other, heads_off=blind)["tgt_tokens"]
    assert not any(m._forward_pre_hooks for m in model.modules())


@pytest.mark.parametrize("heads_off,kind,words", [
    ("encoder", TypeError, "heads_off must be a list"),
    ([("encoder", 0)], TypeError, "triples"),
    ([("encoder", 0, True)], TypeError, "triples"),
    ([("decoder", 0, 0)], ValueError, "no head of this model"),
    ([("encoder", 2, 0)], ValueError, "layer 0..1"),
    ([("cross", 0, 4)], ValueError, "head 0..3"),
])
def test_heads_off_names_bad_input(heads_off, kind, words):
    with pytest.raises(kind, match=words):
        trace("grammar", "i have a cat", heads_off=heads_off)
