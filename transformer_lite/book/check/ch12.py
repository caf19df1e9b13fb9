"""Checks of chapter 12's exercises (transformer_lite.book.check): a greedy step, beam search's final choice among
the finished hypotheses, nucleus sampling and one step of beam search."""
from __future__ import annotations

import functools

import torch

from transformer_lite.data import BOS, EOS

from ..i18n import tr
from . import Wrong, call, close, exercise, tensor


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
    src = data.encode_source(["i have two cats today", "the teacher drinks tea at home"])   # (B, S)  # i18n: data
    ys = torch.tensor([[BOS] + data.tgt_vocab.encode("我 今天 有"),
                       [BOS] + data.tgt_vocab.encode("老师 在 家")])                       # (B, t): the words so far
    with torch.no_grad():
        expected = torch.cat([ys, model(src, ys)[:, -1].argmax(-1, keepdim=True)], dim=1)   # (B, t + 1)
        out = call(my_greedy_step, model, src, ys.clone(), name="my_greedy_step")
    out = tensor(out, "my_greedy_step(model, src, ys)", tuple(expected.shape)).long()
    if not torch.equal(out[:, :-1], ys):
        raise Wrong(tr("the first t columns of your output are not ys."),
                    hint=tr("append the new token: torch.cat([ys, next], dim=1)."))
    hint = tr("the next token is the argmax of the LAST position's logits of model(src, ys): logits[:, -1].")
    with torch.no_grad():
        if torch.equal(out, _first_position(model, src, ys)):
            hint = tr("you read the logits of position 0 (after <bos>); the next token comes from the last position, "
                      "-1.")
        elif torch.equal(out, _only_bos(model, src, ys)):
            hint = tr("feed the whole prefix ys to the decoder, not only <bos>: the choice depends on the words so "
                      "far.")
    if not torch.equal(out, expected):
        raise Wrong(tr("the appended tokens are not the most probable next tokens."), hint)
    return tr("your step appends argmax(logits[:, -1]) for every row: repeat it and you have greedy decoding.")


# ---- 12.2: the final choice among the finished hypotheses ------------------------------------------------------------

def _choose(finished, alpha, length=len, first=True, divide=True):
    best = None
    for tokens, log_p in finished:
        lp = ((5 + length(tokens)) / 6) ** alpha
        score = log_p / lp if divide else log_p * lp
        if best is None or score > best[0] or (not first and score == best[0]):
            best = (score, tokens)
    return best[1]


_SYNTHETIC = [([7, 2], -1.0), ([5, 6, 7, 8, 2], -1.6), ([5, 9, 2], -1.2), ([5, 9, 9, 2], -1.2 * (9 / 8) ** 0.6)]


@exercise("12.2", wrong=[lambda: (lambda finished, alpha: _choose(finished, 0.0),),
                         lambda: (lambda finished, alpha: _choose(finished, alpha, length=lambda t: len(t) - 1),),
                         lambda: (lambda finished, alpha: _choose(finished, alpha, first=False),),
                         lambda: (lambda finished, alpha: _choose(finished, alpha, divide=False),)])
def exercise_12_2(my_choose):
    from transformer_lite.decoding import beam_search

    cases = [(_SYNTHETIC, a) for a in (0.0, 0.6, 2.0)] + [(_SYNTHETIC[2:], 0.6)]   # the last: a tie
    model, data = _translator()
    for english in ("does the cat eat rice ?", "i have two cats today", "cat"):  # i18n: data
        for a in (0.0, 0.6, 2.0):
            out, trace = beam_search(model, data.encode_source(english), 4, 20, BOS, EOS, length_penalty=a,
                                     return_trace=True)
            cases.append((trace.finished(0), a, [t for t in out[0, 1:].tolist() if t != model.pad_id]))
    for case in cases:
        finished, alpha = case[0], case[1]
        expected = case[2] if len(case) > 2 else _choose(finished, alpha)
        got = call(my_choose, [(list(t), lp) for t, lp in finished], alpha, name="my_choose")
        got = list(got.tolist() if hasattr(got, "tolist") else got) if got is not None else got
        if got != expected:
            hint = tr("score each hypothesis by log_p / ((5 + len(tokens)) / 6) ** alpha and return the best one's "
                      "tokens.")
            if got == _choose(finished, 0.0):
                hint = tr("you ranked by log P alone: divide by the length penalty ((5 + |y|) / 6) ** alpha.")
            elif got == _choose(finished, alpha, length=lambda t: len(t) - 1):
                hint = tr("|y| counts the tokens after <bos> with <eos> included: len(tokens).")
            elif got == _choose(finished, alpha, first=False):
                hint = tr("among equal scores keep the first hypothesis (a strict > when you compare).")
            raise Wrong(tr("my_choose(..., alpha={alpha}) returned {got}, beam_search returns {expected}.",
                           alpha=alpha, got=got, expected=expected), hint)
    return (tr("your choice is beam_search's on every case: log P / lp(|y|), the first of equals; alpha changes the "
               "winner, from a short hypothesis to a longer one."))


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
    for _ in range(4):
        probs = torch.softmax(2 * torch.randn(12, generator=g, dtype=torch.float64), dim=0)
        for p in (1e-6, 0.5, 0.8, 0.9, 1.0):
            out = call(my_top_p, probs.clone(), p, name="my_top_p")
            out = tensor(out, f"my_top_p(probs, {p})", tuple(probs.shape)).double()
            hint = (tr("sort the probabilities in decreasing order and keep the most probable tokens up to and "
                       "INCLUDING the one whose cumulative probability reaches p; zero the rest and renormalise."))
            if torch.allclose(out, _drops_the_crossing_token(probs, p)):
                hint = (tr("you dropped the token that makes the kept mass reach p: then the kept mass is below p. "
                           "Keep a token while the mass of the tokens BEFORE it is below p."))
            elif abs(float(out.sum()) - 1) > 1e-4:
                hint = tr("renormalise the kept probabilities so that they sum to 1.")
            close(out, _top_p_reference(probs, p), f"my_top_p(probs, p={p})", hint=hint, atol=1e-6)
    return tr("your top-p keeps the smallest set of most probable tokens with mass >= p, renormalised, for every p "
              "tried.")


# ---- 12.4: one step of beam search, by hand --------------------------------------------------------------------------

LIVE = {"B": -0.4, "C": -0.6, "D": -0.9}   # the k = 3 live hypotheses after step 2: name -> log P
NEXT_LOG_P = {"B": {"x": -0.3, "y": -0.85, "<eos>": -1.6}, "C": {"x": -0.2, "y": -1.1, "<eos>": -0.25},
              "D": {"x": -0.1, "y": -2.0, "<eos>": -0.2}}


def _step(k=3, eos_among=None, pool=None):
    """transformer_lite.decoding.beam_search's step: rank the extensions by log P; those ending with <eos> among the
    best k are set aside as finished; the best k that do not end with <eos> are the live ones."""
    eos_among = k if eos_among is None else eos_among
    cands = {f"{name} {tok}": logp + lp for name, logp in LIVE.items() for tok, lp in NEXT_LOG_P[name].items()}
    ranked = sorted(cands, key=cands.get, reverse=True)[: (2 * k if pool is None else pool)]
    finished = {c for r, c in enumerate(ranked) if c.endswith("<eos>") and r < eos_among}
    live = set([c for c in ranked if not c.endswith("<eos>")][:k])
    return finished, live


def _as_set(answer, name, size=None):
    if isinstance(answer, str) or not hasattr(answer, "__iter__"):
        raise Wrong(tr("{name} should be a set of names such as {{'B x', 'C <eos>'}}, got {answer!r}.",
                       name=name, answer=answer))
    answer = {str(a).strip() for a in answer}
    if size is not None and len(answer) != size:
        raise Wrong(tr("{name} should hold the k = {size} live hypotheses, got {n_answer}: {answer}.",
                       name=name, size=size, n_answer=len(answer), answer=sorted(answer)))
    return answer


@exercise("12.4", wrong=[lambda: ({"C <eos>", "D <eos>"}, {"B x", "C x", "D x"}),
                         lambda: (set(), {"B x", "C x", "C <eos>"}),
                         lambda: ({"C <eos>"}, {"B x", "C x", "C <eos>"}),
                         lambda: ({"C <eos>", "D <eos>", "B <eos>"}, {"B x", "C x", "D x"})])
def exercise_12_4(my_finished, my_live):
    finished, live = _step()
    got_finished = _as_set(my_finished, "my_finished")
    if got_finished != finished:
        hint = (tr("rank the nine extensions by log P (the live ones' log P plus the next token's); a candidate ending "
                   "with <eos> is set aside only if it ranks among the best k = 3."))
        if got_finished == _step(eos_among=2 * 3)[0]:
            hint = (tr("D <eos> ranks 5th: only a candidate ending with <eos> among the best k = 3 is set aside "
                       "(fairseq's rule, which transformer_lite follows)."))
        raise Wrong(tr("my_finished: {got_finished} is not the set of hypotheses set aside.",
                       got_finished=sorted(got_finished)), hint)
    got_live = _as_set(my_live, "my_live", 3)
    if got_live != live:
        hint = tr("the live hypotheses are the best 3 candidates that do NOT end with <eos>.")
        if any(c.endswith("<eos>") for c in got_live):
            hint = tr("a finished hypothesis is set aside: it does not take one of the k live places.")
        raise Wrong(tr("my_live: {got_live} are not the 3 live hypotheses after step 3.",
                       got_live=sorted(got_live)), hint)
    return (tr("C <eos> is set aside; D <eos> ranks 5th and is dropped; B x, C x and D x stay live, so the beam keeps "
               "k = 3 live hypotheses. The length penalty plays no part in this step: it only compares finished ones."))
