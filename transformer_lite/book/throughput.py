"""Chapter 0's claim, measured on training: the Transformer trains in parallel, a GRU steps through the sequence.

A training step of the Transformer handles all T positions at once (teacher forcing + the causal mask);
a GRU encoder-decoder must run its recurrence T times forwards and T times backwards. That is a fact
about the computation (:func:`critical_path`: the longest chain of operations in the backward graph
grows with T for the GRU and not at all for the Transformer). Whether it makes the Transformer *faster*
depends on hardware that can run the independent operations at once (the case made for GPUs, which
:func:`throughput_table` measures when given ``device="cuda"``); on one or two CPU threads at these
small sizes the GRU kept up in every run measured (see tests/test_throughput.py).
This module times both, at about the same number of parameters:

* :func:`matched_models` -- a small Transformer and the :class:`~transformer_lite.baselines.GRUTranslator`
  whose hidden width brings its parameter count closest to the Transformer's;
* :func:`training_throughput` -- target tokens per second of full training steps (forward, label-smoothed
  loss, backward, Adam step) on random token sequences of each length;
* :func:`throughput_table` -- both models, each length, and the ratio Transformer / GRU;
* :func:`critical_path` -- the number of operations that must run one after another in a training step;
* ``python -m transformer_lite.book.throughput`` prints the table as JSON.

Timings are wall-clock medians over steps taken after a warm-up step, so a busy machine moves a few steps,
not the result. The absolute numbers depend on the machine; what the book claims is their *shape*.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import torch

from .._checks import check_int, check_positive_int
from ..baselines import GRUTranslator
from ..model import Transformer, TransformerConfig, count_parameters
from ..training import label_smoothed_cross_entropy, paper_adam, teacher_forcing

KINDS = ("transformer", "gru")
VOCAB = 64  # random tokens 4..63 on both sides (0..3 are the special tokens)
# A small Transformer: 2 + 2 Post-LN layers, D = 64, H = 4, d_ff = 128 (~170k parameters with V = 64).
TRANSFORMER = dict(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=128,
                   dropout=0.1, max_len=256)
GRU_EMBED = 64
SMOOTHING = 0.1


def _check_kind(kind) -> str:
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str ('transformer' or 'gru'), got {type(kind).__name__}")
    if kind not in KINDS:
        raise ValueError(f"kind must be 'transformer' or 'gru', got {kind!r}")
    return kind


def _check_lengths(lengths) -> tuple[int, ...]:
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, (list, tuple)):
        raise TypeError(f"lengths must be a list or tuple of ints, got {type(lengths).__name__}")
    if not lengths:
        raise ValueError("lengths must hold at least one sequence length, got an empty sequence")
    for L in lengths:
        if isinstance(L, bool) or not isinstance(L, int):
            raise TypeError(f"lengths must hold ints, got {L!r} ({type(L).__name__})")
        if not 1 <= L <= TRANSFORMER["max_len"]:
            raise ValueError(f"lengths must lie in [1, {TRANSFORMER['max_len']}] (the position table's size), got {L}")
    return tuple(lengths)


def _device(device) -> torch.device:
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    try:
        return torch.device(device)
    except RuntimeError:
        raise ValueError(f"device must name a torch device ('cpu', 'cuda', ...), got {device!r}") from None


def _gru(hidden: int, vocab_size: int) -> GRUTranslator:
    return GRUTranslator(vocab_size, vocab_size, embed=GRU_EMBED, hidden=hidden, dropout=0.1,
                         max_len=TRANSFORMER["max_len"])


def gru_hidden_for(target: int, vocab_size: int = VOCAB) -> int:
    """The even GRU hidden width whose :class:`GRUTranslator` has the parameter count closest to ``target``."""
    check_positive_int("target", target)
    check_positive_int("vocab_size", vocab_size, minimum=5)
    def count(h):  # grows with h: bisect over h = 2k
        return count_parameters(_gru(h, vocab_size))

    lo, hi = 1, 2048  # in units of 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if count(2 * mid) <= target else (lo, mid)
    return min((2 * lo, 2 * hi), key=lambda h: abs(count(h) - target))


def matched_models(vocab_size: int = VOCAB, seed: int = 0) -> dict[str, torch.nn.Module]:
    """``{"transformer": ..., "gru": ...}``: the small Transformer and a GRU of about as many parameters."""
    check_positive_int("vocab_size", vocab_size, minimum=5)
    check_int("seed", seed)
    with torch.random.fork_rng(devices=[]):  # seeds its own initialisation; the caller's RNG is left alone
        torch.manual_seed(seed)
        transformer = Transformer(TransformerConfig(vocab_size, vocab_size, **TRANSFORMER))
        hidden = gru_hidden_for(count_parameters(transformer), vocab_size)
        torch.manual_seed(seed)
        gru = _gru(hidden, vocab_size)
    return {"transformer": transformer, "gru": gru}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def _check_clock(clock, device: torch.device) -> str:
    if not isinstance(clock, str):
        raise TypeError(f"clock must be a str, 'wall' or 'cpu', got {type(clock).__name__}")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    if clock == "cpu" and device.type != "cpu":
        raise ValueError(f"clock='cpu' times the calling thread's CPU work, so the device must be the CPU, "
                         f"got {device}")
    return clock


def _check_run(lengths, batch_size, steps, device, seed, clock) -> tuple[tuple[int, ...], torch.device]:
    """The arguments a measurement shares, checked; ``(lengths, device)`` normalised."""
    lengths = _check_lengths(lengths)
    check_positive_int("batch_size", batch_size)
    check_positive_int("steps", steps)
    device = _device(device)
    check_int("seed", seed)
    _check_clock(clock, device)
    return lengths, device


def _step_seconds(model, optimizer, src, tgt, device, clock: str = "wall") -> float:
    """One full training step -- forward, label-smoothed loss, backward, Adam -- in seconds.

    ``clock="wall"``: wall-clock time. ``clock="cpu"``: the calling thread's CPU time, which other programs on a
    busy machine barely change; it counts all the work only when torch uses one thread (``num_threads(1)``).
    """
    now = CLOCKS[clock]
    _sync(device)
    start = now()
    decoder_input, labels = teacher_forcing(tgt)  # (B, L), (B, L)
    logits = model(src, decoder_input)  # (B, L, V)
    loss = label_smoothed_cross_entropy(logits, labels, SMOOTHING, ignore_index=model.pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    _sync(device)
    return now() - start


def training_throughput(kind: str, lengths: Sequence[int] = (8, 16, 32, 64, 128), batch_size: int = 16,
                        steps: int = 3, device="cpu", seed: int = 0, clock: str = "wall") -> dict[int, float]:
    """Target tokens per second of training ``kind`` ("transformer" or "gru") at each sequence length.

    For each length L: random source (B, L) and target sequences (B, L + 1: the decoder reads L tokens
    and predicts L), one warm-up step, then ``steps`` timed steps; the result is B * L divided by the
    median step time. The model is :func:`matched_models`' (fresh for every length, in training mode,
    Adam with the paper's betas), on ``device``. ``clock``: see :func:`_step_seconds`. Returns
    ``{L: tokens per second}``.
    """
    _check_kind(kind)
    lengths, device = _check_run(lengths, batch_size, steps, device, seed, clock)
    out = {}
    g = torch.Generator().manual_seed(seed)
    for L in lengths:
        model = matched_models(VOCAB, seed)[kind].to(device).train()
        optimizer = paper_adam(model.parameters(), lr=1e-3)
        src = torch.randint(4, VOCAB, (batch_size, L), generator=g).to(device)  # (B, L)
        tgt = torch.randint(4, VOCAB, (batch_size, L + 1), generator=g).to(device)  # (B, L + 1)
        _step_seconds(model, optimizer, src, tgt, device, clock)  # warm-up: allocations, first-call dispatch
        seconds = statistics.median(_step_seconds(model, optimizer, src, tgt, device, clock) for _ in range(steps))
        out[L] = batch_size * L / seconds
    return out


def throughput_table(lengths: Sequence[int] = (8, 16, 32, 64, 128), batch_size: int = 16, steps: int = 3,
                     device="cpu", seed: int = 0, clock: str = "wall") -> dict:
    """Both models at each length, measured in turn (so a busy moment hits both), and their ratio.

    Returns ``{"lengths": [...], "transformer": [tokens/s, ...], "gru": [...], "ratio": [Transformer / GRU, ...],
    "parameters": {"transformer": n, "gru": n}, "gru_hidden": h, "threads": torch.get_num_threads(),
    "device": str, "clock": clock}``.
    """
    lengths, device = _check_run(lengths, batch_size, steps, device, seed, clock)
    models = matched_models(VOCAB, seed)
    rows = {kind: [] for kind in KINDS}
    for L in lengths:
        for kind in KINDS:
            rows[kind].append(training_throughput(kind, (L,), batch_size, steps, device, seed, clock)[L])
    return {"lengths": list(lengths), **rows,
            "ratio": [t / g for t, g in zip(rows["transformer"], rows["gru"])],
            "parameters": {k: count_parameters(m) for k, m in models.items()},
            "gru_hidden": models["gru"].hidden, "threads": torch.get_num_threads(), "device": str(device),
            "clock": clock}


def critical_path(kind: str, length: int, batch_size: int = 2, seed: int = 0) -> int:
    """The longest chain of operations in ``kind``'s backward graph for one training loss at ``length``.

    The number of autograd nodes from the loss to the farthest parameter: operations on such a chain
    must run one after another, on any hardware, however many cores it has. What is invariant is the data
    dependence, not the node count: a fused kernel (cuDNN's GRU is one node) hides the chain inside one
    operation, yet inside it position t still waits for position t - 1. Counted on this unfused graph it
    does not depend on the machine, the thread count or the timer -- it is *why* the timings above can differ.
    """
    _check_kind(kind)
    (length,) = _check_lengths((length,))
    check_positive_int("batch_size", batch_size)
    check_int("seed", seed)
    model = matched_models(VOCAB, seed)[kind].train()
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (batch_size, length), generator=g)  # (B, L)
    decoder_input, labels = teacher_forcing(torch.randint(4, VOCAB, (batch_size, length + 1), generator=g))
    loss = label_smoothed_cross_entropy(model(src, decoder_input), labels, SMOOTHING, ignore_index=model.pad_id)
    depth: dict = {}  # node -> longest chain from it down to a leaf, counted in nodes
    entered, stack = set(), [(loss.grad_fn, False)]
    while stack:  # iterative post-order DFS (a GRU's graph is thousands of nodes deep: no recursion)
        node, children_done = stack.pop()
        children = [c for c, _ in node.next_functions if c is not None]
        if children_done:
            depth[node] = 1 + max((depth[c] for c in children), default=0)
        elif node not in entered:  # each node once: the graph is a DAG whose nodes have many parents
            entered.add(node)
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in entered)
    return depth[loss.grad_fn]


if __name__ == "__main__":  # python -m transformer_lite.book.throughput [threads] [seed]
    import json
    import sys

    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    torch.set_num_threads(threads)
    start = time.perf_counter()
    table = throughput_table(seed=seed)
    table["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(table))
