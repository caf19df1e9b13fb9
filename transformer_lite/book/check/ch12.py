"""Checks of chapter 12's exercises (transformer_lite.book.check): a greedy step, the length penalty, nucleus
sampling, the cross-attention cache and one step of beam search."""
from __future__ import annotations

import functools

import torch

import transformer_lite as tl
from transformer_lite.data import BOS
from transformer_lite.decoding import length_penalty_gnmt

from . import Wrong, call, close, exercise, number, tensor


@functools.lru_cache(maxsize=1)
def _model():
    torch.manual_seed(0)
    return tl.Transformer(13, 13, d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                          dim_feedforward=64, dropout=0.0, max_len=40).eval()


@functools.lru_cache(maxsize=1)
def _translator():
    from transformer_lite.book.pretrained import tiny_translator

    model, data, _ = tiny_translator(progress=False)
    return model.eval(), data


# ---- 12.1: one greedy step ---------------------------------------------------------------------------------------

def _first_position(model, src, ys):
    return torch.cat([ys, model(src, ys)[:, 0].argmax(-1, keepdim=True)], dim=1)


def _only_bos(model, src, ys):
    return torch.cat([ys, model(src, ys[:, :1])[:, -1].argmax(-1, keepdim=True)], dim=1)


@exercise("12.1", wrong=[lambda: (_first_position,), lambda: (_only_bos,),
                         lambda: (lambda model, src, ys: model(src, ys)[:, -1].argmax(-1),)])
def exercise_12_1(my_greedy_step):
    model, data = _translator()
    src = data.encode_source(["i have two cats today", "the teacher drinks tea at home"])   # (B, S)
    ys = torch.tensor([[BOS] + data.tgt_vocab.encode("我 今天 有"),
                       [BOS] + data.tgt_vocab.encode("老师 在 家")])                       # (B, t): the words so far
    with torch.no_grad():
        expected = torch.cat([ys, model(src, ys)[:, -1].argmax(-1, keepdim=True)], dim=1)   # (B, t + 1)
        out = call(my_greedy_step, model, src, ys.clone(), name="my_greedy_step")
    out = tensor(out, "my_greedy_step(model, src, ys)", tuple(expected.shape)).long()
    if not torch.equal(out[:, :-1], ys):
        raise Wrong("the first t columns of your output are not ys.", hint="append the new token: torch.cat([ys, next], dim=1).")
    hint = "the next token is the argmax of the LAST position's logits of model(src, ys): logits[:, -1]."
    with torch.no_grad():
        if torch.equal(out, _first_position(model, src, ys)):
            hint = "you read the logits of position 0 (after <bos>); the next token comes from the last position, -1."
        elif torch.equal(out, _only_bos(model, src, ys)):
            hint = "feed the whole prefix ys to the decoder, not only <bos>: the choice depends on the words so far."
    if not torch.equal(out, expected):
        raise Wrong("the appended tokens are not the most probable next tokens.", hint)
    return "your step appends argmax(logits[:, -1]) for every row: repeat it and you have greedy decoding."


# ---- 12.2: the length penalty -------------------------------------------------------------------------------------

_HYPS = {"A": (-2.0, 3), "B": (-2.3, 6)}   # log P(y | x), |y| with <eos>
_ALPHA = 0.6


@exercise("12.2", wrong=[lambda: (-2.0 / (8 / 6), -2.3 / (11 / 6)),
                         lambda: (-2.0 / (7 / 6) ** 0.6, -2.3 / (10 / 6) ** 0.6),
                         lambda: (-2.0 / 3 ** 0.6, -2.3 / 6 ** 0.6),
                         lambda: (-2.0 * (8 / 6) ** 0.6, -2.3 * (11 / 6) ** 0.6)])
def exercise_12_2(my_score_a, my_score_b):
    hint = ("score = log P / lp with lp = ((5 + |y|) / 6) ** alpha, alpha = 0.6, and |y| counting the tokens after "
            "<bos>, <eos> included (3 and 6 here).")
    expected = {k: lp / float(length_penalty_gnmt(n, _ALPHA)) for k, (lp, n) in _HYPS.items()}
    number(my_score_a, expected["A"], "my_score_a", hint=hint)
    number(my_score_b, expected["B"], "my_score_b", hint=hint)
    return (f"A scores {expected['A']:.4f}, B {expected['B']:.4f}: with alpha = 0.6 the longer B wins, although "
            f"its log P is lower (with alpha = 0, A would win).")


# ---- 12.3: nucleus (top-p) sampling ---------------------------------------------------------------------------------

def _top_p_reference(probs, p):
    sorted_p, order = probs.sort(descending=True)
    before = sorted_p.cumsum(0) - sorted_p           # the mass of the strictly more probable tokens
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[order[before < p]] = True                   # keep a token while the mass before it is below p
    kept = probs * keep
    return kept / kept.sum()


def _drops_the_crossing_token(probs, p):
    sorted_p, order = probs.sort(descending=True)
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[order[sorted_p.cumsum(0) < p]] = True
    keep[order[0]] = True
    kept = probs * keep
    return kept / kept.sum()


def _not_renormalised(probs, p):
    q = _top_p_reference(probs, p)
    return q * probs[q > 0].sum()


@exercise("12.3", wrong=[lambda: (_drops_the_crossing_token,), lambda: (_not_renormalised,),
                         lambda: (lambda probs, p: probs,)])
def exercise_12_3(my_top_p):
    g = torch.Generator().manual_seed(3)
    for trial in range(4):
        probs = torch.softmax(2 * torch.randn(12, generator=g, dtype=torch.float64), dim=0)
        for p in (1e-6, 0.5, 0.8, 0.9, 1.0):
            out = call(my_top_p, probs.clone(), p, name="my_top_p")
            out = tensor(out, f"my_top_p(probs, {p})", tuple(probs.shape)).double()
            hint = ("sort the probabilities in decreasing order and keep the most probable tokens up to and "
                    "INCLUDING the one whose cumulative probability reaches p; zero the rest and renormalise.")
            if torch.allclose(out, _drops_the_crossing_token(probs, p)):
                hint = ("you dropped the token that makes the kept mass reach p: then the kept mass is below p. "
                        "Keep a token while the mass of the tokens BEFORE it is below p.")
            elif abs(float(out.sum()) - 1) > 1e-4:
                hint = "renormalise the kept probabilities so that they sum to 1."
            close(out, _top_p_reference(probs, p), f"my_top_p(probs, p={p})", hint=hint, atol=1e-6)
    return "your top-p keeps the smallest set of most probable tokens with mass >= p, renormalised, for every p tried."


# ---- 12.4: the cross-attention cache ----------------------------------------------------------------------------------

def _cross_attention_work(model, src, steps, use_cache):
    """Runs of layer 0's cross-attention key projection, and the query-key scores of one of its heads."""
    layer = model.decoder.layers[0].multihead_attn
    runs, scores = [0], [0]

    def count_scores(module, args, kwargs, out):
        cache = kwargs.get("cache")
        keys = len(cache) if cache is not None else args[1].shape[1]
        scores[0] += args[0].shape[1] * keys               # queries x keys, for one head

    hooks = [layer.k_proj.register_forward_hook(lambda *a: runs.__setitem__(0, runs[0] + 1)),
             layer.register_forward_hook(count_scores, with_kwargs=True)]
    try:
        with torch.no_grad():
            memory = model.encode(src)
            ys = torch.full((src.shape[0], 1), BOS)
            cache = model.new_cache() if use_cache else None
            for _ in range(steps):
                new = ys[:, -1:] if use_cache else ys
                logits = model.decode(new, memory, src=src, cache=cache)[:, -1]
                ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)
    finally:
        for h in hooks:
            h.remove()
    return runs[0], scores[0]


@exercise("12.4", wrong=[lambda: (12, 12, 390, 60), lambda: (12, 1, 60, 60), lambda: (12, 1, 390, 12),
                         lambda: (12, 1, 78, 12)])
def exercise_12_4(my_runs_without, my_runs_with, my_scores_without, my_scores_with):
    model, src = _model(), torch.tensor([[5, 6, 7, 8, 9]])        # S = 5 source tokens
    runs_without, scores_without = _cross_attention_work(model, src, 12, use_cache=False)
    runs_with, scores_with = _cross_attention_work(model, src, 12, use_cache=True)
    number(my_runs_without, runs_without, "my_runs_without", rel=0, abs_=0.5,
           hint="without the cache every step runs the whole decoder again, cross-attention included.")
    number(my_runs_with, runs_with, "my_runs_with", rel=0, abs_=0.5,
           hint="the memory does not change from step to step: with the cache its keys are projected once.")
    number(my_scores_without, scores_without, "my_scores_without", rel=0, abs_=0.5,
           hint="without the cache, step t has t queries (the whole prefix), each scored against all S = 5 keys.")
    number(my_scores_with, scores_with, "my_scores_with", rel=0, abs_=0.5,
           hint="with the cache, each step has ONE query, still scored against all S = 5 source keys.")
    return (f"{runs_without} projections of the memory without the cache and {runs_with} with it; "
            f"{scores_without} against {scores_with} scores per head: both counted with hooks on a small model.")


# ---- 12.5: one step of beam search, by hand ----------------------------------------------------------------------------

BEAM = {"A": (-1.0, 2, True), "B": (-0.4, 2, False), "C": (-0.6, 2, False)}   # name: (log P, |y|, finished?)
NEXT_LOG_P = {"B": {"x": -0.3, "y": -0.85, "<eos>": -1.6}, "C": {"x": -0.2, "y": -1.1, "<eos>": -2.0}}


def _survivors(alpha, k=3, penalty_during_search=True, keep_finished=True):
    """transformer_lite's rule: every candidate (finished hypotheses included) ranked by log P / lp(|y|); best k stay."""
    candidates = {}
    for name, (logp, n, finished) in BEAM.items():
        if finished:
            if keep_finished:
                candidates[name] = (logp, n)
            continue
        for token, lp_token in NEXT_LOG_P[name].items():
            candidates[f"{name} {token}"] = (logp + lp_token, n + 1)
    alpha_ = alpha if penalty_during_search else 0.0
    ranked = sorted(candidates, key=lambda c: candidates[c][0] / float(length_penalty_gnmt(candidates[c][1], alpha_)),
                    reverse=True)
    return set(ranked[:k])


def _as_set(answer, name):
    if isinstance(answer, str) or not hasattr(answer, "__iter__"):
        raise Wrong(f"{name} should be a set of 3 names such as {{'A', 'B x', 'C y'}}, got {answer!r}.")
    answer = {str(a).strip() for a in answer}
    if len(answer) != 3:
        raise Wrong(f"{name} should hold the k = 3 hypotheses that keep a slot, got {len(answer)}: {sorted(answer)}.")
    return answer


@exercise("12.5", wrong=[lambda: (_survivors(0.6, penalty_during_search=False), _survivors(2.0, penalty_during_search=False)),
                         lambda: (_survivors(0.6, keep_finished=False), _survivors(2.0, keep_finished=False)),
                         lambda: (_survivors(2.0), _survivors(0.6))])
def exercise_12_5(my_survivors_06, my_survivors_2):
    for answer, alpha, name in ((my_survivors_06, 0.6, "my_survivors_06"), (my_survivors_2, 2.0, "my_survivors_2")):
        got, expected = _as_set(answer, name), _survivors(alpha)
        if got != expected:
            hint = ("rank ALL candidates by log P / lp(|y|): the finished A (|y| = 2, not extended) against the six "
                    "extensions of B and C (|y| = 3); the best 3 keep the slots.")
            if got == _survivors(alpha, keep_finished=False):
                hint = ("in transformer_lite a finished hypothesis stays in the beam and competes for a slot; "
                        "it is not set aside.")
            elif got == _survivors(alpha, penalty_during_search=False):
                hint = ("the package applies the length penalty at every step, not only to choose the final output: "
                        "divide each candidate's log P by lp(|y|) before ranking.")
            raise Wrong(f"{name}: {sorted(got)} is not the set that keeps the slots with alpha = {alpha}.", hint)
    return ("with alpha = 0.6 the finished A keeps its slot; with alpha = 2 the penalty lifts a longer live "
            "extension above it and A is pruned, lost for good.")
