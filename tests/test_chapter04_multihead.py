"""Chapter 4 (multi-head attention): the chapter's claims, checked through the package."""
import pytest
import torch
import torch.nn as nn

import transformer_lite as tl
from transformer_lite.book.runtime import book_seed, num_threads
from transformer_lite.pitfalls import merge_heads_without_transpose


@pytest.mark.parametrize("B,T,D,H", [(1, 3, 8, 2), (2, 5, 12, 3), (3, 1, 16, 16), (2, 7, 16, 1)])
def test_split_shapes_and_merge_inverts_split(B, T, D, H):
    x = torch.randn(B, T, D)
    xs = tl.split_heads(x, H)
    assert xs.shape == (B, H, T, D // H)
    torch.testing.assert_close(tl.merge_heads(xs), x)


def test_split_gives_each_head_a_slice_of_features_of_every_word():
    T, D, H = 3, 8, 2
    x = (10 * torch.arange(T)[:, None] + torch.arange(D)[None, :]).float()[None]  # x[0, t, d] = 10t + d
    xs = tl.split_heads(x, H)
    for h in range(H):
        torch.testing.assert_close(xs[0, h], x[0, :, h * 4:(h + 1) * 4])
        assert (xs[0, h] // 10).tolist() == [[t] * 4 for t in range(T)]  # one word per row


def test_every_head_reads_every_input_feature_only_q_is_split():
    # the chapter's opening claim: the split cuts q = x W^Q, not x; each head depends on all D input features
    torch.manual_seed(0)
    D, H = 8, 2
    mha = tl.MultiHeadAttention(D, H)
    x = torch.randn(1, 3, D)
    for proj in (mha.q_proj, mha.k_proj, mha.v_proj):
        for h in range(H):
            head = lambda i, proj=proj, h=h: tl.split_heads(proj(i), H)[0, h]  # noqa: E731
            J = torch.autograd.functional.jacobian(head, x)  # (T, D_h, 1, T, D)
            assert (J.abs().sum(dim=(0, 1, 2, 3)) > 0).all()
    J_x = torch.autograd.functional.jacobian(lambda i: tl.split_heads(i, H)[0, 0], x)  # the misconception's picture
    assert (J_x.abs().sum(dim=(0, 1, 2, 3))[D // H:] == 0).all()


def test_torch_multihead_attention_is_sequence_first_by_default():
    torch.manual_seed(0)
    batch_first = nn.MultiheadAttention(16, 4, batch_first=True)
    seq_first = nn.MultiheadAttention(16, 4)
    assert seq_first.batch_first is False
    seq_first.load_state_dict(batch_first.state_dict())
    x = torch.randn(2, 6, 16)  # (B, S, D)
    out_sbd, _ = seq_first(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1))
    torch.testing.assert_close(out_sbd.transpose(0, 1), batch_first(x, x, x)[0])
    torch.testing.assert_close(tl.from_torch(seq_first)(x, x, x)[0], batch_first(x, x, x)[0])  # ours: batch-first
    misread, _ = seq_first(x, x, x)  # (B, S, D) where (S, B, D) is expected: no error ...
    x2 = x.clone()
    x2[1] += 1.0
    assert misread.shape == x.shape
    assert (seq_first(x2, x2, x2)[0][0] - misread[0]).abs().max() > 1e-3  # ... but the sentences attend to each other


def test_merge_without_transpose_keeps_shape_but_mixes_words():
    T, D, H = 3, 8, 2
    x = (10 * torch.arange(T)[:, None] + torch.arange(D)[None, :]).float()[None]
    wrong = merge_heads_without_transpose(tl.split_heads(x, H))
    assert wrong.shape == x.shape
    assert not torch.equal(wrong, x)
    assert wrong[0, 0].tolist() == [0, 1, 2, 3, 10, 11, 12, 13]  # word 0's row holds part of word 1


def _dependence(fn, x):
    J = torch.autograd.functional.jacobian(fn, x)[0, :, :, 0]  # (T, D, T, D)
    return J.abs().sum(dim=(1, 3)) > 1e-7


def _mha_forward(mha, x, attn_mask, merge):
    q, k, v = (tl.split_heads(p(x), mha.nhead) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    out, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    return mha.out_proj(merge(out))


def test_missing_transpose_leaks_the_future_under_a_causal_mask():
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(8, 2)
    x = torch.randn(1, 5, 8)
    mask = tl.causal_mask(5)
    torch.testing.assert_close(_mha_forward(mha, x, mask, tl.merge_heads), mha(x, x, x, attn_mask=mask)[0])
    future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    ok = _dependence(lambda i: _mha_forward(mha, i, mask, tl.merge_heads), x)
    bug = _dependence(lambda i: _mha_forward(mha, i, mask, merge_heads_without_transpose), x)
    assert not (ok & future).any()
    assert ok[~future].all()  # every output does depend on itself and every earlier word
    assert (bug & future).any()


@pytest.mark.parametrize("D", [8, 64, 512])
def test_parameter_count_does_not_depend_on_heads(D):
    counts = {H: tl.count_parameters(tl.MultiHeadAttention(D, H)) for H in (1, 2, 4, 8) if D % H == 0}
    assert set(counts.values()) == {4 * (D * D + D)}


def test_per_head_projection_is_a_slice_of_the_full_one():
    torch.manual_seed(1)
    mha = tl.MultiHeadAttention(12, 3)
    x = torch.randn(2, 4, 12)
    q = tl.split_heads(mha.q_proj(x), 3)
    for i in range(3):
        rows = slice(4 * i, 4 * (i + 1))
        torch.testing.assert_close(x @ mha.q_proj.weight[rows].T + mha.q_proj.bias[rows], q[:, i])


def test_concat_then_project_equals_sum_of_per_head_projections():
    torch.manual_seed(2)
    mha = tl.MultiHeadAttention(8, 2)
    x = torch.randn(1, 5, 8)
    q, k, v = (tl.split_heads(p(x), 2) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    heads, _ = tl.scaled_dot_product_attention(q, k, v)
    W_O = mha.out_proj.weight.T
    total = sum(heads[:, i] @ W_O[4 * i:4 * (i + 1)] for i in range(2)) + mha.out_proj.bias
    torch.testing.assert_close(total, mha(x, x, x)[0])


def test_equals_torch_multihead_attention_and_its_averaged_weights():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(16, 4, batch_first=True)
    ours = tl.from_torch(theirs)
    x = torch.randn(2, 6, 16)
    kpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    out_t, w_avg = theirs(x, x, x, key_padding_mask=kpm)
    _, w_heads = theirs(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    out_o, w_o = ours(x, x, x, key_padding_mask=kpm)
    torch.testing.assert_close(out_o, out_t)
    assert w_o.shape == (2, 4, 6, 6) and w_avg.shape == (2, 6, 6)
    torch.testing.assert_close(w_o, w_heads)
    torch.testing.assert_close(w_o.mean(1), w_avg)
    assert (w_o[1, :, :, 4:] == 0).all()  # padding keys get no weight


def _neighbour_task(nhead, seed, steps=300):
    "Train one attention layer on chapter 4's neighbour task; (test loss, left share, right share) per head."
    T, C = 8, 8
    torch.manual_seed(seed)
    layer = tl.MultiHeadAttention(C + T, nhead)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(seed)

    def batch(n, generator):
        c = torch.randn(n, T, C, generator=generator)
        x = torch.cat([c, torch.eye(T).expand(n, T, T)], -1)
        return x, torch.cat([c.roll(1, 1), c.roll(-1, 1)], -1)

    with num_threads(1):  # tiny matrices: one thread is several times faster (no contention)
        for _ in range(steps):
            x, y = batch(32, g)
            loss = ((layer(x, x, x, need_weights=False)[0] - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    x, y = batch(256, torch.Generator().manual_seed(1234))  # fresh test data
    with torch.no_grad():
        out, w = layer(x, x, x)
    t = torch.arange(T)
    w = w.mean(0)
    return ((out - y) ** 2).mean().item(), w[:, t, (t - 1) % T].mean(-1), w[:, t, (t + 1) % T].mean(-1)


@pytest.mark.trains
def test_one_head_cannot_fetch_both_neighbours_two_heads_can():
    # Measured over seeds 0-15 (and 0-3 with ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE): loss1 0.46-0.51,
    # loss2 / loss1 <= 0.0023, the single head's two shares sum to 0.94-0.95 and the smaller is >= 0.36,
    # each H=2 head puts >= 0.75 on its side.
    seed = book_seed()
    loss1, left1, right1 = _neighbour_task(1, seed)
    loss2, left2, right2 = _neighbour_task(2, seed)
    assert loss1 > 0.3  # stuck: predicting zeros scores 1.0, a fixed average of the two neighbours 0.5
    assert loss2 < 0.05 * loss1
    # the single head spreads its weight over both neighbours (the loss does not care how it splits it)
    assert min(left1.item(), right1.item()) > 0.2 and left1.item() + right1.item() > 0.8
    assert sorted([left2.argmax().item(), right2.argmax().item()]) == [0, 1]  # one head per side
    assert min(left2.max().item(), right2.max().item()) > 0.6


def test_forward_steps_project_kv_and_attend_are_the_chapters_steps():
    torch.manual_seed(3)
    mha = tl.MultiHeadAttention(12, 3)
    x, memory = torch.randn(2, 4, 12), torch.randn(2, 6, 12)
    k, v = mha._project_kv(memory, memory)  # without a cache: the same projection and split as for q
    torch.testing.assert_close(k, tl.split_heads(mha.k_proj(memory), 3))
    torch.testing.assert_close(v, tl.split_heads(mha.v_proj(memory), 3))
    q = tl.split_heads(mha.q_proj(x), 3)
    heads, w = tl.scaled_dot_product_attention(q, k, v)
    for need_weights in (True, False):  # the readable path and the fused kernel
        out, weights = mha(x, memory, memory, need_weights=need_weights)
        torch.testing.assert_close(out, mha.out_proj(tl.merge_heads(heads)))
        assert (weights is None) == (not need_weights)
    torch.testing.assert_close(mha(x, memory, memory)[1], w)


def test_six_line_forward_equals_the_package_and_torch():
    # the chapter's own minimal forward pass, in place of showing the package's (cache, masks, fast path)
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(8, 2, batch_first=True)
    ours = tl.from_torch(theirs)
    x = torch.randn(1, 5, 8)
    causal = tl.causal_mask(5)
    six = _mha_forward(ours, x, causal, tl.merge_heads)
    torch.testing.assert_close(six, ours(x, x, x, attn_mask=causal)[0])
    torch.testing.assert_close(six, theirs(x, x, x, attn_mask=causal)[0])
    assert not torch.allclose(_mha_forward(ours, x, causal, merge_heads_without_transpose), six)


def _held_out(model, data, switched_off=()):
    import torch.nn.functional as F

    from transformer_lite.data import PAD
    from transformer_lite.training import teacher_forcing

    tgt_in, labels = teacher_forcing(data.test_tgt)
    hooks = []
    for attn, h in switched_off:
        def hook(module, args, attn=attn, h=h):
            merged = args[0].clone()
            merged[..., h * attn.head_dim:(h + 1) * attn.head_dim] = 0
            return (merged,)
        hooks.append(attn.out_proj.register_forward_pre_hook(hook))
    with torch.no_grad():
        logits = model(data.test_src, tgt_in)
    for handle in hooks:
        handle.remove()
    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=PAD).item()
    exact = ((logits.argmax(-1) == labels) | (labels == PAD)).all(dim=1).float().mean().item()
    return loss, exact


def test_no_single_head_of_the_shipped_translator_is_indispensable_but_a_layer_of_them_is():
    # the misconception note "each head has a fixed role": switching one head off moves the held-out loss by
    # < 5% (measured: -0.8% to +4.3%), switching off the last cross-attention's heads together breaks translation
    from transformer_lite.book.pretrained import tiny_translator

    model, data, _ = tiny_translator()
    attns = [layer.self_attn for layer in model.encoder.layers]
    attns += [a for layer in model.decoder.layers for a in (layer.self_attn, layer.multihead_attn)]
    base_loss, base_exact = _held_out(model, data)
    with num_threads(1):
        changes = [_held_out(model, data, [(a, h)])[0] / base_loss - 1 for a in attns for h in range(a.nhead)]
    assert len(changes) == 24 and max(abs(c) for c in changes) < 0.05 and min(changes) < 0
    last_cross = model.decoder.layers[-1].multihead_attn
    _, exact = _held_out(model, data, [(last_cross, h) for h in range(last_cross.nhead)])
    assert base_exact > 0.95 and exact < 0.5 * base_exact


def test_permuting_heads_changes_nothing_but_their_order():
    import copy

    torch.manual_seed(1)
    mha = tl.MultiHeadAttention(16, 4).eval()
    order, d = [2, 0, 3, 1], 4
    idx = torch.cat([torch.arange(i * d, (i + 1) * d) for i in order])
    new = copy.deepcopy(mha)
    with torch.no_grad():
        for p_new, p_old in [(new.q_proj, mha.q_proj), (new.k_proj, mha.k_proj), (new.v_proj, mha.v_proj)]:
            p_new.weight.copy_(p_old.weight[idx])
            p_new.bias.copy_(p_old.bias[idx])
        new.out_proj.weight.copy_(mha.out_proj.weight[:, idx])
    x = torch.randn(2, 5, 16)
    (out, w), (out_new, w_new) = mha(x, x, x), new(x, x, x)
    torch.testing.assert_close(out_new, out)
    torch.testing.assert_close(w_new, w[:, order])
    assert not torch.allclose(w_new, w)
