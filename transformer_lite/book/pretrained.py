"""The book's tiny English -> Chinese translator: trained once, shipped with the package.

Several chapters look inside a *trained* model (heads in chapter 4, the encoder in 9, the
decoder in 10, inference in 12, the capstone in 13), and they assert what that model does
with particular sentences. Training is reproducible on one machine only: another CPU rounds
differently, and 500 steps later it is another model. So the model is trained once, by
``make translator`` (``python -m transformer_lite.book.pretrained``), with one fixed recipe
(:data:`RECIPE`), and its weights ship inside the package (``transformer_lite/book/assets/``):
every reader, every build and every Colab session loads the identical model.

* :func:`tiny_translator` loads the shipped model (no training).
* :func:`train_tiny_translator` trains one from scratch, with any seed or recipe change.
* :func:`benchmark_results` reads the numbers ``make bench`` measured, which ship alongside.
* ``tiny_translator(recipe=other)`` trains a model of another recipe once and caches it in
  ``$TRANSFORMER_LITE_CACHE``, else ``~/.cache/transformer_lite``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from .._checks import check_positive_int
from ..data import BOS, EOS, TranslationData, translation_task
from ..decoding import exact_match
from ..model import Transformer, TransformerConfig, count_parameters
from ..training import paper_adam, train, warmup_scheduler
from .runtime import num_threads

_CACHE_FORMAT = "3"  # bump when what the cache file holds changes


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the trained model. Change a field -> a different cache file."""

    # data: the generated English -> Chinese task (transformer_lite.data.translation_task)
    n_train: int = 4000  # training sentence pairs
    n_test: int = 500  # held-out pairs: the exact-match accuracy is measured on these
    data_seed: int = 0
    # model: a small Post-LN Transformer (the paper's layout, scaled down); the vocabulary sizes come from the data
    model: TransformerConfig = TransformerConfig(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                                 dim_feedforward=128, dropout=0.1, max_len=64)
    # optimisation: the paper's Adam + warm-up schedule, label smoothing
    steps: int = 500
    batch_size: int = 64
    warmup_steps: int = 100
    lr_factor: float = 1.0  # the schedule's peak is lr_factor / sqrt(d_model * warmup_steps)
    smoothing: float = 0.1
    seed: int = 0  # model initialisation, batches and dropout

    def key(self) -> str:
        """A short hash of the recipe and the torch version (different torch -> retrain)."""
        text = json.dumps(dataclasses.asdict(self), sort_keys=True) + torch.__version__ + _CACHE_FORMAT
        return hashlib.sha256(text.encode()).hexdigest()[:12]


RECIPE = Recipe()  # the book's recipe


ASSETS = Path(__file__).resolve().parent / "assets"
SHIPPED_WEIGHTS = ASSETS / "tiny_translator.pt"  # state_dict + config (float32, ~0.7 MB)
SHIPPED_REPORT = ASSETS / "tiny_translator.json"  # recipe, training report, sha256 of the weights
SHIPPED_BENCHMARKS = ASSETS / "benchmarks.json"  # what `make bench` (benchmarks/run.py) measured


def output_path(name: str, value) -> Path:
    """``value`` as the path a ``make`` target writes a model or a measurement to, given explicitly.

    The readers (:func:`shipped_report`, ...) read the copy inside the imported package; a writer must not, since
    under ``make`` that copy may be the one installed in ``site-packages``, where git never sees what it wrote. So
    every writer takes its path from the caller (the Makefile passes one in the checkout), and a path inside an
    installed package is refused.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or a path, got {type(value).__name__}")
    path = Path(value)
    if str(value) == "":
        raise ValueError(f"{name} must name a file or a folder, got an empty string")
    if {"site-packages", "dist-packages"} & set(path.resolve().parts):
        raise ValueError(f"{name} is inside an installed package ({path}), where git never sees what is written; "
                         "pass a path in the repository's checkout (transformer_lite/book/assets/...)")
    return path


def experiments_main(argv, *, prog: str, target: str, asset: str, experiments, write_results) -> int:
    """The command line of a ``make`` target that measures named experiments into one JSON (``make grammar-lab``,
    ``make since2017``): ``[experiment ...] --out PATH``; the experiments not named keep their results in ``--out``.
    ``write_results(log=, only=, out=)`` measures and writes, returning the results with their ``total_seconds``."""
    import argparse

    ap = argparse.ArgumentParser(prog=f"python -m {prog}",
                                 description=f"make {target}: measure the experiments (or only those named) and "
                                             "write them to --out")
    ap.add_argument("only", nargs="*", metavar="experiment",
                    help=f"measure only these, keeping the others already in --out (of {', '.join(experiments)})")
    ap.add_argument("--out", required=True, help=f"the JSON to write (make {target}: the checkout's "
                                                 f"transformer_lite/book/assets/{asset})")
    args = ap.parse_args(argv)
    unknown = [name for name in args.only if name not in experiments]
    if unknown:  # not argparse's choices: with nargs="*", Python 3.11 checks the empty list against them and fails
        ap.error(f"unknown experiment(s) {', '.join(unknown)}; choose from {', '.join(experiments)}")
    r = write_results(log=lambda s: print(s, file=sys.stderr, flush=True), only=args.only or None, out=args.out)
    print(f"wrote {args.out} in {r['total_seconds']:.0f} s")
    return 0


def cache_dir() -> Path:
    """Where trained models are kept: ``$TRANSFORMER_LITE_CACHE`` or ``~/.cache/transformer_lite``."""
    return Path(os.environ.get("TRANSFORMER_LITE_CACHE") or Path.home() / ".cache" / "transformer_lite")


def _data(recipe: Recipe) -> TranslationData:
    return translation_task(recipe.n_train, recipe.n_test, seed=recipe.data_seed)


def _model(recipe: Recipe, data: TranslationData) -> Transformer:
    return Transformer(recipe.model.replace(src_vocab_size=len(data.src_vocab), tgt_vocab_size=len(data.tgt_vocab)))


def _processor() -> str:
    """The CPU's model name where the system says it (Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def train_tiny_translator(seed: int | None = None, progress: bool = True, device=None, recipe: Recipe | None = None,
                          threads: int | None = 1, eval_fn=None, eval_every: int | None = None, **overrides):
    """Train the translator from scratch with the book's recipe; returns ``(model, data, report)``.

    ``seed`` overrides ``recipe.seed``; any other :class:`Recipe` field can be overridden by
    keyword (``steps=300``). The model comes back in eval mode. ``eval_fn(model)`` is called every
    ``eval_every`` steps (see :func:`transformer_lite.training.train`), e.g. to print sample translations.

    ``threads=1`` trains on one CPU thread (restored afterwards): the matrices are so small
    that a second thread mostly waits for the first -- on a busy machine it is many times
    slower -- and one thread gives the same numbers whatever the number of cores. ``None`` keeps torch's setting.

    ``report`` is a dict:
    ``train_seconds``, ``test_accuracy`` (greedy exact match on the held-out pairs),
    ``train_accuracy`` (on the first ``n_test`` training pairs), ``steps``, ``final_loss``,
    ``parameters``, ``device``, ``torch``, ``threads``, ``recipe``, and ``loss_curve`` (the loss of every step).
    """
    recipe = recipe if recipe is not None else RECIPE
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe, got {type(recipe).__name__}")
    if seed is not None:
        overrides["seed"] = seed
    fields = {f.name for f in dataclasses.fields(Recipe)}
    for name in overrides:
        if name not in fields:
            raise TypeError(f"train_tiny_translator got an unexpected keyword {name!r}; "
                            f"Recipe fields are {sorted(fields)}")
    recipe = dataclasses.replace(recipe, **overrides)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)

    if threads is not None:
        check_positive_int("threads", threads)
    data = _data(recipe)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe.seed)
        model = _model(recipe, data).to(device)
    optimizer = paper_adam(model.parameters())
    scheduler = warmup_scheduler(optimizer, recipe.model.d_model, recipe.warmup_steps, factor=recipe.lr_factor)
    with num_threads(threads if device.type == "cpu" else None) as used_threads:
        history = train(model, data.train_src, data.train_tgt, steps=recipe.steps, batch_size=recipe.batch_size,
                        optimizer=optimizer, scheduler=scheduler, smoothing=recipe.smoothing, progress=progress,
                        seed=recipe.seed, device=device, eval_fn=eval_fn, eval_every=eval_every)
        model.eval()
        n = recipe.n_test
        test_accuracy = exact_match(model, data.test_src, data.test_tgt, BOS, EOS)
        train_accuracy = exact_match(model, data.train_src[:n], data.train_tgt[:n], BOS, EOS)
    report = dict(
        train_seconds=round(history.seconds, 2),
        test_accuracy=test_accuracy,
        train_accuracy=train_accuracy,
        steps=recipe.steps,
        final_loss=round(sum(history.loss[-50:]) / len(history.loss[-50:]), 4),
        parameters=count_parameters(model),
        device=str(device),
        torch=torch.__version__,
        threads=used_threads,
        machine=platform.machine(),
        processor=_processor(),
        python=platform.python_version(),
        recipe=dataclasses.asdict(recipe),
        loss_curve=[round(x, 4) for x in history.loss],
    )
    return model, data, report


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(path: Path | None = None, saved: dict | None = None) -> Transformer:
    saved = saved if saved is not None else torch.load(path, map_location="cpu", weights_only=True)
    model = Transformer(TransformerConfig(**saved["config"]))
    model.load_state_dict(saved["state_dict"])
    return model.eval()


def shipped_report() -> dict:
    """The training report of the shipped translator (what ``make translator`` measured)."""
    if not SHIPPED_REPORT.exists() or not SHIPPED_WEIGHTS.exists():
        raise FileNotFoundError(f"the shipped translator is missing ({SHIPPED_WEIGHTS}); "
                                "run `make translator` in the repository to create it")
    return json.loads(SHIPPED_REPORT.read_text(encoding="utf-8"))


def benchmark_results() -> dict | None:
    """The results of ``make bench`` that ship with the package, or ``None`` if this copy has none.

    ``benchmarks/run.py`` writes them to ``assets/benchmarks.json``: ratios of our model's time to
    PyTorch's, the key/value cache's speed-up, attention's time and memory against the sequence
    length, and the machine they were measured on (``["machine"]``).
    """
    if not SHIPPED_BENCHMARKS.exists():
        return None
    return json.loads(SHIPPED_BENCHMARKS.read_text(encoding="utf-8"))


def load_shipped_translator():
    """The translator that ships with the package: ``(model, data, report)``, identical everywhere."""
    report = shipped_report()
    if report["recipe"] != dataclasses.asdict(RECIPE):
        raise RuntimeError("the shipped translator was trained with another recipe than RECIPE; "
                           "run `make translator` to train it again with the book's recipe")
    if _sha256(SHIPPED_WEIGHTS) != report["weights_sha256"]:
        raise RuntimeError(f"{SHIPPED_WEIGHTS.name} does not match the sha256 in {SHIPPED_REPORT.name}; "
                           "run `make translator` to write both again")
    model = _load(SHIPPED_WEIGHTS)
    return model, _data(RECIPE), dict(report, source="shipped", from_cache=True, cache_file=str(SHIPPED_WEIGHTS))


def tiny_translator(force_retrain: bool = False, progress: bool = True, recipe: Recipe | None = None):
    """The book's trained translator: ``(model, data, report)``. No training unless you ask for it.

    * With the book's recipe (the default) it is the model shipped with the package, made by
      ``make translator``: the same weights on every machine. ``report`` is the report written
      when it was trained (see :func:`train_tiny_translator`), plus ``source="shipped"``.
    * ``force_retrain=True`` trains a fresh model here and returns it (its report says how long it took);
      the shipped file is left alone. On another machine a fresh model is a slightly different model.
    * Another ``recipe`` is trained once, then loaded from ``cache_dir()`` (``source="cache"``).

    The model is on the CPU, in eval mode.
    """
    recipe = recipe if recipe is not None else RECIPE
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe, got {type(recipe).__name__}")
    if recipe == RECIPE:
        if not force_retrain:
            return load_shipped_translator()
        model, data, report = train_tiny_translator(progress=progress, recipe=recipe)
        return model.cpu(), data, dict(report, source="trained", from_cache=False, cache_file=None)

    path = cache_dir() / f"tiny_translator-{recipe.key()}.pt"
    if path.exists() and not force_retrain:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model = _load(saved=saved)  # the file is read once: weights and report
        report = dict(json.loads(saved["report"]), source="cache", cache_file=str(path), from_cache=True)
        return model, _data(recipe), report

    model, data, report = train_tiny_translator(progress=progress, recipe=recipe)
    model = model.cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save({"state_dict": model.state_dict(), "config": model.config.to_dict(), "report": json.dumps(report)},
               tmp)
    os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    return model, data, dict(report, source="trained", cache_file=str(path), from_cache=False)


def write_weights(path: Path, saved: dict) -> None:
    """``torch.save(saved)`` to ``path`` atomically: a concurrent reader never sees half a file."""
    buffer = io.BytesIO()  # not a file: torch.save would write the temporary file's name into the archive
    torch.save(saved, buffer)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, path)


def write_shipped_translator(*, out_dir, progress: bool = True) -> dict:
    """Train the book's translator with :data:`RECIPE` and write the files the package ships into ``out_dir``.

    This is what ``make translator`` runs, with ``out_dir`` the checkout's ``transformer_lite/book/assets``. It
    writes ``tiny_translator.pt`` (weights and config, float32) and ``tiny_translator.json`` (recipe, training
    report, sha256 of the weights). Returns the report.
    """
    out_dir = output_path("out_dir", out_dir)
    model, _, report = train_tiny_translator(progress=progress, recipe=RECIPE)
    model = model.cpu().float()
    out_dir.mkdir(parents=True, exist_ok=True)
    weights = out_dir / SHIPPED_WEIGHTS.name
    write_weights(weights, {"state_dict": model.state_dict(), "config": model.config.to_dict()})
    report = dict(report, weights_sha256=_sha256(weights), weights_bytes=weights.stat().st_size,
                  command="make translator")
    (out_dir / SHIPPED_REPORT.name).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    return report


def main(argv=None) -> int:
    """``make translator``: train the translator and write its weights and report into ``--out-dir``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m transformer_lite.book.pretrained", description=main.__doc__)
    ap.add_argument("--out-dir", required=True,
                    help="the folder to write tiny_translator.pt and .json into (make translator: the checkout's "
                         "transformer_lite/book/assets)")
    args = ap.parse_args(argv)
    r = write_shipped_translator(out_dir=args.out_dir, progress=sys.stderr.isatty())
    print(f"wrote {Path(args.out_dir) / SHIPPED_WEIGHTS.name} ({r['weights_bytes'] / 1e6:.2f} MB) and "
          f"{SHIPPED_REPORT.name}: held-out exact match {r['test_accuracy']:.3f}, {r['train_seconds']:.0f} s on "
          f"{r['processor']}, torch {r['torch']}")
    return 0


if __name__ == "__main__":  # make translator
    sys.exit(main())
