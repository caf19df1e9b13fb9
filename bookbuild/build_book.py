#!/usr/bin/env python3
"""Build the book's static site into _build/html: self-contained, strict, cached.

    python -m bookbuild.build_book                 # what `make book` runs
    python -m bookbuild.build_book --existing-only # while chapters are being written: toc of the files that exist

Steps:
1. The site's JavaScript comes from npm (package.json / package-lock.json; `npm ci` when node_modules
   does not hold what the lock file pins) and is copied into ``_assets/tl/`` (git-ignored). Sphinx copies
   ``html_static_path`` into ``_build/html/_static/``, so the site serves ``_static/tl/...`` itself.
   The folder is deliberately not called ``_static``: Jupyter Book would add every .js/.css in a
   ``_static/`` folder at the book root to every page.
   The shipped translators (grammar, real sentences) are exported to ONNX into ``_assets/tl/translator/`` beside ONNX
   Runtime Web (``write_translator``; the export is cached, keyed on its inputs): the static page runs the very models
   the package ships. This step runs on one core beside step 3.
2. ``TRANSFORMER_LITE_STATIC=1`` is exported; the notebook kernels inherit the build's environment, so
   ``transformer_lite.book.interactive`` precomputes every control (no ipywidgets on the page); and
   ``IPYTHONDIR`` points the kernels at a start-up file (bookbuild/kernel_startup.py) that keeps tqdm from
   drawing ipywidgets progress bars, which would be dead on the site. (tqdm's own switch,
   ``TQDM_DISABLE=1``, does not reach ``tqdm.auto`` in a kernel: see that file.)
3. The chapters the execution cache lacks are executed first, two at a time (each chapter trains on one
   thread, so two share the two cores), both editions' chapters in one pool, the longest first (their last measured
   running time, benchmarks/notebooks.json), so that neither core idles before the last one ends, by
   bookbuild/run_notebooks.py: each in a new kernel of the venv's
   Python, in a new EMPTY folder, with ``TRANSFORMER_LITE_CACHE`` an empty folder too. The kernels import
   ``transformer_lite`` as pip installed it into the venv (``make install`` installs a wheel, not ``-e .``);
   every kernel records where it imported the package from (bookbuild/kernel_startup.py) and the build fails if
   any imported it from the checkout. So the build itself shows that every chapter runs from the package as
   pip installs it, in an empty folder. The executed notebooks go into Jupyter Book's execution cache.
4. ``jupyter-book build --all -W -n --keep-going``: any warning or notebook error fails the build;
   notebooks come from jupyter-cache, so an unchanged rebuild re-executes nothing (a chapter that failed in
   step 3 is executed again here, and its error reported the usual way).
5. What the theme's defaults would get wrong is configured in ``_config.yml`` (the colour mode, the extension list
   without sphinx-thebe) or written by the book's own templates and Sphinx extension (bookbuild/sphinx_ext/) while
   Sphinx writes the pages. After both editions are built, one step changes the built site: ``slim_site``
   (bookbuild/slim_static.py) makes it lighter for a phone. It edits the built pages in place (Pygments' ``<span>``s
   that draw nothing in a code block are unwrapped to their text) and the site's ``pygments.css`` (the code block's own
   colour added), cuts the fonts to the glyphs the site draws and the theme's stylesheet to the rules its pages can
   match, and replaces theme scripts that lay the page out again and again as it loads with patched copies (its
   docstring lists each change). Then the checks fail the build if something did not take: no page > 2 MB, the site
   < 80 MB (two editions), no reference to another host left in a src/href that the browser would load, no
   ipywidgets output, the configured colour mode on every page.
6. The Chinese edition (bookbuild/i18n.py) is built into ``_build/html/zh/``, by a Sphinx process (one core) that starts
   as soon as the Chinese chapters have all run (they run a little ahead of the English ones, ``AHEAD_SECONDS``),
   beside the last English chapters and then beside step 4's, from its own execution: the Chinese
   notebooks (notebooks/zh/: Chinese comments and figure strings, ``setup(language="zh")``) are executed in
   step 3, with ``TRANSFORMER_LITE_LANGUAGE=zh`` too, into their own cache (``_build/.jupyter_cache_zh``), so the
   checks' feedback, the figures (and their alt text) and the controls are Chinese. Each chapter page is built from
   the English notebook's markdown (the catalogs translate it: their msgids are the English paragraphs, and the
   anchors stay the English slugs every link uses) with the Chinese notebook's executed code cells in place of the
   English ones (translation.edition.zh_site_notebooks; the cells must correspond one to one), nothing executed by
   Sphinx. Its search index must hold Chinese words (jieba, with the glossary's terms as words), else search finds
   its pages by their titles alone. Once both editions are built, its ``_static/`` keeps only what differs from the
   English edition's, which its pages load (``share_static``), and its ``_static/tl/tl-translator.js`` is written: a
   loader of the English edition's copy (``zh_translator_loader``).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path

import yaml  # PyYAML (requirements.in)

from bookbuild import repository  # bookbuild/repository.py: where the book is published

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "_assets" / "tl"
NODE = ROOT / "node_modules"
MAX_PAGE = 2 * 1024 * 1024
MAX_PDF = 40 * 1024 * 1024   # each edition's PDF (`make pdf`), linked from every page when it exists: not in MAX_SITE
MAX_SITE = 80 * 1024 * 1024  # two editions (one _static/, the English edition's: the Chinese pages load it too)
CACHE = ROOT / "_build" / ".jupyter_cache"  # Jupyter Book 1's execution cache of the English notebooks
CACHE_ZH = ROOT / "_build" / ".jupyter_cache_zh"  # the Chinese notebooks' (notebooks/zh/), executed in Chinese
ZH_PAGES = ROOT / "_build" / ".zh-notebooks"  # what the Chinese site's chapters are built from (zh_site_notebooks)
JOBS = 2  # chapters executed at once: each trains on one thread (runtime.num_threads(1)), the machines have 2 cores
# How much earlier the Chinese chapters start than as long English ones (execute_editions' ahead), in
# benchmarks/notebooks.json's seconds (a chapter alone; in the build, two at a time beside the export, about twice
# that): the Chinese Sphinx pass, which starts once they have all run, takes about 25 s longer than the English one (it
# parses every translated paragraph again), so it starts while the last English chapters still run, instead of
# finishing alone on one core while the other idles. 1.0 puts the four shortest English chapters (5.7-6.3 s there, about
# 30 s of the build's two slots) after every Chinese one: the Chinese pass, on two thirds of a core meanwhile, has then
# about as much left as the English pass takes, and the two end together. (1.5, six chapters, started it so early that
# the English pass ended alone: 15 s with one core idle.)
AHEAD_SECONDS = 1.0

# (source in node_modules, destination under _assets/tl)
COPIES = [
    ("requirejs/require.js", "requirejs/require.js"),
    ("d3/dist/d3.min.js", "d3/d3.min.js"),            # bertviz's views are written for d3 v5
    ("jquery/dist/jquery.min.js", "jquery/jquery.min.js"),
    # MathJax's web fonts only: the math is typeset when the site is built (bookbuild/sphinx_ext/tl_math.py), and each
    # page's stylesheet loads the fonts of its glyphs from here; no MathJax script is on the site
    ("mathjax/es5/output/chtml/fonts/woff-v2", "mathjax/output/chtml/fonts/woff-v2"),
]


def log(msg: str) -> None:
    print(f"[build_book] {msg}", file=sys.stderr, flush=True)


def npm_matches_lock(root: Path = ROOT) -> bool:
    """node_modules holds what package-lock.json pins, by npm's own record of what it installed
    (node_modules/.package-lock.json), not by file times, which a copy or a checkout changes."""
    try:
        locked = json.loads((root / "package-lock.json").read_text(encoding="utf-8"))["packages"]
        installed = json.loads((root / "node_modules" / ".package-lock.json").read_text(encoding="utf-8"))["packages"]
    except (OSError, KeyError, TypeError, ValueError):
        return False

    def pins(packages):  # path in node_modules -> (version, integrity); "" is the project itself
        return {path: (pkg.get("version"), pkg.get("integrity")) for path, pkg in packages.items() if path}

    return pins(locked) == pins(installed)


def npm_ci() -> None:
    if npm_matches_lock():
        return
    log("npm ci (the site's JavaScript, pinned in package-lock.json)")
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ROOT, check=True)


def assemble_assets() -> Path:
    """Copy the pinned npm files and our own small scripts into _assets/tl/."""
    npm_ci()
    if ASSETS.exists():
        shutil.rmtree(ASSETS)
    ASSETS.mkdir(parents=True)
    for src, dst in COPIES:
        s, d = NODE / src, ASSETS / dst
        if not s.exists():
            raise SystemExit(f"missing {s}: run `npm ci`")
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d)
        else:
            shutil.copy2(s, d)
    # the site's own scripts, and the explainer's view, which the package ships (a notebook's view draws with it)
    for f in [*(ROOT / "bookbuild" / "site_assets").iterdir(), *(ROOT / "transformer_lite" / "book" / "web").iterdir()]:
        if f.is_file():
            shutil.copy2(f, ASSETS / f.name)
    write_translator(ASSETS / "translator")
    return ASSETS


def write_translator(dest: Path) -> dict:
    """The shipped translators for the browser (chapters 12 and 13), exported to ONNX, with ONNX Runtime Web
    from npm (bookbuild/web_export.py); loaded by the page on first use. The export is reused from
    ``_build/.onnx-cache/`` while the weights, the exporter and its versions are unchanged."""
    import logging

    from bookbuild.web_export import write_site_assets
    from transformer_lite.book.runtime import num_threads

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # "torchvision is not installed" notes
    t0 = time.time()
    with num_threads(1):  # it runs beside the chapters' kernels (main)
        result = write_site_assets(dest, NODE, cache_dir=ROOT / "_build" / ".onnx-cache")
    how = "; ".join(f"{k} {'from the export cache' if result['cached'][k] else 'exported to ONNX'} "
                    f"(ONNX Runtime vs PyTorch: {result['max_error'][k]:.1e})" for k in result["cached"])
    log(f"translators in {time.time() - t0:.0f} s: {how}; "
        + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in result["sizes"].items()))
    return result


def expected_seconds(path: Path, times: Path = ROOT / "benchmarks" / "notebooks.json") -> float:
    """How long a chapter ran when it was last measured (benchmarks/notebooks.json, either edition: they compute the
    same); a chapter without a figure counts as long, so that it starts early."""
    try:
        return float(json.loads(times.read_text(encoding="utf-8"))["seconds"][path.stem])
    except (OSError, ValueError, KeyError):
        return float("inf")


def execute_into_cache(notebooks: list[Path], jobs: int = JOBS, timeout: int = 300, cache_dir: Path = CACHE,
                       extra_env: dict | None = None) -> list[str]:
    """Execute the notebooks that the execution cache ``cache_dir`` lacks, ``jobs`` at a time (step 3 of the
    module docstring), and cache them as Jupyter Book would. Returns the problems (a chapter that raised).
    ``extra_env`` is added to the kernels' environment (the Chinese pass: TRANSFORMER_LITE_LANGUAGE=zh and its
    own TRANSFORMER_LITE_IMPORT_LOG)."""
    return execute_editions([(notebooks, cache_dir, extra_env or {})], jobs=jobs, timeout=timeout)


def execute_editions(editions: list[tuple[list[Path], Path, dict]], jobs: int = JOBS, timeout: int = 300,
                     ahead: int | None = None, when_done: dict | None = None) -> list[str]:
    """Execute, for each ``(notebooks, cache_dir, extra_env)``, the notebooks its execution cache lacks, and cache them
    as Jupyter Book would. All editions share one pool of ``jobs`` kernels, the longest chapters first
    (:func:`expected_seconds`): the two cores stay busy until the last chapter ends, instead of idling at the end of
    each edition's pass. Returns the problems (a chapter that raised).

    ``ahead``: the index of an edition whose chapters start :data:`AHEAD_SECONDS` earlier than as long a chapter of
    another edition would, so that it is all executed a few chapters before the others are. ``when_done``: ``{index:
    callable}``, each called (with no argument, in this thread) as soon as every chapter of that edition has run and
    been cached; main starts the Chinese edition's Sphinx pass with it, while the last English chapters still run."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    out = Path(tempfile.mkdtemp(prefix="tl-executed-"))
    tasks = []  # (notebook, its cache, its environment, the folder its executed copy goes to)
    for i, (notebooks, cache_dir, extra_env) in enumerate(editions):
        cache = get_cache(str(cache_dir))
        todo = []
        for path in notebooks:
            try:
                cache.match_cache_notebook(nbformat.read(str(path), as_version=4))
            except KeyError:
                todo.append(path)
        if not todo:
            continue
        env = dict(build_env(), **extra_env)
        env["TRANSFORMER_LITE_CACHE"] = tempfile.mkdtemp(prefix="tl-build-cache-")  # nothing trained before
        shutil.rmtree(env["TRANSFORMER_LITE_IMPORT_LOG"], ignore_errors=True)
        Path(env["TRANSFORMER_LITE_IMPORT_LOG"]).mkdir(parents=True)
        (out / str(i)).mkdir()
        tasks += [(path, cache, env, out / str(i)) for path in todo]
    if not tasks:
        return []
    edition_of = {str(saved): int(saved.name) for *_, saved in tasks}
    order = execution_order([(path, edition_of[str(saved)]) for path, *_, saved in tasks], ahead)
    tasks.sort(key=lambda t: order.index((t[0], edition_of[str(t[3])])))
    left = {i: sum(1 for *_, saved in tasks if edition_of[str(saved)] == i) for i in set(edition_of.values())}
    log(f"executing {len(tasks)} notebook(s), {jobs} at a time, the longest first, each in a new empty folder")
    t0 = time.time()

    def run(task) -> dict:
        path, _, env, saved = task
        result = saved / f"{path.stem}.json"
        subprocess.run([sys.executable, str(ROOT / "bookbuild" / "run_notebooks.py"), str(path), "--static",
                        "--timeout", str(timeout), "--save", str(saved), "--json", str(result)],
                       env=env, cwd=saved, capture_output=True, text=True)
        if not result.exists():
            return {"notebook": path.name, "ok": False, "seconds": None,
                    "error": {"cell": None, "name": "run_notebooks.py wrote no result", "value": ""}}
        return json.loads(result.read_text())[0]

    problems = []
    with ThreadPoolExecutor(jobs) as pool:
        running = {pool.submit(run, task): task for task in tasks}
        for future in as_completed(running):
            (path, cache, _, saved), r = running[future], future.result()
            left[edition_of[str(saved)]] -= 1
            if not r["ok"]:  # Jupyter Book executes it again and reports the error its usual way
                e = r["error"]
                problems.append(f"{path.relative_to(ROOT)} failed in cell {e['cell']}: {e['name']}: {e['value'][:300]}")
                _edition_done(left, edition_of[str(saved)], when_done)
                continue
            executed, source = (nbformat.read(str(f), as_version=4) for f in (saved / path.name, path))
            # the cache keys on the code, the cells' metadata and the kernelspec: the runner wrote its kernel's
            # own kernelspec (this venv's Python, as the notebook's "python3" is in the build) and each cell's
            # execution times, which Jupyter Book would not match; the notebook's own are put back
            executed.metadata["kernelspec"] = source.metadata.get("kernelspec", {})
            for done, cell in zip(executed.cells, source.cells):
                done.metadata = cell.metadata
            cache.add_nb_to_project(str(path))
            cache.cache_notebook_bundle(CacheBundleIn(executed, str(path), data={"execution_seconds": r["seconds"]}),
                                        check_validity=False, overwrite=True)
            cache.match_cache_notebook(source)  # a KeyError here: Jupyter Book would run it again
            log(f"  {path.relative_to(ROOT)}: {r['seconds']:.1f} s")
            _edition_done(left, edition_of[str(saved)], when_done)
    shutil.rmtree(out, ignore_errors=True)
    failed = {path for path, *_ in tasks} & {ROOT / p.split(" failed in cell")[0] for p in problems}
    for log_dir in {task[2]["TRANSFORMER_LITE_IMPORT_LOG"] for task in tasks}:
        ok = sum(1 for path, _, env, _ in tasks if env["TRANSFORMER_LITE_IMPORT_LOG"] == log_dir and path not in failed)
        recorded = len(list(Path(log_dir).glob("*.txt")))
        if recorded < ok:  # every chapter imports transformer_lite; each kernel must have said where from
            problems.append(f"{ok} notebooks ran but only {recorded} kernels recorded where transformer_lite came from "
                            f"(bookbuild/kernel_startup.py; {log_dir})")
    log(f"executed {len(tasks) - len(failed)} of {len(tasks)} notebook(s) in {time.time() - t0:.0f} s")
    return problems


def execution_order(chapters: list[tuple[Path, int]], ahead: int | None = None, times: Path | None = None) -> list:
    """``chapters`` (each a notebook and its edition's index) in the order execute_editions starts them: the longest
    first (:func:`expected_seconds`), the chapters of the edition ``ahead`` as if :data:`AHEAD_SECONDS` longer."""
    def expected(chapter):
        path, edition = chapter
        seconds = expected_seconds(path) if times is None else expected_seconds(path, times)
        return seconds + (AHEAD_SECONDS if edition == ahead else 0.0)

    return sorted(chapters, key=expected, reverse=True)


def _edition_done(left: dict, edition: int, when_done: dict | None) -> None:
    """Call ``when_done[edition]`` once no chapter of that edition is left to run (execute_editions)."""
    if left[edition] == 0 and when_done and edition in when_done:
        when_done[edition]()


def installed_package_used(log_dir: Path | None = None) -> list[str]:
    """Every kernel of this build imported transformer_lite from the venv, as pip installed it, not from
    the checkout (bookbuild/kernel_startup.py records it; ``make install`` installs a wheel, not ``-e .``)."""
    log_dir = Path(build_env()["TRANSFORMER_LITE_IMPORT_LOG"]) if log_dir is None else log_dir
    records = sorted(log_dir.glob("*.txt")) if log_dir.is_dir() else []
    wrong = []
    checkout = (ROOT / "transformer_lite").resolve()
    for record in records:
        where = Path(record.read_text(encoding="utf-8").strip()).resolve()
        if checkout in where.parents or "site-packages" not in where.parts:
            wrong.append(f"{record.stem}: {where}")
    if wrong:
        return ["notebook kernels imported transformer_lite from the checkout, not the installed package "
                f"(run `make install`, which installs a wheel): {wrong[:3]}"]
    return []


def read_yaml(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a YAML mapping at the top level, got {type(data).__name__}")
    return data


def toc_entries(toc: Path) -> list[str]:
    """Every document of a sphinx-external-toc file, in order: the root, then each ``file:`` at any depth
    (under ``parts``, ``chapters``, ``sections``...)."""
    data = read_yaml(toc)
    docs = [data["root"]] if "root" in data else []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                docs.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in data.items() if k != "root"})
    return docs


def existing(doc: str, root: Path = ROOT) -> bool:
    return any((root / f"{doc}{ext}").exists() for ext in (".ipynb", ".md", ""))


def _only_existing(node, root: Path):
    """``node`` of a toc without the entries whose file does not exist (with what is nested under them);
    None when nothing is left of it (a missing file, or a part all of whose chapters are missing)."""
    if isinstance(node, list):
        kept = [x for x in (_only_existing(item, root) for item in node) if x is not None]
        return kept or None
    if not isinstance(node, dict):
        return node
    if "file" in node and not existing(node["file"], root):
        return None
    out, lost_children = {}, False
    for key, value in node.items():
        value = _only_existing(value, root)
        if value is None:
            lost_children = True
        else:
            out[key] = value
    holds_a_document = "file" in out or "root" in out or any(isinstance(v, list) for v in out.values())
    return out if holds_a_document or not lost_children else None


def existing_only_toc(dest: Path, toc: Path = ROOT / "_toc.yml", root: Path = ROOT) -> Path:
    """A copy of ``toc`` without the entries whose file does not exist yet (empty parts dropped)."""
    data = _only_existing(read_yaml(toc), root) or {}
    dest.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return dest


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MISSING_LINK = re.compile(r"myst\.xref_missing|nonexisting document|Unknown source document")


def warnings(proc: subprocess.CompletedProcess) -> list[str]:
    """Sphinx's WARNING/ERROR lines from a build's output, without colour codes."""
    lines = [_ANSI.sub("", ln) for ln in (proc.stdout + proc.stderr).splitlines()]
    return [ln for ln in lines if re.search(r"(^|: )(WARNING|ERROR|CRITICAL):", ln)]


def build_env(ipython_dir: Path = ROOT / "_build" / ".ipython") -> dict:
    """The environment of the build, and so of its notebook kernels."""
    env = dict(os.environ)
    env["TRANSFORMER_LITE_STATIC"] = "1"  # read by transformer_lite.book.interactive in the notebook kernels
    # an exercise's check that rejects the chapter's own solution fails the build (transformer_lite.book.check)
    env["TRANSFORMER_LITE_STRICT_EXERCISES"] = "1"
    # no ipywidgets progress bars (dead on a static page): kernels run bookbuild/kernel_startup.py first
    # (TQDM_DISABLE=1 would not do: tqdm.auto's notebook bar passes disable=False explicitly)
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "bookbuild" / "kernel_startup.py", startup / "00-transformer-lite-static.py")
    env["IPYTHONDIR"] = str(ipython_dir)
    env["PYTHONHASHSEED"] = "0"
    # two chapters run at once on two cores: idle OpenMP threads sleep instead of spinning (no result changes)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # where each kernel imported transformer_lite from (bookbuild/kernel_startup.py; checked by installed_package_used)
    env["TRANSFORMER_LITE_IMPORT_LOG"] = str(ipython_dir.parent / ".kernel-imports")
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    # where the book is published (bookbuild/repository.py: the environment's address, else _config.yml's), for
    # the pages' buttons, sitemap and OpenGraph tags (bookbuild/sphinx_ext/published.py published_address)
    published = repository.address(env)
    env["TL_BUILD_REPOSITORY_URL"], env["TL_BUILD_SITE_URL"] = published.url, published.site
    return env


# what the last build was given: read by make pdf, make release, the tests
BUILD_INFO = ROOT / "_build" / "build-info.json"


def write_build_info(path: Path = BUILD_INFO) -> dict:
    """Record the address and version the site was built with."""
    import tomllib

    published = repository.address()
    info = {"repository": published.url, "site": published.site, "address_from": published.source,
            "version": tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


def jupyter_book(book: Path, out: Path | None = None, toc: Path | None = None, config: Path | None = None,
                 strict: bool = True) -> subprocess.CompletedProcess:
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book), "--all", "-n", "--keep-going"]
    if strict:
        cmd.append("-W")
    if out is not None:
        cmd += ["--path-output", str(out)]
    if toc is not None:
        cmd += ["--toc", str(toc)]
    if config is not None:
        cmd += ["--config", str(config)]
    log(" ".join(cmd))
    return subprocess.run(cmd, cwd=book, env=build_env(), text=True, capture_output=True)


# ---------------------------------------------------------------- checks of the built site

_EXTERNAL_LOAD = re.compile(
    r'<(?:script|link|img|iframe|source|video|audio)\b[^>]*?\b(?:src|href)="(https?:)?//(?!127\.0\.0\.1|localhost)'
    r'([^"/]+)[^"]*"[^>]*>', re.I)


def theme_mode(config: Path = ROOT / "_config.yml") -> str:
    """The colour mode _config.yml gives the theme (``sphinx.config.html_context.default_mode``)."""
    try:
        mode = read_yaml(config)["sphinx"]["config"]["html_context"]["default_mode"]
    except (KeyError, TypeError):
        raise SystemExit(f"{config}: sphinx.config.html_context.default_mode is not set; without it "
                         "pydata-sphinx-theme writes an empty mode and logs 'Got invalid theme mode'") from None
    if mode not in ("auto", "light", "dark"):
        raise SystemExit(f"{config}: html_context.default_mode must be 'auto', 'light' or 'dark', got {mode!r}")
    return mode


# a "> **Misconception.** ..." quote that the book's Sphinx extension did not convert
_PLAIN_MISCONCEPTION = re.compile(r"<blockquote>\s*<div>\s*<p>\s*<strong>(Misconception\.|常见误解。?)</strong>")


def check_site(html_dir: Path, mode: str | None = None) -> list[str]:
    """Problems that must fail the build: page weight, site weight, loads from other hosts, widgets,
    a page without the configured colour mode (``mode``, default: the one in _config.yml), a misconception
    note the book's extension did not style."""
    mode = theme_mode() if mode is None else mode
    # what pydata-sphinx-theme writes for html_context's default_mode; absent if the theme stopped reading it
    mode_attr = f'data-default-mode="{mode}"'
    problems, total, largest = [], 0, (0, None)
    for f in html_dir.rglob("*"):
        if f.is_file() and f.suffix == ".pdf" and f.parent.name == "pdf":  # `make pdf`'s editions: 40 MB each
            if f.stat().st_size > MAX_PDF:
                problems.append(f"{f.relative_to(html_dir)}: {f.stat().st_size / 2**20:.1f} MiB > 40 MiB")
        elif f.is_file():
            total += f.stat().st_size
    pages = [p for p in sorted(html_dir.rglob("*.html"))
             if not {"_static", "reports"} & set(p.relative_to(html_dir).parts)]
    for page in pages:
        size = page.stat().st_size
        largest = max(largest, (size, page.relative_to(html_dir)))
        if size > MAX_PAGE:
            problems.append(f"{page.relative_to(html_dir)}: {size / 2**20:.2f} MiB > 2 MiB")
        text = page.read_text(encoding="utf-8")
        for m in _EXTERNAL_LOAD.finditer(text):
            tag = m.group(0)
            if re.match(r"<link\b", tag, re.I) and not re.search(r'rel="(?:stylesheet|preload|modulepreload)"', tag):
                continue  # a plain hyperlink-like <link> (canonical, etc.) loads nothing
            problems.append(f"{page.relative_to(html_dir)}: loads from another host: {tag[:160]}")
        if "<body" in text and mode_attr not in text:  # (index.html is a bare redirect, not a theme page)
            problems.append(f"{page.relative_to(html_dir)}: no {mode_attr}: the theme ignored "
                            "html_context.default_mode in _config.yml (an empty mode logs a console error)")
        if _PLAIN_MISCONCEPTION.search(text):
            problems.append(f"{page.relative_to(html_dir)}: a misconception note left as a plain quote "
                            "(bookbuild/sphinx_ext/markup.py should turn it into the styled admonition)")
        if "application/vnd.jupyter.widget-view+json" in text:
            problems.append(f"{page.relative_to(html_dir)}: contains ipywidgets output (dead on a static page); "
                            "use transformer_lite.book.interactive.explore")
    if total > MAX_SITE:
        problems.append(f"site is {total / 2**20:.1f} MiB > {MAX_SITE / 2**20:.0f} MiB")
    log(f"site: {len(pages)} pages, {total / 2**20:.1f} MiB; largest page "
        f"{largest[1]} {largest[0] / 1024:.0f} KiB")
    return problems


def search_index(path: Path) -> dict:
    """A built edition's searchindex.js (``Search.setIndex({...})``) as a dict: terms, titleterms, titles..."""
    text = path.read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


MIN_CHINESE_TERMS = 1000  # measured: 3,984 Chinese words in the Chinese edition's index (0 without jieba)


def chinese_search_problems(zh_dir: Path) -> list[str]:
    """The Chinese edition's search index holds Chinese words (jieba cut the text: bookbuild/i18n.py) and every
    glossary term whole (jieba's dictionary of them), else readers find pages by their titles alone."""
    from bookbuild.translation.messages import HAN
    from bookbuild.translation.search import search_words

    path = zh_dir / "searchindex.js"
    if not path.exists():
        return [f"{path} is missing"]
    index = search_index(path)
    words = set(index["terms"]) | set(index["titleterms"])
    han = [w for w in words if HAN.search(w)]
    problems = []
    if len(han) < MIN_CHINESE_TERMS:
        problems.append(f"the Chinese search index holds {len(han)} Chinese words (< {MIN_CHINESE_TERMS}): "
                        "was jieba importable in the build? (requirements.in)")
    missing = [w for w in search_words() if w not in words]
    if missing:
        problems.append(f"glossary terms not in the Chinese search index as words: {missing[:10]}")
    return problems


ZH_ENV = {"TRANSFORMER_LITE_LANGUAGE": "zh",  # the package's checks, figures and controls speak Chinese
          "TRANSFORMER_LITE_IMPORT_LOG": str(ROOT / "_build" / ".kernel-imports-zh")}


def chinese_notebooks() -> tuple[list[Path], list[str]]:
    """notebooks/zh/ (the chapters with Chinese markdown, comments and figure strings, bookbuild/i18n.py), executed
    into their own execution cache as the English ones are (each in a new empty folder, strict exercises, static
    controls), in Chinese: ``TRANSFORMER_LITE_LANGUAGE=zh`` (ZH_ENV). Returns them and the problems (a missing one)."""
    from bookbuild.translation.paths import ZH_NOTEBOOKS

    notebooks = [ZH_NOTEBOOKS / f"{Path(d).name}.ipynb" for d in toc_entries(ROOT / "_toc.yml")
                 if d.startswith("notebooks/") and (ROOT / f"{d}.ipynb").exists()]
    missing = [p for p in notebooks if not p.exists()]
    return ([p for p in notebooks if p.exists()],
            [f"no Chinese notebook {p.relative_to(ROOT)} (run `python -m bookbuild.i18n notebooks`)" for p in missing])


def chinese_edition(html_dir: Path) -> list[str]:
    """Build the Chinese edition into html_dir/zh: the English book's markdown translated by the catalogs
    (bookbuild/i18n.py), and the chapters' code cells and outputs from the Chinese notebooks' own execution
    (chinese_notebooks, executed with the English ones by main; translation.edition.zh_site_notebooks). Returns the
    problems."""
    from bookbuild.translation.edition import build_edition, zh_site_notebooks

    problems = installed_package_used(Path(ZH_ENV["TRANSFORMER_LITE_IMPORT_LOG"]))
    t0 = time.time()
    try:
        sources = zh_site_notebooks(CACHE_ZH, ZH_PAGES)
    except (KeyError, ValueError) as e:  # a chapter without its Chinese execution, or cells that do not correspond
        return problems + [f"the Chinese edition cannot be built: {e}"]
    log("the Chinese edition (locales/zh_CN) into _build/html/zh/")
    proc = build_edition(html_dir / "zh", ROOT / "_build" / ".doctrees-zh", sources, build_env())
    sys.stdout.write(proc.stdout[-5000:])
    sys.stderr.write(proc.stderr[-20000:])
    if proc.returncode != 0:
        problems.append(f"the Chinese edition failed (sphinx-build exit {proc.returncode})")
    ran = [line for line in (proc.stdout + proc.stderr).splitlines() if "Executing notebook" in line]
    if ran:  # its outputs must come from the Chinese notebooks' execution (nb_execution_mode off)
        problems.append(f"the Chinese edition executed notebooks again: {ran[:3]}")
    if proc.returncode == 0:
        problems += chinese_search_problems(html_dir / "zh")
    log(f"Chinese edition built in {time.time() - t0:.0f} s")
    return problems


def share_static(html_dir: Path) -> list[str]:
    """Once both editions are built: the Chinese edition's _static/ keeps only what differs from the English
    edition's, which its pages load (editions.prune_zh_static), and its translator loader (zh_translator_loader)."""
    from bookbuild.sphinx_ext.editions import prune_zh_static

    problems = prune_zh_static(html_dir / "zh")
    zh_translator_loader(html_dir / "zh")
    return problems


def slim_site(html_dir: Path) -> list[str]:
    """The built site made lighter for a phone (bookbuild/slim_static.py); the problems (none, or why not)."""
    from bookbuild import slim_static

    try:
        done = slim_static.slim(html_dir)
    except (OSError, KeyError, ValueError) as e:
        return [f"the site could not be slimmed (bookbuild/slim_static.py): {e!r}"]
    fa, mj, css, pages = done["fontawesome"], done["mathjax"], done["stylesheet"], done["pages"]
    log(f"slimmed: Font Awesome {fa['fonts_before'] / 1024:.0f} -> {fa['fonts_after'] / 1024:.0f} "
        f"KiB ({fa['icons']} icons), "
        f"MathJax fonts {mj['fonts_before'] / 1024:.0f} -> {mj['fonts_after'] / 1024:.0f} KiB "
        f"({mj['characters']} glyphs), "
        f"theme stylesheet {css['before'] / 1024:.0f} -> {css['after'] / 1024:.0f} KiB, "
        f"{pages['spans']:,} plain code spans unwrapped in {pages['pages']} pages")
    return []


def zh_translator_loader(zh_dir: Path) -> Path:
    """The Chinese edition loads the English edition's _static/ (one copy on the site: sphinx_ext/editions.py's
    shared_static; its own _static/ keeps only what differs). The translator box of a page that ran in a kernel
    loads ``<edition root>/_static/tl/tl-translator.js`` (transformer_lite.book.translate writes that URL into the
    cell's output): in the Chinese edition that file is this loader of the English edition's copy (tl-translator.js
    then finds the models one level up, on a page whose <html lang> is zh)."""
    dest = zh_dir / "_static" / "tl" / "tl-translator.js"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("// The Chinese edition's pages load the English edition's copy "
                    "(bookbuild/build_book.py zh_translator_loader)\n"
                    "(function(){var s=document.createElement('script');"
                    "s.src=(document.documentElement.dataset.content_root||'')+'../_static/tl/tl-translator.js';"
                    "document.head.appendChild(s);})();\n", encoding="utf-8")
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--existing-only", action="store_true",
                    help="build with a temporary toc listing only the files that exist")
    args = ap.parse_args(argv)
    t0 = time.time()
    published = write_build_info()
    log(f"published at {published['site']}, repository {published['repository']} (from {published['address_from']})")
    # Sphinx does not overwrite a static file that differs from the one already in the site (it says "will
    # overwrite data" and keeps the old one), nor delete files an older build left there (a renamed model file):
    # the site's copy of _assets/tl is made afresh (the Chinese edition's: see chinese_edition).
    shutil.rmtree(ROOT / "_build" / "html" / "_static" / "tl", ignore_errors=True)
    toc = None
    missing = [d for d in toc_entries(ROOT / "_toc.yml") if not existing(d)]
    if args.existing_only:
        toc = existing_only_toc(Path(tempfile.mkdtemp(prefix="tl-toc-")) / "_toc.yml")
        if missing:
            log(f"--existing-only: leaving out {len(missing)} missing file(s): {', '.join(missing)}")
    elif missing:
        log(f"_toc.yml lists {len(missing)} file(s) that do not exist: {', '.join(missing)} "
            "(use --existing-only to build without them)")
    english = [ROOT / f"{d}.ipynb" for d in toc_entries(ROOT / "_toc.yml") if (ROOT / f"{d}.ipynb").exists()]
    chinese, zh_problems = chinese_notebooks() if not args.existing_only else ([], [])
    # What runs on one core runs beside something else, so that the other core does not idle: the translators'
    # export (70-110 s on these machines) beside the chapters' execution, and the two editions' Sphinx builds (each one
    # process) beside each other and beside the last chapters: the Chinese chapters run a little ahead of the English
    # ones (AHEAD_SECONDS), and the Chinese edition's Sphinx pass, the longer one, starts as soon as they have all run.
    # The export runs in a process of its own, so that its Python-heavy tracing does not take this process's
    # interpreter lock from the threads that start the kernels and cache their chapters.
    html_dir = ROOT / "_build" / "html"
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as beside, \
            ThreadPoolExecutor(1) as sphinx_zh:
        assets = beside.submit(assemble_assets)
        zh_built = []  # the Chinese edition's Sphinx pass, once its chapters have run (and the site's assets are made)

        def start_zh():
            if not args.existing_only:
                zh_built.append(sphinx_zh.submit(_after, assets, chinese_edition, html_dir))

        # both editions' chapters in one pool
        executed = execute_editions([(english, CACHE, {}), (chinese, CACHE_ZH, ZH_ENV)], ahead=1,
                                    when_done={1: start_zh})
        assets.result()
        if not zh_built:  # nothing of the Chinese edition's was left to run
            start_zh()
        zh_problems += [p for p in executed if p.startswith("notebooks/zh/")]
        problems = [p for p in executed if not p.startswith("notebooks/zh/")]
        # --existing-only: links to the missing chapters are expected; every other warning still fails
        t_sphinx = time.time()
        proc = jupyter_book(ROOT, toc=toc, strict=not args.existing_only)
        log(f"English edition built in {time.time() - t_sphinx:.0f} s")
        zh_problems += zh_built[0].result() if zh_built else []
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-20000:])
    problems += installed_package_used()
    again = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "Executing notebook" in ln]
    if len(again) > len(problems):  # only a chapter that failed above may run again (for its error report)
        problems.append(f"Jupyter Book executed notebooks the build had executed and cached: {again[:3]}")
    if args.existing_only:
        problems += [w for w in warnings(proc) if not _MISSING_LINK.search(w)]
    if proc.returncode != 0:
        problems.append(f"jupyter-book failed (exit {proc.returncode}); reports are in _build/html/reports/")
    elif not args.existing_only:
        problems += zh_problems + share_static(html_dir)
    if (html_dir / "index.html").exists():  # even after a failure
        if proc.returncode == 0:
            problems += slim_site(html_dir)
        problems += check_site(html_dir)
    return finish(problems, t0)


def _after(first, then, *args):
    """``then(*args)`` once the future ``first`` has its result (raising its exception, if it raised)."""
    first.result()
    return then(*args)


def finish(problems: list[str], t0: float, log=log) -> int:
    """Log every problem and the outcome with the time since ``t0``; the exit status (1 if any problem)."""
    for p in problems:
        log(f"ERROR {p}")
    log(f"{'FAILED' if problems else 'done'} in {time.time() - t0:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
