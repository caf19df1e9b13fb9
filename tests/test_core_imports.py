"""The core of transformer_lite needs only torch, numpy and tqdm; the book's helpers live apart.

A reader who copies the Transformer into a project (or a server that only decodes) should not
need matplotlib, ipywidgets, IPython or bertviz. The test imports every core module in a fresh
interpreter and lists every top-level module that got imported and is not in Python's standard
library: what torch itself imports (numpy, sympy, ...) is allowed, anything the book's helpers
would bring is not.
"""
from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import transformer_lite

ROOT = Path(__file__).resolve().parent.parent
CORE = sorted(m.name for m in pkgutil.iter_modules(transformer_lite.__path__) if m.name != "book")
BOOK_ONLY = {"matplotlib", "ipywidgets", "IPython", "bertviz", "mplfonts", "ipykernel", "PIL"}

PROBE = r"""
import importlib, json, sys
import torch, numpy, tqdm.auto  # the core's three dependencies, and whatever they import
allowed = set(sys.modules)
for name in {modules!r}:
    importlib.import_module("transformer_lite." + name)
new = sorted({{m.split(".")[0] for m in set(sys.modules) - allowed}})
print(json.dumps({{"new": new, "all": sorted({{m.split(".")[0] for m in sys.modules}})}}))
"""


def _imported(modules):
    out = subprocess.run([sys.executable, "-c", PROBE.format(modules=modules)], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_core_modules_are_the_ones_the_issue_names():
    for name in ("attention", "masks", "normalization", "embeddings", "layers", "model", "interop",
                 "decoding", "training", "data", "metrics"):
        assert name in CORE, f"transformer_lite.{name} is missing from the core: {CORE}"
    for name in ("notebook", "runtime", "interactive", "plotting", "viz", "pretrained"):
        assert name not in CORE, f"transformer_lite.{name} is a book helper; it belongs in transformer_lite.book"


def test_the_core_imports_only_torch_numpy_tqdm():
    got = _imported(CORE)
    third_party = [m for m in got["new"] if m not in sys.stdlib_module_names and m != "transformer_lite"]
    assert third_party == [], f"importing the core pulled in {third_party}"
    assert not BOOK_ONLY & set(got["all"]), f"the core imported book-only packages: {BOOK_ONLY & set(got['all'])}"


def test_the_probe_sees_a_book_helper_import():
    # The same probe over a book module must notice matplotlib: the test above can fail.
    got = _imported(["book.plotting"])
    assert "matplotlib" in got["new"]
