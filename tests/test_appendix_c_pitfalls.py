"""Appendix C (pitfalls): each misconception the appendix demonstrates, checked through the package.

Every wrong variant in ``transformer_lite.pitfalls`` runs and keeps the shape, yet differs from the
right function in the way the appendix says (and only where it says); the right functions match
their references.
"""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import transformer_lite as tl
from transformer_lite import pitfalls
from transformer_lite.book.runtime import book_seed, num_threads
from transformer_lite.data import BOS, EOS, copy_task
from transformer_lite.decoding import exact_match
from transformer_lite.training import teacher_forcing


@pytest.mark.parametrize("D", [2, 4, 16, 512])
def test_unbiased_layer_norm_is_off_by_sqrt_d_minus_1_over_d(D):
    x = torch.randn(20, D)
    torch.testing.assert_close(tl.layer_norm(x), nn.LayerNorm(D)(x), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(pitfalls.layer_norm_unbiased_eps_outside(x, eps=0.0),
                               tl.layer_norm(x, eps=0.0) * math.sqrt((D - 1) / D))


def test_layer_norm_worked_example_and_eps_outside():
    x4 = torch.tensor([1.0, 2.0, 3.0, 4.0])
    torch.testing.assert_close(tl.layer_norm(x4), (x4 - 2.5) / math.sqrt(1.25 + 1e-5))
    flat = torch.tensor([3.0, 3.0001, 2.9999, 3.0])
    assert tl.layer_norm(flat).abs().max() < 0.1 < pitfalls.layer_norm_unbiased_eps_outside(flat).abs().max()


def test_first_pe_dimensions_are_fastest_and_reversed_table_is_a_pair_permutation():
    D = 64
    wl = tl.wavelengths(D)
    assert math.isclose(wl[0].item(), 2 * math.pi, rel_tol=1e-6) and torch.all(wl[2::2] > wl[:-2:2])
    right = tl.sinusoidal_positional_encoding(101, D)
    wrong = pitfalls.positional_encoding_reversed_frequencies(101, D)
    sign = lambda pe: (torch.sign(pe[2:]) != torch.sign(pe[1:-1])).sum(0)  # noqa: E731
    assert sign(right)[0] > 20 and sign(right)[-1] == 0 and sign(wrong)[-2] > 20 and sign(wrong)[0] == 0
    pairs = torch.arange(D).view(-1, 2).flip(0).flatten()
    torch.testing.assert_close(wrong, right[:, pairs])


def test_misread_keep_mask_attends_only_to_the_future():
    T = 5
    q, k, v = torch.randn(T, 8), torch.randn(T, 8), torch.randn(T, 8)
    misread = pitfalls.causal_mask_keep_convention_misread(T)
    _, w = tl.scaled_dot_product_attention(q, k, v, attn_mask=misread)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    torch.testing.assert_close((w * future).sum(-1)[:-1], torch.ones(T - 1))
    assert torch.equal(tl.keep_to_bool(misread), tl.causal_mask(T))


def test_mask_with_diagonal_blocks_self_and_kills_row_zero():
    T = 5
    m = pitfalls.causal_mask_including_diagonal(T)
    _, w = tl.scaled_dot_product_attention(torch.randn(T, 8), torch.randn(T, 8), torch.randn(T, 8), attn_mask=m)
    assert w.diagonal().eq(0).all() and w[0].eq(0).all()
    assert torch.isnan(torch.zeros(T).masked_fill(m[0], float("-inf")).softmax(-1)).all()


def test_unviewed_padding_mask_silently_wrong_when_b_equals_t():
    ids = torch.tensor([[5, 6, 7], [5, 6, 0], [5, 0, 0]])
    pad = tl.padding_mask(ids, 0)
    scores = torch.randn(3, 1, 3, 3)
    ok = scores.masked_fill(pad.view(3, 1, 1, 3), float("-inf")).softmax(-1)
    bad = scores.masked_fill(pad, float("-inf")).softmax(-1)
    assert (ok * pad.view(3, 1, 1, 3)).sum() == 0
    assert (bad * pad.view(3, 1, 1, 3)).sum(-1)[2, 0, 0] > 0  # sentence 3's first query attends to padding


@pytest.mark.parametrize("H,T", [(1, 1), (1, 4), (3, 1), (2, 2), (4, 6)])
def test_missing_transpose_invisible_only_for_one_head_or_one_token(H, T):
    x = torch.randn(2, H, T, 3)
    same = torch.equal(tl.merge_heads(x), pitfalls.merge_heads_without_transpose(x))
    assert same == (H == 1 or T == 1)
    y = torch.randn(2, T, 3 * H)
    assert torch.equal(tl.split_heads(y, H), pitfalls.split_heads_without_transpose(y, H)) == (H == 1 or T == 1)
    torch.testing.assert_close(tl.merge_heads(tl.split_heads(y, H)), y)


@torch.no_grad()
def test_missing_transpose_leaks_the_future():
    mha = tl.MultiHeadAttention(8, 2).eval()

    def attend(x, merge):
        q, k, v = (tl.split_heads(p(x), 2) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        out, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=tl.causal_mask(x.shape[1]))
        return mha.out_proj(merge(out))

    x = torch.randn(1, 6, 8)
    x2 = x.clone()
    x2[:, 5] += 1.0
    torch.testing.assert_close(attend(x, tl.merge_heads), mha(x, x, x, attn_mask=tl.causal_mask(6))[0])
    d_right = (attend(x2, tl.merge_heads) - attend(x, tl.merge_heads))[0].norm(dim=-1)
    d_wrong = (attend(x2, pitfalls.merge_heads_without_transpose)
               - attend(x, pitfalls.merge_heads_without_transpose))[0].norm(dim=-1)
    assert d_right[:-1].max() == 0 and d_wrong[:-1].max() > 1e-3


@pytest.mark.trains
def test_output_projection_is_d_by_v_and_tying_shares_not_copies():
    torch.manual_seed(book_seed())
    V, D = 50, 16
    kw = dict(d_model=D, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, dropout=0.0)
    tied = tl.Transformer(V, V, tie_embeddings=True, **kw)
    assert tied.output_projection.weight.shape == (V, D)
    assert tied.output_projection.weight is tied.tgt_embed.embedding.weight
    src, tgt = torch.randint(4, V, (2, 7)), torch.randint(4, V, (2, 5))
    assert tied(src, tgt).shape == (2, 5, V)
    copied = tl.Transformer(V, V, **kw)
    with torch.no_grad():
        copied.output_projection.weight.copy_(copied.tgt_embed.embedding.weight)
    assert tl.count_parameters(copied) - tl.count_parameters(tied) == V * D
    for m in (tied, copied):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        F.cross_entropy(m(src, tgt).reshape(-1, V), torch.randint(4, V, (10,))).backward()
        opt.step()
    assert torch.equal(tied.output_projection.weight, tied.tgt_embed.embedding.weight)
    assert not torch.equal(copied.output_projection.weight, copied.tgt_embed.embedding.weight)


@pytest.mark.parametrize("norm_first", [False, True])
def test_pre_and_post_ln_match_torch(norm_first):
    ref = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True, norm_first=norm_first)
    ours = tl.from_torch(ref)
    x = torch.randn(2, 5, 16)
    assert ours.norm_first == norm_first
    torch.testing.assert_close(ours(x), ref(x))


def test_torch_default_is_post_ln_and_pre_ln_stream_grows():
    assert nn.TransformerEncoderLayer(16, 4, batch_first=True).norm_first is False
    out = {}
    for norm_first in (False, True):
        torch.manual_seed(0)
        m = tl.Transformer(10, 10, d_model=32, nhead=4, num_encoder_layers=6, num_decoder_layers=1,
                           dim_feedforward=64, dropout=0.0, norm_first=norm_first).eval()
        h = m.src_pos(m.src_embed(torch.randint(4, 10, (4, 8))))
        rms = []
        with torch.no_grad():
            for layer in m.encoder.layers:
                h = layer(h)
                rms.append(h.pow(2).mean().sqrt().item())
        out[norm_first] = rms
    assert max(abs(r - 1) for r in out[False]) < 0.01
    assert out[True][-1] > out[True][0] > 1.0


def test_minus_1e9_uniform_on_dead_row_inf_nan_package_zero():
    blocked = torch.tensor([[True, True, True], [False, True, True], [False, False, True]])
    s = torch.randn(3, 3)
    w_inf = s.masked_fill(blocked, float("-inf")).softmax(-1)
    w_1e9 = s.masked_fill(blocked, -1e9).softmax(-1)
    w_tl = tl.scaled_dot_product_attention(s, torch.eye(3), torch.eye(3), scale=1.0, attn_mask=blocked)[1]
    assert torch.isnan(w_inf[0]).all() and w_tl[0].eq(0).all()
    torch.testing.assert_close(w_1e9[0], torch.full((3,), 1 / 3))
    assert torch.equal(w_inf[1:], w_1e9[1:])


def test_unscaled_attention_saturates_for_wide_heads():
    q, k, v = torch.randn(200, 10, 512), torch.randn(200, 10, 512), torch.randn(200, 10, 1)
    scaled = tl.scaled_dot_product_attention(q, k, v)[1].amax(-1).mean()
    unscaled = pitfalls.attention_without_scaling(q, k, v)[1].amax(-1).mean()
    assert unscaled > 0.9 > 0.5 > scaled


def test_unshifted_labels_equal_the_decoder_input():
    tgt = torch.tensor([[1, 7, 8, 9, 2]])
    dec_in, labels = pitfalls.labels_not_shifted(tgt)
    assert torch.equal(dec_in, labels)  # position t would see its own label
    right_in, right_labels = teacher_forcing(tgt)
    assert torch.equal(right_in[:, 1:], right_labels[:, :-1])  # the label at t is the input at t + 1


@pytest.mark.trains
def test_unshifted_labels_train_a_copier_that_cannot_decode():
    # The appendix's 40-step run. Measured over seeds 0-15 (and 0-7 with ATEN_CPU_CAPABILITY=default
    # MKL_CBWR=COMPATIBLE): last training loss 0.015-0.03, exact match when decoding 0 every time.
    seed = book_seed()
    src, tgt = copy_task(256, 5, 12, seed=0)
    torch.manual_seed(seed)
    model = tl.Transformer(12, 12, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=32, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(seed)
    with num_threads(1):
        for _ in range(40):
            idx = torch.randint(0, 256, (32,), generator=gen)
            dec_in, lab = pitfalls.labels_not_shifted(tgt[idx])
            loss = F.cross_entropy(model(src[idx], dec_in).reshape(-1, 12), lab.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    assert loss.item() < 0.1  # "perfect" training loss: the answer is in the input
    assert exact_match(model, src[:64], tgt[:64], BOS, EOS) < 0.1  # and nothing learned that decoding can use


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_first_false_mixes_the_sentences_of_a_batch(seed):
    torch.manual_seed(seed)
    default, first = nn.MultiheadAttention(8, 2), nn.MultiheadAttention(8, 2, batch_first=True)
    first.load_state_dict(default.state_dict())
    x = torch.randn(2, 3, 8)  # (B, T, D)
    y = x.clone()
    y[1] = torch.randn(3, 8)
    with torch.no_grad():
        moved = (default(y, y, y)[0][0] - default(x, x, x)[0][0]).norm(dim=-1)
        kept = (first(y, y, y)[0][0] - first(x, x, x)[0][0]).abs().max()
    assert moved.min() > 1e-3 and kept == 0


def test_is_causal_is_top_left_and_wrong_with_a_cache():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 5, 4), torch.randn(1, 1, 5, 4)
    cache, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=tl.causal_mask(5)[3:])
    top_left, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=torch.triu(torch.ones(2, 5, dtype=torch.bool), 1))
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True), top_left)
    assert not torch.allclose(top_left, cache, atol=1e-2)


def test_left_padding_positions_change_the_encoding_unless_counted_from_the_first_real_token():
    torch.manual_seed(0)
    m = tl.Transformer(20, 20, d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=1,
                       dim_feedforward=32, dropout=0.0).eval()
    pe = tl.sinusoidal_positional_encoding(16, 16)
    left = torch.tensor([[0, 0, 5, 6, 7]])

    def encode_at(ids, pos):
        return m.encoder(m.src_embed(ids) + pe[pos], src_key_padding_mask=tl.padding_mask(ids, 0))

    with torch.no_grad():
        alone = m.encode(left[:, 2:])
        wrong = encode_at(left, pitfalls.position_ids_ignoring_padding(left, 0))[:, 2:]
        right = encode_at(left, ((left != 0).cumsum(-1) - 1).clamp(min=0))[:, 2:]
        torch.testing.assert_close(m.encode(torch.tensor([[5, 6, 7, 0, 0]]))[:, :3], alone)
    torch.testing.assert_close(right, alone)
    assert (wrong - alone).abs().max() > 0.1
