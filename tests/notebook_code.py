"""The code of the chapters, for tests that check what a chapter defines in one of its cells.

One helper for every test file (tests/ is on ``sys.path`` under pytest, so ``from notebook_code import ...``).
"""
from __future__ import annotations

import json
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def notebook_path(notebook: str | Path) -> Path:
    """``"03_self_attention"`` (a chapter's stem) or a path -> the notebook's path."""
    path = Path(notebook)
    return path if path.suffix == ".ipynb" else NOTEBOOKS / f"{notebook}.ipynb"


def code_cells(notebook: str | Path) -> list[str]:
    """The source of every code cell, in order."""
    cells = json.loads(notebook_path(notebook).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def code_cell(notebook: str | Path, startswith: str, until: str | None = None) -> str:
    """The one code cell whose source starts with ``startswith`` (leading blank lines ignored), cut before
    the first line that starts with ``until`` when given (the definition, without the demo that follows)."""
    found = [s for s in code_cells(notebook) if s.lstrip().startswith(startswith)]
    if len(found) != 1:
        raise LookupError(f"{notebook_path(notebook).name}: expected one code cell starting with {startswith!r}, "
                          f"found {len(found)}")
    return found[0].split(f"\n{until}")[0] if until else found[0]


def exec_cell(notebook: str | Path, startswith: str, namespace: dict, until: str | None = None) -> dict:
    """Run that cell's code in ``namespace`` (compiled under the notebook's name, for tracebacks)."""
    exec(compile(code_cell(notebook, startswith, until), str(notebook_path(notebook)), "exec"), namespace)
    return namespace
