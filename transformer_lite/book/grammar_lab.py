"""Chapter 13's grammar laboratory: five experiments on which the models can differ, each with an intervention.

``make grammar-lab`` (``python -m transformer_lite.book.grammar_lab``) trains every model on one CPU thread,
3 seeds each, and writes the checkout's ``assets/grammar_lab.json``; the chapter reads the shipped numbers
(:func:`grammar_lab_results`). The models are chapter 13's (:func:`.capstone.new_model`): the Transformer, the
GRU with attention of about the same size, and the Transformer without positional encodings, trained with the
book's recipe (batch size, label smoothing, warm-up) for :data:`STEPS` steps (fewer on tiny data sets).

* ``swaps``: subject-object swaps ("the cat sees the dog" / "the dog sees the cat", the same bag of words).
  Training holds the grammar and 70 % of the swap pairs, the test the other 30 %, both sentences of each pair.
  A model without positions gives both sentences of a pair the same translation (:func:`swap_permutation`
  shows why); ``identical_pairs`` counts it on the trained models.
* ``length``: train on sentences of at most :data:`MAX_TRAIN_WORDS` English words, test on sentences of at
  least :data:`MIN_TEST_WORDS`; the intervention adds k long training sentences (:data:`LONG_KS`).
* ``systematic``: four combinations (:data:`HELD_OUT`) never seen in training, :data:`N_TEST_PER_COMBINATION`
  test sentences each; the intervention adds k training sentences of each combination (:data:`SYSTEMATIC_KS`).
* ``cooccurrence``: three verb-object pairs the grammar never makes (:data:`CROSSED`: "watch football", where
  training shows football only with play, 踢); the intervention adds k training sentences of each (:data:`CROSSED_KS`).
* ``curve``: held-out exact match on the same 500 sentences against the number of training pairs
  (:data:`SIZES`), each size with its own step count (:data:`CURVE_STEPS`); the intervention trains the three
  smallest for :data:`LONGER_STEPS` steps (``longer``).

Every number is stored per seed (``per_seed``, in the order of :data:`SEEDS`) with its mean, min and max.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Sequence

import torch

from .._checks import check_int, check_positive_int
from ..data import BOS, EOS, TranslationData, all_translation_pairs, subject_object_swaps, translation_split
from ..decoding import greedy_decode
from ..model import count_parameters
from .capstone import GRU, GRU_LR, train_model
from .i18n import N_
from .pretrained import ASSETS, RECIPE, _processor, output_path
from .runtime import num_threads

RESULTS = ASSETS / "grammar_lab.json"

SEEDS = (0, 1, 2)  # each seed draws its own training pairs (and split) and initialises its own models
STEPS = 200  # training steps of every run but the data-size curve's (the recipe's batch size, 64)
# display names, shown through tr() (the results keep the English); "Transformer" reads the same in Chinese
MODELS = {"transformer": "Transformer", "gru": N_("GRU with attention"),
          "no_positions": N_("Transformer without positions")}
N_GRAMMAR = 3000  # training pairs drawn from the book's grammar (without swaps) in the swap and length experiments

SWAP_TEST_FRACTION = 0.3  # of the swap pairs; both sentences of a test pair are held out
MAX_TRAIN_WORDS, MIN_TEST_WORDS = 7, 9  # the length split, in English words (the grammar has 3 to 10)
N_LENGTH_TEST = 400
LONG_KS = (0, 16, 128)  # long training sentences added (8 to 10 words, none of them a test sentence)

# The systematic split: four combinations, each of two words that training shows, but never together.
HELD_OUT = {
    "she + drink": N_("a subject (she, 她) never with one verb (drink, 喝)"),
    "we + library": N_("a subject (we, 我们) never with one place (in the library, 图书馆)"),
    "tomorrow + learn": N_("a time (tomorrow, 明天) never with one verb (learn, 学)"),
    "park + football": N_("a place (in the park, 公园) never with one activity (play football, 踢 足球)"),
}
N_TEST_PER_COMBINATION = 40  # balanced: the same number of test sentences for every combination
N_SYSTEMATIC_TRAIN = 3000
SYSTEMATIC_KS = (0, 2, 8)  # training sentences added of each held-out combination

# Co-occurrence: in the grammar every object comes with one verb (tv with watch, letters with write, fruit with
# buy). These verb-object pairs are new: the object is one that training shows only with another verb.
CROSSED = {  # name: (English object replaced, by, Chinese object replaced, by)
    "watch + football": ("tv", "football", "电视", "足球"),
    "write + books": ("letters", "books", "信", "书"),
    "buy + tea": ("fruit", "tea", "水果", "茶"),
}
SEEN_VERB = {"watch + football": "踢", "write + books": "看", "buy + tea": "喝"}  # the new object's verb in the grammar
N_TEST_PER_CROSSED = 40
CROSSED_KS = (0, 2, 8, 32)  # training sentences added of each new verb-object pair

SIZES = (50, 100, 200, 500, 1000, 4000)
CURVE_STEPS = {50: 100, 100: 100, 200: 150, 500: 150, 1000: 200, 4000: 200}  # fewer steps for tiny data sets
N_CURVE_TEST = 500
# The intervention on the curve's low end: the same small data sets, trained for as many steps as the rest (does the
# difference there come from the step count, i.e. from the Transformer's warm-up of 100 steps?).
LONGER_SIZES, LONGER_STEPS = (50, 100, 200), 300
EXPERIMENTS = ("swaps", "systematic", "cooccurrence", "length", "curve")


def combination(en: str, zh: str) -> str | None:
    """Which :data:`HELD_OUT` combination the pair (English, Chinese) holds, or None."""
    w = zh.split()
    if w[0] == "她" and "喝" in w:
        return "she + drink"
    if w[0] == "我们" and "图书馆" in w:
        return "we + library"
    if "明天" in w and "学" in w:
        return "tomorrow + learn"
    if "公园" in w and "踢" in w:
        return "park + football"
    return None


def _check_seed_k(seed, k, name="k"):
    check_int("seed", seed)
    check_int(name, k)
    if k < 0:
        raise ValueError(f"{name} must be >= 0, got {k}")


# -- the splits ---------------------------------------------------------------------------------

def swap_split(seed: int = 0, n_grammar: int = N_GRAMMAR) -> tuple[TranslationData, list[tuple[int, int]]]:
    """Training: ``n_grammar`` pairs of the book's grammar and 70 % of the swap pairs (both sentences of each);
    test: the other swap pairs. Returns ``(data, pairs)`` with ``pairs`` the test indices (i, j) of each swap
    pair: ``data.test_pairs[i]`` and ``data.test_pairs[j]`` hold the same English words."""
    check_int("seed", seed)
    check_positive_int("n_grammar", n_grammar)
    rng = random.Random(seed)
    grammar, swaps = all_translation_pairs(), subject_object_swaps()
    if n_grammar > len(grammar):
        raise ValueError(f"n_grammar must be at most {len(grammar)} (the grammar's sentences), got {n_grammar}")
    rng.shuffle(grammar)
    rng.shuffle(swaps)
    n_test = round(SWAP_TEST_FRACTION * len(swaps))
    train = grammar[:n_grammar] + [s for pair in swaps[n_test:] for s in pair]
    rng.shuffle(train)
    test = [s for pair in swaps[:n_test] for s in pair]
    return translation_split(train, test, swaps=True), [(2 * k, 2 * k + 1) for k in range(n_test)]


def length_split(seed: int = 0, k_long: int = 0, n_train: int = N_GRAMMAR) -> TranslationData:
    """Training: ``n_train`` sentences of at most :data:`MAX_TRAIN_WORDS` English words, plus ``k_long`` of
    8 to 10 words; test: :data:`N_LENGTH_TEST` sentences of at least :data:`MIN_TEST_WORDS` words (the same
    for every ``k_long`` of a seed, never a training sentence)."""
    _check_seed_k(seed, k_long, "k_long")
    check_positive_int("n_train", n_train)
    rng = random.Random(seed)
    pairs = all_translation_pairs()
    rng.shuffle(pairs)
    short = [p for p in pairs if len(p[0].split()) <= MAX_TRAIN_WORDS]
    test = [p for p in pairs if len(p[0].split()) >= MIN_TEST_WORDS][:N_LENGTH_TEST]
    in_test = set(test)
    long = [p for p in pairs if len(p[0].split()) > MAX_TRAIN_WORDS and p not in in_test]
    if n_train > len(short):
        raise ValueError(f"n_train must be at most {len(short)} (the short sentences), got {n_train}")
    if k_long > len(long):
        raise ValueError(f"k_long must be at most {len(long)} (the long sentences outside the test), got {k_long}")
    train = short[:n_train] + long[:k_long]
    rng.shuffle(train)
    return translation_split(train, test, swaps=True)


def systematic_split(seed: int = 0, k: int = 0, n_train: int = N_SYSTEMATIC_TRAIN) -> TranslationData:
    """Training: ``n_train`` pairs without any :data:`HELD_OUT` combination, plus ``k`` pairs of each
    combination; test: :data:`N_TEST_PER_COMBINATION` other pairs of each combination (the same for every
    ``k`` of a seed). Test pairs are in the order of :data:`HELD_OUT`."""
    _check_seed_k(seed, k)
    check_positive_int("n_train", n_train)
    rng = random.Random(seed)
    pairs = all_translation_pairs()
    rng.shuffle(pairs)
    rest = [p for p in pairs if combination(*p) is None]
    if n_train > len(rest):
        raise ValueError(f"n_train must be at most {len(rest)} (the pairs without a held-out combination), "
                         f"got {n_train}")
    train, test = rest[:n_train], []
    for name in HELD_OUT:
        pool = [p for p in pairs if combination(*p) == name]
        if k > len(pool) - N_TEST_PER_COMBINATION:
            raise ValueError(f"k must be at most {len(pool) - N_TEST_PER_COMBINATION} (the pairs of {name!r} "
                             f"outside the test), got {k}")
        test += pool[:N_TEST_PER_COMBINATION]
        train += pool[N_TEST_PER_COMBINATION:N_TEST_PER_COMBINATION + k]
    rng.shuffle(train)
    return translation_split(train, test, swaps=True)


def crossed_pairs(name: str) -> list[tuple[str, str]]:
    """The sentences of the grammar with one object of :data:`CROSSED` replaced: "she watches tv" becomes
    "she watches football" -> 她 看 足球, a verb-object pair the grammar never makes."""
    if name not in CROSSED:
        raise ValueError(f"name must be one of {sorted(CROSSED)}, got {name!r}")
    old_en, new_en, old_zh, new_zh = CROSSED[name]
    return [(" ".join(new_en if w == old_en else w for w in en.split()),
             " ".join(new_zh if w == old_zh else w for w in zh.split()))
            for en, zh in all_translation_pairs() if old_en in en.split()]


def cooccurrence_split(seed: int = 0, k: int = 0, n_train: int = N_GRAMMAR) -> TranslationData:
    """Training: ``n_train`` pairs of the grammar (where each object comes with one verb) plus ``k`` pairs of each
    new verb-object pair of :data:`CROSSED`; test: :data:`N_TEST_PER_CROSSED` other pairs of each (the same for
    every ``k`` of a seed), in the order of :data:`CROSSED`."""
    _check_seed_k(seed, k)
    check_positive_int("n_train", n_train)
    rng = random.Random(seed)
    pairs = all_translation_pairs()
    rng.shuffle(pairs)
    if n_train > len(pairs):
        raise ValueError(f"n_train must be at most {len(pairs)}, got {n_train}")
    train, test = pairs[:n_train], []
    for name in CROSSED:
        pool = crossed_pairs(name)
        rng.shuffle(pool)
        if k > len(pool) - N_TEST_PER_CROSSED:
            raise ValueError(f"k must be at most {len(pool) - N_TEST_PER_CROSSED}, got {k}")
        test += pool[:N_TEST_PER_CROSSED]
        train += pool[N_TEST_PER_CROSSED:N_TEST_PER_CROSSED + k]
    rng.shuffle(train)
    return translation_split(train, test, swaps=True)


def size_split(n_train: int, seed: int = 0) -> TranslationData:
    """The data-size curve: the same :data:`N_CURVE_TEST` test pairs for every size and seed (the book's
    grammar, shuffled with the recipe's data seed), and ``n_train`` training pairs drawn with ``seed``."""
    check_positive_int("n_train", n_train)
    check_int("seed", seed)
    pairs = all_translation_pairs()
    random.Random(RECIPE.data_seed).shuffle(pairs)
    test, rest = pairs[:N_CURVE_TEST], pairs[N_CURVE_TEST:]
    if n_train > len(rest):
        raise ValueError(f"n_train must be at most {len(rest)}, got {n_train}")
    random.Random(seed).shuffle(rest)
    return translation_split(rest[:n_train], test, swaps=True)


# -- the exact argument: without positions, a swap is a permutation --------------------------------

def swap_permutation(sentence: str, swapped: str) -> list[int]:
    """The permutation ``pi`` with ``swapped.split()[s] == sentence.split()[pi[s]]`` for every s.

    Raises ``ValueError`` if the two sentences do not hold the same words (the same bag of words)."""
    for name, value in (("sentence", sentence), ("swapped", swapped)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    a, b = sentence.split(), swapped.split()
    if sorted(a) != sorted(b):
        raise ValueError(f"swapped must hold the same words as sentence, got {swapped!r} for {sentence!r}")
    unused = list(range(len(a)))
    pi = []
    for w in b:
        i = next(i for i in unused if a[i] == w)
        unused.remove(i)
        pi.append(i)
    return pi


def translate(model, data: TranslationData, sentences: Sequence[str] | None = None) -> list[str]:
    """The model's greedy translations of ``sentences`` (default: every test sentence of ``data``)."""
    if isinstance(sentences, str) or not (sentences is None or isinstance(sentences, (list, tuple))):
        raise TypeError(f"sentences must be a list of English sentences or None, got {type(sentences).__name__}")
    src = data.test_src if sentences is None else data.encode_source(list(sentences))
    out = greedy_decode(model, src, data.test_tgt.shape[1] + 2, BOS, EOS)
    return [data.tgt_vocab.decode(row.tolist()) for row in out]


def swap_scores(outputs: Sequence[str], data: TranslationData, pairs: Sequence[tuple[int, int]]) -> dict:
    """Exact match on the swap test: per sentence, per pair (both right), and how many pairs got identical outputs."""
    if len(outputs) != len(data.test_pairs):
        raise ValueError(f"outputs must hold one translation per test pair of data ({len(data.test_pairs)}), "
                         f"got {len(outputs)}")
    right = [o == zh for o, (_, zh) in zip(outputs, data.test_pairs)]
    return dict(sentence_accuracy=sum(right) / len(right),
                pair_accuracy=sum(right[i] and right[j] for i, j in pairs) / len(pairs),
                at_most_one_right=all(not (right[i] and right[j]) for i, j in pairs),
                identical_pairs=sum(outputs[i] == outputs[j] for i, j in pairs), n_pairs=len(pairs))


# -- running the experiments ----------------------------------------------------------------------

def _stats(values: list[float]) -> dict:
    return dict(per_seed=values, mean=statistics.fmean(values), min=min(values), max=max(values))


def _run(kind: str, data: TranslationData, seed: int, steps: int) -> tuple[list[str], dict]:
    cpu = time.thread_time()
    model, history = train_model(kind, data, seed=seed, steps=steps)
    outputs = translate(model, data)
    right = [o == zh for o, (_, zh) in zip(outputs, data.test_pairs)]
    return outputs, dict(accuracy=sum(right) / len(right), right=right, parameters=count_parameters(model),
                         cpu_seconds=time.thread_time() - cpu, final_loss=statistics.fmean(history.loss[-20:]))


def _collect(runs: list[dict], keys=("accuracy",)) -> dict:
    return {key: _stats([r[key] for r in runs]) for key in keys}


def run_swaps(log=print) -> dict:
    results = {}
    for kind in MODELS:
        runs = []
        for seed in SEEDS:
            data, pairs = swap_split(seed)
            outputs, r = _run(kind, data, seed, STEPS)
            r.update(swap_scores(outputs, data, pairs))
            if seed == SEEDS[0]:
                r["examples"] = [[data.test_pairs[i][0], data.test_pairs[i][1], outputs[i], data.test_pairs[j][0],
                                  data.test_pairs[j][1], outputs[j]] for i, j in pairs[:4]]
            runs.append(r)
            log(f"  swaps {kind:<13} seed {seed}: sentences {r['sentence_accuracy']:.3f}, "
                f"pairs {r['pair_accuracy']:.3f},"
                f" identical {r['identical_pairs']}/{r['n_pairs']} ({r['cpu_seconds']:.0f} s)")
        results[kind] = dict(_collect(runs, ("sentence_accuracy", "pair_accuracy", "identical_pairs", "cpu_seconds")),
                             at_most_one_right=[r["at_most_one_right"] for r in runs], examples=runs[0]["examples"])
    data, pairs = swap_split(SEEDS[0])
    return dict(n_swap_pairs=len(subject_object_swaps()), n_test_pairs=len(pairs), n_train=len(data.train_pairs),
                n_grammar=N_GRAMMAR, test_fraction=SWAP_TEST_FRACTION, steps=STEPS, results=results)


def run_length(log=print, kinds=("transformer", "gru")) -> dict:
    results = {}
    for kind in kinds:
        results[kind] = {}
        for k in LONG_KS:
            runs = []
            for seed in SEEDS:
                data = length_split(seed, k)
                outputs, r = _run(kind, data, seed, STEPS)
                words = [len(en.split()) for en, _ in data.test_pairs]
                r["by_words"] = {str(n): sum(ok for ok, w in zip(r["right"], words) if w == n) / words.count(n)
                                 for n in sorted(set(words))}
                gold = [len(zh.split()) for _, zh in data.test_pairs]
                r["too_short"] = sum(len(o.split()) < g for o, g in zip(outputs, gold)) / len(gold)
                runs.append(r)
                log(f"  length {kind:<12} k={k:<4} seed {seed}: {r['accuracy']:.3f} ({r['cpu_seconds']:.0f} s)")
            results[kind][str(k)] = dict(_collect(runs, ("accuracy", "too_short", "cpu_seconds")),
                                         by_words={n: _stats([r["by_words"][n] for r in runs])
                                                   for n in runs[0]["by_words"]})
    data = length_split(SEEDS[0])
    return dict(max_train_words=MAX_TRAIN_WORDS, min_test_words=MIN_TEST_WORDS, n_train=len(data.train_pairs),
                n_test=len(data.test_pairs), ks=list(LONG_KS), steps=STEPS, results=results)


def run_systematic(log=print, kinds=("transformer", "gru")) -> dict:
    results = {}
    for kind in kinds:
        results[kind] = {}
        for k in SYSTEMATIC_KS:
            runs = []
            for seed in SEEDS:
                data = systematic_split(seed, k)
                outputs, r = _run(kind, data, seed, STEPS)
                names = [combination(*p) for p in data.test_pairs]
                r["by_combination"] = {n: sum(ok for ok, m in zip(r["right"], names) if m == n) / names.count(n)
                                       for n in HELD_OUT}
                if k == 0 and seed == SEEDS[0]:
                    r["errors"] = [[en, zh, o] for o, (en, zh), ok in zip(outputs, data.test_pairs, r["right"])
                                   if not ok][:8]
                runs.append(r)
                log(f"  systematic {kind:<12} k={k:<3} seed {seed}: {r['accuracy']:.3f} ({r['cpu_seconds']:.0f} s)")
            row = dict(_collect(runs, ("accuracy", "cpu_seconds")),
                       by_combination={n: _stats([r["by_combination"][n] for r in runs]) for n in HELD_OUT})
            if k == 0:
                row["errors"] = runs[0]["errors"]
            results[kind][str(k)] = row
    data = systematic_split(SEEDS[0])
    return dict(held_out=HELD_OUT, n_train=len(data.train_pairs), n_test=len(data.test_pairs),
                n_test_per_combination=N_TEST_PER_COMBINATION, ks=list(SYSTEMATIC_KS), steps=STEPS, results=results)


def run_cooccurrence(log=print, kinds=("transformer", "gru")) -> dict:
    results = {}
    for kind in kinds:
        results[kind] = {}
        for k in CROSSED_KS:
            runs = []
            for seed in SEEDS:
                data = cooccurrence_split(seed, k)
                outputs, r = _run(kind, data, seed, STEPS)
                names = [n for n in CROSSED for _ in range(N_TEST_PER_CROSSED)]
                r["by_pair"] = {n: sum(ok for ok, m in zip(r["right"], names) if m == n) / N_TEST_PER_CROSSED
                                for n in CROSSED}
                # how often the model wrote the verb that training paired with the new object
                r["seen_verb"] = sum(SEEN_VERB[m] in o.split() for o, m in zip(outputs, names)) / len(names)
                if k == 0 and seed == SEEDS[0]:
                    r["errors"] = [[en, zh, o] for o, (en, zh), ok in zip(outputs, data.test_pairs, r["right"])
                                   if not ok][:: N_TEST_PER_CROSSED // 2][:6]
                runs.append(r)
                log(f"  cooccurrence {kind:<12} k={k:<3} seed {seed}: {r['accuracy']:.3f}, seen verb "
                    f"{r['seen_verb']:.3f} ({r['cpu_seconds']:.0f} s)")
            row = dict(_collect(runs, ("accuracy", "seen_verb", "cpu_seconds")),
                       by_pair={n: _stats([r["by_pair"][n] for r in runs]) for n in CROSSED})
            if k == 0:
                row["errors"] = runs[0]["errors"]
            results[kind][str(k)] = row
    data = cooccurrence_split(SEEDS[0])
    return dict(crossed={n: f"{v[1]} ({v[3]}), in the grammar only {v[0]} ({v[2]})" for n, v in CROSSED.items()},
                n_train=len(data.train_pairs), n_test=len(data.test_pairs), n_test_per_pair=N_TEST_PER_CROSSED,
                ks=list(CROSSED_KS), steps=STEPS, results=results)


def run_curve(log=print, kinds=("transformer", "gru")) -> dict:
    results = {}
    for kind in kinds:
        results[kind] = {}
        for n in SIZES:
            runs = []
            for seed in SEEDS:
                _, r = _run(kind, size_split(n, seed), seed, CURVE_STEPS[n])
                runs.append(r)
                log(f"  curve {kind:<12} n={n:<5} seed {seed}: {r['accuracy']:.3f} ({r['cpu_seconds']:.0f} s)")
            results[kind][str(n)] = _collect(runs, ("accuracy", "cpu_seconds"))
    longer = {}
    for kind in kinds:
        longer[kind] = {}
        for n in LONGER_SIZES:
            runs = []
            for seed in SEEDS:
                _, r = _run(kind, size_split(n, seed), seed, LONGER_STEPS)
                runs.append(r)
                log(f"  curve {kind:<12} n={n:<5} seed {seed}, {LONGER_STEPS} steps: "
                    f"{r['accuracy']:.3f} ({r['cpu_seconds']:.0f} s)")
            longer[kind][str(n)] = _collect(runs, ("accuracy", "cpu_seconds"))
    return dict(sizes=list(SIZES), steps={str(n): s for n, s in CURVE_STEPS.items()}, n_test=N_CURVE_TEST,
                results=results, longer=dict(sizes=list(LONGER_SIZES), steps=LONGER_STEPS, results=longer))


def measure(log=print, only: Sequence[str] | None = None, done=None) -> dict:
    """Every experiment of the laboratory (``only``: some of "swaps", "length", "systematic", "curve").

    ``done(results)`` is called after each experiment with what is measured so far."""
    experiments = dict(swaps=run_swaps, systematic=run_systematic, cooccurrence=run_cooccurrence, length=run_length,
                       curve=run_curve)
    if only is not None and not set(only) <= set(experiments):
        raise ValueError(f"only must name experiments among {sorted(experiments)}, got {list(only)}")
    results = {}
    for name, run in experiments.items():
        if only is None or name in only:
            start, cpu = time.perf_counter(), time.process_time()
            log(f"{name}:")
            results[name] = run(log=log)
            results[name]["seconds"] = round(time.perf_counter() - start, 1)
            results[name]["cpu_seconds"] = round(time.process_time() - cpu, 1)
            if done is not None:
                done(_describe(results))
    return _describe(results)


def _describe(results: dict) -> dict:
    return dict(results, command="make grammar-lab", models=MODELS, seeds=list(SEEDS),
                recipe=dataclasses.asdict(RECIPE), gru=dict(GRU, lr=GRU_LR, clip_grad_norm=1.0), threads=1,
                torch=torch.__version__, processor=_processor(), machine=platform.machine(),
                python=platform.python_version())


def grammar_lab_results() -> dict:
    """The numbers ``make grammar-lab`` measured, shipped with the package."""
    if not RESULTS.exists():
        raise FileNotFoundError(f"{RESULTS} is missing; run `make grammar-lab` in the repository to create it")
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def _round(x):
    if isinstance(x, float):
        # 4 decimals for accuracies and seconds; a small value such as the recipe's layer_norm_eps (1e-5) keeps
        # 4 significant digits instead of becoming 0.0
        return float(f"{x:.4g}") if 0 < abs(x) < 1e-3 else round(x, 4)
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


def write_results(log=print, only: Sequence[str] | None = None, *, out) -> dict:
    """Measure the experiments and write them to ``out`` (what ``make grammar-lab`` runs, with ``out`` the checkout's
    ``transformer_lite/book/assets/grammar_lab.json``: :data:`RESULTS` is where the package reads it).

    With ``only``, the other experiments' results already in ``out`` are kept (re-run one experiment)."""
    out = output_path("out", out)
    kept = {}
    if only is not None and out.exists():
        kept = {k: v for k, v in json.loads(out.read_text(encoding="utf-8")).items()
                if k in EXPERIMENTS and k not in only}

    def write(results):  # after every experiment: an interrupted run still leaves what it finished
        results = dict(kept, **results)
        parts = [results[k] for k in EXPERIMENTS if k in results]
        results["total_seconds"] = round(sum(p["seconds"] for p in parts), 1)  # the sum of the experiments'
        results["total_cpu_seconds"] = round(sum(p.get("cpu_seconds", 0) for p in parts), 1)
        out.write_text(json.dumps(_round(results), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    with num_threads(1):
        results = measure(log, only, done=write)
    write(results)
    return json.loads(out.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    """``make grammar-lab``: measure the laboratory's experiments (or only those named) and write them to ``--out``."""
    from .pretrained import experiments_main

    return experiments_main(argv, prog="transformer_lite.book.grammar_lab", target="grammar-lab",
                            asset="grammar_lab.json", experiments=EXPERIMENTS, write_results=write_results)


if __name__ == "__main__":  # make grammar-lab
    sys.exit(main())
