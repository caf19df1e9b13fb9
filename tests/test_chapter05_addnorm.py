"""Chapter 5's claims, checked through the package: residuals give the gradient a path (and a
normalised initialisation alone keeps a deep plain stack's gradient too), LayerNorm by hand (biased
variance, eps inside the root), the unbiased pitfall and the circulating [0.2, -0.5, 0.8, 0.3]
example, gamma/beta, the position-wise FFN (= 1x1 convolution) and its share of the parameters, the
Add & Norm block."""
import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close

import transformer_lite as tl
from transformer_lite import pitfalls


def _normalised_init(ffn):
    nn.init.kaiming_normal_(ffn.linear1.weight, nonlinearity="relu")
    nn.init.kaiming_normal_(ffn.linear2.weight, nonlinearity="linear")
    nn.init.zeros_(ffn.linear1.bias)
    nn.init.zeros_(ffn.linear2.bias)


def first_layer_grad(depth, residual, layer_norm, d_model=32, init=None):
    torch.manual_seed(0)
    ffns = [tl.FeedForward(d_model, 4 * d_model, dropout=0.0) for _ in range(depth)]
    for ffn in ffns if init else []:
        init(ffn)
    norms = [tl.LayerNorm(d_model) for _ in range(depth)]
    g = torch.Generator().manual_seed(0)
    h, target = torch.randn(16, 10, d_model, generator=g), torch.randn(16, 10, d_model, generator=g)
    for ffn, norm in zip(ffns, norms):
        h = h + ffn(h) if residual else ffn(h)
        h = norm(h) if layer_norm else h
    ((h - target) ** 2).mean().backward()
    return ffns[0].linear1.weight.grad.norm().item()


def test_residual_connections_keep_the_first_layers_gradient():
    assert first_layer_grad(32, residual=False, layer_norm=False) < 1e-12
    assert first_layer_grad(64, residual=False, layer_norm=True) < 1e-2 * first_layer_grad(1, False, True)
    for depth in (1, 32):
        assert first_layer_grad(depth, residual=True, layer_norm=True) > 0.02
        assert first_layer_grad(depth, residual=True, layer_norm=False) > 0.05


def test_normalised_initialisation_keeps_a_deep_plain_stacks_gradient():
    # He et al. 2016, section 1: vanishing gradients are "largely addressed by normalized initialization"
    assert first_layer_grad(64, residual=False, layer_norm=False) == 0.0
    alive = first_layer_grad(64, residual=False, layer_norm=False, init=_normalised_init)
    assert alive > 0.05 * first_layer_grad(1, residual=False, layer_norm=False, init=_normalised_init)


def test_residual_block_jacobian_is_identity_plus_sublayer_jacobian():
    f = tl.FeedForward(4, 16, dropout=0.0)
    x = torch.randn(4)
    J_f = torch.autograd.functional.jacobian(f, x)
    J = torch.autograd.functional.jacobian(lambda v: v + f(v), x)
    assert_close(J, torch.eye(4) + J_f)


def test_layer_norm_worked_example():
    x = torch.tensor([1.0, 3.0, 3.0, 9.0])  # mean 4, biased variance 36 / 4 = 9, std 3
    expected = torch.tensor([-1.0, -1 / 3, -1 / 3, 5 / 3]) * 3 / (9 + 1e-5) ** 0.5
    assert_close(tl.layer_norm(x), expected)
    assert_close(tl.LayerNorm(4)(x), expected)
    assert_close(nn.LayerNorm(4)(x), expected)
    with tl.use_fused(False):
        assert_close(tl.LayerNorm(4)(x), expected)


def test_circulating_worked_example_uses_the_unbiased_variance():
    x = torch.tensor([0.2, -0.5, 0.8, 0.3])
    assert abs(x.var(correction=0).item() - 0.215) < 1e-6  # LayerNorm's (biased) variance
    assert round(x.var().item(), 2) == 0.29  # the "variance = 0.29" of the circulating example
    out = nn.LayerNorm(4)(x)
    assert_close(out, torch.tensor([0.0, -1.51, 1.29, 0.22]), atol=0.005, rtol=0)
    assert_close(tl.layer_norm(x), out)
    assert ((x - x.mean()) / 0.29 ** 0.5 - out).abs().max() > 0.1


def test_unbiased_variance_pitfall_shrinks_outputs_by_sqrt_d_minus_1_over_d():
    for D in (4, 512):
        x = torch.randn(8, D)
        ratio = pitfalls.layer_norm_unbiased_eps_outside(x) / nn.LayerNorm(D)(x)
        assert_close(ratio, torch.full_like(ratio, ((D - 1) / D) ** 0.5), rtol=1e-4, atol=0)
    with pytest.raises(AssertionError):  # still caught at the paper's width
        x = torch.randn(8, 512)
        assert_close(pitfalls.layer_norm_unbiased_eps_outside(x), nn.LayerNorm(512)(x))


def test_gamma_beta_can_restore_one_token_but_not_every_token():
    x, x2 = torch.tensor([1.0, 3.0, 3.0, 9.0]), torch.tensor([2.0, 2.0, 4.0, 8.0])
    ln = tl.LayerNorm(4)
    with torch.no_grad():
        ln.weight.fill_((9 + 1e-5) ** 0.5)
        ln.bias.fill_(4.0)
    assert_close(ln(x), x)
    assert not torch.allclose(ln(x2), x2, atol=0.1)


def test_ffn_is_position_wise_and_equals_two_1x1_convolutions():
    ffn = tl.FeedForward(8, 32, dropout=0.0)
    x = torch.randn(2, 5, 8)
    out = ffn(x)
    assert_close(out, torch.stack([torch.stack([ffn(x[b, t]) for t in range(5)]) for b in range(2)]))
    perm = torch.randperm(5)
    assert_close(ffn(x[:, perm]), out[:, perm])
    conv1, conv2 = nn.Conv1d(8, 32, 1), nn.Conv1d(32, 8, 1)
    with torch.no_grad():
        conv1.weight.copy_(ffn.linear1.weight.unsqueeze(-1))
        conv1.bias.copy_(ffn.linear1.bias)
        conv2.weight.copy_(ffn.linear2.weight.unsqueeze(-1))
        conv2.bias.copy_(ffn.linear2.bias)
    assert_close(conv2(torch.relu(conv1(x.transpose(1, 2)))).transpose(1, 2), out)


def test_ffn_holds_two_thirds_of_an_encoder_layer():
    D, d_ff = 512, 2048
    layer = tl.EncoderLayer(D, 8, dim_feedforward=d_ff)
    n_ffn = tl.count_parameters(layer.ff)
    assert n_ffn == 2 * D * d_ff + d_ff + D
    assert abs(n_ffn / tl.count_parameters(layer) - 2 / 3) < 0.01


def test_encoder_layer_is_layernorm_of_x_plus_sublayer():
    layer = tl.EncoderLayer(16, 4, dim_feedforward=64, dropout=0.1).eval()
    x = torch.randn(2, 5, 16)
    h = layer.norm1(x + layer.self_attn(x, x, x)[0])
    assert_close(layer(x), layer.norm2(h + layer.ff(h)))
    ref = nn.TransformerEncoderLayer(16, 4, dim_feedforward=64, dropout=0.1, batch_first=True).eval()
    assert_close(tl.from_torch(ref).eval()(x), ref(x))


def test_attention_and_ffn_both_run_on_all_positions_but_only_attention_mixes_them():
    torch.manual_seed(0)
    D, T = 8, 5
    ffn, attn = tl.FeedForward(D, 32, dropout=0.0), tl.MultiHeadAttention(D, 2)
    x = torch.randn(2, T, D)
    x_changed = x.clone()
    x_changed[:, 2] += 1.0
    ffn_moved = (ffn(x_changed) - ffn(x)).abs().amax(dim=(0, 2))
    attn_moved = (attn(x_changed, x_changed, x_changed)[0] - attn(x, x, x)[0]).abs().amax(dim=(0, 2))
    assert ffn_moved[2] > 0 and (ffn_moved[[0, 1, 3, 4]] == 0).all()
    assert (attn_moved > 0).all()
    alone = torch.cat([attn(x[:, t:t + 1], x[:, t:t + 1], x[:, t:t + 1])[0] for t in range(T)], dim=1)
    assert not torch.allclose(alone, attn(x, x, x)[0])
    assert_close(torch.cat([ffn(x[:, t:t + 1]) for t in range(T)], dim=1), ffn(x))


def test_bug_hunt_suspect_passes_a_test_at_init_and_fails_one_with_random_gamma_beta():
    from transformer_lite.book.check.ch05 import suspect_layer_norm

    suspect = suspect_layer_norm(16)
    x = torch.randn(4, 7, 16) * 3 + 1
    assert_close(suspect(x), nn.LayerNorm(16)(x))  # gamma = 1, beta = 0 hide the bug
    ref = nn.LayerNorm(16)
    with torch.no_grad():
        suspect.weight.normal_()
        suspect.bias.normal_()
        ref.weight.copy_(suspect.weight)
        ref.bias.copy_(suspect.bias)
    assert not torch.allclose(suspect(x), ref(x), atol=1e-3)
    with torch.no_grad():  # the diagnosis the chapter's solution uses: a uniform gamma is divided out
        suspect.weight.fill_(2.0)
        suspect.bias.zero_()
    assert_close(suspect(x), nn.LayerNorm(16)(x))


def test_self_attention_holds_about_half_the_parameters_of_the_ffn():
    layer = tl.EncoderLayer(512, 8, dim_feedforward=2048)
    assert 0.49 < tl.count_parameters(layer.self_attn) / tl.count_parameters(layer.ff) < 0.51


def test_without_normalization_the_residual_gradient_grows_with_a_layernorm_it_stays_level():
    # the bridge to chapter 11: LayerNorm levels the activations' scale (and here the gradient too)
    residual = [first_layer_grad(L, True, False) for L in (1, 64)]
    with_ln = [first_layer_grad(L, True, True) for L in (1, 8, 64)]
    assert residual[1] > 5 * residual[0]
    assert all(0.5 * with_ln[0] < v < 2 * with_ln[0] for v in with_ln)
