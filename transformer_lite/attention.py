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
turns into NaN (:func:`softmax_over_keys`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._checks import (
    check_attention_inputs,
    check_mask,
    check_multihead_inputs,
    check_positive_int,
    check_probability,
    check_tensor,
)
from ._fused import attend
from .masks import merge_masks


class AttentionSteps(NamedTuple):
    """Every intermediate step of scaled dot-product attention, for the chapters."""

    scores: torch.Tensor  # Q K^T                      (..., T, S)
    scaled: torch.Tensor  # scores / sqrt(d_k)          (..., T, S)
    masked: torch.Tensor  # scaled with -inf where masked (..., T, S)
    weights: torch.Tensor  # softmax over the keys       (..., T, S)
    output: torch.Tensor  # weights @ V                  (..., T, D_v)


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
    check_attention_inputs(query, key, value, attn_mask, dropout_p)
    d_k = query.shape[-1]
    # Step 1 happened before this call: query, key and value hold the words' q, k and v as rows.
    scores = query @ key.transpose(-2, -1)  # step 2: (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
    scaled = scores * (1.0 / math.sqrt(d_k) if scale is None else scale)  # step 3: divide by sqrt(d_k)
    masked = apply_mask(scaled, attn_mask)  # blocked pairs -> -inf (chapter 7); no mask: masked == scaled
    weights = softmax_over_keys(masked)  # step 4: softmax over the keys, each row sums to 1
    if dropout_p > 0.0:
        # training only. Not in the paper (its §5.4 drops sub-layer outputs); tensor2tensor and PyTorch have it
        weights = F.dropout(weights, p=dropout_p)
    output = weights @ value  # steps 5 and 6: (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    if return_steps:
        return AttentionSteps(scores, scaled, masked, weights, output)
    return output, weights


def apply_mask(scaled: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
    """The scores with the mask applied: a bool mask puts -inf where it is True, a float mask is added."""
    if attn_mask is None:
        return scaled
    if attn_mask.dtype == torch.bool:
        return scaled.masked_fill(attn_mask, float("-inf"))  # True = may not attend
    return scaled + attn_mask  # 0 = may attend, -inf = may not


def softmax_over_keys(masked: torch.Tensor) -> torch.Tensor:
    """Softmax along the last axis (the keys), with weights 0 on a row whose keys are all masked.

    Such a "dead" row is all -inf, and a plain softmax gives 0/0 = NaN there.
    """
    dead = torch.isneginf(masked).all(dim=-1, keepdim=True)  # (..., T, 1): every key masked
    weights = torch.softmax(masked.masked_fill(dead, 0.0), dim=-1)  # 0s in: no NaN, not even in gradients
    return weights.masked_fill(dead, 0.0)  # 0s out: a dead row attends to nothing


def split_heads(x: torch.Tensor, nhead: int) -> torch.Tensor:
    """(B, T, D) -> (B, H, T, D_h): cut the *projected* features into H blocks of D_h columns, one per head."""
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


def merge_head_masks(attn_mask, key_padding_mask, q: torch.Tensor, k: torch.Tensor):
    """Check both masks against the shapes of q (B, H, T, D_h) and k (B, ., S, D_h), then merge them into one
    mask that broadcasts to the scores (B, H, T, S) (:func:`~transformer_lite.masks.merge_masks`).

    attn_mask: (T, S) or (B*H, T, S); key_padding_mask: (B, S); bool (True = blocked) or float (added).
    """
    B, H, T, S = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    check_mask("key_padding_mask", key_padding_mask, [(B, S)])
    check_mask("attn_mask", attn_mask, [(T, S), (B * H, T, S)])
    return merge_masks(attn_mask, key_padding_mask, B, T, S, dtype=q.dtype)


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

    ``nn.MultiheadAttention(d_model, nhead, dropout, bias, batch_first=True)`` written out, with the
    same masks and the same numbers on copied weights (``from_torch``). What differs:

    - the projections are three ``nn.Linear`` layers ``q_proj``, ``k_proj``, ``v_proj`` (torch stacks
      W^Q, W^K, W^V in one ``in_proj_weight`` of shape (3D, D)); ``out_proj`` is the same;
    - the weights come back per head, (B, H, T, S), instead of averaged over the heads
      (torch's ``average_attn_weights=False``);
    - batch-first only: tensors are (B, T, D);
    - no ``add_bias_kv``, ``add_zero_attn``, ``kdim``/``vdim`` or ``is_causal``;
    - ``forward(..., *, cache=None)``: a keyword-only :class:`KVCache` for incremental decoding.

    Shape:
        query (B, T, D), key and value (B, S, D);
        key_padding_mask (B, S); attn_mask (T, S) or (B*H, T, S); bool (True = blocked) or float (added).
        Returns output (B, T, D) and weights (B, H, T, S), or None when ``need_weights=False``.
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

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None, *,
                cache: KVCache | None = None):
        check_multihead_inputs(query, key, value, self.d_model)
        q = split_heads(self.q_proj(query), self.nhead)  # project, split: (B, T, D) -> (B, H, T, D_h)
        k, v = self._project_kv(key, value, cache)  # the same for K and V: (B, S, D) -> (B, H, S, D_h)
        mask = merge_head_masks(attn_mask, key_padding_mask, q, k)  # one mask, broadcast to (B, H, T, S)
        dropout_p = self.dropout if self.training else 0.0
        out, weights = attend(q, k, v, mask, dropout_p, need_weights)  # all heads at once: (B, H, T, D_h)
        return self.out_proj(merge_heads(out)), weights  # merge, W^O: (B, H, T, D_h) -> (B, T, D) -> (B, T, D)

    def _project_kv(self, key, value, cache: KVCache | None = None):
        """Keys and values of every head, (B, S, D) -> (B, H, S, D_h); with a cache, also the earlier steps'."""
        if cache is not None and cache.static and len(cache):
            return cache.k, cache.v  # cross-attention: the encoder's keys and values, projected at step 1
        k = split_heads(self.k_proj(key), self.nhead)  # (B, S, D) -> (B, H, S, D_h)
        v = split_heads(self.v_proj(value), self.nhead)
        if cache is None:
            return k, v
        return cache.update(k, v)  # self-attention: the earlier steps' keys and values, then this step's
