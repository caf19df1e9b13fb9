#!/usr/bin/env python3
"""A chapter's shape: its deep dives, its core path, and the line at its top.

    python -m bookbuild.chapters stats          # per chapter: core-path words and code lines, deep-dive words,
                                                # reading time
    python -m bookbuild.chapters fold [NB ...]  # set the metadata that folds the deep dives in JupyterLab and Colab
    python -m bookbuild.chapters header         # write the line under each chapter's title (both editions):
                                                # reading time, running time (benchmarks/notebooks.json, `make bench`),
                                                # what it assumes

**Deep dives.** A detour (history, a variant, a numerical aside) is a *deep dive*: a section whose heading starts
with ``Deep dive:`` (``深入：`` in the Chinese edition), written as one markdown cell that holds the heading and one
paragraph saying what is inside and who would want it. The deep dive runs to the next heading of the same or a
higher level, exactly the cells that JupyterLab and Colab collapse under a heading, so every chapter that has one
puts a heading after it (the next section, or ``## Exercises``). Where the reader meets it:

- on the site (both editions) the heading and its paragraph show, the rest is folded behind a toggle
  (``bookbuild/sphinx_ext/deep_dives.py``); the PDF prints it open;
- in JupyterLab the heading cell carries ``jp-MarkdownHeadingCollapsed``, so the notebook opens with the section
  collapsed (the heading shows a "N cells hidden" button);
- in Colab the heading cell's id is listed in the notebook's ``colab.collapsed_sections``.

``fold`` writes that metadata (the Chinese notebooks copy it, bookbuild/i18n.py); ``tests/test_chapters.py`` checks it.

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
CORE_WORDS_BUDGET = 2800                # one sitting: the words the core path shows, deep-dive teasers included

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
    teasers = set(deep_dive_heads(nb))
    for i, (cell, where) in enumerate(zip(nb["cells"], sections(nb))):
        if where["skipped"] or where["hidden"] or HEADER_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        text = source(cell)
        if cell["cell_type"] == "markdown":
            n = prose_words(text)
            if where["deep_dive"] and i not in teasers:
                dive_words += n
            else:  # a deep dive's heading and first paragraph show on the core path (the site folds what follows)
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


# What each chapter assumes the reader has read (by the part of its file name after the number; the order of the
# book is _toc.yml's). Empty: only the prerequisites of the introduction.
ASSUMES = {
    "why_transformers": [],
    "tokens_and_embeddings": [],
    "positional_encoding": ["tokens_and_embeddings"],
    "self_attention": ["tokens_and_embeddings", "positional_encoding"],
    "multi_head_attention": ["self_attention"],
    "add_norm_ffn": ["self_attention", "multi_head_attention"],
    "batchnorm_vs_layernorm": ["add_norm_ffn"],
    "masking": ["self_attention", "multi_head_attention"],
    "encoder": ["positional_encoding", "multi_head_attention", "add_norm_ffn", "masking"],
    "decoder": ["masking", "encoder"],
    "training": ["decoder"],
    "pre_ln_vs_post_ln": ["add_norm_ffn", "training"],
    "inference": ["decoder", "training"],
    "capstone_translator": ["training", "inference"],
    "real_sentences": ["capstone_translator"],
    "bert_and_gpt": ["encoder", "decoder", "training"],
    "since_2017": ["inference", "bert_and_gpt"],
    "vision": ["encoder"],
    "pitfalls": ["masking", "encoder", "decoder", "training"],
}
HEADER_TAG = "chapter-meta"
TIMES = ROOT / "benchmarks" / "notebooks.json"   # seconds per chapter on 2 cores (benchmarks/run.py --only notebooks)


def slug(stem: str) -> str:
    """'07_masking' -> 'masking'; 'appendix_a_vision' -> 'vision'; '13b_real_sentences' -> 'real_sentences'."""
    return re.sub(r"^(appendix_[a-z]_|\d+[a-z]?_)", "", stem)


def label(stem: str, zh: bool) -> str:
    """'07_masking' -> 'chapter 7' / '第 7 章'; 'appendix_c_pitfalls' -> 'appendix C' / '附录 C'."""
    if m := re.match(r"appendix_([a-z])_", stem):
        return f"附录 {m[1].upper()}" if zh else f"appendix {m[1].upper()}"
    number = re.match(r"(\d+)([a-z]?)_", stem)
    n = f"{int(number[1])}{number[2]}"
    return f"第 {n} 章" if zh else f"chapter {n}"


def _join(items: list[str], zh: bool) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ("、".join(items[:-1]) + "和" + items[-1]) if zh else (", ".join(items[:-1]) + " and " + items[-1])


def header_line(stem: str, nb: dict, seconds: float, zh: bool = False) -> str:
    """The line under a chapter's title, in English or Chinese (one paragraph: one message of the catalog)."""
    s = stats(nb)
    stems = {slug(p.stem): p.stem for p in chapters()}
    needs = [stems[k] for k in ASSUMES[slug(stem)]]
    links = [f"[{label(n, zh)}]({n}.ipynb)" for n in needs]
    run = max(5, 5 * round(seconds / 5))
    if zh:
        assumes = _join(links, True) if links else "只需[引言](../book/intro.md#prerequisites)列出的预备知识"
        dives = f"，深入内容另需约 {s['deep_dive_minutes']} 分钟" if s["deep_dives"] else ""
        # the code-line count stays, as in English: it tells how much code the sitting runs; the word count is left
        # out, since English words say nothing of the length of the Chinese text
        return (f"*阅读时间*：主线约 {s['reading_minutes']} 分钟（{s['core_code_lines']} 行代码）{dives}。"
                f"*运行时间*：在 2 核 CPU 上约 {run} 秒。"
                f"*前置章节*：{assumes}。")
    assumes = (_join(links, False) if links
               else "only the [prerequisites](../book/intro.md#prerequisites) of the introduction")
    dives = f", plus about {s['deep_dive_minutes']} min for the deep dives" if s["deep_dives"] else ""
    return (f"*Reading time:* about {s['reading_minutes']} min for the main path ({s['core_words']:,} words, "
            f"{s['core_code_lines']} lines of code){dives}. *Running time:* about {run} s on 2 cores. "
            f"*Assumes:* {assumes}.")


def header_cell(nb: dict) -> dict | None:
    return next((c for c in nb["cells"] if HEADER_TAG in c.get("metadata", {}).get("tags", [])), None)


def set_header(stem: str, nb: dict, seconds: float) -> bool:
    """Put (or update) the line as the chapter's second cell; return whether it changed."""
    cell = header_cell(nb)
    if cell is None:
        cell = {"cell_type": "markdown", "id": f"{slug(stem)[:20]}-meta", "metadata": {"tags": [HEADER_TAG]},
                "source": []}
        nb["cells"].insert(1, cell)
    line = header_line(stem, nb, seconds)
    if source(cell) == line:
        return False
    cell["source"] = [line]
    return True


def chinese_headers(catalogs: Path) -> int:
    """Fill each chapter's catalog with its Chinese line (after `i18n update` made the English one a message)."""
    import polib

    times, filled = json.loads(TIMES.read_text(encoding="utf-8"))["seconds"], 0
    for path in chapters():
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = header_cell(nb)
        po_path = catalogs / "notebooks" / f"{path.stem}.po"
        if cell is None or not po_path.exists():
            continue
        po = polib.pofile(str(po_path), wrapwidth=0)  # as bookbuild/i18n.py update writes them (sphinx-intl -w 0)
        entry = po.find(source(cell))
        chinese = header_line(path.stem, nb, times[path.stem], zh=True)
        if entry is not None and (entry.msgstr != chinese or "fuzzy" in entry.flags):
            entry.msgstr = chinese
            if "fuzzy" in entry.flags:
                entry.flags.remove("fuzzy")
            entry.previous_msgid = None
            po.save()
            filled += 1
    return filled


def chapters() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["stats", "fold", "header"])
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
    elif args.command == "header":
        import subprocess

        times = json.loads(TIMES.read_text(encoding="utf-8"))["seconds"]
        missing = [p.stem for p in paths if p.stem not in times]
        if missing:
            sys.exit(f"no running time for {missing} in {TIMES.relative_to(ROOT)}: "
                     "run python -m benchmarks.run --only notebooks")
        for p in paths:
            nb = json.loads(p.read_text(encoding="utf-8"))
            if set_header(p.stem, nb, times[p.stem]):
                write(p, nb)
                print(f"wrote the line under the title of {p.resolve().relative_to(ROOT)}")
        i18n = [sys.executable, "-m", "bookbuild.i18n"]
        subprocess.run(i18n + ["update"], check=True, cwd=ROOT)
        from bookbuild.translation.paths import CATALOGS

        print(f"{chinese_headers(CATALOGS)} Chinese line(s) written into the catalogs")
        subprocess.run(i18n + ["notebooks"], check=True, cwd=ROOT)
    else:
        for p in paths:
            nb = json.loads(p.read_text(encoding="utf-8"))
            if fold(nb):
                write(p, nb)
                print(f"folded the deep dives of {p.resolve().relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
