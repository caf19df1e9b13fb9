"""Checks of chapter 15's exercises (since 2017): transformer_lite.book.check."""
from __future__ import annotations

import math

import torch

from transformer_lite import modern

from . import Wrong, call, exercise


def _rms_wrong(kind):
    def norm(x, weight, eps):
        if kind == "layernorm":  # subtracts the mean: that is LayerNorm
            x = x - x.mean(dim=-1, keepdim=True)
            return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
        if kind == "eps_outside":
            return x / (torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + eps) * weight
        if kind == "no_weight":
            return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
        return x / torch.sqrt(x.pow(2).sum(dim=-1, keepdim=True) + eps) * weight  # sum instead of mean
    return norm


@exercise("15.1", wrong=[lambda: (_rms_wrong("layernorm"),), lambda: (_rms_wrong("eps_outside"),),
                         lambda: (_rms_wrong("no_weight"),), lambda: (_rms_wrong("sum"),)])
def exercise_15_1(my_rms_norm):
    g = torch.Generator().manual_seed(0)
    for shape, eps in [((3, 8), 1e-6), ((2, 4, 16), 0.5)]:
        x = torch.randn(*shape, generator=g) * 0.3 + 0.7  # a mean far from 0, small values: eps matters
        weight = torch.rand(shape[-1], generator=g) + 0.5
        got = call(my_rms_norm, x.clone(), weight.clone(), eps, name="my_rms_norm(x, weight, eps)")
        if not isinstance(got, torch.Tensor) or got.shape != x.shape:
            raise Wrong(f"my_rms_norm should return a tensor of shape {tuple(x.shape)}, got "
                        f"{type(got).__name__} {tuple(getattr(got, 'shape', ()))}.")
        expected = modern.rms_norm(x, weight, eps)
        if not torch.allclose(got.float(), expected, atol=1e-5):
            centred = x - x.mean(dim=-1, keepdim=True)
            if torch.allclose(got.float(), modern.rms_norm(centred, weight, eps), atol=1e-5):
                hint = "you subtracted the mean: that is LayerNorm. RMSNorm divides x itself by its root mean square."
            elif torch.allclose(got.float(), modern.rms_norm(x, None, eps), atol=1e-5):
                hint = "multiply by the gain (weight), feature by feature."
            else:
                hint = ("divide by sqrt(mean of x² over the last dimension + eps): eps inside the root, "
                        "the mean (not the sum) of the squares.")
            raise Wrong(f"my_rms_norm differs from RMSNorm on an input of shape {tuple(x.shape)} (eps={eps}).",
                        hint=hint)
    return "your RMSNorm equals modern.rms_norm (and so nn.RMSNorm)."


@exercise("15.2", wrong=[lambda: (lambda B, T, N, H, D, b: B * T * N * H * D * b,),
                         lambda: (lambda B, T, N, H, D, b: 2 * B * T * H * D * b,),
                         lambda: (lambda B, T, N, H, D, b: 2 * B * T * N * H * D * b * 8,)])
def exercise_15_2(my_kv_cache_bytes):
    cases = [(1, 4096, 32, 32, 128, 2), (8, 4096, 32, 8, 128, 2), (1, 32768, 24, 2, 64, 2), (3, 20, 4, 1, 8, 4)]
    dtypes = {2: torch.float16, 4: torch.float32}
    for B, T, N, H, D, b in cases:
        expected = modern.kv_cache_bytes(B, T, N, H, D, dtypes[b])
        got = call(my_kv_cache_bytes, B, T, N, H, D, b, name=f"my_kv_cache_bytes{(B, T, N, H, D, b)}")
        try:
            got = int(got)
        except (TypeError, ValueError):
            raise Wrong(f"my_kv_cache_bytes should return a whole number of bytes, got {type(got).__name__}.") from None
        if got != expected:
            if got * 2 == expected:
                hint = "the cache holds keys and values: two tensors."
            elif got == 8 * expected:
                hint = "bytes, not bits: a 16-bit number takes 2 bytes."
            else:
                hint = "multiply: 2 (K and V) x batch x tokens x layers x KV heads x head width x bytes per number."
            raise Wrong(f"my_kv_cache_bytes{(B, T, N, H, D, b)} = {got:,}, expected {expected:,}.", hint=hint)
    return "your formula gives the cache sizes of this chapter: 512 KiB per token for Llama 2 7B, 12 KiB for Qwen2.5-0.5B."


def _merge_right(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


@exercise("15.3", wrong=[lambda: (lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2),),
                         lambda: (lambda m1, l1, m2, l2: (max(m1, m2), l1 * math.exp(max(m1, m2) - m1)
                                                          + l2 * math.exp(max(m1, m2) - m2)),),
                         lambda: (lambda m1, l1, m2, l2: (m1 + m2, l1 * l2),)])
def exercise_15_3(my_merge):
    g = torch.Generator().manual_seed(3)
    for _ in range(4):
        s = torch.randn(10, generator=g, dtype=torch.float64) * 4
        a, b = s[:6], s[6:]
        m1, l1 = a.max().item(), torch.exp(a - a.max()).sum().item()
        m2, l2 = b.max().item(), torch.exp(b - b.max()).sum().item()
        got = call(my_merge, m1, l1, m2, l2, name="my_merge(m1, l1, m2, l2)")
        try:
            m, l = (float(v) for v in got)
        except (TypeError, ValueError):
            raise Wrong(f"my_merge should return a pair (m, l), got {got!r}.") from None
        m_true, l_true = s.max().item(), torch.exp(s - s.max()).sum().item()
        if abs(m - m_true) > 1e-9:
            raise Wrong(f"m = {m:.4f}, but the maximum of all the scores is {m_true:.4f}.",
                        hint="the merged maximum is the larger of the two maxima.")
        if abs(l - l_true) > 1e-9 * max(1.0, l_true):
            hint = ("each sum was taken with its own maximum: multiply l1 by exp(m1 - m) and l2 by exp(m2 - m), "
                    "which are at most 1.")
            raise Wrong(f"l = {l:.6f}, but the sum of exp(s - m) over all the scores is {l_true:.6f}.", hint=hint)
    return "your merge is the online softmax's step: FlashAttention does it for every tile."
