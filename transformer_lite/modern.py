"""The pieces of today's block (issue 23, "Since 2017"), each checked against the 2017 block it replaces.

* :class:`RMSNorm` — chapter 5's LayerNorm without the mean and without beta (Zhang & Sennrich, 2019).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ._checks import check_number, check_positive_int, check_tensor


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
