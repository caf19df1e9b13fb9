"""transformer_lite.modern: each piece of today's block against PyTorch or the 2017 piece it replaces."""
import pytest
import torch
import torch.nn as nn

from transformer_lite.modern import RMSNorm
from transformer_lite.normalization import LayerNorm


@pytest.mark.parametrize("shape", [(2, 5, 8), (7, 16), (3,  2, 4, 32)])
@pytest.mark.parametrize("eps", [1e-6, 1e-5, 0.1])
def test_rmsnorm_equals_torch(shape, eps):
    torch.manual_seed(0)
    ours, ref = RMSNorm(shape[-1], eps=eps), nn.RMSNorm(shape[-1], eps=eps)
    with torch.no_grad():
        ref.weight.normal_()
        ours.weight.copy_(ref.weight)
    x = torch.randn(shape) * 3
    torch.testing.assert_close(ours(x), ref(x))


def test_rmsnorm_is_layernorm_on_zero_mean_inputs():
    torch.manual_seed(1)
    x = torch.randn(4, 6, 16)
    ln, rms = LayerNorm(16, eps=1e-5, bias=False), RMSNorm(16, eps=1e-5)
    with torch.no_grad():
        ln.weight.normal_()
        rms.weight.copy_(ln.weight)
    assert not torch.allclose(ln(x), rms(x), atol=1e-3)  # differs on general inputs
    x0 = x - x.mean(dim=-1, keepdim=True)
    torch.testing.assert_close(ln(x0), rms(x0))


def test_rmsnorm_bad_arguments():
    with pytest.raises((TypeError, ValueError), match="eps"):
        RMSNorm(8, eps=0)
    with pytest.raises((TypeError, ValueError), match="d_model"):
        RMSNorm(0)
    with pytest.raises(ValueError, match="x"):
        RMSNorm(8)(torch.randn(2, 7))
