"""The book's predictions, in one registry: what each one asks for and when a guess counts as right.

A chapter asks for a prediction before the cell that measures it (``check.predict("5.1", guess)``, then
``check.reveal("5.1", measured)``, :mod:`transformer_lite.book.check`). Each prediction is declared here once: its
kind (a number, a whole number, or one of a few choices) and its tolerance, chosen for what it asks. A share or an
accuracy is right within ±0.05 (a reader who says 0.3 for a measured 0.34 has understood it); a count is right when
exact; a quantity that spans orders of magnitude is right within a relative margin. The predict cell's output states
the rule, and the static site (bookbuild/sphinx_ext/static/tl-check.js) applies the same one to the measured value the
build wrote into the page.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..i18n import tr
from . import Wrong

__all__ = ["Prediction", "PREDICTIONS", "prediction"]

KINDS = ("number", "count", "choice")


@dataclass(frozen=True)
class Prediction:
    """One prediction: ``kind`` "number" (within ``abs`` or ``rel``), "count" (a whole number, within ``abs``, 0 by
    default: exact) or "choice" (one of ``choices``, case and surrounding spaces ignored)."""

    number: str
    kind: str
    abs: float | None = None
    rel: float | None = None
    choices: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind should be one of {KINDS}, got {self.kind!r} (prediction {self.number})")
        if self.kind == "choice":
            if len(self.choices) < 2 or any(c != c.strip().lower() for c in self.choices):
                raise ValueError(f"choices should be two or more lower-case words, got {self.choices!r} "
                                 f"(prediction {self.number})")
            if self.abs is not None or self.rel is not None:
                raise ValueError(f"a choice has no tolerance, got abs={self.abs!r}, rel={self.rel!r} "
                                 f"(prediction {self.number})")
            return
        if self.choices:
            raise ValueError(f"choices are for kind 'choice', got {self.choices!r} (prediction {self.number})")
        if self.kind == "number" and (self.abs is None) == (self.rel is None):
            raise ValueError(f"a number needs exactly one of abs and rel, got abs={self.abs!r}, rel={self.rel!r} "
                             f"(prediction {self.number})")
        if self.kind == "count" and (self.rel is not None or (self.abs is not None and self.abs != int(self.abs))):
            raise ValueError(f"a count takes a whole abs tolerance and no rel, got abs={self.abs!r}, "
                             f"rel={self.rel!r} (prediction {self.number})")
        for name in ("abs", "rel"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} should be a number >= 0, got {value!r} (prediction {self.number})")

    # ---- what the reader reads ---------------------------------------------------------------------------
    def ask(self) -> str:
        """What to write, and when it counts as right (the predict cell's output before a guess)."""
        if self.kind == "choice":
            return (tr("Write one of {choices}: "
                       "it counts as right when it is what the cell measures.",
                       choices=', '.join(map(repr, self.choices))))
        if self.kind == "count":
            if not self.abs:
                return tr("Write a whole number: it counts as right only when it is exactly what the cell measures.")
            return tr("Write a whole number: it counts as right within ±{abs} of what the cell measures.",
                      abs=int(self.abs))
        if self.abs is not None:
            return tr("Write a number: it counts as right within ±{abs:g} of what the cell measures.", abs=self.abs)
        return tr("Write a number: it counts as right within {percent:g} % of what the cell measures.",
                  percent=self.rel * 100)

    def rule(self) -> str:
        """When a recorded guess counts as right (the predict cell's output after a guess)."""
        if self.kind == "choice":
            return tr("It counts as right when it is what the cell measures.")
        if self.kind == "count" and not self.abs:
            return tr("It counts as right only when it is exactly what the cell measures.")
        if self.rel is not None:
            return tr("It counts as right within {percent:g} % of what the cell measures.", percent=self.rel * 100)
        return tr("It counts as right within ±{abs:g} of what the cell measures.", abs=self.abs)

    # ---- reading a guess, comparing it ---------------------------------------------------------------------
    def read(self, guess):
        """The guess as this prediction's kind (a float, an int or a lower-case choice), or :class:`Wrong`."""
        if hasattr(guess, "tolist") and getattr(guess, "ndim", 1) == 0:
            guess = guess.tolist()
        if self.kind == "choice":
            if not isinstance(guess, str) or guess.strip().lower() not in self.choices:
                raise Wrong(tr("your prediction should be one of {choices}, got {guess!r}.",
                               choices=', '.join(map(repr, self.choices)), guess=guess))
            return guess.strip().lower()
        if isinstance(guess, bool) or not isinstance(guess, (int, float)) or not math.isfinite(guess):
            raise Wrong(tr("your prediction should be a number, got {guess!r}.", guess=guess))
        if self.kind == "count":
            if guess != int(guess):
                raise Wrong(tr("your prediction should be a whole number, got {guess!r}.", guess=guess))
            return int(guess)
        return guess

    def same(self, guess, measured) -> bool:
        """True when the guess (already :meth:`read`) counts as right against ``measured``."""
        if hasattr(measured, "tolist") and getattr(measured, "ndim", 1) == 0:
            measured = measured.tolist()
        if self.kind == "choice":
            return str(guess).strip().lower() == str(measured).strip().lower()
        g, m = float(guess), float(measured)
        if self.rel is not None:
            return abs(g - m) <= self.rel * abs(m) + 1e-12
        return abs(g - m) <= (self.abs or 0) + 1e-9

    def page(self) -> dict:
        """The rule as data for the static page (tl-check.js compares as :meth:`same` does)."""
        return {"kind": self.kind, "abs": self.abs, "rel": self.rel, "choices": list(self.choices)}


SHARE = 0.05  # a share, a fraction or an accuracy: right within ±0.05

PREDICTIONS: dict[str, Prediction] = {p.number: p for p in [
    Prediction("0.1", "number", abs=SHARE),                        # the fraction read back from the last state
    Prediction("1.1", "choice", choices=("yes", "no")),            # does Adam's second step move "cat"?
    Prediction("2.1", "number", abs=SHARE),                        # accuracy at unseen positions
    Prediction("3.1", "number", abs=SHARE),                        # median largest weight, a number in [1/16, 1]
    Prediction("4.1", "number", abs=0.01),                         # a ratio of parameter counts (exactly 1)
    Prediction("5.1", "number", abs=SHARE),                        # the FFN's share of a layer's parameters
    Prediction("6.1", "count"),                                    # how many means BatchNorm computes
    Prediction("7.1", "number", abs=0.01),                         # a weight of a fully masked row (1/5)
    Prediction("8.1", "count"),                                    # how many memory vectors move
    Prediction("9.1", "count"),                                    # how many target positions change
    Prediction("10.1", "number", rel=0.1),                         # the label-smoothed loss's floor, in nats
    Prediction("11.1", "number", rel=0.5),                         # by what fraction the output changes: its order
    Prediction("12.1", "count", abs=3),                            # sentences on which beam and greedy differ, of 30
    Prediction("13.1", "number", abs=SHARE),                       # held-out exact match after 120 steps
    Prediction("13b.1", "choice", choices=("below", "above", "overlap")),
    Prediction("14.1", "number", abs=SHARE),                       # the token embedding's share of GPT-2 small
    Prediction("15.1", "number", rel=0.1),                         # GiB of KV cache
    Prediction("A.1", "choice", choices=("vit", "cnn")),
    Prediction("C.1", "choice", choices=("error", "unchanged", "changed")),
]}


def prediction(number: str) -> Prediction:
    """The declared prediction ``number`` ("5.1"); ValueError when it is not declared here."""
    if not isinstance(number, str) or not number:
        raise TypeError(f"number should be a non-empty str such as '5.1', got {number!r}")
    if number not in PREDICTIONS:
        raise ValueError(f"number: prediction {number!r} is not declared in transformer_lite/book/check/"
                         f"predictions.py (its kind and tolerance); declared: {', '.join(PREDICTIONS)}")
    return PREDICTIONS[number]
