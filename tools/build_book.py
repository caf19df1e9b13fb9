#!/usr/bin/env python3
"""Build the book's static site into _build/html: self-contained, strict, cached.

    python tools/build_book.py                 # what `make book` runs
    python tools/build_book.py --existing-only # while chapters are being written: toc of the files that exist

Steps:
1. The site's JavaScript comes from npm (package.json / package-lock.json; `npm ci` when node_modules is
   missing or older than the lock file) and is copied into ``_assets/tl/`` (git-ignored). Sphinx copies
   ``html_static_path`` into ``_build/html/_static/``, so the site serves ``_static/tl/...`` itself.
   The folder is deliberately not called ``_static``: Jupyter Book would add every .js/.css in a
   ``_static/`` folder at the book root to every page.
2. ``TRANSFORMER_LITE_STATIC=1`` is exported; the notebook kernels inherit the build's environment, so
   ``transformer_lite.book.interactive`` precomputes every control (no ipywidgets on the page); and
   ``IPYTHONDIR`` points the kernels at a start-up file (tools/kernel_startup.py) that keeps tqdm from
   drawing ipywidgets progress bars, which would be dead on the site.
3. ``jupyter-book build --all -W -n --keep-going``: any warning or notebook error fails the build;
   notebooks run through jupyter-cache, so an unchanged rebuild re-executes nothing.
4. Post-processing (``postprocess``) removes what the theme would fetch from other hosts or that logs
   console errors, then the checks: no page > 2 MB, the site < 40 MB, no reference to another host
   left in a src/href that the browser would load, no ipywidgets output.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "_assets" / "tl"
NODE = ROOT / "node_modules"
MAX_PAGE = 2 * 1024 * 1024
MAX_SITE = 40 * 1024 * 1024

# (source in node_modules, destination under _assets/tl)
COPIES = [
    ("requirejs/require.js", "requirejs/require.js"),
    ("d3/dist/d3.min.js", "d3/d3.min.js"),            # bertviz's views are written for d3 v5
    ("jquery/dist/jquery.min.js", "jquery/jquery.min.js"),
    ("mathjax/es5/tex-chtml.js", "mathjax/tex-chtml.js"),
    # what tex-chtml.js loads on demand, resolved against its own URL: fonts, TeX extensions, menu, a11y
    ("mathjax/es5/output/chtml", "mathjax/output/chtml"),
    ("mathjax/es5/output/chtml.js", "mathjax/output/chtml.js"),
    ("mathjax/es5/input/tex", "mathjax/input/tex"),
    ("mathjax/es5/ui", "mathjax/ui"),
    ("mathjax/es5/a11y", "mathjax/a11y"),
    ("mathjax/es5/sre", "mathjax/sre"),
    ("mathjax/es5/adaptors", "mathjax/adaptors"),
]


def log(msg: str) -> None:
    print(f"[build_book] {msg}", file=sys.stderr, flush=True)


def npm_ci() -> None:
    lock = ROOT / "package-lock.json"
    stamp = NODE / ".installed"
    if stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime:
        return
    log("npm ci (the site's JavaScript, pinned in package-lock.json)")
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ROOT, check=True)
    stamp.touch()


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
    for f in (ROOT / "tools" / "site_assets").iterdir():
        shutil.copy2(f, ASSETS / f.name)
    return ASSETS


def toc_entries(toc: Path) -> list[str]:
    return re.findall(r"^\s*(?:root|-\s*file):\s*(\S+)", toc.read_text(), flags=re.M)


def existing(doc: str, root: Path = ROOT) -> bool:
    return any((root / f"{doc}{ext}").exists() for ext in (".ipynb", ".md", ""))


def existing_only_toc(dest: Path) -> Path:
    """A copy of _toc.yml without the entries whose file does not exist yet (empty parts dropped)."""
    lines, out, part = (ROOT / "_toc.yml").read_text().splitlines(), [], []
    for line in lines:
        m = re.match(r"^\s*-\s*file:\s*(\S+)", line)
        if m and not existing(m.group(1)):
            continue
        if re.match(r"^\s*-\s*caption:", line):
            out.extend(part if any("file:" in x for x in part) else [])
            part = [line]
        elif part:
            part.append(line)
        else:
            out.append(line)
    out.extend(part if any("file:" in x for x in part) else [])
    dest.write_text("\n".join(out) + "\n")
    return dest


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MISSING_LINK = re.compile(r"myst\.xref_missing|nonexisting document|Unknown source document")


def warnings(proc: subprocess.CompletedProcess) -> list[str]:
    """Sphinx's WARNING/ERROR lines from a build's output, without colour codes."""
    lines = [_ANSI.sub("", ln) for ln in (proc.stdout + proc.stderr).splitlines()]
    return [ln for ln in lines if re.search(r"(^|: )(WARNING|ERROR|CRITICAL):", ln)]


def build_env() -> dict:
    env = dict(os.environ)
    env["TRANSFORMER_LITE_STATIC"] = "1"  # read by transformer_lite.book.interactive in the notebook kernels
    # no ipywidgets progress bars (dead on a static page): kernels run tools/kernel_startup.py first
    ipython_dir = ROOT / "_build" / ".ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "tools" / "kernel_startup.py", startup / "00-transformer-lite-static.py")
    env["IPYTHONDIR"] = str(ipython_dir)
    env["PYTHONHASHSEED"] = "0"
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    return env


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


# ---------------------------------------------------------------- post-processing and checks

_THEBE_SCRIPT = re.compile(r"\s*<script>(?:var|const) THEBE_JS_URL = [^<]*</script>")
_GOOGLE_FONTS = re.compile(r'<link[^>]+href="https://fonts\.(?:googleapis|gstatic)\.com[^"]*"[^>]*>\s*', re.I)
_EXTERNAL_LOAD = re.compile(
    r'<(?:script|link|img|iframe|source|video|audio)\b[^>]*?\b(?:src|href)="(https?:)?//(?!127\.0\.0\.1|localhost)'
    r'([^"/]+)[^"]*"[^>]*>', re.I)


def fix_page(text: str) -> str:
    """Fix what the theme does wrong with default settings, on one built HTML page."""
    # sphinx-thebe's inline config script is written twice on notebook pages; the second copy throws
    # "Identifier 'thebe_selector' has already been declared". Keep the first copy only.
    first = True

    def once(m):
        nonlocal first
        keep, first = first, False
        return m.group(0) if keep else ""

    text = _THEBE_SCRIPT.sub(once, text)
    # pydata-sphinx-theme sets data-mode from localStorage or ""; "" logs "Got invalid theme mode".
    text = text.replace('dataset.mode = localStorage.getItem("mode") || "";',
                        'dataset.mode = localStorage.getItem("mode") || "auto";')
    text = _GOOGLE_FONTS.sub("", text)
    return text


def postprocess(html_dir: Path) -> None:
    for page in html_dir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = fix_page(text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def check_site(html_dir: Path) -> list[str]:
    """Problems that must fail the build: page weight, site weight, loads from other hosts, widgets."""
    problems, total, largest = [], 0, (0, None)
    for f in html_dir.rglob("*"):
        if f.is_file():
            total += f.stat().st_size
    pages = [p for p in sorted(html_dir.rglob("*.html")) if not {"_static", "reports"} & set(p.relative_to(html_dir).parts)]
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
        if "application/vnd.jupyter.widget-view+json" in text:
            problems.append(f"{page.relative_to(html_dir)}: contains ipywidgets output (dead on a static page); "
                            "use transformer_lite.book.interactive.explore")
    if total > MAX_SITE:
        problems.append(f"site is {total / 2**20:.1f} MiB > 40 MiB")
    log(f"site: {len(pages)} pages, {total / 2**20:.1f} MiB; largest page "
        f"{largest[1]} {largest[0] / 1024:.0f} KiB")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--existing-only", action="store_true",
                    help="build with a temporary toc listing only the files that exist")
    args = ap.parse_args(argv)
    t0 = time.time()
    assemble_assets()
    toc = None
    missing = [d for d in toc_entries(ROOT / "_toc.yml") if not existing(d)]
    if args.existing_only:
        toc = existing_only_toc(Path(tempfile.mkdtemp(prefix="tl-toc-")) / "_toc.yml")
        if missing:
            log(f"--existing-only: leaving out {len(missing)} missing file(s): {', '.join(missing)}")
    elif missing:
        log(f"_toc.yml lists {len(missing)} file(s) that do not exist: {', '.join(missing)} "
            "(use --existing-only to build without them)")
    # --existing-only: links to the missing chapters are expected; every other warning still fails
    proc = jupyter_book(ROOT, toc=toc, strict=not args.existing_only)
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-20000:])
    html_dir = ROOT / "_build" / "html"
    problems = []
    if args.existing_only:
        problems += [w for w in warnings(proc) if not _MISSING_LINK.search(w)]
    if proc.returncode != 0:
        problems.append(f"jupyter-book failed (exit {proc.returncode}); reports are in _build/html/reports/")
    if (html_dir / "index.html").exists():
        postprocess(html_dir)  # even after a failure, so the pages can be inspected
        problems += check_site(html_dir)
    for p in problems:
        log(f"ERROR {p}")
    log(f"{'FAILED' if problems else 'done'} in {time.time() - t0:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
