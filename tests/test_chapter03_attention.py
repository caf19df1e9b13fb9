"""Chapter 3 (self-attention in six steps): the chapter's claims, checked through the package.

The loop form of attention is a teaching variant that lives only in the notebook; it is read from
the notebook here (not pasted twice) and checked against the package's matrix form.
"""
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import transformer_lite as tl
from notebook_code import code_cell, exec_cell
from transformer_lite import pitfalls
from transformer_lite.book import N_

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_self_attention.ipynb"


@pytest.fixture(scope="module")
def attention_loop():
    return exec_cell(NOTEBOOK, "def attention_loop", {"torch": torch, "math": math})["attention_loop"]


@pytest.mark.parametrize("T,S,d_k,d_v", [(1, 1, 1, 1), (2, 2, 3, 3), (3, 5, 2, 4), (6, 4, 16, 7)])
def test_loop_form_equals_matrix_form(attention_loop, T, S, d_k, d_v):
    g = torch.Generator().manual_seed(T * 100 + S)
    q, k, v = torch.randn(T, d_k, generator=g), torch.randn(S, d_k, generator=g), torch.randn(S, d_v, generator=g)
    torch.testing.assert_close(attention_loop(q, k, v), tl.scaled_dot_product_attention(q, k, v)[0])


def test_loop_form_survives_large_scores(attention_loop):
    # The loop subtracts the max before exp; without that, exp(1000) overflows to inf and gives NaN.
    q = torch.tensor([[1000.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[1.0], [2.0]])
    out = attention_loop(q, k, v)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, tl.scaled_dot_product_attention(q, k, v)[0])


def test_thinking_machines_steps_by_hand():
    X = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]])
    W_Q = torch.tensor([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    W_K = torch.tensor([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    W_V = torch.tensor([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [1.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    steps = tl.scaled_dot_product_attention(Q, K, V, return_steps=True)
    torch.testing.assert_close(steps.scores, torch.tensor([[2.0, 5.0], [2.0, 9.0]]))  # integer dot products
    torch.testing.assert_close(steps.scaled, steps.scores / math.sqrt(3))
    torch.testing.assert_close(steps.masked, steps.scaled)  # no mask
    e = torch.exp(steps.scaled)
    torch.testing.assert_close(steps.weights, e / e.sum(-1, keepdim=True))
    torch.testing.assert_close(steps.output, steps.weights @ V)


def test_equals_torch_fused_kernel():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=g) for _ in range(3))
    torch.testing.assert_close(tl.scaled_dot_product_attention(q, k, v)[0], F.scaled_dot_product_attention(q, k, v))


def test_zero_query_gives_uniform_weights_and_mean_of_values():
    g = torch.Generator().manual_seed(1)
    k, v = torch.randn(7, 4, generator=g), torch.randn(7, 3, generator=g)
    out, w = tl.scaled_dot_product_attention(torch.zeros(1, 4), k, v)
    torch.testing.assert_close(w, torch.full((1, 7), 1 / 7))
    torch.testing.assert_close(out[0], v.mean(0))


def test_hand_made_it_attends_to_animal():
    sentence = "the animal didn't cross the street because it was too tired".split()
    feats = {"animal": [1, 1, 0], "street": [1, 0, 0], "it": [0, 0, 1]}  # noun, animate, pronoun
    X = torch.tensor([feats.get(w, [0, 0, 0]) for w in sentence], dtype=torch.float32)
    W_K = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    W_Q = torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, 3.0]])
    W_V = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    out, w = tl.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)
    it = sentence.index("it")
    assert sentence[int(w[it].argmax())] == "animal"
    torch.testing.assert_close(out[it], w[it] @ (X @ W_V))  # a mixture of value vectors, 4 numbers, not 3 features
    W_blind = W_V.clone()
    W_blind[1] = 0.0  # ignores "animate"
    out_blind, w_blind = tl.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_blind)
    torch.testing.assert_close(w_blind, w)  # the weights do not depend on W^V ...
    X_lifeless = X.clone()
    X_lifeless[sentence.index("animal"), 1] = 0.0
    torch.testing.assert_close(out_blind[it], w[it] @ (X_lifeless @ W_blind))  # ... what arrives does
    assert not torch.allclose(out[it], w[it] @ (X_lifeless @ W_V))


@pytest.mark.parametrize("d_k", [4, 64, 256])
def test_variance_of_dot_product_grows_like_d_k(d_k):
    g = torch.Generator().manual_seed(d_k)
    q, k = torch.randn(20_000, d_k, generator=g), torch.randn(20_000, d_k, generator=g)
    dots = (q * k).sum(-1)
    assert abs(dots.var().item() / d_k - 1) < 0.1
    assert abs((dots / math.sqrt(d_k)).var().item() - 1) < 0.1


def _saturation(d_k, scale):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(500, d_k, generator=g).requires_grad_()
    k, v = torch.randn(16, d_k, generator=g), torch.randn(16, 8, generator=g)
    upstream = torch.randn(500, 8, generator=g)
    steps = tl.scaled_dot_product_attention(q, k, v, scale=scale, return_steps=True)
    steps.masked.retain_grad()
    (steps.output * upstream).sum().backward()
    return steps.weights.max(-1).values.median().item(), steps.masked.grad.norm(dim=-1).median().item()


def test_without_scale_softmax_saturates_and_gradient_vanishes():
    w_scaled, g_scaled = _saturation(1024, None)
    w_raw, g_raw = _saturation(1024, 1.0)
    assert w_raw > 0.99 and w_scaled < 0.5
    assert g_raw < 1e-3 * g_scaled


def test_with_scale_gradient_does_not_depend_on_d_k():
    grads = [_saturation(d_k, None)[1] for d_k in (4, 64, 1024)]
    assert max(grads) < 2 * min(grads)


def test_softmax_jacobian_formula_and_its_collapse():
    for z, largest in [(torch.tensor([1.0, 2.0, 3.0]), 0.1), (torch.tensor([8.0, 16.0, 24.0]), None)]:
        J = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, 0), z)
        p = torch.softmax(z, 0)
        torch.testing.assert_close(J, torch.diag(p) - torch.outer(p, p))
        if largest is not None:
            assert J.abs().max() > largest
        else:
            assert J.abs().max() < 1e-3


# ---- additive attention (teaching code in the notebook), what was new, and the exercises' constants ----------

def _notebook_cell(startswith):
    return code_cell(NOTEBOOK, startswith)


@pytest.fixture(scope="module")
def AdditiveAttention():
    namespace = {"torch": torch, "math": math}
    exec(compile(_notebook_cell("class AdditiveAttention"), str(NOTEBOOK), "exec"), namespace)
    return namespace["AdditiveAttention"]


def test_additive_attention_is_the_formula_pair_by_pair(AdditiveAttention):
    torch.manual_seed(0)
    layer = AdditiveAttention(6, 5)
    q, k, v = torch.randn(2, 3, 6), torch.randn(2, 4, 6), torch.randn(2, 4, 7)  # a batch axis in front
    with torch.no_grad():
        out, w = layer(q, k, v)
        e = layer.scores(q, k)
        for b, i, j in [(0, 0, 0), (1, 2, 3), (0, 1, 2)]:
            e_ij = layer.w.weight[0] @ torch.tanh(layer.W_1.weight @ q[b, i] + layer.W_2.weight @ k[b, j])
            torch.testing.assert_close(e[b, i, j], e_ij)
        assert layer.hidden(q, k).shape == (2, 3, 4, 5) and out.shape == (2, 3, 7)
        torch.testing.assert_close(w, torch.softmax(e, dim=-1))
        torch.testing.assert_close(out, w @ v)
        big = layer.scores(1e6 * q, 1e6 * k)
    assert big.abs().max() <= layer.w.weight.abs().sum() + 1e-5   # tanh bounds the score, whatever the inputs


def test_additive_scores_keep_their_spread_as_d_k_grows(AdditiveAttention):
    torch.manual_seed(1)
    spreads = []
    for dk in (16, 1024):
        with torch.no_grad():
            spreads.append(AdditiveAttention(dk, 64).scores(torch.randn(200, dk), torch.randn(200, dk)).std().item())
    assert 0.5 < spreads[1] / spreads[0] < 2


def test_the_transformer_has_no_recurrence_and_no_convolution():
    model = tl.Transformer(src_vocab_size=20, tgt_vocab_size=20, d_model=16, nhead=2, num_encoder_layers=3,
                           num_decoder_layers=2, dim_feedforward=32)
    assert not any(isinstance(m, (torch.nn.RNNBase, torch.nn.Conv1d, torch.nn.Conv2d)) for m in model.modules())
    assert sum(isinstance(m, tl.MultiHeadAttention) for m in model.modules()) == 3 + 2 * 2


def test_the_checks_use_the_chapters_constants():
    from transformer_lite.book.check import ch03

    ns = {"torch": torch, "N_": N_}                                              # N_ marks the printed labels
    exec(compile(_notebook_cell("def show("), str(NOTEBOOK), "exec"), ns)       # the Thinking Machines matrices
    for name, value in [("X", ch03._X), ("W_Q", ch03._W_Q), ("W_K", ch03._W_K), ("W_V", ch03._W_V)]:
        torch.testing.assert_close(ns[name], value)
    ns = {"torch": torch, "N_": N_, "show": lambda *a, **k: None}
    exec(compile(_notebook_cell("sentence = "), str(NOTEBOOK), "exec"), ns)     # the hand-made sentence
    assert ns["sentence"] == ch03.SENTENCE and ns["features"] == ch03.FEATURES and ns["lexicon"] == ch03.LEXICON
    ns2 = dict(ns, tl=tl)
    exec(compile(_notebook_cell("W_K_s = "), str(NOTEBOOK), "exec"), ns2)
    q, k = ch03._sentence_qk()
    torch.testing.assert_close(ns2["X_s"] @ ns2["W_Q_s"], q.float())
    torch.testing.assert_close(ns2["X_s"] @ ns2["W_K_s"], k.float())


def test_a_fresh_transformer_layer_after_layernorm_gives_unit_variance_scores():
    torch.manual_seed(2)
    model = tl.Transformer(src_vocab_size=50, tgt_vocab_size=50, d_model=256, nhead=4, num_encoder_layers=1,
                           num_decoder_layers=1, dim_feedforward=32)
    attn = model.encoder.layers[0].self_attn
    x = torch.nn.functional.layer_norm(torch.randn(1, 200, 256), (256,))
    with torch.no_grad():
        q, k = tl.split_heads(attn.q_proj(x), 4), tl.split_heads(attn.k_proj(x), 4)
        scaled = q @ k.transpose(-2, -1) / math.sqrt(64)
        default = torch.nn.Linear(256, 64)(x)
    assert 0.7 < q.var() < 1.4 and 0.5 < scaled.var() < 2
    assert 0.25 < default.var() < 0.42  # PyTorch's default init: a third


def test_the_bug_hunt_suspect_is_caught_by_the_chapters_checks():
    from transformer_lite.book.check import ch03

    assert ch03._reference_test(tl.scaled_dot_product_attention)
    assert not ch03._reference_test(ch03.suspect_attention)
    assert not ch03._rows_only_test(ch03.suspect_attention) and ch03._rows_only_test(pitfalls.attention_without_scaling)


def test_bug_hunt_3_2_suspect_is_right_without_batch_axes_only():
    """Exercise 3.2's text: the chapter's suspect is right on (T, d_k) inputs, wrong on a batch and on heads; the
    check's copy of the slip is the notebook's suspect, and the check rejects it."""
    from transformer_lite.book.check import ch03

    src = code_cell(NOTEBOOK, "def suspect_matrix_form(", until="torch.testing")
    suspect = exec_cell(NOTEBOOK, "def suspect_matrix_form(", {"torch": torch, "math": math},
                        until="torch.testing")["suspect_matrix_form"]
    assert "Q.shape[1]" in src
    g = torch.Generator().manual_seed(5)
    for shapes, right in [([(5, 8), (7, 8), (7, 3)], True), ([(2, 5, 6), (2, 7, 6), (2, 7, 3)], False),
                          ([(2, 3, 4, 16), (2, 3, 6, 16), (2, 3, 6, 5)], False)]:
        q, k, v = (torch.randn(s, generator=g) for s in shapes)
        expected = tl.scaled_dot_product_attention(q, k, v)[0]
        torch.testing.assert_close(suspect(q, k, v), ch03._scale_from_axis_1(q, k, v))
        assert torch.allclose(suspect(q, k, v), expected, atol=1e-5) == right
    assert not ch03.exercise_3_2(suspect)
    assert ch03.exercise_3_2(lambda Q, K, V: tl.scaled_dot_product_attention(Q, K, V)[0])
