"""A chapter in one sitting (bookbuild/chapters.py): deep dives well formed and folded in both editions, a core path of
at most 2,800 words (deep-dive teasers included), the line under the title current, a predict-then-run question in
every chapter, and chapters that use nothing a later chapter teaches."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from bookbuild import chapters

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOKS = chapters.chapters()
IDS = [p.stem for p in NOTEBOOKS]
# What a reader sees on the core path, the deep dives' headings and first paragraphs included: 2,800 words at most
CORE_WORDS_LIMIT = chapters.CORE_WORDS_BUDGET


def _nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _zh(path: Path) -> Path:
    return path.parent / "zh" / path.name


def test_the_book_has_deep_dives():
    assert sum(len(chapters.deep_dive_heads(_nb(p))) for p in NOTEBOOKS) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_deep_dives_are_well_formed(path):
    """A deep dive's cell is its heading and one paragraph; it ends at a later heading (it cannot swallow the
    exercises); the Chinese notebook's heading reads 深入：. The line <div id="slug"></div> before a linked heading
    (bookbuild/i18n.py anchors, for JupyterLab; the site drops it) is not a block of the cell's text."""
    nb, zh = _nb(path), _nb(_zh(path))
    where = chapters.sections(nb)
    for i in chapters.deep_dive_heads(nb):
        text = chapters.source(nb["cells"][i]).strip()
        blocks = [b for b in re.split(r"\n\s*\n", text)
                  if b.strip() and not re.fullmatch(r'(<div id="[^"<>\s]+"></div>)+', b.strip())]
        assert len(blocks) == 2 and blocks[0].startswith("#"), \
            f"{path.name} cell {i}: a deep dive's cell holds its heading and one paragraph, got {len(blocks)} blocks"
        title = where[i]["deep_dive"]
        assert any(w["deep_dive"] != title for w in where[i + 1:]), \
            f"{path.name}: the deep dive {title!r} runs to the end of the chapter; put a heading after it"
        zh_title = chapters.headings(chapters.source(zh["cells"][i]))[0][1]
        assert zh_title.startswith("深入："), f"{_zh(path)} cell {i}: {zh_title!r} should start with 深入："
    assert chapters.deep_dive_heads(zh) == chapters.deep_dive_heads(nb)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_deep_dives_are_folded_in_jupyterlab_and_colab(path):
    """bookbuild/chapters.py fold has been run on both editions: the metadata matches the headings."""
    for p in (path, _zh(path)):
        nb = _nb(p)
        assert not chapters.fold(copy.deepcopy(nb)), f"{p}: run python -m bookbuild.chapters fold, then i18n notebooks"
        heads = chapters.deep_dive_heads(nb)
        assert nb["metadata"].get("colab", {}).get("collapsed_sections", []) == \
            [nb["cells"][i]["metadata"]["id"] for i in heads]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_core_path_fits_one_sitting(path):
    s = chapters.stats(_nb(path))
    assert s["core_words"] <= CORE_WORDS_LIMIT, (
        f"{path.name}: {s['core_words']:,} words on the core path, "
        f"deep-dive teasers included ({chapters.CORE_WORDS_BUDGET:,} "
        "at most): fold detours into deep dives or cut them")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_line_under_the_title_is_current(path):
    """Reading time from the core path as it is now, running time as measured, in both editions."""
    nb = _nb(path)
    cell = chapters.header_cell(nb)
    assert cell is not None and nb["cells"].index(cell) == 1, f"{path.name}: run python -m bookbuild.chapters header"
    times = json.loads(chapters.TIMES.read_text(encoding="utf-8"))["seconds"]
    assert chapters.source(cell) == chapters.header_line(path.stem, nb, times[path.stem]), \
        f"{path.name}: the line under the title is stale: run python -m bookbuild.chapters header"
    zh = chapters.source(chapters.header_cell(_nb(_zh(path))))
    zh = zh.replace("](../../book/", "](../book/")  # the Chinese notebooks sit one folder deeper (bookbuild/i18n.py)
    assert zh == chapters.header_line(path.stem, nb, times[path.stem], zh=True)


def test_the_running_times_were_measured_for_every_chapter_on_two_cores():
    data = json.loads(chapters.TIMES.read_text(encoding="utf-8"))
    assert set(data["seconds"]) == set(IDS)
    assert data["machine"]["cpu_count"] <= 2 or data["machine"]["threads"] <= 2
    assert all(0 < s < 60 for s in data["seconds"].values()), data["seconds"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_chapter_asks_for_a_prediction_before_the_cell_that_answers_it(path):
    """check.predict("N.k", ...) in a cell before the check.reveal("N.k", ...) that compares it."""
    code = [(i, chapters.source(c)) for i, c in enumerate(_nb(path)["cells"]) if c["cell_type"] == "code"]
    predicted = {m: i for i, s in code for m in re.findall(r"check\.predict\(\s*[\"']([^\"']+)[\"']", s)}
    revealed = {m: i for i, s in code for m in re.findall(r"check\.reveal\(\s*[\"']([^\"']+)[\"']", s)}
    pairs = [n for n in predicted if n in revealed and predicted[n] < revealed[n]]
    assert pairs, f"{path.name}: no check.predict(...) before a check.reveal(...) of the same number"
    assert set(predicted) == set(revealed), \
        f"{path.name}: predictions {sorted(predicted)} vs reveals {sorted(revealed)}"


def _toc_order() -> list[str]:
    text = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    return re.findall(r"file:\s*notebooks/([\w]+)", text)


def test_no_chapter_assumes_a_later_one():
    order = _toc_order()
    stems = {chapters.slug(s): s for s in order}
    assert set(chapters.ASSUMES) == {chapters.slug(s) for s in order}
    for stem in order:
        for need in chapters.ASSUMES[chapters.slug(stem)]:
            assert order.index(stems[need]) < order.index(stem), f"{stem} assumes {stems[need]}, which comes later"


def test_no_chapter_links_forward_as_a_prerequisite():
    """No chapter says it uses what a later chapter teaches ("Used here, taught in chapter N", "see chapter N for
    how ... works" before it): the only forward links are pointers ("chapter N shows more")."""
    order = _toc_order()
    for i, stem in enumerate(order):
        text = "\n".join(chapters.source(c) for c in _nb(ROOT / "notebooks" / f"{stem}.ipynb")["cells"]
                         if c["cell_type"] == "markdown")
        for later in order[i + 1:]:
            assert not re.search(rf"(?i)taught in \[?chapter [0-9a-z]+\]?\({later}", text), (stem, later)
            assert not re.search(rf"(?i)used here, taught in[^\n]*{later}", text), (stem, later)


def test_stats_count_what_a_reader_sees():
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Title\n\nOne two three."},
        {"cell_type": "code", "metadata": {}, "source": "x = 1\n# a comment\n\ny = 2"},
        {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": "plot()"},
        {"cell_type": "markdown", "metadata": {}, "source": "### Deep dive: History\n\nFour five."},
        {"cell_type": "markdown", "metadata": {}, "source": "Six seven eight $x^2 + y$."},
        {"cell_type": "code", "metadata": {}, "source": "z = 3"},
        {"cell_type": "markdown", "metadata": {}, "source": "## Next\n\nNine [ten](http://example.org/a-b-c)."},
        {"cell_type": "markdown", "metadata": {}, "source": "## References\n\nMany many words here."},
    ]}
    s = chapters.stats(nb)
    # Title One two three, the deep dive's teaser (Deep dive: History Four five: it shows on the core path),
    # Next Nine ten
    assert (s["core_words"], s["core_code_lines"]) == (12, 2)
    assert (s["deep_dive_words"], s["deep_dive_code_lines"], s["deep_dives"]) == (4, 1, 1)   # Six seven eight formula
    assert chapters.deep_dive_heads(nb) == [3]
    changed = chapters.fold(nb)
    assert changed and nb["cells"][3]["metadata"]["jp-MarkdownHeadingCollapsed"] is True
    assert nb["metadata"]["colab"]["collapsed_sections"] == ["cell-03"] and not chapters.fold(nb)


def test_the_intro_names_every_chapter_core_or_optional():
    """The intro's map: the core path in the book's order, the optional chapters, together every numbered chapter
    once; a core chapter assumes only core chapters."""
    text = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    core_par = re.search(r"\*\*The core path\*\*[^\n]*\n?[^\n]*", text)[0]
    optional_par = re.search(r"\*\*Optional chapters\*\*.*?\n\n", text, re.S)[0]
    listed = lambda par: re.search(r"chapters ([0-9a-z, ]+? and [0-9a-z]+)", par)[1].replace(" and ", ", ").split(", ")  # noqa: E731
    core, optional = listed(core_par), listed(optional_par)
    order = _toc_order()
    numbered = {re.match(r"(\d+[a-z]?)_", s)[1].lstrip("0") or "0": s for s in order if re.match(r"\d", s)}
    assert sorted(core + optional, key=lambda n: order.index(numbered[n])) == list(numbered)
    assert core == sorted(core, key=lambda n: order.index(numbered[n])) and not set(core) & set(optional)
    core_slugs = {chapters.slug(numbered[n]) for n in core}
    for n in core:
        needs = set(chapters.ASSUMES[chapters.slug(numbered[n])])
        assert needs <= core_slugs, (n, needs - core_slugs)
