"""Chapter 3 (self-attention in six steps): the chapter's claims, checked through the package.

The loop form of attention is a teaching variant that lives only in the notebook; it is read from
the notebook here (not pasted twice) and checked against the package's matrix form.
"""
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import transformer_lite as tl

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_self_attention.ipynb"


@pytest.fixture(scope="module")
def attention_loop():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    (src,) = [s for s in sources if s.lstrip().startswith("def attention_loop")]
    namespace = {"torch": torch, "math": math}
    exec(compile(src, str(NOTEBOOK), "exec"), namespace)
    return namespace["attention_loop"]


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
    out, w = tl.scaled_dot_product_attention(X @ W_Q, X @ W_K, X)
    it = sentence.index("it")
    assert sentence[int(w[it].argmax())] == "animal"
    assert out[it, 1] > 0.5  # "it" now carries the "animate" feature


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
