"""The package's one language switch: English (the default) or Chinese, for every string a reader sees.

    from transformer_lite.book import i18n
    i18n.set_language("zh")           # or setup(seed=0, language="zh"), or $TRANSFORMER_LITE_LANGUAGE=zh
    i18n.tr("training step")          # -> "训练步数"
    i18n.translate_message(text)      # an exercise check's rendered message, in the current language

The Chinese strings live in one place: the gettext catalog ``locale/zh_CN.po`` shipped with the package.
Its messages are of two kinds, both listed by ``tools/i18n.py package`` (which also keeps the catalog in step with
the sources; ``tests/test_package_i18n.py`` fails when a string is missing or stale):

* strings the code passes through :func:`tr` (or marks with :func:`N_` and translates later): figure labels,
  controls, the translator box. ``{name}`` fields are filled after the lookup, so the Chinese may reorder them.
* the message TEMPLATES of the exercise checks (``check/*.py``), read from their source: an f-string becomes a
  template with ``{0}``, ``{1}``… for its formatted values. A check keeps formatting its English message as it
  always has; :func:`translate_message` matches the rendered text against the templates and puts the captured
  values (numbers, shapes, code: data, unchanged) into the Chinese template. No check is rewritten for it.

A string missing from the catalog comes back in English.
"""
from __future__ import annotations

import functools
import os
import re
from importlib import resources

__all__ = ["LANGUAGES", "ENV", "language", "set_language", "tr", "N_", "translate_message", "catalog"]

LANGUAGES = ("en", "zh")
ENV = "TRANSFORMER_LITE_LANGUAGE"
CATALOG = "locale/zh_CN.po"

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
            if key == "msgid" and cur is not None and "msgid" in cur:
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
    """English -> Chinese: every translated entry of the package's catalog (fuzzy or empty ones left out)."""
    text = resources.files(__package__).joinpath(CATALOG).read_text(encoding="utf-8")
    return {e["msgid"]: e["msgstr"] for e in parse_po(text) if e.get("msgstr") and "fuzzy" not in e["flags"]}


def tr(english: str, **fields) -> str:
    """``english`` in the current language (its Chinese when "zh" and the catalog has it), then
    ``.format(**fields)``."""
    if not isinstance(english, str):
        raise TypeError(f"english must be a str, got {type(english).__name__}")
    text = catalog().get(english, english) if language() == "zh" else english
    return text.format(**fields) if fields else text


# ---- the exercise checks' messages ------------------------------------------------------------------------------

_FIELD = re.compile(r"\{(\d+)\}")


def _balanced(depth: int) -> str:
    """A regex for text whose brackets (), [], {} are balanced, nested up to ``depth`` deep."""
    plain = r"[^()\[\]{}]"
    inner = plain
    for _ in range(depth):
        inner = f"(?:{plain}|\\((?:{inner})*\\)|\\[(?:{inner})*\\]|\\{{(?:{inner})*\\}})"
    return inner


_VALUE = {True: f"(?:{_balanced(4)})*?", False: ".*?"}


def _pattern(template: str, balanced: bool = True) -> re.Pattern | None:
    """A template ("{0} should be a number, got {1}.") as a regex capturing its values; None without a field.

    ``balanced``: a value's brackets must pair up ("(2, 3)" is one value in "{0}, {1})"); the loose pattern is the
    fallback for a value that is itself unbalanced."""
    parts = re.split(r"(\{\{|\}\}|\{\d+\})", template)
    if not any(_FIELD.fullmatch(p) for p in parts):
        return None
    out = []
    for p in parts:
        if _FIELD.fullmatch(p):
            out.append(f"(?P<f{p[1:-1]}>{_VALUE[balanced]})")
        elif p in ("{{", "}}"):
            out.append(re.escape(p[0]))
        else:
            out.append(re.escape(p))
    return re.compile("".join(out), re.S)


def _literal(template: str) -> str:
    return template.replace("{{", "{").replace("}}", "}")


@functools.cache
def _templates() -> tuple[dict, list]:
    """(literal English -> Chinese, [(pattern, literal length, Chinese template)]) of the checks' messages."""
    exact, patterns = {}, []
    for msgid, msgstr in catalog().items():
        # a piece of a joined message (" Run your test…") is matched stripped
        msgid, msgstr = msgid.strip(), msgstr.strip()
        pattern = _pattern(msgid)
        if pattern is None:
            exact[_literal(msgid)] = _literal(msgstr)
        else:
            patterns.append((pattern, _pattern(msgid, balanced=False), len(_FIELD.sub("", msgid)), msgstr))
    patterns.sort(key=lambda p: -p[2])  # the most specific template first
    return exact, patterns


def _translate_whole(text: str, depth: int = 0) -> str | None:
    exact, patterns = _templates()
    if text in exact:
        return exact[text]
    if depth > 3:
        return None
    for strict, loose, _, chinese in patterns:
        m = strict.fullmatch(text) or loose.fullmatch(text)
        if m:
            values = {int(k[1:]): v for k, v in m.groupdict().items()}
            values = [_inner(values[i], depth) for i in range(len(values))]
            return _join_chinese(chinese.format(*values))
    return None


_START, _END = "\x00", "\x01"
_CJK = "\u3000-\u303f\u3400-\u9fff\uff00-\uffef“”"


def _inner(value: str, depth: int) -> str:
    """A captured value: translated when it is itself a message (a label such as "the suspect"), marked so that
    :func:`_join_chinese` can drop the template's space next to it; otherwise data, unchanged."""
    chinese = _translate_whole(value, depth + 1)
    return value if chinese is None else _START + chinese + _END


def _join_chinese(text: str) -> str:
    """No space between a translated value and the Chinese around it ("接受了 可疑层" -> "接受了可疑层")."""
    text = re.sub(f"(?<=[{_CJK}]) {_START}(?=[{_CJK}])", _START, text)
    text = re.sub(f"(?<=[{_CJK}]){_END} (?=[{_CJK}])", _END, text)
    return text.replace(_START, "").replace(_END, "")


_SENTENCE_END = re.compile(r"(?<=[.:;!?)])\s+")


def translate_message(text: str) -> str:
    """A rendered message of an exercise check in the current language; unchanged in English.

    The whole text is matched against the templates; a message joined from several (``hint + " Run your test..."``)
    is cut at sentence ends into pieces that each match one. Text no template matches stays as it is.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if language() != "zh" or not text:
        return text
    whole = _translate_whole(text.strip())
    if whole is not None:
        return whole
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    best: dict[int, list[str]] = {0: []}  # cut index -> translated pieces up to it
    for j in range(1, len(cuts)):
        for i in range(j):
            if i in best:
                piece = _translate_whole(text[cuts[i]:cuts[j]].strip())
                if piece is not None:
                    best[j] = best[i] + [piece]
                    break
    return "".join(best[len(cuts) - 1]) if len(cuts) - 1 in best else text
