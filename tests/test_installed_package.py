"""The book as a Colab reader gets it: the package installed with pip from the repository by the set-up
cell's own command, into an environment like Colab's.

What each chapter needs from the package *as pip installs it* is checked by the book build itself:
``make install`` installs a wheel (not ``-e .``), and bookbuild/build_book.py executes every chapter in a new
EMPTY folder with an empty ``TRANSFORMER_LITE_CACHE``, and fails if any kernel imported transformer_lite
from the checkout. So this file no longer re-runs the chapters (it did until the build did that); what it
adds is what only a Colab-like install shows:

1. **The source.** If the working tree is clean (``git status --porcelain`` prints nothing), a
   ``git clone`` of this repository, i.e. its HEAD. Otherwise a snapshot of the working tree: every
   tracked file as it is on disk plus every untracked file that ``.gitignore`` does not ignore,
   committed into a new temporary git repository. A clone alone would test the last commit, not the
   work in progress; the snapshot tests what is on disk. Either way nothing ignored (``.venv``,
   ``_build``, caches, egg-info) comes along.
2. **A Colab-like environment.** A fresh virtual environment of this Python gets a current pip, then
   what Colab preinstalls: torch at the version ``requirements.in`` pins (the CPU build here; an
   unpinned torch would pull GBs of CUDA packages), ipykernel, nbclient, nbformat, matplotlib,
   ipywidgets, numpy, tqdm, installed by uv (the toolchain's installer; pip when it is missing) and not compiled to
   bytecode ahead: Python compiles the modules a kernel imports, and compiling all of torch's thousands of files
   checks nothing here. Python 3.11's bundled pip 23.2
   rejects ``git+file:///`` requirements as "Invalid requirement"; Colab's pip is newer. The venv lives
   in ``/dev/shm`` when that has room, else in pytest's temporary folder.
3. **The Colab command.** The set-up cell's own ``%pip install -q "transformer-step-by-step[book]==V"``, as
``transformer-step-by-step[book] @ git+URL``
   with URL = ``file://<the source>``, run as ``%pip`` runs it (``<venv python> -m pip install``).
   The install is faithful: bertviz brings its declared dependencies (transformers, boto3,
   sentencepiece), as in Colab, and the preinstalled torch must stay.
4. **A chapter in that environment**, with ``bookbuild/run_notebooks.py`` copied out of the checkout and run by
   the venv's Python, in a new kernel, a new empty folder, with ``HOME`` and ``TRANSFORMER_LITE_CACHE``
   empty temporary folders, no ``PYTHONPATH``, no ``TRANSFORMER_LITE_*`` variables (live controls): first a
   probe that checks the kernel imports the INSTALLED package and draws the explainer's view as a cell's output
   (explain_view.notebook_html: the wheel's web/ files, inline), then chapter 9 (:data:`COLAB_CHAPTER`),
   which uses every part of the ``book`` extra: bertviz's views, live controls, figures with Chinese
   labels, the shipped translator.

The shipped translator (``assets/tiny_translator.pt`` and ``.json``) must be in the installed
package, and in the sdist and the wheel (built from the same source, the wheel from the unpacked
sdist; a quick test, not marked slow).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COLAB_CHAPTER = "09_decoder.ipynb"  # bertviz views, live controls, Chinese labels, the shipped translator
MAX_ASSET_BYTES = 1_000_000
ASSETS = ("transformer_lite/book/assets/tiny_translator.pt", "transformer_lite/book/assets/tiny_translator.json")
# What Colab's image has before the set-up cell runs (torch is added with the pinned version).
COLAB_PREINSTALLED = ["ipykernel", "nbclient", "nbformat", "matplotlib", "ipywidgets", "numpy", "tqdm"]
SOURCE_MADE_BY: list = []  # how the `source` fixture made the code under test (printed)
# one xdist worker runs this file: its tests share one Colab-like venv (`make test` runs `pytest -n 3 --dist loadgroup`)
pytestmark = pytest.mark.xdist_group("colab")
INSTALL_RE = re.compile(r'%pip install -q "(?P<name>transformer-step-by-step\[book\])==[^"]+"')


# --- helpers ---------------------------------------------------------------------------------------

def _run(cmd, cwd=None, env=None, timeout=1800) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                             f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}")
    return proc


def _git(*args, cwd=ROOT) -> str:
    return _run(["git", "-c", "safe.directory=*", *args], cwd=cwd).stdout


def source_tree(dest: Path) -> str:
    """Put the code under test at ``dest`` (a git repository); return how it was made."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the book")
    if not _git("status", "--porcelain").strip():
        _git("clone", "--quiet", str(ROOT), str(dest))
        return f"git clone of HEAD {_git('rev-parse', '--short', 'HEAD').strip()} (clean working tree)"
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    files = sorted({f for f in listed if f and (ROOT / f).is_file()})
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f, follow_symlinks=False)
    ident = ["-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "commit.gpgsign=false"]
    _git("-c", "init.defaultBranch=main", "init", "--quiet", cwd=dest)
    _git("add", "--all", cwd=dest)
    _git(*ident, "commit", "--quiet", "--no-verify", "-m", "snapshot of the working tree", cwd=dest)
    return f"snapshot of the working tree ({len(files)} files; uncommitted changes included)"


def torch_pin() -> str:
    for line in (ROOT / "requirements.in").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if re.match(r"torch\s*==", line):
            return line.replace(" ", "")
    raise AssertionError("requirements.in pins no torch==")


def colab_requirement(source: Path) -> str:
    """The set-up cell's requirement, the book's release on PyPI, taken from ``source`` instead."""
    nb = json.loads(next((source / "notebooks").glob("*.ipynb")).read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    match = INSTALL_RE.search("".join(cell["source"]))
    assert match, "the set-up cell has no %pip install line (see tests/test_setup_cells.py)"
    return f"{match['name']} @ git+file://{source}"


def clean_env(**extra) -> dict:
    """This process's environment without anything that would point into the checkout or change the book."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV",
            "ATEN_CPU_CAPABILITY", "MKL_CBWR", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
            "IPYTHONDIR", "MPLCONFIGDIR", "MPLBACKEND"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("TRANSFORMER_LITE_")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def reader_env(tmp: Path, venv: Path) -> dict:
    """A new reader: empty HOME, empty cache, the venv first on PATH, temporary files under ``tmp``."""
    for name in ("home", "cache", "tmp"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    return clean_env(HOME=tmp / "home", TRANSFORMER_LITE_CACHE=tmp / "cache", TMPDIR=tmp / "tmp",
                     XDG_CACHE_HOME=tmp / "home" / ".cache", XDG_CONFIG_HOME=tmp / "home" / ".config",
                     XDG_DATA_HOME=tmp / "home" / ".local" / "share",
                     PATH=os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", "")]))


def make_colab_venv(venv: Path, source: Path) -> dict:
    """Create the environment (steps 2 and 3 of the module docstring); return seconds per step."""
    env = clean_env()  # the real HOME: pip's cache makes a repeated run faster
    python = venv / "bin" / "python"
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    seconds = {}
    # What Colab's image holds before the reader comes is put there by uv when the toolchain has it (make install
    # does): the same packages in seconds of CPU where pip spends a minute; only the set-up cell's own command, the
    # thing under test, runs through the venv's pip, as %pip does. uv reads no PIP_* variables: it is given pip's
    # local wheels (PIP_FIND_LINKS, where these machines keep torch's CPU build).
    uv = Path(sys.executable).parent / "uv"
    links = [f"--find-links={d}" for d in os.environ.get("PIP_FIND_LINKS", "").split()]
    preinstall = ([uv, "pip", "install", "-q", "--python", python, *links] if uv.exists()
                  else [*pip, "--no-compile"])
    t0 = time.perf_counter()
    _run([sys.executable, "-m", "venv", venv], env=env)
    _run([*preinstall, "--upgrade", "pip"], env=env)
    seconds["venv + current pip"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _run([*preinstall, torch_pin(), *COLAB_PREINSTALLED], env=env)
    seconds["Colab's preinstalled packages (torch, ...)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # PIP_COMPILE=0 (--no-compile): pip would compile every module it installs to bytecode (transformers, botocore:
    # thousands of files); a kernel compiles the few it imports, and what is installed is the same
    _run([*pip, colab_requirement(source)], env=dict(env, PIP_COMPILE="0"))
    seconds["the set-up cell's %pip install"] = time.perf_counter() - t0
    return seconds


PROBE = r'''
import json, os, pathlib, sys
import torch, transformer_lite
venv = pathlib.Path({venv!r}).resolve()
repo = pathlib.Path({repo!r}).resolve()
pkg = pathlib.Path(transformer_lite.__file__).resolve().parent
assert pathlib.Path(sys.prefix).resolve() == venv, (sys.prefix, str(venv))
assert venv in pkg.parents, f"transformer_lite imported from {{pkg}}, not from the venv {{venv}}"
assert repo not in pkg.parents and not any(str(repo) in p for p in sys.path if p), sys.path
assert "TRANSFORMER_LITE_STATIC" not in os.environ and os.listdir(".") == [], os.listdir(".")
assert not torch.version.cuda, torch.__version__
import matplotlib.pyplot  # builds matplotlib's font cache once, as Colab's image has it
import re
from transformer_lite.book import explain_view  # the explainer's view as a cell's output, from the wheel's web/ files
view = explain_view.notebook_html("grammar", "I am a student.")
assert "tl-explainer" in view and "<script>" in view and not re.search(r'(?:src|href)="', view), view[:300]
print(json.dumps({{"package": str(pkg), "torch": torch.__version__, "python": sys.version.split()[0],
                  "explainer_view_bytes": len(view)}}))
'''


def probe_notebook(path: Path, venv: Path) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PROBE.format(venv=str(venv), repo=str(ROOT)).strip())]
    nbformat.write(nb, str(path))
    return path


# --- fixtures --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def source(tmp_path_factory):
    dest = tmp_path_factory.mktemp("source") / "transformer-step-by-step"
    dest.mkdir()
    SOURCE_MADE_BY.append(source_tree(dest))
    return dest


def venv_folder(tmp_path_factory) -> Path:
    """A new folder for the venv: in /dev/shm (memory) when it has room, else under pytest's tmp."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 4e9:
        return Path(tempfile.mkdtemp(prefix="tl-colab-venv-", dir=shm))
    return tmp_path_factory.mktemp("colab")


@pytest.fixture(scope="module")
def colab(tmp_path_factory, source):
    folder = venv_folder(tmp_path_factory)
    venv = folder / "venv"
    try:
        seconds = make_colab_venv(venv, source)
        yield {"venv": venv, "python": venv / "bin" / "python", "install_seconds": seconds}
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # ~1.5 GB


# --- tests -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_installed_package_ships_the_translator(colab, source, tmp_path, capsys):
    env = reader_env(tmp_path, colab["venv"])
    (tmp_path / "empty").mkdir()
    script = (
        "import json, pathlib, torch, transformer_lite\n"
        "from transformer_lite.book.pretrained import tiny_translator\n"
        "pkg = pathlib.Path(transformer_lite.__file__).resolve().parent\n"
        "model, data, report = tiny_translator(progress=False)\n"
        "sizes = {p.name: p.stat().st_size for p in (pkg / 'book' / 'assets').iterdir()}\n"
        "print(json.dumps({'package': str(pkg), 'sizes': sizes, 'source': report['source'],\n"
        "                  'torch': torch.__version__, 'cuda': torch.version.cuda}))\n")
    out = json.loads(_run([colab["python"], "-c", script], cwd=tmp_path / "empty", env=env).stdout.splitlines()[-1])
    pkg = Path(out["package"])
    assert colab["venv"].resolve() in pkg.parents, f"imported {pkg}, not the installed package"
    assert out["source"] == "shipped"                         # loaded, not trained
    for rel in ASSETS:
        name = Path(rel).name
        assert name in out["sizes"], f"{rel} is not in the installed package: {sorted(out['sizes'])}"
        assert 0 < out["sizes"][name] < MAX_ASSET_BYTES
        assert (pkg / "book" / "assets" / name).read_bytes() == (source / rel).read_bytes()
    # the Colab command kept the preinstalled torch (no second, CUDA, torch came along)
    assert out["torch"].split("+")[0] == torch_pin().split("==")[1].split("+")[0], out["torch"]
    assert out["cuda"] is None
    with capsys.disabled():
        print(f"\nsource: {SOURCE_MADE_BY[-1]}")
        print(f"install (fresh venv in {colab['venv'].parent.parent}, Colab's way):")
        for step, s in colab["install_seconds"].items():
            print(f"  {step:<45} {s:6.1f} s")


@pytest.mark.slow
def test_a_chapter_runs_in_the_colab_install(colab, source, tmp_path, capsys):
    runner = tmp_path / "runner" / "run_notebooks.py"   # a copy: nothing is imported from the checkout
    runner.parent.mkdir()
    shutil.copy2(source / "bookbuild" / "run_notebooks.py", runner)
    chapter = source / "notebooks" / COLAB_CHAPTER
    probe = probe_notebook(tmp_path / "runner" / "00_probe_installed_package.ipynb", colab["venv"])
    results_file = tmp_path / "results.json"
    work = tmp_path / "cwd"
    work.mkdir()
    proc = subprocess.run([str(colab["python"]), str(runner), str(probe), str(chapter), "--json", str(results_file)],
                          cwd=work, env=reader_env(tmp_path, colab["venv"]), capture_output=True, text=True,
                          timeout=900)
    assert results_file.exists(), f"run_notebooks.py wrote no results:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    probe_result, chapter_result = json.loads(results_file.read_text())
    assert probe_result["ok"], \
        f"the probe failed in the kernel (the installed package, the explainer's view): {probe_result['error']}"
    with capsys.disabled():
        print(f"\n{COLAB_CHAPTER} in the Colab-like install: {chapter_result['seconds']:.1f} s (kernel start included)")
    e = chapter_result["error"]
    assert chapter_result["ok"], \
        f"{COLAB_CHAPTER} fails in the Colab install: cell {e['cell']}: {e['name']}: {e['value'][:800]}"


def test_sdist_and_wheel_contain_the_shipped_translator(source, tmp_path):
    pytest.importorskip("setuptools")
    dist = tmp_path / "dist"
    dist.mkdir()
    build = tmp_path / "build-src"
    shutil.copytree(source, build, ignore=shutil.ignore_patterns(".git"))
    # the sdist, as `python -m build --sdist` makes it (PEP 517 hook of the declared backend)
    _run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})"],
         cwd=build, env=clean_env())
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name}
        for rel in ASSETS:
            assert rel in members, f"{rel} is not in the sdist {sdist.name}"
            assert 0 < members[rel].size < MAX_ASSET_BYTES
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(tmp_path / "unpacked", **safe)
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    # the wheel, built from the unpacked sdist as `python -m build` does (with this Python's
    # setuptools: offline and quick; the slow tests above build with pip's isolation, as Colab does)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "--disable-pip-version-check", "-w", dist, unpacked], env=clean_env())
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        sizes = {i.filename: i.file_size for i in zf.infolist()}
        for rel in ASSETS:
            assert rel in sizes, f"{rel} is not in the wheel {wheel.name}"
            assert 0 < sizes[rel] < MAX_ASSET_BYTES
            assert zf.read(rel) == (source / rel).read_bytes()


def test_the_declared_torch_floor_is_a_torch_the_tests_run():
    """pyproject.toml may not promise a torch that no test runs: its floor is the torch `make test-oldest` installs
    (bookbuild/test_oldest.py reads it from there, and the scheduled workflow runs it), and it is no newer than the
    torch the whole suite runs (requirements.in)."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (floor,) = [d.replace(" ", "") for d in deps if re.match(r"torch\b", d)]
    assert floor.startswith("torch>="), floor
    pinned = torch_pin().split("==")[1].split("+")[0]
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    assert as_tuple(floor[len("torch>="):]) <= as_tuple(pinned), (floor, pinned)
    workflows = "".join(p.read_text(encoding="utf-8") for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    assert "make test-oldest" in workflows, "no workflow runs the oldest torch"
