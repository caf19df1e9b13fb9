"""Argument checks shared by the package.

Every public function validates what the user hands it and raises a
``TypeError``/``ValueError`` that names the argument, what was expected and what
was received -- instead of an index error from deep inside torch.
"""
from __future__ import annotations

import torch


def check_tensor(name: str, x, ndim: int | tuple[int, ...] | None = None, last_dim: int | None = None):
    """Check that ``x`` is a tensor of the given rank and last-dimension width."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if x.dim() not in allowed:
            want = " or ".join(f"{n}-D" for n in allowed)
            raise ValueError(f"{name} must be {want}, got a {x.dim()}-D tensor of shape {tuple(x.shape)}")
    if last_dim is not None and x.shape[-1] != last_dim:
        raise ValueError(f"{name} must have last dimension {last_dim}, got shape {tuple(x.shape)}")
    return x


def check_float(name: str, x):
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    return x


def check_token_ids(name: str, ids, vocab_size: int | None = None):
    """Token ids: an integer tensor of shape (B, L) with values in [0, vocab_size)."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.dtype.is_complex:
        raise TypeError(f"{name} must hold integer token ids (torch.long), got dtype {ids.dtype}")
    if ids.dim() != 2:
        raise ValueError(f"{name} must be 2-D (batch, length), got shape {tuple(ids.shape)}")
    if vocab_size is not None and ids.numel() > 0:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} must lie in [0, {vocab_size}) (the vocabulary size), got a token id {bad}")
    return ids


def check_positive_int(name: str, value, minimum: int = 1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_probability(name: str, value, upper_inclusive: bool = False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    ok = 0.0 <= value <= 1.0 if upper_inclusive else 0.0 <= value < 1.0
    if not ok:
        bound = "[0, 1]" if upper_inclusive else "[0, 1)"
        raise ValueError(f"{name} must be in {bound}, got {value}")
    return float(value)


def check_mask(name: str, mask, shapes: list[tuple[int, ...]]):
    """A mask is bool (True = may not attend) or float (added to the scores).

    ``shapes`` lists the shapes it may have; the first is the one printed when
    none matches.
    """
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(mask).__name__}")
    if not (mask.dtype == torch.bool or mask.is_floating_point()):
        raise TypeError(
            f"{name} must be a bool tensor (True = may not attend) or a float tensor (added to the scores), "
            f"got dtype {mask.dtype}"
        )
    if tuple(mask.shape) not in [tuple(s) for s in shapes]:
        want = " or ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{name} must have shape {want}, got {tuple(mask.shape)}")
    return mask
