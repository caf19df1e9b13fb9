"""Checks of appendix C's exercises (pitfalls)."""
from __future__ import annotations

import math

import torch

import transformer_lite as tl

from . import Wrong, call, exercise, number

_DS = (2, 4, 64, 512)


@exercise("C.1", wrong=[lambda: (lambda D: math.sqrt(D / (D - 1)),),   # upside down
                        lambda: (lambda D: (D - 1) / D,),              # the ratio of variances, not of outputs
                        lambda: (lambda D: 1.0,)])
def exercise_C_1(my_factor):
    from transformer_lite import pitfalls

    g = torch.Generator().manual_seed(0)
    for D in _DS:
        c = call(my_factor, D, name="my_factor(D)")
        x = torch.randn(16, D, generator=g)
        measured = (pitfalls.layer_norm_unbiased_eps_outside(x, eps=0.0) / tl.layer_norm(x, eps=0.0)).mean().item()
        number(c, measured, f"my_factor({D})", rel=1e-4,
               hint="x.std() divides by D − 1; the right LayerNorm divides by D. Compare the two standard deviations, "
                    "and remember the output is divided by them (a ratio of square roots).")
    return "wrong LayerNorm = right LayerNorm × sqrt((D − 1)/D), checked for D = 2, 4, 64, 512."


def _invisible_pairs():
    pairs = []
    for H in range(1, 5):
        for T in range(1, 5):
            hx = torch.arange(H * T * 3, dtype=torch.float32).view(1, H, T, 3)
            from transformer_lite import pitfalls
            if torch.equal(tl.merge_heads(hx), pitfalls.merge_heads_without_transpose(hx)):
                pairs.append((H, T))
    return pairs


@exercise("C.2", wrong=[lambda: ([(1, 1)],),
                        lambda: ([(h, t) for h in range(1, 5) for t in range(1, 5)],),
                        lambda: ([(h, 1) for h in range(1, 5)],)])
def exercise_C_2(my_pairs):
    try:
        given = {tuple(int(v) for v in p) for p in my_pairs}
    except (TypeError, ValueError):
        raise Wrong(f"my_pairs should be a list of (H, T) pairs of ints, got {my_pairs!r}.") from None
    expected = set(_invisible_pairs())
    if given != expected:
        missing, extra = sorted(expected - given), sorted(given - expected)
        raise Wrong(f"{len(missing)} pair(s) missing and {len(extra)} pair(s) that do differ in your list "
                    f"(H and T from 1 to 4: 16 combinations).",
                    hint="compare tl.merge_heads and pitfalls.merge_heads_without_transpose with torch.equal for "
                         "every H, T in 1..4; then think about which transposes move nothing in memory.")
    return f"the wrong merge is invisible exactly when H = 1 or T = 1 ({len(expected)} of 16 combinations)."


@exercise("C.3", wrong=[lambda: (lambda keep: keep.bool(),),        # 1 = keep read as True = blocked
                        lambda: (lambda keep: keep == 1,),
                        lambda: (lambda keep: torch.triu(torch.ones_like(keep, dtype=torch.bool)),)])
def exercise_C_3(my_keep_to_bool):
    g = torch.Generator().manual_seed(0)
    masks = [torch.tril(torch.ones(6, 6)), (torch.rand(3, 5, generator=g) > 0.5).float()]
    for keep in masks:
        out = call(my_keep_to_bool, keep.clone(), name="my_keep_to_bool(keep)")
        if not isinstance(out, torch.Tensor) or out.dtype != torch.bool:
            raise Wrong(f"my_keep_to_bool should return a bool tensor (True = blocked), got "
                        f"{type(out).__name__ if not isinstance(out, torch.Tensor) else out.dtype}.")
        if out.shape != keep.shape:
            raise Wrong(f"my_keep_to_bool(keep) should keep the shape {tuple(keep.shape)}, got {tuple(out.shape)}.")
        if not torch.equal(out, tl.keep_to_bool(keep.long())):
            raise Wrong("your mask blocks the wrong positions.",
                        hint="in the tutorial's mask 1 means 'may attend'; in nn.MultiheadAttention and this book "
                             "True means 'may NOT attend'. The conversion is a negation.")
    q = torch.randn(2, 6, 8, generator=g)
    out, _ = tl.scaled_dot_product_attention(q, q, q, attn_mask=call(my_keep_to_bool, torch.tril(torch.ones(6, 6))))
    ref, _ = tl.scaled_dot_product_attention(q, q, q, attn_mask=tl.causal_mask(6))
    if not torch.allclose(out, ref):
        raise Wrong("with your mask the attention is not causal.")
    return "your conversion turns the tutorial's tril mask into tl.causal_mask (and works on any 1 = keep mask)."


@exercise("C.4", wrong=[lambda: (0.99,), lambda: (0.1,), lambda: (0.9,)])
def exercise_C_4(my_momentum):
    number(my_momentum, 0.01, "my_momentum", rel=1e-6, abs_=1e-9,
           hint="Keras: running = momentum·running + (1 − momentum)·batch. PyTorch: running = (1 − momentum)·running "
                "+ momentum·batch. Match the weight each gives the NEW batch.")
    bn = torch.nn.BatchNorm1d(2, momentum=float(my_momentum))
    x = torch.randn(8, 2, generator=torch.Generator().manual_seed(0))
    bn(x)
    torch.testing.assert_close(bn.running_mean, 0.99 * torch.zeros(2) + 0.01 * x.mean(0))
    return "PyTorch's momentum = 1 − Keras' momentum: nn.BatchNorm1d(momentum=0.01) updates like Keras' 0.99."
