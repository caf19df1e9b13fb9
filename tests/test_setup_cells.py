"""Colab and Binder: every chapter installs the release of the package the book was written for.

The set-up cell (each notebook's first code cell) is the same in every chapter; in Colab, where
``transformer_lite`` is missing, it runs ``%pip install -q "transformer-step-by-step[book]==<version>"``, the
release of ``pyproject.toml``'s version on PyPI. Colab opens the committed notebook straight from the repository,
so that line names no repository: a fork's Colab readers install the same release. ``bookbuild/release.py bump``
writes a new version into the cells (and pyproject.toml, CITATION.cff). Binder builds from ``binder/`` (the CPU
build of the pinned torch).
"""
import difflib
import importlib.util
import json
import re
import shutil
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
FIX = ("run `python -m bookbuild.release bump <version>` and `python -m bookbuild.i18n notebooks`, and commit the "
       "notebooks")


def _tool():
    spec = importlib.util.spec_from_file_location("release", ROOT / "bookbuild" / "release.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def _setup_source(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "".join(_tool().setup_cell(nb)["source"])


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_every_setup_cell_installs_the_books_release_from_pypi(edition):
    wanted = f'%pip install -q "transformer-step-by-step[book]=={_version()}"'
    notebooks = NOTEBOOKS if edition == "en" else ZH_NOTEBOOKS
    assert len(notebooks) >= 16
    wrong = {}
    for path in notebooks:
        lines = [line.strip() for line in _setup_source(path).splitlines()]
        installs = [line for line in lines if "%pip" in line or "pip install" in line]
        if installs != [wanted]:
            wrong[path.name] = installs
    assert not wrong, f"set-up cells that do not install {wanted}: {wrong}; {FIX}"


def test_setup_cells_are_the_same_in_every_chapter():
    sources = {path.name: _setup_source(path) for path in NOTEBOOKS}
    common, count = Counter(sources.values()).most_common(1)[0]
    assert "import transformer_lite" in common and "from transformer_lite.book.notebook import setup" in common
    assert re.search(r"^except ImportError:", common, re.M), "the install must run only where the package is missing"
    assert "github.com" not in common and "git+" not in common, "Colab opens the committed cell: no repository in it"
    odd = {name: "".join(difflib.unified_diff(common.splitlines(True), src.splitlines(True), "most chapters", name))
           for name, src in sources.items() if src != common}
    assert not odd, "set-up cells that differ from the others:\n" + "\n".join(odd.values())
    assert count == len(NOTEBOOKS)


def test_bump_writes_one_version_everywhere_it_is_written(tmp_path):
    tool = _tool()
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".*", "zh"))
    for name in ("pyproject.toml", "CITATION.cff"):
        shutil.copyfile(ROOT / name, tmp_path / name)
    old = _version()
    before = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("*.ipynb")}
    changed = tool.bump("9.8.7", tmp_path)
    assert len(changed) == len(before) + 2
    assert tool.version(tmp_path) == "9.8.7"
    cff = yaml.safe_load((tmp_path / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(cff["version"]) == "9.8.7"
    for name, old_text in before.items():
        new_text = (tmp_path / "notebooks" / name).read_text(encoding="utf-8")
        diff = [(a, b) for a, b in zip(old_text.splitlines(), new_text.splitlines()) if a != b]
        assert len(old_text.splitlines()) == len(new_text.splitlines()) and len(diff) == 1, name
        assert diff[0][0].replace(f"=={old}", "==9.8.7") == diff[0][1]    # the same JSON formatting
    assert tool.bump("9.8.7", tmp_path) == []                               # idempotent
    with pytest.raises(ValueError, match="version must look like"):
        tool.bump("latest", tmp_path)


def test_binder_installs_the_cpu_build_of_the_pinned_torch():
    launch = _config()["launch_buttons"]
    if not launch.get("binderhub_url"):
        pytest.skip("no Binder button")
    reqs = [line.split("#", 1)[0].strip() for line in (ROOT / "requirements.in").read_text().splitlines()]
    pinned = [line for line in reqs if re.match(r"torch\s*==", line)]
    assert len(pinned) == 1, pinned
    version = pinned[0].split("==", 1)[1].strip()
    assert version.endswith("+cpu"), version

    binder = [line.split("#", 1)[0].strip() for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()]
    binder = [line for line in binder if line]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in binder
    assert [line for line in binder if line.startswith("torch")] == [f"torch=={version}"]
    assert "jupyterlab" in [re.split(r"[<>=!~ ]", line)[0] for line in binder]
    assert ".[book]" in binder      # the package itself, with the notebooks' extras, as Colab installs it
    # repo2docker runs `pip install -r binder/requirements.txt` from the repository's root, and
    # reads nothing from the root while binder/ exists
    assert not (ROOT / "binder" / "environment.yml").exists()
