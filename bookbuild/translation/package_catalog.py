"""The package's catalog (transformer_lite/book/locale/zh_CN.po): its messages, extracted by Babel from tr/N_.

    python -m bookbuild.i18n package          # bring the catalog up to date: new messages added (empty), stale ones
                                          # removed; then list what is untranslated or malformed (exit 1 if any)

A message is what the package wraps where it writes it (transformer_lite/book/i18n.py): ``tr("template {name}",
name=value)``, or ``N_("...")`` for a constant translated where it is shown. Babel's Python extractor, with ``tr``
and ``N_`` as its keywords, reads them from every module of ``transformer_lite/``, as ``pybabel extract -k tr -k N_``
would; nothing is guessed from the code's other strings.

:func:`unwrapped` is the other half: the English prose the exercise checks and the modules that speak to the reader
(:data:`SHOWN`) write outside ``tr``/``N_``, which the reader would see in English in the Chinese edition. A string
that is data (a sentence the model reads, an answer the reader types, HTML) carries the comment ``# i18n: data`` on
its line (or alone on the line above); docstrings, programmers' errors (``raise ValueError(...)``), dict keys,
subscripts, comparisons and the wrong answers registered with ``exercise(...)`` are not messages.

tests/test_package_i18n.py runs :func:`problems` and :func:`unwrapped`: a message without its Chinese, a stale one,
or a message left unwrapped fails it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from .paths import ROOT

PACKAGE = ROOT / "transformer_lite"
CHECKS = PACKAGE / "book" / "check"
CATALOG = PACKAGE / "book" / "locale" / "zh_CN.po"
KEYWORDS = ("tr", "N_")
# the modules whose strings a reader sees (the rest of the package speaks to programmers, in errors and docstrings)
SHOWN = (*sorted(CHECKS.glob("*.py")),
         *(PACKAGE / "book" / f"{name}.py" for name in ("architecture_map", "interactive", "plotting", "translate",
                                                         "viz")))
DATA_MARK = "# i18n: data"
PROSE = re.compile(r"(?<![\w{])[A-Za-z][a-z]+ [A-Za-z][a-z]+(?![\w}])")  # two English words in a row
GROUP = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{\w*\}")  # (arguments), [indices], {fields}
WORD = re.compile(r"(?<![\w.'\"<-])[a-z]{2,}(?![\w(.\['\"=>-])")  # a word on its own, not a name or a call
FIELD = re.compile(r"(?<!\{)\{(\w*)(?:![rsa])?(?::[^{}]*)?\}(?!\})")
HAN = re.compile(r"[\u3400-\u9fff]")
MARKUP = re.compile(r"<\w+\s+[\w:-]+=|</\w+>|<\?xml")  # HTML or SVG: its visible words are fields, through tr()


def _where(path: Path, lineno: int) -> str:
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{lineno}"


def messages(folder: Path = PACKAGE) -> dict[str, list[str]]:
    """Every message of the package -> where it is written ("transformer_lite/book/check/ch03.py:61"), in the order
    of the files and lines: the literals passed to ``tr`` and ``N_``, extracted by Babel."""
    from babel.messages.extract import extract_from_file

    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        for lineno, message, _, _ in extract_from_file("python", str(path), keywords=dict.fromkeys(KEYWORDS),
                                                       comment_tags=()):
            if message:
                found.setdefault(message, []).append(_where(path, lineno))
    return found


def is_message(text: str) -> bool:
    """English prose: two English words in a row, or, in a text with a space, one word standing outside every
    (argument list) and [index] ("my_clip(...)[{i}] for {name}", "repeats({n}) returned {got}, expected {want}.")."""
    if PROSE.search(text):
        return True
    if " " not in text.strip():
        return False
    for _ in range(4):
        text = GROUP.sub("", text)
    return bool(WORD.search(text))


def _text(node: ast.AST) -> str | None:
    """A string literal's text, or an f-string's with each formatted value as {}; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return None


def _name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def unwrapped(paths=SHOWN) -> list[str]:
    """Every string of ``paths`` that is English prose a reader sees but is not wrapped in ``tr``/``N_`` (nor
    marked ``# i18n: data``), and every ``tr``/``N_`` whose first argument is not one plain literal (an f-string or a
    variable: Babel cannot list it, and the catalog would never match it), as "path:line: text"."""
    out = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = ast.parse(source)
        skip = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and body and \
                    isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.add(id(body[0].value))  # docstrings
            if isinstance(node, ast.JoinedStr):
                skip.update(id(v) for v in ast.walk(node) if v is not node)  # an f-string's own pieces
                for call in ast.walk(node):  # Babel reads an f-string as one token: a message inside is unseen
                    if isinstance(call, ast.Call) and _name(call) in KEYWORDS and call.args and \
                            isinstance(call.args[0], ast.Constant):
                        out.append(f"{_where(path, call.lineno)}: {ast.unparse(call)} inside an f-string, which "
                                   "the extractor does not read")
            if isinstance(node, ast.Call):
                name = _name(node)
                if name.endswith("Error") or name in ("import_module", "exercise", *KEYWORDS):
                    # programmers' errors; the wrong answers registered; messages already wrapped
                    skip.update(id(v) for v in ast.walk(node) if v is not node)
                if name in KEYWORDS:
                    first = node.args[0] if node.args else None
                    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) and \
                            not (name == "tr" and first is not None and not isinstance(first, ast.JoinedStr)):
                        out.append(f"{_where(path, node.lineno)}: {name}() of {ast.unparse(first or node)}, "
                                   "not of a plain literal")
            if isinstance(node, ast.Dict):
                skip.update(id(k) for k in node.keys if k is not None)  # lookup keys, not shown
            if isinstance(node, ast.Subscript):
                skip.add(id(node.slice))
            if isinstance(node, ast.Compare):
                skip.update(id(v) for v in [node.left, *node.comparators])
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            text = _text(node)
            if text is None or MARKUP.search(text) or not is_message(text):
                continue
            if any(DATA_MARK in lines[i - 1] for i in range(max(1, node.lineno - 1), node.end_lineno + 1)
                   if i == node.lineno - 1 and lines[i - 1].lstrip().startswith("#") or i >= node.lineno):
                continue
            out.append(f"{_where(path, node.lineno)}: {text!r}")
    return out


def fields(text: str) -> list[str]:
    """The {fields} of a message, sorted (what a translation must keep)."""
    return sorted(FIELD.findall(text))


def _load():
    import polib

    if CATALOG.exists():
        return polib.pofile(str(CATALOG), wrapwidth=0)
    po = polib.POFile(wrapwidth=0)
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": "zh_CN",
                   "Project-Id-Version": "transformer_lite", "MIME-Version": "1.0",
                   "Content-Transfer-Encoding": "8bit"}
    return po


def update() -> tuple[int, int]:
    """Add the new messages (empty) and remove the stale ones; returns (added, removed)."""
    import polib

    po, wanted = _load(), messages()
    have = {e.msgid: e for e in po}
    removed = [e for e in po if e.msgid not in wanted]
    for e in removed:
        po.remove(e)
    added = 0
    for msgid, where in wanted.items():
        entry = have.get(msgid)
        if entry is None:
            entry = polib.POEntry(msgid=msgid, msgstr="")
            po.append(entry)
            added += 1
        entry.occurrences = [tuple(w.rsplit(":", 1)) for w in where[:3]]
    order = {m: i for i, m in enumerate(wanted)}
    po.sort(key=lambda e: order.get(e.msgid, 0))
    CATALOG.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(CATALOG))
    return added, len(removed)


def problems() -> list[str]:
    """What is wrong with the catalog: missing, stale, untranslated, fuzzy, fields changed, no Chinese."""
    import polib

    if not CATALOG.exists():
        return [f"{CATALOG.relative_to(ROOT)} does not exist: run python -m bookbuild.i18n package"]
    po, wanted = polib.pofile(str(CATALOG), wrapwidth=0), messages()
    have = {e.msgid: e for e in po}
    out = [f"missing from the catalog: {m!r} ({', '.join(w)})" for m, w in wanted.items() if m not in have]
    out += [f"stale (no longer in the sources): {m!r}" for m in have if m not in wanted]
    for e in po:
        if not e.msgstr:
            out.append(f"untranslated: {e.msgid!r}")
            continue
        if "fuzzy" in e.flags:
            out.append(f"fuzzy: {e.msgid!r}")
        if fields(e.msgid) != fields(e.msgstr):
            out.append(f"fields differ: {e.msgid!r} has {fields(e.msgid)}, its Chinese {fields(e.msgstr)}")
        if not HAN.search(e.msgstr) and re.search("[A-Za-z]", FIELD.sub("", e.msgid)):  # ("{message} {rule}"
            # joins two messages: no words of its own)
            out.append(f"no Chinese in the translation of {e.msgid!r}: {e.msgstr!r}")
    return out
