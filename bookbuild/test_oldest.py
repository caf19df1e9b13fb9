#!/usr/bin/env python3
"""The package's fast tests and every chapter on the oldest torch the package allows (``make test-oldest``).

    python -m bookbuild.test_oldest [--python python3.12] [--jobs 2] [--timeout 300] [--json FILE]
                                [--skip-tests] [--skip-chapters] [notebooks/NN_....ipynb ...]

pyproject.toml's ``torch>=X`` is a promise to every reader whose Jupyter already has a torch (a Colab image
of the last year: Python 3.12 with torch 2.10): pip keeps that torch, so the book must work on it. This script
is what makes the floor a tested one. It reads the floor from pyproject.toml (so the two cannot drift apart),
and in a venv of its own, ``.venv-oldest``, with the given Python:

1. installs ``torch==X`` first, from ``$TORCH_INDEX_URL`` when set (PyTorch's CPU index on GitHub: PyPI's
   linux wheel is the CUDA build, with several GB of nvidia libraries), then the package with its ``book``
   extra as a Colab reader's set-up cell installs it (bertviz with its declared dependencies, all of them),
   plus the test tools at requirements.txt's versions. torch stays pinned to X: nothing may upgrade it.
   The venv is kept for the next run while what it installs is the same (the interpreter, X, the index,
   the package's declared dependencies, the tools; ``.venv-oldest/.key``), else made anew (a new one downloads
   torch again unless pip's cache has it: the workflow keeps that cache). The package itself (a wheel built from a copy
   of the checkout: no ``build/`` left in a checkout other work shares) is reinstalled on every run.
2. runs the package's fast tests as ``make check`` does (``-m "not browser and not slow"``), less the files
   that test the toolchain rather than the package (``NOT_THE_PACKAGE`` says why for each);
3. runs every chapter as the book build does (bookbuild/build_book.py, ``execute_into_cache`` and ``build_env``):
   bookbuild/run_notebooks.py with ``--static``, each chapter in a new kernel of the venv's Python, in a new empty
   folder, with an empty ``TRANSFORMER_LITE_CACHE`` (nothing trained before), two at a time, and every kernel
   records where it imported transformer_lite from: the venv's site-packages, or the run fails.

Prints the tests' summary and one line per chapter (pass/fail, seconds); exit status 1 if anything failed.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-oldest"
JOBS = 2  # as the book build: each chapter trains on one thread, the machines have two cores

# Test files that check the toolchain `make install` puts in .venv, or the site built with it, not the package:
# their imports (or what they assert) are not the package's and a reader's install does not have them.
NOT_THE_PACKAGE = {
    "tests/test_build_book.py": "the site build: jupyter-book, sphinx, myst, pydata-sphinx-theme, jieba",
    "tests/test_chinese_site.py": "the Chinese edition's build: jupyter-cache, myst-nb, docutils, polib",
    "tests/test_budgets.py": "the built site's page budgets: lxml, bookbuild/slim_static.py",
    "tests/test_slim_static.py": "the site's theme patches: fontTools subsets of the site's fonts",
    "tests/test_site_assets.py": "the site's assets: PyYAML, the build's configuration",
    "tests/test_i18n.py": "the Chinese edition's catalogs: polib, sphinx-intl",
    "tests/test_citation.py": "CITATION.cff: cffconvert, PyYAML",
    "tests/test_metrics.py": "BLEU and chrF against sacrebleu, a test tool (transformer_lite.metrics is plain Python)",
    "tests/test_notebooks_clean.py": "the notebooks' committed form and pre-commit's configuration",
    "tests/test_setup_cells.py": "the notebooks' set-up cells as text: PyYAML",
    "tests/test_workflows.py": "the GitHub workflow: PyYAML, actionlint",
    "tests/test_pdf.py": "the PDFs of the built site: pypdf, BeautifulSoup",
    "tests/test_suite.py": "the suite's own configuration under pytest-xdist",
    "tests/test_notices.py": "the site's licences page, at the versions of the site's packages and npm assets",
    "tests/test_repository.py": "the repository's address in the sources and the built site",
    "tests/test_oldest_torch.py": "this runner's own checks, against the site build's environment (PyYAML)",
    "tests/test_lint.py": "the sources' lint: ruff, a dev tool of the toolchain (CI=true fails without it)",
}
# Single tests of files that otherwise test the package: each asserts something of `.venv`'s toolchain that the
# oldest venv deliberately differs in.
NOT_THE_PACKAGE_TESTS = {
    "tests/test_install.py::test_torch_is_the_pinned_cpu_build": "asserts requirements.txt's pinned torch",
    "tests/test_install.py::test_bertviz_imports_without_its_declared_heavy_dependencies":
        "asserts make's --no-deps bertviz; a reader's pip installs bertviz's dependencies",
    "tests/test_translate.py::test_the_onnx_export_computes_what_pytorch_computes":
        "the ONNX export the site serves: onnxscript, onnxruntime",
    "tests/test_translate.py::test_the_export_is_reused_only_while_its_inputs_are_unchanged":
        "the ONNX export the site serves: onnxscript, onnxruntime",
    "tests/test_package_i18n.py::test_the_catalog_has_every_message_translated_and_nothing_stale":
        "bookbuild/translation/package_catalog.py's catalog maintenance: polib",
    "tests/test_package_i18n.py::test_the_catalog_reader_reads_what_polib_reads": "compares with polib",
    "tests/test_package_i18n.py::test_babel_extracts_what_tr_and_n_wrap":
        "bookbuild/translation/package_catalog.py's extraction: Babel",
    "tests/test_package_i18n.py::test_every_wrapped_message_has_its_chinese":
        "bookbuild/translation/package_catalog.py's extraction: Babel",
}
# The test tools, at the versions the toolchain's requirements give them (pytest is pinned there for
# pytest-xdist's sake); the first of these files that exists is read
TOOLS = ("pytest", "nbclient", "nbformat", "ipykernel")
TOOL_REQUIREMENTS = ("requirements.in", "requirements.txt")


def log(msg: str) -> None:
    print(f"[test-oldest] {msg}", flush=True)


def torch_floor(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The X of the package's ``torch>=X`` (the only torch requirement, one clause)."""
    deps = _project(pyproject)["dependencies"]
    reqs = [d.replace(" ", "") for d in deps if re.match(r"torch\b", d)]
    if len(reqs) != 1 or not re.fullmatch(r"torch>=[0-9][0-9.]*", reqs[0]):
        raise SystemExit(f"pyproject.toml's torch requirement is not one plain floor torch>=X: {reqs}")
    return reqs[0].split(">=", 1)[1]


def _project(pyproject: Path) -> dict:
    import tomllib  # Python >= 3.11; the Makefile runs this script with the toolchain's Python

    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]


def tool_requirements() -> list[str]:
    found = {}
    requirements = next((ROOT / f for f in TOOL_REQUIREMENTS if (ROOT / f).exists()), None)
    for line in (requirements.read_text(encoding="utf-8") if requirements else "").splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"([A-Za-z0-9_.-]+)", line)
        if m and m.group(1).lower() in TOOLS:
            found[m.group(1).lower()] = line.replace(" ", "")
    return [found.get(t, t) for t in TOOLS]


def find_python(name: str) -> str:
    """``name`` if it runs (on PATH or a path), else pyenv's newest install of that version: a pyenv shim on
    PATH fails for a version that is installed but not selected."""
    exe = shutil.which(name) or name
    if _runs(exe):
        return exe
    m = re.fullmatch(r"python(\d+\.\d+)", Path(name).name)
    if m:
        root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
        found = sorted(glob.glob(f"{root}/versions/{m.group(1)}.*/bin/python"),
                       key=lambda p: [int(x) for x in re.findall(r"\d+", Path(p).parent.parent.name)])
        for exe in reversed(found):
            if _runs(exe):
                return exe
    raise SystemExit(f"no Python {name!r}: not on PATH, nor in pyenv (set OLDEST_PYTHON=/path/to/python3.X)")


def _runs(exe: str) -> bool:
    try:
        return subprocess.run([exe, "-c", "import venv"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run(cmd: list, **kw) -> None:
    log("$ " + " ".join(map(str, cmd)))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def package_source() -> Path:
    """A copy of what the wheel is built from (the top-level files and the package), in a temporary folder:
    setuptools writes ``build/`` and ``*.egg-info`` beside the sources, and the checkout is shared."""
    src = Path(tempfile.mkdtemp(prefix="tl-oldest-src-"))
    for f in ROOT.iterdir():
        if f.is_file():
            shutil.copy2(f, src / f.name)
    shutil.copytree(ROOT / "transformer_lite", src / "transformer_lite",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def ensure_venv(python: str) -> Path:
    floor = torch_floor()
    project = _project(ROOT / "pyproject.toml")
    index = os.environ.get("TORCH_INDEX_URL", "")
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                             check=True).stdout.strip()
    key = hashlib.sha256(json.dumps({
        "python": [os.path.realpath(python), version], "torch": floor, "index": index,
        "dependencies": project["dependencies"], "book": project["optional-dependencies"]["book"],
        "tools": tool_requirements()}, sort_keys=True).encode()).hexdigest()
    py = VENV / "bin" / "python"
    stamp = VENV / ".key"
    src = package_source()
    try:
        if not (stamp.exists() and stamp.read_text().strip() == key and py.exists()):
            log(f"making {VENV.name}: Python {version.split()[0]}, torch=={floor}"
                + (f" from {index}" if index else " from PyPI"))
            shutil.rmtree(VENV, ignore_errors=True)
            run([python, "-m", "venv", VENV])
            (VENV / ".gitignore").write_text("*\n")  # as Python 3.13's venv does: git (and the snapshot of
            # tests/test_installed_package.py, which takes what git does not ignore) leaves the GBs alone
            run([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
            # torch first and alone: an index of PyTorch's serves torch and its own dependencies, not the book's
            run([py, "-m", "pip", "install", "--quiet", f"torch=={floor}"] + (["--index-url", index] if index else []))
            pin = VENV / "torch-pin.txt"
            pin.write_text(f"torch=={floor}\n")  # the package's dependencies may not lift the torch under test
            run([py, "-m", "pip", "install", "--quiet", "-c", pin, f"{src}[book]", *tool_requirements()])
            stamp.write_text(key + "\n")
        else:
            log(f"reusing {VENV.name} (same interpreter, torch=={floor}, dependencies and tools)")
        run([py, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", src])
    finally:
        shutil.rmtree(src, ignore_errors=True)
    got = subprocess.run([py, "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__)"],
                         capture_output=True, text=True, check=True).stdout.split()
    if got[1].split("+")[0] not in (floor, floor + ".0"):
        raise SystemExit(f"{VENV.name} has torch {got[1]}, not the floor {floor}")
    log(f"{VENV.name}: Python {got[0]}, torch {got[1]}")
    return py


def run_tests(py: Path) -> dict:
    for path in list(NOT_THE_PACKAGE) + list(NOT_THE_PACKAGE_TESTS):
        file, _, test = path.partition("::")  # a stale entry: whatever replaced it runs here, and fails if it must
        if not (ROOT / file).exists() or (test and not re.search(rf"^def {test}\(", (ROOT / file).read_text(), re.M)):
            log(f"note: {path} is excluded here but does not exist (bookbuild/test_oldest.py)")
    cmd = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", "-m", "not browser and not slow"]
    cmd += [f"--ignore={p}" for p in NOT_THE_PACKAGE] + [f"--deselect={t}" for t in NOT_THE_PACKAGE_TESTS]
    log("package tests; excluded, as the toolchain's rather than the package's:")
    for what, why in {**NOT_THE_PACKAGE, **NOT_THE_PACKAGE_TESTS}.items():
        log(f"  {what}: {why}")
    log("$ " + " ".join(map(str, cmd)))
    t0 = time.time()
    proc = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    summary = ""
    for line in proc.stdout:  # as it comes: the tests take a quarter of an hour on a busy machine
        sys.stdout.write(line)
        sys.stdout.flush()
        if re.search(r"\d+ (passed|failed)", line):
            summary = line.strip().strip("= ")
    return {"ok": proc.wait() == 0, "summary": summary, "seconds": round(time.time() - t0, 1)}


def kernel_env(py: Path, work: Path) -> dict:
    """bookbuild/build_book.py's ``build_env``, for the venv's kernels (that module needs the toolchain to import)."""
    env = dict(os.environ)
    env["TRANSFORMER_LITE_STATIC"] = "1"  # every control precomputed, as on the site: each one's code runs
    env["TRANSFORMER_LITE_STRICT_EXERCISES"] = "1"  # a check that rejects the chapter's own solution fails
    ipython = work / "ipython"
    startup = ipython / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy2(ROOT / "bookbuild" / "kernel_startup.py", startup / "00-transformer-lite-static.py")
    env["IPYTHONDIR"] = str(ipython)
    env["PYTHONHASHSEED"] = "0"
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["TRANSFORMER_LITE_IMPORT_LOG"] = str(work / "imports")
    (work / "imports").mkdir()
    env["TRANSFORMER_LITE_CACHE"] = str(work / "cache")  # empty: nothing trained before
    (work / "cache").mkdir()
    env["PATH"] = str(py.parent) + os.pathsep + env.get("PATH", "")
    env.pop("VIRTUAL_ENV", None)
    return env


def run_chapters(py: Path, notebooks: list[Path], jobs: int, timeout: int) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="tl-oldest-run-"))
    env = kernel_env(py, work)
    log(f"{len(notebooks)} chapter(s), {jobs} at a time, each in a new kernel and an empty folder")

    def one(nb: Path) -> dict:
        out = work / f"{nb.stem}.json"
        folder = Path(tempfile.mkdtemp(prefix="tl-oldest-nb-", dir=work))
        proc = subprocess.run([str(py), str(ROOT / "bookbuild" / "run_notebooks.py"), str(nb), "--static",
                               "--timeout", str(timeout), "--json", str(out)],
                              env=env, cwd=folder, capture_output=True, text=True)
        if not out.exists():
            r = {"notebook": nb.name, "ok": False, "seconds": None,
                 "error": {"cell": None, "name": "run_notebooks.py wrote no result", "value": proc.stderr[-2000:]}}
        else:
            r = json.loads(out.read_text())[0]
        print(_line(r), flush=True)
        return r

    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, notebooks))
    records = [Path(p.read_text(encoding="utf-8").strip()) for p in (work / "imports").glob("*.txt")]
    venv = VENV.resolve()
    wrong = [str(p) for p in records if venv not in p.resolve().parents]
    passed = sum(r["ok"] for r in results)
    if len(records) < passed or wrong:
        results.append({"notebook": "(where the kernels imported transformer_lite from)", "ok": False, "seconds": None,
                        "error": {"cell": None, "name": f"{len(records)} records for {passed} chapters",
                                  "value": f"not from {VENV.name}: {wrong[:3]}"}})
    shutil.rmtree(work, ignore_errors=True)
    return results


def _line(r: dict) -> str:
    secs = f"{r['seconds']:7.1f} s" if r["seconds"] is not None else "      - s"
    if r["ok"]:
        return f"  {r['notebook']:<40} {secs}  ok"
    e = r["error"]
    return f"  {r['notebook']:<40} {secs}  FAILED in cell {e['cell']}: {e['name']}: {str(e['value'])[:300]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="default: every chapter, notebooks/*.ipynb")
    ap.add_argument("--python", default="python3.12", help="the interpreter of the venv (name or path)")
    ap.add_argument("--jobs", type=int, default=JOBS)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell, as the build")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--skip-chapters", action="store_true")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    t0 = time.time()
    py = ensure_venv(find_python(args.python))
    tests = None if args.skip_tests else run_tests(py)
    chapters = []
    if not args.skip_chapters:
        notebooks = [Path(n).resolve() for n in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
        chapters = run_chapters(py, notebooks, args.jobs, args.timeout)
    versions = subprocess.run([py, "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__)"],
                              capture_output=True, text=True).stdout.split()
    log(f"summary on Python {versions[0]} + torch {versions[1]} ({time.time() - t0:.0f} s in all)")
    if tests is not None:
        log(f"  package tests: {'ok' if tests['ok'] else 'FAILED'}: {tests['summary']} ({tests['seconds']:.0f} s)")
    for r in chapters:
        log(_line(r))
    if chapters:
        log(f"  chapters: {sum(r['ok'] for r in chapters)} of {len(chapters)} ran without an error")
    if args.json:
        Path(args.json).write_text(json.dumps({"python": versions[0], "torch": versions[1], "tests": tests,
                                               "chapters": chapters, "seconds": round(time.time() - t0)}, indent=1))
    ok = (tests is None or tests["ok"]) and all(r["ok"] for r in chapters)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
