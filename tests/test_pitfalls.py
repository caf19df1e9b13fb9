"""transformer_lite.pitfalls: every deliberately wrong variant really differs from the right function."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

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


def test_layer_norm_affine_first_passes_at_init_and_fails_once_gamma_beta_move():
    torch.manual_seed(0)
    x = torch.randn(3, 4, 8) * 2 + 1
    wrong, ln = pf.LayerNormAffineFirst(8), nn.LayerNorm(8)
    torch.testing.assert_close(wrong(x), ln(x))  # gamma = 1, beta = 0: the same numbers, so a naive test passes
    with torch.no_grad():
        for p in (wrong.weight, wrong.bias):
            p.normal_()
        ln.weight.copy_(wrong.weight)
        ln.bias.copy_(wrong.bias)
    assert not torch.allclose(wrong(x), ln(x), atol=1e-2)
    with torch.no_grad():  # a uniform gamma has no effect: the normalization divides it out
        wrong.weight.fill_(3.0)
        wrong.bias.zero_()
    torch.testing.assert_close(wrong(x), nn.LayerNorm(8)(x))
    with pytest.raises(ValueError, match="x"):
        wrong(torch.randn(2, 5))
    with pytest.raises(ValueError, match="eps"):
        pf.LayerNormAffineFirst(8, eps=0)


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


def test_encode_with_vocab_splits_on_spaces_and_makes_known_words_unknown():
    import re

    from transformer_lite.data import UNK, Vocab

    def tokenize(text):
        return re.findall(r"\w+|[^\w\s]", text.lower())

    corpus = ["The cat sat on the mat.", "A cat saw a dog!"]
    vocab = Vocab(t for s in corpus for t in tokenize(s))
    for sentence in corpus:
        assert UNK not in vocab.encode(tokenize(sentence))       # right: every token of the corpus is known
    wrong = pf.encode_with_vocab(vocab, corpus[0])
    assert wrong.count(UNK) == 2 and wrong[1:5] == vocab.encode(["cat", "sat", "on", "the"])  # "The", "mat."


@pytest.mark.parametrize("call, exc, name", [
    (lambda: pf.encode_with_vocab(["the"], "the cat"), TypeError, "vocab"),
    (lambda: pf.merge_heads_without_transpose(torch.randn(2, 3, 4)), ValueError, "x"),
    (lambda: pf.split_heads_without_transpose(torch.randn(2, 3, 5), 2), ValueError, "nhead"),
    (lambda: pf.positional_encoding_reversed_frequencies(10, 7), ValueError, "d_model"),
    (lambda: pf.positional_encoding_reversed_frequencies(0, 8), ValueError, "max_len"),
    (lambda: pf.layer_norm_unbiased_eps_outside([1.0, 2.0]), TypeError, "x"),
    (lambda: pf.causal_mask_including_diagonal(0), ValueError, "T"),
    (lambda: pf.layer_norm_over_positions(torch.randn(2, 4)), ValueError, "x"),
    (lambda: pf.pre_ln_normalizing_the_highway(nn.Linear(4, 4), torch.randn(2, 3, 4)), TypeError, "layer"),
])
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_layer_norm_over_positions_depends_on_padding_not_on_the_batch():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4)
    assert not torch.allclose(pf.layer_norm_over_positions(x), tl.layer_norm(x), atol=1e-3)
    other = x.clone()
    other[1] += 3.0                                                    # another second sentence
    torch.testing.assert_close(pf.layer_norm_over_positions(other)[0], pf.layer_norm_over_positions(x)[0])
    longer = torch.cat([x, torch.zeros(2, 2, 4)], dim=1)               # two positions of padding
    assert (pf.layer_norm_over_positions(longer)[:, :3] - pf.layer_norm_over_positions(x)).abs().max() > 0.1
    # the statistics are per feature over the positions: each (b, d) column has mean 0
    torch.testing.assert_close(pf.layer_norm_over_positions(x).mean(dim=1), torch.zeros(2, 4), atol=1e-6, rtol=0)


def test_pre_ln_normalizing_the_highway_is_neither_pre_ln_nor_post_ln():
    torch.manual_seed(0)
    pre = tl.EncoderLayer(16, 4, 64, dropout=0.0, norm_first=True).eval()
    post = tl.EncoderLayer(16, 4, 64, dropout=0.0, norm_first=False).eval()
    post.load_state_dict(pre.state_dict())
    x = 3 * torch.randn(2, 5, 16)
    with torch.no_grad():
        wrong = pf.pre_ln_normalizing_the_highway(pre, x)
        h = pre.norm1(x)
        h = h + pre.self_attn(h, h, h)[0]
        torch.testing.assert_close(wrong, pre.norm2(h) + pre.ff(pre.norm2(h)))   # LN(x) + F(LN(x)), twice
        assert not torch.allclose(wrong, pre(x), atol=1e-3) and not torch.allclose(wrong, post(x), atol=1e-3)


def test_causal_mask_off_by_one_peeks_one_ahead_and_the_model_leaks():
    T = 5
    wrong = pf.causal_mask_off_by_one(T)
    assert not torch.equal(wrong, tl.causal_mask(T))
    assert not wrong[2, 3] and wrong[2, 4] and not tl.causal_mask(T)[2, 2]  # query 2 sees key 3, not key 4
    torch.manual_seed(0)
    model = tl.Transformer(20, 20, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                           dim_feedforward=32, dropout=0.0).eval()
    src, tgt = torch.randint(4, 20, (1, 6)), torch.randint(4, 20, (1, 8))
    suspect = pf.transformer_with_mask_bug(model)
    tgt2 = tgt.clone()
    tgt2[0, 5] = 4 + (tgt[0, 5] - 4 + 1) % 16
    with torch.no_grad():
        assert suspect(src, tgt).shape == model(src, tgt).shape
        moved = (suspect(src, tgt2) - suspect(src, tgt))[0].abs().amax(-1)
        assert (model(src, tgt2) - model(src, tgt))[0, :5].abs().max() < 1e-5
    assert [t for t in range(5) if moved[t] > 1e-5] == [3, 4]  # one position per decoder layer
    with pytest.raises(TypeError, match="model"):
        pf.transformer_with_mask_bug(nn.Linear(2, 2))


def test_position_ids_ignoring_padding_shift_a_left_padded_sentence():
    ids = torch.tensor([[0, 0, 5, 6, 7], [5, 6, 7, 8, 9]])
    wrong = pf.position_ids_ignoring_padding(ids, 0)
    right = ((ids != 0).cumsum(-1) - 1).clamp(min=0)
    assert wrong[0, 2] == 2 and right[0, 2] == 0  # the first real token: position 2 instead of 0
    assert torch.equal(wrong[1], right[1])  # no padding: the same


def test_micro_batch_mean_of_means_differs_from_the_token_mean_only_for_unequal_lengths():
    torch.manual_seed(0)
    V, PAD_ = 7, 0
    logits = torch.randn(4, 5, V)
    labels = torch.randint(1, V, (4, 5))
    labels[0, 2:] = PAD_  # micro-batch 1 (rows 0-1) has fewer tokens than micro-batch 2 (rows 2-3)
    chunks = [(logits[:2], labels[:2]), (logits[2:], labels[2:])]
    token_mean = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=PAD_)
    mean_of_means = sum(pf.micro_batch_loss_mean_of_means(lg, lb, PAD_, 2) for lg, lb in chunks)
    assert not torch.allclose(mean_of_means, token_mean)
    n = int((labels != PAD_).sum())
    right = sum(F.cross_entropy(lg.reshape(-1, V), lb.reshape(-1), ignore_index=PAD_, reduction="sum") / n
                for lg, lb in chunks)
    torch.testing.assert_close(right, token_mean)
    equal = torch.randint(1, V, (4, 5))  # no padding: equal lengths, the two agree
    torch.testing.assert_close(sum(pf.micro_batch_loss_mean_of_means(logits[i:i + 2], equal[i:i + 2], PAD_, 2)
                                   for i in (0, 2)),
                               F.cross_entropy(logits.reshape(-1, V), equal.reshape(-1), ignore_index=PAD_))
    with pytest.raises(ValueError, match="labels"):
        pf.micro_batch_loss_mean_of_means(logits, labels[:, :3], PAD_, 2)


def test_positional_encoding_cos_column_index():
    L, D = 60, 16
    right, wrong = tl.sinusoidal_positional_encoding(L, D), pf.positional_encoding_cos_column_index(L, D)
    torch.testing.assert_close(wrong[:, 0::2], right[:, 0::2])  # the sines are right ...
    assert not torch.allclose(wrong[:, 1::2], right[:, 1::2], atol=1e-3)  # ... the cosines are not
    torch.testing.assert_close(wrong[0], right[0])  # the same first row: 0, 1, 0, 1, ...
    norms = wrong.norm(dim=1)
    assert norms.max() - norms.min() > 0.1  # no longer sqrt(D/2) at every position
    dots = wrong.double() @ wrong.double().T
    assert (dots.diagonal(1) - dots.diagonal(1)[0]).abs().max() > 0.1  # PE(p)·PE(p+1) depends on p
    with pytest.raises(ValueError, match="d_model"):
        pf.positional_encoding_cos_column_index(10, 7)


def test_attention_softmax_over_queries():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 5, 8, generator=g) for _ in range(3))
    out, w = pf.attention_softmax_over_queries(q, k, v)
    right, w_right = tl.scaled_dot_product_attention(q, k, v)
    assert out.shape == right.shape and w.shape == w_right.shape  # silent: the shapes are right
    torch.testing.assert_close(w.sum(dim=-2), torch.ones(2, 5))  # the columns sum to 1 ...
    assert (w.sum(dim=-1) - 1).abs().max() > 0.1  # ... the rows do not
    assert not torch.allclose(out, right, atol=1e-3)
    with pytest.raises(TypeError, match="query"):
        pf.attention_softmax_over_queries([1.0], k, v)


def test_decoder_layer_ignoring_source_padding():
    torch.manual_seed(0)
    layer = tl.DecoderLayer(8, 2, 32, dropout=0.0).eval()
    wrong = pf.decoder_layer_ignoring_source_padding(layer)
    assert isinstance(wrong, pf.DecoderLayerIgnoringSourcePadding) and isinstance(wrong, tl.DecoderLayer)
    y, memory, mask = torch.randn(1, 6, 8), torch.randn(1, 4, 8), tl.causal_mask(6)
    with torch.no_grad():
        torch.testing.assert_close(wrong(y, memory, tgt_mask=mask), layer(y, memory, tgt_mask=mask))  # no padding: same
        padded = torch.cat([memory, torch.randn(1, 3, 8)], dim=1)
        pad = torch.tensor([[False] * 4 + [True] * 3])
        torch.testing.assert_close(layer(y, padded, tgt_mask=mask, memory_key_padding_mask=pad),
                                   layer(y, memory, tgt_mask=mask))
        moved = wrong(y, padded, tgt_mask=mask, memory_key_padding_mask=pad) - layer(y, memory, tgt_mask=mask)
    assert moved.abs().max() > 1e-2
    assert wrong.self_attn.q_proj.weight is not layer.self_attn.q_proj.weight  # a copy: the original is untouched
    with pytest.raises(TypeError, match="layer"):
        pf.decoder_layer_ignoring_source_padding(nn.Linear(2, 2))


def test_causal_mask_off_by_one_and_the_gpt_that_uses_it():
    from transformer_lite import language_models as lm

    assert pf.causal_mask_off_by_one(4).tolist() == [[False, False, True, True], [False, False, False, True],
                                                    [False, False, False, False], [False, False, False, False]]
    torch.manual_seed(0)
    gpt = lm.DecoderOnlyLM(12, d_model=16, nhead=2, num_layers=1, max_len=8).eval()
    wrong = pf.decoder_only_lm_seeing_one_ahead(gpt)
    ids = torch.tensor([[1, 5, 6, 7, 8]])
    changed = ids.clone()
    changed[0, 3] = 9
    with torch.no_grad():
        right_moved = (gpt(ids) - gpt(changed)).abs().amax(-1)[0]
        wrong_moved = (wrong(ids) - wrong(changed)).abs().amax(-1)[0]
    assert (right_moved[:3] == 0).all() and (right_moved[3:] > 0).all()
    assert right_moved[2] == 0 and wrong_moved[2] > 0  # position 2 sees token 3, the one it must predict
    assert (wrong_moved[:2] == 0).all()
    with pytest.raises(TypeError, match="model"):
        pf.decoder_only_lm_seeing_one_ahead(lm.MaskedLM(12, d_model=16, nhead=2, num_layers=1))


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
