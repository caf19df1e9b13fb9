"""The book's tiny English -> Chinese translator, trained once and cached on disk.

Several chapters look inside a *trained* model (heads in chapter 4, the encoder in 9,
the decoder in 10, the capstone in 13). :func:`tiny_translator` trains it with one fixed
recipe (:data:`RECIPE`) in about a minute on a CPU, saves it, and afterwards loads it in
a fraction of a second. The file name holds a hash of the recipe and the torch version,
so changing either retrains instead of loading a stale model.

Cache directory: ``$TRANSFORMER_LITE_CACHE``, else ``~/.cache/transformer_lite``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import torch

from ._checks import check_positive_int
from .data import BOS, EOS, TranslationData, translation_task
from .decoding import exact_match
from .model import Transformer, count_parameters
from .runtime import num_threads
from .training import paper_adam, train, warmup_scheduler


_CACHE_FORMAT = "2"  # bump when what the cache file holds changes


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the trained model. Change a field -> a different cache file."""

    # data: the generated English -> Chinese task (transformer_lite.data.translation_task)
    n_train: int = 4000  # training sentence pairs
    n_test: int = 500  # held-out pairs: the exact-match accuracy is measured on these
    data_seed: int = 0
    # model: a small Post-LN Transformer (the paper's layout, scaled down)
    d_model: int = 64
    nhead: int = 4
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    dim_feedforward: int = 128
    dropout: float = 0.1
    norm_first: bool = False
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


def cache_dir() -> Path:
    """Where trained models are kept: ``$TRANSFORMER_LITE_CACHE`` or ``~/.cache/transformer_lite``."""
    return Path(os.environ.get("TRANSFORMER_LITE_CACHE") or Path.home() / ".cache" / "transformer_lite")


def _data(recipe: Recipe) -> TranslationData:
    return translation_task(recipe.n_train, recipe.n_test, seed=recipe.data_seed)


def _model(recipe: Recipe, data: TranslationData) -> Transformer:
    return Transformer(len(data.src_vocab), len(data.tgt_vocab), d_model=recipe.d_model, nhead=recipe.nhead,
                       num_encoder_layers=recipe.num_encoder_layers, num_decoder_layers=recipe.num_decoder_layers,
                       dim_feedforward=recipe.dim_feedforward, dropout=recipe.dropout,
                       norm_first=recipe.norm_first, max_len=64)


def train_tiny_translator(seed: int | None = None, progress: bool = True, device=None, recipe: Recipe | None = None,
                          threads: int | None = 1, **overrides):
    """Train the translator from scratch with the book's recipe; returns ``(model, data, report)``.

    ``seed`` overrides ``recipe.seed``; any other :class:`Recipe` field can be overridden by
    keyword (``steps=300``). The model comes back in eval mode.

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
    scheduler = warmup_scheduler(optimizer, recipe.d_model, recipe.warmup_steps, factor=recipe.lr_factor)
    with num_threads(threads if device.type == "cpu" else None) as used_threads:
        history = train(model, data.train_src, data.train_tgt, steps=recipe.steps, batch_size=recipe.batch_size,
                        optimizer=optimizer, scheduler=scheduler, smoothing=recipe.smoothing, progress=progress,
                        seed=recipe.seed, device=device)
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
        recipe=dataclasses.asdict(recipe),
        loss_curve=[round(x, 4) for x in history.loss],
    )
    return model, data, report


def tiny_translator(force_retrain: bool = False, progress: bool = True, recipe: Recipe | None = None):
    """The book's trained translator: ``(model, data, report)``, trained once, then loaded from the cache.

    The model is on the CPU, in eval mode. ``report`` is the one written when it was trained
    (see :func:`train_tiny_translator`), plus ``cache_file`` and ``from_cache``.
    ``force_retrain=True`` trains again and overwrites the cache file.
    """
    recipe = recipe if recipe is not None else RECIPE
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe, got {type(recipe).__name__}")
    path = cache_dir() / f"tiny_translator-{recipe.key()}.pt"
    if path.exists() and not force_retrain:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        data = _data(recipe)
        model = Transformer(**saved["config"])
        model.load_state_dict(saved["state_dict"])
        model.eval()
        report = dict(json.loads(saved["report"]), cache_file=str(path), from_cache=True)
        return model, data, report

    model, data, report = train_tiny_translator(progress=progress, recipe=recipe)
    model = model.cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save({"state_dict": model.state_dict(), "config": model.config, "report": json.dumps(report)}, tmp)
    os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    return model, data, dict(report, cache_file=str(path), from_cache=False)
