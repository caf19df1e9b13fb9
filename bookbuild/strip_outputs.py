#!/usr/bin/env python3
"""Notebooks are committed without outputs: strip what running them leaves behind.

    python -m bookbuild.strip_outputs NB...          # strip these notebooks in place (the pre-commit hook)
    python -m bookbuild.strip_outputs --check NB...  # only list the ones that are not clean; exit 1 if any
    python -m bookbuild.strip_outputs                # every notebook, notebooks/*.ipynb and notebooks/zh/*.ipynb

Stripped: every code cell's outputs and execution count, the timings JupyterLab records in a cell's
metadata (``execution``, ``ExecuteTime``), and the widget state it saves in the notebook's metadata
(``widgets``). Kept: everything the book reads (tags, ``jupyter.source_hidden``, Colab's ``cellView``,
``mystnb``, the kernelspec). A clean notebook is written back byte for byte as it was (the format every tool
of the book writes: JSON, indent 1, UTF-8 unescaped, a final newline).

The build executes the notebooks itself; a committed output would only go stale, and would make the Chinese
notebooks (generated from the English ones) differ for nothing. ``.pre-commit-config.yaml`` runs this on
every committed notebook; ``tests/test_notebooks_clean.py`` checks them all, so nothing depends on a
contributor having the hook.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELL_METADATA_RUN_KEYS = ("execution", "ExecuteTime")
NOTEBOOK_METADATA_RUN_KEYS = ("widgets",)


def book_notebooks(root: Path = ROOT) -> list[Path]:
    """Every notebook of both editions."""
    notebooks = Path(root) / "notebooks"
    return sorted(notebooks.glob("*.ipynb")) + sorted((notebooks / "zh").glob("*.ipynb"))


def problems(nb: dict) -> list[str]:
    """What running left in ``nb``: one line per cell (by its number, from 1) or notebook key."""
    found = []
    for i, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") == "code":
            if cell.get("outputs"):
                found.append(f"cell {i}: {len(cell['outputs'])} output(s)")
            if cell.get("execution_count") is not None:
                found.append(f"cell {i}: execution count {cell['execution_count']}")
        for key in CELL_METADATA_RUN_KEYS:
            if key in cell.get("metadata", {}):
                found.append(f"cell {i}: metadata {key!r}")
    for key in NOTEBOOK_METADATA_RUN_KEYS:
        if key in nb.get("metadata", {}):
            found.append(f"notebook metadata {key!r}")
    return found


def strip(nb: dict) -> dict:
    """``nb`` without outputs, execution counts and run metadata (changed in place and returned)."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        for key in CELL_METADATA_RUN_KEYS:
            cell.get("metadata", {}).pop(key, None)
    for key in NOTEBOOK_METADATA_RUN_KEYS:
        nb.get("metadata", {}).pop(key, None)
    return nb


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only list the notebooks that are not clean")
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook of both editions")
    args = ap.parse_args(argv)
    dirty = 0
    for path in args.notebooks or book_notebooks():
        nb = json.loads(path.read_text(encoding="utf-8"))
        found = problems(nb)
        if not found:
            continue
        dirty += 1
        if args.check:
            print(f"{path}: " + "; ".join(found))
        else:
            path.write_text(dumps(strip(nb)), encoding="utf-8")
            print(f"{path}: stripped ({len(found)} item(s))")
    # as a pre-commit hook, a rewritten file fails the commit once, so the stripped file is what gets staged
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main())
