"""Chapter 13's measurements: the translator next to baselines on its own split.

``make capstone`` (``python -m transformer_lite.book.capstone``) trains every model once on one
CPU thread and writes the checkout's ``assets/capstone_baselines.json``; the chapter reads the shipped numbers
(:func:`capstone_results`) instead of training them again. What is measured, in ``baselines``:
held-out exact match on the shipped translator's own split (:data:`RECIPE`) of the Transformer (the
shipped model), a word-by-word dictionary (IBM Model 1), the same dictionary with a learned word
order, the Transformer without positional encodings, and a GRU encoder-decoder with attention of
about the same size, trained with the same steps and batches; and the CPU seconds each one trains
for, all in the same run (for the Transformer, the recipe trained again here: the shipped model was
trained by another command, whose time is wall time on a machine of its own). The grammar
laboratory's experiments, on which the models can differ, are :mod:`.grammar_lab`'s.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import sys
import time

import torch

from ..baselines import DictionaryTranslator, GRUTranslator, transformer_without_positions
from ..data import BOS, EOS, TranslationData, translation_task
from ..decoding import exact_match, greedy_decode
from ..model import Transformer, count_parameters
from ..training import paper_adam, train, warmup_scheduler
from .i18n import N_
from .pretrained import ASSETS, RECIPE, _processor, load_shipped_translator, output_path
from .runtime import num_threads

RESULTS = ASSETS / "capstone_baselines.json"

GRU = dict(embed=64, hidden=112, dropout=0.1)  # ~168k parameters; the translator has ~181k
GRU_LR = 3e-3  # Adam, constant, gradients clipped to norm 1 (the warm-up schedule is the Transformer's recipe)
THRESHOLDS = (0.2, 0.3, 0.4, 0.5)  # the dictionary's threshold, chosen on held-back training pairs
MODELS = {"transformer": N_("Transformer (the book's recipe)"),  # display names, shown through tr()
          "dictionary": N_("word-by-word dictionary (IBM Model 1), English order"),
          "dictionary_ordered": N_("word-by-word dictionary + learned Chinese word order"),
          "no_positions": N_("Transformer without positional encoding"),
          "gru": N_("GRU encoder-decoder with attention")}
BASELINES = ("dictionary", "dictionary_ordered", "no_positions", "gru")

def fit_dictionary(pairs, reorder: bool) -> tuple[DictionaryTranslator, float]:
    """A :class:`DictionaryTranslator` whose threshold is chosen on the last 500 training pairs, then refit on all."""
    held_back, rest = pairs[-500:], pairs[:-500]
    best = max(THRESHOLDS, key=lambda t: DictionaryTranslator(rest, t, reorder).exact_match(held_back))
    return DictionaryTranslator(pairs, best, reorder), best


def new_model(kind: str, data: TranslationData, seed: int = RECIPE.seed, config=None,
              gru: dict | None = None) -> torch.nn.Module:
    """An untrained model of ``kind`` ("transformer", "no_positions", "gru") for ``data``'s vocabularies.

    ``config`` (a TransformerConfig; default: the grammar recipe's) and ``gru`` (GRUTranslator's sizes; default
    :data:`GRU`) let the real-sentence translator (:mod:`.real_translator`) build its models here too."""
    config = (RECIPE.model if config is None else config).replace(src_vocab_size=len(data.src_vocab),
                                                                   tgt_vocab_size=len(data.tgt_vocab))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if kind == "transformer":
            return Transformer(config)
        if kind == "no_positions":
            return transformer_without_positions(config)
        if kind == "gru":
            return GRUTranslator(len(data.src_vocab), len(data.tgt_vocab), max_len=config.max_len,
                                 **(GRU if gru is None else gru))
    raise ValueError(f"kind must be 'transformer', 'no_positions' or 'gru', got {kind!r}")


def train_model(kind: str, data: TranslationData, seed: int = RECIPE.seed, steps: int = RECIPE.steps,
                eval_fn=None, eval_every=None, progress: bool = False, threads: int | None = 1):
    """Train a model of ``kind`` with the recipe's steps, batch size and label smoothing; ``(model, history)``.

    Transformers use the recipe's Adam and warm-up schedule; the GRU uses Adam at a constant :data:`GRU_LR`
    with gradients clipped to norm 1 (the warm-up schedule is tuned for the Transformer). ``threads`` CPU
    threads train it (``None``: torch's setting); ``eval_fn`` / ``eval_every`` go to
    :func:`~transformer_lite.training.train`.
    """
    model = new_model(kind, data, seed)
    if kind == "gru":
        optimizer, scheduler, clip = torch.optim.Adam(model.parameters(), lr=GRU_LR), None, 1.0
    else:
        optimizer, clip = paper_adam(model.parameters()), None
        scheduler = warmup_scheduler(optimizer, RECIPE.model.d_model, RECIPE.warmup_steps, RECIPE.lr_factor)
    with num_threads(threads):  # one thread: these matrices are too small for a second one to help
        history = train(model, data.train_src, data.train_tgt, steps=steps, batch_size=RECIPE.batch_size,
                        optimizer=optimizer, scheduler=scheduler, smoothing=RECIPE.smoothing, progress=progress,
                        seed=seed, eval_fn=eval_fn, eval_every=eval_every, clip_grad_norm=clip)
    return model.eval(), history


def _translations(model, data: TranslationData) -> list[str]:
    """The model's greedy translation of every test sentence."""
    if isinstance(model, DictionaryTranslator):
        return [model.translate(en) for en, _ in data.test_pairs]
    out = greedy_decode(model, data.test_src, data.test_tgt.shape[1] - 1, BOS, EOS)
    return [data.tgt_vocab.decode(row.tolist()) for row in out]


def _measure(kind: str, data: TranslationData, log) -> dict:
    """Train (or fit) one model on ``data`` and measure its held-out exact match."""
    start, cpu = time.perf_counter(), time.thread_time()  # wall time depends on the machine's load; CPU time less
    if kind.startswith("dictionary"):
        model, threshold = fit_dictionary(data.train_pairs, reorder=kind == "dictionary_ordered")
        row = dict(parameters=None, steps=None, threshold=threshold,
                   train_seconds=round(time.perf_counter() - start, 2))
    else:
        model, history = train_model(kind, data)
        row = dict(parameters=count_parameters(model), steps=len(history.loss), train_seconds=round(history.seconds, 2),
                   final_loss=round(sum(history.loss[-50:]) / 50, 4))
    row["cpu_seconds"] = round(time.thread_time() - cpu, 2)
    out = _translations(model, data)
    right = [o == zh for o, (_, zh) in zip(out, data.test_pairs)]
    row["test_accuracy"] = sum(right) / len(right)
    log(f"  {kind:<20} n_train={len(data.train_pairs):<5} exact match {row['test_accuracy']:.3f} "
        f"({row['train_seconds']:.0f} s)")
    return row


def measure(log=print) -> dict:
    """Everything ``make capstone`` measures (a few minutes on one CPU thread), as a dict."""
    main = translation_task(RECIPE.n_train, RECIPE.n_test, seed=RECIPE.data_seed)
    shipped, _, report = load_shipped_translator()
    rows = {"transformer": dict(test_accuracy=exact_match(shipped, main.test_src, main.test_tgt, BOS, EOS),
                                parameters=count_parameters(shipped), steps=report["steps"],
                                train_seconds=report["train_seconds"], final_loss=report["final_loss"],
                                source="the shipped translator (make translator)")}
    log(f"  transformer (shipped)  exact match {rows['transformer']['test_accuracy']:.3f}")
    for kind in BASELINES:
        rows[kind] = _measure(kind, main, log)
    best = max(BASELINES, key=lambda k: rows[k]["test_accuracy"])
    # The shipped model's time is the wall time of another command on another load: train the recipe again
    # here, so that every row's CPU seconds come from this one run.
    again = _measure("transformer", main, log)
    rows["transformer"].update(cpu_seconds=again["cpu_seconds"], retrained_test_accuracy=again["test_accuracy"])
    return dict(
        command="make capstone", models=MODELS, baselines=rows, best_baseline=best,
        recipe=dataclasses.asdict(RECIPE), gru=dict(GRU, lr=GRU_LR, clip_grad_norm=1.0),
        dictionary_thresholds=list(THRESHOLDS), seed=RECIPE.seed, threads=1,
        torch=torch.__version__, processor=_processor(), machine=platform.machine(), python=platform.python_version())


def capstone_results() -> dict:
    """The numbers ``make capstone`` measured, shipped with the package."""
    if not RESULTS.exists():
        raise FileNotFoundError(f"{RESULTS} is missing; run `make capstone` in the repository to create it")
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def write_results(log=print, *, out) -> dict:
    """Measure everything and write it to ``out`` (what ``make capstone`` runs, with ``out`` the checkout's
    ``transformer_lite/book/assets/capstone_baselines.json``: :data:`RESULTS` is where the package reads it)."""
    out = output_path("out", out)
    start = time.perf_counter()
    with num_threads(1):
        results = measure(log)
    results["total_seconds"] = round(time.perf_counter() - start, 1)
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return results


def main(argv=None) -> int:
    """``make capstone``: measure chapter 13's baselines and write them to ``--out``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m transformer_lite.book.capstone", description=main.__doc__)
    ap.add_argument("--out", required=True, help="the JSON to write (make capstone: the checkout's "
                                                 "transformer_lite/book/assets/capstone_baselines.json)")
    args = ap.parse_args(argv)
    r = write_results(log=lambda s: print(s, file=sys.stderr, flush=True), out=args.out)
    print(f"wrote {args.out} in {r['total_seconds']:.0f} s; best baseline: {r['best_baseline']}")
    return 0


if __name__ == "__main__":  # make capstone
    sys.exit(main())
