"""Scaled dot-product attention and multi-head attention (paper §3.2).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Shape letters: B batch, H heads, T query length, S key length, D model width,
D_h = D / H the width of one head.

Masks follow ``torch.nn.MultiheadAttention``: a bool mask with ``True`` means
"may not attend"; a float mask is added to the scores.

A row whose keys are *all* masked has no valid softmax (every score is -inf).
PyTorch returns NaN there, which then spreads through the whole model. Here
such a row gets attention weights of exactly 0 and therefore an output of 0
(before the output projection's bias): nothing is attended to, and nothing
turns into NaN.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._checks import check_float, check_mask, check_positive_int, check_probability, check_tensor
from ._fused import fused_enabled
from .masks import merge_masks


class AttentionSteps(NamedTuple):
    """Every intermediate step of scaled dot-product attention, for the chapters."""

    scores: torch.Tensor  # Q K^T                      (..., T, S)
    scaled: torch.Tensor  # scores / sqrt(d_k)          (..., T, S)
    masked: torch.Tensor  # scaled with -inf where masked (..., T, S)
    weights: torch.Tensor  # softmax over the keys       (..., T, S)
    output: torch.Tensor  # weights @ V                  (..., T, D_v)


def _apply_mask(scaled: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
    if attn_mask is None:
        return scaled
    if attn_mask.dtype == torch.bool:
        return scaled.masked_fill(attn_mask, float("-inf"))  # True = may not attend
    return scaled + attn_mask  # a float mask is added


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    return_steps: bool = False,
):
    """softmax(Q K^T / sqrt(d_k) + mask) V, written out step by step.

    Shape:
        query (..., T, d_k), key (..., S, d_k), value (..., S, d_v);
        attn_mask broadcastable to (..., T, S): bool (True = blocked) or float (added).

    Returns ``(output (..., T, d_v), weights (..., T, S))``, or an
    :class:`AttentionSteps` with every intermediate tensor when ``return_steps``.
    ``scale`` defaults to 1/sqrt(d_k); pass ``scale=1.0`` to see attention without it.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, t, ndim=(2, 3, 4))
        check_float(name, t)
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(f"key must have the same last dimension as query ({query.shape[-1]}), got {tuple(key.shape)}")
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(f"value must have as many positions as key ({key.shape[-2]}), got {tuple(value.shape)}")
    check_probability("dropout_p", dropout_p)
    if attn_mask is not None:
        if not isinstance(attn_mask, torch.Tensor) or not (attn_mask.dtype == torch.bool or attn_mask.is_floating_point()):
            got = attn_mask.dtype if isinstance(attn_mask, torch.Tensor) else type(attn_mask).__name__
            raise TypeError(f"attn_mask must be a bool or float tensor, got {got}")
        try:
            torch.broadcast_shapes(attn_mask.shape, query.shape[:-1] + key.shape[-2:-1])
        except RuntimeError:
            raise ValueError(
                f"attn_mask must broadcast to the scores' shape {tuple(query.shape[:-1] + key.shape[-2:-1])}, "
                f"got {tuple(attn_mask.shape)}"
            ) from None

    d_k = query.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    scores = query @ key.transpose(-2, -1)  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
    scaled = scores * scale
    masked = _apply_mask(scaled, attn_mask)
    # A fully masked row is all -inf, and softmax gives NaN there: make it 0 instead. The row is
    # filled with 0 *before* the softmax too, else its NaN would reach the gradients of Q and K
    # through an additive (float) mask.
    dead_rows = torch.isneginf(masked).all(dim=-1, keepdim=True)
    weights = torch.softmax(masked.masked_fill(dead_rows, 0.0), dim=-1).masked_fill(dead_rows, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    output = weights @ value  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    if return_steps:
        return AttentionSteps(scores, scaled, masked, weights, output)
    return output, weights


def split_heads(x: torch.Tensor, nhead: int) -> torch.Tensor:
    """(B, T, D) -> (B, H, T, D_h): give each head its own slice of the features."""
    check_tensor("x", x, ndim=3)
    B, T, D = x.shape
    if D % nhead != 0:
        raise ValueError(f"the last dimension of x ({D}) must be divisible by nhead ({nhead})")
    return x.view(B, T, nhead, D // nhead).transpose(1, 2)  # (B, T, H, D_h) -> (B, H, T, D_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, D_h) -> (B, T, D): the inverse of :func:`split_heads`.

    The transpose comes first: reshaping (B, H, T, D_h) straight to (B, T, D)
    would glue together rows of *different positions* (see the pitfalls chapter).
    """
    check_tensor("x", x, ndim=4)
    B, H, T, D_h = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D_h)  # (B, H, T, D_h) -> (B, T, H, D_h) -> (B, T, D)


class KVCache:
    """Keys and values of earlier steps, kept for incremental decoding.

    ``static=False`` (decoder self-attention): each step's new keys/values are
    appended. ``static=True`` (cross-attention): the encoder's keys/values are
    projected once, on the first step, and reused afterwards.
    """

    def __init__(self, static: bool = False):
        self.static = static
        self.k: torch.Tensor | None = None  # (B, H, L, D_h)
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def update(self, k: torch.Tensor, v: torch.Tensor):
        if self.k is None or self.static:
            self.k, self.v = k, v
        else:
            self.k = torch.cat([self.k, k], dim=-2)  # (B, H, L, D_h) + (B, H, T, D_h) -> (B, H, L+T, D_h)
            self.v = torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep the rows ``index`` of the batch (beam search reorders its hypotheses)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    Same arguments and masks as ``nn.MultiheadAttention(batch_first=True)``, but
    ``forward`` returns the per-head weights (B, H, T, S) instead of their average.

    Shape:
        query (B, T, D), key and value (B, S, D);
        key_padding_mask (B, S); attn_mask (T, S) or (B*H, T, S); bool (True = blocked) or float (added).
        Returns output (B, T, D) and weights (B, H, T, S) or None.
    """

    def __init__(self, d_model: int, nhead: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("nhead", nhead)
        if d_model % nhead != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
        self.d_model, self.nhead, self.head_dim = d_model, nhead, d_model // nhead
        self.dropout = check_probability("dropout", dropout)
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # W^Q for all heads at once
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)  # W^K
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)  # W^V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        cache: KVCache | None = None,
    ):
        check_tensor("query", query, ndim=3, last_dim=self.d_model)
        check_tensor("key", key, ndim=3, last_dim=self.d_model)
        check_tensor("value", value, ndim=3, last_dim=self.d_model)
        B, T, _ = query.shape
        if key.shape[:2] != value.shape[:2] or key.shape[0] != B:
            raise ValueError(
                f"key and value must have shape (B={B}, S, {self.d_model}) with the same S, "
                f"got key {tuple(key.shape)} and value {tuple(value.shape)}"
            )
        H = self.nhead

        if fused_enabled() and query is key and key is value and not (cache is not None and cache.static):
            q, k, v = self._packed_qkv(query)  # self-attention: the same three projections in one matmul
        else:
            q = split_heads(self.q_proj(query), H)  # (B, T, D) -> (B, H, T, D_h)
            k = v = None
            if not (cache is not None and cache.static and cache.k is not None):
                k = split_heads(self.k_proj(key), H)  # (B, S, D) -> (B, H, S, D_h)
                v = split_heads(self.v_proj(value), H)
        if cache is not None and cache.static and cache.k is not None:
            k, v = cache.k, cache.v  # cross-attention: the encoder's keys/values, projected on step 1
        elif cache is not None:
            k, v = cache.update(k, v)  # self-attention: earlier steps' keys/values + this step's
        S = k.shape[-2]

        check_mask("key_padding_mask", key_padding_mask, [(B, S)])
        check_mask("attn_mask", attn_mask, [(T, S), (B * H, T, S)])
        mask = merge_masks(attn_mask, key_padding_mask, B, T, S, dtype=q.dtype)  # broadcasts to (B, H, T, S)
        p = self.dropout if self.training else 0.0

        if not need_weights and fused_enabled() and not _has_dead_rows(mask):
            # The same computation in one fused kernel (its bool masks mean "True = keep").
            sdpa_mask = ~mask if mask is not None and mask.dtype == torch.bool else mask
            out, weights = F.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask, dropout_p=p), None
        else:
            out, weights = scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B, H, T, D_h)
        out = self.out_proj(merge_heads(out))  # (B, H, T, D_h) -> (B, T, D) -> (B, T, D)
        return out, (weights if need_weights else None)

    def _packed_qkv(self, x: torch.Tensor):
        """Q, K and V of self-attention from one (D, 3D) matmul -- what ``nn.MultiheadAttention``
        does with its ``in_proj_weight``. Same numbers as the three Linear layers, fewer kernel calls."""
        w = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])  # (3D, D)
        b = None if self.q_proj.bias is None else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        q, k, v = F.linear(x, w, b).chunk(3, dim=-1)  # (B, T, 3D) -> three (B, T, D)
        H = self.nhead
        return split_heads(q, H), split_heads(k, H), split_heads(v, H)


def _has_dead_rows(mask: torch.Tensor | None) -> bool:
    """Does any query row have every key masked? (The fused kernel would give NaN there.)"""
    if mask is None:
        return False
    blocked = mask if mask.dtype == torch.bool else torch.isneginf(mask)
    return bool(blocked.all(dim=-1).any())
