"""Attention masks and the three conventions for writing them.

This package follows ``torch.nn.MultiheadAttention``:

* a **bool** mask with ``True`` meaning "may not attend" (blocked);
* a **float** mask that is *added* to the attention scores (``0`` = keep,
  ``-inf`` = blocked);
* and, for comparison only, the "1 = keep" convention many tutorials use
  (``F.scaled_dot_product_attention`` also reads a bool mask this way).

Shapes: a ``causal_mask`` is (T, T), or (T, offset + T) when ``offset`` earlier keys
come first (a KV cache); a ``padding_mask`` is (B, S) and is broadcast to
(B, 1, 1, S) against the scores (B, H, T, S).
"""
from __future__ import annotations

import torch

from ._checks import check_int, check_positive_int, check_token_ids


def causal_mask(T: int, device=None, *, offset: int = 0) -> torch.Tensor:
    """(T, T) bool mask, ``True`` above the diagonal: position t may not attend to t' > t.

    ``offset``: the T queries come after ``offset`` earlier keys (those of a KV cache), so query i sits at
    position offset + i and may see keys 0..offset + i: a (T, offset + T) mask, the last T rows of
    ``causal_mask(offset + T)``.
    """
    check_positive_int("T", T)
    check_positive_int("offset", offset, minimum=0)
    return torch.triu(torch.ones(T, offset + T, dtype=torch.bool, device=device), diagonal=offset + 1)


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, S) bool mask, ``True`` where ``ids == pad_id`` (those keys may not be attended to)."""
    check_token_ids("ids", ids)
    check_int("pad_id", pad_id)
    return ids == pad_id


def _check_bool(name, mask):
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"{name} must be a bool tensor, got {got}")


def bool_to_additive(mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Blocked (``True``) -> ``-inf``, allowed -> ``0.0``; the result is added to the scores."""
    _check_bool("mask", mask)
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


def additive_to_bool(mask: torch.Tensor) -> torch.Tensor:
    """``-inf`` -> ``True`` (blocked); any finite value -> ``False``."""
    if not isinstance(mask, torch.Tensor) or not mask.is_floating_point():
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a float tensor, got {got}")
    return torch.isneginf(mask)


def bool_to_keep(mask: torch.Tensor) -> torch.Tensor:
    """PyTorch's "True = blocked" -> the "1 = keep" convention (a 0/1 long tensor)."""
    _check_bool("mask", mask)
    return (~mask).long()


def keep_to_bool(keep: torch.Tensor) -> torch.Tensor:
    """The "1 = keep" convention (0/1 ints or bools) -> PyTorch's "True = blocked"."""
    if not isinstance(keep, torch.Tensor) or keep.is_floating_point():
        got = keep.dtype if isinstance(keep, torch.Tensor) else type(keep).__name__
        raise TypeError(f"keep must be an integer or bool tensor of 0/1, got {got}")
    return keep == 0


def merge_masks(attn_mask, key_padding_mask, B: int, T: int, S: int, dtype=torch.float32):
    """Combine an (T, S) or (B*H, T, S) ``attn_mask`` and a (B, S) ``key_padding_mask``
    into one mask that broadcasts against the scores (B, H, T, S).

    The result is bool when both inputs are bool (or None), else additive float.
    Returns None when both are None.
    """
    if attn_mask is None and key_padding_mask is None:
        return None
    parts = []
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            parts.append(attn_mask.view(1, 1, T, S))  # (T, S) -> (1, 1, T, S)
        else:
            parts.append(attn_mask.view(B, -1, T, S))  # (B*H, T, S) -> (B, H, T, S)
    if key_padding_mask is not None:
        parts.append(key_padding_mask.view(B, 1, 1, S))  # (B, S) -> (B, 1, 1, S)
    if all(p.dtype == torch.bool for p in parts):
        out = parts[0]
        for p in parts[1:]:
            out = out | p
        return out
    out = None
    for p in parts:
        p = bool_to_additive(p, dtype) if p.dtype == torch.bool else p.to(dtype)
        out = p if out is None else out + p
    return out
