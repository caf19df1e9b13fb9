#!/usr/bin/env python3
"""The book as one download: ``dist/`` for a GitHub release, and the one version number everything names.

    python -m bookbuild.release                # what `make release` runs after building the site and the PDFs
    python -m bookbuild.release bump 0.2.0     # a new version everywhere it is written (then CHANGELOG.md by hand)

``dist/`` holds, for version V:

- ``transformer-step-by-step-V-site.zip``: the built site (both editions; open ``index.html`` from disk);
- ``transformer-step-by-step-V.en.pdf`` and ``.zh.pdf``: the two PDFs;
- ``transformer-step-by-step-V-notebooks.zip``: every chapter's notebook, English (``notebooks/``) and Chinese
  (``notebooks/zh/``), as committed (no outputs: they are run by the reader);
- the package's wheel and sdist (``python -m build``), checked with ``twine check --strict`` as PyPI would.

The version is ``pyproject.toml``'s. It is also written, and tested equal, in CITATION.cff (GitHub and citation
managers read it from the repository) and in every chapter's set-up cell, which installs that release from PyPI
where the package is missing (Colab opens the committed notebook, so the line must be right in the file).
The site's footer and the PDF's cover read it from pyproject.toml when they are built.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
NAME = "transformer-step-by-step"  # the distribution's name on PyPI (pyproject.toml), and the files' stem
PDF = ROOT / "_build" / "pdf" / "transformer-step-by-step.{edition}.pdf"  # bookbuild/build_pdf.py's output
SITE = ROOT / "_build" / "html"
_VERSION = re.compile(r"^\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?$")
# the set-up cell's install line (its form: install_line), whatever version it holds now
INSTALL_RE = re.compile(r'%pip install -q "transformer-step-by-step\[book\]==(?P<version>[^"]+)"')


def version(root: Path = ROOT) -> str:
    return tomllib.loads((Path(root) / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def install_line(v: str) -> str:
    """The line a chapter's set-up cell runs where the package is missing (Colab): the release ``v`` from PyPI."""
    return f'%pip install -q "{NAME}[book]=={v}"'


def setup_cell(nb: dict) -> dict:
    """A notebook's set-up cell: its first code cell."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            return cell
    raise ValueError("the notebook has no code cell")


def _write_notebook(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def bump(new: str, root: Path = ROOT) -> list[Path]:
    """Write version ``new`` into pyproject.toml, CITATION.cff, the package's ``__version__`` and every English
    chapter's set-up cell; the files changed. The Chinese notebooks are generated from the English ones
    (`python -m bookbuild.i18n notebooks`)."""
    if not isinstance(new, str) or not _VERSION.match(new):
        raise ValueError(f"version must look like 1.2.3 (or 1.2.3rc1), got {new!r}")
    root = Path(root)
    changed = []
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text2, n = re.subn(r'(?m)^version = "[^"]*"$', f'version = "{new}"', text, count=1)
    if n != 1:
        raise ValueError(f"{pyproject}: no `version = \"...\"` line in [project]")
    citation = root / "CITATION.cff"
    cff = citation.read_text(encoding="utf-8")
    cff2, n = re.subn(r"(?m)^version: .*$", f"version: {new}", cff, count=1)
    if n != 1:
        raise ValueError(f"{citation}: no top-level `version:` line")
    init = root / "transformer_lite" / "__init__.py"  # the package's __version__ (tests/test_packaging.py)
    code = init.read_text(encoding="utf-8") if init.exists() else ""
    code2 = re.sub(r'(?m)^__version__ = "[^"]*"$', f'__version__ = "{new}"', code, count=1)
    for path, old, text_new in ((pyproject, text, text2), (citation, cff, cff2), (init, code, code2)):
        if text_new != old:
            path.write_text(text_new, encoding="utf-8")
            changed.append(path)
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = setup_cell(nb)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if len(INSTALL_RE.findall(source)) != 1:
            raise ValueError(f"{path.name}: the set-up cell has no single {install_line('X')!r} line")
        new_source = INSTALL_RE.sub(lambda m: install_line(new), source)
        if new_source != source:
            cell["source"] = new_source.splitlines(keepends=True)
            _write_notebook(path, nb)
            changed.append(path)
    return changed


def _zip_tree(dest: Path, folders: list[tuple[Path, str]]) -> int:
    """Zip every file under each (folder, name in the archive); the number of files."""
    n = 0
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for folder, arcroot in folders:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and ".ipynb_checkpoints" not in path.parts:
                    z.write(path, f"{arcroot}/{path.relative_to(folder).as_posix()}")
                    n += 1
    return n


def notebooks_zip(dest: Path, root: Path = ROOT) -> int:
    """Every chapter, both editions, as committed: notebooks/*.ipynb and notebooks/zh/*.ipynb."""
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        paths = sorted((root / "notebooks").glob("*.ipynb")) + sorted((root / "notebooks" / "zh").glob("*.ipynb"))
        for path in paths:
            z.write(path, f"{dest.stem}/{path.relative_to(root).as_posix()}")
    return len(paths)


def log(msg: str) -> None:
    print(f"[release] {msg}", file=sys.stderr, flush=True)


def build_info(site: Path = SITE) -> dict:
    try:
        return json.loads((site.parent / "build-info.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SystemExit(f"no record of the site's build ({site.parent / 'build-info.json'}): "
                         f"run `make book` ({e})") from e


def assemble(dist: Path = DIST, root: Path = ROOT) -> list[Path]:
    """Write dist/ from the built site and PDFs (which must exist) and a fresh wheel and sdist; the files."""
    v = version(root)
    info = build_info()
    if info.get("version") != v:
        raise SystemExit(f"the site was built for version {info.get('version')}, pyproject.toml says {v}: "
                         "run `make book` again")
    missing = [p for p in (SITE / "index.html", SITE / "zh" / "index.html",
                           *(Path(str(PDF).format(edition=e)) for e in ("en", "zh"))) if not p.exists()]
    if missing:
        raise SystemExit(f"missing {', '.join(map(str, missing))}: `make release` builds them (make book, make pdf)")
    try:
        printed = json.loads((PDF.parent / "pdf-info.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        printed = {}
    if (printed.get("url"), printed.get("site")) != (info["repository"], info["site"]):
        raise SystemExit(f"the PDFs name {printed.get('url')} / {printed.get('site')}, the site was built for "
                         f"{info['repository']} / {info['site']}: run `make pdf` after `make book`")
    for e in ("en", "zh"):  # the site built after the PDFs links them from every page
        if not (SITE / ("zh" if e == "zh" else "") / "pdf" / Path(str(PDF).format(edition=e)).name).exists():
            raise SystemExit(f"the site does not carry the {e} PDF: build it again after `make pdf`")
    if dist.exists():
        shutil.rmtree(dist)
    dist.mkdir(parents=True)
    out = []
    site_zip = dist / f"{NAME}-{v}-site.zip"
    n = _zip_tree(site_zip, [(SITE, f"{NAME}-{v}-site")])
    log(f"{site_zip.name}: {n:,} files, {site_zip.stat().st_size / 2**20:.1f} MiB (for {info['site']})")
    out.append(site_zip)
    for e in ("en", "zh"):
        pdf = dist / f"{NAME}-{v}.{e}.pdf"
        shutil.copyfile(str(PDF).format(edition=e), pdf)
        out.append(pdf)
    nb_zip = dist / f"{NAME}-{v}-notebooks.zip"
    log(f"{nb_zip.name}: {notebooks_zip(nb_zip, root)} notebooks")
    out.append(nb_zip)
    build_dir = dist / ".build"
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(build_dir), str(root)],
                   check=True, cwd=root)
    packages = sorted(build_dir.glob("*.whl")) + sorted(build_dir.glob("*.tar.gz"))
    subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, packages)], check=True)
    for p in packages:
        out.append(Path(shutil.move(str(p), dist / p.name)))
    shutil.rmtree(build_dir)
    shutil.rmtree(root / "build", ignore_errors=True)  # setuptools' scratch folder
    for p in out:
        log(f"dist/{p.name}  {p.stat().st_size / 2**20:.2f} MiB")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command")
    b = sub.add_parser("bump", help="write a new version into pyproject.toml, CITATION.cff and the set-up cells")
    b.add_argument("version")
    args = ap.parse_args(argv)
    if args.command == "bump":
        for path in bump(args.version):
            print(f"{path.relative_to(ROOT)}: {args.version}")
        print("now: python -m bookbuild.i18n notebooks (the Chinese set-up cells), and a CHANGELOG.md section")
        return 0
    assemble()
    return 0


if __name__ == "__main__":
    sys.exit(main())
