"""The package's catalog (transformer_lite/book/locale/zh_CN.po): its messages, read from the package's sources.

    python tools/i18n.py package          # bring the catalog up to date: new messages added (empty), stale ones
                                          # removed; then list what is untranslated or malformed (exit 1 if any)

Two kinds of message (see transformer_lite/book/i18n.py):

* every literal passed to ``tr(...)`` or ``N_(...)`` anywhere in ``transformer_lite/``;
* every message template of the exercise checks (``transformer_lite/book/check/*.py``): each string literal or
  f-string that is not a docstring, not the message of a programmer's error (``raise ValueError(...)``) and holds
  English prose (two English words in a row); an f-string's formatted values become ``{0}``, ``{1}``… A string that
  is data (a sentence the model reads, an answer the reader types) carries the comment ``# i18n: data`` on its line (or
  alone on the line above). Dict keys, subscripts, comparisons
and the wrong answers registered with ``exercise(...)`` are not messages either.

tests/test_package_i18n.py runs :func:`problems`: a new message without its Chinese, or a stale one, fails it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_lite"
CHECKS = PACKAGE / "book" / "check"
CATALOG = PACKAGE / "book" / "locale" / "zh_CN.po"
DATA_MARK = "# i18n: data"
PROSE = re.compile(r"(?<![\w{])[A-Za-z][a-z]+ [A-Za-z][a-z]+(?![\w}])")  # two English words in a row
GROUP = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{\d*\}")  # (arguments), [indices], {fields}
WORD = re.compile(r"(?<![\w.'\"<-])[a-z]{2,}(?![\w(.\['\"=>-])")  # a word on its own, not a name or a call
FIELD = re.compile(r"(?<!\{)\{(\w*)(?:![rsa])?(?::[^{}]*)?\}(?!\})")
HAN = re.compile(r"[\u3400-\u9fff]")


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def template(node: ast.AST) -> str | None:
    """The message template of a string literal or f-string (values as {0}, {1}…); None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _escape(node.value)
    if isinstance(node, ast.JoinedStr):
        out, n = [], 0
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(_escape(part.value))
            else:
                out.append("{%d}" % n)
                n += 1
        return "".join(out)
    return None


def is_message(text: str) -> bool:
    """English prose: two English words in a row, or, in a text with a space, one word standing outside every
    (argument list) and [index] ("my_clip(...)[{0}] for {1}", "repeats({0}) returned {1}, expected {2}.")."""
    if PROSE.search(text):
        return True
    if " " not in text.strip():
        return False
    for _ in range(4):
        text = GROUP.sub("", text)
    return bool(WORD.search(text))


def _is_error_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name.endswith("Error") or name == "import_module"


def check_templates(folder: Path = CHECKS) -> dict[str, list[str]]:
    """Every message template of the exercise checks -> where it is ("ch03.py:61")."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.py")):
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
            if _is_error_call(node) or (isinstance(node, ast.Call) and getattr(node.func, "id", "") in
                                        ("exercise", "tr", "N_")):
                skip.update(id(v) for v in ast.walk(node) if v is not node)  # programmers' errors; wrong answers;
                # tr()/N_() strings are messages of the other kind (tr_strings)
            if isinstance(node, ast.Dict):
                skip.update(id(k) for k in node.keys if k is not None)  # lookup keys, not shown
            if isinstance(node, ast.Subscript):
                skip.add(id(node.slice))
            if isinstance(node, ast.Compare):
                skip.update(id(v) for v in [node.left, *node.comparators])
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            text = template(node)
            if text is None or not is_message(text):
                continue
            if any(DATA_MARK in lines[i - 1] for i in range(max(1, node.lineno - 1), node.end_lineno + 1)
                   if i == node.lineno - 1 and lines[i - 1].lstrip().startswith("#") or i >= node.lineno):
                continue
            found.setdefault(text, []).append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def tr_strings(folder: Path = PACKAGE) -> dict[str, list[str]]:
    """Every literal passed to tr(...) or N_(...) in the package -> where it is."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args and \
                    (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in ("tr", "N_"):
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, []).append(f"{path.relative_to(folder.parent)}:{node.lineno}")
    return found


def messages() -> dict[str, list[str]]:
    """Every message of the package's catalog, in source order: tr()/N_() strings, then the checks' templates."""
    out = tr_strings()
    for text, where in check_templates().items():
        out.setdefault(text, []).extend(where)
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
        entry.occurrences = [(w.rsplit(":", 1)[0], w.rsplit(":", 1)[1]) for w in where[:3]]
    order = {m: i for i, m in enumerate(wanted)}
    po.sort(key=lambda e: order.get(e.msgid, 0))
    CATALOG.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(CATALOG))
    return added, len(removed)


def problems() -> list[str]:
    """What is wrong with the catalog: missing, stale, untranslated, fuzzy, fields changed, no Chinese."""
    import polib

    if not CATALOG.exists():
        return [f"{CATALOG.relative_to(ROOT)} does not exist: run tools/i18n.py package"]
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
        if not HAN.search(e.msgstr):
            out.append(f"no Chinese in the translation of {e.msgid!r}: {e.msgstr!r}")
    return out
