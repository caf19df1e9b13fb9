"""The predictions and exercise checks on the static site: what the build writes into the page for them.

The book's build executes every chapter with ``TRANSFORMER_LITE_STATIC=1`` (:func:`..interactive.static_mode`). Then

* a predict cell's output carries a field for the guess (a number or one of the choices) and a "Record" button;
* a reveal cell's output carries what the build measured, with the prediction's rule (predictions.py), and a
  "Reveal" button: the page compares the recorded guess as :func:`check.reveal` does, with its verdict;
* an exercise's check cell carries the names of its answers and the cell's id, and the solution's check (which the
  build runs with the right answers) carries, for an exercise whose every answer is a number, a choice or numbers
  of a given shape, what each answer was compared with and how (:func:`check.number`, :func:`check.close`,
  :func:`check.one_of` record it while the solution's check runs). The page then checks the reader's answers the
  same way; for an exercise whose answer is code, it says so and links to the cell in Colab.

bookbuild/sphinx_ext/static/tl-check.js brings these to life. Every text it shows comes from here, in the package's
language (its catalog, locale/zh_CN.po), written once with the prediction's field (:func:`texts`). Without JavaScript
the outputs read as in Jupyter. Nothing here is shown in Jupyter or Colab, where the cells run.
"""
from __future__ import annotations

import html
import itertools
import json
import math

from ..i18n import N_, tr

__all__ = ["enabled", "predict_html", "reveal_html", "exercise_html", "exercise_key_html", "texts", "JS_TEXTS"]

_ids = itertools.count(1)

# The page's own texts (tl-check.js looks each one up by its English; {fields} are filled there).
JS_TEXTS = (
    N_("Your prediction"),
    N_("choose"),
    N_("Record"),
    N_("Reveal what the build measured"),
    N_("Check"),
    N_("no prediction yet: write it here and press Record, then read on."),
    N_("recorded: you predict {guess}. Read on; the button after the experiment reveals what the build measured."),
    N_("press the button to compare your prediction with what the build measured."),
    N_("the build measured {measured}; you had not recorded a prediction (the field above, before the experiment)."),
    N_("not answered yet: write your answer here and press Check."),
    N_("not answered yet: this check runs your code, which needs Python. Open this cell in Colab, or run the "
       "chapter in Jupyter."),
    N_("Open this cell in Colab"),
    N_("a number"),
    N_("numbers, e.g. [0.1, 0.2]"),
    N_("a shape, e.g. (2, 3)"),
)


def enabled() -> bool:
    """True in the book's build, which writes the static site (``TRANSFORMER_LITE_STATIC=1``)."""
    from ..interactive import static_mode

    return static_mode()


def _json_attr(value) -> str:
    return html.escape(json.dumps(value, ensure_ascii=False), quote=True)


def texts() -> str:
    """The page's texts as a JSON script, written with the prediction's field (every chapter asks for one) and read
    by tl-check.js for every field and button of the page."""
    table = {english: tr(english) for english in JS_TEXTS}
    table.update({
        "Prediction {number}: {message}": tr("Prediction {number}: {message}"),
        "Exercise {number}: {message}": tr("Exercise {number}: {message}"),
        "Hint: {hint}": tr("Hint: {hint}"),
        # check.reveal's own messages, as templates ({guess}, {measured}: filled in by the page)
        "you predicted {guess}; the cell measured {measured}.":
            tr("you predicted {guess}; the cell measured {measured}."),
        "the text after this cell explains the difference.": tr("the text after this cell explains the difference."),
    })
    data = json.dumps(table, ensure_ascii=False).replace("<", "\\u003c")
    return f'<script type="application/json" class="tl-check-text">{data}</script>'  # i18n: data (HTML)


def predict_html(prediction) -> str:
    """The predict cell's field and button (hidden until tl-check.js shows them)."""
    from . import _show

    n = next(_ids)
    field_id = f"tl-predict-{prediction.number}-{n}".replace(".", "-")
    label, choose, record = html.escape(tr("Your prediction")), html.escape(tr("choose")), html.escape(tr("Record"))
    if prediction.kind == "choice":
        # i18n: data (HTML)
        options = "".join(f'<option value="{html.escape(c)}">{html.escape(_show(c))}</option>'
                          for c in prediction.choices)
        # i18n: data (HTML)
        field = (f'<select id="{field_id}" class="tl-ask-field"><option value="">{choose}</option>'
                 f'{options}</select>')
    else:
        # i18n: data (HTML)
        field = (f'<input id="{field_id}" class="tl-ask-field" type="text" inputmode="decimal" autocomplete="off" '
                 f'spellcheck="false" size="10">')
    # i18n: data (HTML)
    return (f'<div class="tl-ask tl-ask-predict" hidden data-tl-number="{html.escape(prediction.number)}" '
            f'data-tl-rule="{_json_attr(prediction.page())}" '
            f'data-tl-ask="{_json_attr(prediction.ask())}" '
            f'data-tl-said="{_json_attr(prediction.rule())}">'
            f'<label for="{field_id}">{label} {html.escape(prediction.number)}</label> {field} '
            f'<button type="button" class="tl-ask-go">{record}</button></div>{texts()}')


def reveal_html(prediction, measured) -> str:
    """The reveal cell's button, with what the build measured (hidden until the reader asks)."""
    from . import _show

    if hasattr(measured, "tolist") and getattr(measured, "ndim", 1) == 0:
        measured = measured.tolist()
    value = (measured.strip().lower() if isinstance(measured, str) else
             float(measured) if isinstance(measured, (int, float)) and not isinstance(measured, bool) else None)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        raise TypeError(f"measured should be a finite number or a str for prediction {prediction.number}, "
                        f"got {measured!r}")
    data = dict(prediction.page(), measured=value, shown=_show(measured))
    button = html.escape(tr("Reveal what the build measured"))
    # i18n: data (HTML)
    return (f'<div class="tl-ask tl-ask-reveal" hidden data-tl-number="{html.escape(prediction.number)}" '
            f'data-tl-measured="{_json_attr(data)}"><button type="button" class="tl-ask-go">{button}</button></div>')


def exercise_html(number: str, answers: list[str]) -> str:
    """An exercise's check cell, not answered (the build): its answers' names, and the cell to open in Colab, which
    the site's extension fills in (bookbuild/sphinx_ext/tl_book.py: a kernel does not know its cell's id)."""
    return (f'<div class="tl-ask tl-ask-exercise" hidden data-tl-exercise="{html.escape(number)}" '  # i18n: data (HTML)
            f'data-tl-answers="{_json_attr(answers)}" data-tl-cell=""></div>')


def exercise_key_html(number: str, message: str, answers: list[dict]) -> str:
    """What the solution's check compared each answer with (no visible text): the page checks the same way."""
    data = {"message": message, "answers": answers}
    return (f'<div class="tl-exercise-key" hidden data-tl-exercise="{html.escape(number)}" '  # i18n: data (HTML)
            f'data-tl-key="{_json_attr(data)}"></div>')


def answer_rules(function, answers: tuple, trace: list[dict]) -> list[dict] | None:
    """How the check compared each of ``answers`` (from ``trace``, what :func:`check.number`, :func:`check.close`
    and :func:`check.one_of` recorded), as data for the page; an answer none of them saw that is a whole number or a
    shape is compared exactly with the solution's (:func:`exact_rule`). None when an answer is code or was compared
    some other way (then only Python can check it)."""
    import inspect

    names = list(inspect.signature(function).parameters)[:len(answers)]
    out = []
    for name, answer in zip(names, answers):
        if callable(answer):
            return None
        entries = [entry for entry in trace if entry["answer"] is answer]
        if sum(other is answer for other in answers) > 1:  # one object given for two answers (5.0, 5.0)
            entries = [entry for entry in entries if entry["name"].split("(")[0].strip() == name]
        rules = [dict(entry["rule"]) for entry in entries]
        if not rules:
            rule = exact_rule(name, answer)
            if rule is None:
                return None
            rule["hint"] = _probe_hint(function, answers, len(out), rule)
            rules = [rule]
        for rule in rules:
            if rule["kind"] == "choice":
                if not isinstance(answer, str):
                    return None
                rule["expected"] = answer.strip().lower()
        out.append({"name": name, "rules": rules})
    return out


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def exact_rule(name: str, answer) -> dict | None:
    """A whole number or a shape (a tuple of whole numbers, torch.Size) that a check compares as it is: the page
    compares it exactly with the solution's, and says it is not right as the checks do. None for anything else."""
    if hasattr(answer, "tolist") and getattr(answer, "ndim", 1) == 0:
        answer = answer.tolist()
    if _whole(answer):
        expected, shown = answer, "number"
    elif isinstance(answer, tuple) and answer and all(_whole(v) for v in answer):  # torch.Size is a tuple; a list
        # (of positions, of ids) may be checked as a set: only Python knows
        expected, shown = list(answer), "tuple"
    else:
        return None
    return {"kind": "exact", "expected": expected, "as": shown,
            "wrong": tr("{name} = {value} is not right.", name=name, value="{value}"), "hint": None,
            "not_number": tr("{name} should be a number, got {answer_type}.", name=name, answer_type="{type}")}


def _probe_hint(function, answers: tuple, i: int, rule: dict) -> str | None:
    """The hint the check gives when answer ``i`` alone is off by one (a shape's first axis, a number), the others
    right: the page shows it with its "not right". The check runs with the random states kept as they were (a
    chapter's later cells see the same numbers)."""
    import random
    import sys

    import torch

    from . import Wrong

    checks = sys.modules[__package__]  # its _TRACE: the probe's comparisons are not the solution's

    right = rule["expected"]
    wrong = (right + 1) if rule["as"] == "number" else (right[0] + 1, *right[1:])
    probe = list(answers)
    probe[i] = wrong
    state, trace = random.getstate(), checks._TRACE
    checks._TRACE = None
    try:
        with torch.random.fork_rng():
            function(*probe)
    except Wrong as e:
        return e.hint
    except Exception:  # noqa: BLE001 - a check that cannot take the probe: no hint, the verdict stays the same
        return None
    finally:
        random.setstate(state)
        checks._TRACE = trace
    return None


def number_rule(name: str, expected: float, rel: float, abs_: float, hint: str | None) -> dict:
    return {"kind": "number", "expected": float(expected), "rel": float(rel), "abs": float(abs_),
            "wrong": tr("{name} = {value} is not right.", name=name, value="{value}"), "hint": hint,
            "not_number": tr("{name} should be a number, got {answer_type}.", name=name, answer_type="{type}")}


def close_rule(name: str, expected, atol: float, rtol: float, hint: str | None) -> dict:
    shape = tuple(expected.shape)
    return {"kind": "tensor", "expected": expected.double().flatten().tolist(), "shape": list(shape),
            "atol": float(atol), "rtol": float(rtol),
            "wrong": tr("{name} is not right: the largest difference from the expected values is {diff}.",
                        name=name, diff="{diff}"),
            "bad_shape": tr("{name} should have shape {shape}, got {answer_shape}.", name=name, shape=shape,
                            answer_shape="{shape}"),
            "not_tensor": tr("{name} should be a tensor, got {answer_type}.", name=name, answer_type="{type}"),
            "hint": hint}


def choice_rule(name: str, choices) -> dict:
    return {"kind": "choice", "choices": list(choices),
            "not_choice": tr("{name} should be one of {choices}, got {answer}.", name=name,
                             choices=", ".join(map(repr, choices)), answer="{got}"),
            "wrong": tr("{name} = {value} is not right.", name=name, value="{value}"), "hint": None}
