"""Chapter 13's grammar laboratory (transformer_lite.book.grammar_lab): the swap grammar, the splits, the exact
permutation argument for the Transformer without positions, and the shipped `make grammar-lab` results."""
import collections

import pytest
import torch

from transformer_lite.book import grammar_lab as lab
from transformer_lite.book.capstone import new_model, train_model
from transformer_lite.book.pretrained import RECIPE, load_shipped_translator
from transformer_lite.data import all_translation_pairs, subject_object_swaps, translation_split, translation_task

# -- the swap grammar -------------------------------------------------------------------------------

def test_swap_pairs_share_their_bag_of_words_and_differ_in_translation():
    swaps = subject_object_swaps()
    assert len(swaps) == 450
    for (en, zh), (en2, zh2) in swaps:
        assert en != en2 and sorted(en.split()) == sorted(en2.split())
        assert zh != zh2 and sorted(zh.split()) == sorted(zh2.split())  # the same Chinese words, in another order
    assert swaps[0] == (("the cat sees the dog", "猫 看见 狗"), ("the dog sees the cat", "狗 看见 猫"))
    # in the whole laboratory grammar, the two sentences of a swap pair are the only ones sharing a bag
    bags = collections.Counter(tuple(sorted(en.split())) for en, _ in all_translation_pairs(swaps=True))
    assert collections.Counter(bags.values()) == {1: len(all_translation_pairs()), 2: len(swaps)}


def test_the_swap_sentences_chinese_marks_completion_only_on_actions():
    chinese = collections.defaultdict(set)
    for pair in subject_object_swaps():
        for en, zh in pair:
            chinese[zh].add(en)
    # a state takes no 了 (喜欢 了 reads "came to like"), and "follow" is 跟着 (a bare 跟 reads "with")
    assert not [zh for zh in chinese if "喜欢 了" in zh or "跟着 了" in zh or "跟" in zh.split()]
    assert chinese["猫 昨天 喜欢 狗"] == {"the cat liked the dog yesterday"}
    assert chinese["狗 跟着 鸟"] == {"the dog follows the bird", "the dog followed the bird"}  # Chinese has no tense
    assert chinese["猫 追 了 狗"] == {"the cat chased the dog"}  # an action keeps its 了


def test_the_shipped_translators_data_do_not_change_with_the_laboratory():
    plain = all_translation_pairs()
    assert all_translation_pairs(swaps=True)[:len(plain)] == plain
    data = translation_task(RECIPE.n_train, RECIPE.n_test, seed=RECIPE.data_seed)
    shipped, _, _ = load_shipped_translator()
    assert (len(data.src_vocab), len(data.tgt_vocab)) == (shipped.config.src_vocab_size, shipped.config.tgt_vocab_size)
    assert not {w for (en, _), _ in subject_object_swaps() for w in en.split()} <= set(data.src_vocab.itos)
    with pytest.raises(TypeError, match="swaps"):
        all_translation_pairs(swaps="yes")


def test_a_swaps_vocabulary_holds_the_new_words_and_keeps_the_old_ids():
    data = translation_task(100, 50, seed=0)
    lab_data = translation_split(data.train_pairs, data.test_pairs, swaps=True)
    assert lab_data.src_vocab.itos[:len(data.src_vocab)] == data.src_vocab.itos
    assert {"chases", "student", "bit"} <= set(lab_data.src_vocab.itos) and "看见" in lab_data.tgt_vocab


# -- the splits -------------------------------------------------------------------------------------

def test_swap_split_holds_out_whole_pairs():
    data, pairs = lab.swap_split(seed=1)
    train = {en for en, _ in data.train_pairs}
    assert len(pairs) == round(lab.SWAP_TEST_FRACTION * 450) and len(data.test_pairs) == 2 * len(pairs)
    for i, j in pairs:
        (a, za), (b, zb) = data.test_pairs[i], data.test_pairs[j]
        assert sorted(a.split()) == sorted(b.split()) and za != zb and a not in train and b not in train
    assert sum(en.startswith("the ") and len(en.split()) >= 5 and "is" not in en.split() for en in train) > 500


def test_length_split_trains_short_and_tests_long():
    data = lab.length_split(seed=0, k_long=16)
    train_len = [len(en.split()) for en, _ in data.train_pairs]
    assert sum(n > lab.MAX_TRAIN_WORDS for n in train_len) == 16
    assert min(len(en.split()) for en, _ in data.test_pairs) >= lab.MIN_TEST_WORDS
    assert lab.length_split(seed=0, k_long=0).test_pairs == data.test_pairs  # the intervention keeps the test
    with pytest.raises(ValueError, match="k_long"):
        lab.length_split(seed=0, k_long=-1)


def test_systematic_split_is_balanced_and_the_intervention_adds_k_of_each_combination():
    for k in (0, 4):
        data = lab.systematic_split(seed=2, k=k)
        test = collections.Counter(lab.combination(*p) for p in data.test_pairs)
        train = collections.Counter(lab.combination(*p) for p in data.train_pairs)
        assert test == {name: lab.N_TEST_PER_COMBINATION for name in lab.HELD_OUT}
        assert all(train[name] == k for name in lab.HELD_OUT)
        assert not {en for en, _ in data.train_pairs} & {en for en, _ in data.test_pairs}
    with pytest.raises(ValueError, match="k must be at most"):
        lab.systematic_split(k=1000)
    with pytest.raises(TypeError, match="seed"):
        lab.systematic_split(seed="0")


def test_size_split_keeps_one_test_set():
    a, b = lab.size_split(50, seed=0), lab.size_split(200, seed=1)
    assert a.test_pairs == b.test_pairs and len(a.train_pairs) == 50 and len(b.train_pairs) == 200
    with pytest.raises(ValueError, match="n_train"):
        lab.size_split(0)


# -- the exact argument ----------------------------------------------------------------------------

def test_swap_permutation_maps_one_sentence_onto_the_other():
    a, b = "the cat sees the dog", "the dog sees the cat"
    pi = lab.swap_permutation(a, b)
    assert [a.split()[i] for i in pi] == b.split() and sorted(pi) == list(range(5))
    with pytest.raises(ValueError, match="swapped must hold the same words"):
        lab.swap_permutation(a, "the cat sees the bird")
    with pytest.raises(TypeError, match="sentence"):
        lab.swap_permutation(["the"], b)


def _check_no_position_model(model, data, pairs):
    first, second = [data.test_pairs[i][0] for i, _ in pairs], [data.test_pairs[j][0] for _, j in pairs]
    src_a, src_b = data.encode_source(first), data.encode_source(second)
    with torch.no_grad():
        mem_a, mem_b = model.encode(src_a), model.encode(src_b)
        for n, (a, b) in enumerate(zip(first, second)):
            pi = lab.swap_permutation(a, b)
            torch.testing.assert_close(mem_b[n, : len(pi)], mem_a[n, pi], atol=1e-5, rtol=1e-5)
        tgt = data.test_tgt[[i for i, _ in pairs], :-1]
        torch.testing.assert_close(model.decode(tgt, mem_b, src_b), model.decode(tgt, mem_a, src_a), atol=1e-5,
                                   rtol=1e-5)
    out = lab.translate(model, data, first + second)
    assert out[: len(first)] == out[len(first):]  # the same translation for both sentences of every pair
    return out


def test_without_positions_both_sentences_of_a_swap_pair_get_one_translation_fresh():
    data, pairs = lab.swap_split(seed=0)
    model = new_model("no_positions", data, seed=3).eval()
    _check_no_position_model(model, data, pairs)
    positioned = new_model("transformer", data, seed=3).eval()
    with torch.no_grad():  # with positions the memory of the swapped sentence is not a permutation
        a, b = data.encode_source([data.test_pairs[0][0], data.test_pairs[1][0]])
        pi = lab.swap_permutation(data.test_pairs[0][0], data.test_pairs[1][0])
        assert not torch.allclose(positioned.encode(b[None])[0], positioned.encode(a[None])[0, pi], atol=1e-3)


@pytest.mark.trains
def test_without_positions_both_sentences_of_a_swap_pair_get_one_translation_trained():
    data, pairs = lab.swap_split(seed=0)
    model, history = train_model("no_positions", data, seed=0, steps=40)
    assert sum(history.loss[-5:]) / 5 < 0.7 * history.loss[0]  # it did learn something
    _check_no_position_model(model, data, pairs)
    scores = lab.swap_scores(lab.translate(model, data), data, pairs)
    assert scores["identical_pairs"] == len(pairs) and scores["pair_accuracy"] == 0 and scores["at_most_one_right"]


def test_swap_scores_counts_sentences_pairs_and_identical_outputs():
    data, pairs = lab.swap_split(seed=0)
    gold = [zh for _, zh in data.test_pairs]
    assert lab.swap_scores(gold, data, pairs)["pair_accuracy"] == 1.0
    same = [gold[i] for i, _ in pairs for _ in (0, 1)]  # the first sentence's translation, twice
    s = lab.swap_scores(same, data, pairs)
    assert s["sentence_accuracy"] == 0.5 and s["pair_accuracy"] == 0 and s["identical_pairs"] == len(pairs)
    with pytest.raises(ValueError, match="outputs must hold one translation per test pair"):
        lab.swap_scores(gold[:-1], data, pairs)
    with pytest.raises(TypeError, match="sentences"):
        lab.translate(new_model("gru", data), data, "the cat sees the dog")


def test_measure_refuses_unknown_experiments():
    with pytest.raises(ValueError, match="only"):
        lab.measure(only=["colours"])


# -- the shipped results ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shipped():
    return lab.grammar_lab_results()


def test_the_shipped_results_have_every_experiment_seed_and_spread(shipped):
    assert shipped["seeds"] == list(lab.SEEDS) and shipped["threads"] == 1 and shipped["command"] == "make grammar-lab"
    assert {"torch", "processor", "recipe", "total_seconds", "total_cpu_seconds"} <= set(shipped)

    def stats_ok(s):
        return len(s["per_seed"]) == len(lab.SEEDS) and s["min"] <= s["mean"] <= s["max"] and \
            abs(sum(s["per_seed"]) / len(s["per_seed"]) - s["mean"]) < 1e-3

    swaps = shipped["swaps"]["results"]
    assert set(swaps) == set(lab.MODELS)
    assert all(stats_ok(r["sentence_accuracy"]) and stats_ok(r["pair_accuracy"]) for r in swaps.values())
    for part, ks in (("length", lab.LONG_KS), ("systematic", lab.SYSTEMATIC_KS)):
        for rows in shipped[part]["results"].values():
            assert list(rows) == [str(k) for k in ks] and all(stats_ok(r["accuracy"]) for r in rows.values())
    for rows in shipped["curve"]["results"].values():
        assert list(rows) == [str(n) for n in lab.SIZES] and all(stats_ok(r["accuracy"]) for r in rows.values())
    for rows in shipped["curve"]["longer"]["results"].values():
        assert list(rows) == [str(n) for n in lab.LONGER_SIZES] and all(stats_ok(r["accuracy"]) for r in rows.values())
    for rows in shipped["cooccurrence"]["results"].values():
        assert list(rows) == [str(k) for k in lab.CROSSED_KS]
        assert all(stats_ok(r["accuracy"]) and stats_ok(r["seen_verb"]) for r in rows.values())
    assert shipped["total_seconds"] == pytest.approx(sum(shipped[k]["seconds"] for k in lab.EXPERIMENTS), abs=0.2)
    assert shipped["systematic"]["n_test"] == len(lab.HELD_OUT) * lab.N_TEST_PER_COMBINATION


def test_the_trained_no_position_models_gave_one_translation_per_swap_pair(shipped):
    r = shipped["swaps"]["results"]["no_positions"]
    n = shipped["swaps"]["n_test_pairs"]
    assert r["identical_pairs"]["per_seed"] == [n] * len(lab.SEEDS) and all(r["at_most_one_right"])
    assert r["pair_accuracy"]["max"] == 0 and r["sentence_accuracy"]["max"] <= 0.5


def test_crossed_pairs_are_new_verb_object_pairs_and_the_split_adds_k_of_each():
    grammar = {zh for _, zh in all_translation_pairs()}
    for name, (_old_en, new_en, _old_zh, new_zh) in lab.CROSSED.items():
        pairs = lab.crossed_pairs(name)
        assert len(pairs) > lab.N_TEST_PER_CROSSED + max(lab.CROSSED_KS)
        assert all(new_en in en.split() and new_zh in zh.split() and zh not in grammar for en, zh in pairs)
        # in the grammar the new object comes only with its own verb
        assert all(lab.SEEN_VERB[name] in zh.split() for en, zh in all_translation_pairs() if new_en in en.split()
                   and " is " not in f" {en} " and "have" not in en.split() and "has" not in en.split())
    data = lab.cooccurrence_split(seed=1, k=2)
    crossed = {p: n for n in lab.CROSSED for p in lab.crossed_pairs(n)}
    assert collections.Counter(crossed.get(p) for p in data.train_pairs) == dict(
        {None: lab.N_GRAMMAR}, **{n: 2 for n in lab.CROSSED})
    assert [crossed[p] for p in data.test_pairs] == [n for n in lab.CROSSED for _ in range(lab.N_TEST_PER_CROSSED)]
    assert lab.cooccurrence_split(seed=1, k=0).test_pairs == data.test_pairs
    with pytest.raises(ValueError, match="name must be one of"):
        lab.crossed_pairs("eat + tea")
