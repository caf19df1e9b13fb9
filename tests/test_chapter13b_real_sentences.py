"""Chapter 13b (capstone II: real sentences): the chapter's claims, checked through the package.

Claims about the data and the split, about the SHIPPED real translator and the SHIPPED baselines (the same on
every machine; these tests never train), and the throughput shape, measured live (marked ``trains``, so
tests/test_portability.py re-runs it with other seeds, threads and CPU code paths).
"""
import collections
import dataclasses

import numpy as np
import pytest
import torch

from transformer_lite.data import UNK
from transformer_lite.metrics import characters, corpus_bleu
from transformer_lite.book import real_data
from transformer_lite.book import real_translator as rt
from transformer_lite.book.runtime import book_seed, num_threads
from transformer_lite.book.throughput import throughput_table


@pytest.fixture(scope="module")
def split():
    pairs, _ = real_data.load_pairs()
    return real_data.split_pairs(pairs)


def test_the_test_split_has_the_training_splits_mix_of_levels(split):
    shares = {}
    for name in ("train", "test"):
        counts = collections.Counter(p.level for p in split[name])
        shares[name] = np.array([counts[lv] / len(split[name]) for lv in real_data.LEVELS])
    assert np.abs(shares["test"] - shares["train"]).max() < 0.01
    assert not {p.english for p in split["train"]} & {p.english for p in split["test"]}


@pytest.fixture(scope="module")
def shipped():
    model, data, report = rt.real_translator()
    outputs = rt.translate_split(model, data)
    hyps = [characters(o.replace("<unk>", "")) for o in outputs]
    refs = [characters(zh) for _, zh in data.test_pairs]
    return model, data, report, outputs, hyps, refs


def test_the_shipped_scores_are_reproduced_by_the_package_bleu(shipped):
    model, data, report, outputs, hyps, refs = shipped
    assert abs(100 * corpus_bleu(hyps, refs).score - report["scores"]["bleu"]) < 0.5
    assert report["scores"]["exact_match"] < 0.05
    tenths = report["loss"]["tenths"]
    assert tenths[-1] < tenths[-2]  # "still falling when it stopped"


def test_level_1_is_translated_far_better_than_the_others(shipped):
    by_level = shipped[2]["scores"]["by_level"]
    assert by_level["1"]["bleu"] > 1.5 * max(v["bleu"] for k, v in by_level.items() if k != "1")


def test_one_unknown_word_costs_a_large_share_of_the_score(shipped):
    # the chapter's intervention: sentences without <unk>, one content word turned into <unk>, nothing else changed
    model, data, _, _, hyps, refs = shipped
    known = [i for i in range(len(data.test_pairs)) if not (data.test_src[i] == UNK).any()]
    assert len(known) > 100
    for seed in (0, 1, 2):  # the word is chosen at random: the claim must not depend on which
        rng = np.random.default_rng(seed)
        src = data.test_src[known].clone()
        for row in src:
            content = [j for j, t in enumerate(row.tolist()) if t > UNK and data.src_vocab.itos[t].isalpha()]
            row[rng.choice(content)] = UNK
        masked = rt.translate_split(model, dataclasses.replace(data, test_src=src,
                                                               test_pairs=[data.test_pairs[i] for i in known]))
        after = 100 * corpus_bleu([characters(o.replace("<unk>", "")) for o in masked], [refs[i] for i in known]).score
        before = 100 * corpus_bleu([hyps[i] for i in known], [refs[i] for i in known]).score
        assert after < 0.8 * before, (seed, before, after)


def test_the_failure_kinds_the_chapter_counts_are_the_reports(shipped):
    model, data, report, outputs, hyps, refs = shipped
    counts = collections.Counter(k for (en, _), h, r in zip(data.test_pairs, hyps, refs) if h != r
                                 for k in rt.failure_kinds(en, data.src_vocab, h, r))
    assert dict(counts) == report["scores"]["failure_counts"]
    assert counts.most_common(1)[0][0] == "unknown source word"  # "unknown words dominate"


@pytest.fixture(scope="module")
def base():
    return rt.baseline_results()


def test_every_transformer_run_beats_every_baseline_run_in_bleu(base):
    t, g, n, dic = base["transformer"], base["gru"], base["no_positions"], base["dictionary"]
    assert t["bleu"]["min"] > g["bleu"]["max"] and t["bleu"]["min"] > n["bleu"]["max"]
    assert min(g["bleu"]["min"], n["bleu"]["min"]) > dic["bleu"]


def test_the_dictionary_is_close_in_chrf_and_far_behind_in_bleu(base):
    t, dic = base["transformer"], base["dictionary"]
    gap = {m: (t[m]["mean"] - dic[m]) / t[m]["mean"] for m in ("bleu", "chrf")}
    assert gap["chrf"] < gap["bleu"] / 3


def test_the_gru_took_less_cpu_time(base):
    assert base["gru"]["cpu_seconds"]["mean"] < base["transformer"]["cpu_seconds"]["mean"]


def test_each_step_of_the_data_size_curve_exceeds_the_seed_spread(base):
    bleus = [r["bleu"] for r in base["data_size_curve"]["runs"]]
    spread = base["transformer"]["bleu"]["max"] - base["transformer"]["bleu"]["min"]
    assert all(b2 - b1 > spread for b1, b2 in zip(bleus, bleus[1:]))


@pytest.mark.trains
def test_with_small_batches_the_transformers_advantage_grows_with_length():
    # timed by the thread's CPU time on one thread, so a busy machine barely moves it; a shape, not a time
    with num_threads(1):
        tab = throughput_table(lengths=(8, 32, 128), batch_size=2, steps=5, seed=book_seed(), clock="cpu")
    assert tab["ratio"][-1] / tab["ratio"][0] > 1.5, tab["ratio"]
