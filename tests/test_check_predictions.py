"""The predictions' registry (transformer_lite/book/check/predictions.py), their verdicts, and what the book's build
writes into the static page for predictions and exercise checks (check/page.py; the browser side is
tests/test_site_predictions.py)."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from transformer_lite.book import check
from transformer_lite.book.check import predictions
from transformer_lite.book.check.predictions import PREDICTIONS, Prediction
from transformer_lite.book.i18n import set_language

ROOT = Path(__file__).resolve().parent.parent
PAIR = re.compile(r"check\.(predict|reveal)\(\s*[\"']([^\"']+)[\"']")


@pytest.fixture(autouse=True)
def _english_and_no_guess(monkeypatch):
    set_language("en")
    monkeypatch.delenv("TRANSFORMER_LITE_STATIC", raising=False)
    check._PREDICTIONS.clear()
    yield
    check._PREDICTIONS.clear()
    set_language("en")


def _calls(path: Path) -> set[tuple[str, str]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {m for c in nb["cells"] if c["cell_type"] == "code" for m in PAIR.findall("".join(c["source"]))}


# ---- the registry ---------------------------------------------------------------------------------------------

def test_every_prediction_of_the_book_is_declared_and_every_declared_one_is_asked():
    used = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        calls = _calls(path)
        used |= {n for _, n in calls}
        for what, n in calls:
            assert n in PREDICTIONS, f"{path.name}: check.{what}({n!r}) is not declared in check/predictions.py"
    assert used == set(PREDICTIONS), f"declared but asked nowhere: {sorted(set(PREDICTIONS) - used)}"


def test_a_share_counts_as_right_within_five_hundredths():
    # the readings' case: 0.3 against a measured 0.34 is right (the old fixed 10 % said wrong)
    check.predict("5.1", 0.3)
    assert check.reveal("5.1", 0.34).status == "right"
    assert check.reveal("5.1", 0.36).status == "wrong"
    check.predict("14.1", 0.25)
    assert check.reveal("14.1", 0.2999).status == "right" and check.reveal("14.1", 0.31).status == "wrong"


@pytest.mark.parametrize("number, guess, measured, right", [
    ("6.1", 4, 4, True), ("6.1", 4.0, 4, True), ("6.1", 3, 4, False),          # a count: exact
    ("12.1", 5, 8, True), ("12.1", 4, 8, False),                               # a count within ±3
    ("10.1", 0.5, 0.54, True), ("10.1", 0.5, 0.6, False),                      # 10 % of the measured value
    ("11.1", 0.5, 0.9, True), ("11.1", 0.1, 0.9, False),                       # its order: 50 %
    ("1.1", " Yes ", "yes", True), ("1.1", "no", "yes", False),                # a choice: case and spaces ignored
    ("13b.1", "overlap", "below", False),
    ("7.1", 0.2, torch.tensor(0.2), True),                                     # a 0-d tensor is its number
])
def test_verdicts_follow_the_declared_rule(number, guess, measured, right):
    assert check.predict(number, guess).status == "right"  # recorded
    verdict = check.reveal(number, measured)
    assert verdict.status == ("right" if right else "wrong")
    assert PREDICTIONS[number].same(PREDICTIONS[number].read(guess), measured) is right


@pytest.mark.parametrize("number, guess", [("1.1", "maybe"), ("1.1", 1), ("5.1", "0.3"), ("5.1", True),
                                           ("6.1", 2.5), ("5.1", float("nan"))])
def test_a_guess_of_the_wrong_kind_is_not_recorded_and_says_what_to_write(number, guess):
    verdict = check.predict(number, guess)
    assert verdict.status == "wrong" and "your prediction should be" in verdict.message
    assert check.reveal(number, "yes" if number == "1.1" else 1).status == "todo"


def test_the_predict_cell_states_its_rule():
    assert "within ±0.05 of what the cell measures" in repr(check.predict("5.1", ...))
    assert "within 10 % of what the cell measures" in repr(check.predict("15.1", ...))
    assert "exactly what the cell measures" in repr(check.predict("6.1", ...))
    assert "within ±3 of what the cell measures" in repr(check.predict("12.1", ...))
    assert "Write one of 'vit', 'cnn'" in repr(check.predict("A.1", ...))
    assert "within ±0.05" in repr(check.predict("5.1", 0.3))


def test_the_rule_reads_in_chinese():
    set_language("zh")
    text = repr(check.predict("5.1", ...))
    assert "±0.05" in text and "即算对" in text and "Write" not in text
    assert "只有与单元格测得的值完全相同才算对" in repr(check.predict("6.1", 4))


def test_bad_ids_and_tolerances_are_errors_naming_the_argument():
    with pytest.raises(ValueError, match="number: prediction '99.1' is not declared"):
        check.predict("99.1", 0.5)
    with pytest.raises(ValueError, match="number: prediction '99.1'"):
        check.reveal("99.1", 0.5)
    with pytest.raises(TypeError, match="number should be a non-empty str"):
        check.predict("", 0.5)
    with pytest.raises(ValueError, match="rel: prediction 5.1 declares"):
        check.reveal("5.1", 0.5, rel=0.1)
    assert check.reveal("11.1", 0.5, rel=0.5).status == "todo"  # the declared one is accepted
    for bad in (dict(kind="guess"), dict(kind="number"), dict(kind="number", abs=0.1, rel=0.1),
                dict(kind="number", abs=-1.0), dict(kind="count", abs=0.5), dict(kind="count", rel=0.1),
                dict(kind="choice", choices=("yes",)), dict(kind="choice", choices=("Yes", "no")),
                dict(kind="choice", choices=("a", "b"), abs=0.1), dict(kind="number", abs=0.1, choices=("a", "b"))):
        with pytest.raises(ValueError):
            Prediction("0.9", **bad)


def test_a_declared_prediction_is_found_by_its_number():
    assert predictions.prediction("13b.1").choices == ("below", "above", "overlap")


# ---- what the build writes into the static page ----------------------------------------------------------------

def _attr(fragment: str, name: str):
    m = re.search(fr'{name}="([^"]*)"', fragment)
    return json.loads(html.unescape(m[1])) if m else None


def test_nothing_is_added_outside_the_build():
    assert check.predict("5.1", ...).page == "" and check.reveal("5.1", 0.3).page == ""
    assert "tl-ask" not in check.exercise_5_1(..., ..., ...)._repr_html_()


def test_the_build_writes_a_labelled_field_and_the_measured_value(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    out = check.predict("5.1", ...)._repr_html_()
    field = re.search(r'<label for="([^"]+)">Your prediction 5\.1</label> <input id="([^"]+)"', out)
    assert field and field[1] == field[2]
    assert 'class="tl-ask tl-ask-predict" hidden' in out  # shown by the script: without it, the Jupyter text
    assert _attr(out, "data-tl-rule") == {"kind": "number", "abs": 0.05, "rel": None, "choices": []}
    assert 'class="tl-check-text"' in out and 'role="status"' in out
    out = check.reveal("5.1", torch.tensor(0.6655))._repr_html_()
    assert _attr(out, "data-tl-measured") == {"kind": "number", "abs": 0.05, "rel": None, "choices": [],
                                              "measured": pytest.approx(0.6655), "shown": "0.6655"}
    out = check.predict("C.1", ...)._repr_html_()
    assert re.findall(r'<option value="(\w+)">', out) == ["error", "unchanged", "changed"]
    out = check.reveal("C.1", "changed")._repr_html_()
    assert _attr(out, "data-tl-measured")["measured"] == "changed"


def test_the_page_texts_come_from_the_catalog(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    set_language("zh")
    out = check.predict("5.1", ...)._repr_html_()
    table = json.loads(re.search(r'<script type="application/json" class="tl-check-text">(.*?)</script>', out)[1])
    from transformer_lite.book.check.page import JS_TEXTS

    for english in JS_TEXTS:
        assert re.search(r"[\u3400-\u9fff]", table[english]), english
    # check.reveal's own message, from its catalog entry, with the fields the page fills in
    assert table["you predicted {guess}; the cell measured {measured}."] == \
            "你预测的是 {guess}；单元格测得的是 {measured}。"
    assert "你的预测" in out


def test_an_exercise_of_numbers_carries_what_its_check_compares_with(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    todo = check.exercise_5_1(..., ..., ...)._repr_html_()
    assert _attr(todo, "data-tl-answers") == ["my_mean", "my_variance", "my_output"]
    assert 'data-tl-cell=""' in todo  # the site's extension names the cell (bookbuild/sphinx_ext/checks.py)
    x = torch.tensor([2.0, 4.0, 6.0, 8.0])
    right = check.exercise_5_1(5.0, 5.0, F.layer_norm(x, (4,)))._repr_html_()  # one float object for two answers
    key = _attr(right, "data-tl-key")
    mean, variance, output = key["answers"]
    assert [a["name"] for a in key["answers"]] == ["my_mean", "my_variance", "my_output"]
    assert [r["kind"] for r in mean["rules"]] == ["number"] and mean["rules"][0]["expected"] == 5.0
    assert variance["rules"][0]["wrong"] == "my_variance = {value} is not right."
    assert "biased variance" in variance["rules"][0]["hint"]
    assert output["rules"][0]["shape"] == [4] and output["rules"][0]["expected"] == pytest.approx(
        F.layer_norm(x, (4,)).tolist())
    assert key["message"].startswith("mean 5")


def test_an_exercise_whose_answer_is_code_has_no_key(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    out = check.exercise_5_3(lambda x, eps=1e-5: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps))._repr_html_()
    assert "tl-ask" not in out and "tl-exercise-key" not in out
    assert 'class="tl-ask tl-ask-exercise"' in check.exercise_5_3(...)._repr_html_()


def test_a_wrong_answer_in_the_build_writes_nothing_extra(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    monkeypatch.delenv(check.STRICT_ENV, raising=False)
    verdict = check.exercise_5_1(5.0, 4.0, [0, 0, 0, 0])
    assert verdict.status == "wrong" and verdict.page == ""
    assert check._TRACE is None


def test_the_site_names_the_cell_an_exercise_links_to_in_colab():
    """bookbuild/sphinx_ext/checks.py fills in the cell's id (the answer cell above the check) from the notebook."""

    from docutils import nodes

    from bookbuild.sphinx_ext import checks

    path = ROOT / "notebooks" / "05_add_norm_ffn.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    check_cell = next(i for i, c in enumerate(cells) if "check.exercise_5_2(" in "".join(c["source"])
                      and "solution" not in (c["metadata"].get("tags") or []))
    answer = cells[check_cell - 1]
    assert "exercise" in answer["metadata"]["tags"]

    class App:
        class config:
            tl_notebook_sources = {}

        class env:
            docname = "notebooks/05_add_norm_ffn"
            doc2path = staticmethod(lambda docname: ROOT / f"{docname}.ipynb")

    doctree = nodes.document(None, None)
    container = nodes.container(nb_element="cell_code", cell_index=check_cell)
    container += nodes.raw("", '<div class="tl-verdict">…</div><div class="tl-ask tl-ask-exercise" hidden '
                               'data-tl-exercise="5.2" data-tl-answers="[]" data-tl-cell=""></div>', format="html")
    doctree += container
    checks.exercise_cells(App, doctree)
    assert f'data-tl-cell="{answer["id"]}"' in doctree.astext()


def test_a_shape_is_compared_exactly_with_the_hint_its_check_gives(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    state = torch.random.get_rng_state()
    right = check.exercise_4_1((2, 8, 10, 64), (2, 8, 10, 10), torch.Size([2, 10, 512]))._repr_html_()
    assert torch.equal(torch.random.get_rng_state(), state)  # the probe for the hints left the random state alone
    answers = _attr(right, "data-tl-key")["answers"]
    assert [a["rules"][0]["kind"] for a in answers] == ["exact"] * 3
    assert [a["rules"][0]["expected"] for a in answers] == [[2, 8, 10, 64], [2, 8, 10, 10], [2, 10, 512]]
    monkeypatch.delenv(check.STRICT_ENV, raising=False)
    wrong = check.exercise_4_1((3, 8, 10, 64), (2, 8, 10, 10), (2, 10, 512))
    assert answers[0]["rules"][0]["hint"] == wrong.hint
    assert answers[0]["rules"][0]["wrong"] == "shape_q = {value} is not right."
