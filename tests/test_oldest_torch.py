"""bookbuild/test_oldest.py (``make test-oldest``) runs the chapters as the book build does, tests the floor
pyproject.toml declares, and finds a Python the way the Makefile's OLDEST_PYTHON promises.

The run itself (a venv of several GB, half an hour) is not part of the tests: the scheduled workflow runs it."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from bookbuild import build_book as bb

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location("oldest_runner", ROOT / "bookbuild" / "test_oldest.py")
oldest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oldest)


def test_the_chapters_get_every_variable_the_build_gives_its_kernels(tmp_path, monkeypatch):
    """A variable the build starts giving its kernels (a switch the chapters read) must reach the oldest run too,
    with the same value; only the folders differ (each run has its own). The kernels read the ones the package,
    the kernels' start-up file or the runner names, and Python's, IPython's and OpenMP's; the build's other
    variables are for Sphinx (the published address)."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    build = bb.build_env(tmp_path / "build" / ".ipython")
    ours = oldest.kernel_env(Path(sys.executable), tmp_path / "oldest")
    kernels_code = "".join(p.read_text(encoding="utf-8") for p in [*(ROOT / "transformer_lite").rglob("*.py"),
                           ROOT / "bookbuild" / "kernel_startup.py", ROOT / "bookbuild" / "run_notebooks.py"])
    added = {k for k, v in build.items() if os.environ.get(k) != v
             and (k in kernels_code or k in {"IPYTHONDIR", "PYTHONHASHSEED", "OMP_WAIT_POLICY", "PATH"})}
    assert {"TRANSFORMER_LITE_STATIC", "TRANSFORMER_LITE_STRICT_EXERCISES", "TRANSFORMER_LITE_IMPORT_LOG",
            "IPYTHONDIR", "PYTHONHASHSEED"} <= added
    missing = added - set(ours)
    assert not missing, f"bookbuild/test_oldest.py's kernel_env lacks what build_env sets: {missing}"
    folders = {"IPYTHONDIR", "TRANSFORMER_LITE_IMPORT_LOG", "PATH"}
    assert {k: ours[k] for k in added - folders} == {k: build[k] for k in added - folders}
    assert ours["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    # the kernels start with the build's start-up file (no tqdm widgets; each records where it imported the package)
    startup = Path(ours["IPYTHONDIR"]) / "profile_default" / "startup" / "00-transformer-lite-static.py"
    assert startup.read_bytes() == (ROOT / "bookbuild" / "kernel_startup.py").read_bytes()
    # nothing trained before: the cache starts empty, and is not the reader's own
    assert Path(ours["TRANSFORMER_LITE_CACHE"]).is_dir() and not any(Path(ours["TRANSFORMER_LITE_CACHE"]).iterdir())


@pytest.mark.parametrize("deps,floor", [
    (["torch>=2.10", "numpy"], "2.10"),
    (["numpy", "torch >= 2.9.1", "tqdm"], "2.9.1"),
    (["torch>=2.10,<3"], None),      # a floor and a ceiling: which torch is the oldest one to test is not one clause
    (["torch"], None),                # no floor at all
    (["torch>=2.10", "torch<3"], None),
    (["torchvision>=0.2", "numpy"], None),
])
def test_the_torch_it_installs_is_pyprojects_floor(tmp_path, deps, floor):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'x'\ndependencies = [%s]\n" % ", ".join(f'"{d}"' for d in deps))
    if floor is None:
        with pytest.raises(SystemExit, match="torch"):
            oldest.torch_floor(pyproject)
    else:
        assert oldest.torch_floor(pyproject) == floor


def test_the_checkouts_floor_is_one_it_can_install():
    floor = oldest.torch_floor()
    assert all(part.isdigit() for part in floor.split(".")), floor


def test_a_pyenv_python_is_found_when_the_name_on_path_does_not_run(tmp_path, monkeypatch):
    """OLDEST_PYTHON ?= python3.12: on PATH (GitHub's container), else pyenv's newest 3.12.x, whose shim on PATH
    fails while another version is selected (as on the project's machines)."""
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python3.99"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.99: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    for version in ("3.99.2", "3.99.10", "3.98.1"):
        bin_dir = tmp_path / "pyenv" / "versions" / version / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(shims) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    assert oldest.find_python("python3.99") == str(tmp_path / "pyenv" / "versions" / "3.99.10" / "bin" / "python")
    assert oldest.find_python(sys.executable) == sys.executable
    with pytest.raises(SystemExit, match="python3.97"):
        oldest.find_python("python3.97")


def test_the_tests_it_leaves_out_exist_and_each_says_why():
    for path, why in {**oldest.NOT_THE_PACKAGE, **oldest.NOT_THE_PACKAGE_TESTS}.items():
        file, _, test = path.partition("::")
        assert (ROOT / file).is_file(), path
        if test:
            assert f"\ndef {test}(" in (ROOT / file).read_text(encoding="utf-8"), path
        assert len(why) > 10, path
    assert "tests/test_oldest_torch.py" in oldest.NOT_THE_PACKAGE  # this file imports the site build


def test_the_makefile_runs_it_with_oldest_python():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "OLDEST_PYTHON ?= python3.12" in makefile
    assert "\ntest-oldest:\n\t$(PYTHON) -m bookbuild.test_oldest --python $(OLDEST_PYTHON)\n" in makefile
