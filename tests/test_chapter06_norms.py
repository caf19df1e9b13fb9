"""Chapter 6's claims: BatchNorm normalizes each feature over the batch, LayerNorm each token over
its features; padding moves BatchNorm's outputs for real tokens but not LayerNorm's; BatchNorm
depends on the batch and on train/eval mode, LayerNorm does not."""
import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close

import transformer_lite as tl


def bn_train(x):
    """nn.BatchNorm1d in training mode on a (B, T, D) batch (it wants (B, D, T))."""
    return nn.BatchNorm1d(x.shape[-1])(x.transpose(1, 2)).transpose(1, 2)


REAL_0 = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [3.0, 1.0, 0.0, 2.0]])
REAL_1 = torch.tensor([[4.0, 3.0, 2.0, 1.0], [0.0, 2.0, 4.0, 6.0]])


def padded(length, value=0.0):
    rows = [torch.cat([s, torch.full((length - len(s), 4), value)]) for s in (REAL_0, REAL_1)]
    mask = torch.tensor([[t < len(s) for t in range(length)] for s in (REAL_0, REAL_1)])
    return torch.stack(rows), mask


def test_axes_batchnorm_per_feature_layernorm_per_token():
    x = torch.randn(2, 3, 4) * 3 + 1
    y_bn, y_ln = bn_train(x), tl.LayerNorm(4)(x)
    assert_close(y_bn.mean(dim=(0, 1)), torch.zeros(4), atol=1e-6, rtol=0)
    assert_close(y_bn.var(dim=(0, 1), correction=0), torch.ones(4), atol=1e-4, rtol=0)
    assert_close(y_ln.mean(dim=-1), torch.zeros(2, 3), atol=1e-6, rtol=0)
    assert_close(y_ln.var(dim=-1, correction=0), torch.ones(2, 3), atol=1e-4, rtol=0)
    assert y_bn.mean(dim=-1).abs().max() > 0.1  # BatchNorm does not standardize tokens


def test_padding_moves_batchnorm_outputs_of_real_tokens_but_not_layernorm():
    real = torch.cat([REAL_0, REAL_1])  # the 5 real tokens, (5, D)
    bn_clean = bn_train(real[None])[0]
    ln_clean = tl.LayerNorm(4)(real)
    for length, value in [(3, 0.0), (3, 5.0), (5, 0.0)]:
        x, mask = padded(length, value)
        assert (bn_train(x)[mask] - bn_clean).abs().max() > 0.05
        assert_close(tl.LayerNorm(4)(x)[mask], ln_clean)
    x, _ = padded(3)
    assert_close(x.mean(dim=(0, 1)), real.mean(dim=0) * 5 / 6)  # one zero row in six


def test_batchnorm_output_depends_on_the_batch_and_noise_shrinks_with_batch_size():
    g = torch.Generator().manual_seed(0)
    corpus = torch.linspace(-2, 2, 8) + 0.5 * torch.randn(500, 1, 8, generator=g) + torch.randn(500, 8, 8, generator=g)
    probe = corpus[0]

    def spread(b):
        outs = []
        for _ in range(100):
            xb = torch.cat([probe[None], corpus[torch.randint(1, 500, (b - 1,), generator=g)]])
            outs.append(bn_train(xb)[0, 0, 0])
        return torch.stack(outs).std().item()

    assert spread(2) > 2 * spread(32) > 0
    ln = tl.LayerNorm(8)(probe)
    assert_close(tl.LayerNorm(8)(torch.cat([probe[None], corpus[1:5]]))[0], ln)


def test_batchnorm_train_and_eval_disagree_layernorm_does_not():
    x = torch.randn(1, 8, 6) * 2 + 3  # (B, D, T)
    bn, ln = nn.BatchNorm1d(8), nn.LayerNorm(8)
    train_bn, train_ln = bn(x), ln(x.transpose(1, 2))
    bn.eval(), ln.eval()
    assert (bn(x) - train_bn).abs().max() > 0.5
    assert torch.equal(ln(x.transpose(1, 2)), train_ln)
    with pytest.raises(ValueError):
        nn.BatchNorm1d(8)(torch.randn(1, 8, 1))  # one value per channel: nothing to normalize


def test_running_var_is_unbiased_and_padding_biases_running_mean():
    bn = nn.BatchNorm1d(4, momentum=1.0)
    xb = torch.randn(4, 4, 8)
    bn(xb)
    assert_close(bn.running_var, xb.transpose(1, 2).reshape(-1, 4).var(dim=0, correction=1))
    g = torch.Generator().manual_seed(0)
    bn = nn.BatchNorm1d(4)
    for _ in range(100):
        x = torch.randn(16, 8, 4, generator=g) + 2.0  # true mean 2
        x[:, 4:] = 0.0  # half padding
        bn(x.transpose(1, 2))
    assert_close(bn.running_mean, torch.full((4,), 1.0), atol=0.15, rtol=0)  # pulled halfway to 0


def padded_variance(mu, sigma2, p):
    return (1 - p) * sigma2 + p * (1 - p) * mu ** 2


def test_padded_variance_formula_and_it_can_shrink():
    x, mask = padded(3)
    real = x[mask]
    assert_close(x.var(dim=(0, 1), correction=0), padded_variance(real.mean(0), real.var(0, correction=0), 1 / 6))
    small_mean = torch.tensor([-3.0, 3.0, -2.0, 2.0, 1.0])
    with_pad = torch.cat([small_mean, torch.zeros(1)])
    assert with_pad.var(correction=0) < small_mean.var(correction=0)  # padding shrinks a small-mean feature
    assert_close(with_pad.var(correction=0), padded_variance(small_mean.mean(), small_mean.var(correction=0), 1 / 6))


def test_running_var_under_padding_follows_the_formula_both_directions():
    g = torch.Generator().manual_seed(0)
    mean, std = torch.linspace(-2, 2, 8), torch.linspace(0.5, 2.0, 8)
    corpus = mean + std * torch.randn(2000, 8, 8, generator=g)
    true_mean, true_var = corpus.mean(dim=(0, 1)), corpus.var(dim=(0, 1), correction=0)
    bn = nn.BatchNorm1d(8)
    for _ in range(200):
        xb = corpus[torch.randint(0, 2000, (16,), generator=g)].clone()
        xb[:, 4:] = 0.0  # half padding
        bn(xb.transpose(1, 2))
    predicted = padded_variance(true_mean, true_var, 0.5)
    assert_close(bn.running_var, predicted, rtol=0.15, atol=0)
    assert (bn.running_var[0] > true_var[0]) and (bn.running_var[4] < true_var[4])  # grows / shrinks


def test_pytorch_momentum_weights_the_new_batch_keras_the_old():
    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(16, 8, 4, generator=g) + 2 for _ in range(3)]

    def torch_running(m):
        bn = nn.BatchNorm1d(4, momentum=m)
        for xb in batches:
            bn(xb.transpose(1, 2))
        return bn.running_mean

    by_rule, keras = torch.zeros(4), torch.zeros(4)
    for xb in batches:
        by_rule = 0.9 * by_rule + 0.1 * xb.mean(dim=(0, 1))
        keras = 0.99 * keras + 0.01 * xb.mean(dim=(0, 1))
    assert nn.BatchNorm1d(4).momentum == 0.1
    assert_close(torch_running(0.1), by_rule)
    assert_close(torch_running(0.01), keras)  # Keras' 0.99 is PyTorch's 0.01
    assert (torch_running(0.99) - batches[-1].mean(dim=(0, 1))).abs().max() < 0.05


def test_eval_mode_batchnorm_handles_one_token_with_running_statistics():
    one = torch.randn(1, 8, 1)
    bn = nn.BatchNorm1d(8).eval()
    assert_close(bn(one), (one - bn.running_mean[:, None]) / torch.sqrt(bn.running_var[:, None] + bn.eps))


def test_per_time_step_batchnorm_is_batchnorm_over_t_times_d_features():
    x = torch.randn(4, 3, 5) * 3 + 1
    by_hand = (x - x.mean(0)) / torch.sqrt(x.var(0, correction=0) + 1e-5)
    assert_close(by_hand, nn.BatchNorm1d(15)(x.reshape(4, 15)).reshape(4, 3, 5))


def test_batchnorm1d_pools_each_feature_over_batch_and_positions_not_twelve_neurons():
    x = torch.randn(2, 3, 4) * 3 + 1
    bn = nn.BatchNorm1d(4)
    y = bn(x.transpose(1, 2)).transpose(1, 2)
    assert bn.running_mean.shape == (4,)
    assert_close(bn.running_mean, 0.1 * x.mean(dim=(0, 1)))  # one mean per feature over all B*T positions
    per_neuron = nn.BatchNorm1d(12)(x.reshape(2, 12)).reshape(2, 3, 4)
    assert (per_neuron - y).abs().max() > 0.1


def test_running_statistics_are_buffers_updated_by_the_forward_pass_without_gradient():
    bn = nn.BatchNorm1d(4)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert {"running_mean", "running_var"} <= {n for n, _ in bn.named_buffers()}
    before = bn.running_mean.clone()
    bn(torch.randn(8, 4, 5) + 2).pow(3).mean().backward()
    assert not torch.equal(bn.running_mean, before)
    assert bn.weight.grad is not None and bn.running_mean.grad is None and not bn.running_mean.requires_grad


def masked_bn(x, mask, eps=1e-5):
    real = x[mask]
    return (x - real.mean(0)) / torch.sqrt(real.var(0, correction=0) + eps)


def test_masked_batchnorm_repairs_padding_but_not_the_batch_dependence():
    clean = bn_train(torch.cat([REAL_0, REAL_1])[None])[0]
    for length, value in [(3, 0.0), (3, 5.0), (5, 0.0)]:
        x, mask = padded(length, value)
        assert_close(masked_bn(x, mask)[mask], clean)
    x, mask = padded(3)
    other = x.clone()
    other[1, :2] += 3.0  # another sentence 1
    assert (masked_bn(other, mask)[0] - masked_bn(x, mask)[0]).abs().max() > 0.1


def test_bug_hunt_layer_norm_over_positions_moves_with_padding_not_with_the_batch():
    from transformer_lite import pitfalls

    x, _ = padded(3)
    other = x.clone()
    other[1, :2] += 3.0
    assert_close(pitfalls.layer_norm_over_positions(other)[0], pitfalls.layer_norm_over_positions(x)[0])
    longer, _ = padded(5)
    moved = pitfalls.layer_norm_over_positions(longer)[0, :3] - pitfalls.layer_norm_over_positions(x)[0]
    assert moved.abs().max() > 0.1
