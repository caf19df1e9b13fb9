"""Checks of chapter 13b's exercises (the translator of real sentences).

Every check about the model uses the SHIPPED real translator and the fixed split: the same weights and
sentences on every machine, so the answers can be checked exactly. The checks compute what they compare
with themselves; they never read the notebook's variables.
"""
from __future__ import annotations

import functools

from ..i18n import tr
from . import NotAnswered, Wrong, call, exercise, number


@functools.lru_cache(maxsize=1)
def _shipped():
    from transformer_lite.book.real_translator import real_translator

    model, data, _ = real_translator()
    return model, data


def _sentence_bleus() -> list[float]:
    from transformer_lite.metrics import bleu

    hyps, refs = _hyps_refs()
    return [100 * bleu(h, r).score for h, r in zip(hyps, refs)]


def _corpus_bleu() -> float:
    from transformer_lite.metrics import corpus_bleu

    return 100 * corpus_bleu(*_hyps_refs()).score


@exercise("13b.1", wrong=[lambda: (_corpus_bleu(),),                                       # the corpus score itself
                          lambda: (sum(_sentence_bleus()) / len(_sentence_bleus()) / 100,),  # 0-1, not 0-100
                          # zeros left out
                          lambda: (sum(_sentence_bleus()) / max(1, sum(b > 0 for b in _sentence_bleus())),)])
def exercise_13b_1(mean_sentence_bleu):
    scores = _sentence_bleus()
    expected = sum(scores) / len(scores)
    number(mean_sentence_bleu, expected, "mean_sentence_bleu", rel=1e-6, abs_=1e-6,
           hint=tr("score every test translation alone, 100 * bleu(h, r).score for h, r in zip(hyps, refs), and "
                   "average "
                   "over ALL the sentences, the zeros included (0-100, like the chapter's scores)."))
    zeros = sum(b == 0 for b in scores)
    return (tr("right: {expected:.1f}, against a corpus BLEU of {corpus_bleu:.1f}; {zeros} of {n_scores} "
               "sentences score 0 alone, because they share no 4-gram with their reference.",
               expected=expected, corpus_bleu=_corpus_bleu(), zeros=zeros, n_scores=len(scores)))


@functools.lru_cache(maxsize=1)
def _hyps_refs():
    from transformer_lite.book.real_translator import translate_split
    from transformer_lite.metrics import characters

    model, data = _shipped()
    hyps = [characters(o.replace("<unk>", "")) for o in translate_split(model, data)]
    return hyps, [characters(zh) for _, zh in data.test_pairs]


def _reversed_scores(reverse_refs_too: bool = False, sentence_mean: bool = False) -> tuple[float, float]:
    from transformer_lite.metrics import bleu, chrf, corpus_bleu, corpus_chrf

    hyps, refs = _hyps_refs()
    rev = [h[::-1] for h in hyps]
    refs = [r[::-1] for r in refs] if reverse_refs_too else refs
    if sentence_mean:
        return (100 * sum(bleu(h, r).score for h, r in zip(rev, refs)) / len(refs),
                100 * sum(chrf(h, r).score for h, r in zip(rev, refs)) / len(refs))
    return 100 * corpus_bleu(rev, refs).score, 100 * corpus_chrf(rev, refs).score


@exercise("13b.2", wrong=[lambda: (_reversed_scores(reverse_refs_too=True),),  # both reversed: order kept
                          lambda: (_reversed_scores(sentence_mean=True),),     # a mean of sentence scores
                          lambda: (tuple(x / 100 for x in _reversed_scores()),)])  # 0-1, not 0-100
def exercise_13b_2(answer):
    if isinstance(answer, tuple) and any(a is ... or a is None for a in answer):
        raise NotAnswered
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise Wrong(tr("give a pair (bleu_reversed, chrf_reversed), got {answer_type}.",
                       answer_type=type(answer).__name__))
    bleu_rev, chrf_rev = _reversed_scores()
    hint = (tr("reverse each translation (h[::-1]) but not the references, and score the whole test set at once with "
               "corpus_bleu and corpus_chrf (corpus scores, not means of sentence scores), times 100."))
    number(answer[0], bleu_rev, "bleu_reversed", rel=1e-6, hint=hint)
    number(answer[1], chrf_rev, "chrf_reversed", rel=1e-6, hint=hint)
    return (tr("right: reversed, BLEU falls to {bleu_rev:.1f} and chrF to {chrf_rev:.1f}; BLEU's 3- and 4-grams need "
               "the order, chrF's character unigrams do not.", bleu_rev=bleu_rev, chrf_rev=chrf_rev))


def _repeats(chars) -> bool:
    return any(chars[i] == chars[i + 1] == chars[i + 2] for i in range(len(chars) - 2))


def _any_three(chars) -> bool:  # three occurrences anywhere, not in a row
    return any(chars.count(c) >= 3 for c in set(chars))


def _two_in_a_row(chars) -> bool:
    return any(chars[i] == chars[i + 1] for i in range(len(chars) - 1))


CASES = [(list("我我我"), True), (list("我很好好好。"), True), (list("好我好我好"), False), (list("我很好"), False),
         (list("好好"), False), ([], False), (list("谢谢谢谢"), True), (list("看看书"), False)]


@exercise("13b.3", wrong=[lambda: (_any_three,), lambda: (_two_in_a_row,)])
def exercise_13b_3(repeats):
    for chars, expected in CASES:
        got = call(repeats, list(chars), name=f"repeats({chars!r})")
        if not isinstance(got, bool):
            raise Wrong(tr("repeats({chars!r}) should return True or False, got {got_type}.",
                           chars=chars, got_type=type(got).__name__))
        if got != expected:
            raise Wrong(tr("repeats({chars!r}) returned {got}, expected {expected}.",
                           chars=chars, got=got, expected=expected),
                        hint=tr("look for one character at three CONSECUTIVE positions i, i+1, i+2; the same character "
                                "three times with others between does not count, and two in a row is not enough."))
    hyps, _ = _hyps_refs()
    flagged = sum(_repeats(h) for h in hyps)
    if sum(bool(call(repeats, list(h), name="repeats")) for h in hyps) != flagged:
        raise Wrong(tr("your repeats disagrees with the check on some of the shipped model's translations."))
    return tr("right: {flagged} of the {n_hyps} test translations repeat a character three or more times in a row.",
              flagged=flagged, n_hyps=len(hyps))


@functools.lru_cache(maxsize=2)
def _unknown_sentence_share(min_freq: int, tokens: bool = False) -> float:
    from transformer_lite.book import real_data
    from transformer_lite.data import UNK

    src = real_data.translation_data(min_freq=min_freq).test_src  # (N, S), padded with 0
    unk = src == UNK
    return float(unk.sum() / (src != 0).sum()) if tokens else float(unk.any(dim=1).float().mean())


@exercise("13b.4", wrong=[lambda: (_unknown_sentence_share(2),),                # the recipe's cut-off, unchanged
                          lambda: (_unknown_sentence_share(1, tokens=True),),   # a share of tokens, not sentences
                          lambda: (100 * _unknown_sentence_share(1),)])         # a percentage, not a share
def exercise_13b_4(share_with_unknown):
    expected = _unknown_sentence_share(1)
    number(share_with_unknown, expected, "share_with_unknown", rel=1e-6, abs_=1e-9,
           hint=tr("build the data with real_data.translation_data(min_freq=1), then take the share (0-1) of the rows "
                   "of "
                   "its test_src that hold at least one UNK id."))
    before = _unknown_sentence_share(2)
    return (tr("right: with min_freq=1, {expected:.0%} of the test sentences still hold an unknown word, against "
               "{before:.0%} with the recipe's cut-off of 2. The rest are words never seen in training: no cut-off "
               "can give them a meaning.", expected=expected, before=before))
