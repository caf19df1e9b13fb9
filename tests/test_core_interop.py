"""Every transformer_lite module equals its torch.nn counterpart, via from_torch."""
import itertools

import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close

import transformer_lite as tl

B, T, S = 3, 5, 7


def _masks(kind, B, T, S, H):
    """(attn_mask, key_padding_mask) of the given kind; never a fully masked row."""
    kpm = torch.zeros(B, S, dtype=torch.bool)
    kpm[1, -2:] = True  # the second sequence has two padding positions
    kpm[2, -4:] = True
    attn = torch.rand(T, S) < 0.3
    attn[:, 0] = False  # every query can see key 0
    if kind == "none":
        return None, None
    if kind == "bool":
        return attn, kpm
    if kind == "float":
        return tl.bool_to_additive(attn), tl.bool_to_additive(kpm)
    if kind == "float_soft":  # arbitrary finite additive mask, 3-D per head
        return torch.randn(B * H, T, S), kpm
    raise AssertionError(kind)


@pytest.mark.parametrize("nhead,kind", itertools.product([1, 3, 4], ["none", "bool", "float", "float_soft"]))
def test_multihead_attention_equals_torch(nhead, kind):
    D = 12
    theirs = nn.MultiheadAttention(D, nhead, batch_first=True)
    ours = tl.from_torch(theirs)
    q, k, v = torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, D)
    attn_mask, kpm = _masks(kind, B, T, S, nhead)
    out, w = ours(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    out_t, w_t = theirs(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask, average_attn_weights=False)
    assert w.shape == (B, nhead, T, S)
    assert_close(out, out_t)
    assert_close(w, w_t)
    # torch's default averages the heads
    _, w_avg = theirs(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    assert_close(w.mean(dim=1), w_avg)


def test_fused_and_readable_paths_agree():
    D, H = 16, 4
    ours = tl.MultiHeadAttention(D, H)
    q, k = torch.randn(B, T, D), torch.randn(B, S, D)
    attn_mask, kpm = _masks("bool", B, T, S, H)
    with tl.use_fused(True):
        fused, w = ours(q, k, k, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    assert w is None
    with tl.use_fused(False):
        readable, _ = ours(q, k, k, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    assert_close(fused, readable)
    x = torch.randn(B, T, D)  # self-attention: one packed (D, 3D) projection on the fused path
    causal = tl.causal_mask(T)
    with tl.use_fused(True):
        fused, _ = ours(x, x, x, attn_mask=causal, need_weights=False)
    with tl.use_fused(False):
        readable, _ = ours(x, x, x, attn_mask=causal, need_weights=False)
    assert_close(fused, readable)
    x = torch.randn(B, T, D) * 3 + 1
    ln = tl.LayerNorm(D)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-1, 1)
    with tl.use_fused(True):
        a = ln(x)
    with tl.use_fused(False):
        b = ln(x)
    assert_close(a, b)


@pytest.mark.parametrize("norm_first,activation,kind",
                         itertools.product([False, True], ["relu", "gelu"], ["none", "bool", "float"]))
def test_encoder_layer_and_stack_equal_torch(norm_first, activation, kind):
    D, H = 16, 4
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=24, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first, layer_norm_eps=1e-6)
    theirs = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(D), enable_nested_tensor=False)
    ours = tl.from_torch(theirs)
    src = torch.randn(B, S, D)
    attn_mask, kpm = _masks(kind, B, S, S, H)
    assert_close(ours(src, mask=attn_mask, src_key_padding_mask=kpm),
                 theirs(src, mask=attn_mask, src_key_padding_mask=kpm))
    ours_layer, their_layer = tl.from_torch(theirs.layers[0]), theirs.layers[0]
    assert_close(ours_layer(src, src_mask=attn_mask, src_key_padding_mask=kpm),
                 their_layer(src, src_mask=attn_mask, src_key_padding_mask=kpm))


@pytest.mark.parametrize("norm_first,activation,kind",
                         itertools.product([False, True], ["relu", "gelu"], ["none", "bool", "float"]))
def test_decoder_layer_and_stack_equal_torch(norm_first, activation, kind):
    D, H = 16, 4
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=24, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    theirs = nn.TransformerDecoder(layer, num_layers=2)
    ours = tl.from_torch(theirs)
    tgt, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    mem_mask, mem_kpm = _masks(kind, B, T, S, H)
    tgt_mask = tl.causal_mask(T) if kind != "float" else tl.bool_to_additive(tl.causal_mask(T))
    tgt_kpm = None if kind == "none" else torch.zeros(B, T, dtype=torch.bool)
    if kind == "float":
        tgt_kpm = tl.bool_to_additive(tgt_kpm)
    kw = dict(tgt_mask=tgt_mask, memory_mask=mem_mask, tgt_key_padding_mask=tgt_kpm,
              memory_key_padding_mask=mem_kpm)
    assert_close(ours(tgt, memory, **kw), theirs(tgt, memory, **kw))
    assert_close(tl.from_torch(theirs.layers[1])(tgt, memory, **kw), theirs.layers[1](tgt, memory, **kw))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_equals_torch(norm_first):
    D, H = 16, 2
    theirs = nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=32, dropout=0.0,
                            batch_first=True, norm_first=norm_first)
    ours = tl.from_torch(theirs)
    assert isinstance(ours, tl.EncoderDecoder)
    assert tl.count_parameters(ours) == sum(p.numel() for p in theirs.parameters())
    src, tgt = torch.randn(B, S, D), torch.randn(B, T, D)
    _, kpm = _masks("bool", B, T, S, H)
    kw = dict(tgt_mask=tl.causal_mask(T), src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    assert_close(ours(src, tgt, **kw), theirs(src, tgt, **kw))


def test_from_torch_keeps_mode_and_gradients_match():
    D, H = 8, 2
    theirs = nn.TransformerEncoderLayer(D, H, dim_feedforward=16, dropout=0.0, batch_first=True)
    theirs.eval()
    ours = tl.from_torch(theirs)
    assert not ours.training
    x1 = torch.randn(2, 4, D, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    theirs.train(), ours.train()
    theirs(x1).pow(2).sum().backward()
    ours(x2).pow(2).sum().backward()
    assert_close(x1.grad, x2.grad)
    assert_close(theirs.linear1.weight.grad, ours.ff.linear1.weight.grad)


def test_layernorm_equals_torch():
    x = torch.randn(4, 6, 10) * 5 + 3
    theirs = nn.LayerNorm(10, eps=1e-3)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = tl.from_torch(theirs)
    with tl.use_fused(False):
        assert_close(ours(x), theirs(x))
    assert_close(tl.layer_norm(x, theirs.weight, theirs.bias, 1e-3), theirs(x))


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(ValueError, match="batch_first"):
        tl.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError, match="kdim"):
        tl.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True))
    with pytest.raises(TypeError, match="module must be one of"):
        tl.from_torch(nn.Linear(3, 3))
