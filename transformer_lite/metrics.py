"""Scoring translations: BLEU (Papineni et al. 2002) and chrF (Popović 2015).

Both compare a candidate translation with a reference translation by counting the pieces they
share, and both are corpus scores: the counts are summed over all sentences of a test set
before anything is divided.

BLEU counts word n-grams, n = 1 .. 4:

    p_n  = clipped n-gram matches / candidate n-grams       (modified n-gram precision)
    BP   = 1 if c >= r else exp(1 - r / c)                   (c, r: candidate and reference words)
    BLEU = BP * exp(1/4 * sum_n log p_n)

chrF counts character n-grams, n = 1 .. 6, with the spaces left out, and weighs recall
beta = 2 times as much as precision:

    chrP, chrR = the means over n of the n-gram precisions and recalls
    chrF       = (1 + beta^2) * chrP * chrR / (beta^2 * chrP + chrR)

A sentence is a string (its tokens are its whitespace-separated words) or a list of str tokens;
one reference per candidate. Scores lie in [0, 1]; papers and sacreBLEU print them x 100.
For Chinese, score characters: ``bleu(characters(candidate), characters(reference))``.

How these equal sacreBLEU 2.6 (``tests/test_metrics.py`` checks each):

- ``corpus_bleu`` = ``sacrebleu.corpus_bleu(candidates, [references], tokenize="none",
  smooth_method="none")`` on the tokens joined by spaces: the same counts, and the same score to
  ~1e-15 relative (sacreBLEU takes the logs of percentages). sacreBLEU's default smoothing, "exp",
  changes only an order n with no match at all: BLEU here is then 0, as Papineni et al. define it;
  sacreBLEU's is small but positive.
- On Chinese text made of Chinese characters and Chinese punctuation (every sentence of the
  HSK set), ``characters(text)`` are exactly the tokens of sacreBLEU's ``tokenize="zh"``; it keeps a
  run of Latin letters or digits together, where ``characters`` splits it.
- ``corpus_chrf`` = ``sacrebleu.corpus_chrf`` with its defaults (chrF2: character order 6, no
  word n-grams, whitespace removed), to the last bit.

Whether one system beats another on a test set, or only on this draw of sentences:
``paired_bootstrap`` (Koehn 2004) rescores both on resampled test sets.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from typing import NamedTuple

from ._checks import check_number, check_positive_int


class BLEUScore(NamedTuple):
    score: float                       # BP x the geometric mean of the p_n, in [0, 1]
    precisions: list[tuple[int, int]]  # (clipped matches, candidate n-grams) for n = 1 .. max_n
    brevity: float                     # the brevity penalty BP
    candidate_length: int              # c: candidate tokens, summed over the corpus
    reference_length: int              # r: reference tokens, summed over the corpus


class ChrFScore(NamedTuple):
    score: float      # F_beta of the mean precision and the mean recall, in [0, 1]
    precision: float  # chrP: the mean over n of the character n-gram precisions
    recall: float     # chrR: the mean over n of the character n-gram recalls


def ngrams(tokens, n: int) -> Counter:
    """Count the n-grams (tuples of n consecutive tokens) of a list of tokens."""
    if not isinstance(tokens, (list, tuple)):
        raise TypeError(f"tokens must be a list of tokens (split a sentence first), got {type(tokens).__name__}")
    check_positive_int("n", n)
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def modified_precision(candidate, reference, n: int) -> tuple[int, int]:
    """(clipped matches, candidate n-grams): an n-gram is credited at most as often as it occurs in the reference."""
    cand, ref = ngrams(_tokens("candidate", candidate), n), ngrams(_tokens("reference", reference), n)
    return sum(min(count, ref[g]) for g, count in cand.items()), sum(cand.values())


def bleu(candidate, reference, max_n: int = 4) -> BLEUScore:
    """BLEU of one sentence: the BLEU of a corpus of one sentence."""
    return corpus_bleu([_tokens("candidate", candidate)], [_tokens("reference", reference)], max_n)


def corpus_bleu(candidates, references, max_n: int = 4) -> BLEUScore:
    """BLEU of a corpus: clipped matches, n-grams and lengths summed over all sentences, then divided."""
    candidates, references = _corpus_pair(candidates, references)  # lists of token lists
    check_positive_int("max_n", max_n)
    return _bleu_from_counts(_summed(_bleu_counts(c, r, max_n) for c, r in zip(candidates, references)), max_n)


def _bleu_counts(cand: list[str], ref: list[str], max_n: int) -> list[int]:
    """One sentence's share of corpus BLEU: [c, r, matches_1 .. matches_N, totals_1 .. totals_N]."""
    counts = [len(cand), len(ref)] + [0] * (2 * max_n)
    for n in range(1, max_n + 1):
        counts[1 + n], counts[1 + max_n + n] = modified_precision(cand, ref, n)
    return counts


def _bleu_from_counts(counts, max_n: int) -> BLEUScore:
    """Corpus BLEU from the summed counts of _bleu_counts."""
    c, r = counts[0], counts[1]
    matches, totals = counts[2:2 + max_n], counts[2 + max_n:2 + 2 * max_n]
    precisions = list(zip(matches, totals))
    # the brevity penalty: 1 for candidates at least as long as the references, e^(1 - r/c) for shorter ones
    brevity = 1.0 if c >= r else math.exp(1 - r / c) if c > 0 else 0.0
    if min(matches) == 0:  # some p_n = 0 (no match, or no n-gram at all): log p_n = -inf, so BLEU = 0
        return BLEUScore(0.0, precisions, brevity, c, r)
    score = brevity * math.exp(sum(math.log(m / t) for m, t in precisions) / max_n)
    return BLEUScore(score, precisions, brevity, c, r)


def _summed(rows) -> list[int]:
    """The element-wise sum of equally long lists of counts."""
    total = None
    for row in rows:
        total = list(row) if total is None else [a + b for a, b in zip(total, row)]
    return total


def characters(sentence) -> list[str]:
    """The characters of a sentence, whitespace left out: chrF's units, and the tokens to score Chinese on."""
    text = sentence if isinstance(sentence, str) else "".join(_tokens("sentence", sentence))
    return [ch for ch in text if not ch.isspace()]


def chrf(candidate, reference, char_order: int = 6, beta: float = 2.0) -> ChrFScore:
    """chrF of one sentence: the chrF of a corpus of one sentence."""
    return corpus_chrf([_tokens("candidate", candidate)], [_tokens("reference", reference)], char_order, beta)


def corpus_chrf(candidates, references, char_order: int = 6, beta: float = 2.0) -> ChrFScore:
    """chrF of a corpus: character n-gram counts summed over all sentences, for n = 1 .. char_order."""
    candidates, references = _corpus_pair(candidates, references)
    check_positive_int("char_order", char_order)
    beta = check_number("beta", beta, positive=True)
    counts = _summed(_chrf_counts(c, r, char_order) for c, r in zip(candidates, references))
    return _chrf_from_counts(counts, char_order, beta)


def _chrf_counts(cand: list[str], ref: list[str], char_order: int) -> list[int]:
    """One sentence's share of corpus chrF: [matches_1 .. matches_N, candidate n-grams ..., reference n-grams ...]."""
    counts = [0] * (3 * char_order)
    cand, ref = characters(cand), characters(ref)
    for n in range(1, char_order + 1):
        cand_grams, ref_grams = ngrams(cand, n), ngrams(ref, n)
        if not ref_grams:  # a reference shorter than n characters: the sentence sits out order n (as in sacreBLEU)
            continue
        counts[n - 1] = sum(min(count, ref_grams[g]) for g, count in cand_grams.items())
        counts[char_order + n - 1] = sum(cand_grams.values())
        counts[2 * char_order + n - 1] = sum(ref_grams.values())
    return counts


def _chrf_from_counts(counts, char_order: int, beta: float) -> ChrFScore:
    """Corpus chrF from the summed counts of _chrf_counts."""
    matches = counts[:char_order]
    cand_totals, ref_totals = counts[char_order:2 * char_order], counts[2 * char_order:]
    # the means run over the orders both sides have n-grams of (a corpus of short sentences may have no 6-gram)
    orders = [i for i in range(char_order) if cand_totals[i] > 0 and ref_totals[i] > 0]
    if not orders:
        return ChrFScore(0.0, 0.0, 0.0)
    precision = sum(matches[i] / cand_totals[i] for i in orders) / len(orders)
    recall = sum(matches[i] / ref_totals[i] for i in orders) / len(orders)
    if precision + recall == 0:
        return ChrFScore(0.0, precision, recall)
    score = (1 + beta ** 2) * precision * recall / (beta ** 2 * precision + recall)
    return ChrFScore(score, precision, recall)


def paired_bootstrap(metric, hyps_a, hyps_b, refs, n: int = 1000, seed: int = 0) -> dict:
    """Is system a better than system b on this test set, or is the gap luck of the draw? (Koehn 2004)

    Draw n test sets of the same size from the sentences, with replacement, the same draw for both
    systems (paired), and score each system on each draw with the corpus-level ``metric`` recomputed
    from scratch (corpus BLEU is not a mean of sentence scores). Returns the difference a - b on the
    real test set, the 95 % interval of the resampled differences (2.5th and 97.5th percentiles), and
    ``a_wins``: the share of draws where a scores strictly higher. Koehn's criterion: a is better at
    95 % confidence when ``a_wins >= 0.95``.

    ``metric`` is a corpus score called as ``metric(candidates, references)``; it may return a number
    or a score with a ``.score`` (``corpus_bleu``, ``corpus_chrf``). For these two the per-sentence
    counts are computed once and summed per draw: the same scores, far faster. The draws come from
    ``random.Random(seed).choices``, so a result is the same on every machine.
    """
    if not callable(metric):
        raise TypeError(f"metric must be a corpus score such as corpus_bleu, got {type(metric).__name__}")
    refs_a = _corpus("refs", refs)
    if len(refs_a) == 0:
        raise ValueError("refs must hold at least one sentence, got an empty list")
    hyps_a, hyps_b = _corpus("hyps_a", hyps_a), _corpus("hyps_b", hyps_b)
    for name, corpus in (("hyps_a", hyps_a), ("hyps_b", hyps_b)):
        if len(corpus) != len(refs_a):
            raise ValueError(f"{name} must hold one sentence per reference ({len(refs_a)}), got {len(corpus)}")
    check_positive_int("n", n)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    size = len(refs_a)
    rng = random.Random(seed)
    draws = [rng.choices(range(size), k=size) for _ in range(n)]  # sentence indices, with replacement
    everything = list(range(size))
    if metric is corpus_bleu or metric is corpus_chrf:
        import torch  # sums the per-sentence counts of all draws at once

        if metric is corpus_bleu:
            count, score = (lambda c, r: _bleu_counts(c, r, 4)), (lambda t: _bleu_from_counts(t, 4).score)
        else:
            count, score = (lambda c, r: _chrf_counts(c, r, 6)), (lambda t: _chrf_from_counts(t, 6, 2.0).score)
        index = torch.tensor(draws + [everything])  # (n + 1, size): the draws, then the real test set
        totals = {}
        for side, hyps in (("a", hyps_a), ("b", hyps_b)):
            counts = torch.tensor([count(c, r) for c, r in zip(hyps, refs_a)], dtype=torch.int64)  # (size, K)
            totals[side] = counts[index].sum(dim=1).tolist()  # (n + 1, K) integer counts per test set
        scores = {side: [score(t) for t in rows] for side, rows in totals.items()}
        a, b = scores["a"][-1], scores["b"][-1]
        diffs = sorted(x - y for x, y in zip(scores["a"][:-1], scores["b"][:-1]))
    else:
        def scored(hyps, idx):
            result = metric([hyps[i] for i in idx], [refs_a[i] for i in idx])
            return float(getattr(result, "score", result))
        a, b = scored(hyps_a, everything), scored(hyps_b, everything)
        diffs = sorted(scored(hyps_a, idx) - scored(hyps_b, idx) for idx in draws)
    return {"a": a, "b": b, "difference": a - b,
            "low": _percentile(diffs, 2.5), "high": _percentile(diffs, 97.5),
            "a_wins": sum(d > 0 for d in diffs) / n, "n": n, "seed": seed}


def _percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile of sorted values, linearly interpolated between neighbours (numpy's default)."""
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _tokens(name: str, sentence) -> list[str]:
    """A sentence as a list of tokens: a str is split on whitespace, a list or tuple must hold str tokens."""
    if isinstance(sentence, str):
        return sentence.split()
    if not isinstance(sentence, (list, tuple)):
        raise TypeError(f"{name} must be a str or a list of str tokens, got {type(sentence).__name__}")
    for i, token in enumerate(sentence):
        if not isinstance(token, str):
            raise TypeError(f"{name}[{i}] must be a str token, got {type(token).__name__}")
    return list(sentence)


def _corpus_pair(candidates, references) -> tuple[list[list[str]], list[list[str]]]:
    """Two corpora of the same, non-zero number of sentences, as lists of token lists."""
    candidates, references = _corpus("candidates", candidates), _corpus("references", references)
    if len(candidates) == 0:
        raise ValueError("candidates must hold at least one sentence, got an empty list")
    if len(references) != len(candidates):
        raise ValueError(f"references must hold one sentence per candidate ({len(candidates)}), "
                         f"got {len(references)}")
    return candidates, references


def _corpus(name: str, corpus) -> list[list[str]]:
    """A corpus (a list of sentences) as a list of token lists; errors name the argument."""
    if not isinstance(corpus, (list, tuple)):
        hint = " (for one sentence, use bleu or chrf)" if isinstance(corpus, str) else ""
        raise TypeError(f"{name} must be a list of sentences (str or list of str tokens){hint}, "
                        f"got {type(corpus).__name__}")
    return [_tokens(f"{name}[{i}]", s) for i, s in enumerate(corpus)]
