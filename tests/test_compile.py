"""The forward pass and the training loss capture as ONE graph under torch.compile.

``fullgraph=True`` raises at the first graph break, and a Python branch on a tensor's value
(``int(ids.max())``, ``bool(mask.any())``) is one. On a GPU each such branch would also be a
device-to-host copy that stalls the step. The "eager" backend runs the captured graph with
ordinary torch operations, so the compiled results must equal eager ones.
"""
import pytest
import torch
from torch.testing import assert_close

import transformer_lite as tl
from transformer_lite.training import label_smoothed_cross_entropy


def _batch():
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, 20, (3, 7), generator=g)
    src[1, -2:] = 0  # padding (pad_id 0) in the source ...
    src[2, -4:] = 0
    tgt = torch.randint(4, 23, (3, 7), generator=g)
    tgt[2, -2:] = 0  # ... and in the target
    return src, tgt[:, :-1], tgt[:, 1:]


def _step(fn, model, src, tgt_in, labels):
    """Loss, logits and every parameter's gradient of one forward and backward pass, dropout seeded."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)
    logits, loss = fn(src, tgt_in, labels)
    loss.backward()
    return logits.detach(), loss.detach(), {n: p.grad for n, p in model.named_parameters()}


def test_transformer_forward_and_label_smoothed_loss_compile_to_one_graph():
    torch.manual_seed(0)
    model = tl.Transformer(20, 23, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=32, dropout=0.1).train()

    def loss_fn(src, tgt_in, labels):
        logits = model(src, tgt_in)
        return logits, label_smoothed_cross_entropy(logits, labels, smoothing=0.1)

    compiled = torch.compile(loss_fn, backend="eager", fullgraph=True)  # raises at any graph break
    src, tgt_in, labels = _batch()
    logits_c, loss_c, grads_c = _step(compiled, model, src, tgt_in, labels)
    logits_e, loss_e, grads_e = _step(loss_fn, model, src, tgt_in, labels)
    assert_close(logits_c, logits_e)
    assert_close(loss_c, loss_e)
    assert grads_c.keys() == grads_e.keys()
    for name in grads_e:
        assert_close(grads_c[name], grads_e[name], msg=name)
    # the token-id range check is skipped while compiling, and still runs in eager mode
    with pytest.raises(ValueError, match=r"src must lie in \[0, 20\)"):
        loss_fn(torch.full_like(src, 20), tgt_in, labels)


def test_readable_attention_with_fully_masked_rows_compiles_to_one_graph():
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    kpm = torch.tensor([[False, False, True, True], [True, True, True, True]])  # sequence 2: every key blocked
    mask = tl.causal_mask(4)

    def attention(x, kpm, mask):
        return mha(x, x, x, key_padding_mask=kpm, attn_mask=mask)  # need_weights=True: the readable path

    out_c, w_c = torch.compile(attention, backend="eager", fullgraph=True)(x, kpm, mask)
    out_e, w_e = attention(x, kpm, mask)
    assert_close(out_c, out_e)
    assert_close(w_c, w_e)
    assert w_c[1].eq(0).all() and torch.isfinite(out_c).all()


def test_the_fused_switch_is_guarded_not_frozen_into_a_compiled_graph():
    compiled = torch.compile(lambda x: x + (1.0 if tl.fused_enabled() else 0.0), backend="eager", fullgraph=True)
    x = torch.zeros(1)
    assert compiled(x).item() == 1.0
    with tl.use_fused(False):
        assert compiled(x).item() == 0.0  # recompiled for the new setting
    assert compiled(x).item() == 1.0
