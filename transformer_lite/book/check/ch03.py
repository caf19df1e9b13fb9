"""Checks of chapter 3's exercises (self-attention; transformer_lite.book.check)."""
from __future__ import annotations

import math

import torch

import transformer_lite as tl

from ..i18n import N_, tr
from . import Wrong, as_bool, call, close, exercise, number, tensor

# The chapter's "Thinking Machines" example: embeddings and hand-made weights (d_model = 4, d_k = d_v = 3).
_X = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]])
_W_Q = torch.tensor([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
_W_K = torch.tensor([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
_W_V = torch.tensor([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [1.0, 0.0, 3.0], [1.0, 1.0, 0.0]])


def _qkv():
    return _X @ _W_Q, _X @ _W_K, _X @ _W_V


# ---- 3.1: bug hunt -- an attention function with one silent bug ---------------------------------------------
# suspect_attention returns (output, weights) of the right shapes, but takes the softmax over the queries. The reader
# writes a test from what chapter 3 checked (equality with PyTorch's function; every row of the weights sums to 1)
# and names the bug.

DIAGNOSES_31 = ("no scale", "softmax over the queries", "keys not transposed", "values not weighted")  # i18n: data


def suspect_attention(query, key, value):
    """The attention function of exercise 3.1: (output, weights), like tl.scaled_dot_product_attention."""
    from transformer_lite import pitfalls

    return pitfalls.attention_softmax_over_queries(query, key, value)


def _reference_test(attention):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(6, 8, generator=g) for _ in range(3))
    out, weights = attention(q, k, v)
    return bool(torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v), atol=1e-5)
                and torch.allclose(weights.sum(-1), torch.ones(6), atol=1e-5))


def _rows_only_test(attention):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(6, 8, generator=g) for _ in range(3))
    return bool(torch.allclose(attention(q, k, v)[1].sum(-1), torch.ones(6), atol=1e-5))


@exercise("3.1", wrong=[lambda: (lambda attention: True, "softmax over the queries"),   # passes everything
                        lambda: (_reference_test, "no scale"),
                        lambda: (_rows_only_test, "softmax over the queries"),           # misses the missing scale
                        lambda: (_reference_test, "keys not transposed")])
def exercise_3_1(my_test, my_diagnosis):
    from transformer_lite import pitfalls

    verdict = as_bool(call(my_test, tl.scaled_dot_product_attention, name="my_test(tl.scaled_dot_product_attention)"))
    if verdict is not True and verdict is not False:
        raise Wrong(tr("my_test should return True or False, got {verdict!r}.", verdict=verdict))
    if not verdict:
        raise Wrong(tr("my_test rejects tl.scaled_dot_product_attention, which is right."),
                    hint=tr("call attention(q, k, v) -> (output, weights) on random inputs; compare the output with "
                            "torch.nn.functional.scaled_dot_product_attention(q, k, v), with a tolerance (atol=1e-5)."))
    for name, wrong in [("suspect_attention", suspect_attention),
                        ("pitfalls.attention_without_scaling", pitfalls.attention_without_scaling)]:
        if as_bool(call(my_test, wrong, name=f"my_test({name})")) is not False:
            raise Wrong(tr("my_test accepts {name}, which is wrong.", name=name),
                        hint=tr("compare the whole output with PyTorch's function, and check that each row of the "
                                "weights sums to 1; a test on the shapes alone passes every one of these bugs."))
    diagnosis = str(my_diagnosis).strip().lower()
    if diagnosis not in DIAGNOSES_31:
        raise Wrong(tr("my_diagnosis should be one of {diagnoses}; got {my_diagnosis!r}.",
                       diagnoses=', '.join(repr(d) for d in DIAGNOSES_31), my_diagnosis=my_diagnosis))
    if diagnosis != "softmax over the queries":
        raise Wrong(tr("the bug is not '{diagnosis}'.", diagnosis=diagnosis),
                    hint=tr("look at the weights the suspect returns: sum them along each axis."))
    return (tr("your test passes the package's attention and catches both bugs; the suspect's softmax runs over the "
               "queries (dim=-2): its columns sum to 1, its rows do not, so a word's output is no longer a weighted "
               "average of the values."))


# ---- 3.2: bug hunt -- the slip in a colleague's matrix form, then the function written by the reader ------------
# The chapter's suspect_matrix_form (shown in the notebook) divides by sqrt(Q.shape[1]): d_k for a (T, d_k) input, so
# it is right on the chapter's two words, but T for (B, T, d_k) and H for (B, H, T, D_h) heads.

def _attention(scale_fn=lambda d: 1 / math.sqrt(d), dim=-1):
    def attention(Q, K, V):
        return torch.softmax(Q @ K.transpose(-2, -1) * scale_fn(Q.shape[-1]), dim=dim) @ V
    return attention


def _scale_from_axis_1(Q, K, V):
    """WRONG (the chapter's suspect): d_k read from axis 1, which holds it only when there is no batch axis."""
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[1]), dim=-1) @ V


_MISTAKES_32 = [
    (_scale_from_axis_1, N_("that is still the suspect: right on a (T, d_k) input, wrong once batch axes come first. "
                            "Which axis of Q holds d_k when Q is (B, H, T, D_h)?")),
    (_attention(lambda d: 1.0), N_("the scores are not divided by √d_k (step 3): you computed softmax(Q Kᵀ) V.")),
    (_attention(lambda d: 1 / d), N_("you divided by d_k; the paper divides by its square root, √d_k.")),
    (_attention(dim=-2), N_("the softmax ran over the queries (dim=-2). It runs over the keys, the last axis "
                            "of the (…, T, S) scores: each query's weights sum to 1.")),
]


@exercise("3.2", wrong=[lambda: (_MISTAKES_32[0][0],), lambda: (_MISTAKES_32[1][0],),
                        lambda: (_MISTAKES_32[2][0],), lambda: (_MISTAKES_32[3][0],),
                        lambda: (lambda Q, K, V: tl.scaled_dot_product_attention(Q, K, V),)])  # (output, weights)
def exercise_3_2(my_attention):
    g = torch.Generator().manual_seed(32)
    cases = [((5, 8), (7, 8), (7, 3)), ((2, 5, 6), (2, 7, 6), (2, 7, 3)),          # T != S, a batch,
             ((2, 3, 4, 16), (2, 3, 6, 16), (2, 3, 6, 5))]                          # batched heads
    for q_shape, k_shape, v_shape in cases:
        Q, K, V = (torch.randn(shape, generator=g) for shape in (q_shape, k_shape, v_shape))
        name = f"my_attention(Q {q_shape}, K {k_shape}, V {v_shape})"
        out = call(my_attention, Q, K, V, name=name)
        if isinstance(out, tuple):
            raise Wrong(tr("{name} returned a tuple of {n_out}; return only the output tensor.",
                           name=name, n_out=len(out)),
                        hint=tr("tl.scaled_dot_product_attention returns (output, weights); your function returns "
                                "the output alone."))
        expected = tl.scaled_dot_product_attention(Q, K, V)[0]
        out = tensor(out, name, tuple(expected.shape))
        if torch.allclose(out, expected, atol=1e-5, rtol=1e-4):
            continue
        for wrong, hint in _MISTAKES_32:
            if torch.allclose(out, wrong(Q, K, V), atol=1e-5, rtol=1e-4):
                raise Wrong(tr("{name} differs from tl.scaled_dot_product_attention.", name=name), tr(hint))
        close(out, expected, name, hint=tr("softmax(Q Kᵀ / √d_k) V, with the transpose of the last two axes of K "
                                           "(K.transpose(-2, -1)) and the softmax over the last axis."))
    return (tr("your attention equals tl.scaled_dot_product_attention, unbatched with T ≠ S, on a (B, T, d_k) batch "
               "and "
               "on (B, H, T, D_h) heads. The suspect read d_k from Q.shape[1], which is d_k only without batch axes: "
               "on "
               "heads it divided by √H, on a batch by √T. Q.shape[-1] is d_k whatever comes before it."))


# ---- 3.3: temperature: the scale at which "it" puts 99 % of its weight on "animal" ------------------------

# The chapter's hand-made sentence example: six readable features per word, and W_Q, W_K set by hand.
SENTENCE = "the animal didn't cross the street because it was too tired".split()  # i18n: data
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


@exercise("3.3", wrong=[lambda: (1 / math.sqrt(2),),                 # the default scale of d_k = 2
                        lambda: (_scale_99_without_zeros(),),         # forgot the nine words with score 0
                        lambda: (30.0,)])                             # large enough, but not the smallest
def exercise_3_3(my_scale_99):
    s = number(my_scale_99, _scale_99(), "my_scale_99", rel=2e-3,
               hint=tr("all {n_sentence} words are in the softmax: the words whose score is 0 each add e^0 = 1 to the "
                       "denominator. The weight on 'animal' grows with the scale; find where it reaches 0.99 "
                       "(bisection, or solve the equation on paper with u = e^(3s)).", n_sentence=len(SENTENCE)))
    return (tr("at scale {s:.4f} 'it' puts {weight_on_animal:.4f} of its weight on 'animal' "
               "(the default 1/√2 gives {weight_on_animal2:.2f}).",
               s=s, weight_on_animal=_weight_on_animal(s), weight_on_animal2=_weight_on_animal(1 / math.sqrt(2))))
