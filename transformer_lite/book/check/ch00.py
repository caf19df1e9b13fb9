"""Checks of chapter 0's exercises (transformer_lite.book.check)."""
import math
from collections import deque

import torch
import torch.nn as nn

import transformer_lite as tl

from ..i18n import tr
from . import Wrong, call, exercise, number


def _positions(answer, name):
    """The reader's list of output positions, as a sorted list of ints."""
    try:
        values = sorted({int(v) for v in answer})
    except (TypeError, ValueError):
        raise Wrong(tr("{name} should be a list of output positions (ints from 0 to 9), "
                       "got {answer_type}.", name=name, answer_type=type(answer).__name__)) from None
    if any(not 0 <= v <= 9 for v in values):
        raise Wrong(tr("{name} should hold positions from 0 to 9 (a 10-token input), got {values}.",
                       name=name, values=values))
    return values


def _changed_outputs():
    """Which outputs of an RNN and of self-attention change when only token 7 of 10 changes."""
    g = torch.Generator().manual_seed(0)
    D = 16
    with torch.random.fork_rng():
        torch.manual_seed(0)
        rnn = nn.RNN(D, D, batch_first=True)
        attn = tl.MultiHeadAttention(D, 2).eval()
    x = torch.randn(1, 10, D, generator=g)
    x2 = x.clone()
    x2[0, 7] += 1.0
    with torch.no_grad():
        r, r2 = rnn(x)[0][0], rnn(x2)[0][0]
        a, a2 = attn(x, x, x)[0][0], attn(x2, x2, x2)[0][0]
    return ([t for t in range(10) if not torch.allclose(r[t], r2[t])],
            [t for t in range(10) if not torch.allclose(a[t], a2[t])])


@exercise("0.1", wrong=[lambda: ([7, 8, 9], [7, 8, 9]),           # "attention is causal too" (it is not: no mask)
                        lambda: ([7], [7]),                       # only the changed token itself
                        lambda: (list(range(10)), [7, 8, 9]),     # the two answers swapped
                        lambda: ([0, 1, 2, 3, 4, 5, 6, 7], list(range(10)))])  # the RNN's outputs before 7
def exercise_0_1(my_rnn_changed, my_attn_changed):
    rnn_expected, attn_expected = _changed_outputs()
    if _positions(my_rnn_changed, "my_rnn_changed") != rnn_expected:
        raise Wrong(tr("my_rnn_changed is not right: it should list every output position of the RNN that changes."),
                    hint=tr("h_t is computed from h_{t-1} and x_t, so it depends on tokens 0..t: which outputs "
                            "can token 7 reach, and which were computed before it was read?"))
    if _positions(my_attn_changed, "my_attn_changed") != attn_expected:
        raise Wrong(tr("my_attn_changed is not right: it should list every output position of self-attention that "
                       "changes."), hint=tr("Without a mask, every output of self-attention is a weighted average over "
                                            "the "
                                        "values of ALL positions, earlier and later ones alike."))
    return tr("the RNN's outputs from position 7 on change; every output of self-attention changes.")


def _conv_layers_needed(d, k, positions=64, max_layers=64):
    """Breadth-first search over a stack of width-k convolutions: layers for input 0 to reach position d."""
    half = k // 2
    dist, queue = {(0, 0): 0}, deque([(0, 0)])
    while queue:
        layer, t = queue.popleft()
        if t == d and layer > 0:
            return layer
        if layer == max_layers:
            continue
        for u in range(max(0, t - half), min(positions, t + half + 1)):
            if (layer + 1, u) not in dist:
                dist[layer + 1, u] = dist[layer, t] + 1
                queue.append((layer + 1, u))
    raise ValueError(f"position {d} not reached in {max_layers} layers")


@exercise("0.2", wrong=[lambda: (lambda d, k: d,),                             # the RNN's answer: one step per token
                        lambda: (lambda d, k: math.ceil(d / (k - 1)),),        # k - 1 instead of (k - 1) / 2
                        lambda: (lambda d, k: d // ((k - 1) // 2),),           # rounded down
                        lambda: (lambda d, k: max(1, math.ceil(math.log(d + 1, k))),)])  # dilated convolutions
def exercise_0_2(my_layers_needed):
    for k in (3, 5, 7):
        for d in (1, 2, 5, 10, 33, 63):
            expected = _conv_layers_needed(d, k)
            got = call(my_layers_needed, d, k, name="my_layers_needed(d, k)")
            number(got, expected, f"my_layers_needed({d}, {k})",
                   hint=tr("One layer of width k lets a position see (k - 1) / 2 positions further on each side; "
                           "count how many such hops input 0 needs to reach position d (a partial hop still "
                           "costs a layer)."), rel=0.0, abs_=1e-9)
    return tr("a stack of width-k convolutions needs ⌈2d / (k − 1)⌉ layers to connect positions d apart: O(n/k).")


def _gru_gradient_ratios(seeds=range(3), D=64, T=64):
    """|∂y_last/∂x_0| / |∂y_last/∂x_last| for freshly initialised GRUs, one per seed."""
    ratios = []
    with torch.random.fork_rng():
        for seed in seeds:
            torch.manual_seed(seed)
            gru = nn.GRU(D, D, batch_first=True)
            x = torch.randn(1, T, D, requires_grad=True)
            gru(x)[0][0, -1].sum().backward()
            g = x.grad[0].norm(dim=1)
            ratios.append((g[0] / g[-1]).item())
    return ratios


@exercise("0.3", wrong=[lambda: (2.5e-22,),      # the plain RNN's ratio
                        lambda: (0.5,),          # attention's ratio: GRU gates do not make the path short
                        lambda: (3.5e13,),       # last / first instead of first / last
                        lambda: (1.0,)])
def exercise_0_3(my_gru_ratio):
    ratios = _gru_gradient_ratios()
    low, high = min(ratios) / 30, max(ratios) * 30   # freshly initialised GRUs, seeds 0-2, with a wide margin
    try:
        value = float(my_gru_ratio)
    except (TypeError, ValueError):
        raise Wrong(tr("my_gru_ratio should be a number, got {my_gru_ratio_type}.",
                       my_gru_ratio_type=type(my_gru_ratio).__name__)) from None
    if not value > 0:
        raise Wrong(tr("my_gru_ratio should be a positive number: a ratio of two gradient norms."))
    if value > 1:
        raise Wrong(tr("my_gru_ratio = {value:.3g} is larger than 1, but the GRU's gradient from token 0 is far "
                       "SMALLER than its gradient from the last token.", value=value),
                    hint=tr("Divide the gradient from token 0 by the gradient from the last token (g[0] / g[-1])."))
    if value > high:
        raise Wrong(tr("my_gru_ratio = {value:.3g} is much larger than a freshly initialised GRU gives.", value=value),
                    hint=tr("Did you measure the GRU? Use input_gradients(lambda x: gru(x)[0], 64) with "
                            "gru = nn.GRU(D, D, batch_first=True); attention's ratio is the one near 1."))
    if value < low:
        raise Wrong(tr("my_gru_ratio = {value:.3g} is much smaller than a freshly initialised GRU gives.", value=value),
                    hint=tr("That is about what the plain RNN gives. Measure the GRU itself: "
                            "input_gradients(lambda x: gru(x)[0], 64) with gru = nn.GRU(D, D, batch_first=True)."))
    return (tr("a fresh GRU's gradient from token 0 is many orders of magnitude larger than the plain RNN's, "
               "yet still far below 1/100 of its gradient from the last token: gating helps, the long path remains."))


def _stacked_rnn_steps(T, L):
    """The longest chain of arrows in the dependency graph of L stacked RNN layers over T tokens."""
    # Node (l, t) is layer l's state at position t; the input x_t is layer 0. Longest path by dynamic
    # programming in the order the states are computed.
    longest = {}
    for l in range(L + 1):
        for t in range(T):
            if l == 0:
                longest[l, t] = 0
                continue
            before = [longest[l - 1, t]] + ([longest[l, t - 1]] if t > 0 else [])
            longest[l, t] = 1 + max(before)
    return max(longest.values())


@exercise("0.4", wrong=[lambda: (lambda T, L: T * L,),            # layer after layer, as if none could overlap
                        lambda: (lambda T, L: T,),                # the stack adds nothing
                        lambda: (lambda T, L: T + L,),            # one too many
                        lambda: (lambda T, L: L,)])               # attention's answer
def exercise_0_4(my_stacked_steps):
    for T, L in ((1, 1), (5, 1), (1, 4), (5, 3), (10, 4), (64, 6)):
        got = call(my_stacked_steps, T, L, name=f"my_stacked_steps({T}, {L})")
        number(got, _stacked_rnn_steps(T, L), f"my_stacked_steps({T}, {L})", rel=0.0, abs_=1e-9,
               hint=tr("Layer l can start on token t as soon as layer l - 1 has finished token t and layer l has "
                       "finished token t - 1: the layers need not wait for each other to finish the whole sentence. "
                       "Count the arrows on the longest path from x_0 to the top layer's last state."))
    return (tr("L stacked RNN layers over T tokens take T + L − 1 sequential steps: the layers advance together, "
               "like a wave, but every layer still walks the sentence token by token. L attention layers take L."))
