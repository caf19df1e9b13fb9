"""transformer_lite.book.real_data: the HSK sentence pairs, filtered, tokenized, split and ready to train on.

The data is pinned (hsk-sentences-audio 1.0.0), so exact counts are regression numbers; next to each,
a check computed from the rule itself, which would fail if the rule were not applied.
"""
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import hsk_sentences_audio
import pytest
import torch

from transformer_lite.book import real_data as rd
from transformer_lite.data import BOS, EOS, PAD, UNK, TranslationData

ROOT = Path(__file__).resolve().parent.parent
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


# one xdist worker runs this file: the loader's and the tokenization report's caches (about 20 s) fill once
pytestmark = pytest.mark.xdist_group("real_data")


@pytest.fixture(scope="module")
def loaded():
    return rd.load_pairs()


@pytest.fixture(scope="module")
def splits():
    return rd.split_pairs()


@pytest.fixture(scope="module")
def data():
    return rd.translation_data()


@pytest.fixture(scope="module")
def report():
    return rd.tokenization_report()


# -- source and licence ----------------------------------------------------------------------------------

def test_the_source_is_the_pinned_package_and_its_licence():
    assert hsk_sentences_audio.__version__ == rd.DATASET_VERSION == "1.0.0"
    assert rd.DATASET_LICENSE == hsk_sentences_audio.DATASET_LICENSE == "CC-BY-SA-4.0"
    assert rd.DATASET_URL == "https://pypi.org/project/hsk-sentences-audio/"
    for part in (rd.DATASET_NAME, rd.DATASET_VERSION, rd.DATASET_URL, rd.DATASET_LICENSE, rd.CODE_LICENSE):
        assert part in rd.ATTRIBUTION
    pin = f"{rd.DATASET_NAME}=={rd.DATASET_VERSION}"
    requirements = [line.split("#", 1)[0].strip() for line in (ROOT / "requirements.in").read_text().splitlines()]
    assert pin in requirements
    assert f'"{pin}"' in re.search(r"^book = \[.*\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(0)


# -- filtering ---------------------------------------------------------------------------------------------

def test_every_record_is_kept_or_dropped_by_exactly_one_rule(loaded):
    pairs, report = loaded
    records = hsk_sentences_audio.load_sentences()
    assert report.version == rd.DATASET_VERSION
    assert report.total == len(records) == 4354
    assert report.kept == len(pairs)
    assert list(report.dropped) == list(rd.RULES)
    assert report.total == report.kept + sum(report.dropped.values())
    ids = [p.id for p in pairs] + [i for rule in rd.RULES for i in report.dropped_ids[rule]]
    assert sorted(ids) == sorted(r["id"] for r in records)  # each record accounted for once
    assert all(len(report.dropped_ids[rule]) == n for rule, n in report.dropped.items())


def test_the_counts_of_1_0_0(loaded):
    _, report = loaded
    # regression numbers of the pinned data (each is recomputed from its rule in the next test)
    assert report.dropped == {"empty": 0, "placeholder": 80, "one_word": 4, "chinese_in_english": 2, "note": 1,
                              "alternatives": 0, "segmentation": 0, "duplicate": 2}
    assert report.kept == 4265
    assert report.shared_english == 76


def test_each_rule_counts_what_it_says(loaded):
    _, report = loaded
    records = {r["id"]: r for r in hsk_sentences_audio.load_sentences()}
    en = {i: r["translation"]["en"] for i, r in records.items()}
    # recomputed from the raw records, applying the rules in order
    placeholders = {i for i, e in en.items() if e.lower().startswith("placeholder")}
    one_word = {i for i, e in en.items() if len(e.split()) == 1} - placeholders
    chinese_in_english = {i for i, e in en.items() if CJK.search(e)} - placeholders - one_word
    note = {i for i, e in en.items() if re.search(r"[()\[\]]", e)} - placeholders - one_word - chinese_in_english
    assert set(report.dropped_ids["placeholder"]) == placeholders and len(placeholders) >= 80
    assert set(report.dropped_ids["one_word"]) == one_word
    assert set(report.dropped_ids["chinese_in_english"]) == chinese_in_english
    assert set(report.dropped_ids["note"]) == note
    for i in report.dropped_ids["duplicate"]:  # an earlier record has the same English (tokenized) and Chinese
        r = records[i]
        key = (rd.tokenize_english(r["translation"]["en"]), r["chinese"])
        assert any((rd.tokenize_english(o["translation"]["en"]), o["chinese"]) == key
                   for o in records.values() if o["id"] < i)


def test_no_kept_pair_breaks_a_rule(loaded):
    pairs, _ = loaded
    records = {r["id"]: r for r in hsk_sentences_audio.load_sentences()}
    for p in pairs:
        assert p.english and p.chinese
        assert not p.english.lower().startswith("placeholder"), p
        assert len(p.english.split()) > 1, p
        assert not CJK.search(p.english), p
        assert not re.search(r"[()\[\]/]", p.english), p
        assert "".join(p.words) == p.chinese, p  # the segmentation spells the sentence, punctuation included
        assert p.level in rd.LEVELS and p.level == records[p.id]["hsk_level"]
        assert (p.english, p.chinese) == (records[p.id]["translation"]["en"].strip(), records[p.id]["chinese"])
    keys = Counter((" ".join(rd.tokenize_english(p.english)), p.chinese) for p in pairs)
    assert max(keys.values()) == 1  # no duplicate left
    assert max(len(rd.tokenize_english(p.english)) for p in pairs) <= 20  # no length cut is needed
    assert max(len(p.chinese) for p in pairs) <= 20


def test_load_pairs_returns_a_fresh_list(loaded):
    pairs, _ = loaded
    again, _ = rd.load_pairs()
    again.clear()  # a caller's list and report, not the cache
    rd.load_pairs()[1].dropped["placeholder"] = -1
    pairs_now, report_now = rd.load_pairs()
    assert len(pairs_now) == len(pairs) > 0 and report_now.dropped["placeholder"] > 0


# -- tokenization -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, tokens", [
    ("Hello, teacher!", ["hello", ",", "teacher", "!"]),
    ("It's raining—what should we do?", ["it's", "raining", "—", "what", "should", "we", "do", "?"]),
    ("I don\u2019t know.", ["i", "don't", "know", "."]),  # a curly apostrophe reads as a straight one
    ("China has 1.4 billion people.", ["china", "has", "1.4", "billion", "people", "."]),
    ("This county has 100,000 households.", ["this", "county", "has", "100,000", "households", "."]),
    ("We must hand-wash; 20% off!", ["we", "must", "hand", "-", "wash", ";", "20", "%", "off", "!"]),
    ("The school's 20th anniversary", ["the", "school's", "20th", "anniversary"]),
])
def test_tokenize_english(text, tokens):
    assert rd.tokenize_english(text) == tokens


def test_tokenize_chinese_characters_and_words(loaded):
    pairs, _ = loaded
    first = pairs[0]
    assert first.chinese == "老师，您好！"
    assert rd.tokenize_chinese(first, "words") == ["老师", "，", "您", "好", "！"]
    assert rd.tokenize_chinese(first, "characters") == ["老", "师", "，", "您", "好", "！"]
    assert rd.tokenize_chinese("我 爱你", "characters") == ["我", "爱", "你"]
    assert rd.tokenize_chinese(first) == rd.tokenize_chinese(first, rd.CHINESE_TOKENIZATION)
    for p in pairs:
        assert "".join(rd.tokenize_chinese(p, "words")) == "".join(rd.tokenize_chinese(p, "characters"))


def test_the_docstring_table_is_what_the_report_measures(report):
    rows = re.findall(r"^ +(Chinese|English) (\S+) +(\d+) +(\d+) +([\d.]+)% +([\d.]+)% +([\d.]+)$",
                      rd.__doc__, re.M)
    assert len(rows) == 4
    for language, name, vocab, once, oov, unk, length in rows:
        got = report[language.lower()][name]
        assert (got["vocab"], got["singletons"]) == (int(vocab), int(once)), (language, name)
        assert round(100 * got["test_oov"], 2) == float(oov), (language, name)
        assert round(100 * got["test_unk"], 2) == float(unk), (language, name)
        assert got["mean_length"] == float(length), (language, name)


def test_the_chinese_choice_follows_from_the_numbers(report):
    chosen = report["chosen"]["chinese"]
    assert chosen == rd.CHINESE_TOKENIZATION
    other = next(t for t in rd.CHINESE_TOKENIZATIONS if t != chosen)
    c, o = report["chinese"][chosen], report["chinese"][other]
    # the reasons the docstring gives: far fewer unseen test tokens and types seen once ...
    assert c["test_oov"] < o["test_oov"] / 4
    assert c["test_unk"] < o["test_unk"]
    assert c["singletons"] < o["singletons"] / 4 and c["vocab"] < o["vocab"]
    # ... for sequences "about a third longer", not much more
    assert 1.0 < c["mean_length"] / o["mean_length"] < 1.5


def test_the_english_trade_off_is_the_one_the_docstring_states(report):
    words, bpe = report["english"]["words"], report["english"][f"bpe{rd.BPE_MERGES}"]
    assert report["chosen"]["english"] == "words"
    assert bpe["test_oov"] < words["test_oov"] / 10  # BPE: almost no unknown English ...
    assert bpe["mean_length"] / words["mean_length"] > 1.3  # ... for sources "half again as long"
    assert report["split"] == {s: len(ps) for s, ps in rd.split_pairs().items()}


def test_the_quick_bpe_learns_chapter_1s_merges():
    """real_data.learn_bpe_quickly is chapter 1's learn_bpe, kept counts instead of recounting: the same merges in the
    same order, ties included, on 13b's English (the first 300 merges; all 1,000 take learn_bpe 8 s) and on small
    random corpora, where ties are everywhere."""
    import random

    from transformer_lite.book.check.ch01 import BPE_CORPUS, learn_bpe

    words = Counter(w for p in rd.split_pairs()["train"] for w in rd.tokenize_english(p.english))
    assert rd.learn_bpe_quickly(words, 300) == learn_bpe(words, num_merges=300)
    assert rd.learn_bpe_quickly(BPE_CORPUS, 10) == learn_bpe(BPE_CORPUS, num_merges=10)
    rng = random.Random(0)
    for _ in range(300):
        corpus = {"".join(rng.choice("abc") for _ in range(rng.randint(1, 7))): rng.randint(1, 3)
                  for _ in range(rng.randint(1, 12))}
        n = rng.randint(1, 8)
        try:
            expected = learn_bpe(corpus, num_merges=n)
        except ValueError:  # more merges than pairs
            with pytest.raises(ValueError):
                rd.learn_bpe_quickly(corpus, n)
            continue
        assert rd.learn_bpe_quickly(corpus, n) == expected, (corpus, n)


def test_tokenization_report_is_not_changed_by_its_caller(report):
    report["chinese"]["words"]["vocab"] = -1
    assert rd.tokenization_report()["chinese"]["words"]["vocab"] > 0


# -- the split ------------------------------------------------------------------------------------------------

def test_split_sizes(loaded, splits):
    pairs, _ = loaded
    assert list(splits) == ["train", "dev", "test"]
    assert {s: len(ps) for s, ps in splits.items()} == {"train": 3415, "dev": 425, "test": 425}  # 1.0.0
    assert sorted(p.id for ps in splits.values() for p in ps) == sorted(p.id for p in pairs)


def test_every_level_has_its_share_in_every_split(splits):
    total = Counter(p.level for ps in splits.values() for p in ps)
    assert sorted(total) == list(rd.LEVELS)
    for level in rd.LEVELS:
        for split, share in (("dev", 0.1), ("test", 0.1), ("train", 0.8)):
            got = sum(p.level == level for p in splits[split]) / total[level]
            assert abs(got - share) < 0.015, (level, split, got)


def test_no_sentence_is_in_two_splits(splits):
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not {p.chinese for p in splits[a]} & {p.chinese for p in splits[b]}, (a, b)
        english = lambda ps: {" ".join(rd.tokenize_english(p.english)) for p in ps}  # noqa: E731
        assert not english(splits[a]) & english(splits[b]), (a, b)


def test_pairs_that_share_their_english_stay_together(loaded, splits):
    pairs, report = loaded
    split_of = {p.id: s for s, ps in splits.items() for p in ps}
    by_english = {}
    for p in pairs:
        by_english.setdefault(" ".join(rd.tokenize_english(p.english)), []).append(p.id)
    shared = [ids for ids in by_english.values() if len(ids) > 1]
    assert sum(map(len, shared)) == report.shared_english > 0
    assert all(len({split_of[i] for i in ids}) == 1 for ids in shared)


def test_the_split_is_deterministic_across_runs_and_hash_seeds(splits):
    assert rd.split_pairs() == splits
    probe = ("from transformer_lite.book import real_data as rd; "
             "print(' '.join(p.id for p in rd.split_pairs()['test']))")
    ids = [subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONHASHSEED=seed), timeout=300).stdout.split()
           for seed in ("1", "2")]
    assert ids[0] == ids[1] == [p.id for p in splits["test"]]


def test_split_fractions_and_subsets(loaded):
    pairs, _ = loaded
    wider = rd.split_pairs(pairs, dev_fraction=0.05, test_fraction=0.2)
    assert abs(len(wider["test"]) / len(pairs) - 0.2) < 0.01 and abs(len(wider["dev"]) / len(pairs) - 0.05) < 0.01
    level1 = [p for p in pairs if p.level == 1]
    small = rd.split_pairs(level1)
    assert sum(map(len, small.values())) == len(level1)
    assert {p.id for p in small["test"]} == {p.id for p in rd.split_pairs()["test"] if p.level == 1}


# -- what a model trains on -------------------------------------------------------------------------------------

def test_translation_data_shapes_and_format(data, splits):
    assert isinstance(data, TranslationData)
    N, M = len(splits["train"]), len(splits["test"])
    assert data.train_src.shape[0] == N and data.train_tgt.shape[0] == N
    assert data.test_src.shape[0] == M and data.test_tgt.shape[0] == M
    assert data.train_src.dtype == data.train_tgt.dtype == torch.long
    assert (data.train_tgt[:, 0] == BOS).all() and (data.test_tgt[:, 0] == BOS).all()
    assert (data.train_tgt == EOS).sum(dim=1).eq(1).all()  # one EOS per row
    assert data.train_src.max() < len(data.src_vocab) and data.train_tgt.max() < len(data.tgt_vocab)
    en, zh = data.train_pairs[0]
    p = splits["train"][0]
    assert (en, zh) == (" ".join(rd.tokenize_english(p.english)), " ".join(rd.tokenize_chinese(p)))
    assert data.train_src.shape[1] == max(len(en.split()) for en, _ in data.train_pairs)
    assert data.train_tgt.shape[1] == max(len(zh.split()) for _, zh in data.train_pairs) + 2
    assert not {e for e, _ in data.train_pairs} & {e for e, _ in data.test_pairs}


def test_the_vocabularies_hold_the_tokens_seen_min_freq_times(data):
    for side, vocab in ((0, data.src_vocab), (1, data.tgt_vocab)):
        counts = Counter(t for pair in data.train_pairs for t in pair[side].split())
        assert set(vocab.itos[4:]) == {t for t, n in counts.items() if n >= rd.MIN_FREQ}
        assert [counts[t] for t in vocab.itos[4:]] == sorted((counts[t] for t in vocab.itos[4:]), reverse=True)
    # everything seen once in training is <unk>, so the model meets <unk> while it trains
    assert (data.train_src == UNK).any() and (data.train_tgt == UNK).any()
    full = rd.translation_data(min_freq=1)
    assert not (full.train_src == UNK).any() and len(full.src_vocab) > len(data.src_vocab)


def test_round_trip_through_the_vocabularies(data):
    for en, zh in data.train_pairs[:200] + data.test_pairs[:200]:
        want_en = " ".join(t if t in data.src_vocab else "<unk>" for t in en.split())
        assert data.src_vocab.decode(data.src_vocab.encode(en)) == want_en
        want_zh = " ".join(t if t in data.tgt_vocab else "<unk>" for t in zh.split())
        assert data.tgt_vocab.decode(data.tgt_vocab.encode(zh, add_bos_eos=True)) == want_zh
    row = data.test_tgt[0]
    assert data.tgt_vocab.decode(row) == " ".join(t if t in data.tgt_vocab else "<unk>"
                                                   for t in data.test_pairs[0][1].split())
    assert data.encode_source(data.test_pairs[0][0]).tolist() == [data.test_src[0][data.test_src[0] != PAD].tolist()]


def test_dev_and_word_options(data, splits):
    dev = rd.translation_data(held_out="dev")
    assert [e for e, _ in dev.test_pairs] == [" ".join(rd.tokenize_english(p.english)) for p in splits["dev"]]
    assert dev.train_pairs == data.train_pairs
    words = rd.translation_data(chinese="words")
    assert words.train_tgt.shape[1] < data.train_tgt.shape[1]  # words make shorter targets
    assert words.train_pairs[0][1] == " ".join(splits["train"][0].words)


def test_the_training_code_trains_on_it(data):
    from transformer_lite.book.pretrained import RECIPE
    from transformer_lite.model import Transformer
    from transformer_lite.training import paper_adam, train

    torch.manual_seed(0)
    model = Transformer(RECIPE.model.replace(src_vocab_size=len(data.src_vocab), tgt_vocab_size=len(data.tgt_vocab)))
    history = train(model, data.train_src, data.train_tgt, steps=3, batch_size=8, optimizer=paper_adam(
        model.parameters()), progress=False)
    assert len(history.loss) == 3 and all(x > 0 and x == x for x in history.loss)


# -- bad arguments --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, exc, name", [
    (lambda: rd.tokenize_english(3), TypeError, "text"),
    (lambda: rd.tokenize_chinese(["我"], "characters"), TypeError, "sentence"),
    (lambda: rd.tokenize_chinese("我们", "words"), TypeError, "sentence"),
    (lambda: rd.tokenize_chinese("我们", "jieba"), ValueError, "tokenization"),
    (lambda: rd.tokenize_chinese("我们", 1), TypeError, "tokenization"),
    (lambda: rd.split_pairs("pairs"), TypeError, "pairs"),
    (lambda: rd.split_pairs([("hello", "你好")]), TypeError, "pairs"),
    (lambda: rd.split_pairs([]), ValueError, "pairs"),
    (lambda: rd.split_pairs(test_fraction=0), ValueError, "test_fraction"),
    (lambda: rd.split_pairs(dev_fraction="0.1"), TypeError, "dev_fraction"),
    (lambda: rd.split_pairs(dev_fraction=0.5, test_fraction=0.5), ValueError, "dev_fraction \\+ test_fraction"),
    (lambda: rd.translation_data(held_out="train"), ValueError, "held_out"),
    (lambda: rd.translation_data(held_out=None), TypeError, "held_out"),
    (lambda: rd.translation_data(min_freq=0), ValueError, "min_freq"),
    (lambda: rd.translation_data(min_freq=2.0), TypeError, "min_freq"),
    (lambda: rd.translation_data(chinese="pinyin"), ValueError, "chinese"),
    (lambda: rd.tokenization_report(bpe_merges=0), ValueError, "bpe_merges"),
])
def test_bad_arguments_name_the_argument(call, exc, name):
    with pytest.raises(exc, match=name):
        call()
