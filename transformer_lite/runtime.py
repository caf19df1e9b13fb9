"""How many CPU threads torch uses, set for one block and restored after it."""
from __future__ import annotations

import contextlib

import torch

from ._checks import check_positive_int


@contextlib.contextmanager
def num_threads(n: int | None):
    """``with num_threads(1): ...`` runs the block on ``n`` CPU threads, then restores the old count.

    The book's models are tiny: their matrices are too small for a second thread to help, one
    thread gives the same numbers on any machine, and on a busy machine two threads that wait for
    each other are many times slower. ``None`` leaves the setting alone.
    """
    if n is not None:
        check_positive_int("n", n)
    old = torch.get_num_threads()
    try:
        if n is not None:
            torch.set_num_threads(n)
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(old)
