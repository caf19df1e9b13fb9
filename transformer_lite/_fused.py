"""The one place where the package calls PyTorch's fused kernels.

The readable code is what the chapters show: :func:`~transformer_lite.attention.scaled_dot_product_attention`
and :func:`~transformer_lite.normalization.layer_norm`. The same formulas run in one kernel each in
``F.scaled_dot_product_attention`` and ``F.layer_norm``, so that a model built from this package trains
as fast as ``torch.nn.Transformer``. Tests check that both paths give the same numbers.

:func:`attend` and :func:`normalize` choose between the two. The choice depends only on their
arguments and on the switch ``use_fused`` -- never on the values inside a tensor, which would cost a
device-to-host copy on a GPU and split a ``torch.compile`` graph.

``with use_fused(False):`` runs the readable path only. The setting belongs to the thread that makes
it (a ``threading.local``: ``torch.compile`` can read and guard it, a ``contextvars.ContextVar`` it
cannot trace), so two threads can each run their own path.
"""
from __future__ import annotations

import contextlib
import threading

import torch
import torch.nn.functional as F

_SETTING = threading.local()  # one `fused` attribute per thread; a new thread starts with the default


def fused_enabled() -> bool:
    """True when modules may use PyTorch's fused kernels (the default), in the calling thread."""
    return getattr(_SETTING, "fused", True)


@contextlib.contextmanager
def use_fused(enabled: bool):
    """Context manager: ``with use_fused(False): ...`` runs the readable path only (in this thread)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
    old = fused_enabled()
    _SETTING.fused = enabled
    try:
        yield
    finally:
        _SETTING.fused = old


def attend(query, key, value, attn_mask=None, dropout_p: float = 0.0, need_weights: bool = True):
    """Chapter 3's attention on every head at once -- in PyTorch's fused kernel when no weights are needed.

    Shape: query (B, H, T, D_h), key and value (B, H, S, D_h), attn_mask broadcastable to (B, H, T, S)
    (bool, True = blocked, or float, added) -> output (B, H, T, D_h) and weights (B, H, T, S) or None.
    """
    if need_weights or not fused_enabled():
        output, weights = attention.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p)
        return output, (weights if need_weights else None)
    return fused_attention(query, key, value, attn_mask, dropout_p), None


def fused_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` with this package's masks and its rule for fully masked rows.

    The kernel reads a bool mask as "True = keep" (the opposite of ``nn.MultiheadAttention``), and on a
    row whose keys are all blocked it may return NaN. Such a row is unblocked before the kernel and its
    output set to 0 after it: the same result as the readable path, with tensor operations only.
    """
    if attn_mask is None:
        return F.scaled_dot_product_attention(query, key, value, dropout_p=dropout_p)
    if attn_mask.dtype == torch.bool:
        dead = attn_mask.sum(dim=-1, keepdim=True) == attn_mask.shape[-1]  # (..., T, 1): all S keys blocked
        keep = ~attn_mask | dead  # the kernel's "True = keep"; a dead row keeps every key, for now
    else:
        dead = attn_mask.amax(dim=-1, keepdim=True) == float("-inf")  # (..., T, 1): every key at -inf
        keep = attn_mask.masked_fill(dead, 0.0)  # a float mask is added, as on the readable path
    output = F.scaled_dot_product_attention(query, key, value, attn_mask=keep, dropout_p=dropout_p)
    return output * ~dead  # a dead row attends to nothing: output 0, as on the readable path


def normalize(x: torch.Tensor, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    """Layer normalization over the last axis: ``F.layer_norm``, or chapter 5's :func:`layer_norm` when off."""
    if fused_enabled():
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)
    return normalization.layer_norm(x, weight, bias, eps)


# The readable functions live in modules that import this one; importing the modules (not their names)
# at the end works whichever of them Python loads first.
from . import attention, normalization  # noqa: E402
