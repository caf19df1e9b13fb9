"""Checks of chapter 5's exercises (transformer_lite.book.check): LayerNorm, RMSNorm and the FFN."""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

import transformer_lite as tl
from transformer_lite import pitfalls

from ..i18n import N_, tr
from . import Wrong, call, close, exercise, number, tensor

_VARIANCE_HINT = (N_("LayerNorm divides by the biased variance: the mean of the squared deviations (divide by D, "
                     "torch's correction=0), not torch.var's default, which divides by D - 1."))


# ---- 5.1: LayerNorm by hand ----------------------------------------------------------------------------

def _by_hand_unbiased():
    x = torch.tensor([2.0, 4.0, 6.0, 8.0])
    return 5.0, x.var().item(), (x - 5) / x.var().sqrt()


@exercise("5.1",
          wrong=[_by_hand_unbiased, lambda: (5.0, 5.0, [-3.0, -1.0, 1.0, 3.0]), lambda: (5.0, 20.0, [-1, 0, 0, 1])])
def exercise_5_1(my_mean, my_variance, my_output):
    x = torch.tensor([2.0, 4.0, 6.0, 8.0])
    number(my_mean, x.mean().item(), "my_mean", hint=tr("the mean of the four numbers."))
    number(my_variance, x.var(correction=0).item(), "my_variance", hint=tr(_VARIANCE_HINT))
    close(my_output, F.layer_norm(x, (4,)), "my_output",
          hint=tr("subtract the mean, then divide by the square root of (the biased variance + eps); eps = 1e-5 "
                  "changes only the sixth decimal."))
    return tr("mean 5, biased variance 20 / 4 = 5, output (x - 5) / sqrt(5): equal to nn.LayerNorm(4).")


# ---- 5.2: LayerNorm from scratch ---------------------------------------------------------------------------

def _unbiased_ln(x, gamma, beta, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * gamma + beta


def _eps_outside(x, gamma, beta, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, correction=0).sqrt() + eps) * gamma + beta


def _annotated_transformer(x, gamma, beta, eps=1e-5):
    return gamma * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) + beta


def _no_affine(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], eps=eps)


# each mistake's hint in sentences, every one a message of the catalog (translated and joined when shown)
_LN_MISTAKES = [
    (_unbiased_ln, (N_("you divided by the unbiased variance (D - 1, torch.var's default). "), _VARIANCE_HINT)),
    (_annotated_transformer, (N_("that is the Annotated Transformer's version: the unbiased std and eps outside the "
                                 "root. "),
                              _VARIANCE_HINT, N_(" And eps goes inside the square root: sqrt(var + eps)."))),
    (_eps_outside, (N_("eps goes inside the square root, sqrt(var + eps), not std + eps. It matters for a nearly "
                       "constant token, whose variance is comparable to eps (one is in the test batch)."),)),
    (_no_affine, (N_("apply the learned scale gamma and shift beta after normalizing: gamma * x_hat + beta."),)),
]


@exercise("5.2", wrong=[lambda m=m: (m,) for m, _ in _LN_MISTAKES] + [lambda: (lambda x, gamma, beta, eps=1e-5: x,)])
def exercise_5_2(my_layer_norm):
    g = torch.Generator().manual_seed(0)
    D = 8
    x = torch.randn(2, 3, D, generator=g) * 2 + 1
    x[1, 2] = 1e-3 * torch.randn(D, generator=g)  # a nearly constant token: variance ~ 1e-6, below eps
    gamma, beta = torch.randn(D, generator=g), torch.randn(D, generator=g)
    expected = F.layer_norm(x, (D,), gamma, beta, 1e-5)
    out = call(my_layer_norm, x, gamma, beta, name="my_layer_norm")
    hint = tr("LayerNorm: x_hat = (x - mean) / sqrt(biased variance + eps) over the last axis; then gamma * x_hat + "
              "beta.")
    if isinstance(out, torch.Tensor) and out.shape == expected.shape:
        for mistake, text in _LN_MISTAKES:
            if torch.allclose(out, mistake(x, gamma, beta), atol=1e-5):
                hint = "".join(tr(part) for part in text)
                break
    close(out, expected, "my_layer_norm(x, gamma, beta)", hint=hint)
    return tr("your LayerNorm equals F.layer_norm on a (2, 3, 8) batch, nearly constant token included.")


# ---- 5.3: RMSNorm -------------------------------------------------------------------------------------------

@exercise("5.3", wrong=[
    lambda: (lambda x, eps=1e-5: tl.layer_norm(x, eps=eps),),
    lambda: (lambda x, eps=1e-5: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps),),
    lambda: (lambda x, eps=1e-5: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps),),
])
def exercise_5_3(my_rms_norm):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, generator=g) + 0.5
    x[3] = 1e-3 * torch.randn(16, generator=g)  # a tiny token: mean(x^2) ~ 1e-6, below eps
    expected = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    out = call(my_rms_norm, x, name="my_rms_norm")
    close(out, expected, "my_rms_norm(x)",
          hint=tr("RMSNorm does not subtract the mean: divide x by sqrt(mean of x^2 over the last axis + eps), "
                  "eps inside the root, the MEAN of the squares (not their sum)."))
    return tr("your RMSNorm equals x / sqrt(mean(x^2) + eps) on a (4, 16) batch.")


# ---- 5.4: bug hunt, a LayerNorm that passes the first test -----------------------------------------------

class SuspectNorm(torch.nn.Module):
    """A colleague's LayerNorm: nn.LayerNorm's parameters (weight, bias, eps). Shape: x (..., D) -> (..., D)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self._impl = (pitfalls.LayerNormAffineFirst(d_model, eps),)   # a tuple: not a submodule, so no state of its own
        self.normalized_shape, self.eps = (d_model,), float(eps)
        self.weight = torch.nn.Parameter(torch.ones(d_model))
        self.bias = torch.nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        impl = self._impl[0]
        impl.weight, impl.bias, impl.eps = self.weight, self.bias, self.eps   # whatever a test set them to
        return impl(x)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


def suspect_layer_norm(d_model: int) -> torch.nn.Module:
    """The bug hunt's suspect, a SuspectNorm(d_model): its name, repr and docstring do not say what it does."""
    return SuspectNorm(d_model)


class _UnbiasedLayerNorm(torch.nn.Module):
    """The chapter's other pitfall as a module (unbiased variance, eps outside the root): a test must flag it."""

    def __init__(self, d_model: int):
        super().__init__()
        self.normalized_shape, self.eps = (d_model,), 1e-5
        self.weight = torch.nn.Parameter(torch.ones(d_model))
        self.bias = torch.nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return pitfalls.layer_norm_unbiased_eps_outside(x, self.weight, self.bias, eps=self.eps)


def _test_at_init(module) -> bool:
    """WRONG test: compares with nn.LayerNorm as built, gamma = 1 and beta = 0, which hide the bug."""
    D = module.weight.shape[0]
    x = torch.randn(4, 7, D, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return torch.allclose(module(x), F.layer_norm(x, (D,), module.weight, module.bias, module.eps), atol=1e-5)


def _test_random_affine(module) -> bool:
    D = module.weight.shape[0]
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        module.weight.copy_(torch.randn(D, generator=g))
        module.bias.copy_(torch.randn(D, generator=g))
        x = torch.randn(4, 7, D, generator=g) * 3 + 1
        return torch.allclose(module(x), F.layer_norm(x, (D,), module.weight, module.bias, module.eps), atol=1e-5)


_DIAGNOSES = {"a": N_("the unbiased variance"), "b": N_("eps outside the square root"), "c": N_("the wrong axis"),
              "d": N_("gamma and beta applied before normalizing"), "e": N_("no bug")}


@exercise("5.4", wrong=[
    lambda: (_test_at_init, "d"),                 # the test that passes the suspect: gamma = 1, beta = 0 hide it
    lambda: (_test_random_affine, "a"),           # a good test, the wrong diagnosis
    lambda: (_test_random_affine, "e"),
    lambda: (lambda module: False, "d"),          # a "test" that rejects everything, nn.LayerNorm's equal too
])
def exercise_5_4(matches_nn_layer_norm, diagnosis):
    D = 16
    cases = [("tl.LayerNorm(16)", tl.LayerNorm(D), True),
             (tr("a tl.LayerNorm(16) with trained-looking gamma and beta"), tl.LayerNorm(D), True),
             (tr("the suspect, freshly built"), suspect_layer_norm(D), False),
             (tr("a LayerNorm with the unbiased variance and eps outside the root"), _UnbiasedLayerNorm(D), False)]
    suspect = cases[2][0]
    with torch.no_grad():
        cases[1][1].weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(3))
        cases[1][1].bias.uniform_(-0.5, 0.5, generator=torch.Generator().manual_seed(4))
    for name, module, expected in cases:
        with torch.random.fork_rng():  # the reader's random numbers stay as they were
            verdict = call(matches_nn_layer_norm, copy.deepcopy(module), name="matches_nn_layer_norm")
        if (not isinstance(verdict, (bool, torch.Tensor))
                or (isinstance(verdict, torch.Tensor) and verdict.numel() != 1)):
            raise Wrong(tr("matches_nn_layer_norm should return True or False, got {verdict!r}.", verdict=verdict))
        if bool(verdict) != expected:
            hint = (tr("gamma = 1 and beta = 0, as every LayerNorm is built, hide some bugs: give the module random "
                       "gamma and beta first (torch.no_grad(), .normal_()), copy them into nn.LayerNorm (or pass them "
                       "to F.layer_norm), and compare on a random batch, as this chapter did.")
                    if name == suspect else
                    tr("compare the module's output with nn.LayerNorm's (same weight, bias and eps) on a random "
                       "batch, with torch.allclose and a small tolerance."))
            raise Wrong(tr("matches_nn_layer_norm says {verdict} for {name}; it should say {expected}.",
                           verdict=bool(verdict), name=name, expected=expected), hint)
    if not isinstance(diagnosis, str) or diagnosis.strip().lower() not in _DIAGNOSES:
        raise Wrong(tr("diagnosis should be one of the letters {diagnoses}, got {diagnosis!r}.",
                       diagnoses=', '.join(_DIAGNOSES), diagnosis=diagnosis))
    if diagnosis.strip().lower() == "e":
        raise Wrong(tr("there is a bug: your own test has just found one. Which is it?"),
                    hint=tr("set gamma to 2 everywhere and beta to 0: nn.LayerNorm doubles its output; what does the "
                            "suspect do?"))
    if diagnosis.strip().lower() != "d":
        raise Wrong(tr("your test is right, but the bug is not {diagnoses}.",
                       diagnoses=tr(_DIAGNOSES[diagnosis.strip().lower()])),
                    hint=tr("(a) and (c) would show up with gamma = 1 and beta = 0 already; (b) shows only on nearly "
                            "constant vectors, which a random batch does not hold. Set gamma to 2 everywhere and beta "
                            "to 0: nn.LayerNorm doubles its output; what does the suspect do?"))
    return (tr("your test catches the suspect, which equals nn.LayerNorm until gamma and beta move: it applies them "
               "before normalizing (pitfalls.LayerNormAffineFirst), so the normalization undoes them."))


# ---- 5.5: the position-wise FFN from scratch ------------------------------------------------------------

_FIRST_SEEN: dict = {}


def _ffn_remembers_positions(x, W1, b1, W2, b2):
    """A wrong answer the value check alone accepts: it answers the first input it sees correctly, then reuses
    that answer position by position (like a lookup by position), so a shuffled input gets the old order."""
    right = torch.relu(x @ W1 + b1) @ W2 + b2
    key = tuple(x.shape)
    if key not in _FIRST_SEEN or not torch.equal(_FIRST_SEEN[key][0].sort(dim=1).values, x.sort(dim=1).values):
        _FIRST_SEEN[key] = (x.clone(), right)
        return right
    return _FIRST_SEEN[key][1]


@exercise("5.5", wrong=[
    lambda: (lambda x, W1, b1, W2, b2: (x @ W1 + b1) @ W2 + b2,),                      # no ReLU
    lambda: (lambda x, W1, b1, W2, b2: torch.relu(torch.relu(x @ W1 + b1) @ W2 + b2),),  # a ReLU at the end too
    lambda: (lambda x, W1, b1, W2, b2: torch.relu(x @ W1) @ W2,),                       # biases forgotten
    lambda: (lambda x, W1, b1, W2, b2: torch.relu(x @ W1 + b1).mean(1, keepdim=True) @ W2 + b2,),  # mixes positions
    lambda: (_ffn_remembers_positions,),  # right on the given order, but tied to where each vector sits
])
def exercise_5_5(my_ffn):
    with torch.random.fork_rng():  # the reader's random numbers stay as they were
        torch.manual_seed(5)
        ffn = tl.FeedForward(8, 32, dropout=0.0)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    W1, b1, W2, b2 = ffn.linear1.weight.T, ffn.linear1.bias, ffn.linear2.weight.T, ffn.linear2.bias
    with torch.no_grad():
        expected = ffn(x)
        out = call(my_ffn, x, W1, b1, W2, b2, name="my_ffn")
    tensor(out, "my_ffn(x, W1, b1, W2, b2)", tuple(expected.shape))
    close(out, expected, "my_ffn(x, W1, b1, W2, b2)",
          hint=tr("FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position's vector: W1 is (D, d_ff), "
                  "W2 is (d_ff, D); the ReLU sits between the two maps only."))
    # The exercise's second half: shuffling the positions shuffles the output the same way (position-wise).
    for perm in (torch.tensor([4, 2, 0, 3, 1]), torch.tensor([1, 0, 2, 4, 3])):
        with torch.no_grad():
            shuffled = call(my_ffn, x[:, perm], W1, b1, W2, b2, name="my_ffn")
        tensor(shuffled, "my_ffn(x[:, perm], W1, b1, W2, b2)", tuple(expected.shape))
        close(shuffled, out[:, perm], tr("my_ffn(x[:, perm], ...) against my_ffn(x, ...)[:, perm]"),
              hint=tr("a position-wise FFN treats each position's vector alone, so permuting the positions of the "
                      "input permutes the output the same way; yours depends on where a vector sits."))
    return (tr("your FFN equals tl.FeedForward on a (2, 5, 8) batch, and permuting the positions of its input "
               "permutes its output the same way: it cannot tell where in the sentence a vector came from."))
