"""Chapter 7 (masking): the chapter's claims, checked through the package.

Padding and causal masks broadcast to (B, H, T, S); the three conventions give identical attention
and mixing them up inverts the mask or blocks nothing; a fully masked row gives NaN with -inf in a plain softmax,
uniform weights with -1e9, and zeros (with finite gradients) in transformer_lite; changing future
tokens or appending padding leaves the other outputs unchanged -- and does not without the masks.
"""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import transformer_lite as tl

PAD = 0


def _ids():
    return torch.tensor([[4, 5, 6, 7, 8], [9, 10, 11, PAD, PAD]])  # (B=2, S=5), right padding


def test_merge_masks_broadcasts_to_scores_with_the_right_meaning():
    ids = _ids()
    B, S = ids.shape
    pad, causal = tl.padding_mask(ids, PAD), tl.causal_mask(S)
    both = tl.merge_masks(causal, pad, B, S, S)
    assert both.shape == (B, 1, S, S)
    full = both.expand(B, 3, S, S)
    b, h, i, j = torch.meshgrid(*(torch.arange(n) for n in full.shape), indexing="ij")
    expected = (ids[b, j] == PAD) | (j > i)
    assert torch.equal(full, expected)


def test_unviewed_padding_mask_does_not_broadcast_against_scores():
    pad = tl.padding_mask(_ids(), PAD)  # (2, 5) against (2, 2, 5, 5): B is read as T
    with pytest.raises(RuntimeError):
        torch.randn(2, 2, 5, 5).masked_fill(pad, float("-inf"))


def test_three_conventions_give_identical_attention():
    ids = _ids()
    B, S = ids.shape
    blocked = tl.merge_masks(tl.causal_mask(S), tl.padding_mask(ids, PAD), B, S, S)
    q, k, v = (torch.randn(B, 2, S, 4) for _ in range(3))
    ref, w_ref = tl.scaled_dot_product_attention(q, k, v, attn_mask=blocked)
    out_add, w_add = tl.scaled_dot_product_attention(q, k, v, attn_mask=tl.bool_to_additive(blocked))
    keep = tl.bool_to_keep(blocked)
    w_keep = (q @ k.transpose(-2, -1) / math.sqrt(4)).masked_fill(keep == 0, float("-inf")).softmax(-1)
    out_sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=keep.bool())
    torch.testing.assert_close(out_add, ref)
    torch.testing.assert_close(w_add, w_ref)
    torch.testing.assert_close(w_keep, w_ref)
    torch.testing.assert_close(w_keep @ v, ref)
    torch.testing.assert_close(out_sdpa, ref)
    assert w_ref.masked_select(blocked.expand_as(w_ref)).eq(0).all()


def test_module_masks_match_torch_multihead_attention():
    ids = _ids()
    B, S = ids.shape
    torch_mha = nn.MultiheadAttention(8, 2, batch_first=True)
    ours = tl.from_torch(torch_mha)
    x = torch.randn(B, S, 8)
    pad, causal = tl.padding_mask(ids, PAD), tl.causal_mask(S)
    ref, ref_w = torch_mha(x, x, x, key_padding_mask=pad, attn_mask=causal, average_attn_weights=False)
    for kpm, am in [(pad, causal), (tl.bool_to_additive(pad), tl.bool_to_additive(causal))]:
        out, w = ours(x, x, x, key_padding_mask=kpm, attn_mask=am)
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(w, ref_w)


def test_blocked_mask_given_to_sdpa_is_inverted():
    ids = _ids()
    B, S = ids.shape
    blocked = tl.merge_masks(tl.causal_mask(S), tl.padding_mask(ids, PAD), B, S, S)
    q, k, v = (torch.randn(B, 2, S, 4) for _ in range(3))
    right, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=blocked)
    wrong = torch.nan_to_num(F.scaled_dot_product_attention(q, k, v, attn_mask=blocked))
    inverted, w_inv = tl.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)
    torch.testing.assert_close(wrong, inverted)
    assert not torch.allclose(wrong, right)
    alive = blocked.any(-1).expand(B, 2, S)  # rows where the inverted mask (~blocked) allows something
    share = (w_inv * blocked).sum(-1)
    torch.testing.assert_close(share[alive], torch.ones(int(alive.sum())))


def _left_padded_blocked():
    ids = torch.tensor([[PAD, PAD, 9, 10, 11]])
    blocked = tl.merge_masks(tl.causal_mask(5), tl.padding_mask(ids, PAD), 1, 5, 5)[0, 0]
    return blocked, blocked.all(-1)


def test_fully_masked_rows_inf_nan_1e9_uniform_package_zero():
    blocked, dead = _left_padded_blocked()
    assert dead.tolist() == [True, True, False, False, False]
    s = torch.randn(5, 5)
    w_inf = s.masked_fill(blocked, float("-inf")).softmax(-1)
    w_1e9 = s.masked_fill(blocked, -1e9).softmax(-1)
    w_tl = tl.scaled_dot_product_attention(s, torch.eye(5), torch.eye(5), scale=1.0, attn_mask=blocked)[1]
    assert torch.isnan(w_inf[dead]).all()
    torch.testing.assert_close(w_1e9[dead], torch.full((2, 5), 0.2))
    assert w_tl[dead].eq(0).all()
    assert torch.equal(w_inf[~dead], w_1e9[~dead])
    torch.testing.assert_close(w_tl[~dead], w_inf[~dead])


@pytest.mark.parametrize("additive", [False, True])
def test_fully_masked_rows_have_finite_gradients(additive):
    blocked, dead = _left_padded_blocked()
    mask = tl.bool_to_additive(blocked) if additive else blocked
    q, k, v = (torch.randn(5, 4, requires_grad=True) for _ in range(3))
    out, w = tl.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.sum().backward()
    assert out[dead].eq(0).all() and w[dead].eq(0).all()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


def test_nan_spreads_in_torch_but_not_in_package():
    blocked, dead = _left_padded_blocked()
    ids = torch.tensor([[PAD, PAD, 9, 10, 11]])
    kpm, cm = tl.padding_mask(ids, PAD), tl.causal_mask(5)
    torch_mha = nn.MultiheadAttention(8, 2, batch_first=True)
    ours = tl.from_torch(torch_mha)
    x = torch.randn(1, 5, 8)
    h1, _ = torch_mha(x, x, x, key_padding_mask=kpm, attn_mask=cm)
    h2, _ = torch_mha(h1, h1, h1, key_padding_mask=kpm, attn_mask=cm)
    assert torch.isnan(h1).any(-1)[0].tolist() == dead.tolist()
    assert torch.isnan(h2).any(-1).all()
    g1, _ = ours(x, x, x, key_padding_mask=kpm, attn_mask=cm)
    g2, _ = ours(g1, g1, g1, key_padding_mask=kpm, attn_mask=cm)
    assert torch.isfinite(g2).all()
    torch.testing.assert_close(g1[0, ~dead], h1[0, ~dead])


def _small_model(V=20):
    return tl.Transformer(V, V, d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                          dim_feedforward=64, dropout=0.0).eval()


@torch.no_grad()
def test_future_tokens_do_not_change_earlier_outputs():
    V, T = 20, 8
    model = _small_model(V)
    src, tgt = torch.randint(4, V, (2, 6)), torch.randint(4, V, (2, T))
    logits = model(src, tgt)
    for t0 in range(1, T):
        tgt2 = tgt.clone()
        tgt2[:, t0:] = 4 + (tgt[:, t0:] - 4 + 1) % (V - 4)  # every token from t0 on changes
        logits2 = model(src, tgt2)
        torch.testing.assert_close(logits2[:, :t0], logits[:, :t0])
        assert (logits2[:, t0] - logits[:, t0]).abs().amax(-1).min() > 1e-4


@torch.no_grad()
def test_without_causal_mask_the_future_leaks():
    V, T = 20, 8
    model = _small_model(V)
    src, tgt = torch.randint(4, V, (1, 6)), torch.randint(4, V, (1, T))
    tgt2 = tgt.clone()
    tgt2[:, -1] = 4 + (tgt[:, -1] - 4 + 1) % (V - 4)
    memory = model.encode(src)

    def unmasked(t):
        return model.output_projection(model.decoder(model.tgt_pos(model.tgt_embed(t)), memory))

    assert (unmasked(tgt2) - unmasked(tgt))[0, 0].abs().max() > 1e-3


def test_causal_influence_is_lower_triangular():
    model = _small_model()
    T = 6
    with torch.no_grad():
        memory = model.encode(torch.randint(4, 20, (1, 5)))
        x = model.tgt_pos(model.tgt_embed(torch.randint(4, 20, (1, T))))
    J = torch.autograd.functional.jacobian(lambda inp: model.decoder(inp, memory, tgt_mask=tl.causal_mask(T)), x,
                                           vectorize=True)
    infl = J[0, :, :, 0].pow(2).sum(dim=(1, 3)).sqrt()  # (T, T)
    upper = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert infl[upper].eq(0).all() and infl[~upper].gt(0).all()


@torch.no_grad()
def test_appending_padding_leaves_real_outputs_unchanged():
    V = 20
    model = _small_model(V)
    src, tgt = torch.randint(4, V, (1, 6)), torch.randint(4, V, (1, 7))
    memory0, logits0 = model.encode(src), model(src, tgt)
    raw0 = model.encoder(model.src_pos(model.src_embed(src)))
    for n_pad in (1, 3, 6):
        padded = torch.cat([src, torch.full((1, n_pad), PAD)], dim=1)
        torch.testing.assert_close(model.encode(padded)[:, :6], memory0)
        torch.testing.assert_close(model(padded, tgt), logits0)
        raw = model.encoder(model.src_pos(model.src_embed(padded)))[:, :6]  # without the padding mask
        assert (raw - raw0).abs().max() > 1e-2


@torch.no_grad()
def test_sentence_alone_equals_sentence_in_padded_batch():
    V = 20
    model = _small_model(V)
    short, long = [4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15]
    from transformer_lite.data import pad_batch

    alone = model.encode(pad_batch([short]))
    batch = model.encode(pad_batch([short, long]))
    torch.testing.assert_close(batch[0, :5], alone[0])


def test_minus_1e9_does_not_fit_float16():
    with pytest.raises(RuntimeError):
        torch.zeros(3, dtype=torch.float16).masked_fill(torch.tensor([True, False, False]), -1e9)
    assert torch.tensor(-1e9).half().item() == float("-inf")


def test_apply_mask_and_softmax_over_keys_the_functions_the_chapter_shows():
    from transformer_lite.attention import apply_mask, softmax_over_keys

    blocked, dead = _left_padded_blocked()
    s = torch.randn(5, 5)
    assert torch.equal(apply_mask(s, blocked), s.masked_fill(blocked, float("-inf")))
    assert torch.equal(apply_mask(s, tl.bool_to_additive(blocked)), apply_mask(s, blocked))
    assert apply_mask(s, None) is s
    for mask in (blocked, tl.bool_to_additive(blocked)):
        z = apply_mask(s, mask).requires_grad_()
        w = softmax_over_keys(z)
        assert w[dead].eq(0).all()
        torch.testing.assert_close(w[~dead], torch.softmax(z[~dead], dim=-1))  # elsewhere: the plain softmax
        (w * torch.randn(5, 5)).sum().backward()
        assert torch.isfinite(z.grad).all() and z.grad[dead].eq(0).all()


def test_mixed_conventions_invert_or_block_nothing_while_each_convention_alone_agrees():
    # The chapter's misconception note: three conventions, the same weights when each meets the code that
    # expects it; inverted or unblocked when mixed.
    ids = _ids()
    B, S = ids.shape
    blocked = tl.merge_masks(tl.causal_mask(S), tl.padding_mask(ids, PAD), B, S, S)
    keep, additive = tl.bool_to_keep(blocked), tl.bool_to_additive(blocked)
    q, k, v = (torch.randn(B, 2, S, 4) for _ in range(3))
    scores = q @ k.transpose(-2, -1) / math.sqrt(4)
    _, w_ref = tl.scaled_dot_product_attention(q, k, v, attn_mask=blocked)
    torch.testing.assert_close(scores.masked_fill(keep == 0, -1e10).softmax(-1), w_ref)  # no fully masked row here
    torch.testing.assert_close((scores + additive).softmax(-1), w_ref)
    inverted = scores.masked_fill(blocked == 0, -1e10).softmax(-1)  # the tutorial line on a True-blocked mask
    alive = (~blocked).any(-1).expand(B, 2, S) & blocked.any(-1).expand(B, 2, S)
    torch.testing.assert_close((inverted * blocked).sum(-1)[alive], torch.ones(int(alive.sum())))
    added = (scores + keep).softmax(-1)  # a keep mask added as a float mask blocks nothing
    assert added[blocked.expand_as(added)].gt(0).all()
    _, w_keep_as_blocked = tl.scaled_dot_product_attention(q, k, v, attn_mask=keep.bool())
    assert w_keep_as_blocked[blocked.expand_as(w_keep_as_blocked)].sum() > 0
    assert w_keep_as_blocked[~blocked.expand_as(w_keep_as_blocked)].eq(0).all()


def test_is_causal_aligns_top_left_which_is_wrong_with_a_kv_cache():
    torch.manual_seed(0)
    T, S = 2, 5
    q, k, v = torch.randn(1, 1, T, 4), torch.randn(1, 1, S, 4), torch.randn(1, 1, S, 4)
    bottom_right = tl.causal_mask(S)[S - T:]
    assert torch.equal(bottom_right, torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=S - T + 1))
    right, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right)
    top_left, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=torch.triu(torch.ones(T, S, dtype=torch.bool), 1))
    with_is_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(with_is_causal, top_left)
    assert not torch.allclose(with_is_causal, right, atol=1e-2)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=~bottom_right), right)


def test_the_package_decodes_with_a_cache_as_without():
    # What the chapter recommends with a cache (the last T rows of the full causal mask) is what decode does.
    torch.manual_seed(0)
    model = _small_model()
    src, tgt = torch.randint(4, 20, (1, 6)), torch.randint(4, 20, (1, 7))
    with torch.no_grad():
        memory = model.encode(src)
        full = model.decode(tgt, memory, src=src)
        cache = model.new_cache()
        first = model.decode(tgt[:, :4], memory, src=src, cache=cache)
        rest = model.decode(tgt[:, 4:], memory, src=src, cache=cache)  # T = 3 new tokens, S = 7 keys
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full, atol=1e-5, rtol=1e-4)
