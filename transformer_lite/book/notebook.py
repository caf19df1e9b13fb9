"""Small conveniences for the book's notebooks: one set-up call, and showing the package's code."""
from __future__ import annotations

import inspect
import platform
import random

import numpy as np
import torch


def setup(seed: int = 0, threads: int | None = None, language: str | None = None) -> torch.device:
    """Seed every generator, print the versions this run uses, and return the device.

    ``language`` ("en" or "zh"; None leaves it as it is) is the language of everything the package shows from
    here on: the exercise checks' feedback, the figures' default labels, the controls (:mod:`.i18n`).
    The Chinese notebooks call ``setup(seed=0, language="zh")``.

    Training cells use the GPU where one is present (Colab); everything else runs on the CPU.
    ``$TRANSFORMER_LITE_SEED`` replaces ``seed`` (see :mod:`transformer_lite.book.runtime`): the
    portability test re-runs the chapters with other seeds that way.
    """
    from .. import __version__
    from .i18n import set_language, tr
    from .runtime import book_seed

    if language is not None:
        set_language(language)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = book_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if threads is not None:
        torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(tr("python {python} | torch {torch} | transformer_lite {version} | device {device} | threads {threads} "
             "| seed {seed}", python=platform.python_version(), torch=torch.__version__, version=__version__,
             device=device, threads=torch.get_num_threads(), seed=seed))
    try:  # the book's plot style, when matplotlib is there
        from .plotting import use_book_style
    except ImportError:
        pass
    else:
        use_book_style()
    return device


def source(obj) -> str:
    """The source code of a function, class or method of the package, as a string."""
    try:
        return inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(f"obj must be a function, class or method defined in Python source, got {obj!r}") from e


def show_source(obj) -> None:
    """Display the source of ``obj`` as a highlighted Python code block (the one the chapter runs)."""
    from IPython.display import Markdown, display

    display(Markdown(f"```python\n{source(obj)}```"))
