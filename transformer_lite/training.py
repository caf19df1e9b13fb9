"""Training the Transformer (paper §5): teacher forcing, label smoothing, Adam with warm-up.

Teacher forcing: the decoder reads the target shifted right and predicts it shifted left,

    decoder input   <bos> 我   有   一   只   猫
    labels          我    有   一   只   猫   <eos>

so every position is trained at once, in one forward pass (the causal mask stops
position t from seeing the label it must predict).

Label smoothing (paper §5.4, Szegedy et al. 2016): the target distribution is
(1 - eps) * one_hot + eps / V instead of one_hot, exactly as
``F.cross_entropy(..., label_smoothing=eps)``.

Learning rate (paper §5.3, "Noam" schedule):

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from ._checks import check_instance, check_int, check_number, check_positive_int, check_probability, check_token_ids
from .data import PAD, trim_padding


def teacher_forcing(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split BOS + y + EOS into the decoder's input and its labels.

    Shape: tgt (B, T + 1) -> decoder_input (B, T) = tgt[:, :-1], labels (B, T) = tgt[:, 1:].
    """
    check_token_ids("tgt", tgt)
    if tgt.shape[1] < 2:
        raise ValueError(f"tgt must have at least 2 positions (BOS and one more), got shape {tuple(tgt.shape)}")
    return tgt[:, :-1], tgt[:, 1:]


def smoothed_targets(labels: torch.Tensor, V: int, smoothing: float = 0.0) -> torch.Tensor:
    """The target distribution of label smoothing: (1 - smoothing) * one_hot(labels) + smoothing / V.

    Shape: labels (...) long -> (..., V); every row sums to 1.
    """
    check_positive_int("V", V)
    check_token_ids("labels", labels.reshape(1, -1) if isinstance(labels, torch.Tensor) else labels, V)
    smoothing = check_probability("smoothing", smoothing)
    one_hot = F.one_hot(labels, V).float()  # (..., V)
    return (1.0 - smoothing) * one_hot + smoothing / V


def label_smoothed_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, smoothing: float = 0.0,
                                 ignore_index: int = PAD) -> torch.Tensor:
    """Cross-entropy against the smoothed targets, averaged over the positions that are not ``ignore_index``.

        loss = mean over positions of  -sum_v q(v) log p(v),   p = softmax(logits),  q = smoothed_targets

    Written out by hand; equals ``F.cross_entropy(logits.view(-1, V), labels.view(-1),
    label_smoothing=smoothing, ignore_index=ignore_index)``.

    Shape: logits (B, T, V) or (N, V) float, labels (B, T) or (N,) long -> scalar.
    """
    check_instance("logits", logits, torch.Tensor)
    check_instance("labels", labels, torch.Tensor)
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point tensor, got dtype {logits.dtype}")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise TypeError(f"labels must hold integer class ids (torch.long), got dtype {labels.dtype}")
    if logits.dim() not in (2, 3) or logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits must have shape labels.shape + (V,) = {tuple(labels.shape)} + (V,) "
                         f"with logits (B, T, V) or (N, V), got logits {tuple(logits.shape)}")
    smoothing = check_probability("smoothing", smoothing)
    V = logits.shape[-1]
    keep = labels != ignore_index  # (B, T): positions that count
    safe = labels.masked_fill(~keep, 0)  # any valid id; these rows are dropped below
    if not torch.compiler.is_compiling():  # a value check syncs with the device: skipped in a compiled graph
        if int(keep.sum()) and (int(safe[keep].min()) < 0 or int(safe[keep].max()) >= V):
            raise ValueError(f"labels must lie in [0, {V}) (the logits' last dimension) or equal ignore_index")
    log_p = torch.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    q = smoothed_targets(safe, V, smoothing)  # (B, T, V)
    per_position = -(q * log_p).sum(dim=-1)  # (B, T)
    return (per_position * keep).sum() / keep.sum().clamp(min=1)


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The paper's learning rate at ``step`` (counted from 1): linear warm-up, then decay as 1/sqrt(step).

        factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    The peak, at ``step == warmup_steps``, is factor / sqrt(d_model * warmup_steps).
    """
    check_positive_int("step", step)
    check_positive_int("d_model", d_model)
    check_positive_int("warmup_steps", warmup_steps)
    check_number("factor", factor, positive=True)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


def warmup_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                     factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets the learning rate to :func:`noam_lr` -- whatever ``lr`` the optimizer was built with.

    Call ``scheduler.step()`` after every ``optimizer.step()``; update k (1, 2, ...) then uses noam_lr(k).
    """
    check_instance("optimizer", optimizer, torch.optim.Optimizer)
    noam_lr(1, d_model, warmup_steps, factor)  # validates the arguments
    # LambdaLR multiplies each group's initial lr by the lambda, so divide it back out.
    lambdas = [lambda s, base=g["lr"]: noam_lr(s + 1, d_model, warmup_steps, factor) / base
               for g in optimizer.param_groups]
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def paper_adam(params, lr: float = 1e-3) -> torch.optim.Adam:
    """Adam with the paper's settings (§5.3): beta1 = 0.9, beta2 = 0.98, eps = 1e-9."""
    check_number("lr", lr, positive=True)
    # foreach: update all parameters in a few batched kernels (same numbers, less Python overhead)
    return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9, foreach=True)


@dataclass
class History:
    """What :func:`train` measured: one loss and one learning rate per step, evaluations, wall time."""

    loss: list = field(default_factory=list)  # training loss of each step (the label-smoothed loss optimized)
    lr: list = field(default_factory=list)  # learning rate used by each step
    evals: list = field(default_factory=list)  # [(step, eval_fn(model)), ...]
    grad_norm: list = field(default_factory=list)  # gradient norm of each step before clipping (only when clipping)
    seconds: float = 0.0  # wall-clock time of the whole run


def optimization_step(model: nn.Module, loss: torch.Tensor, optimizer, scheduler, clip_grad_norm: float | None,
                      history: History) -> None:
    """One update: clear the gradients, backpropagate ``loss``, clip (if ``clip_grad_norm``: the norm of all the
    gradients together is scaled down to at most ``clip_grad_norm``, and the norm before clipping is recorded), record
    the learning rate used, step the optimizer and the ``scheduler`` (if any), record the loss. Shared by every
    training loop; without ``clip_grad_norm`` nothing is clipped or recorded, as before."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip_grad_norm is not None:
        history.grad_norm.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)))
    history.lr.append(optimizer.param_groups[0]["lr"])
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    history.loss.append(loss.item())


def train_loop(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor, *, steps: int, batch_size: int,
               optimizer: torch.optim.Optimizer, scheduler=None, smoothing: float = 0.0, seed: int = 0) -> list:
    """The training loop at its plainest: :func:`train` without its checks, evaluations, clipping and progress bar.

    Shape: src (N, S), tgt (N, T + 1) = BOS + ... + EOS. Returns the loss of every step; on unpadded data the
    steps are :func:`train`'s, loss for loss. Unlike :func:`train` it reseeds the global random generator."""
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    torch.manual_seed(seed)  # dropout's random draws
    batches = torch.Generator().manual_seed(seed)  # which examples each step sees
    model.train()  # dropout on
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, src.shape[0], (batch_size,), generator=batches)  # (B,) random examples
        decoder_input, labels = teacher_forcing(tgt[idx])  # (B, T) each: the target shifted right, and left
        logits = model(src[idx], decoder_input)  # (B, T, V)
        loss = label_smoothed_cross_entropy(logits, labels, smoothing, ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()  # the gradient of the loss for every weight
        optimizer.step()  # Adam's update
        if scheduler is not None:
            scheduler.step()  # the next step's learning rate
        losses.append(loss.item())
    return losses


def train(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor, *, steps: int, batch_size: int,
          optimizer: torch.optim.Optimizer, scheduler=None, smoothing: float = 0.0, progress: bool = True,
          seed: int = 0, device=None, eval_fn=None, eval_every: int | None = None,
          clip_grad_norm: float | None = None) -> History:
    """Train an encoder-decoder with teacher forcing for ``steps`` updates on random mini-batches.

    Shape: src (N, S) source ids, tgt (N, T) = BOS + ... + EOS target ids, both padded with
    ``model.pad_id`` (0). Each step draws ``batch_size`` rows at random (seeded by ``seed``; the
    caller's random state is left untouched, dropout included), so a run is repeatable.

    ``eval_fn(model)`` -> number is called every ``eval_every`` steps and after the last one,
    with the model in eval mode. The model is on ``device`` (default: where its parameters are)
    and in training mode when this returns.

    ``clip_grad_norm``: if given, every step scales the gradients down so that their joint norm is at most this
    (``torch.nn.utils.clip_grad_norm_``) and records the norm before clipping in ``History.grad_norm``; the
    default ``None`` clips nothing.
    """
    check_instance("model", model, nn.Module)
    check_token_ids("src", src)
    check_token_ids("tgt", tgt)
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"src and tgt must hold the same number of examples, got {src.shape[0]} and {tgt.shape[0]}")
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    check_instance("optimizer", optimizer, torch.optim.Optimizer)
    check_probability("smoothing", smoothing)
    check_int("seed", seed)
    if clip_grad_norm is not None:
        check_number("clip_grad_norm", clip_grad_norm, positive=True)
    if eval_every is not None:
        check_positive_int("eval_every", eval_every)
        if eval_fn is None:
            raise ValueError("eval_every needs an eval_fn to call")
    if eval_fn is not None and not callable(eval_fn):
        raise TypeError(f"eval_fn must be callable (model -> number), got {type(eval_fn).__name__}")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    pad_id = getattr(model, "pad_id", PAD)
    history = History()
    N = src.shape[0]
    start = time.perf_counter()

    def evaluate(step):
        model.eval()
        with torch.no_grad():
            history.evals.append((step, eval_fn(model)))
        model.train()

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)  # dropout draws from the global generator: seed it, then restore it
        batches = torch.Generator().manual_seed(seed)
        model.train()
        bar = tqdm(range(1, steps + 1), desc="training", disable=not progress, leave=True)
        for step in bar:
            idx = torch.randint(0, N, (batch_size,), generator=batches)  # (B,)
            src_b = trim_padding(src[idx], pad_id).to(device)  # (B, S): shorter batches train faster
            tgt_b = trim_padding(tgt[idx], pad_id, min_len=2).to(device)  # (B, T + 1)
            decoder_input, labels = teacher_forcing(tgt_b)  # (B, T), (B, T)
            logits = model(src_b, decoder_input)  # (B, T, V)
            loss = label_smoothed_cross_entropy(logits, labels, smoothing, ignore_index=pad_id)
            optimization_step(model, loss, optimizer, scheduler, clip_grad_norm, history)
            if step % 25 == 0 or step == steps:
                bar.set_postfix(loss=f"{history.loss[-1]:.3f}")
            if eval_fn is not None and ((eval_every and step % eval_every == 0) or step == steps):
                if not history.evals or history.evals[-1][0] != step:
                    evaluate(step)
        bar.close()
    history.seconds = time.perf_counter() - start
    return history
