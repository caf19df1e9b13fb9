"""The checks of the book's exercises: ``check.exercise_5_2(my_answer)``.

Every exercise in a chapter has three parts: a cell where the reader writes an answer, a one-line
check the reader runs, and a worked solution (folded away). The check says what was expected, in
which shape, and gives a hint when the answer is wrong, and a short confirmation when it is right::

    from transformer_lite.book import check
    check.exercise_3_1(z_machines)      # -> ✓ right / ✗ what is wrong, and a hint / … not answered yet

A check does not raise on a wrong answer (the reader fixes it and runs the cell again); it returns a
:class:`Verdict`, which is falsy unless the answer is right. The book's build and notebook runner set
``TRANSFORMER_LITE_STRICT_EXERCISES=1``: then a wrong answer raises :class:`ExerciseError`, so the
solution cell, which calls the same check, proves that every check accepts a right answer.

The checks of chapter N live in ``chNN.py`` (chapter 13b in ``ch13b.py``, appendix A in ``appendix_a.py``), registered
with :func:`exercise`; ``check.exercise_N_M`` imports the chapter's module on first use. Each check registers wrong
answers it must reject (``tests/test_book_conventions.py`` runs them).
"""
from __future__ import annotations

import functools
import html
import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..i18n import tr
from . import page

__all__ = ["Verdict", "ExerciseError", "Wrong", "exercise", "registry", "predict", "reveal", "STRICT_ENV"]

STRICT_ENV = "TRANSFORMER_LITE_STRICT_EXERCISES"
MODULES = [f"ch{n:02d}" for n in range(16)] + ["ch13b", "appendix_a", "appendix_c"]

_REGISTRY: dict[str, Exercise] = {}
# While a check runs in the book's build: how number(), close() and one_of() compared each answer (check/page.py)
_TRACE: list[dict] | None = None


def _traced(answer, name: str, rule: dict) -> None:
    if _TRACE is not None:
        _TRACE.append({"answer": answer, "name": name, "rule": rule})


class ExerciseError(AssertionError):
    """A check rejected an answer while ``TRANSFORMER_LITE_STRICT_EXERCISES=1`` (the build)."""


class Wrong(Exception):
    """Raised inside a check: ``Wrong(what is wrong, hint=...)``; the check returns it as a verdict."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message, self.hint = message, hint


class NotAnswered(Exception):
    """Raised inside a check when the answer is still the skeleton (``...`` or ``None``)."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: ``status`` is "right", "wrong" or "todo"; truthy only when right."""

    exercise: str
    status: str
    message: str
    hint: str | None = None
    kind: str = "Exercise"
    # what the static site adds below the verdict (check/page.py): a field, a button, data; "" in Jupyter
    page: str = field(default="", compare=False, repr=False)

    def __bool__(self) -> bool:
        return self.status == "right"

    def _text(self) -> str:
        """What the reader reads: the message and the hint as the check wrote them (through ``tr``, in the language
        of the moment it ran), framed in the package's language of the moment it is shown."""
        mark = {"right": "✓", "wrong": "✗", "todo": "…"}[self.status]
        message = self.message
        text = mark + " " + (tr("Prediction {number}: {message}", number=self.exercise, message=message)
                             if self.kind == "Prediction" else
                             tr("Exercise {number}: {message}", number=self.exercise, message=message))
        if self.hint:
            text += "\n  " + tr("Hint: {hint}", hint=self.hint)
        return text

    def __repr__(self) -> str:
        return self._text()

    def _repr_html_(self) -> str:
        colour = {"right": "#1a7f37", "wrong": "#cf222e", "todo": "#6e7781"}[self.status]
        from ..i18n import language

        lines = html.escape(self._text()).replace("\n", "<br>")
        lang = ' lang="zh-CN"' if language() == "zh" else ""
        # i18n: data (HTML, not a message)
        return (f'<div class="tl-verdict tl-verdict-{self.status}" role="status"{lang} '
                f'style="border-left:4px solid {colour};padding:0.3em 0.8em;white-space:pre-wrap">{lines}</div>'
                + self.page)


@dataclass
class Exercise:
    number: str
    function: Callable[..., Any]
    wrong: list[Callable[[], tuple]] = field(default_factory=list)


def _is_skeleton(value) -> bool:
    return value is None or value is Ellipsis


def exercise(number: str, *, wrong: list[Callable[[], tuple]]):
    """Register ``function`` as the check of exercise ``number`` ("5.2", "A.1").

    ``function(*answers)`` returns a success message (str) or raises :class:`Wrong`. ``wrong`` is a
    list of zero-argument callables, each returning a tuple of answers that the check must reject.
    An answer that is ``...`` or ``None`` counts as not answered yet; :func:`call` does the same for a
    reader's function that still returns ``...`` or ``None``.
    """
    if not wrong:
        raise ValueError(f"exercise {number}: wrong must list at least one wrong answer, got {wrong!r}")

    def decorate(function):
        @functools.wraps(function)
        def run(*answers) -> Verdict:
            global _TRACE
            static = page.enabled()
            try:
                if any(_is_skeleton(a) for a in answers):
                    raise NotAnswered
                _TRACE = [] if static else None
                message = function(*answers)
                verdict = Verdict(number, "right", message or "right.")
                rules = page.answer_rules(function, answers, _TRACE) if static else None
                if rules:  # the build's solution: what each answer was compared with, for the page to do the same
                    verdict = Verdict(number, "right", verdict.message,
                                      page=page.exercise_key_html(number, verdict.message, rules))
            except NotAnswered:
                verdict = Verdict(number, "todo", tr("not answered yet: write your answer in the cell above "
                                                     "(replace the ...), then run this check again."),
                                  page=page.exercise_html(number, _answer_names(function, answers)) if static else "")
            except Wrong as e:
                verdict = Verdict(number, "wrong", e.message, e.hint)
            finally:
                _TRACE = None
            if not verdict and verdict.status == "wrong" and os.environ.get(STRICT_ENV) == "1":
                raise ExerciseError(repr(verdict))
            return verdict

        _REGISTRY[number] = Exercise(number, run, list(wrong))
        return run

    return decorate


def _answer_names(function, answers) -> list[str]:
    import inspect

    return list(inspect.signature(function).parameters)[:len(answers)]


def registry() -> dict[str, Exercise]:
    """Every exercise of the book, by number (imports every chapter's checks)."""
    for name in MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    return dict(_REGISTRY)


def __getattr__(name: str):
    # check.exercise_5_2 -> ch05.exercise_5_2 ; check.exercise_13b_1 -> ch13b.exercise_13b_1 ;
    # check.exercise_A_1 -> appendix_a.exercise_A_1
    parts = name.split("_")
    if len(parts) == 3 and parts[0] == "exercise":
        chapter = re.fullmatch(r"([0-9]+)([a-z]?)", parts[1])
        module = (f"ch{int(chapter[1]):02d}{chapter[2]}" if chapter else f"appendix_{parts[1].lower()}")
        try:
            mod = importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError:
            mod = None
        if mod is not None and hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(f"transformer_lite.book.check has no {name!r}")


# ---- small helpers the chapters' checks share ---------------------------------------------------------

def call(function, *args, name: str | None = None, **kwargs):
    """Call the reader's function; a skeleton (returns ``...``/None) counts as not answered yet. ``name``: how the
    feedback calls it ("your function" when not given)."""
    if name is None:
        name = tr("your function")
    if not callable(function):
        raise Wrong(tr("expected a function, got {function_type}.", function_type=type(function).__name__))
    try:
        out = function(*args, **kwargs)
    except NotImplementedError:
        raise NotAnswered from None
    except Exception as e:  # the reader's code raised: say so, as a wrong answer, not a traceback
        raise Wrong(tr("{name} raised {e_type}: {e}", name=name, e_type=type(e).__name__, e=e)) from None
    if _is_skeleton(out):
        raise NotAnswered
    return out


def tensor(answer, name: str, shape: tuple | None = None):
    """The answer as a float tensor of ``shape`` (lists and numpy arrays are accepted)."""
    import torch

    if not isinstance(answer, torch.Tensor):
        try:
            answer = torch.as_tensor(answer, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError):
            raise Wrong(tr("{name} should be a tensor, got {answer_type}.",
                           name=name, answer_type=type(answer).__name__)) from None
    answer = answer.detach().cpu()
    if shape is not None and tuple(answer.shape) != tuple(shape):
        raise Wrong(tr("{name} should have shape {shape}, got {answer_shape}.",
                       name=name, shape=tuple(shape), answer_shape=tuple(answer.shape)))
    return answer


def close(answer, expected, name: str, hint: str | None = None, atol: float = 1e-4, rtol: float = 1e-4):
    """Raise :class:`Wrong` unless ``answer`` equals ``expected`` (a tensor) within tolerance."""
    import torch

    _traced(answer, name,
            page.close_rule(name, expected.detach().cpu(), atol, rtol, hint) if _TRACE is not None else {})
    answer = tensor(answer, name, tuple(expected.shape))
    expected = expected.detach().cpu().to(answer.dtype) if answer.is_floating_point() else expected.detach().cpu()
    if not torch.allclose(answer.double(), expected.double(), atol=atol, rtol=rtol):
        diff = (answer.double() - expected.double()).abs().max().item()
        raise Wrong(tr("{name} is not right: the largest difference from the expected values is {diff}.",
                       name=name, diff=format(diff, ".3g")), hint)
    return answer


def number(answer, expected: float, name: str, hint: str | None = None, rel: float = 1e-3, abs_: float = 1e-6):
    """Raise :class:`Wrong` unless the number ``answer`` is ``expected`` within tolerance."""
    _traced(answer, name, page.number_rule(name, expected, rel, abs_, hint) if _TRACE is not None else {})
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise Wrong(tr("{name} should be a number, got {answer_type}.",
                       name=name, answer_type=type(answer).__name__)) from None
    if abs(value - expected) > max(abs_, rel * abs(expected)):
        raise Wrong(tr("{name} = {value} is not right.", name=name, value=format(value, "g")), hint)
    return value


# ---- predict, then run ----------------------------------------------------------------------------------
# A prediction is written down before the cell that answers it runs:
#
#     my_prediction = ...                      # the reader's guess: a number, a count, a choice
#     check.predict("5.1", my_prediction)      # records it (nothing is checked yet), and says when it counts as right
#     ...the experiment's cell...
#     check.reveal("5.1", measured)            # what the cell measured, against the recorded guess
#
# Each prediction's kind and tolerance are declared once, in predictions.py. A wrong prediction is not an error
# (the build runs with the skeleton, and says what it would have compared). On the static site the build's outputs
# carry a field for the guess and the measured value (page.py), and the page gives the same verdict.

_PREDICTIONS: dict[str, Any] = {}


def predict(number: str, prediction) -> Verdict:
    """Record the reader's prediction for ``number`` ("5.1"); :func:`reveal` compares it with what a cell measured.
    The verdict says when it counts as right (the prediction's rule, predictions.py)."""
    from .predictions import prediction as declared

    rule = declared(number)
    static = page.predict_html(rule) if page.enabled() else ""
    if _is_skeleton(prediction):
        _PREDICTIONS.pop(number, None)
        return Verdict(number, "todo", tr("{message} {rule}", rule=rule.ask(),
                                          message=tr("no prediction yet: write it in place of the ..., run this "
                                                     "cell, and only then run the cells below.")),
                       kind="Prediction", page=static)
    try:
        guess = rule.read(prediction)
    except Wrong as e:
        _PREDICTIONS.pop(number, None)
        return Verdict(number, "wrong", e.message, kind="Prediction", page=static)
    _PREDICTIONS[number] = guess
    return Verdict(number, "right",
                   tr("{message} {rule}", rule=rule.rule(),
                      message=tr("recorded: you predict {guess}. Now run the cells below.", guess=_show(guess))),
                   kind="Prediction", page=static)


def reveal(number: str, measured, *, rel: float | None = None) -> Verdict:
    """Compare the prediction recorded for ``number`` with ``measured``, by the prediction's rule (predictions.py:
    numbers within its tolerance, counts exactly or within theirs, choices without regard to case and surrounding
    spaces). ``rel``, when given, must be the declared relative tolerance (it is declared there, once)."""
    from .predictions import prediction as declared

    rule = declared(number)
    if rel is not None and rel != rule.rel:
        raise ValueError(f"rel: prediction {number} declares rel={rule.rel!r} in check/predictions.py, got {rel!r}")
    static = page.reveal_html(rule, measured) if page.enabled() else ""
    if number not in _PREDICTIONS:
        return Verdict(number, "todo", tr("the cell measured {measured}; you had not recorded a prediction "
                                          "(check.predict({number!r}, ...) above).",
                                          measured=_show(measured), number=number), kind="Prediction", page=static)
    guess = _PREDICTIONS[number]
    if rule.same(guess, measured):
        return Verdict(number, "right", tr("you predicted {guess}; the cell measured {measured}.",
                                           guess=_show(guess), measured=_show(measured)),
                       kind="Prediction", page=static)
    return Verdict(number, "wrong", tr("you predicted {guess}; the cell measured {measured}.",
                                       guess=_show(guess), measured=_show(measured)),
                   tr("the text after this cell explains the difference."), kind="Prediction", page=static)


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if hasattr(value, "tolist") and getattr(value, "ndim", 1) == 0:
        return _show(value.tolist())
    return repr(tuple(value)) if type(value).__name__ == "Size" else repr(value)


def as_bool(verdict):
    """True/False from a Python, NumPy or one-element torch bool; anything else unchanged (and then rejected)."""
    import torch

    if isinstance(verdict, torch.Tensor) and verdict.numel() == 1 and verdict.dtype == torch.bool:
        return bool(verdict)
    if type(verdict).__name__ == "bool_":
        return bool(verdict)
    return verdict


def one_of(answer, choices: tuple[str, ...], name: str) -> str:
    """The answer as one of ``choices`` (case and surrounding spaces ignored), or :class:`Wrong` listing them."""
    _traced(answer, name, page.choice_rule(name, choices) if _TRACE is not None else {})
    if not isinstance(answer, str) or answer.strip().lower() not in choices:
        raise Wrong(tr("{name} should be one of {choices}, got {answer}.",
                       name=name, choices=', '.join(map(repr, choices)), answer=repr(answer)))
    return answer.strip().lower()


def as_number(answer, name: str) -> float:
    """The answer as a float, or :class:`Wrong` saying it should be a number."""
    try:
        return float(answer)
    except (TypeError, ValueError):
        raise Wrong(tr("{name} should be a number, got {answer_type}.",
                       name=name, answer_type=type(answer).__name__)) from None
