"""Checks of chapter 6's exercises (transformer_lite.book.check): BatchNorm vs LayerNorm."""
import math

import torch

from ..i18n import tr
from . import Wrong, call, close, exercise, number, tensor

EPS = 1e-5


def _diagnose(out, mistakes):
    """Raise Wrong with a specific hint when ``out`` equals the output of a known mistake."""
    out = tensor(out, tr("your answer"))
    for expected, message, hint in mistakes:
        if out.shape == expected.shape and torch.allclose(out.double(), expected.double(), atol=1e-4, rtol=1e-4):
            raise Wrong(message, hint)


def _padded_batch():
    """The chapter's padded batch (B, T, D) = (2, 3, 4): sentence 1's third position is a zero vector."""
    real_0 = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [3.0, 1.0, 0.0, 2.0]])
    real_1 = torch.tensor([[4.0, 3.0, 2.0, 1.0], [0.0, 2.0, 4.0, 6.0]])
    return torch.stack([real_0, torch.cat([real_1, torch.zeros(1, 4)])])


# ---- 6.1 BatchNorm by hand ---------------------------------------------------------------------------------

def _bn_by_hand(values, first, correction=0):
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - correction)
    return mean, var, (first - mean) / math.sqrt(var + EPS)


_FEATURE_0 = [1.0, 2.0, 3.0, 4.0, 0.0, 0.0]      # feature 0 at the six positions (the last is padding)


@exercise("6.1", wrong=[lambda: _bn_by_hand(_FEATURE_0, 1.0, correction=1),           # unbiased variance
                        lambda: _bn_by_hand(_FEATURE_0[:5], 1.0),                     # padding left out
                        lambda: _bn_by_hand([1.0, 2.0, 3.0, 4.0], 1.0)])              # LayerNorm's axes
def exercise_6_1(my_mean, my_var, my_out):
    x = _padded_batch()
    f0 = x[..., 0]                                                    # (B, T): feature 0 everywhere
    mean, var = f0.mean().item(), f0.var(correction=0).item()
    out = ((x[0, 0, 0] - mean) / math.sqrt(var + EPS)).item()
    number(my_mean, mean, "my_mean",
           hint=tr("BatchNorm's mean of feature 0 runs over all B × T = 6 positions of the padded batch, the padding "
                   "position (a zero) included, not over token 0's four features (that would be LayerNorm)."))
    number(my_var, var, "my_var",
           hint=tr("Divide the sum of squared deviations by n = 6 (the biased variance, as BatchNorm normalizes a "
                   "training batch), not by n − 1."))
    number(my_out, out, "my_out", hint=tr("The output is (x − mean) / sqrt(var + eps), for x = 1 (token 0 of sentence "
                                          "0)."))
    return tr("feature 0: mean, biased variance and the output of token 0 are all right (padding included).")


# ---- 6.2 Masked BatchNorm ----------------------------------------------------------------------------------

def _bn_unmasked(x, mask):
    mean, var = x.mean(dim=(0, 1)), x.var(dim=(0, 1), correction=0)
    return (x - mean) / torch.sqrt(var + EPS)


def _bn_masked_unbiased(x, mask):
    real = x[mask]
    return (x - real.mean(dim=0)) / torch.sqrt(real.var(dim=0, correction=1) + EPS)


def _ln(x, mask):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, correction=0) + EPS)


@exercise("6.2", wrong=[lambda: (_bn_unmasked,), lambda: (_bn_masked_unbiased,), lambda: (_ln,)])
def exercise_6_2(my_masked_batch_norm):
    g = torch.Generator().manual_seed(6)
    B, T, D = 3, 5, 6
    x = torch.randn(B, T, D, generator=g) * 2 + 1
    mask = torch.tensor([[True] * 5,                                  # full sentence
                         [True, True, True, False, False],            # padded at the end
                         [False, False, True, True, True]])           # padded at the start
    x[~mask] = 0.0
    out = call(my_masked_batch_norm, x.clone(), mask.clone(), name="my_masked_batch_norm(x, mask)")
    out = tensor(out, "my_masked_batch_norm(x, mask)", (B, T, D))
    expected = torch.nn.BatchNorm1d(D)(x[mask])                       # training mode, on the real tokens only
    _diagnose(out[mask], [
        (_bn_unmasked(x, mask)[mask], tr("your statistics include the padding positions."),
         tr("Select the real tokens first, real = x[mask] (shape (N, D)), and take the mean and variance of those.")),
        (_bn_masked_unbiased(x, mask)[mask], tr("you divided by the unbiased variance (n − 1)."),
         tr("BatchNorm normalizes a training batch with the biased variance: var(dim=0, correction=0).")),
        (_ln(x, mask)[mask], tr("you normalized each token over its own features: that is LayerNorm."),
         tr("BatchNorm's statistics are per feature, over the real tokens: reduce over dim 0 of x[mask]."))])
    close(out[mask], expected, tr("my_masked_batch_norm(x, mask) at the real positions"),
          hint=tr("Take the statistics per feature over the real tokens only: real = x[mask] has shape (N, D); its "
                  "mean and biased variance over dim 0 (correction=0). Then (x − mean) / sqrt(var + 1e-5)."))
    return tr("your masked BatchNorm equals nn.BatchNorm1d on the real tokens alone (padding at the end and the "
              "start).")


# ---- 6.3 The padded variance, with any padding value ---------------------------------------------------------

_CASES = [(2.0, 1.0, 6, 2, 0.0), (0.5, 4.0, 4, 4, 5.0), (-1.0, 0.3, 9, 1, -1.0), (3.0, 2.0, 5, 1, 1.0)]


@exercise("6.3", wrong=[lambda: (lambda mu, sigma2, p, c=0.0: (1 - p) * sigma2 + p * (1 - p) * mu ** 2,),   # c ignored
                        lambda: (lambda mu, sigma2, p, c=0.0: (1 - p) * sigma2 + p * (mu - c) ** 2,),
                        lambda: (lambda mu, sigma2, p, c=0.0: (1 - p) * sigma2,),
                        lambda: (lambda mu, sigma2, p, c=0.0: sigma2 + p * (mu - c) ** 2,)])   # "always inflates"
def exercise_6_3(my_padded_variance):
    g = torch.Generator().manual_seed(3)
    for mu, sigma2, n_real, n_pad, c in _CASES:
        z = torch.randn(n_real, generator=g, dtype=torch.float64)
        real = mu + math.sqrt(sigma2) * (z - z.mean()) / z.std(correction=0)   # exactly mean mu, variance sigma2
        values = torch.cat([real, torch.full((n_pad,), c, dtype=torch.float64)])
        p = n_pad / (n_real + n_pad)
        answer = call(my_padded_variance, mu, sigma2, p, c, name="my_padded_variance")
        number(answer, values.var(correction=0).item(),
               f"my_padded_variance(mu={mu}, sigma2={sigma2}, p={p:.3g}, c={c})",
               hint=tr("Write the padded batch's mean, (1 − p)·mu + p·c, and its mean square, "
                       "(1 − p)(sigma2 + mu²) + p·c², "
                       "and subtract. With c = 0 you should get the chapter's (1 − p)·sigma2 + p(1 − p)·mu²."))
    return tr("your formula matches the variance of real values plus constant padding in all four cases.")


# ---- 6.4 Bug hunt: a norm with the wrong axis ------------------------------------------------------------------

def suspect_norm(x: torch.Tensor) -> torch.Tensor:
    """A colleague's normalization for a (B, T, D) batch: (B, T, D) -> (B, T, D)."""
    from ...pitfalls import layer_norm_over_positions

    return layer_norm_over_positions(x)


def _dims(answer) -> tuple:
    """The axes of a (B, T, D) batch as a sorted tuple of 0, 1, 2 (-1 is 2); an int alone is one axis."""
    items = [answer] if isinstance(answer, int) and not isinstance(answer, bool) else answer
    try:
        dims = {int(d) for d in items if not isinstance(d, bool)}
        if len(dims) != len(list(items)) or not dims:
            raise ValueError
    except (TypeError, ValueError):
        raise Wrong(tr("my_dims should be a tuple of axes of the (B, T, D) batch such as (0, 2), got {answer!r}.",
                       answer=answer),
                    tr("Give the dims of the suspect's mean: "
                       "0 = batch (sentences), 1 = positions, 2 = features.")) from None
    if not all(-3 <= d <= 2 for d in dims):
        raise Wrong(tr("a (B, T, D) batch has the axes 0, 1 and 2 (or -3 to -1), got {answer!r}.", answer=answer))
    return tuple(sorted({d % 3 for d in dims}))


@exercise("6.4", wrong=[lambda: ((0, 1),), lambda: ((2,),), lambda: ((-1,),), lambda: ((0,),), lambda: ((1, 2),),
                        lambda: ("positions",)])
def exercise_6_4(my_dims):
    dims = _dims(my_dims)
    # the diagnosis, measured again: the suspect ignores the other sentences but not its own sentence's padding
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 3, 4, generator=g) * 2 + 1
    other = x.clone()
    other[1] += 3.0
    longer = torch.cat([x, torch.zeros(2, 2, 4)], dim=1)
    by_batch = (suspect_norm(other)[0] - suspect_norm(x)[0]).abs().max() > 1e-4
    by_padding = (suspect_norm(longer)[:, :3] - suspect_norm(x)).abs().max() > 1e-4
    assert by_padding and not by_batch
    if 0 in dims:
        raise Wrong(tr("a token's output does not change when the OTHER sentence of the batch changes, so the "
                       "statistics do not run over the batch (dim 0)."),
                    tr("Now pad the suspect's batch with more positions (pad_to(5)) and compare sentence 0's outputs."))
    if dims == (2,):
        raise Wrong(tr("over the features (dim -1) is what LayerNorm does, and LayerNorm's outputs do not move with "
                       "padding; the suspect's do."),
                    tr("Run the padding test: pad_to(3) against pad_to(5), sentence 0's first three positions."))
    if dims != (1,):
        raise Wrong(tr("the statistics over the dims {dims} would move a token's output with its own features and "
                       "with padding alike; the suspect's output moves with padding only.", dims=dims),
                    tr("Padding adds positions to a sentence; which single axis does that lengthen?"))
    return (tr("right: padding its own sentence moves a token's output, other sentences do not, so each feature is "
               "normalized over the positions of its sentence (dim=1 where LayerNorm uses dim=-1)."))


# ---- 6.5 Per-time-step BatchNorm ------------------------------------------------------------------------------

def _bn_all(x):
    return _bn_unmasked(x, None)


def _bn_time_unbiased(x):
    return (x - x.mean(0)) / torch.sqrt(x.var(0, correction=1) + EPS)


@exercise("6.5", wrong=[lambda: (_bn_all,), lambda: (lambda x: _ln(x, None),), lambda: (_bn_time_unbiased,)])
def exercise_6_5(my_time_step_batch_norm):
    g = torch.Generator().manual_seed(5)
    B, T, D = 4, 3, 5
    x = torch.randn(B, T, D, generator=g) * 3 + torch.arange(T * D, dtype=torch.float32).view(1, T, D) / 4
    out = call(my_time_step_batch_norm, x.clone(), name="my_time_step_batch_norm(x)")
    expected = torch.nn.BatchNorm1d(T * D)(x.reshape(B, T * D)).reshape(B, T, D)   # every (t, d) its own "feature"
    out = tensor(out, "my_time_step_batch_norm(x)", (B, T, D))
    _diagnose(out, [
        (_bn_all(x), tr("you pooled the statistics over batch AND time: that is the ordinary BatchNorm of the "
                        "chapter."),
         tr("Per time step means one mean and variance for every (t, d): reduce over dim 0 only.")),
        (_ln(x, None), tr("you normalized each token over its features: that is LayerNorm."),
         tr("Reduce over the batch axis, dim 0, not over the features.")),
        (_bn_time_unbiased(x), tr("you divided by the unbiased variance (n − 1)."),
         tr("Use the biased variance, x.var(dim=0, correction=0), as BatchNorm does in training mode."))])
    close(out, expected, "my_time_step_batch_norm(x)",
          hint=tr("Per time step, the statistics run over the batch axis only: x.mean(dim=0) and "
                  "x.var(dim=0, correction=0), each of shape (T, D)."))
    return tr("your per-time-step BatchNorm equals nn.BatchNorm1d(T·D) applied to x.reshape(B, T·D).")
