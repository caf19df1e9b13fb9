"""The package's one language switch: English (the default) or Chinese, for every string a reader sees.

    from transformer_lite.book import i18n
    i18n.set_language("zh")                    # or setup(seed=0, language="zh"), or $TRANSFORMER_LITE_LANGUAGE=zh
    i18n.tr("training step")                   # -> "训练步数"
    i18n.tr("head {h}", h=3)                   # -> "头 3": the template is looked up, then filled
    LABEL = i18n.N_("input")                   # a constant: marked for the catalog, translated where it is shown
    i18n.tr(LABEL)                             # -> "输入"

Every message is wrapped where it is written, as gettext's ``_()`` is in other Python projects: ``tr("template
{name}", name=value)`` translates the template in the language of the moment it runs, then fills its fields with
``str.format`` (so a translation may reorder them, and ``{x!r}``, ``{x:.3g}`` work as in an f-string); ``N_`` marks
a string that is translated later. Babel's extractor, with ``tr`` and ``N_`` as its keywords, lists the messages for
the catalog (``bookbuild/i18n.py package``); a message is never an f-string, since the template is what is looked up.

The Chinese strings live in one place: the gettext catalog ``locale/zh_CN.po`` shipped with the package. A string
missing from it comes back in English. A field whose value is itself a translated message (a label such as "the
suspect") joins the Chinese around it without the space the English needed ("接受了可疑实现").
"""
from __future__ import annotations

import functools
import os
import re
import unicodedata
from importlib import resources

__all__ = ["LANGUAGES", "ENV", "language", "set_language", "tr", "N_", "catalog", "grouped", "billions", "millions",
           "ljust"]

LANGUAGES = ("en", "zh")
ENV = "TRANSFORMER_LITE_LANGUAGE"
CATALOG = "locale/zh_CN.po"
CONTEXT = "\x04"  # between an entry's msgctxt and its msgid in catalog()'s keys

_current: str | None = None  # None: not chosen yet -> $TRANSFORMER_LITE_LANGUAGE, else "en"


def _checked(lang, source: str) -> str:
    if not isinstance(lang, str):
        raise TypeError(f"language must be a str, one of {', '.join(LANGUAGES)}; got {type(lang).__name__} "
                        f"({lang!r}) from {source}")
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(map(repr, LANGUAGES))}, got {lang!r} from {source}")
    return lang


def language() -> str:
    """The current language: "en" or "zh" (first use: ``$TRANSFORMER_LITE_LANGUAGE``, unset -> "en")."""
    global _current
    if _current is None:
        _current = _checked(os.environ.get(ENV, "en"), f"${ENV}")
    return _current


def set_language(lang: str) -> str:
    """Make ``lang`` ("en" or "zh") the language of everything the package shows from now on; returns it."""
    global _current
    _current = _checked(lang, "set_language()")
    return _current


def N_(english: str) -> str:
    """Mark a string for the catalog without translating it now (a default value, a constant): ``tr`` it later."""
    return english


# ---- the catalog ----------------------------------------------------------------------------------------------

def _unquote(s: str) -> str:
    s = s.strip()
    if not (len(s) >= 2 and s[0] == s[-1] == '"'):
        raise ValueError(f"{CATALOG}: a quoted string was expected, got {s!r}")
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(m[1], "\\" + m[1]), s[1:-1])


def parse_po(text: str) -> list[dict]:
    """The entries of a gettext catalog: [{msgid, msgstr, flags, comments}] (the header entry left out)."""
    entries, cur, field = [], None, None

    def close():
        if cur is not None and ("msgid" in cur):
            entries.append(cur)

    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            if cur is not None and "msgid" in cur:
                close()
                cur = None
            if cur is None:
                cur = {"flags": set(), "comments": []}
            if line.startswith("#,"):
                cur["flags"].update(f.strip() for f in line[2:].split(",") if f.strip())
            else:
                cur["comments"].append(line)
            continue
        key, _, rest = line.partition(" ")
        if key in ("msgid", "msgstr", "msgctxt"):
            if key in ("msgid", "msgctxt") and cur is not None and "msgid" in cur:
                close()
                cur = None
            if cur is None:
                cur = {"flags": set(), "comments": []}
            field = key
            cur[key] = _unquote(rest)
        elif line.startswith('"') and cur is not None and field:
            cur[field] += _unquote(line)
        else:
            raise ValueError(f"{CATALOG}: cannot read the line {line!r}")
    close()
    return [e for e in entries if e["msgid"]]


@functools.cache
def catalog() -> dict[str, str]:
    """English -> Chinese: every translated entry of the package's catalog (fuzzy or empty ones left out). An entry
    with a msgctxt is keyed context + CONTEXT + English, as GNU gettext keys it, so ``tr`` never meets it (the
    controls' names, :func:`.interactive.control_label`)."""
    text = resources.files(__package__).joinpath(CATALOG).read_text(encoding="utf-8")
    return {e["msgctxt"] + CONTEXT + e["msgid"] if "msgctxt" in e else e["msgid"]: e["msgstr"]
            for e in parse_po(text) if e.get("msgstr") and "fuzzy" not in e["flags"]}


class _Translated(str):
    """A message :func:`tr` translated into Chinese: as a field of another message, it joins the Chinese around it
    without a space."""


_START, _END = "\x00", "\x01"
_CJK = "\u3000-\u303f\u3400-\u9fff\uff00-\uffef“”"


def _join_chinese(text: str) -> str:
    """No space between a translated field and the Chinese around it ("接受了 可疑层" -> "接受了可疑层")."""
    text = re.sub(f"(?<=[{_CJK}]) {_START}(?=[{_CJK}])", _START, text)
    text = re.sub(f"(?<=[{_CJK}]){_END} (?=[{_CJK}])", _END, text)
    return text.replace(_START, "").replace(_END, "")


def tr(english: str, **fields) -> str:
    """``english`` in the current language (its Chinese when "zh" and the catalog has it), then
    ``.format(**fields)`` when fields are given (a template without fields is returned as it is, braces included)."""
    if not isinstance(english, str):
        raise TypeError(f"english must be a str, got {type(english).__name__}")
    if language() != "zh":
        return english.format(**fields) if fields else english
    text = catalog().get(english)
    if text is None:
        return english.format(**fields) if fields else english
    if fields:
        marked = {k: _START + v + _END if isinstance(v, _Translated) else v for k, v in fields.items()}
        text = _join_chinese(text.format(**marked))
    return _Translated(text)


# ---- numbers and columns in printed tables ---------------------------------------------------------------------

def grouped(n: float, spec: str = "") -> str:
    """``n`` with its thousands as the language writes them: 181,377 in English, 181377 in Chinese (which writes no
    separators), so a chapter's marked line prints ``{grouped(n)}`` where an English-only one had ``{n:,}``.

    ``spec`` is the rest of the format: precision and type, as in ``{x:,.1f}`` -> ``{grouped(x, ".1f")}`` (60,611.6
    in English, 60611.6 in Chinese). A width goes outside, on the string: ``{grouped(x, ".2f"):>10}``."""
    if not spec:
        return tr("{n:,}", n=n)
    if not re.fullmatch(r"(\.\d+)?[eEfFgG%]", spec):
        raise ValueError(f"spec must be a precision and a type such as '.1f' (a width goes outside), got {spec!r}")
    return format(n, spec if language() == "zh" else "," + spec)


def billions(n: float, digits: int = 1) -> str:
    """A count in the units the language reads: 6.7B in English, 67 亿 in Chinese (亿 = 1e8, one digit fewer after
    the point, so both say as much), as STYLE.md writes large numbers in Chinese text."""
    if language() == "zh":
        return f"{n / 1e8:.{max(digits - 1, 0)}f} 亿"
    return f"{n / 1e9:.{digits}f}B"


def millions(n: float) -> str:
    """A count of millions as the language reads it: 110M in English; 1.1 亿, or 6000 万 below 亿, in Chinese."""
    if language() == "zh":
        return f"{n / 1e8:.3g} 亿" if n >= 1e8 else f"{n / 1e4:.0f} 万"
    return f"{n / 1e6:.0f}M"


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` columns as a terminal shows them: a Han character or full-width
    punctuation takes two, so a column of Chinese row labels lines up as ``f"{label:<{width}}"`` lines up English."""
    columns = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(width - columns, 0)
