"""transformer_lite.pitfalls: every deliberately wrong variant really differs from the right function."""

import pytest
import torch
import torch.nn as nn

import transformer_lite as tl
from transformer_lite import pitfalls as pf
from transformer_lite.training import teacher_forcing


def test_layer_norm_unbiased_eps_outside_differs_from_nn_layernorm():
    torch.manual_seed(0)
    x = torch.randn(3, 4, 8)
    ln = nn.LayerNorm(8)
    torch.testing.assert_close(tl.layer_norm(x, ln.weight, ln.bias), ln(x))  # the right one matches
    wrong = pf.layer_norm_unbiased_eps_outside(x, ln.weight, ln.bias)
    assert not torch.allclose(wrong, ln(x), atol=1e-3)
    # the unbiased std makes the variance (D - 1) / D instead of 1
    var = wrong.var(dim=-1, unbiased=False)
    torch.testing.assert_close(var, torch.full_like(var, 7 / 8), atol=1e-4, rtol=1e-4)
    # a nearly constant vector: eps inside vs outside the root gives very different outputs
    flat = torch.tensor([[1.0, 1.0, 1.0, 1.001]])
    right = tl.layer_norm(flat, eps=1e-5)
    assert (pf.layer_norm_unbiased_eps_outside(flat, eps=1e-5) - right).abs().max() > 0.1


def test_merge_heads_without_transpose_mixes_positions():
    B, H, T, D_h = 2, 4, 5, 3
    x = tl.split_heads(torch.randn(B, T, H * D_h), H)
    assert pf.merge_heads_without_transpose(x).shape == (B, T, H * D_h)  # same shape, no error
    assert not torch.equal(pf.merge_heads_without_transpose(x), tl.merge_heads(x))
    # Tag every entry with its position: the wrong merge puts several positions into one vector.
    pos = torch.arange(T).view(1, 1, T, 1).expand(B, H, T, D_h).float()
    assert (tl.merge_heads(pos)[0, 2] == 2).all()
    assert len(set(pf.merge_heads_without_transpose(pos)[0, 2].tolist())) > 1


def test_split_heads_without_transpose_differs():
    x = torch.randn(2, 5, 8)
    wrong = pf.split_heads_without_transpose(x, 4)
    assert wrong.shape == tl.split_heads(x, 4).shape
    assert not torch.equal(wrong, tl.split_heads(x, 4))
    assert torch.equal(tl.merge_heads(tl.split_heads(x, 4)), x)  # the right pair round-trips


def test_positional_encoding_reversed_frequencies():
    right = tl.sinusoidal_positional_encoding(50, 16)
    wrong = pf.positional_encoding_reversed_frequencies(50, 16)
    assert wrong.shape == right.shape and not torch.allclose(wrong, right)
    # the same sin/cos pairs, in reverse order
    pairs_right, pairs_wrong = right.view(50, 8, 2), wrong.view(50, 8, 2)
    torch.testing.assert_close(pairs_wrong, pairs_right.flip(1))
    # right: dimension 0 is the fastest (changes most between neighbours); wrong: the slowest
    step_right = (right[1:] - right[:-1]).abs().mean(0)
    step_wrong = (wrong[1:] - wrong[:-1]).abs().mean(0)
    assert step_right[0] > step_right[-2] and step_wrong[0] < step_wrong[-2]


def test_attention_without_scaling_saturates():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 6, 256), torch.randn(1, 6, 256), torch.randn(1, 6, 256)
    _, w_right = tl.scaled_dot_product_attention(q, k, v)
    _, w_wrong = pf.attention_without_scaling(q, k, v)
    assert w_wrong.max(-1).values.mean() > 0.9 > 0.6 > w_right.max(-1).values.mean()  # nearly one-hot


def test_causal_mask_variants():
    T = 4
    right = tl.causal_mask(T)
    misread = pf.causal_mask_keep_convention_misread(T)
    diag = pf.causal_mask_including_diagonal(T)
    assert not torch.equal(misread, right) and not torch.equal(diag, right)
    assert not right[2, 1] and right[1, 2]  # right: the past is visible, the future is not
    assert misread[2, 1] and not misread[1, 2]  # misread: the opposite
    assert diag[0].all()  # position 0 may attend to nothing at all
    q = torch.randn(1, T, 8)
    out, w = tl.scaled_dot_product_attention(q, q, q, attn_mask=diag)
    assert (w[0, 0] == 0).all()  # the package's attention gives 0 here, plain PyTorch gives NaN


def test_labels_not_shifted():
    tgt = torch.tensor([[1, 7, 8, 2]])
    dec_in, labels = pf.labels_not_shifted(tgt)
    assert torch.equal(dec_in, labels)  # the label is the input itself: a copy task, not prediction
    right_in, right_labels = teacher_forcing(tgt)
    assert not torch.equal(right_in, right_labels)


@pytest.mark.parametrize("call, exc, name", [
    (lambda: pf.merge_heads_without_transpose(torch.randn(2, 3, 4)), ValueError, "x"),
    (lambda: pf.split_heads_without_transpose(torch.randn(2, 3, 5), 2), ValueError, "nhead"),
    (lambda: pf.positional_encoding_reversed_frequencies(10, 7), ValueError, "d_model"),
    (lambda: pf.positional_encoding_reversed_frequencies(0, 8), ValueError, "max_len"),
    (lambda: pf.layer_norm_unbiased_eps_outside([1.0, 2.0]), TypeError, "x"),
    (lambda: pf.causal_mask_including_diagonal(0), ValueError, "T"),
])
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_patch_encoder_positions_sliced_by_batch_loses_positions_for_one_image_only():
    from transformer_lite.pitfalls import PatchEncoderPositionsSlicedByBatch
    from transformer_lite.vision import PatchEncoder

    torch.manual_seed(0)
    right = PatchEncoder(32, 8, 3, 4, positional="2d").eval()
    wrong = PatchEncoderPositionsSlicedByBatch(32, 8, 3, 4, positional="2d").eval()
    wrong.load_state_dict(right.state_dict())
    images = torch.rand(17, 3, 32, 32)                      # a batch of N + 1 = 17 images: the bug is invisible
    with torch.no_grad():
        torch.testing.assert_close(wrong(images), right(images))
        one = images[:1]
        moved = torch.roll(one, shifts=8, dims=-1)          # the same patches, one column to the right (wrapping)
        # one image: no positions at all, so moving whole patches around changes nothing ...
        torch.testing.assert_close(wrong(moved), wrong(one))
        # ... while the right model sees the move
        assert (right(moved) - right(one)).abs().max() > 1e-4
        assert (wrong(one) - right(one)).abs().max() > 1e-4
    with pytest.raises(RuntimeError):                        # 1 < B < N + 1: a shape error, not a silent one
        wrong(images[:5])


def test_transformer_encoder_padding_not_masked_depends_on_padding_and_nothing_else():
    from transformer_lite.pitfalls import TransformerEncoderPaddingNotMasked

    torch.manual_seed(0)
    cfg = tl.TransformerConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16, nhead=2, num_encoder_layers=1,
                               num_decoder_layers=1, dim_feedforward=32, dropout=0.0)
    right = tl.Transformer(cfg).eval()
    wrong = TransformerEncoderPaddingNotMasked(cfg).eval()
    wrong.load_state_dict(right.state_dict())
    src = torch.tensor([[5, 6, 7]])
    padded = torch.cat([src, torch.full((1, 4), cfg.pad_id)], 1)
    tgt = torch.tensor([[1, 8, 9]])
    with torch.no_grad():
        torch.testing.assert_close(wrong(src, tgt), right(src, tgt))            # no padding: the same model
        assert (wrong.encode(padded)[:, :3] - wrong.encode(src)).abs().max() > 1e-3   # padding leaks into the words
        torch.testing.assert_close(right.encode(padded)[:, :3], right.encode(src))
