"""The code is lint-clean: ruff (pyproject.toml [tool.ruff]) over the package, bookbuild/, tests/ and benchmarks/.

`make check` runs the same command before its tests, and the pre-commit hook runs it on a commit's files; this test
checks what is committed, so nothing depends on a contributor having either. ruff comes from requirements.lock: where
it is missing the tests skip, except in CI (CI=true), where a missing linter would let anything through. Fast: ruff
reads the whole scope in well under a second.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCOPE = ["transformer_lite", "bookbuild", "tests", "benchmarks"]


@pytest.fixture(scope="module")
def ruff():
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ruff is not installed, and CI must lint: `make install` installs it (requirements.lock)")
        pytest.skip("ruff is not installed: `make install` installs it (requirements.lock)")

    def run(*args: str) -> subprocess.CompletedProcess:
        # --no-cache: nothing written into the checkout; the project's configuration, as `make check` reads it
        return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    return run


def test_the_code_is_lint_clean(ruff):
    proc = ruff("--output-format", "concise", *SCOPE)
    assert proc.returncode == 0, (f"ruff found problems (`.venv/bin/ruff check --fix {' '.join(SCOPE)}` fixes the "
                                  "safe ones; pyproject.toml [tool.ruff] says which rules and why):\n"
                                  f"{proc.stdout}{proc.stderr}")
    assert "warning" not in proc.stderr.lower(), proc.stderr  # e.g. a malformed noqa comment, which silences nothing


def test_the_linter_reads_every_python_file_of_its_scope_and_no_notebook(ruff):
    proc = ruff("--show-files")
    assert proc.returncode == 0, proc.stderr
    seen = {Path(line).resolve().relative_to(ROOT).as_posix() for line in proc.stdout.splitlines() if line.strip()}
    tracked = subprocess.run(["git", "ls-files", "--", *(f"{d}/*.py" for d in SCOPE)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked and set(tracked) <= seen, sorted(set(tracked) - seen)[:10]
    assert not [p for p in seen if p.endswith(".ipynb") or p.startswith("notebooks/")]


def test_the_configured_rules_catch_what_they_are_chosen_for(ruff, tmp_path):
    # one problem of each family pyproject.toml selects: a clean run above means nothing if the rules were gone
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n\nfrom typing import Optional\n\n\n"
                   "def f(x: Optional[int] = None, seen=[]):\n"
                   "    for i in range(3):\n"
                   "        seen.append(lambda: i)\n"
                   f"    return '{'x' * 120}'  \n", encoding="utf-8")
    proc = ruff("--config", str(ROOT / "pyproject.toml"), "--output-format", "concise", str(bad))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for code in ("F401", "I001", "UP045", "B006", "B023", "E501", "W291"):
        assert f" {code} " in proc.stdout, (code, proc.stdout)


def _python_files():
    for folder in SCOPE:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_nothing_edits_sys_path():
    """Every module is imported as a package's (transformer_lite, bookbuild, benchmarks, run from the root, where
    pytest's pythonpath puts the tests too): no file puts a folder of its own on sys.path."""
    import ast

    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("insert", "append", "extend")
                    and ast.unparse(node.func.value) == "sys.path"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "sys.path edited:\n" + "\n".join(found)


def test_the_package_never_imports_the_publishing_code():
    """transformer_lite is what a reader installs; bookbuild, the benchmarks and the tests are not in its wheel."""
    import ast

    found = []
    for path in sorted((ROOT / "transformer_lite").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                      if n.split(".")[0] in ("bookbuild", "benchmarks", "tests")]
    assert not found, "transformer_lite imports the publishing code:\n" + "\n".join(found)


def test_no_comment_points_at_an_issue_number():
    """A comment or docstring says why in the code's own terms: a tracker's number tells its reader nothing."""
    import re

    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
             for folder in SCOPE for p in sorted((ROOT / folder).rglob("*"))
             if p.suffix in (".py", ".js", ".css", ".html", ".mjs", ".sh") and p.is_file()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bissues? #?\d+\b", line, re.I) and "/issues/" not in line]
    assert not found, "comments that name an issue number:\n" + "\n".join(found)
