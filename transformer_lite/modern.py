"""The pieces of today's block (issue 23, "Since 2017"), each checked against the 2017 block it replaces.

* :class:`RMSNorm` — chapter 5's LayerNorm without the mean and without beta (Zhang & Sennrich, 2019).
* :func:`rotary` — RoPE: chapter 2's rotation M_k applied to q and k (Su et al., 2021).
* :class:`SwiGLU` — the FFN with a gate, sized by :func:`llama_ffn_dim` (Shazeer, 2020).
* :class:`GroupedQueryAttention`, :func:`kv_cache_bytes` — heads sharing keys and values (GQA, MQA).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ._checks import check_number, check_positive_int, check_tensor
from .language_models import rotary  # RoPE: one implementation, shared with chapter 14


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """RMSNorm(x) = x / sqrt(mean(x^2) + eps) * gamma: LayerNorm with the mean taken as 0 and no beta.

    Shape: x (..., D) -> (..., D).
    """
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1): root mean square over D
    y = x / rms
    return y if weight is None else y * weight


class RMSNorm(nn.Module):
    """``nn.RMSNorm(d_model, eps)`` with the formula in plain sight (see :func:`rms_norm`).

    Shape: x (..., D) -> (..., D). gamma (``weight``) starts at 1; ``elementwise_affine=False`` drops it.
    Unlike ``nn.RMSNorm`` the eps must be given (no dtype-dependent default).
    """

    def __init__(self, d_model: int, eps: float = 1e-6, elementwise_affine: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.d_model, self.eps = d_model, check_number("eps", eps, positive=True)
        self.register_parameter("weight", nn.Parameter(torch.ones(d_model)) if elementwise_affine else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.d_model)
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


def llama_ffn_dim(d_model: int, multiple_of: int = 256) -> int:
    """Llama's hidden size of the SwiGLU FFN: 2/3 of 4 * d_model (floored), rounded up to ``multiple_of``.

    2/3 * 4D keeps the parameter count of a 4D ReLU FFN (three matrices instead of two); the rounding
    makes it a multiple of 256 for fast matrix products: d_model=4096 -> 10922 -> 11008 (Llama 7B).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("multiple_of", multiple_of)
    hidden = int(2 * (4 * d_model) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class SwiGLU(nn.Module):
    """FFN(x) = W2 (SiLU(W1 x) * W3 x): chapter 5's FFN with a gate (Shazeer, 2020), without biases as in Llama.

    ``w1`` (gate), ``w3`` (up), ``w2`` (down), named as in Llama's code. Three D x d_ff matrices
    instead of two, so d_ff = 8/3 * D gives a ReLU FFN's 8 D^2 parameters (exactly when 3 divides D;
    :func:`llama_ffn_dim` rounds). Shape: x (..., D) -> (..., D).
    """

    def __init__(self, d_model: int, dim_feedforward: int, bias: bool = False):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("dim_feedforward", dim_feedforward)
        self.d_model = d_model
        self.w1 = nn.Linear(d_model, dim_feedforward, bias=bias)  # D -> d_ff, the gate
        self.w3 = nn.Linear(d_model, dim_feedforward, bias=bias)  # D -> d_ff, the value
        self.w2 = nn.Linear(dim_feedforward, d_model, bias=bias)  # d_ff -> D

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.d_model)
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))  # (..., d_ff) -> (..., D)


class GroupedQueryAttention(nn.Module):
    """Self-attention whose ``nhead`` query heads share ``num_kv_heads`` key/value heads (Ainslie et al., 2023).

    Chapter 4's heads, with each group of nhead / num_kv_heads query heads reading the same K and V.
    ``num_kv_heads == nhead`` is multi-head attention; ``num_kv_heads == 1`` is multi-query attention
    (Shazeer, 2019). Smaller K and V mean a smaller KV cache (:func:`kv_cache_bytes`).

    Shape: x (B, T, D); attn_mask (T, S) bool, True = blocked; cache: a :class:`KVCache` holding
    (B, H_kv, S, D_h). Returns (B, T, D).
    """

    def __init__(self, d_model: int, nhead: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("nhead", nhead)
        check_positive_int("num_kv_heads", num_kv_heads)
        if d_model % nhead:
            raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
        if nhead % num_kv_heads:
            raise ValueError(f"nhead ({nhead}) must be divisible by num_kv_heads ({num_kv_heads})")
        self.d_model, self.nhead, self.num_kv_heads = d_model, nhead, num_kv_heads
        self.head_dim = d_model // nhead
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # D -> H * D_h
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)  # D -> H_kv * D_h
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, *, cache=None) -> torch.Tensor:
        check_tensor("x", x, ndim=3, last_dim=self.d_model)
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nhead, self.head_dim).transpose(1, 2)  # (B, H, T, D_h)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, D_h)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v)  # (B, H_kv, S, D_h)
        group = self.nhead // self.num_kv_heads
        k = k.repeat_interleave(group, dim=1)  # (B, H, S, D_h): head h reads K/V head h // group
        v = v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-1, -2) / self.head_dim ** 0.5  # (B, H, T, S)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v  # (B, H, T, D_h)
        return self.out_proj(out.transpose(1, 2).reshape(B, T, self.d_model))  # (B, T, D)


def kv_cache_bytes(batch: int, seq_len: int, num_layers: int, num_kv_heads: int, head_dim: int,
                   dtype: torch.dtype = torch.float32) -> int:
    """Bytes of a KV cache: 2 (K and V) x batch x seq_len x num_layers x num_kv_heads x head_dim x element size."""
    for name, value in [("batch", batch), ("seq_len", seq_len), ("num_layers", num_layers),
                        ("num_kv_heads", num_kv_heads), ("head_dim", head_dim)]:
        check_positive_int(name, value)
    return 2 * batch * seq_len * num_layers * num_kv_heads * head_dim * torch.empty((), dtype=dtype).element_size()
