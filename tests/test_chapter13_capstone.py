"""Chapter 13 (capstone: a tiny translator): the chapter's claims, checked through the package.

Claims about the data, and claims about the SHIPPED translator (the same weights on every machine;
these tests never train it). What the chapter says about a translator trained live is a range,
re-checked with other seeds, threads and CPU code paths by tests/test_portability.py.
"""
import collections
import json

import pytest
import torch

from transformer_lite.book.pretrained import RECIPE, tiny_translator
from transformer_lite.data import BOS, EOS, PAD, UNK, all_translation_pairs, translation_task
from transformer_lite.decoding import beam_search, exact_match, greedy_decode


@pytest.fixture(scope="module")
def data():
    return translation_task(RECIPE.n_train, RECIPE.n_test, seed=RECIPE.data_seed)


def test_held_out_sentences_are_never_seen_in_training(data):
    assert not {en for en, _ in data.train_pairs} & {en for en, _ in data.test_pairs}
    assert len(data.test_pairs) == RECIPE.n_test and len(data.train_pairs) == RECIPE.n_train


def test_the_chapters_example_and_its_reordering():
    pairs = dict(all_translation_pairs())
    assert pairs["she eats rice at school today"] == "她 今天 在 学校 吃 饭"
    links = [(0, 0), (5, 1), (3, 2), (4, 3), (1, 4), (2, 5)]  # the chapter's hand alignment
    en, zh = "she eats rice at school today".split(), pairs["she eats rice at school today"].split()
    gloss = {"she": "她", "today": "今天", "at": "在", "school": "学校", "eats": "吃", "rice": "饭"}
    assert all(gloss[en[i]] == zh[j] for i, j in links)
    assert sum((i - a) * (j - b) < 0 for (i, j) in links for (a, b) in links) // 2 > 0  # lines cross


def test_time_words_move_to_the_front_and_places_before_the_verb(data):
    for en, zh in data.train_pairs:
        words_en, words_zh = en.split(), zh.split()
        if words_en[-1] == "today" and "?" not in words_en:
            assert words_zh[1] == "今天" or words_zh[1:3] == ["今天"], (en, zh)  # right after a one-word subject
        if " at school" in en:
            assert words_zh.index("在") < len(words_zh) - 2  # the place phrase comes before verb + object


def test_watch_and_write_only_ever_come_with_one_object_in_training(data):
    # the co-occurrence the error analysis blames for "she watches football" -> 她 看 电视
    objects = collections.defaultdict(set)
    for en, _ in data.train_pairs:
        w = en.split()
        for i, v in enumerate(w[:-1]):
            if v.startswith("watch"):
                objects["watch"].add(w[i + 1])
            if v.startswith("writ") or v == "wrote":
                objects["write"].add(w[i + 1])
    assert objects["watch"] == {"tv"} and objects["write"] == {"letters"}


def test_unknown_words_become_unk(data):
    assert data.src_vocab.encode("she has six cats") == [data.src_vocab.stoi["she"], data.src_vocab.stoi["has"],
                                                          UNK, data.src_vocab.stoi["cats"]]


@pytest.fixture(scope="module")
def trained():
    model, data, report = tiny_translator(progress=False)
    assert report["source"] == "shipped"
    return model, data, report


def test_report_accuracy_is_reproduced_and_meets_the_aim(trained):
    model, data, report = trained
    assert report["test_accuracy"] >= 0.97
    n = 200
    acc = exact_match(model, data.test_src[:n], data.test_tgt[:n], BOS, EOS)
    assert acc >= 0.95
    assert abs(exact_match(model, data.test_src[:n], data.test_tgt[:n], BOS, EOS, beam_size=4) - acc) <= 0.02


def test_last_layer_cross_attention_aligns_words(trained):
    model, data, _ = trained
    dictionary = {"学校": {"school"}, "公园": {"park"}, "今天": {"today"}, "猫": {"cat", "cats"},
                  "狗": {"dog", "dogs"}, "饭": {"rice"}, "茶": {"tea"}}
    n = 150
    maps = model.attention_maps(data.test_src[:n], data.test_tgt[:n, :-1])
    cross = maps.cross[-1].mean(1)
    hits = total = 0
    for k, (en, zh) in enumerate(data.test_pairs[:n]):
        for t, w in enumerate(zh.split()):
            if w in dictionary:
                total += 1
                hits += en.split()[int(cross[k, t, : len(en.split())].argmax())] in dictionary[w]
    assert total > 20 and hits / total > 0.8
    rows = data.test_tgt[:n, :-1] != PAD
    peaks = [c.mean(1).amax(-1)[rows].mean() for c in maps.cross]
    assert peaks[-1] > peaks[0]


def test_error_analysis_patterns(trained):
    model, data, _ = trained
    sentences = ["she watches football", "i have", "i have a cat and a dog", "she has six cats"]
    out = greedy_decode(model, data.encode_source(sentences), 20, BOS, EOS)
    words = [data.tgt_vocab.decode(r.tolist()).split() for r in out]
    train_pairs = {p for _, zh in data.train_pairs for w in [zh.split()] for p in zip(w, w[1:])}
    assert ("看", "足球") not in train_pairs  # the right verb + object was never seen together ...
    assert tuple(words[0][-2:]) in train_pairs and words[0] != "她 看 足球".split()  # ... the model writes a seen pair
    assert len(words[1]) > 2  # the fragment is completed or runs on
    assert len(words[2]) < len("我 有 一 只 猫 和 一 只 狗".split())  # part of the input is dropped
    assert all("<unk>" not in w for w in words)
    beam = beam_search(model, data.encode_source(["i learned chinese"]), 4, 20, BOS, EOS)
    assert "学" in data.tgt_vocab.decode(beam[0].tolist()).split()


# ---- the exercises: the checks accept answers computed here independently, and their answers are robust --------

def test_exercise_checks_accept_independent_answers(trained, monkeypatch):
    from transformer_lite.book import check
    from transformer_lite.decoding import sequence_log_prob

    monkeypatch.setenv(check.STRICT_ENV, "1")  # a rejected right answer raises
    model, data, report = trained

    def exact(pred, ref):
        cut = [r[: r.index(EOS) + 1] if EOS in r else r for r in pred.tolist()]
        return sum(p == (r[: r.index(EOS) + 1]) for p, r in zip(cut, ref.tolist())) / len(ref)

    assert check.exercise_13_1(exact)

    src = data.test_src[:100]
    log_p = sequence_log_prob(model, src, greedy_decode(model, src, 20, BOS, EOS), EOS)
    least, second = log_p.sort().values[:2]
    assert second - least > 1.0  # the least confident sentence is so by a wide margin: the same on any CPU
    assert check.exercise_13_2(int(log_p.argmin()))

    rows = [n for n, (_, zh) in enumerate(data.test_pairs) if "明天" in zh.split()]
    cross = model.attention_maps(data.test_src[rows], data.test_tgt[rows, :-1]).cross[-1].mean(1)
    counts, margins = collections.Counter(), []
    for k, n in enumerate(rows):
        en, zh = data.test_pairs[n]
        row = cross[k, zh.split().index("明天"), : len(en.split())]
        counts[en.split()[int(row.argmax())]] += 1
        top2 = row.topk(2).values
        margins.append(float(top2[0] - top2[1]))
    assert min(margins) > 0.1 and counts["tomorrow"] == 0  # a clear peak, and not on "tomorrow"
    assert check.exercise_13_3(counts)

    # 13.4, the bug hunt: the suspect (encoder without the padding mask) passes the leak test, fails the padding test
    from transformer_lite.pitfalls import TransformerEncoderPaddingNotMasked

    suspect = TransformerEncoderPaddingNotMasked(model.config).eval()
    suspect.load_state_dict(model.state_dict())
    with torch.no_grad():
        s = data.encode_source(data.test_pairs[0][0])
        padded = torch.cat([s, torch.full((1, 5), PAD)], 1)
        change = (suspect.encode(padded)[:, : s.shape[1]] - suspect.encode(s)).abs().max().item()
        assert (model.encode(padded)[:, : s.shape[1]] - model.encode(s)).abs().max().item() < 1e-4
    assert exact_match(suspect, data.test_src, data.test_tgt, BOS, EOS) >= report["test_accuracy"] - 0.01  # silent
    assert check.exercise_13_4("encoder padding mask", change) and change > 1e-2

    src1 = data.encode_source("she watches football")
    out = greedy_decode(model, src1, 20, BOS, EOS)
    ref = torch.tensor([data.tgt_vocab.encode("她 看 足球", add_bos_eos=True)])
    lp_out, lp_ref = sequence_log_prob(model, src1, out, EOS).item(), sequence_log_prob(model, src1, ref, EOS).item()
    assert lp_out - lp_ref > 3  # the model's seen verb-object pair is far more probable than 看 足球
    assert check.exercise_13_5(lp_out, lp_ref)


def test_will_comes_exactly_with_tomorrow_in_the_grammar():
    # exercise 13.3's solution: either word tells the model to write 明天
    pairs = all_translation_pairs()
    assert all(("will" in en.split()) == ("tomorrow" in en.split()) for en, _ in pairs)
    assert any("明天" in zh.split() for _, zh in pairs)


# ---- baselines (the shipped `make capstone` numbers) ----------------------------------------------------

@pytest.fixture(scope="module")
def measured():
    from transformer_lite.book.capstone import capstone_results
    return capstone_results()


def test_the_shipped_baseline_table_says_what_the_chapter_says(measured, trained):
    _, _, report = trained
    rows = measured["baselines"]
    assert set(rows) == {"transformer", "dictionary", "dictionary_ordered", "no_positions", "gru"}
    assert rows["transformer"]["test_accuracy"] == report["test_accuracy"]
    assert rows["dictionary"]["test_accuracy"] < 0.1 < 0.5 < rows["dictionary_ordered"]["test_accuracy"] < 0.8
    for kind in ("gru", "no_positions"):
        assert rows[kind]["test_accuracy"] >= rows["transformer"]["test_accuracy"] - 0.01
        assert rows[kind]["steps"] == RECIPE.steps
    assert abs(rows["gru"]["parameters"] / rows["transformer"]["parameters"] - 1) < 0.1
    assert measured["best_baseline"] == "gru" and measured["recipe"]["seed"] == RECIPE.seed


def test_the_dictionary_refitted_here_gives_the_shipped_number(measured, data):
    from transformer_lite.baselines import DictionaryTranslator
    row = measured["baselines"]["dictionary_ordered"]
    d = DictionaryTranslator(data.train_pairs, row["threshold"], reorder=True)
    assert d.exact_match(data.test_pairs) == row["test_accuracy"]
    assert d.table["books"] == ["书"]


def test_the_bag_of_words_decides_the_sentence():
    pairs = all_translation_pairs()
    assert len({tuple(sorted(en.split())) for en, _ in pairs}) == len(pairs)


def test_the_baseline_table_times_every_row_in_one_run(measured):
    rows = measured["baselines"]
    assert all(r["cpu_seconds"] > 0 for r in rows.values())                   # no row borrows another run's clock
    assert rows["transformer"]["retrained_test_accuracy"] >= rows["transformer"]["test_accuracy"] - 0.01
    assert not {"systematic", "curve"} & set(measured)  # the laboratory's experiments replace them


# ---- the grammar laboratory (the shipped `make grammar-lab` numbers): what the chapter's prose says on them --------

@pytest.fixture(scope="module")
def lab():
    from transformer_lite.book.grammar_lab import grammar_lab_results
    return grammar_lab_results()


def test_the_laboratory_swaps_separate_the_models(lab):
    swaps = lab["swaps"]
    no_pos, with_pos, gru = (swaps["results"][k] for k in ("no_positions", "transformer", "gru"))
    assert no_pos["identical_pairs"]["per_seed"] == [swaps["n_test_pairs"]] * 3 and all(no_pos["at_most_one_right"])
    assert no_pos["pair_accuracy"]["max"] == 0 and no_pos["sentence_accuracy"]["max"] <= 0.5
    assert min(with_pos["pair_accuracy"]["min"], gru["pair_accuracy"]["min"]) >= 0.9
    en, zh, out, en2, zh2, out2 = no_pos["examples"][0]
    assert out == out2 and zh != zh2 and sorted(en.split()) == sorted(en2.split())
    assert round(no_pos["sentence_accuracy"]["mean"], 2) == 0.44                # "at most half (44 % on average)"


def test_the_laboratory_records_the_recipe_it_trained_with(lab):
    import dataclasses

    from transformer_lite.book.grammar_lab import _round
    assert lab["recipe"] == json.loads(json.dumps(_round(dataclasses.asdict(RECIPE))))
    assert lab["recipe"]["model"]["layer_norm_eps"] == RECIPE.model.layer_norm_eps == 1e-5   # not rounded to 0


def test_the_laboratory_systematic_split_needs_no_example(lab):
    rows = lab["systematic"]["results"]
    assert rows["transformer"]["0"]["accuracy"]["min"] == 1.0 and 0.95 <= rows["gru"]["0"]["accuracy"]["min"] < 1.0
    assert lab["systematic"]["n_test"] == 4 * lab["systematic"]["n_test_per_combination"] == 160


def test_the_laboratory_cooccurrence_fails_until_examples_break_it(lab):
    co, ks = lab["cooccurrence"]["results"], lab["cooccurrence"]["ks"]
    assert co["gru"]["0"]["accuracy"]["max"] == 0 and co["gru"]["0"]["seen_verb"]["min"] > 0.9
    t0 = sorted(co["transformer"]["0"]["accuracy"]["per_seed"])
    assert t0[1] < 0.01 and t0[2] > 0.3 and co["transformer"]["0"]["accuracy"]["mean"] < 0.2
    for kind in co:
        means = [co[kind][str(k)]["accuracy"]["mean"] for k in ks]
        assert means == sorted(means) and co[kind][str(ks[-1])]["accuracy"]["min"] >= 0.9


def test_the_laboratory_length_split_fails_until_long_examples_are_added(lab):
    rows, last = lab["length"]["results"], str(lab["length"]["ks"][-1])
    for kind in rows:
        assert rows[kind]["0"]["accuracy"]["max"] < 0.9 and rows[kind][last]["accuracy"]["min"] >= 0.85
        accuracy = rows[kind]["0"]["accuracy"]
        assert accuracy["max"] - accuracy["min"] > 0.1  # "the seeds disagree widely"
    t, g = rows["transformer"]["0"]["accuracy"], rows["gru"]["0"]["accuracy"]
    assert t["min"] < g["max"]  # overlapping ranges: the chapter does not rank them at k = 0


def test_the_laboratory_curve_differs_only_at_the_low_end(lab):
    c, longer = lab["curve"]["results"], lab["curve"]["longer"]["results"]
    for rows in (c, longer):
        t, g = rows["transformer"], rows["gru"]
        assert t["50"]["accuracy"]["max"] < g["50"]["accuracy"]["min"]
        assert t["200"]["accuracy"]["min"] > g["200"]["accuracy"]["max"]
        assert t["100"]["accuracy"]["max"] >= g["100"]["accuracy"]["min"]  # 100 pairs: the seeds overlap
    assert min(c["transformer"]["500"]["accuracy"]["min"], c["gru"]["500"]["accuracy"]["min"]) >= 0.95
    assert lab["curve"]["steps"]["50"] == 100 and lab["curve"]["longer"]["steps"] == 300
