"""The fast path: PyTorch's fused kernels, chosen in one place (transformer_lite/_fused.py) from arguments only.

Both paths give the same outputs and gradients for every kind of mask, fully masked rows included;
the fused kernel is used exactly when expected; and the switch belongs to the thread that sets it.
"""
import threading

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import transformer_lite as tl
from transformer_lite._fused import fused_attention

B, T, S, D, H = 3, 5, 6, 16, 4


def _masks(kind):
    """(attn_mask (T, S), key_padding_mask (B, S)) of one kind."""
    kpm = torch.zeros(B, S, dtype=torch.bool)
    kpm[1, -2:] = True  # the second sequence ends with two padding positions
    kpm[2, -4:] = True
    attn = torch.rand(T, S, generator=torch.Generator().manual_seed(0)) < 0.3
    attn[:, 0] = False
    causal = torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=1)
    dead = kpm.clone()
    dead[0] = True  # every key of the first sequence is blocked: all its rows are fully masked
    rows = torch.zeros(T, S, dtype=torch.bool)
    rows[2] = True  # query 2 may attend to nothing, in every sequence
    return {
        "none": (None, None),
        "bool": (attn, kpm),
        "float": (tl.bool_to_additive(attn), tl.bool_to_additive(kpm)),
        "float_soft": (torch.randn(T, S, generator=torch.Generator().manual_seed(1)), kpm),
        "padding": (None, kpm),
        "causal": (causal, None),
        "dead_rows_bool": (rows, kpm),
        "dead_rows_float": (tl.bool_to_additive(rows), tl.bool_to_additive(kpm)),
        "dead_sequence": (causal, dead),
        "dead_sequence_float": (tl.bool_to_additive(causal), tl.bool_to_additive(dead)),
    }[kind]


def _run(mha, fused, attn_mask, kpm, self_attention):
    torch.manual_seed(2)
    query = torch.randn(B, T, D, requires_grad=True)
    key = query if self_attention else torch.randn(B, S, D, requires_grad=True)
    mha.zero_grad()
    with tl.use_fused(fused):
        out, w = mha(query, key, key, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    assert w is None
    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
    grads = [query.grad] + ([] if self_attention else [key.grad]) + [p.grad.clone() for p in mha.parameters()]
    return out.detach(), grads


KINDS = ["none", "bool", "float", "float_soft", "padding", "dead_rows_bool", "dead_rows_float", "dead_sequence",
         "dead_sequence_float"]


@pytest.mark.parametrize("kind", KINDS)
def test_fused_and_readable_paths_give_the_same_outputs_and_gradients(kind):
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(D, H)
    attn_mask, kpm = _masks(kind)
    out_f, grads_f = _run(mha, True, attn_mask, kpm, self_attention=False)
    out_r, grads_r = _run(mha, False, attn_mask, kpm, self_attention=False)
    assert torch.isfinite(out_f).all() and all(torch.isfinite(g).all() for g in grads_f)
    assert_close(out_f, out_r)
    for g_f, g_r in zip(grads_f, grads_r):
        assert_close(g_f, g_r)


def test_fused_and_readable_paths_agree_on_causal_self_attention():
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(D, H)
    causal = tl.causal_mask(T)
    out_f, grads_f = _run(mha, True, causal, None, self_attention=True)
    out_r, grads_r = _run(mha, False, causal, None, self_attention=True)
    assert_close(out_f, out_r)
    for g_f, g_r in zip(grads_f, grads_r):
        assert_close(g_f, g_r)


@pytest.mark.parametrize("kind", ["dead_rows_bool", "dead_rows_float", "dead_sequence"])
def test_fully_masked_rows_give_the_output_projections_bias_on_both_paths(kind):
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(D, H)
    attn_mask, kpm = _masks(kind)
    merged = tl.merge_masks(attn_mask, kpm, B, T, S)
    blocked = merged if merged.dtype == torch.bool else torch.isneginf(merged)
    dead = blocked.all(-1).expand(B, H, T)[:, 0]  # (B, T): queries with every key blocked
    assert dead.any() and not dead.all()
    for fused in (True, False):
        out, _ = _run(mha, fused, attn_mask, kpm, self_attention=False)
        assert_close(out[dead], mha.out_proj.bias.detach().expand(int(dead.sum()), D))


def test_fused_attention_function_equals_the_readable_function():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, n, d, generator=g) for n, d in [(4, 8), (5, 8), (5, 6)])
    mask = torch.rand(2, 1, 4, 5, generator=g) < 0.5
    mask[0, 0, 1] = True  # one fully masked row
    for m in (None, mask, tl.bool_to_additive(mask)):
        out, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=m)
        assert_close(fused_attention(q, k, v, m), out)


class _Counter:
    """Wraps a torch function and counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def kernels(monkeypatch):
    sdpa, ln = _Counter(F.scaled_dot_product_attention), _Counter(F.layer_norm)
    monkeypatch.setattr(F, "scaled_dot_product_attention", sdpa)
    monkeypatch.setattr(F, "layer_norm", ln)
    return sdpa, ln


def test_the_fused_kernels_run_exactly_when_expected(kernels):
    sdpa, ln = kernels
    mha, norm = tl.MultiHeadAttention(D, H), tl.LayerNorm(D)
    x = torch.randn(B, T, D)
    kpm = _masks("padding")[1][:, :T]
    mha(x, x, x, key_padding_mask=kpm, need_weights=False)
    norm(x)
    assert (sdpa.calls, ln.calls) == (1, 1)  # the default: fused
    _, w = mha(x, x, x, key_padding_mask=kpm)  # need_weights=True (the default): the readable path
    assert sdpa.calls == 1 and w.shape == (B, H, T, T)
    with tl.use_fused(False):
        mha(x, x, x, key_padding_mask=kpm, need_weights=False)
        norm(x)
    assert (sdpa.calls, ln.calls) == (1, 1)
    model = tl.Transformer(11, 13, d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=1,
                           dim_feedforward=32).eval()
    model(torch.randint(1, 11, (2, 6)), torch.randint(1, 13, (2, 4)))
    # 2 encoder layers x 1 attention + 1 decoder layer x 2 attentions; LayerNorms: 2 x 2 + 1 x 3 (Post-LN)
    assert (sdpa.calls, ln.calls) == (1 + 4, 1 + 7)
    model.attention_maps(torch.randint(1, 11, (2, 6)), torch.randint(1, 13, (2, 4)))  # needs the weights
    assert sdpa.calls == 5


def test_the_switch_belongs_to_the_thread_that_sets_it():
    barrier = threading.Barrier(2, timeout=10)
    seen = {}

    def readable():
        with tl.use_fused(False):
            barrier.wait()  # both threads are now inside their own setting
            seen["readable"] = tl.fused_enabled()
            barrier.wait()

    def default():
        barrier.wait()
        seen["default"] = tl.fused_enabled()
        barrier.wait()

    threads = [threading.Thread(target=readable), threading.Thread(target=default)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"readable": False, "default": True}
    assert tl.fused_enabled()


def test_use_fused_restores_the_setting_and_checks_its_argument():
    with tl.use_fused(False):
        with tl.use_fused(True):
            assert tl.fused_enabled()
        assert not tl.fused_enabled()
    assert tl.fused_enabled()
    with pytest.raises(TypeError, match="enabled must be a bool, got int"):
        with tl.use_fused(0):
            pass
