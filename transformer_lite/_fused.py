"""A switch between the readable code path and PyTorch's fused kernels.

The readable path is what the chapters show. The fused path calls
``F.layer_norm`` and ``F.scaled_dot_product_attention`` so that a model built
from this package trains as fast as ``torch.nn.Transformer``. Tests check that
both paths give the same numbers; ``use_fused(False)`` turns the fused path off.
"""
from __future__ import annotations

import contextlib

_FUSED = True


def fused_enabled() -> bool:
    """True when modules may use PyTorch's fused kernels (the default)."""
    return _FUSED


@contextlib.contextmanager
def use_fused(enabled: bool):
    """Context manager: ``with use_fused(False): ...`` runs the readable path only."""
    global _FUSED
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
    old, _FUSED = _FUSED, enabled
    try:
        yield
    finally:
        _FUSED = old
