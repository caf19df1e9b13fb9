#!/usr/bin/env python3
"""A chapter's shape: its deep dives, its core path, and the line at its top.

    python tools/chapters.py stats           # per chapter: core-path words and code lines, deep-dive words, reading time
    python tools/chapters.py fold [NB ...]   # set the metadata that folds the deep dives in JupyterLab and Colab

**Deep dives.** A detour (history, a variant, a numerical aside) is a *deep dive*: a section whose heading starts
with ``Deep dive:`` (``深入：`` in the Chinese edition), written as one markdown cell that holds the heading and one
paragraph saying what is inside and who would want it. The deep dive runs to the next heading of the same or a
higher level, exactly the cells that JupyterLab and Colab collapse under a heading, so every chapter that has one
puts a heading after it (the next section, or ``## Exercises``). Where the reader meets it:

- on the site (both editions) the heading and its paragraph show, the rest is folded behind a toggle
  (``tools/sphinx_ext/tl_book.py``); the PDF prints it open;
- in JupyterLab the heading cell carries ``jp-MarkdownHeadingCollapsed``, so the notebook opens with the section
  collapsed (the heading shows a "N cells hidden" button);
- in Colab the heading cell's id is listed in the notebook's ``colab.collapsed_sections``.

``fold`` writes that metadata (the Chinese notebooks copy it, tools/i18n.py); ``tests/test_chapters.py`` checks it.

**The core path** is what a chapter shows before the reader opens anything: its markdown outside deep dives and
the References section, and the lines of its code cells that are neither folded (``hide-input``, ``hide-cell``:
drawing code, solutions) nor inside a deep dive. Its reading time counts 130 words a minute for prose (technical
text, read closely) and 5 seconds a line of code (read, run, looked at).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
DEEP_DIVE = ("Deep dive:", "深入：")
HIDDEN_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
NOT_READ = ("References", "参考文献")   # a section of citations is looked up, not read
WORDS_PER_MINUTE = 130
SECONDS_PER_CODE_LINE = 5
CORE_WORDS_BUDGET = 2800                # issue 24: "about 2,800 words or less"

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^(```|~~~)")


def source(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def headings(text: str) -> list[tuple[int, str]]:
    """The markdown headings of a cell, (level, title), outside code fences."""
    found, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            found.append((len(m[1]), m[2]))
    return found


def is_deep_dive(title: str) -> bool:
    return title.startswith(DEEP_DIVE)


def sections(nb: dict) -> list[dict]:
    """For every cell: {"deep_dive": title or None, "skipped": bool (References), "hidden": bool}."""
    out, open_dive, open_skip = [], None, None   # (level, title)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for level, title in headings(source(cell)):
                if open_dive and level <= open_dive[0]:
                    open_dive = None
                if open_skip and level <= open_skip[0]:
                    open_skip = None
                if is_deep_dive(title) and not open_dive:
                    open_dive = (level, title)
                if title.strip() in NOT_READ:
                    open_skip = (level, title)
        tags = set(cell.get("metadata", {}).get("tags", []))
        out.append({"deep_dive": open_dive[1] if open_dive else None, "skipped": open_skip is not None,
                    "hidden": bool(tags & HIDDEN_TAGS)})
    return out


def deep_dive_heads(nb: dict) -> list[int]:
    """Indices of the cells that open a deep dive (their first heading is 'Deep dive: ...')."""
    return [i for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "markdown" and (h := headings(source(c))) and is_deep_dive(h[0][1])]


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_TAGS = re.compile(r"<[^>]+>|<!--.*?-->", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F][A-Za-z0-9\u00C0-\u024F'’.,%-]*")


def prose_words(text: str) -> int:
    """Words a reader reads: a formula counts as one word, link targets and HTML tags as none."""
    text = _MATH.sub(" formula ", text)
    text = _TAGS.sub(" ", text)
    text = _LINK_TARGET.sub("]", text)
    text = "\n".join(line for line in text.splitlines() if not FENCE.match(line.strip()))
    return len(_WORD.findall(text))


def code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def stats(nb: dict) -> dict:
    core_words = core_code = dive_words = dive_code = 0
    for cell, where in zip(nb["cells"], sections(nb)):
        if where["skipped"] or where["hidden"]:
            continue
        text = source(cell)
        if cell["cell_type"] == "markdown":
            n = prose_words(text)
            if where["deep_dive"]:
                dive_words += n
            else:
                core_words += n
        elif cell["cell_type"] == "code":
            n = code_lines(text)
            if where["deep_dive"]:
                dive_code += n
            else:
                core_code += n
    return {"core_words": core_words, "core_code_lines": core_code, "deep_dive_words": dive_words,
            "deep_dive_code_lines": dive_code, "deep_dives": len(deep_dive_heads(nb)),
            "reading_minutes": reading_minutes(core_words, core_code),
            "deep_dive_minutes": reading_minutes(dive_words, dive_code) if dive_words or dive_code else 0}


def reading_minutes(words: int, code: int) -> int:
    """Rounded up to 5 minutes: a reading time is an estimate, not a measurement."""
    minutes = words / WORDS_PER_MINUTE + code * SECONDS_PER_CODE_LINE / 60
    return max(5, 5 * math.ceil(minutes / 5))


def fold(nb: dict) -> bool:
    """Mark every deep dive collapsed for JupyterLab and Colab, and nothing else; return whether nb changed."""
    before = json.dumps(nb, sort_keys=True)
    heads = set(deep_dive_heads(nb))
    collapsed = []
    for i, cell in enumerate(nb["cells"]):
        meta = cell.setdefault("metadata", {})
        if i in heads:
            meta["jp-MarkdownHeadingCollapsed"] = True
            cell_id = cell.get("id") or f"cell-{i:02d}"
            meta["id"] = cell_id           # Colab names cells by metadata.id
            collapsed.append(cell_id)
        else:
            meta.pop("jp-MarkdownHeadingCollapsed", None)
            if cell.get("id") and meta.get("id") == cell.get("id"):
                meta.pop("id")
    colab = nb.setdefault("metadata", {}).setdefault("colab", {})
    if collapsed:
        colab["collapsed_sections"] = collapsed
    else:
        colab.pop("collapsed_sections", None)
    if not colab:
        nb["metadata"].pop("colab")
    return json.dumps(nb, sort_keys=True) != before


def chapters() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["stats", "fold"])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or chapters()
    if args.command == "stats":
        print(f"{'chapter':34} {'core words':>10} {'code':>5} {'dives':>5} {'dive words':>10} {'read min':>8}")
        for p in paths:
            s = stats(json.loads(p.read_text(encoding="utf-8")))
            flag = "  > budget" if s["core_words"] > CORE_WORDS_BUDGET else ""
            print(f"{p.stem:34} {s['core_words']:>10,} {s['core_code_lines']:>5} {s['deep_dives']:>5} "
                  f"{s['deep_dive_words']:>10,} {s['reading_minutes']:>8}{flag}")
    else:
        for p in paths:
            nb = json.loads(p.read_text(encoding="utf-8"))
            if fold(nb):
                write(p, nb)
                print(f"folded the deep dives of {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
