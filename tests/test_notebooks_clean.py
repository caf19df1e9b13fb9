"""Every committed notebook, in both editions, is clean: no outputs, no execution counts, no run metadata.

The pre-commit hook (.pre-commit-config.yaml, bookbuild/strip_outputs.py) strips them before a commit; this test
checks what is committed, so nothing depends on a contributor having installed the hook. Fast: reads JSON.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bookbuild import strip_outputs

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = strip_outputs.book_notebooks()


def test_both_editions_are_covered():
    names = {p.relative_to(ROOT).as_posix() for p in NOTEBOOKS}
    assert any(n.startswith("notebooks/zh/") for n in names) and "notebooks/00_why_transformers.ipynb" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_the_notebook_is_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = strip_outputs.problems(nb)
    assert not found, (f"{path.relative_to(ROOT)} holds what a run left: {'; '.join(found[:5])} -- "
                       f"run `python -m bookbuild.strip_outputs {path.relative_to(ROOT)}` (or the pre-commit hook)")
    assert strip_outputs.dumps(nb) == path.read_text(encoding="utf-8"), \
        "not in the book's notebook format (JSON, indent 1, UTF-8 unescaped, final newline)"


def test_strip_removes_what_a_run_leaves_and_keeps_what_the_book_reads(tmp_path):
    clean = {"cells": [{"cell_type": "code", "execution_count": None, "id": "a",
                        "metadata": {"tags": ["hide-input"], "jupyter": {"source_hidden": True}, "cellView": "form"},
                        "outputs": [], "source": ["x = 1"]},
                       {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["# 标题"]}],
             "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    ran = json.loads(json.dumps(clean))
    ran["cells"][0].update(execution_count=3, outputs=[{"output_type": "stream", "name": "stdout", "text": ["1\n"]}])
    ran["cells"][0]["metadata"]["execution"] = {"iopub.status.busy": "2025-01-01"}
    ran["metadata"]["widgets"] = {"state": {}}
    dirty, tidy = tmp_path / "dirty.ipynb", tmp_path / "clean.ipynb"
    dirty.write_text(strip_outputs.dumps(ran), encoding="utf-8")
    tidy.write_text(strip_outputs.dumps(clean), encoding="utf-8")
    assert len(strip_outputs.problems(ran)) == 4
    assert strip_outputs.main(["--check", str(dirty), str(tidy)]) == 1
    assert strip_outputs.dumps(ran) == dirty.read_text(encoding="utf-8")  # --check writes nothing
    before = tidy.stat().st_mtime_ns
    assert strip_outputs.main([str(dirty), str(tidy)]) == 1  # a hook that rewrote a file fails the commit once
    assert dirty.read_text(encoding="utf-8") == tidy.read_text(encoding="utf-8") == strip_outputs.dumps(clean)
    assert tidy.stat().st_mtime_ns == before  # a clean notebook is not rewritten
    assert strip_outputs.main([str(dirty), str(tidy)]) == 0


def test_the_pre_commit_hooks_are_valid_local_and_cover_both_editions():
    clientlib = pytest.importorskip("pre_commit.clientlib")  # a dev tool (requirements.in)
    config = clientlib.load_config(str(ROOT / ".pre-commit-config.yaml"))  # raises on an invalid config
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert all(repo["repo"] == "local" for repo in config["repos"])  # nothing to clone from the network
    strip = hooks["strip-notebook-outputs"]
    assert strip["entry"].split()[1:] == ["-m", "bookbuild.strip_outputs"]
    import re

    for path in NOTEBOOKS:
        assert re.search(strip["files"], path.relative_to(ROOT).as_posix()), path
    requirements = (ROOT / "requirements.in").read_text(encoding="utf-8")
    for hook in hooks.values():
        program, *args = hook["entry"].split()
        assert program.startswith(".venv/bin/"), hook["entry"]  # the project's venv: nothing installed for the hook
        if Path(program).name == "python":  # a command of the repository's publishing package
            assert args[0] == "-m" and (ROOT / (args[1].replace(".", "/") + ".py")).exists(), hook["entry"]
        else:  # a tool of the locked toolchain
            assert re.search(rf"^{re.escape(Path(program).name)}==", requirements, re.M), hook["entry"]
    # the linter's hook sees the linter's scope (pyproject.toml [tool.ruff]) and not the notebooks
    ruff = hooks["ruff"]
    for path in ("transformer_lite/model.py", "bookbuild/build_book.py", "tests/conftest.py", "benchmarks/run.py"):
        assert re.search(ruff["files"], path) and "python" in ruff["types"], path
    assert not any(re.search(ruff["files"], p.relative_to(ROOT).as_posix()) for p in NOTEBOOKS)
