"""Layer normalization (Ba et al. 2016), written out.

    LayerNorm(x) = gamma * (x - mean) / sqrt(var + eps) + beta

mean and var are taken over the last dimension (the D features of one token),
var is the *biased* variance (divide by D, not D - 1) and eps sits *inside* the
square root -- exactly as ``torch.nn.LayerNorm``.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._checks import check_positive_int, check_tensor
from ._fused import fused_enabled


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, eps: float = 1e-5):
    """Normalize each vector x[..., :] to mean 0 and variance 1, then scale by weight (gamma) and shift by bias (beta)."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased: divide by D
    x_hat = (x - mean) / torch.sqrt(var + eps)  # eps inside the root
    if weight is not None:
        x_hat = x_hat * weight
    if bias is not None:
        x_hat = x_hat + bias
    return x_hat


class LayerNorm(nn.Module):
    """``nn.LayerNorm(d_model)`` with the formula in plain sight (see :func:`layer_norm`).

    Shape: x (..., D) -> (..., D). gamma (``weight``) starts at 1, beta (``bias``) at 0.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, elementwise_affine: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps <= 0:
            raise ValueError(f"eps must be a positive float, got {eps!r}")
        self.d_model, self.eps = d_model, float(eps)
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(d_model))  # gamma
            self.bias = nn.Parameter(torch.zeros(d_model))  # beta
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.d_model)
        if fused_enabled():  # the same formula in one kernel (tests check that both agree)
            return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)
        return layer_norm(x, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
