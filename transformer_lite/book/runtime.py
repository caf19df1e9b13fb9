"""The run's seed and CPU thread count, and how another machine is simulated on this one.

Two environment variables let a test re-run the book as another machine would:

* ``TRANSFORMER_LITE_SEED`` replaces the seed of every chapter (:func:`book_seed`, used by
  :func:`transformer_lite.book.notebook.setup` and by every cell that trains a model live);
* ``TRANSFORMER_LITE_THREADS`` replaces the thread count of every ``with num_threads(n):`` block.

``tests/test_portability.py`` runs every claim about a live-trained model with other seeds,
with 1 and 2 threads, and with ``ATEN_CPU_CAPABILITY=default`` / ``MKL_CBWR=COMPATIBLE`` (PyTorch's
and MKL's CPU code paths of another processor). Readers never need to set them.
"""
from __future__ import annotations

import contextlib
import os

import torch

from .._checks import check_positive_int

SEED_ENV = "TRANSFORMER_LITE_SEED"
THREADS_ENV = "TRANSFORMER_LITE_THREADS"


def _env_int(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"${name} must be a whole number, got {text!r}") from None
    if value < 0:
        raise ValueError(f"${name} must be >= 0, got {value}")
    return value


def book_seed(default: int = 0) -> int:
    """The seed of this run: ``default``, unless ``$TRANSFORMER_LITE_SEED`` says otherwise.

    Every cell that trains a model live derives its seeds from this number, so a test can re-run
    the chapter with another seed and check that its claims still hold.
    """
    if isinstance(default, bool) or not isinstance(default, int):
        raise TypeError(f"default must be an int, got {type(default).__name__}")
    override = _env_int(SEED_ENV)
    return default if override is None else override


@contextlib.contextmanager
def num_threads(n: int | None):
    """``with num_threads(1): ...`` runs the block on ``n`` CPU threads, then restores the old count.

    The book's models are tiny: their matrices are too small for a second thread to help, and on
    a busy machine two threads that wait for each other are many times slower. ``None`` leaves
    the setting alone. ``$TRANSFORMER_LITE_THREADS``, when set, replaces ``n`` (the portability
    test uses it to check that the book's claims hold with another thread count).
    """
    if n is not None:
        check_positive_int("n", n)
        override = _env_int(THREADS_ENV)
        if override:
            n = override
    old = torch.get_num_threads()
    try:
        if n is not None:
            torch.set_num_threads(n)
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(old)
