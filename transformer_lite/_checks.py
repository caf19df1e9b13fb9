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
    # The range check reads values: a device-to-host copy on a GPU, and a break in a torch.compile graph.
    # The model runs it once per call, at its entrance (Transformer.encode / decode), and not while compiling.
    if vocab_size is not None and ids.numel() > 0 and not torch.compiler.is_compiling():
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} must lie in [0, {vocab_size}) (the vocabulary size), got a token id {bad}")
    return ids


def check_attention_inputs(query, key, value, attn_mask, dropout_p):
    """The arguments of scaled_dot_product_attention: float tensors (..., T, d_k), (..., S, d_k), (..., S, d_v),
    a mask that broadcasts to the scores (..., T, S), and a dropout probability."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, t, ndim=(2, 3, 4))
        check_float(name, t)
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(f"key must have the same last dimension as query ({query.shape[-1]}), got {tuple(key.shape)}")
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(f"value must have as many positions as key ({key.shape[-2]}), got {tuple(value.shape)}")
    check_probability("dropout_p", dropout_p)
    if attn_mask is None:
        return
    if not isinstance(attn_mask, torch.Tensor) or not (attn_mask.dtype == torch.bool or attn_mask.is_floating_point()):
        got = attn_mask.dtype if isinstance(attn_mask, torch.Tensor) else type(attn_mask).__name__
        raise TypeError(f"attn_mask must be a bool or float tensor, got {got}")
    scores_shape = query.shape[:-1] + key.shape[-2:-1]  # (..., T, S)
    try:
        torch.broadcast_shapes(attn_mask.shape, scores_shape)
    except RuntimeError:
        raise ValueError(f"attn_mask must broadcast to the scores' shape {tuple(scores_shape)}, "
                         f"got {tuple(attn_mask.shape)}") from None


def check_multihead_inputs(query, key, value, d_model: int):
    """The inputs of MultiHeadAttention: query (B, T, D), key and value (B, S, D) with the same B and S."""
    check_tensor("query", query, ndim=3, last_dim=d_model)
    check_tensor("key", key, ndim=3, last_dim=d_model)
    check_tensor("value", value, ndim=3, last_dim=d_model)
    if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
        raise ValueError(
            f"key and value must have shape (B={query.shape[0]}, S, {d_model}) with the same S, "
            f"got key {tuple(key.shape)} and value {tuple(value.shape)}"
        )


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


def check_int(name: str, value):
    """An int (a bool is not accepted: ``True`` as a seed or an id is almost always a mistake)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def check_number(name: str, value, *, positive: bool = False, minimum: float | None = None) -> float:
    """A real number (int or float, not bool); ``positive`` requires > 0, ``minimum`` requires >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if minimum is not None and not value >= minimum:
        raise ValueError(f"{name} must be a number >= {minimum}, got {value!r}")
    return float(value)


def check_instance(name: str, value, cls, *, allow_none: bool = False):
    """``value`` is an instance of ``cls`` (or None when ``allow_none``)."""
    if value is None and allow_none:
        return value
    if not isinstance(value, cls):
        want = f"{cls.__module__}.{cls.__qualname__}".replace("torch.nn.modules.module.", "torch.nn.")
        want = want.replace("torch.optim.optimizer.", "torch.optim.").replace("torch._C.", "torch.")
        want = want.replace("builtins.", "")
        raise TypeError(f"{name} must be a {want}{' or None' if allow_none else ''}, got {type(value).__name__}")
    return value
