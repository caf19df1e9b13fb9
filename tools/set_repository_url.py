#!/usr/bin/env python3
"""Point every chapter's Colab install at the repository named in ``_config.yml``.

    python tools/set_repository_url.py           # rewrite the set-up cells that differ
    python tools/set_repository_url.py --check   # only report; exit status 1 if any differs

The repository's address lives in ONE place, ``_config.yml``'s ``repository.url`` (the book's
repository, Colab and Binder buttons use it too). Every notebook's first code cell, the set-up cell,
installs the package from there when ``transformer_lite`` is missing (as in Colab)::

    %pip install -q "transformer_lite[book] @ git+<repository.url>"

After changing ``repository.url``, run this once and commit the notebooks it rewrote (it regenerates the
Chinese notebooks, ``notebooks/zh/``, from them).
``tests/test_setup_cells.py`` fails until the cells match.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the install line of a set-up cell, whatever address it holds now
INSTALL_RE = re.compile(r'%pip install -q "transformer_lite\[book\] @ git\+(?P<url>[^"]*)"')


def repository_url(root: Path = ROOT) -> str:
    """``repository.url`` from ``root/_config.yml``."""
    import yaml

    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))
    url = ((config or {}).get("repository") or {}).get("url")
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"{Path(root) / '_config.yml'} has no repository.url")
    return url.strip()


def install_line(url: str) -> str:
    """The line a set-up cell runs in Colab to install the book's package from ``url``."""
    if not isinstance(url, str) or not url or any(c in url for c in '" \n'):
        raise ValueError(f"url must be a non-empty address without spaces or quotes, got {url!r}")
    return f'%pip install -q "transformer_lite[book] @ git+{url}"'


def setup_cell(nb: dict) -> dict:
    """A notebook's set-up cell: its first code cell."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            return cell
    raise ValueError("the notebook has no code cell")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def rewrite(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Set the install line of every ``root/notebooks/*.ipynb`` to ``repository.url``.

    Returns the notebooks that differed (rewritten unless ``check``). Raises ValueError for a
    set-up cell without the install line: that cell needs fixing by hand.
    """
    root = Path(root)
    wanted = install_line(repository_url(root))
    changed = []
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = setup_cell(nb)
        old = _source(cell)
        if len(INSTALL_RE.findall(old)) != 1:
            raise ValueError(f"{path.name}: the set-up cell (first code cell) has no single "
                             f"'%pip install -q \"transformer_lite[book] @ git+...\"' line to rewrite")
        new = INSTALL_RE.sub(lambda m: wanted, old)
        if new == old:
            continue
        changed.append(path)
        if check:
            continue
        cell["source"] = new.splitlines(keepends=True) if isinstance(cell.get("source"), list) else new
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only report the notebooks that differ")
    ap.add_argument("--root", default=str(ROOT), help="the book's root (default: this checkout)")
    args = ap.parse_args(argv)
    url = repository_url(Path(args.root))
    changed = rewrite(Path(args.root), check=args.check)
    verb = "differ from" if args.check else "now install from"
    for path in changed:
        print(f"{path.name}: {verb} {url}")
    if not changed:
        print(f"every set-up cell installs from {url}")
    if changed and not args.check and Path(args.root).resolve() == ROOT:
        import i18n  # the Chinese notebooks are generated from the English ones: regenerate them too

        print(f"regenerated {len(i18n.write_notebooks())} Chinese notebooks in notebooks/zh/")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
