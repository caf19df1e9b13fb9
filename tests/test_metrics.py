"""transformer_lite.metrics: BLEU and chrF, checked against sacreBLEU 2.6 (Post 2018), the reference implementation.

The correspondence, exactly:

- our ``corpus_bleu`` on token lists = ``sacrebleu.corpus_bleu(hyps, [refs], tokenize="none",
  smooth_method="none")`` on the same tokens joined by spaces: the same counts and lengths (integers, equal),
  the same score to ~1e-15 relative (sacreBLEU averages the logs of percentages, we of fractions), so 1e-12 here;
- with sacreBLEU's default smoothing ("exp", mteval's) the scores are equal while every order n has a match;
  when one has none, ours is 0 (Papineni et al.'s definition) and sacreBLEU's is positive — tested both ways;
- Chinese: sacreBLEU's ``tokenize="zh"`` puts every CJK character (and CJK punctuation) in a token of its own
  and tokenizes the rest like 13a; on text of Chinese characters and punctuation that is exactly
  ``characters(text)``, so our BLEU on characters = sacreBLEU's zh BLEU. A run of digits is one zh token but
  several characters: there the two differ (tested), and our BLEU on sacreBLEU's own zh tokens still agrees;
- our ``corpus_chrf`` = ``sacrebleu.corpus_chrf`` with its defaults (chrF2, 6 character orders, no word
  n-grams, whitespace removed): the same floating-point operations in the same order, equal to the last bit.
"""
from __future__ import annotations

import math
import random

import pytest

sacrebleu = pytest.importorskip("sacrebleu")  # a test dependency (requirements.in), not the package's
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh  # noqa: E402

from transformer_lite.metrics import (  # noqa: E402
    bleu,
    characters,
    chrf,
    corpus_bleu,
    corpus_chrf,
    modified_precision,
    ngrams,
    paired_bootstrap,
)

EN_HYPS = ["the cat sat on the mat", "there is a cat on the mat", "I have a cat", "", "a b c",
           "the the the the the the the"]
EN_REFS = ["the cat sat on the red mat", "the cat is on the mat", "I have a small cat", "nothing here", "a b c d",
           "the cat is on the mat"]
ZH_HYPS = ["我有一只猫。", "他在学校学习中文。", "今天天气很好！", "你好吗？", "我们明天去北京，好不好？"]
ZH_REFS = ["我有一只小猫。", "他在学校学中文。", "今天天气不错。", "你好吗？", "明天我们去北京好吗？"]


def _sacre_bleu(hyps, refs, **kw):
    kw.setdefault("tokenize", "none")
    kw.setdefault("smooth_method", "none")
    return sacrebleu.corpus_bleu(hyps, [refs], **kw)


def _assert_same_bleu(ours, theirs):
    assert [m for m, _ in ours.precisions] == theirs.counts
    assert [t for _, t in ours.precisions] == theirs.totals
    assert (ours.candidate_length, ours.reference_length) == (theirs.sys_len, theirs.ref_len)
    assert math.isclose(ours.brevity, theirs.bp, rel_tol=1e-15)
    assert math.isclose(100 * ours.score, theirs.score, rel_tol=1e-12, abs_tol=1e-12)


def _random_corpus(seed, alphabet, joiner):
    """Sentences of 0-12 tokens, the candidates noisy, cut short or lengthened copies of the references."""
    rng = random.Random(seed)
    hyps, refs = [], []
    for _ in range(rng.randint(1, 60)):
        ref = [rng.choice(alphabet) for _ in range(rng.randint(0, 12))]
        hyp = [t if rng.random() < 0.7 else rng.choice(alphabet) for t in ref]
        if rng.random() < 0.3:
            hyp = hyp[: rng.randint(0, len(hyp))]
        if rng.random() < 0.2:
            hyp += [rng.choice(alphabet) for _ in range(3)]
        hyps.append(joiner.join(hyp))
        refs.append(joiner.join(ref))
    return hyps, refs


EN_WORDS = "the a cat dog sat on mat red is I have small big".split()
ZH_CHARS = list("我你他有一只猫狗在学校中文今天天气很好不错。，！？")


# ---- BLEU against sacreBLEU --------------------------------------------------------------------------------------

def test_corpus_bleu_equals_sacrebleu_on_pretokenized_english():
    ours = corpus_bleu(EN_HYPS, EN_REFS)
    _assert_same_bleu(ours, _sacre_bleu(EN_HYPS, EN_REFS))
    assert 0 < ours.score < 1 and ours.brevity < 1  # a real, non-trivial case: shorter than the references


@pytest.mark.parametrize("seed", range(10))
def test_corpus_bleu_equals_sacrebleu_on_random_corpora(seed):
    hyps, refs = _random_corpus(seed, EN_WORDS, " ")
    _assert_same_bleu(corpus_bleu(hyps, refs), _sacre_bleu(hyps, refs))
    # token lists and space-joined strings are the same corpus
    assert corpus_bleu([h.split() for h in hyps], [r.split() for r in refs]) == corpus_bleu(hyps, refs)


def test_bleu_on_chinese_characters_equals_sacrebleus_zh_tokenizer():
    zh = TokenizerZh()
    for text in ZH_HYPS + ZH_REFS:
        assert zh(text).split() == characters(text)
    ours = corpus_bleu([characters(h) for h in ZH_HYPS], [characters(r) for r in ZH_REFS])
    _assert_same_bleu(ours, _sacre_bleu(ZH_HYPS, ZH_REFS, tokenize="zh"))
    assert 0 < ours.score < 1


@pytest.mark.parametrize("seed", range(10))
def test_bleu_on_random_chinese_equals_sacrebleus_zh_tokenizer(seed):
    hyps, refs = _random_corpus(seed, ZH_CHARS, "")
    ours = corpus_bleu([characters(h) for h in hyps], [characters(r) for r in refs])
    _assert_same_bleu(ours, _sacre_bleu(hyps, refs, tokenize="zh"))


def test_digits_in_chinese_are_where_characters_and_the_zh_tokenizer_part():
    hyp, ref = "我有2024个苹果", "我有2025个苹果"
    zh = TokenizerZh()
    assert zh(hyp).split() == ["我", "有", "2024", "个", "苹", "果"]
    assert characters(hyp) == ["我", "有", "2", "0", "2", "4", "个", "苹", "果"]
    on_characters = corpus_bleu([characters(hyp)], [characters(ref)])
    sacre = _sacre_bleu([hyp], [ref], tokenize="zh")
    assert on_characters.candidate_length != sacre.sys_len
    _assert_same_bleu(corpus_bleu([zh(hyp).split()], [zh(ref).split()]), sacre)  # same tokens: same BLEU


def test_exp_smoothing_changes_only_an_order_without_a_match():
    # every order has a match: sacreBLEU's default (smooth_method="exp") gives our score
    assert all(m > 0 for m, _ in corpus_bleu(EN_HYPS, EN_REFS).precisions)
    assert math.isclose(100 * corpus_bleu(EN_HYPS, EN_REFS).score,
                        _sacre_bleu(EN_HYPS, EN_REFS, smooth_method="exp").score, rel_tol=1e-12)
    # no shared four-gram: ours is 0 as Papineni et al. define it; "exp" halves a pseudo-count instead
    hyps, refs = ["I have a cat"], ["I have a small cat"]
    ours = corpus_bleu(hyps, refs)
    assert ours.precisions[3] == (0, 1) and ours.score == 0.0
    assert _sacre_bleu(hyps, refs, smooth_method="none").score == 0.0
    assert _sacre_bleu(hyps, refs, smooth_method="exp").score > 10


def test_sentence_bleu_is_the_bleu_of_a_corpus_of_one():
    for hyp, ref in zip(EN_HYPS, EN_REFS):
        assert bleu(hyp, ref) == corpus_bleu([hyp], [ref])
        _assert_same_bleu(bleu(hyp, ref), _sacre_bleu([hyp], [ref]))


def test_corpus_bleu_is_not_the_mean_of_sentence_bleus():
    pairs = [("the cat sat on the mat", "the cat sat on the red mat"), ("I have a cat", "I have a small cat")]
    corpus = corpus_bleu([h for h, _ in pairs], [r for _, r in pairs])
    assert bleu(*pairs[1]).score == 0.0 and corpus.score > 0.5
    assert corpus.precisions[3] == (2 + 0, 3 + 1)  # counts summed before dividing


# ---- BLEU by hand ---------------------------------------------------------------------------------------------------

def test_clipping_on_papinenis_example():
    assert modified_precision("the the the the the the the", "the cat is on the mat", 1) == (2, 7)
    assert ngrams("a b a b".split(), 2) == {("a", "b"): 2, ("b", "a"): 1}


def test_bleu_hand_count():
    score, precisions, brevity, c, r = bleu("the cat sat on the mat", "the cat sat on the red mat")
    assert precisions == [(6, 6), (4, 5), (3, 4), (2, 3)] and (c, r) == (6, 7)
    assert math.isclose(brevity, math.exp(1 - 7 / 6))
    assert math.isclose(score, math.exp(1 - 7 / 6) * (4 / 5 * 3 / 4 * 2 / 3) ** 0.25)
    assert bleu("a b c d", "a b c d").score == 1.0
    assert bleu("a b c d e", "a b c d").brevity == 1.0  # longer than the reference: no penalty
    assert bleu("a b c d", "w x y z a b c d").brevity == pytest.approx(math.exp(1 - 2))
    assert bleu("a b", "a b", max_n=2).score == 1.0 and bleu("a b", "a b").score == 0.0  # no 3-gram at all


def test_empty_candidates():
    empty = bleu("", "the cat")
    assert empty.score == 0.0 and empty.brevity == 0.0 and empty.candidate_length == 0
    assert _sacre_bleu([""], ["the cat"]).score == 0.0
    assert corpus_bleu(["", ""], ["", ""]).score == 0.0
    # an empty candidate among others only adds its reference's length
    with_empty = corpus_bleu(EN_HYPS[:3] + [""], EN_REFS[:3] + ["x y"])
    assert with_empty.precisions == corpus_bleu(EN_HYPS[:3], EN_REFS[:3]).precisions
    assert with_empty.reference_length == corpus_bleu(EN_HYPS[:3], EN_REFS[:3]).reference_length + 2
    assert chrf("", "the cat").score == 0.0 == sacrebleu.sentence_chrf("", ["the cat"]).score


# ---- chrF ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hyps, refs", [(EN_HYPS, EN_REFS), (ZH_HYPS, ZH_REFS)], ids=["english", "chinese"])
def test_corpus_chrf_equals_sacrebleu(hyps, refs):
    ours = corpus_chrf(hyps, refs)
    assert 100 * ours.score == sacrebleu.corpus_chrf(hyps, [refs]).score
    assert 0 < ours.score < 1


@pytest.mark.parametrize("seed", range(10))
def test_corpus_chrf_equals_sacrebleu_on_random_corpora(seed):
    for hyps, refs in (_random_corpus(seed, EN_WORDS, " "), _random_corpus(seed, ZH_CHARS, "")):
        assert 100 * corpus_chrf(hyps, refs).score == sacrebleu.corpus_chrf(hyps, [refs]).score


def test_chrf_short_references_sit_out_the_longer_orders():
    # "abc" has no 4-, 5- or 6-gram: the candidate's 4- to 6-grams of that sentence are not counted
    hyps, refs = ["abcdefgh", "the cat sat on the mat"], ["abc", "the cat sat on a mat"]
    assert 100 * corpus_chrf(hyps, refs).score == sacrebleu.corpus_chrf(hyps, [refs]).score
    # a corpus whose references are all shorter than 6 characters averages over the orders it has
    short = chrf("cat", "cat")
    assert short == (1.0, 1.0, 1.0) and sacrebleu.sentence_chrf("cat", ["cat"]).score == 100.0


def test_chrf_by_hand():
    # "ab" against "abc": unigrams 2/2 precision, 2/3 recall; bigrams 1/1 and 1/2; the rest absent on one side
    ours = chrf("ab", "abc")
    precision, recall = (1 + 1) / 2, (2 / 3 + 1 / 2) / 2
    assert ours.precision == precision and ours.recall == recall
    assert math.isclose(ours.score, 5 * precision * recall / (4 * precision + recall))
    assert chrf("a b", "ab") == chrf("ab", "ab")  # whitespace left out
    assert chrf(["我", "有"], ["我有"]) == chrf("我有", "我有")
    for hyp, ref in zip(EN_HYPS, EN_REFS):
        assert 100 * chrf(hyp, ref).score == sacrebleu.sentence_chrf(hyp, [ref]).score


def test_chrf_weighs_recall_above_precision():
    long_ = chrf("the cat sat on the mat today", "the cat sat on the mat")
    short_ = chrf("the cat sat", "the cat sat on the mat")
    assert long_.precision < 1 == long_.recall and short_.precision == 1 > short_.recall
    assert long_.score > short_.score  # beta = 2: missing words cost more than extra ones
    assert chrf("the cat sat", "the cat sat on the mat", beta=1).score == pytest.approx(
        2 * short_.precision * short_.recall / (short_.precision + short_.recall))


# ---- bad input ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda: corpus_bleu("the cat", ["the cat"]), TypeError, r"candidates must be a list of sentences .*got str"),
    (lambda: corpus_bleu(["the cat"], None), TypeError, r"references must be a list of sentences .*got NoneType"),
    (lambda: corpus_bleu([["the", 3]], ["the cat"]), TypeError, r"candidates\[0\]\[1\] must be a str token, got int"),
    (lambda: corpus_bleu(["a", 7], ["a", "b"]), TypeError,
     r"candidates\[1\] must be a str or a list of str tokens, got int"),
    (lambda: corpus_bleu([], []), ValueError, r"candidates must hold at least one sentence"),
    (lambda: corpus_bleu(["a", "b"], ["a"]), ValueError,
     r"references must hold one sentence per candidate \(2\), got 1"),
    (lambda: corpus_bleu(["a"], ["a"], max_n=0), ValueError, r"max_n must be >= 1, got 0"),
    (lambda: corpus_bleu(["a"], ["a"], max_n=2.0), TypeError, r"max_n must be an int, got float"),
    (lambda: bleu(None, "the cat"), TypeError, r"candidate must be a str or a list of str tokens, got NoneType"),
    (lambda: bleu("the cat", b"the cat"), TypeError, r"reference must be a str or a list of str tokens, got bytes"),
    (lambda: modified_precision("a", "a", 0), ValueError, r"n must be >= 1, got 0"),
    (lambda: ngrams("a b", 1), TypeError, r"tokens must be a list of tokens .*got str"),
    (lambda: corpus_chrf(["a"], ("a", "b")), ValueError,
     r"references must hold one sentence per candidate \(1\), got 2"),
    (lambda: chrf("a", "a", char_order=-1), ValueError, r"char_order must be >= 1, got -1"),
    (lambda: chrf("a", "a", beta=0), ValueError, r"beta must be a positive number, got 0"),
    (lambda: chrf("a", "a", beta="2"), TypeError, r"beta must be a number, got str"),
    (lambda: characters(42), TypeError, r"sentence must be a str or a list of str tokens, got int"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- paired bootstrap (Koehn 2004) -------------------------------------------------------------------------------

def _bootstrap_corpora(seed=0, size=80):
    """A reference corpus, a system that keeps 85 % of each reference's tokens and one that keeps 55 %."""
    rng = random.Random(seed)
    refs = [" ".join(rng.choice(EN_WORDS) for _ in range(rng.randint(3, 10))) for _ in range(size)]

    def noisy(keep):
        return [" ".join(t if rng.random() < keep else rng.choice(EN_WORDS) for t in r.split()) for r in refs]
    return noisy(0.85), noisy(0.55), refs


@pytest.mark.parametrize("metric", [corpus_bleu, corpus_chrf])
def test_paired_bootstrap_fast_path_equals_rescoring_every_draw(metric):
    good, bad, refs = _bootstrap_corpora()
    fast = paired_bootstrap(metric, good, bad, refs, n=60, seed=3)
    slow = paired_bootstrap(lambda c, r: metric(c, r).score, good, bad, refs, n=60, seed=3)
    assert fast == pytest.approx(slow, rel=1e-12, abs=1e-15)
    assert fast["a"] == metric(good, refs).score and fast["b"] == metric(bad, refs).score


def test_paired_bootstrap_recomputes_the_corpus_score_on_each_draw():
    good, bad, refs = _bootstrap_corpora()
    rng = random.Random(5)  # the draws paired_bootstrap makes with seed=5
    draws = [rng.choices(range(len(refs)), k=len(refs)) for _ in range(20)]
    diffs = sorted(corpus_bleu([good[i] for i in d], [refs[i] for i in d]).score
                   - corpus_bleu([bad[i] for i in d], [refs[i] for i in d]).score for d in draws)
    result = paired_bootstrap(corpus_bleu, good, bad, refs, n=20, seed=5)
    assert result["low"] == pytest.approx(diffs[0] + (diffs[1] - diffs[0]) * 0.475)
    assert result["a_wins"] == sum(d > 0 for d in diffs) / 20


def test_paired_bootstrap_separates_a_clear_gap_and_not_a_tie():
    good, bad, refs = _bootstrap_corpora()
    clear = paired_bootstrap(corpus_chrf, good, bad, refs, n=200)
    assert clear["difference"] > 0 and clear["low"] > 0 and clear["a_wins"] >= 0.95
    assert clear["low"] <= clear["difference"] <= clear["high"]
    same = paired_bootstrap(corpus_chrf, good, good, refs, n=50)
    assert same["difference"] == same["low"] == same["high"] == same["a_wins"] == 0
    swapped = paired_bootstrap(corpus_chrf, bad, good, refs, n=200)
    assert swapped["difference"] == -clear["difference"] and swapped["a_wins"] <= 1 - clear["a_wins"]


def test_paired_bootstrap_is_reproducible_from_its_seed():
    good, bad, refs = _bootstrap_corpora()
    assert paired_bootstrap(corpus_bleu, good, bad, refs, n=30, seed=1) == \
        paired_bootstrap(corpus_bleu, good, bad, refs, n=30, seed=1)


@pytest.mark.parametrize("call, error, message", [
    (lambda: paired_bootstrap("bleu", ["a"], ["a"], ["a"]), TypeError, r"metric must be a corpus score .*got str"),
    (lambda: paired_bootstrap(corpus_bleu, "a", ["a"], ["a"]), TypeError, r"hyps_a must be a list of sentences"),
    (lambda: paired_bootstrap(corpus_bleu, ["a"], [1], ["a"]), TypeError, r"hyps_b\[0\] must be a str"),
    (lambda: paired_bootstrap(corpus_bleu, ["a"], ["a"], None), TypeError, r"refs must be a list of sentences"),
    (lambda: paired_bootstrap(corpus_bleu, [], [], []), ValueError, r"refs must hold at least one sentence"),
    (lambda: paired_bootstrap(corpus_bleu, ["a"], ["a", "b"], ["a"]), ValueError,
     r"hyps_b must hold one sentence per reference \(1\), got 2"),
    (lambda: paired_bootstrap(corpus_bleu, ["a"], ["a"], ["a"], n=0), ValueError, r"n must be >= 1, got 0"),
    (lambda: paired_bootstrap(corpus_bleu, ["a"], ["a"], ["a"], seed=1.5), TypeError, r"seed must be an int"),
])
def test_paired_bootstrap_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
