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
"""
from __future__ import annotations

import math
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
    matches, totals = [0] * max_n, [0] * max_n
    c = r = 0
    for cand, ref in zip(candidates, references):
        c, r = c + len(cand), r + len(ref)
        for n in range(1, max_n + 1):
            m, t = modified_precision(cand, ref, n)
            matches[n - 1] += m
            totals[n - 1] += t
    precisions = list(zip(matches, totals))
    # the brevity penalty: 1 for candidates at least as long as the references, e^(1 - r/c) for shorter ones
    brevity = 1.0 if c >= r else math.exp(1 - r / c) if c > 0 else 0.0
    if min(matches) == 0:  # some p_n = 0 (no match, or no n-gram at all): log p_n = -inf, so BLEU = 0
        return BLEUScore(0.0, precisions, brevity, c, r)
    score = brevity * math.exp(sum(math.log(m / t) for m, t in precisions) / max_n)
    return BLEUScore(score, precisions, brevity, c, r)


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
    matches, cand_totals, ref_totals = [0] * char_order, [0] * char_order, [0] * char_order
    for cand, ref in zip(candidates, references):
        cand, ref = characters(cand), characters(ref)
        for n in range(1, char_order + 1):
            cand_grams, ref_grams = ngrams(cand, n), ngrams(ref, n)
            if not ref_grams:  # a reference shorter than n characters: the sentence sits out order n (as in sacreBLEU)
                continue
            matches[n - 1] += sum(min(count, ref_grams[g]) for g, count in cand_grams.items())
            cand_totals[n - 1] += sum(cand_grams.values())
            ref_totals[n - 1] += sum(ref_grams.values())
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
    corpora = []
    for name, corpus in (("candidates", candidates), ("references", references)):
        if not isinstance(corpus, (list, tuple)):
            hint = " (for one sentence, use bleu or chrf)" if isinstance(corpus, str) else ""
            raise TypeError(f"{name} must be a list of sentences (str or list of str tokens){hint}, "
                            f"got {type(corpus).__name__}")
        corpora.append([_tokens(f"{name}[{i}]", s) for i, s in enumerate(corpus)])
    candidates, references = corpora
    if len(candidates) == 0:
        raise ValueError("candidates must hold at least one sentence, got an empty list")
    if len(references) != len(candidates):
        raise ValueError(f"references must hold one sentence per candidate ({len(candidates)}), "
                         f"got {len(references)}")
    return candidates, references
