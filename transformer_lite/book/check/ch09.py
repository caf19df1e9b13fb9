"""Checks of chapter 9's exercises (the decoder): transformer_lite.book.check."""
from __future__ import annotations

import torch

import transformer_lite as tl

from ..i18n import N_, tr
from . import Wrong, call, close, exercise, number, tensor

_D, _H, _D_FF, _V = 512, 8, 2048, 37_000


def _decoder_counts(D=_D, d_ff=_D_FF):
    attention, ffn, norm = 4 * (D * D + D), 2 * D * d_ff + d_ff + D, 2 * D
    return {"right": 2 * attention + ffn + 3 * norm,
            "encoder layer": attention + ffn + 2 * norm,
            "two LayerNorms": 2 * attention + ffn + 2 * norm,
            "no biases": 2 * 4 * D * D + 2 * D * d_ff + 3 * norm}


@exercise("9.1", wrong=[lambda: (_decoder_counts()["encoder layer"],), lambda: (_decoder_counts()["two LayerNorms"],),
                         lambda: (_decoder_counts()["no biases"],)])
def exercise_9_1(my_count):
    with torch.device("meta"):
        expected = tl.count_parameters(tl.DecoderLayer(_D, _H, dim_feedforward=_D_FF))
    assert expected == _decoder_counts()["right"]
    hints = {"encoder layer": tr("that is an ENCODER layer: the decoder layer has a second attention block "
                                 "(cross-attention) with its own Add & Norm."),
             "two LayerNorms": tr("three sub-layers, three Add & Norms: 3 LayerNorms of 2D parameters each."),
             "no biases": tr("every Linear layer has a bias: D per attention projection, d_ff + D in the FFN.")}
    try:
        mistake = next((k for k, v in _decoder_counts().items() if k != "right" and v == int(my_count)), None)
    except (TypeError, ValueError):
        mistake = None
    number(my_count, expected, "my_count", rel=0, abs_=0.5,
           hint=hints.get(mistake, tr("two attention blocks 2·4(D² + D), the FFN 2·D·d_ff + d_ff + D, three "
                                      "LayerNorms 3·2D.")))
    return tr("one decoder layer of the base model has {expected:,} parameters (= tl.DecoderLayer(512, 8)).",
              expected=expected)


def _as_shape(answer, name):
    try:
        return tuple(int(n) for n in answer)
    except (TypeError, ValueError):
        raise Wrong(tr("{name} should be a tuple of ints, like (2, 3), got {answer!r}.",
                       name=name, answer=answer)) from None


@exercise("9.2", wrong=[lambda: ((2, 10, 37_000), (10, 37_000)),        # "W_vocab is n x vocab"
                         lambda: ((2, 10, 37_000), (37_000, 512)),       # nn.Linear's storage, not the math's W
                         lambda: ((2, 10, 512), (512, 37_000))])
def exercise_9_2(my_logits_shape, my_W_shape):
    B, T = 2, 10
    with torch.device("meta"):
        base = tl.Transformer(_V, _V, d_model=_D, nhead=_H, dim_feedforward=_D_FF)
        logits = base.output_projection(torch.empty(B, T, _D))
    expected_logits, expected_W = tuple(logits.shape), tuple(base.output_projection.weight.T.shape)
    got_logits, got_W = _as_shape(my_logits_shape, "my_logits_shape"), _as_shape(my_W_shape, "my_W_shape")
    if got_logits != expected_logits:
        raise Wrong(tr("my_logits_shape {got_logits} is not the shape of the logits for B = {B}, T = {T}.",
                       got_logits=got_logits, B=B, T=T),
                    hint=tr("one score per vocabulary word, at every position of every sentence: (B, T, V)."))
    if got_W != expected_W:
        if got_W == (T, _V):
            hint = (tr("T × V is the shape of one sentence's LOGITS, not of the weight: the same W serves every "
                       "sentence length, so T cannot be one of its dimensions."))
        elif got_W == expected_W[::-1]:
            hint = (tr("(V, D) is how nn.Linear STORES its weight (output features first); in logits = h W + b, "
                       "with h of width D, W is its transpose."))
        else:
            hint = tr("W maps each position's D-vector to V scores: h (1 × D) times W must give 1 × V.")
        raise Wrong(tr("my_W_shape {got_w} is not the shape of W in logits = h W + b.", got_w=got_W), hint=hint)
    return tr("logits {expected_logits} = h (B, T, D) @ W {expected_w} + b (V,): W is D × V, whatever T is.",
              expected_logits=expected_logits, expected_w=expected_W)


def _layer_and_inputs():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = tl.DecoderLayer(d_model=8, nhead=2, dim_feedforward=32, dropout=0.0).eval()
        y, memory = torch.randn(1, 6, 8), torch.randn(1, 4, 8)  # T = 6 target positions, S = 4 source words
    return layer, y, memory, tl.causal_mask(6)


def _q_from_layer_input(layer, y, memory, tgt_mask):  # "Q comes from the previous decoder block"
    return layer.multihead_attn(y, memory, memory)[0]


def _q_before_norm(layer, y, memory, tgt_mask):
    return layer.multihead_attn(y + layer.self_attn(y, y, y, attn_mask=tgt_mask)[0], memory, memory)[0]


def _self_attention_again(layer, y, memory, tgt_mask):
    x1 = layer.norm1(y + layer.self_attn(y, y, y, attn_mask=tgt_mask)[0])
    return layer.multihead_attn(x1, x1, x1)[0]


@exercise("9.3", wrong=[lambda: (_q_from_layer_input,), lambda: (_q_before_norm,), lambda: (_self_attention_again,)])
def exercise_9_3(my_cross_attention):
    layer, y, memory, tgt_mask = _layer_and_inputs()
    seen = {}

    def record(module, args, out):  # a forward hook that returns None leaves the output as it is
        seen["out"] = out[0]

    hook = layer.multihead_attn.register_forward_hook(record)
    try:
        with torch.no_grad():
            layer(y, memory, tgt_mask=tgt_mask)  # the package's own forward: record what cross-attention returned
    finally:
        hook.remove()
    with torch.no_grad():
        got = call(my_cross_attention, layer, y, memory, tgt_mask,
                   name="my_cross_attention(layer, y, memory, tgt_mask)")
    got = tensor(got, "my_cross_attention(layer, y, memory, tgt_mask)", tuple(seen["out"].shape))
    close(got, seen["out"], "my_cross_attention(layer, y, memory, tgt_mask)",
          hint=tr("the query is x1 = norm1(y + self_attn(y, y, y, attn_mask=tgt_mask)), the output of THIS layer's "
                  "first sub-layer (after its Add & Norm), not y; keys and values are the memory."))
    return tr("your cross-attention output equals what DecoderLayer's own cross-attention computed (hooked).")


@exercise("9.4", wrong=[lambda: (1.0,), lambda: (0.37,)])
def exercise_9_4(my_change):
    layer, y, memory, tgt_mask = _layer_and_inputs()
    perm = torch.tensor([2, 0, 3, 1])
    with torch.no_grad():
        expected = (layer(y, memory[:, perm], tgt_mask=tgt_mask) - layer(y, memory, tgt_mask=tgt_mask)).abs().max()
    number(my_change, float(expected), "my_change", rel=0, abs_=1e-5,
           hint=tr("shuffle the ROWS of the memory (dimension 1) and compare the two outputs of layer; think of what "
                   "a weighted sum does when its terms are reordered along with their weights."))
    return tr("shuffling the memory's rows changes the decoder's output by no more than float rounding.")


def suspect_decoder_layer(layer):
    """Exercise 9.5's suspect: a copy of ``layer`` (same weights) with one silent bug."""
    from transformer_lite import pitfalls

    return pitfalls.decoder_layer_ignoring_source_padding(layer)


_PROMISES = {"source": N_("every target position sees every source word"),
             "causal": N_("no target position sees a later target position"),
             "padding": N_("masked source padding changes nothing")}


def _padding_test(layer, y, memory):
    padded = torch.cat([memory, torch.randn(memory.shape[0], 3, memory.shape[2])], dim=1)
    pad = torch.zeros(padded.shape[:2], dtype=torch.bool)
    pad[:, memory.shape[1]:] = True
    mask = tl.causal_mask(y.shape[1])
    out = layer(y, padded, tgt_mask=mask, memory_key_padding_mask=pad)
    return torch.allclose(out, layer(y, memory, tgt_mask=mask), atol=1e-5)


@exercise("9.5", wrong=[lambda: ("causal", _padding_test), lambda: ("source", _padding_test),
                         lambda: ("padding", lambda layer, y, memory: True),
                         lambda: ("padding", lambda layer, y, memory: False)])
def exercise_9_5(my_diagnosis, my_test):
    if not isinstance(my_diagnosis, str) or my_diagnosis.strip().lower() not in _PROMISES:
        raise Wrong(tr("my_diagnosis should be one of {promises}, got {my_diagnosis!r}.",
                       promises=sorted(_PROMISES), my_diagnosis=my_diagnosis))
    layer, y, memory, _ = _layer_and_inputs()
    suspect = suspect_decoder_layer(layer)
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(1)
        verdicts = {name: call(my_test, m, y, memory, name="my_test(layer, y, memory)")
                    for name, m in (("right", layer), ("suspect", suspect))}
    for name, v in verdicts.items():
        if not isinstance(v, (bool, torch.Tensor)) or (isinstance(v, torch.Tensor) and v.numel() != 1):
            shown = tr("a correct DecoderLayer") if name == "right" else tr("the suspect")
            raise Wrong(tr("my_test should return True or False, got {v!r} for {name}.", v=v, name=shown))
    if not bool(verdicts["right"]):
        raise Wrong(tr("my_test fails a correct DecoderLayer: a test must pass the right layer."),
                    hint=tr("compare two outputs with torch.allclose(..., atol=1e-5), not torch.equal: "
                            "dropping keys changes the float rounding a little."))
    if bool(verdicts["suspect"]):
        raise Wrong(tr("my_test passes the suspect: it does not catch the bug."),
                    hint=tr("the suspect is right on a sentence without padding: give it padded source positions."))
    if my_diagnosis.strip().lower() != "padding":
        raise Wrong(tr("your test catches the suspect, but the broken promise is not {my_diagnosis!r}.",
                       my_diagnosis=my_diagnosis),
                    hint=tr("run the three experiments of 'What each position may see' on the suspect: which one "
                            "fails?"))
    return (tr("the suspect's cross-attention ignores memory_key_padding_mask: it reads the padding vectors. "
               "Without padding it is exactly right, which is why the bug is silent."))
