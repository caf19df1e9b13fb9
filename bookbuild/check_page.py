#!/usr/bin/env python3
"""Build ONE notebook's page with the book's config, strictly, in a temporary directory.

    bookbuild/check_page.sh notebooks/03_self_attention.ipynb [--keep] [--ignore-missing]

For chapter authors: verifies a page without the full book build. The temporary book has the real
``_config.yml`` (same extensions, static mode, assets), the intro, the other pages that exist (NOT
executed, so cross-links resolve quickly) and the target notebook, which is executed. It builds with
``-n --keep-going`` and fails on any warning about the target page (or any warning not tied to a page),
exactly what ``-W`` in the full build would fail on. ``--ignore-missing`` ignores links to chapters
that do not exist yet. Prints the page's path and size; exit status 0 = the page is fine.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bookbuild import build_book as bb

ROOT = bb.ROOT

_MISSING = bb._MISSING_LINK


def make_book(notebook: Path, tmp: Path) -> tuple[Path, str]:
    """A temporary book around ``notebook``; returns (book dir, the notebook's docname)."""
    book = tmp / "book_root"
    book.mkdir()
    (book / "_assets").symlink_to(ROOT / "_assets")
    (book / "bookbuild").symlink_to(ROOT / "bookbuild")  # the book's own Sphinx extensions (_config.yml)
    shutil.copytree(ROOT / "book", book / "book")
    (book / "notebooks").mkdir()
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy2(nb, book / "notebooks" / nb.name)
    target = book / "notebooks" / notebook.name
    shutil.copy2(notebook, target)  # a notebook from elsewhere (e.g. /tmp) is checked as if it were a chapter
    doc = f"notebooks/{notebook.stem}"
    others = [f"notebooks/{p.stem}" for p in sorted((book / "notebooks").glob("*.ipynb")) if p != target]
    others += [f"book/{p.stem}" for p in sorted((book / "book").glob("*.md")) if p.stem != "intro"]
    root = "book/intro" if (book / "book" / "intro.md").exists() else doc
    chapters = [doc] + [d for d in others if d != root]
    (book / "_toc.yml").write_text("format: jb-book\nroot: %s\nchapters:\n%s" % (
        root, "".join(f"  - file: {d}\n" for d in chapters if d != root)))
    config = bb.read_yaml(ROOT / "_config.yml")
    # execute only the target; the rest render without outputs (they are here for cross-links)
    config.setdefault("execute", {})["exclude_patterns"] = sorted(
        f"notebooks/{p.name}" for p in (book / "notebooks").glob("*.ipynb") if p != target)
    (book / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
                                      encoding="utf-8")
    return book, doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebook", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (prints its path)")
    ap.add_argument("--ignore-missing", action="store_true",
                    help="ignore links to pages that do not exist yet")
    args = ap.parse_args(argv)
    nb = args.notebook.resolve()
    if not nb.exists() or nb.suffix != ".ipynb":
        ap.error(f"not a notebook: {args.notebook}")
    t0 = time.time()
    bb.assemble_assets()
    tmp = Path(tempfile.mkdtemp(prefix="tl-page-"))
    book, doc = make_book(nb, tmp)
    proc = bb.jupyter_book(book, strict=False)
    html_dir = book / "_build" / "html"
    warnings = bb.warnings(proc)
    relevant = []
    for ln in warnings:
        about_page = f"{doc}.ipynb" in ln or f"/{Path(doc).name}" in ln
        tied_to_other = re.match(r"^\S*/(book|notebooks)/\S+?:", ln) and not about_page
        if tied_to_other:
            continue
        if args.ignore_missing and _MISSING.search(ln):
            continue
        relevant.append(ln)
    page = html_dir / f"{doc}.html"
    ok = proc.returncode == 0 and page.exists() and not relevant
    if page.exists():
        problems = [p for p in bb.check_site(html_dir) if p.startswith(f"{doc}.html")]
        relevant += problems
        ok = ok and not problems
        print(f"page: {page} ({page.stat().st_size / 1024:.0f} KiB)")
    if proc.returncode != 0 or not page.exists():
        sys.stdout.write(proc.stdout[-8000:] + proc.stderr[-8000:])
    for ln in relevant:
        print(ln)
    print(f"{'OK' if ok else 'FAILED'}: {args.notebook} in {time.time() - t0:.0f} s"
          + (f" ({len(relevant)} problem(s))" if relevant else ""))
    if args.keep or not ok:
        print(f"build kept in {tmp} (serve with: python -m http.server -d {html_dir})")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
