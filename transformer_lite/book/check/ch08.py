"""Checks of chapter 8's exercises (the encoder): transformer_lite.book.check."""
from __future__ import annotations

import torch

import transformer_lite as tl

from ..i18n import tr
from . import Wrong, call, close, exercise, number, tensor

PAD = 0
_D, _H, _D_FF = 512, 8, 2048


def _head_weights(x):
    """The (S, S) weights of head 0 of a fixed, untrained self-attention for vectors x (S, D), no positions."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        attn = tl.MultiHeadAttention(16, 4).eval()
    with torch.no_grad():
        return attn(x[None], x[None], x[None])[1][0, 0]


@exercise("8.1", wrong=[lambda: (lambda w, perm: w[perm],),           # rows moved, columns not
                        lambda: (lambda w, perm: w[:, perm],),        # columns moved, rows not
                        lambda: (lambda w, perm: w,)])                # "the weights do not change"
def exercise_8_1(my_permuted_weights):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 16, generator=g)  # six token vectors, no positional encoding
    w = _head_weights(x)
    for perm in (torch.tensor([5, 4, 3, 2, 1, 0]), torch.randperm(6, generator=g)):
        got = call(my_permuted_weights, w.clone(), perm, name="my_permuted_weights(w, perm)")
        close(got, _head_weights(x[perm]), "my_permuted_weights(w, perm)",
              hint=tr("the weights of the shuffled sentence at (i, j) belong to the words perm[i] (the query) and "
                      "perm[j] (the key) of the original: both the rows and the columns move."))
    return tr("the shuffled sentence's weights are w[perm][:, perm] = P A Pᵀ, measured on an attention head.")


def _layer_and_inputs():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = tl.EncoderLayer(16, 4, dim_feedforward=32, dropout=0.0).eval()
        x = torch.randn(2, 5, 16)
    pad = torch.tensor([[False, False, False, True, True], [False] * 5])
    return layer, x, pad


def _pre_ln(x, layer, pad):
    h = layer.norm1(x)
    a = x + layer.self_attn(h, h, h, key_padding_mask=pad)[0]
    return a + layer.ff(layer.norm2(a))


def _no_mask(x, layer, pad):
    a = layer.norm1(x + layer.self_attn(x, x, x)[0])
    return layer.norm2(a + layer.ff(a))


def _no_residual(x, layer, pad):
    a = layer.norm1(layer.self_attn(x, x, x, key_padding_mask=pad)[0])
    return layer.norm2(layer.ff(a))


@exercise("8.2", wrong=[lambda: (_pre_ln,), lambda: (_no_mask,), lambda: (_no_residual,)])
def exercise_8_2(my_encoder_layer):
    layer, x, pad = _layer_and_inputs()
    with torch.no_grad():
        expected = layer(x, src_key_padding_mask=pad)
        got = call(my_encoder_layer, x, layer, pad, name="my_encoder_layer(x, layer, pad)")
    got = tensor(got, "my_encoder_layer(x, layer, pad)", tuple(expected.shape))
    real = ~pad  # the <pad> positions' outputs are never read
    close(got[real], expected[real], tr("my_encoder_layer(x, layer, pad) at the real tokens"),
          hint=tr("Post-LN, as the paper: a = norm1(x + self_attn(x, x, x, key_padding_mask=pad)), then "
                  "norm2(a + ff(a)). The attention module returns (output, weights)."))
    return tr("your layer equals tl.EncoderLayer on a padded (2, 5, 16) batch.")


def _gap_models():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = tl.Transformer(30, 30, d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=1,
                               dim_feedforward=32, dropout=0.0, positional="learned").eval()
        src = torch.randint(4, 30, (2, 7))
    perm = torch.tensor([1, 2, 3, 4, 5, 6, 0])  # a 7-cycle: its inverse is a different permutation
    return model, src, perm


@exercise("8.3", wrong=[lambda: (lambda enc, src, perm: (enc(src[:, perm]) - enc(src)).abs().max().item(),),
                        lambda: (lambda enc, src, perm:
                                 (enc(src[:, perm]) - enc(src)[:, perm.argsort()]).abs().max().item(),),
                        lambda: (lambda enc, src, perm: (enc(src[:, perm]) - enc(src)[:, perm]).abs().mean().item(),)])
def exercise_8_3(my_gap):
    model, src, perm = _gap_models()
    without_pe = lambda s: model.encoder(model.src_embed(s))  # noqa: E731
    with torch.no_grad():
        for label, enc in [(tr("without positions"), without_pe), (tr("with learned positions"), model.encode)]:
            expected = (enc(src[:, perm]) - enc(src)[:, perm]).abs().max().item()
            got = call(my_gap, enc, src, perm, name="my_gap(encode, src, perm)")
            number(got, expected, tr("my_gap for an encoder {label}", label=label), rel=1e-3, abs_=1e-5,
                   hint=tr("Enc(PX) is encode(src[:, perm]); P Enc(X) permutes the OUTPUT rows the same way: "
                           "encode(src)[:, perm]. Return the largest absolute difference."))
    return tr("your gap is ~0 without positions (equivariant) and clearly > 0 with learned positions.")


def _padded_batch():
    with torch.random.fork_rng():
        torch.manual_seed(1)
        model = tl.Transformer(30, 30, d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=1,
                               dim_feedforward=32, dropout=0.0).eval()
    ids = torch.tensor([[5, 6, 7, 8, PAD, PAD], [9, 10, 11, 12, 13, 14]])
    return model, ids, torch.tensor([4, 0, 5, 2, 1, 3])


@exercise("8.4", wrong=[lambda: (lambda model, ids, perm: model.encoder(
                            model.src_embed(ids[:, perm]), src_key_padding_mask=tl.padding_mask(ids, PAD)),),
                        lambda: (lambda model, ids, perm: model.encoder(model.src_embed(ids[:, perm])),)])
def exercise_8_4(my_encode_permuted):
    model, ids, perm = _padded_batch()
    with torch.no_grad():
        got = call(my_encode_permuted, model, ids, perm, name="my_encode_permuted(model, ids, perm)")
        reference = model.encoder(model.src_embed(ids), src_key_padding_mask=tl.padding_mask(ids, PAD))
    got = tensor(got, "my_encode_permuted(model, ids, perm)", tuple(reference.shape))
    real = ids[:, perm] != PAD
    close(got[real], reference[:, perm][real], tr("my_encode_permuted(...) at the real tokens, against P Enc(X)"),
          hint=tr("the padding mask belongs to the positions: permute it with the tokens (or build it from ids[:, "
                  "perm])."))
    return tr("Enc(PX) = P Enc(X) at every real token of a padded batch, with the padding mask permuted along.")


def _causal_changes(S=6, changed=3):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        enc = tl.Encoder(tl.EncoderLayer(16, 4, dim_feedforward=32, dropout=0.0), num_layers=2).eval()
        x = torch.randn(1, S, 16)
        x2 = x.clone()
        x2[0, changed] = torch.randn(16)
    with torch.no_grad():
        diff = (enc(x2, mask=tl.causal_mask(S)) - enc(x, mask=tl.causal_mask(S)))[0].abs().amax(-1)
    return [t for t in range(S) if diff[t] > 1e-5]


@exercise("8.5", wrong=[lambda: ([0, 1, 2, 3],), lambda: (list(range(6)),), lambda: ([4, 5],), lambda: ([3],)])
def exercise_8_5(my_positions):
    try:
        given = sorted({int(t) for t in my_positions})
    except (TypeError, ValueError):
        raise Wrong(tr("my_positions should be a list of positions (ints 0 to 5), got {my_positions!r}.",
                       my_positions=my_positions)) from None
    expected = _causal_changes()
    if given != expected:
        if given == list(range(6)):
            hint = tr("that is the encoder WITHOUT a mask; under the causal mask a position reads only keys j <= i.")
        elif any(t < 3 for t in given):
            hint = tr("the other way round: position i reads only the keys j <= i, so positions before 3 cannot see "
                      "it.")
        else:
            hint = tr("position 3 itself reads its own (changed) input; every later position reads it through "
                      "attention.")
        missing, extra = set(expected) - set(given), set(given) - set(expected)
        raise Wrong(tr("your list misses {n_missing} position(s) that change and holds {n_extra} that do not.",
                       n_missing=len(missing), n_extra=len(extra)),
                    hint=hint)
    return (tr("measured on an untrained two-layer encoder: only positions {expected} move under the causal mask "
               "(any weights: the mask alone decides it).", expected=expected))
