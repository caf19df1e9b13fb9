"""Checks of chapter 3's exercises (self-attention; transformer_lite.book.check)."""
from __future__ import annotations

import math

import torch

import transformer_lite as tl

from . import Wrong, call, close, exercise, number, tensor

# The chapter's "Thinking Machines" example: embeddings and hand-made weights (d_model = 4, d_k = d_v = 3).
_X = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]])
_W_Q = torch.tensor([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
_W_K = torch.tensor([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
_W_V = torch.tensor([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [1.0, 0.0, 3.0], [1.0, 1.0, 0.0]])


def _qkv():
    return _X @ _W_Q, _X @ _W_K, _X @ _W_V


def _z(row: int, scale: float | None = None, dim: int = -1) -> torch.Tensor:
    Q, K, V = _qkv()
    scaled = Q @ K.T * (1 / math.sqrt(3) if scale is None else scale)
    return (torch.softmax(scaled, dim=dim) @ V)[row]


@exercise("3.1", wrong=[lambda: (_z(1, scale=1.0),),      # forgot the 1/sqrt(d_k)
                        lambda: (_z(1, dim=0),),          # softmax down the columns (over the queries)
                        lambda: (_z(0),),                 # the first word's output
                        lambda: (_qkv()[2][1],)])         # the word's own value, no attention
def exercise_3_1(my_z_machines):
    z = tensor(my_z_machines, "my_z_machines", (3,))
    expected = _z(1)
    if torch.allclose(z, expected, atol=1e-3):
        return f"z_Machines = {[round(v, 4) for v in expected.tolist()]}, the second row of the matrix form."
    diagnoses = [(_z(1, scale=1.0), "the scores were not divided by √d_k = √3 (step 3)."),
                 (_z(1, dim=0), "the softmax ran over the queries (down a column of the score matrix). "
                                "Step 4 runs over the keys: the two weights of 'Machines' must sum to 1."),
                 (_z(0), "that is z_Thinking, the first word's output. Use the query of 'Machines', Q[1]."),
                 (_qkv()[2][1], "that is the value of 'Machines' itself; the output mixes the values of both "
                                "words, weighted by the softmax of the scaled scores.")]
    for wrong, hint in diagnoses:
        if torch.allclose(z, wrong, atol=1e-3):
            raise Wrong("my_z_machines is not the output of 'Machines'.", hint)
    close(z, expected, "my_z_machines", atol=1e-3,
          hint="steps 2–6 with q = Q[1]: scores q·k_j for both words, divide by √3, softmax over the two scores, "
               "then the weighted sum of the rows of V.")


# ---- 3.2: the six steps as a function, compared with tl.scaled_dot_product_attention ----------------------

def _attention(scale_fn=lambda d: 1 / math.sqrt(d), dim=-1):
    def attention(Q, K, V):
        return torch.softmax(Q @ K.transpose(-2, -1) * scale_fn(Q.shape[-1]), dim=dim) @ V
    return attention


_MISTAKES_32 = [
    (_attention(lambda d: 1.0), "the scores are not divided by √d_k (step 3): you computed softmax(Q Kᵀ) V."),
    (_attention(lambda d: 1 / d), "you divided by d_k; the paper divides by its square root, √d_k."),
    (_attention(dim=-2), "the softmax ran over the queries (dim=-2). It runs over the keys, the last axis "
                         "of the (…, T, S) scores: each query's weights sum to 1."),
]


@exercise("3.2", wrong=[lambda: (_MISTAKES_32[0][0],), lambda: (_MISTAKES_32[1][0],),
                        lambda: (_MISTAKES_32[2][0],),
                        lambda: (lambda Q, K, V: tl.scaled_dot_product_attention(Q, K, V),)])  # (output, weights)
def exercise_3_2(my_attention):
    g = torch.Generator().manual_seed(32)
    cases = [((5, 8), (7, 8), (7, 3)), ((2, 3, 4, 16), (2, 3, 6, 16), (2, 3, 6, 5))]  # T != S, batched heads
    for q_shape, k_shape, v_shape in cases:
        Q, K, V = (torch.randn(shape, generator=g) for shape in (q_shape, k_shape, v_shape))
        name = f"my_attention(Q {q_shape}, K {k_shape}, V {v_shape})"
        out = call(my_attention, Q, K, V, name=name)
        if isinstance(out, tuple):
            raise Wrong(f"{name} returned a tuple of {len(out)}; return only the output tensor.",
                        hint="tl.scaled_dot_product_attention returns (output, weights); your function returns "
                             "the output alone.")
        expected = tl.scaled_dot_product_attention(Q, K, V)[0]
        out = tensor(out, name, tuple(expected.shape))
        if torch.allclose(out, expected, atol=1e-5, rtol=1e-4):
            continue
        for wrong, hint in _MISTAKES_32:
            if torch.allclose(out, wrong(Q, K, V), atol=1e-5, rtol=1e-4):
                raise Wrong(f"{name} differs from tl.scaled_dot_product_attention.", hint)
        close(out, expected, name, hint="softmax(Q Kᵀ / √d_k) V, with the transpose of the last two axes of K "
                                        "(K.transpose(-2, -1)) and the softmax over the last axis.")
    return "your attention equals tl.scaled_dot_product_attention, unbatched with T ≠ S and on (B, H, T, D_h) heads."


# ---- 3.3: shuffling the words shuffles the outputs ----------------------------------------------------------

PERM_3_3 = [3, 7, 0, 10, 5, 1, 9, 2, 8, 4, 6]  # the shuffle of exercise 3.3 (11 words)


@exercise("3.3", wrong=[lambda: (torch.argsort(torch.tensor(PERM_3_3)),),   # the inverse permutation
                        lambda: (torch.arange(11),),                          # "nothing moves"
                        lambda: (torch.tensor(PERM_3_3[::-1]),)])
def exercise_3_3(my_index):
    index = tensor(my_index, "my_index", (11,))
    if not torch.equal(index, index.round()):
        raise Wrong("my_index should hold whole numbers: row indices of the original output.")
    index = index.long()
    perm = torch.tensor(PERM_3_3)
    if torch.equal(index, perm):
        return "out_shuffled = out[perm]: shuffling the words shuffles the outputs in exactly the same way."
    if torch.equal(index, torch.argsort(perm)):
        raise Wrong("my_index is the inverse of the shuffle.",
                    hint="row r of the shuffled sentence is word perm[r] of the original, so its output is row "
                         "perm[r] of the original output.")
    if torch.equal(index, torch.arange(11)):
        raise Wrong("with my_index = 0, 1, …, 10 the outputs would stay where they were; they move with their words.",
                    hint="compare out_shuffled with out row by row: which original row does each one equal?")
    raise Wrong("out_shuffled is not out[my_index].",
                hint="each word's output depends on its own query and on the set of all keys and values, not on "
                     "their order: row r of the shuffled output belongs to the word now in place r.")


# ---- 3.4: queries and keys whose components have standard deviation sigma ----------------------------------

_SIGMA, _DK = 2.0, 64


@exercise("3.4", wrong=[lambda: (_DK * _SIGMA ** 2, 1 / (math.sqrt(_DK) * _SIGMA)),   # sigma^2 per product
                        lambda: (_DK * _SIGMA ** 4, 1 / math.sqrt(_DK)),               # the paper's scale kept
                        lambda: (_DK * _SIGMA ** 4, 1 / (_DK * _SIGMA ** 4))])         # divided by the variance
def exercise_3_4(my_var, my_scale):
    var = _DK * _SIGMA ** 4
    number(my_var, var, "my_var", rel=1e-6,
           hint="each product q_c k_c has variance E[q_c²] E[k_c²] = σ² · σ² (independent, mean 0), "
                "and the dot product adds d_k of them.")
    scale = 1 / math.sqrt(var)
    number(my_scale, scale, "my_scale", rel=1e-6,
           hint="multiplying a score by s multiplies its variance by s²: s = 1 / sqrt(Var(q·k)), "
                "the reciprocal of the standard deviation, not of the variance.")
    return f"Var(q·k) = d_k σ⁴ = {var:g}; multiplying by 1/(√d_k σ²) = 1/{1 / scale:g} brings it back to 1."


# ---- 3.5: temperature: the scale at which "it" puts 99 % of its weight on "animal" ------------------------

# The chapter's hand-made sentence example: six readable features per word, and W_Q, W_K set by hand.
SENTENCE = "the animal didn't cross the street because it was too tired".split()
FEATURES = ["noun", "animate", "pronoun", "verb", "adjective", "function"]
LEXICON = {
    "the": {"function": 1}, "animal": {"noun": 1, "animate": 1}, "didn't": {"verb": 0.5, "function": 1},
    "cross": {"verb": 1}, "street": {"noun": 1}, "because": {"function": 1}, "it": {"pronoun": 1},
    "was": {"verb": 0.5, "function": 1}, "too": {"function": 1}, "tired": {"adjective": 1},
}


def _sentence_qk():
    X = torch.tensor([[LEXICON[w].get(f, 0.0) for f in FEATURES] for w in SENTENCE], dtype=torch.float64)
    W_K, W_Q = torch.zeros(6, 2, dtype=torch.float64), torch.zeros(6, 2, dtype=torch.float64)
    W_K[FEATURES.index("noun"), 0] = W_K[FEATURES.index("animate"), 1] = 1.0
    W_Q[FEATURES.index("pronoun")] = torch.tensor([3.0, 3.0])
    W_Q[FEATURES.index("verb")] = torch.tensor([2.0, 0.0])
    W_Q[FEATURES.index("adjective")] = torch.tensor([0.0, 2.0])
    return X @ W_Q, X @ W_K


def _weight_on_animal(scale: float) -> float:
    q, k = _sentence_qk()
    scores = q[SENTENCE.index("it")] @ k.T * scale
    return torch.softmax(scores, dim=0)[SENTENCE.index("animal")].item()


def _scale_99() -> float:
    lo, hi = 0.0, 100.0   # the weight on "animal" grows with the scale: bisect for 0.99
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _weight_on_animal(mid) < 0.99 else (lo, mid)
    return hi


def _scale_99_without_zeros() -> float:
    # the slip: a softmax over "animal" and "street" only, forgetting the nine words that score 0
    q, k = _sentence_qk()
    s_animal, s_street = (q[SENTENCE.index("it")] @ k.T)[[SENTENCE.index("animal"), SENTENCE.index("street")]]
    return math.log(99) / (s_animal - s_street).item()


@exercise("3.5", wrong=[lambda: (1 / math.sqrt(2),),                 # the default scale of d_k = 2
                        lambda: (_scale_99_without_zeros(),),         # forgot the nine words with score 0
                        lambda: (30.0,)])                             # large enough, but not the smallest
def exercise_3_5(my_scale_99):
    s = number(my_scale_99, _scale_99(), "my_scale_99", rel=2e-3,
               hint=f"all {len(SENTENCE)} words are in the softmax: the words whose score is 0 each add e^0 = 1 to the "
                    "denominator. The weight on 'animal' grows with the scale; find where it reaches 0.99 "
                    "(bisection, or solve the equation on paper with u = e^(3s)).")
    return (f"at scale {s:.4f} 'it' puts {_weight_on_animal(s):.4f} of its weight on 'animal' "
            f"(the default 1/√2 gives {_weight_on_animal(1 / math.sqrt(2)):.2f}).")
