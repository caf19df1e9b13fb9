"""Checks of chapter 11's exercises (transformer_lite.book.check): Pre-LN vs Post-LN."""
import torch

import transformer_lite as tl

from ..i18n import tr
from . import Wrong, call, close, exercise, number, tensor

# ---- 7.1 Count the LayerNorms --------------------------------------------------------------------------------

def _count_layer_norms(norm_first):
    model = tl.Transformer(16, 16, d_model=32, nhead=4, num_encoder_layers=6, num_decoder_layers=6,
                           dim_feedforward=64, norm_first=norm_first)
    return sum(isinstance(m, tl.LayerNorm) for m in model.modules())


@exercise("11.1", wrong=[lambda: (30, 30), lambda: (24, 26), lambda: (30, 31), lambda: (32, 30)])
def exercise_11_1(n_post, n_pre):
    post, pre = _count_layer_norms(False), _count_layer_norms(True)
    number(n_post, post, "n_post", rel=0, abs_=0.5,
           hint=tr("An encoder layer has two sub-layers and a decoder layer three (self-attention, cross-attention, "
                   "FFN); each sub-layer has one LayerNorm. Post-LN adds nothing at the end of the stacks."))
    number(n_pre, pre, "n_pre", rel=0, abs_=0.5,
           hint=tr("Pre-LN has the same LayerNorm per sub-layer, plus one final LayerNorm at the end of EACH stack "
                   "(encoder and decoder)."))
    return tr("right: Pre-LN has the same per-sub-layer LayerNorms plus one final LayerNorm per stack.")


# ---- 7.2 A Pre-LN encoder from its parts ---------------------------------------------------------------------

def _sa(layer, h):
    return layer.self_attn(h, h, h)[0]


def _post_ln_order(encoder, x):            # the paper's order, by mistake
    for layer in encoder.layers:
        x = layer.norm1(x + _sa(layer, x))
        x = layer.norm2(x + layer.ff(x))
    return encoder.norm(x)


def _no_final_norm(encoder, x):
    for layer in encoder.layers:
        x = x + _sa(layer, layer.norm1(x))
        x = x + layer.ff(layer.norm2(x))
    return x


def _no_residual(encoder, x):
    for layer in encoder.layers:
        x = _sa(layer, layer.norm1(x))
        x = layer.ff(layer.norm2(x))
    return encoder.norm(x)


@exercise("11.2", wrong=[lambda: (_post_ln_order,), lambda: (_no_final_norm,), lambda: (_no_residual,)])
def exercise_11_2(my_pre_ln_encoder):
    torch.manual_seed(7)
    encoder = tl.Encoder(tl.EncoderLayer(16, 4, 32, dropout=0.0, norm_first=True), 3, norm=tl.LayerNorm(16)).eval()
    with torch.no_grad():                  # LayerNorms that are not the identity, so mixing them up shows
        for m in encoder.modules():
            if isinstance(m, tl.LayerNorm):
                for p in m.parameters():
                    p.add_(0.3 * torch.randn(p.shape))
    x = torch.randn(2, 5, 16) * 2
    with torch.no_grad():
        out = call(my_pre_ln_encoder, encoder, x.clone(), name="my_pre_ln_encoder(encoder, x)")
        expected = encoder(x)
        mistakes = [(_post_ln_order(encoder, x), tr("this is the Post-LN order: LayerNorm(x + F(x))."),
                     tr("Pre-LN normalizes only the copy that enters the sub-layer: x = x + F(LayerNorm(x)).")),
                    (_no_final_norm(encoder, x), tr("the layers are right, but the stack's final LayerNorm is "
                                                    "missing."),
                     tr("A Pre-LN stack ends with one more LayerNorm: return encoder.norm(x).")),
                    (_no_residual(encoder, x), tr("the residual connection is missing."),
                     tr("Add the sub-layer's output to x: x = x + F(LayerNorm(x))."))]
    answer = tensor(out, "my_pre_ln_encoder(encoder, x)", tuple(expected.shape))
    for wrong_out, message, hint in mistakes:
        if torch.allclose(answer, wrong_out, atol=1e-5):
            raise Wrong(message, hint)
    close(out, expected, "my_pre_ln_encoder(encoder, x)", atol=1e-5,
          hint=tr("Per layer: x = x + SA(norm1(x)), then x = x + FF(norm2(x)), where SA(h) = layer.self_attn(h, h, "
                  "h)[0]; "
                  "after the last layer, the stack's final LayerNorm: encoder.norm(x)."))
    return tr("your Pre-LN encoder equals tl.Encoder(EncoderLayer(..., norm_first=True), 3, norm=LayerNorm).")


# ---- 11.3 How fast the climb grows ------------------------------------------------------------------------------

def _total(ratios):
    return ratios[max(ratios)] / ratios[min(ratios)]


def _linear_slope(ratios):
    return (ratios[max(ratios)] - ratios[min(ratios)]) / (max(ratios) - min(ratios))


def _root_of_deepest(ratios):
    return _total(ratios) ** (1 / max(ratios))


@exercise("11.3", wrong=[lambda: (_total,), lambda: (_linear_slope,), lambda: (_root_of_deepest,)])
def exercise_11_3(my_factor_per_layer):
    # made-up ratios with a known factor; the depths come in no particular order
    for ratios, factor in (({2: 3.0, 5: 24.0}, 2.0), ({4: 135.0, 1: 5.0, 3: 45.0}, 3.0)):
        got = call(my_factor_per_layer, dict(ratios), name="my_factor_per_layer(ratios)")
        number(got, factor, f"my_factor_per_layer({ratios})", rel=1e-6,
               hint=tr("if r(N) = c · a^N, the ratio of the deepest to the shallowest depth is a^(N_max − N_min): "
                       "take its (N_max − N_min)-th root."))
    return tr("right: the factor per added layer is (r(N_max) / r(N_min)) ** (1 / (N_max − N_min)).")


# ---- 7.4 Bug hunt: a Pre-LN layer that normalizes its highway ----------------------------------------------------

_FORMULAS = {"a": "x + F(LN(x))", "b": "LN(x) + F(LN(x))", "c": "LN(x + F(x))"}


@exercise("11.4", wrong=[lambda: ("a",), lambda: ("c",), lambda: ("d",)])
def exercise_11_4(my_formula):
    from ...pitfalls import pre_ln_normalizing_the_highway

    if not isinstance(my_formula, str) or my_formula.strip().lower().strip("()\"'") not in _FORMULAS:
        raise Wrong(tr("my_formula should be one of \"a\", \"b\", \"c\", got {my_formula!r}.", my_formula=my_formula),
                    "a: x + F(LN(x)) (Pre-LN), b: LN(x) + F(LN(x)), c: LN(x + F(x)) (Post-LN).")
    answer = my_formula.strip().lower().strip("()\"'")
    # the diagnosis, measured again with one layer's weights in both orders
    with torch.random.fork_rng():                          # leave the reader's random state alone
        torch.manual_seed(7)
        pre = tl.EncoderLayer(16, 4, 64, dropout=0.0, norm_first=True).eval()
        post = tl.EncoderLayer(16, 4, 64, dropout=0.0, norm_first=False).eval()
        x = 3 * torch.randn(2, 5, 16)
    post.load_state_dict(pre.state_dict())
    with torch.no_grad():
        out = pre_ln_normalizing_the_highway(pre, x)
        assert not torch.allclose(out, pre(x), atol=1e-4) and not torch.allclose(out, post(x), atol=1e-4)
    if answer == "a":
        raise Wrong(tr("it is not Pre-LN: with the same weights its output differs from "
                       "EncoderLayer(norm_first=True)."),
                    tr("Follow the RMS of the highway through 24 such layers: does it grow, as Pre-LN's does?"))
    if answer == "c":
        raise Wrong(tr("it is not Post-LN: with the same weights its output differs from "
                       "EncoderLayer(norm_first=False), "
                       "and its output's RMS is not 1."), tr("Print the RMS of its output after a few layers."))
    return (tr("right: the normalized copy replaced the highway, so each sub-layer computes LN(x) + F(LN(x)): "
               "the highway is reset before every addition, and neither keeps its input nor ends normalized."))
