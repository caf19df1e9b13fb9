"""A translator trained on real sentences: HSK 3.0 English -> Chinese, shipped with the package.

The grammar translator (:mod:`transformer_lite.book.pretrained`) learns a generated language
perfectly; this one meets real sentences: 3,415 training pairs from ``hsk-sentences-audio`` 1.0.0
(CC-BY-SA-4.0, see :mod:`transformer_lite.book.real_data`), Chinese as characters. It is scored on
the 425 test pairs by corpus BLEU and chrF on Chinese characters (:mod:`transformer_lite.metrics`),
broken down by HSK level and by English length, with examples of its failures.

* :func:`train_real_translator` trains one with :data:`REAL_RECIPE` (or another :class:`RealRecipe`).
* :func:`evaluate` greedy-decodes a split and scores it.
* :func:`real_translator` loads the shipped model (no training), made by ``make real-translator``
  (``python -m transformer_lite.book.real_translator --out-dir DIR``, :func:`write_shipped_real_translator`).
* :func:`write_baselines` (``make real-baselines``) trains IBM Model 1, a GRU with attention, a Transformer
  without positions, the Transformer with BPE English and the Transformer on the same split, three seeds each,
  and writes ``real_baselines.json`` with every run's per-sentence translations, so a chapter can compare
  any two by a paired bootstrap (:func:`transformer_lite.metrics.paired_bootstrap`).

How the recipe was chosen (one thread): a Post-LN Transformer, D=128, H=4, 2+2 layers, FFN 256, output
layer tied to the target embedding (1,052,985 parameters, ~4.2 MB in float32), batch 64, warm-up 400,
dropout 0.1, label smoothing 0.1. The step count was chosen on the DEV split with seed 0: greedy dev BLEU
was 9.4 after 800 steps, 13.8 after 1,600, 13.9 after 2,000 and 14.3 after 3,200, and the gain stops at
about 1,600 (the comment beside :attr:`RealRecipe.steps`). A 1,600-step run takes about 175-190 s of one
thread's CPU time (``cpu_seconds`` in ``real_translator.json`` and ``real_baselines.json``). The GRU's steps
are chosen on dev the same way, by :func:`write_baselines` (``gru_tuning`` in the baselines).
"""
from __future__ import annotations

import dataclasses
import json
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from .._checks import check_instance, check_int, check_number, check_positive_int
from ..baselines import DictionaryTranslator
from ..data import BOS, EOS, UNK, TranslationData, pad_batch
from ..decoding import beam_search, greedy_decode
from ..metrics import characters, corpus_bleu, corpus_chrf
from ..model import TransformerConfig, count_parameters
from ..training import paper_adam, train, warmup_scheduler
from . import capstone, real_data
from .i18n import N_

# one loader, one checksum and one way to write for both shipped models
from .pretrained import _load, _processor, _sha256, output_path, write_weights
from .runtime import num_threads

_FORMAT = "1"  # bump when what the shipped files hold changes


@dataclass(frozen=True)
class RealRecipe:
    """Everything that decides the trained real translator."""

    # data: real_data.translation_data(held_out, min_freq, chinese)
    held_out: str = "test"  # the split scored in the report ("dev" while choosing a recipe)
    min_freq: int = 2  # a token seen fewer times in training reads as <unk>
    chinese: str = "characters"  # Chinese tokens: "characters" or "words"
    # model: a small Post-LN Transformer; the vocabulary sizes come from the data
    model: TransformerConfig = TransformerConfig(d_model=128, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                                 dim_feedforward=256, dropout=0.1, max_len=64,
                                                 tie_embeddings=True)
    # optimisation: the paper's Adam + warm-up schedule, label smoothing
    # 1,600 steps (30 epochs of the train split): chosen on the DEV split, where greedy BLEU (seed 0) was 9.4 after
    # 800 steps, 13.8 after 1,600, 13.9 after 2,000 and 14.3 after 3,200 -- the gain stops at about 1,600
    # (measured with train_model(..., eval_fn=evaluate on dev, eval_every=400), 2026-11-25).
    steps: int = 1600
    batch_size: int = 64
    warmup_steps: int = 400
    lr_factor: float = 1.0  # the schedule's peak is lr_factor / sqrt(d_model * warmup_steps)
    smoothing: float = 0.1
    seed: int = 0  # model initialisation, batches and dropout


REAL_RECIPE = RealRecipe()

ASSETS = Path(__file__).resolve().parent / "assets"
SHIPPED_WEIGHTS = ASSETS / "real_translator.pt"  # state_dict + config + vocabularies (float32)
SHIPPED_REPORT = ASSETS / "real_translator.json"  # recipe, training report, scores, data licence, sha256
SHIPPED_BASELINES = ASSETS / "real_baselines.json"  # measure_baselines()

LENGTH_BUCKETS = ((1, 4), (5, 7), (8, None))  # English words, inclusive; None: no upper bound
GRU_SIZE = dict(embed=128, hidden=192, dropout=0.1)  # about the Transformer's parameter count
GRU_LR = 3e-3  # Adam, constant, gradients clipped to norm 1 (as in the grammar capstone); the default of train_model
# The GRU's steps are chosen as the Transformer's were: seed 0, greedy dev BLEU every TUNE_EVERY steps up to TUNE_STEPS,
# the best point (ties: fewer steps). Like the Transformer's schedule, its learning rate is not tuned.
TUNE_EVERY, TUNE_STEPS = 400, 3200
BEAM_SIZE, LENGTH_PENALTY = 4, 0.6  # the translator box's beam search (transformer_lite.book.translate)
KINDS = ("transformer", "no_positions", "gru")

DATA_NOTE = (f"Trained on {real_data.ATTRIBUTION} The weights are derived from CC BY-SA 4.0 data; "
             "treat them as an adaptation under the same licence.")


def _check_recipe(recipe) -> RealRecipe:
    recipe = recipe if recipe is not None else REAL_RECIPE
    if not isinstance(recipe, RealRecipe):
        raise TypeError(f"recipe must be a RealRecipe, got {type(recipe).__name__}")
    return recipe


def data_for(recipe: RealRecipe | None = None) -> TranslationData:
    """The HSK data the recipe trains and is scored on."""
    recipe = _check_recipe(recipe)
    return real_data.translation_data(held_out=recipe.held_out, min_freq=recipe.min_freq, chinese=recipe.chinese)


def new_model(kind: str, data: TranslationData, recipe: RealRecipe | None = None, seed: int = 0) -> torch.nn.Module:
    """An untrained model of ``kind`` ("transformer", "no_positions", "gru") for ``data``'s vocabularies."""
    recipe = _check_recipe(recipe)
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, one of {KINDS}, got {type(kind).__name__}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return capstone.new_model(kind, data, seed=seed, config=recipe.model, gru=GRU_SIZE)  # the grammar lab's builder


def train_model(kind: str, data: TranslationData, recipe: RealRecipe | None = None, seed: int | None = None,
                progress: bool = False, threads: int | None = 1, eval_fn=None, eval_every: int | None = None,
                gru_lr: float = GRU_LR):
    """Train a model of ``kind`` on ``data`` with the recipe's steps and batches; ``(model, history)``.

    Transformers use the paper's Adam and warm-up schedule; the GRU Adam at a constant ``gru_lr``
    with gradients clipped to norm 1. ``threads`` CPU threads (``None``: torch's setting).
    """
    recipe = _check_recipe(recipe)
    check_instance("data", data, TranslationData)
    seed = recipe.seed if seed is None else seed
    check_int("seed", seed)
    if threads is not None:
        check_positive_int("threads", threads)
    model = new_model(kind, data, recipe, seed)
    if kind == "gru":
        gru_lr = check_number("gru_lr", gru_lr, positive=True)
        optimizer, scheduler, clip = torch.optim.Adam(model.parameters(), lr=gru_lr), None, 1.0
    else:
        optimizer, clip = paper_adam(model.parameters()), None
        scheduler = warmup_scheduler(optimizer, recipe.model.d_model, recipe.warmup_steps, factor=recipe.lr_factor)
    with num_threads(threads):
        history = train(model, data.train_src, data.train_tgt, steps=recipe.steps, batch_size=recipe.batch_size,
                        optimizer=optimizer, scheduler=scheduler, smoothing=recipe.smoothing, progress=progress,
                        seed=seed, eval_fn=eval_fn, eval_every=eval_every, clip_grad_norm=clip)
    return model.eval(), history


def _loss_summary(loss: list[float]) -> dict:
    """The loss curve in a few numbers: first step, mean of each tenth of the run, last 50 steps."""
    n = len(loss)
    tenths = [loss[i * n // 10:(i + 1) * n // 10] for i in range(10)] if n >= 10 else [loss]
    return dict(first=round(loss[0], 4), tenths=[round(sum(t) / len(t), 4) for t in tenths if t],
                last50=round(sum(loss[-50:]) / len(loss[-50:]), 4))


def train_real_translator(recipe: RealRecipe | None = None, seed: int | None = None, progress: bool = True,
                          threads: int | None = 1):
    """Train the real translator; returns ``(model, data, report)``, the model on the CPU in eval mode.

    ``report``: ``train_seconds``, ``steps``, ``parameters``, ``loss`` (a summary of the curve),
    ``threads``, ``torch``, ``processor``, ``recipe`` and ``scores`` (:func:`evaluate` on the held-out split).
    """
    recipe = _check_recipe(recipe)
    if seed is not None:
        check_int("seed", seed)
        recipe = dataclasses.replace(recipe, seed=seed)
    if threads is not None:
        check_positive_int("threads", threads)
    data = data_for(recipe)
    cpu = time.thread_time()  # wall time depends on the machine's load; this thread's CPU time much less
    with num_threads(threads) as used:
        model, history = train_model("transformer", data, recipe, progress=progress, threads=None)
    cpu = time.thread_time() - cpu
    with num_threads(threads):
        scores = evaluate(model, data, held_out=recipe.held_out)
    report = dict(train_seconds=round(history.seconds, 2), cpu_seconds=round(cpu, 2), steps=recipe.steps,
                  parameters=count_parameters(model),
                  loss=_loss_summary(history.loss), threads=used, torch=torch.__version__,
                  processor=_processor(), python=platform.python_version(),
                  recipe=dataclasses.asdict(recipe), scores=scores)
    return model, data, report


# -- scoring --------------------------------------------------------------------------------------------

def _levels(held_out: str, data: TranslationData) -> list[int]:
    """The HSK level of every held-out pair (split_pairs keeps the order translation_data uses)."""
    pairs = real_data.split_pairs()[held_out]
    if len(pairs) != len(data.test_pairs):
        raise ValueError(f"data must hold the {held_out!r} split ({len(pairs)} pairs), got {len(data.test_pairs)}")
    for p, (en, _) in zip(pairs, data.test_pairs):
        if " ".join(real_data.tokenize_english(p.english)) != en:
            raise ValueError(f"data's held-out pairs are not the {held_out!r} split ({en!r} vs {p.english!r})")
    return [p.level for p in pairs]


def _bucket(n_words: int) -> str:
    for lo, hi in LENGTH_BUCKETS:
        if n_words >= lo and (hi is None or n_words <= hi):
            return f"{lo}-{hi}" if hi is not None else f"{lo}+"
    raise ValueError(f"no length bucket for {n_words} words")


def translate_split(model, data: TranslationData, beam_size: int = 1) -> list[str]:
    """Translations of every held-out sentence (Chinese tokens joined by spaces, ``<unk>`` kept): greedy, or beam
    search with ``beam_size`` > 1 and the translator box's length penalty."""
    check_positive_int("beam_size", beam_size)
    if isinstance(model, DictionaryTranslator):
        return [model.translate(en) for en, _ in data.test_pairs]
    max_new = min(model.max_len - 1, 2 * data.test_tgt.shape[1])  # room to show run-on output
    with num_threads(None), torch.no_grad():
        if beam_size == 1:
            out = greedy_decode(model.cpu().eval(), data.test_src, max_new, BOS, EOS)  # (N, L)
        else:
            out = beam_search(model.cpu().eval(), data.test_src, beam_size, max_new, BOS, EOS,
                              length_penalty=LENGTH_PENALTY)  # (N, L)
    return [data.tgt_vocab.decode(row.tolist()) for row in out]


def _scores(hyps: list[list[str]], refs: list[list[str]]) -> dict:
    return dict(bleu=100 * corpus_bleu(hyps, refs).score, chrf=100 * corpus_chrf(hyps, refs).score, n=len(refs))


def failure_kinds(en: str, src_vocab, hyp: list[str], ref: list[str]) -> list[str]:
    """The kinds of a wrong translation, by simple rules (:func:`evaluate` counts them).

    ``en``: the English sentence (tokens separated by spaces); ``hyp``, ``ref``: the translation and the
    reference as lists of Chinese characters. "unknown source word": an English token the vocabulary lacks;
    "omission": shorter than half the reference; "repetition": a character 3+ times, more than in the
    reference; "too long": longer than 1.5 x the reference + 2. The kinds are English keys; show them through tr().
    """
    kinds = []
    if any(w not in src_vocab for w in en.split()):
        kinds.append(N_("unknown source word"))
    if len(hyp) < 0.5 * len(ref):
        kinds.append(N_("omission"))
    counts, ref_counts = Counter(hyp), Counter(ref)
    if any(n >= 3 and n > ref_counts[c] for c, n in counts.items()):
        kinds.append(N_("repetition"))
    if len(hyp) > 1.5 * len(ref) + 2:
        kinds.append(N_("too long"))
    return kinds


def evaluate(model, data: TranslationData, held_out: str = "test", examples: int = 12, beam_size: int = 1) -> dict:
    """Greedy-decode ``data``'s held-out split (beam search if ``beam_size`` > 1) and score it: BLEU and chrF
    (0-100) on Chinese characters.

    ``<unk>`` in a translation is dropped before scoring (it can match nothing). Returns ``hypotheses`` (each
    translation as the string of characters that was scored, for a paired bootstrap),
    ``bleu``, ``chrf``, ``n``, ``by_level`` and ``by_length`` (English words: 1-4, 5-7, 8+; each a dict of
    ``bleu``, ``chrf``, ``n``), ``failure_counts`` (kind -> sentences) and ``failures``: up to ``examples``
    wrong translations of each kind, ``{english, reference, translation, kinds}``.
    """
    check_instance("data", data, TranslationData)
    if not isinstance(held_out, str):
        raise TypeError(f"held_out must be a str, 'dev' or 'test', got {type(held_out).__name__}")
    if held_out not in ("dev", "test"):
        raise ValueError(f"held_out must be 'dev' or 'test', got {held_out!r}")
    check_positive_int("examples", examples, minimum=0)
    if not isinstance(model, (DictionaryTranslator, torch.nn.Module)):
        raise TypeError(f"model must be a torch.nn.Module with encode/decode or a DictionaryTranslator, "
                        f"got {type(model).__name__}")
    levels = _levels(held_out, data)
    outputs = translate_split(model, data, beam_size)
    hyps = [characters(" ".join(t for t in out.split() if t != "<unk>")) for out in outputs]
    refs = [characters(zh) for _, zh in data.test_pairs]
    result = _scores(hyps, refs)
    result["by_level"] = {str(lv): _scores([h for h, level in zip(hyps, levels) if level == lv],
                                           [r for r, level in zip(refs, levels) if level == lv])
                          for lv in sorted(set(levels))}
    buckets = [_bucket(len(en.split())) for en, _ in data.test_pairs]
    result["by_length"] = {b: _scores([h for h, x in zip(hyps, buckets) if x == b],
                                      [r for r, x in zip(refs, buckets) if x == b])
                           for b in dict.fromkeys(_bucket(lo) for lo, _ in LENGTH_BUCKETS) if b in buckets}
    counts, failures = Counter(), []
    shown = Counter()
    for (en, _), out, h, r in zip(data.test_pairs, outputs, hyps, refs):
        if h == r:
            continue
        kinds = failure_kinds(en, data.src_vocab, h, r)
        counts.update(kinds)
        if any(shown[k] < examples for k in kinds):
            shown.update(kinds)
            failures.append(dict(english=en, reference="".join(r), translation=out.replace(" ", ""), kinds=kinds))
    result["exact_match"] = sum(h == r for h, r in zip(hyps, refs)) / len(refs)
    result["hypotheses"] = ["".join(h) for h in hyps]
    result["failure_counts"] = dict(sorted(counts.items()))
    result["failures"] = failures
    return result


# -- the shipped model ------------------------------------------------------------------------------------

def write_shipped_real_translator(*, out_dir, progress: bool = True, threads: int | None = 1) -> dict:
    """Train with :data:`REAL_RECIPE` and write ``real_translator.pt`` and ``.json`` into ``out_dir`` (``make
    real-translator``: the checkout's ``transformer_lite/book/assets``); returns the report."""
    out_dir = output_path("out_dir", out_dir)
    model, data, report = train_real_translator(REAL_RECIPE, progress=progress, threads=threads)
    model = model.cpu().float()
    out_dir.mkdir(parents=True, exist_ok=True)
    weights = out_dir / SHIPPED_WEIGHTS.name
    write_weights(weights, {"state_dict": model.state_dict(), "config": model.config.to_dict(),
                            "src_vocab": data.src_vocab.itos, "tgt_vocab": data.tgt_vocab.itos})
    report = dict(report, format=_FORMAT, weights_sha256=_sha256(weights), weights_bytes=weights.stat().st_size,
                  command="make real-translator",
                  data=dict(name=real_data.DATASET_NAME, version=real_data.DATASET_VERSION,
                            url=real_data.DATASET_URL, homepage=real_data.DATASET_HOMEPAGE,
                            license=real_data.DATASET_LICENSE, note=DATA_NOTE),
                  weights_license=real_data.DATASET_LICENSE)
    (out_dir / SHIPPED_REPORT.name).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    return report


def shipped_report() -> dict:
    """The report written with the shipped real translator."""
    if not SHIPPED_REPORT.exists() or not SHIPPED_WEIGHTS.exists():
        raise FileNotFoundError(f"the shipped real translator is missing ({SHIPPED_WEIGHTS}); "
                                "run `make real-translator` in the repository to create it")
    return json.loads(SHIPPED_REPORT.read_text(encoding="utf-8"))


def real_translator():
    """The shipped real translator: ``(model, data, report)``. No training; the sha256 is checked."""
    report = shipped_report()
    if report["recipe"] != dataclasses.asdict(REAL_RECIPE):
        raise RuntimeError("the shipped real translator was trained with another recipe than REAL_RECIPE; "
                           "run `make real-translator` again")
    if _sha256(SHIPPED_WEIGHTS) != report["weights_sha256"]:
        raise RuntimeError(f"{SHIPPED_WEIGHTS.name} does not match the sha256 in {SHIPPED_REPORT.name}; "
                           "run `make real-translator` to write both again")
    saved = torch.load(SHIPPED_WEIGHTS, map_location="cpu", weights_only=True)
    data = data_for(REAL_RECIPE)
    if saved["src_vocab"] != data.src_vocab.itos or saved["tgt_vocab"] != data.tgt_vocab.itos:
        raise RuntimeError("the shipped real translator's vocabularies differ from the data's; "
                           "is hsk-sentences-audio another version than " + real_data.DATASET_VERSION + "?")
    return _load(saved=saved), data, dict(report, source="shipped")


# -- baselines on the same split ----------------------------------------------------------------------------

def fit_dictionary(pairs, thresholds=(0.1, 0.2, 0.3, 0.5)) -> tuple[DictionaryTranslator, float]:
    """IBM Model 1 word-by-word: the threshold with the best chrF on the last 10% of ``pairs``, refit on all."""
    cut = len(pairs) - len(pairs) // 10
    rest, held_back = pairs[:cut], pairs[cut:]
    refs = [characters(zh) for _, zh in held_back]

    def score(t):
        d = DictionaryTranslator(rest, t)
        return corpus_chrf([characters(d.translate(en)) for en, _ in held_back], refs).score

    best = max(thresholds, key=score)
    return DictionaryTranslator(pairs, best), best


def _summary(rows: list[dict]) -> dict:
    out = {}
    for key in ("bleu", "chrf", "train_seconds", "cpu_seconds"):
        values = [r[key] for r in rows]
        out[key] = dict(mean=sum(values) / len(values), min=min(values), max=max(values))
    return out


def _brief(scores: dict) -> dict:
    return {k: scores[k] for k in ("bleu", "chrf", "exact_match", "by_level", "by_length", "failure_counts",
                                   "hypotheses") if k in scores}


def measure_one(kind: str, seed: int, recipe: RealRecipe | None = None, data: TranslationData | None = None,
                threads: int | None = 1, gru_lr: float = GRU_LR) -> dict:
    """Train one model of ``kind`` with ``seed`` and score it on the recipe's held-out split."""
    recipe = _check_recipe(recipe)
    data = data if data is not None else data_for(recipe)
    cpu = time.thread_time()
    model, history = train_model(kind, data, recipe, seed=seed, threads=threads, gru_lr=gru_lr)
    cpu = time.thread_time() - cpu
    scores = evaluate(model, data, held_out=recipe.held_out)
    return dict(kind=kind, seed=seed, steps=recipe.steps, parameters=count_parameters(model),
                train_seconds=round(history.seconds, 2), cpu_seconds=round(cpu, 2),
                final_loss=_loss_summary(history.loss)["last50"],
                **_brief(scores))


def measure_baselines(seeds=(0, 1, 2), kinds=KINDS, recipe: RealRecipe | None = None,
                      threads: int | None = 1) -> dict:
    """IBM Model 1 (deterministic) and each neural ``kind`` with every seed, on the same held-out split."""
    recipe = _check_recipe(recipe)
    if not isinstance(seeds, (tuple, list)) or not seeds:
        raise TypeError(f"seeds must be a non-empty tuple of ints, got {seeds!r}")
    for s in seeds:
        check_int("seeds[i]", s)
    data = data_for(recipe)
    start = time.perf_counter()
    dictionary, threshold = fit_dictionary(data.train_pairs)
    dict_scores = evaluate(dictionary, data, held_out=recipe.held_out)
    result = dict(held_out=recipe.held_out, recipe=dataclasses.asdict(recipe),
                  dictionary=dict(threshold=threshold, fit_seconds=round(time.perf_counter() - start, 2),
                                  **_brief(dict_scores)))
    for kind in kinds:
        rows = [measure_one(kind, s, recipe, data, threads) for s in seeds]
        result[kind] = dict(runs=rows, **_summary(rows))
    return result


CURVE_SIZES = (400, 800, 1600)  # training pairs of the data-size curve (+ the full train split: the shipped model)


def bpe_source(data: TranslationData, merges: int = real_data.BPE_MERGES,
               min_freq: int | None = None) -> TranslationData:
    """``data`` with its English cut into byte-pair symbols (chapter 1's BPE, ``merges`` learned on the train split).

    Only the source side changes: ``src_vocab`` (the symbols seen at least ``min_freq`` times in training; default the
    recipe's cut), ``train_src`` and ``test_src``. ``train_pairs`` and ``test_pairs`` keep the English words, so the
    scores break down by level and length as for words.
    """
    check_instance("data", data, TranslationData)
    check_positive_int("merges", merges)
    min_freq = REAL_RECIPE.min_freq if min_freq is None else check_positive_int("min_freq", min_freq)
    train, test = real_data._bpe([en.split() for en, _ in data.train_pairs],
                                 [en.split() for en, _ in data.test_pairs], merges)
    vocab = real_data._vocab(train, min_freq)
    return dataclasses.replace(data, src_vocab=vocab, train_src=pad_batch([vocab.encode(s) for s in train]),
                               test_src=pad_batch([vocab.encode(s) for s in test]))


def unknown_rates(data: TranslationData) -> dict:
    """How much of the held-out source reads as ``<unk>``: the share of tokens, and of sentences with at least one."""
    check_instance("data", data, TranslationData)
    real = data.test_src != 0  # (N, S): not padding
    unk = data.test_src == UNK
    return dict(tokens=round(unk.sum().item() / real.sum().item(), 4),
                sentences=round(unk.any(dim=1).float().mean().item(), 4),
                mean_length=round(real.sum().item() / len(data.test_pairs), 2))


def _measure_task(task: dict) -> dict:
    """One run of :func:`write_baselines`, in a worker process.

    ``task``: ``kind``, ``seed`` and optionally ``n_train`` (a random subset of the train split), ``steps``,
    ``gru_lr``, ``source`` ("bpe": :func:`bpe_source`) and ``every``: then the run is a *trajectory*, scored every
    ``every`` steps on the dev split (greedy BLEU, for choosing the steps) and on the test split (everything
    :func:`evaluate` reports). Scoring draws no random numbers, so the model after k steps of a trajectory is the
    model of a k-step run: one trajectory gives every step count of the grid.
    """
    task = dict(task)
    kind, seed = task.pop("kind"), task.pop("seed")
    recipe = dataclasses.replace(REAL_RECIPE, steps=task.pop("steps", REAL_RECIPE.steps))
    gru_lr, every, points_log = task.pop("gru_lr", GRU_LR), task.pop("every", None), task.pop("points_log", None)
    n_train, source = task.pop("n_train", None), task.pop("source", "words")
    if task:
        raise ValueError(f"task has unknown keys {sorted(task)}")
    data = data_for(recipe)
    if n_train is not None:
        data = subset(data, n_train, seed=0)
    if source == "bpe":
        data = bpe_source(data)
    extra = dict(n_train=len(data.train_pairs), source=source, unknown=unknown_rates(data))
    if kind == "gru":
        extra["gru_lr"] = gru_lr
    if every is None:
        row = measure_one(kind, seed, recipe, data, threads=1, gru_lr=gru_lr)
        if source != "words":  # the rule behind "unknown source word" reads English words against src_vocab
            row["failure_counts"].pop("unknown source word", None)
        return dict(row, **extra)
    dev = data_for(dataclasses.replace(recipe, held_out="dev"))
    scoring = [0.0]  # CPU seconds spent scoring, taken out of the training cost

    def score(model):
        start = time.thread_time()
        result = dict(dev_bleu=evaluate(model, dev, held_out="dev", examples=0)["bleu"],
                      test=_brief(evaluate(model, data, held_out=recipe.held_out)))
        scoring[0] += time.thread_time() - start
        if points_log is not None:  # a long trajectory leaves its points as they come
            with open(points_log, "a", encoding="utf-8") as f:
                f.write(json.dumps(dict(kind=kind, seed=seed, scoring_seconds=round(scoring[0], 2),
                                        cpu_seconds=round(time.thread_time() - cpu, 2), **result),
                                   ensure_ascii=False) + "\n")
        return result

    cpu = time.thread_time()  # read by score() too
    model, history = train_model(kind, data, recipe, seed=seed, threads=1, gru_lr=gru_lr, eval_fn=score,
                                 eval_every=every)
    cpu = time.thread_time() - cpu - scoring[0]
    points = [dict(step=step, dev_bleu=round(r["dev_bleu"], 2),
                   final_loss=round(sum(history.loss[max(0, step - 50):step]) / min(50, step), 4), **r["test"])
              for step, r in history.evals]
    return dict(kind=kind, seed=seed, trajectory=True, steps=recipe.steps, parameters=count_parameters(model),
                train_seconds=round(history.seconds, 2), cpu_seconds=round(cpu, 2), points=points, **extra)


def choose_steps(trajectory: dict) -> int:
    """The step count with the best dev BLEU along a trajectory; ties go to fewer steps."""
    return max(trajectory["points"], key=lambda p: (p["dev_bleu"], -p["step"]))["step"]


def _at(trajectory: dict, steps: int) -> dict:
    """A trajectory's point at ``steps`` as a :func:`measure_one` row; its CPU time is the trajectory's per step."""
    point = next(p for p in trajectory["points"] if p["step"] == steps)
    per_step = trajectory["cpu_seconds"] / trajectory["steps"]
    return dict({k: v for k, v in point.items() if k not in ("step", "dev_bleu")}, kind=trajectory["kind"],
                seed=trajectory["seed"], steps=steps, parameters=trajectory["parameters"],
                train_seconds=round(trajectory["train_seconds"] * steps / trajectory["steps"], 2),
                cpu_seconds=round(per_step * steps, 2), dev_bleu=point["dev_bleu"],
                **{k: trajectory[k] for k in ("n_train", "source", "unknown", "gru_lr")})


def equal_time_steps(transformer_cpu: float, trajectory: dict) -> int:
    """The GRU's steps in the Transformer's CPU time: the scored step of the trajectory nearest to the Transformer's
    mean CPU seconds over the GRU's per step."""
    target = transformer_cpu / (trajectory["cpu_seconds"] / trajectory["steps"])
    return min((p["step"] for p in trajectory["points"]), key=lambda s: abs(s - target))


def _shipped_row() -> dict | None:
    """The shipped model's training as a :func:`measure_one` row (the same recipe, seed and thread count).

    Its hypotheses come from decoding the shipped weights again; the scores must be those of its report.
    """
    try:
        r = shipped_report()
    except FileNotFoundError:
        return None
    if r["recipe"] != dataclasses.asdict(REAL_RECIPE) or r["threads"] != 1:
        return None
    model, data, _ = real_translator()
    scores = evaluate(model, data, held_out=REAL_RECIPE.held_out)
    if abs(scores["bleu"] - r["scores"]["bleu"]) > 1e-9 or abs(scores["chrf"] - r["scores"]["chrf"]) > 1e-9:
        raise RuntimeError(f"decoding the shipped model again gives BLEU {scores['bleu']}, its report "
                           f"{r['scores']['bleu']}: the hypotheses would not be the reported run's")
    return dict(kind="transformer", seed=REAL_RECIPE.seed, steps=r["steps"], parameters=r["parameters"],
                train_seconds=r["train_seconds"], cpu_seconds=r["cpu_seconds"], final_loss=r["loss"]["last50"],
                **_brief(scores), n_train=len(data.train_pairs), source="words", unknown=unknown_rates(data))


def write_baselines(seeds=(0, 1, 2), jobs: int = 2, curve=CURVE_SIZES, log: str | Path | None = None, *,
                    out: str | Path, gru_steps: int = TUNE_STEPS, every: int = TUNE_EVERY,
                    steps: int | None = None, previous: dict | None = None) -> dict:
    """Measure every baseline and the data-size curve, and write them to ``out`` (``make real-baselines``: the
    checkout's ``transformer_lite/book/assets/real_baselines.json``).

    Every neural run trains on one thread, ``jobs`` runs at a time in worker processes (seed 0 of every model
    first, then seed 1, ...), and records its per-sentence hypotheses (for
    :func:`~transformer_lite.metrics.paired_bootstrap`):

    - IBM Model 1 once (deterministic); the Transformer and the Transformer without positions, every seed (the
      Transformer with the recipe's seed is the shipped model, decoded again, when it was trained with this recipe
      on one thread); the shipped model with beam search too (``shipped_beam``);
    - the GRU (Adam at :data:`GRU_LR`), every seed, as a trajectory of ``gru_steps`` steps scored every ``every``
      steps: its steps are chosen on dev with seed 0, as the Transformer's were (``gru_tuning``; the ``gru`` rows),
      and the step nearest to the Transformer's CPU time gives ``gru_equal_time``;
    - the Transformer with BPE English (chapter 1's, :data:`~transformer_lite.book.real_data.BPE_MERGES` merges),
      every seed (``bpe_source``); every row carries the unknown-token rates of its source (``unknown``);
    - the Transformer (seed 0) on random subsets of ``curve`` training pairs (``data_size_curve``).

    Each finished row is appended to ``log`` (JSON lines) as it comes, so a cut run leaves what it measured.
    ``steps`` shortens every run (a smoke test);
    ``previous``: an earlier baselines dict whose parts fill what was not measured (see :func:`baselines_from_rows`).
    """
    check_positive_int("jobs", jobs)
    out = output_path("out", out)
    import concurrent.futures
    import multiprocessing

    start = time.perf_counter()
    short = {} if steps is None else dict(steps=check_positive_int("steps", steps))
    data = data_for(REAL_RECIPE)
    shipped = _shipped_row() if steps is None else None
    queue = []
    for s in seeds:
        queue.append(dict(kind="gru", seed=s, steps=gru_steps if steps is None else 2 * steps,
                          every=every if steps is None else steps,
                          points_log=None if log is None else f"{log}.gru{s}"))
        queue += [dict(kind=kind, seed=s, **short) for kind in ("no_positions", "transformer")
                  if not (shipped and kind == "transformer" and s == REAL_RECIPE.seed)]
        queue.append(dict(kind="transformer", seed=s, source="bpe", **short))
    queue += [dict(kind="transformer", seed=REAL_RECIPE.seed, n_train=n, **short) for n in curve]
    rows, log_file = [], open(log, "a", encoding="utf-8") if log is not None else None
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {pool.submit(_measure_task, task): task for task in queue}  # the pool runs them in this order
        dict_start, dict_cpu = time.perf_counter(), time.thread_time()
        dictionary, threshold = fit_dictionary(data.train_pairs)
        dictionary = dict(threshold=threshold, thresholds_tried=[0.1, 0.2, 0.3, 0.5],
                          fit_seconds=round(time.perf_counter() - dict_start, 2),
                          cpu_seconds=round(time.thread_time() - dict_cpu, 2),
                          **_brief(evaluate(dictionary, data, held_out=REAL_RECIPE.held_out)))
        shipped_beam = None
        if shipped is not None:
            model, _, _ = real_translator()
            beam = evaluate(model, data, held_out=REAL_RECIPE.held_out, beam_size=BEAM_SIZE)
            shipped_beam = dict(beam_size=BEAM_SIZE, length_penalty=LENGTH_PENALTY, **_brief(beam))
        if log_file:
            for row in (dict(dictionary=dictionary), dict(shipped=shipped), dict(shipped_beam=shipped_beam)):
                log_file.write(json.dumps(row, ensure_ascii=False) + "\n")
            log_file.flush()
        for future in concurrent.futures.as_completed(running):
            row = future.result()
            rows.append(row)
            if log_file:
                log_file.write(json.dumps(row, ensure_ascii=False) + "\n")
                log_file.flush()
    if log_file:
        log_file.close()
    result = baselines_from_rows(rows, dictionary, shipped, shipped_beam, jobs, previous)
    result["total_seconds"] = round(time.perf_counter() - start, 1)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


def baselines_from_rows(rows: list[dict], dictionary: dict, shipped: dict | None, shipped_beam: dict | None,
                        jobs: int, previous: dict | None = None) -> dict:
    """The baselines JSON from :func:`write_baselines`' rows (or its log). Parts not measured (a cut run) come
    from ``previous`` (an earlier baselines JSON) when given, listed in ``from_previous_run``."""
    full_n = len(data_for(REAL_RECIPE).train_pairs)
    main = [r for r in rows if r.get("n_train") == full_n and not r.get("trajectory")] + ([shipped] if shipped else [])
    sizes = sorted([r for r in rows if r.get("n_train") != full_n], key=lambda r: r["n_train"])
    trajectories = sorted([r for r in rows if r.get("trajectory")], key=lambda r: r["seed"])
    result = dict(held_out=REAL_RECIPE.held_out, recipe=dataclasses.asdict(REAL_RECIPE), dictionary=dictionary,
                  torch=torch.__version__, processor=_processor(), threads_per_run=1)
    groups: dict = {}
    for r in main:
        groups.setdefault("bpe_source" if r.get("source") == "bpe" else r["kind"], []).append(r)
    tuning = next((t for t in trajectories if t["seed"] == REAL_RECIPE.seed), None)
    if tuning is not None and "transformer" in groups:
        chosen = choose_steps(tuning)
        equal = equal_time_steps(_summary(groups["transformer"])["cpu_seconds"]["mean"], tuning)
        groups["gru"] = [_at(t, chosen) for t in trajectories]
        groups["gru_equal_time"] = [_at(t, equal) for t in trajectories]
        result["gru_tuning"] = dict(
            note="GRU (Adam at a constant learning rate, gradients clipped to norm 1), seed 0: greedy BLEU on the dev "
                 f"split every {tuning['points'][0]['step']} steps, the procedure that chose the Transformer's steps "
                 "(RealRecipe.steps); the best dev BLEU (ties: fewer steps) gives the gru rows. gru_equal_time: the "
                 "scored step nearest to the Transformer's mean CPU time. Both come from one trajectory per seed "
                 "(scoring draws no random numbers, so the model after k steps is that of a k-step run); their "
                 "cpu_seconds are the trajectory's training CPU per step times the steps, scoring left out.",
            gru_lr=tuning["gru_lr"], dev_bleu=[[p["step"], p["dev_bleu"]] for p in tuning["points"]],
            chosen_steps=chosen, equal_time_steps=equal,
            test_bleu_seed0=[[p["step"], round(p["bleu"], 2)] for p in tuning["points"]])
    from_previous = []
    for name in ("transformer", "no_positions", "gru", "gru_equal_time", "bpe_source"):
        group = sorted(groups.get(name, []), key=lambda r: r["seed"])
        if group:
            result[name] = dict(runs=group, **_summary(group))
        elif previous and name in previous:
            result[name] = previous[name]
            from_previous.append(name)
    full = next((r for r in main if r["kind"] == "transformer" and r["seed"] == REAL_RECIPE.seed
                 and r.get("source", "words") == "words"), None)
    if sizes and full:
        result["data_size_curve"] = dict(
            note="Transformer, the recipe, seed 0, one run per size: a random subset (seed 0) of the train split; "
                 "vocabularies of the full train split; the full size is the seed-0 run above",
            runs=[{k: v for k, v in r.items() if k not in ("hypotheses", "unknown", "source")} for r in sizes + [full]])
    elif previous and "data_size_curve" in previous:
        result["data_size_curve"] = previous["data_size_curve"]
        from_previous.append("data_size_curve")
    if shipped_beam is not None:
        result["shipped_beam"] = shipped_beam
    result.update(
        note="Each neural run trained on one thread, several at a time on the machine: train_seconds (wall) is "
             "inflated by that load; cpu_seconds is the training thread's own CPU time, the fairer comparison of "
             "cost. Scores are 0-100, corpus BLEU and chrF on Chinese characters (<unk> dropped), greedy decoding "
             "unless said otherwise; hypotheses: each test sentence's translation as scored.",
        data=dict(name=real_data.DATASET_NAME, version=real_data.DATASET_VERSION, license=real_data.DATASET_LICENSE),
        command="make real-baselines", jobs=jobs)
    if from_previous:
        result["from_previous_run"] = from_previous
    return result


def baselines_from_log(log: str | Path, jobs: int, previous: dict | None = None) -> dict:
    """:func:`baselines_from_rows` from the JSON-lines log of a (possibly cut) :func:`write_baselines` run."""
    rows, parts = [], {}
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if len(row) == 1 and next(iter(row)) in ("dictionary", "shipped", "shipped_beam"):
            parts.update(row)
        else:
            rows.append(row)
    return baselines_from_rows(rows, parts["dictionary"], parts.get("shipped"), parts.get("shipped_beam"), jobs,
                               previous)


def subset(data: TranslationData, n_train: int, seed: int = 0) -> TranslationData:
    """``data`` with ``n_train`` of its training pairs, drawn at random (seeded); vocabularies and test split unchanged.

    The vocabularies stay those of the full train split, so a smaller subset's only loss is fewer examples.
    """
    check_instance("data", data, TranslationData)
    check_positive_int("n_train", n_train)
    if n_train > len(data.train_pairs):
        raise ValueError(f"n_train must be at most the {len(data.train_pairs)} training pairs, got {n_train}")
    check_int("seed", seed)
    idx = torch.randperm(len(data.train_pairs), generator=torch.Generator().manual_seed(seed))[:n_train].sort().values
    return dataclasses.replace(data, train_pairs=[data.train_pairs[i] for i in idx.tolist()],
                               train_src=data.train_src[idx], train_tgt=data.train_tgt[idx])


def baseline_results() -> dict:
    """What :func:`measure_baselines` measured, as shipped."""
    return json.loads(SHIPPED_BASELINES.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    """``make real-translator`` (the shipped model into ``--out-dir``) and ``make real-baselines`` (``baselines
    --out FILE``)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m transformer_lite.book.real_translator", description=main.__doc__)
    ap.add_argument("what", nargs="?", choices=["baselines"], help="measure the baselines instead of the model")
    ap.add_argument("--out-dir", help="the model: the folder to write real_translator.pt and .json into "
                                      "(make real-translator: the checkout's transformer_lite/book/assets)")
    ap.add_argument("--out", help="baselines: the JSON to write (make real-baselines: the checkout's "
                                  "transformer_lite/book/assets/real_baselines.json)")
    ap.add_argument("--jobs", type=int, default=2, help="baselines: runs at a time, one thread each (default 2)")
    ap.add_argument("--log", help="baselines: append every finished run to this JSON-lines file")
    args = ap.parse_args(argv)
    if args.what == "baselines":
        if args.out is None or args.out_dir is not None:
            ap.error("baselines writes one file: give --out, not --out-dir")
        for k, v in write_baselines(jobs=args.jobs, log=args.log, out=args.out).items():
            if isinstance(v, dict) and "chrf" in v:
                print(k, v["bleu"], v["chrf"])
        return 0
    if args.out_dir is None or args.out is not None:
        ap.error("the model is two files: give --out-dir, not --out")
    r = write_shipped_real_translator(out_dir=args.out_dir, progress=sys.stderr.isatty())
    s = r["scores"]
    print(f"wrote {Path(args.out_dir) / SHIPPED_WEIGHTS.name} ({r['weights_bytes'] / 1e6:.2f} MB) and "
          f"{SHIPPED_REPORT.name}: test BLEU {s['bleu']:.2f}, chrF {s['chrf']:.2f}, {r['train_seconds']:.0f} s on "
          f"{r['processor']}")
    return 0


if __name__ == "__main__":  # make real-translator, make real-baselines
    sys.exit(main())
