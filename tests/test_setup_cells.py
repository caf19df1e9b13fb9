"""Colab and Binder: every chapter installs the package from the ONE address in ``_config.yml``.

The set-up cell (each notebook's first code cell) is the same in every chapter; in Colab, where
``transformer_lite`` is missing, it runs ``%pip install -q "transformer_lite[book] @ git+<url>"``
with ``<url>`` = ``repository.url``. ``tools/set_repository_url.py`` rewrites the cells after that
address changes. Binder builds from ``binder/`` (the CPU build of the pinned torch).
"""
import difflib
import importlib.util
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FIX = "run `python tools/set_repository_url.py` and commit the notebooks it rewrites"


def _tool():
    spec = importlib.util.spec_from_file_location("set_repository_url", ROOT / "tools" / "set_repository_url.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _setup_source(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "".join(_tool().setup_cell(nb)["source"])


def test_every_setup_cell_installs_from_the_repository_url_in_config():
    url = _config()["repository"]["url"]
    assert url.startswith("https://") and " " not in url
    wanted = f'%pip install -q "transformer_lite[book] @ git+{url}"'
    assert len(NOTEBOOKS) >= 16
    wrong = {}
    for path in NOTEBOOKS:
        lines = [line.strip() for line in _setup_source(path).splitlines()]
        installs = [line for line in lines if "%pip" in line or "pip install" in line]
        if installs != [wanted]:
            wrong[path.name] = installs
    assert not wrong, f"set-up cells that do not install from repository.url ({url}): {wrong}; {FIX}"


def test_setup_cells_are_the_same_in_every_chapter():
    sources = {path.name: _setup_source(path) for path in NOTEBOOKS}
    common, count = Counter(sources.values()).most_common(1)[0]
    assert "import transformer_lite" in common and "from transformer_lite.book.notebook import setup" in common
    assert re.search(r"^except ImportError:", common, re.M), "the install must run only where the package is missing"
    odd = {name: "".join(difflib.unified_diff(common.splitlines(True), src.splitlines(True), "most chapters", name))
           for name, src in sources.items() if src != common}
    assert not odd, "set-up cells that differ from the others:\n" + "\n".join(odd.values())
    assert count == len(NOTEBOOKS)


def test_set_repository_url_rewrites_only_the_install_line(tmp_path):
    tool = _tool()
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".*"))
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    old_url = _config()["repository"]["url"]
    new_url = "https://github.com/someone-else/their-fork"
    (tmp_path / "_config.yml").write_text(config.replace(old_url, new_url), encoding="utf-8")
    assert tool.repository_url(tmp_path) == new_url

    before = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("*.ipynb")}
    assert len(tool.rewrite(tmp_path, check=True)) == len(before)        # --check writes nothing
    assert {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("*.ipynb")} == before
    assert tool.main(["--root", str(tmp_path), "--check"]) == 1

    assert len(tool.rewrite(tmp_path)) == len(before)
    for name, old_text in before.items():
        new_text = (tmp_path / "notebooks" / name).read_text(encoding="utf-8")
        changed = [(a, b) for a, b in zip(old_text.splitlines(), new_text.splitlines()) if a != b]
        assert len(old_text.splitlines()) == len(new_text.splitlines()) and len(changed) == 1, name
        assert changed[0][0].replace(old_url, new_url) == changed[0][1]    # the same JSON formatting
    assert tool.rewrite(tmp_path) == []                                      # idempotent
    assert tool.main(["--root", str(tmp_path), "--check"]) == 0

    with pytest.raises(ValueError, match="url"):
        tool.install_line('https://x" && rm -rf /')


def test_binder_installs_the_cpu_build_of_the_pinned_torch():
    launch = _config()["launch_buttons"]
    if not launch.get("binderhub_url"):
        pytest.skip("no Binder button")
    reqs = [line.split("#", 1)[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    pinned = [line for line in reqs if re.match(r"torch\s*==", line)]
    assert len(pinned) == 1, pinned
    version = pinned[0].split("==", 1)[1].strip()

    binder = [line.split("#", 1)[0].strip() for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()]
    binder = [line for line in binder if line]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in binder
    assert [line for line in binder if line.startswith("torch")] == [f"torch=={version}+cpu"]
    assert "jupyterlab" in [re.split(r"[<>=!~ ]", line)[0] for line in binder]
    assert ".[book]" in binder      # the package itself, with the notebooks' extras, as Colab installs it
    # repo2docker runs `pip install -r binder/requirements.txt` from the repository's root, and
    # reads nothing from the root while binder/ exists
    assert not (ROOT / "binder" / "environment.yml").exists()
