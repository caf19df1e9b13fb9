"""Layer normalization (Ba et al. 2016), written out.

    LayerNorm(x) = gamma * (x - mean) / sqrt(var + eps) + beta

mean and var are taken over the last dimension (the D features of one token),
var is the *biased* variance (divide by D, not D - 1) and eps sits *inside* the
square root -- exactly as ``torch.nn.LayerNorm``.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ._checks import check_positive_int, check_tensor
from ._fused import normalize


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               eps: float = 1e-5):
    """Normalize each vector x[..., :] to mean 0 and variance 1, then scale by weight (gamma) and shift by bias
    (beta)."""
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
    As in ``nn.LayerNorm``, ``bias=False`` keeps gamma but drops beta, and
    ``elementwise_affine=False`` drops both.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps <= 0:
            raise ValueError(f"eps must be a positive float, got {eps!r}")
        self.d_model, self.eps = d_model, float(eps)
        gamma = nn.Parameter(torch.ones(d_model)) if elementwise_affine else None
        beta = nn.Parameter(torch.zeros(d_model)) if elementwise_affine and bias else None
        self.register_parameter("weight", gamma)  # a None parameter keeps its name, as in nn.LayerNorm
        self.register_parameter("bias", beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.d_model)
        return normalize(x, self.weight, self.bias, self.eps)  # layer_norm, or the same in one fused kernel

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
