"""Inference: turning a trained encoder-decoder into output sentences (paper §6.1).

At inference there is no target to feed in. The decoder starts from ``<bos>`` and
appends one token at a time, each chosen from its own previous predictions:

    greedy_decode   take the most probable next token at every step
    beam_search     keep the ``beam_size`` best live partial sentences, set finished ones apart
                    (Wu et al. 2016 length penalty)
    sample          draw the next token at random (temperature, top-k)

The source is encoded once. With the key/value cache (``model.new_cache()``) each
step feeds only the newest token and reuses the keys and values of the earlier
ones, instead of re-running the decoder over the whole prefix.

Lengths: ``max_new_tokens`` counts the tokens generated after ``<bos>`` (``<eos>``
included), so the outputs have at most ``max_new_tokens + 1`` columns. (The model's own
``max_len`` is something else: the size of its position table.)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import torch.nn as nn

from ._checks import check_instance, check_int, check_number, check_positive_int, check_token_ids
from .data import trim_padding

# -- shared plumbing -------------------------------------------------------------------------

def _inference(fn):
    """Run ``fn`` in eval mode without gradients, and put the model back in its previous mode."""

    @functools.wraps(fn)
    def wrapper(model, *args, **kwargs):
        if not isinstance(model, nn.Module) or not all(hasattr(model, a) for a in ("encode", "decode", "new_cache")):
            # duck-typed on purpose: any encoder-decoder with these three methods decodes
            raise TypeError(f"model must be an encoder-decoder with encode/decode/new_cache "
                            f"(e.g. transformer_lite.Transformer), got {type(model).__name__}")
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return fn(model, *args, **kwargs)
        finally:
            model.train(was_training)

    return wrapper


def _check_special(name: str, value, vocab_size: int) -> int:
    check_int(name, value)
    if not 0 <= value < vocab_size:
        raise ValueError(f"{name} must lie in [0, {vocab_size}) (the target vocabulary size), got {value}")
    return value


def _check_common(model, src, max_new_tokens, bos_id, eos_id):
    check_token_ids("src", src)  # the values are checked once, by model.encode
    if src.shape[0] == 0 or src.shape[1] == 0:
        raise ValueError(f"src must hold at least one token per row and one row, got shape {tuple(src.shape)}")
    check_positive_int("max_new_tokens", max_new_tokens)
    if max_new_tokens + 1 > model.max_len:
        raise ValueError(f"max_new_tokens + 1 must fit the model's position table (model.max_len = {model.max_len}, "
                         f"so max_new_tokens <= {model.max_len - 1}), got {max_new_tokens}")
    _check_special("bos_id", bos_id, model.tgt_vocab_size)
    _check_special("eos_id", eos_id, model.tgt_vocab_size)
    return src.to(next(model.parameters()).device)


def _step_logits(model, ys, memory, src, cache):
    """Next-token logits (B, V) for the prefixes ys (B, t): from the cache (newest token only) or from scratch."""
    if cache is not None:
        return model.decode(ys[:, -1:], memory, src=src, cache=cache)[:, -1]  # (B, 1, V) -> (B, V)
    return model.decode(ys, memory, src=src)[:, -1]  # (B, t, V) -> last position (B, V)


def _autoregressive(model, src, max_new_tokens, bos_id, eos_id, use_cache, choose):
    """The decoding loop shared by greedy decoding and sampling; ``choose(logits (B, V)) -> (B,)``."""
    B = src.shape[0]
    memory = model.encode(src)  # (B, S, D), computed once
    cache = model.new_cache() if use_cache else None
    ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    for _ in range(max_new_tokens):
        logits = _step_logits(model, ys, memory, src, cache)  # (B, V)
        next_token = choose(logits)  # (B,)
        next_token = next_token.masked_fill(finished, model.pad_id)  # finished rows only get padding
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, t) -> (B, t + 1)
        finished |= next_token == eos_id
        if finished.all():
            break
    return ys


# -- greedy, sampling ------------------------------------------------------------------------

@_inference
def greedy_decode(model, src: torch.Tensor, max_new_tokens: int, bos_id: int, eos_id: int,
                  use_cache: bool = True) -> torch.Tensor:
    """Pick the most probable token at every step until ``eos_id`` (or ``max_new_tokens`` new tokens).

    Shape: src (B, S) -> (B, L) with L <= max_new_tokens + 1; column 0 is ``bos_id``; after a row's
    ``eos_id`` come ``model.pad_id`` tokens. Stops as soon as every row has finished.
    ``use_cache=False`` re-runs the decoder over the whole prefix each step (same result, slower).
    """
    src = _check_common(model, src, max_new_tokens, bos_id, eos_id)
    return _autoregressive(model, src, max_new_tokens, bos_id, eos_id, use_cache, lambda logits: logits.argmax(dim=-1))


@_inference
def sample(model, src: torch.Tensor, max_new_tokens: int, bos_id: int, eos_id: int, temperature: float = 1.0,
           top_k: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw each next token from softmax(logits / temperature), optionally among the ``top_k`` best only.

    temperature < 1 sharpens the distribution (towards greedy), > 1 flattens it.
    Shape: src (B, S) -> (B, L) as for :func:`greedy_decode`. Pass a seeded ``generator`` for repeatable draws.
    """
    src = _check_common(model, src, max_new_tokens, bos_id, eos_id)
    check_number("temperature", temperature, positive=True)
    if top_k is not None:
        check_positive_int("top_k", top_k)
    check_instance("generator", generator, torch.Generator, allow_none=True)

    def choose(logits):  # (B, V) -> (B,)
        logits = logits / temperature
        if top_k is not None and top_k < logits.shape[-1]:
            kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1): the k-th largest logit
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = torch.softmax(logits, dim=-1)  # (B, V)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

    return _autoregressive(model, src, max_new_tokens, bos_id, eos_id, True, choose)


# -- beam search -----------------------------------------------------------------------------

def length_penalty_gnmt(length: torch.Tensor | int, alpha: float):
    """Wu et al. (2016): lp(Y) = ((5 + |Y|) / 6)^alpha. A hypothesis is ranked by log P(Y) / lp(Y)."""
    return ((5.0 + length) / 6.0) ** alpha


@dataclass
class BeamTrace:
    """The whole beam search (:func:`beam_search`), step by step, to draw it as a tree.

    For step t (0-based) and batch row b:
        ``parents[t][b, k]``   the live beam at step t - 1 that live beam k extends (for t = 0: 0, the ``<bos>``)
        ``tokens[t][b, k]``    the token it appended (never ``eos_id``: live beams have not ended)
        ``log_probs[t][b, k]`` its cumulative log-probability log P(y_1..y_t+1 | x)
        ``ended[t][b, k]``     the log-probability of live beam k of step t - 1 followed by ``eos_id``, if the
                               search set that finished hypothesis aside at step t; else -inf
    ``best[b]`` is the returned hypothesis as (step, beam, ended): the finished one that ended at ``step`` after
    live beam ``beam`` of the step before, or (if none finished) live beam ``beam`` of the last step.
    """

    parents: list
    tokens: list
    log_probs: list
    ended: list
    best: list

    def live_path(self, b: int, t: int, k: int) -> list[tuple[int, int, int]]:
        """Live beam ``k`` of row ``b`` after step ``t``, from the root: [(step, beam, token), ...]."""
        out = []
        for s in range(t, -1, -1):
            out.append((s, k, int(self.tokens[s][b, k])))
            k = int(self.parents[s][b, k])
        return out[::-1]

    def path(self, b: int) -> list[tuple[int, int, int]]:
        """The returned hypothesis of row ``b``, from the root: [(step, beam, token), ...]."""
        step, k, ended = self.best[b]
        if not ended:
            return self.live_path(b, step, k)
        return self.live_path(b, step - 1, k) + [(step, k, self.eos_id)]

    def finished(self, b: int) -> list[tuple[list[int], float]]:
        """Every finished hypothesis the search set aside for row ``b``: (tokens after ``<bos>``, log P)."""
        out = []
        for t, ended in enumerate(self.ended):
            for k in range(ended.shape[1]):
                if ended[b, k] > float("-inf"):
                    prefix = [tok for _, _, tok in self.live_path(b, t - 1, k)] if t > 0 else []
                    out.append((prefix + [self.eos_id], float(ended[b, k])))
        return out

    eos_id: int = -1


def _beam_start(model, src, K: int, bos_id: int):
    """The state both beam searches start from. Every row's source is repeated K times: the live beams of row b sit
    at rows b*K .. b*K + K-1 (src_k (B*K, S), memory (B*K, S, D), an empty cache, ys (B*K, 1) of <bos>). Only beam 0
    is alive at the start (score (B, K): 0 for beam 0, -inf for the others), so the first step does not pick K copies
    of one token."""
    B, dev = src.shape[0], src.device
    src_k = src.repeat_interleave(K, dim=0)
    memory = model.encode(src_k)
    ys = torch.full((B * K, 1), bos_id, dtype=torch.long, device=dev)
    score = torch.full((B, K), float("-inf"), device=dev)
    score[:, 0] = 0.0
    return src_k, memory, model.new_cache(), ys, score


@_inference
def beam_search(model, src: torch.Tensor, beam_size: int, max_new_tokens: int, bos_id: int, eos_id: int,
                length_penalty: float = 0.6, return_trace: bool = False):
    """Keep the ``beam_size`` most probable live partial translations at every step; return the best finished one.

    At every step each of the K = ``beam_size`` live hypotheses is extended by every token, and the
    candidates are ranked by their log-probability log P(y | x) (all have the same length). A candidate
    ending with ``eos_id`` that ranks among the best K is *finished*: it is set aside, and the best K
    candidates that do not end with ``eos_id`` are the next live hypotheses, so the beam never narrows
    (the design of tensor2tensor, fairseq and Hugging Face's ``BeamSearchScorer``). Finished hypotheses
    are compared by log P(y | x) / lp(y) with the GNMT length penalty lp(y) = ((5 + |y|) / 6)^length_penalty
    (Wu et al. 2016; |y| counts the tokens after ``<bos>``, ``<eos>`` included), and each sentence keeps
    the K best. ``length_penalty=0`` compares by log-probability alone, which favours short outputs.
    A sentence is done once K have finished and its best live hypothesis, scored as if it ended now,
    is no better than the worst of them (Hugging Face's default rule, ``early_stopping=False``), or
    after ``max_new_tokens`` tokens. The best finished hypothesis is returned (if none finished, the
    most probable live one).

    With ``beam_size=1`` this is exactly :func:`greedy_decode`. The older design of this package, in which
    finished hypotheses keep their beam slots, is :func:`beam_search_keep_finished`.

    Shape: src (B, S) -> (B, L), L <= max_new_tokens + 1, as for :func:`greedy_decode`;
    with ``return_trace=True`` returns ``(tokens, BeamTrace)``.
    """
    src = _check_common(model, src, max_new_tokens, bos_id, eos_id)
    check_positive_int("beam_size", beam_size)
    check_number("length_penalty", length_penalty, minimum=0)
    B, K, pad = src.shape[0], beam_size, model.pad_id
    dev = src.device

    src_k, memory, cache, ys, score = _beam_start(model, src, K, bos_id)
    finished = [[] for _ in range(B)]  # per row: the K best (log P / lp, tokens after <bos>) set aside so far
    done = [False] * B
    trace = BeamTrace([], [], [], [], [], eos_id)
    rank = torch.arange(2 * K, device=dev)

    for t in range(max_new_tokens):
        logits = model.decode(ys[:, -1:], memory, src=src_k, cache=cache)[:, -1]  # (B*K, V)
        log_p = torch.log_softmax(logits.float(), dim=-1).view(B, K, -1)  # (B, K, V)
        V = log_p.shape[-1]
        cand = (score[..., None] + log_p).view(B, K * V)  # every extension of every live hypothesis
        top_score, top = cand.topk(2 * K, dim=-1)  # (B, 2K): at most K of them end with <eos>
        parent, token = top // V, top % V  # (B, 2K) each
        is_eos = token == eos_id
        lp_now = float(length_penalty_gnmt(t + 1, length_penalty))  # every candidate has t + 1 tokens

        # Finished: a candidate ending with <eos> among the best K is set aside; the row keeps the K best.
        ended = torch.full((B, K), float("-inf"))
        for b, r in (is_eos & (rank < K) & top_score.isfinite()).nonzero().tolist():
            k, logp = int(parent[b, r]), float(top_score[b, r])
            if done[b] or (len(finished[b]) == K and logp / lp_now <= min(f[0] for f in finished[b])):
                continue
            finished[b].append((logp / lp_now, ys[b * K + k, 1:].tolist() + [eos_id]))
            if len(finished[b]) > K:  # drop the worst (the first of equals)
                finished[b].pop(min(range(len(finished[b])), key=lambda j: finished[b][j][0]))
            ended[b, k] = logp
        # Live: the best K candidates that do not end with <eos>.
        keep = torch.where(is_eos, 2 * K + rank, rank).argsort(dim=-1)[:, :K]  # (B, K): non-<eos> first, in rank order
        parent, token = parent.gather(1, keep), token.gather(1, keep)  # (B, K) each
        score = top_score.gather(1, keep)
        # Done: K have finished, and the best live hypothesis, scored as if it ended now, is no better than the
        # worst of them (Hugging Face's default rule; with K = 1 the first <eos> ends the search, as in greedy).
        for b in range(B):
            done[b] = done[b] or (len(finished[b]) == K and
                                  min(f[0] for f in finished[b]) >= float(score[b, 0]) / lp_now)

        rows = (parent + torch.arange(B, device=dev)[:, None] * K).view(-1)  # (B*K,) flat index of each parent
        ys = torch.cat([ys.index_select(0, rows), token.view(-1, 1)], dim=1)  # (B*K, t + 2)
        for self_cache, _cross_cache in cache:  # the parents' keys/values follow their children
            self_cache.reorder(rows)
        if return_trace:
            trace.parents.append(parent.cpu())
            trace.tokens.append(token.cpu())
            trace.log_probs.append(score.cpu())
            trace.ended.append(ended)
        if all(done):
            break

    out = []
    for b in range(B):
        if finished[b]:  # the best finished hypothesis by log P / lp (the first of equals)
            i = max(range(len(finished[b])), key=lambda j: (finished[b][j][0], -j))
            out.append(finished[b][i][1])
        else:  # none finished: the most probable live one, beam 0
            out.append(ys[b * K, 1:].tolist())
        if return_trace:
            trace.best.append(_best_in_trace(trace, b, out[-1], bool(finished[b])))
    L = 1 + max(len(o) for o in out)
    ys_out = torch.full((B, L), pad, dtype=torch.long, device=dev)
    ys_out[:, 0] = bos_id
    for b, o in enumerate(out):
        ys_out[b, 1:1 + len(o)] = torch.tensor(o, dtype=torch.long)
    if return_trace:
        return ys_out, trace
    return ys_out


def _best_in_trace(trace: BeamTrace, b: int, tokens: list[int], ended: bool) -> tuple[int, int, bool]:
    """Where the returned hypothesis ``tokens`` of row ``b`` sits in the trace: (step, beam, ended)."""
    step = len(tokens) - 1
    if not ended:
        return (step, 0, False)
    for k in range(trace.ended[step].shape[1]):
        if trace.ended[step][b, k] > float("-inf") and (
                step == 0 or [tok for _, _, tok in trace.live_path(b, step - 1, k)] == tokens[:-1]):
            return (step, k, True)
    raise AssertionError("the returned hypothesis is not in the trace")  # cannot happen


# -- the older design: finished hypotheses keep their slots ----------------------------------

@dataclass
class SlotTrace:
    """The search of :func:`beam_search_keep_finished`, step by step.

    For step t (0-based) and batch row b, slot k:
        ``parents[t][b, k]``  the slot at step t - 1 this hypothesis extends (for t = 0: 0, the ``<bos>``)
        ``tokens[t][b, k]``   the token it appended
        ``log_probs[t][b, k]`` its cumulative log-probability log P(y_1..y_t+1 | x)
        ``finished[t][b, k]``  whether it had already ended (extended by padding at no cost)
    ``best[b]`` is the slot, at the last step, of the returned hypothesis.
    """

    parents: list
    tokens: list
    log_probs: list
    finished: list
    best: torch.Tensor

    def path(self, b: int, k: int | None = None) -> list[tuple[int, int, int]]:
        """Follow slot ``k`` (default: the best) of row ``b`` back to the root: [(step, slot, token), ...]."""
        k = int(self.best[b]) if k is None else k
        out = []
        for t in range(len(self.tokens) - 1, -1, -1):
            out.append((t, k, int(self.tokens[t][b, k])))
            k = int(self.parents[t][b, k])
        return out[::-1]


@_inference
def beam_search_keep_finished(model, src: torch.Tensor, beam_size: int, max_new_tokens: int, bos_id: int,
                              eos_id: int, length_penalty: float = 0.6, return_trace: bool = False):
    """Beam search in which a finished hypothesis keeps its slot (this package's design before the usual one).

    A hypothesis that ends with ``eos_id`` stays in the beam, extended only by padding at no cost, and
    competes at every step with the live candidates, all ranked by log P / lp(|y|); while f slots hold
    finished hypotheses only K - f live ones are extended. Stops when every slot has finished (or after
    ``max_new_tokens``), and returns the best finished hypothesis (the best live one if none finished).
    Same arguments, shapes and errors as :func:`beam_search`; the trace is a :class:`SlotTrace`.
    """
    src = _check_common(model, src, max_new_tokens, bos_id, eos_id)
    check_positive_int("beam_size", beam_size)
    check_number("length_penalty", length_penalty, minimum=0)
    B, K, pad = src.shape[0], beam_size, model.pad_id
    dev = src.device

    src_k, memory, cache, ys, score = _beam_start(model, src, K, bos_id)
    length = torch.zeros(B, K, device=dev)  # tokens generated after <bos>
    finished = torch.zeros(B, K, dtype=torch.bool, device=dev)
    trace = SlotTrace([], [], [], [], torch.zeros(B, dtype=torch.long))

    for _ in range(max_new_tokens):
        logits = model.decode(ys[:, -1:], memory, src=src_k, cache=cache)[:, -1]  # (B*K, V)
        log_p = torch.log_softmax(logits.float(), dim=-1).view(B, K, -1)  # (B, K, V)
        V = log_p.shape[-1]
        # A finished hypothesis can only be extended by padding, at no cost.
        done_row = torch.full((V,), float("-inf"), device=dev)
        done_row[pad] = 0.0
        log_p = torch.where(finished[..., None], done_row, log_p)
        cand_score = score[..., None] + log_p  # (B, K, V)
        cand_len = (length + (~finished).float())[..., None].expand(B, K, V)  # (B, K, V)
        ranked = cand_score / length_penalty_gnmt(cand_len, length_penalty)  # normalized, for ranking
        top = ranked.view(B, K * V).topk(K, dim=-1).indices  # (B, K)
        parent, token = top // V, top % V  # (B, K) each

        score = cand_score.view(B, K * V).gather(1, top)
        length = cand_len.reshape(B, K * V).gather(1, top)
        was_finished = finished.gather(1, parent)
        finished = was_finished | (token == eos_id)
        rows = (parent + torch.arange(B, device=dev)[:, None] * K).view(-1)  # (B*K,) flat index of each parent
        ys = torch.cat([ys.index_select(0, rows), token.view(-1, 1)], dim=1)  # (B*K, t + 1)
        for self_cache, _cross_cache in cache:  # the parents' keys/values follow their children
            self_cache.reorder(rows)
        if return_trace:
            trace.parents.append(parent.cpu())
            trace.tokens.append(token.cpu())
            trace.log_probs.append(score.cpu())
            trace.finished.append(was_finished.cpu())
        if finished.all():
            break

    final = score / length_penalty_gnmt(length, length_penalty)  # (B, K)
    # An unfinished hypothesis only counts if no beam finished (then the best unfinished one is returned).
    final = torch.where(finished | ~finished.any(dim=1, keepdim=True), final, torch.tensor(float("-inf"), device=dev))
    best = final.argmax(dim=1)  # (B,)
    out = ys.view(B, K, -1)[torch.arange(B, device=dev), best]  # (B, L)
    out = trim_padding(out, pad)  # column 0, <bos>, always stays
    if return_trace:
        trace.best = best.cpu()
        return out, trace
    return out


# -- scoring ---------------------------------------------------------------------------------

@_inference
def sequence_log_prob(model, src: torch.Tensor, ys: torch.Tensor, eos_id: int) -> torch.Tensor:
    """log P(y | x) of whole outputs ys (B, L) (starting with ``<bos>``), summed up to and including ``eos_id``.

    Shape: src (B, S), ys (B, L) -> (B,). Tokens after a row's first ``eos_id`` do not count.
    """
    check_token_ids("src", src, model.src_vocab_size)
    check_token_ids("ys", ys, model.tgt_vocab_size)
    if ys.shape[0] != src.shape[0] or ys.shape[1] < 2:
        raise ValueError(f"ys must have shape (B={src.shape[0]}, L >= 2), got {tuple(ys.shape)}")
    log_p = torch.log_softmax(model(src, ys[:, :-1]).float(), dim=-1)  # (B, L-1, V): teacher-forced
    picked = log_p.gather(-1, ys[:, 1:, None]).squeeze(-1)  # (B, L-1)
    is_eos = (ys[:, 1:] == eos_id).long()
    after_eos = (is_eos.cumsum(dim=1) - is_eos) > 0  # strictly after the first eos
    return picked.masked_fill(after_eos, 0.0).sum(dim=1)


def _until_eos(row: list[int], eos_id: int) -> list[int]:
    return row[: row.index(eos_id) + 1] if eos_id in row else row


def exact_match(model, src: torch.Tensor, tgt: torch.Tensor, bos_id: int, eos_id: int, beam_size: int = 1,
                batch_size: int = 500, length_penalty: float = 0.6) -> float:
    """Fraction of rows whose decoded output equals the target exactly, up to and including ``eos_id``.

    Shape: src (N, S), tgt (N, T) = BOS + ... + EOS (padded). Greedy decoding when ``beam_size == 1``,
    else :func:`beam_search`. Decodes in chunks of ``batch_size`` rows.
    """
    check_token_ids("tgt", tgt)
    check_token_ids("src", src)
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"src and tgt must hold the same number of rows, got {src.shape[0]} and {tgt.shape[0]}")
    if src.shape[0] == 0:
        raise ValueError("src must hold at least one row, got 0")
    check_positive_int("beam_size", beam_size)
    check_positive_int("batch_size", batch_size)
    max_new_tokens = max(tgt.shape[1] - 1, 1)  # a longer output cannot match anyway
    hits = 0
    for i in range(0, src.shape[0], batch_size):
        s, t = src[i:i + batch_size], tgt[i:i + batch_size]
        if beam_size == 1:
            pred = greedy_decode(model, s, max_new_tokens, bos_id, eos_id)
        else:
            pred = beam_search(model, s, beam_size, max_new_tokens, bos_id, eos_id, length_penalty=length_penalty)
        for p, y in zip(pred.tolist(), t.tolist()):
            hits += _until_eos(p, eos_id) == _until_eos(y, eos_id)
    return hits / src.shape[0]
