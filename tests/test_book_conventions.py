"""The book's conventions, checked on the notebooks' sources (fast; no kernel, no build).

* Exercises have three parts (DESIGN.md): a reader's cell tagged ``exercise`` holding a skeleton (``...``),
  then a one-line check ``check.exercise_N_M(...)``, then the solution: tagged ``hide-cell`` and
  ``solution``, collapsed in Jupyter (``jupyter.source_hidden``), behind a "Show solution" toggle on the
  site, folded in Colab too (``cellView: form`` and a ``#@title`` line), and ending in the same check (which
  the build runs strictly: bookbuild/build_book.py).
* Prediction and exercise ids name their own chapter (``check.predict("7.1", ...)`` in chapter 7 only).
* Every check rejects the wrong answers it registers, and says "not answered yet" to a skeleton.
* Misconception notes have their three parts: what circulates, what is true, where it is checked.
* Code that only draws is folded away (site and Jupyter alike); no visible code cell is longer than
  25 lines unless tagged ``long-lesson`` (the length itself is the lesson).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_VISIBLE_LINES = 25
HIDDEN_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
CHECK_LINE = re.compile(r"^check\.exercise_([0-9]+[a-z]?|[A-Z])_([0-9]+)\(.*\)$")


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _src(cell) -> str:
    return "".join(cell["source"])


def _tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags", []))


def _chapter(path) -> str:
    stem = path.stem
    # "05_add_norm_ffn" -> "5", "13b_real_sentences" -> "13b", "appendix_a_vision" -> "A"
    if stem.startswith("appendix"):
        return stem.split("_")[1].upper()
    number = stem.split("_")[0]
    return str(int(number[:2])) + number[2:]


def _code_lines(src: str) -> list[str]:
    return [ln for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def exercises(path) -> list[dict]:
    """The exercises of a notebook: [{"number", "reader", "check", "solution"}] (cell indices)."""
    cells, found = _cells(path), []
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code" and "exercise" in _tags(cell):
            found.append({"reader": i, "check": i + 1, "solution": i + 2})
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_exercises_have_three_parts(path):
    cells, chapter = _cells(path), _chapter(path)
    found = exercises(path)
    assert 3 <= len(found) <= 5, f"{path.name}: {len(found)} exercises (cells tagged 'exercise'); want 3 to 5"
    markdown_before = ""
    numbers = []
    for ex in found:
        reader, check, solution = (cells[ex[k]] if ex[k] < len(cells) else None
                                   for k in ("reader", "check", "solution"))
        where = f"{path.name} cell {ex['reader']}"
        assert "..." in _src(reader), f"{where}: the reader's cell should hold a skeleton with ... to replace"
        assert check is not None and check["cell_type"] == "code", f"{where}: no check cell after the reader's cell"
        lines = _code_lines(_src(check))
        assert len(lines) == 1 and CHECK_LINE.match(lines[0]), \
            f"{where}: the cell after the reader's must be one line check.exercise_N_M(...), got {_src(check)!r}"
        n, m = CHECK_LINE.match(lines[0]).groups()
        assert n == chapter, f"{where}: exercise {n}.{m} in chapter {chapter}"
        numbers.append(int(m))
        assert solution is not None and solution["cell_type"] == "code", f"{where}: no solution cell after the check"
        meta = solution.get("metadata", {})
        assert {"hide-cell", "solution"} <= _tags(solution), f"{where}: the solution needs tags hide-cell, solution"
        assert meta.get("jupyter", {}).get("source_hidden") is True, \
            f"{where}: the solution is not collapsed in Jupyter"
        assert meta.get("mystnb", {}).get("code_prompt_show") == "Show solution", \
            f"{where}: the solution's toggle should read 'Show solution' (metadata mystnb.code_prompt_show)"
        assert f"check.exercise_{n}_{m}(" in _src(solution), f"{where}: the solution must run check.exercise_{n}_{m}"
        # Colab ignores jupyter.source_hidden; its own way to fold a cell is a form with a title
        assert meta.get("cellView") == "form" and _src(solution).startswith("#@title "), \
            f"{where}: the solution should start with '#@title Solution' and have cellView: form (folded in Colab)"
        markdown_before = "".join(_src(c) for c in cells[: ex["reader"]] if c["cell_type"] == "markdown")
        assert f"Exercise {n}.{m}" in markdown_before, f"{where}: no 'Exercise {n}.{m}' statement before the cell"
    assert numbers == list(range(1, len(numbers) + 1)), f"{path.name}: exercises numbered {numbers}"


# check.predict("7.1", ...), check.reveal("7.1", ...), check.exercise_7_1(...): the id's chapter part
ID_CALL = re.compile(r"check\.(?:predict|reveal)\(\s*[\"']([0-9]+[a-z]?|[A-Z])\.[0-9]+[\"']"
                     r"|check\.exercise_([0-9]+[a-z]?|[A-Z])_[0-9]+\(")


def test_the_id_pattern_sees_every_call():
    """The test below only helps if its pattern finds the calls: every chapter has a prediction and exercises."""
    for path in NOTEBOOKS:
        found = [a or b for cell in _cells(path) if cell["cell_type"] == "code" for a, b in ID_CALL.findall(_src(cell))]
        assert len(found) >= 4, f"{path.name}: the pattern found only {found} (a prediction pair and 3+ exercises)"


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")),
                         ids=lambda p: p.parent.name + "/" + p.stem)
def test_prediction_and_exercise_ids_name_their_chapter(path):
    """Chapters were reordered once and their predictions kept the old numbers ("Prediction 8.1" in chapter 7):
    every id a chapter's code uses starts with that chapter's number (13b for 13b, the letter for an appendix)."""
    chapter = _chapter(path)
    wrong = [(i, a or b) for i, cell in enumerate(_cells(path)) if cell["cell_type"] == "code"
             for a, b in ID_CALL.findall(_src(cell)) if (a or b) != chapter]
    assert not wrong, f"{path.name} is chapter {chapter}, but its code uses ids of chapter(s) " + \
        ", ".join(f"{c} (cell {i})" for i, c in wrong)


def test_every_check_is_used_and_every_used_check_exists():
    from transformer_lite.book import check

    used = set()
    for path in NOTEBOOKS:
        for cell in _cells(path):
            used |= {f"{a}.{b}" for a, b in re.findall(r"check\.exercise_([0-9]+[a-z]?|[A-Z])_([0-9]+)\(", _src(cell))}
    registered = set(check.registry())
    assert used == registered, f"used but not registered: {sorted(used - registered)}; " \
                               f"registered but unused: {sorted(registered - used)}"


def _registered():
    from transformer_lite.book import check

    return sorted(check.registry().items())


@pytest.mark.parametrize("number,ex", _registered(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_check_rejects_wrong_answers_and_waits_for_a_skeleton(number, ex, monkeypatch):
    from transformer_lite.book import check

    monkeypatch.delenv(check.STRICT_ENV, raising=False)
    for make in ex.wrong:
        verdict = ex.function(*make())
        assert verdict.status == "wrong" and not verdict, f"exercise {number} accepted a wrong answer: {verdict!r}"
        assert len(verdict.message) > 10
    monkeypatch.setenv(check.STRICT_ENV, "1")
    with pytest.raises(check.ExerciseError):
        ex.function(*ex.wrong[0]())
    import inspect

    n_args = len(inspect.signature(ex.function).parameters)
    skeleton = ex.function(*([...] * max(n_args, 1)))
    assert skeleton.status == "todo" and not skeleton


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_misconception_notes_have_three_parts(path):
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "markdown" or "**Misconception.**" not in _src(cell):
            continue
        quote = [ln for ln in _src(cell).splitlines() if ln.startswith(">")]
        text = "\n".join(quote)
        assert quote and quote[0].startswith("> **Misconception.**"), \
            f"{path.name} cell {i}: a misconception note is a quote starting '> **Misconception.**'"
        assert "**What is true.**" in text, f"{path.name} cell {i}: the note does not say what is true"
        assert "**Checked**" in text, f"{path.name} cell {i}: the note does not say where it is checked"


def _draws_only(src: str) -> bool:
    lines = _code_lines(src)
    drawing = [ln for ln in lines if re.search(r"\b(ax\d?|axes|axs|fig|plt|cbar|legend)\b[\.\[]|\.set_[a-z]+\(|"
                                                r"\bsubplots?\(|\.(plot|bar|barh|imshow|scatter|annotate|text)\(",
                                                ln)]
    return bool(lines) and "assert" not in src and len(drawing) >= 0.6 * len(lines) and len(lines) >= 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_plots_out_of_the_way_and_no_long_visible_cells(path):
    problems = []
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "code":
            continue
        tags, src = _tags(cell), _src(cell)
        source_hidden = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is True
        folded = bool(tags & {"hide-input", "hide-cell"})
        if folded != source_hidden:
            problems.append(f"cell {i}: hide-input/hide-cell on the site and jupyter.source_hidden must go together")
        if tags & HIDDEN_TAGS:
            continue
        n = len(src.splitlines())
        if n > MAX_VISIBLE_LINES and "long-lesson" not in tags:
            problems.append(f"cell {i}: {n} visible lines (> {MAX_VISIBLE_LINES})")
        if _draws_only(src):
            problems.append(f"cell {i}: draws only, but is visible (tag it hide-input)")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
