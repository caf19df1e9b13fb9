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

The controls' names are the catalog's other messages (msgctxt "control"): ``explore(draw, depth=[...])`` labels
its control with the keyword's name, which the chapter's code (and draw's signature) must keep, so the package shows
the name's translation instead (transformer_lite.book.interactive.control_label). :func:`control_names` lists every
keyword a chapter passes to ``explore`` as a control; the names that are the math's own symbols (:data:`SYMBOLS`)
stay as they are in both editions and have no entry.

tests/test_package_i18n.py runs :func:`problems` and :func:`unwrapped`: a message or a chapter's control name without
its Chinese, a stale one, or a message left unwrapped fails it.
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
NOTEBOOKS = ROOT / "notebooks"
CONTROL = "control"  # the msgctxt of the controls' names (transformer_lite.book.interactive.CONTROL)
EXPLORE_OPTIONS = {"initial", "max_frames", "dpi", "alt"}  # explore's own keywords: not controls
# control names that are the math's own symbols, written so in the chapters' formulas, code and alt texts of both
# editions: d_k, d_model, H and T (shape letters), eps (label smoothing's ε), top_k (top-k's k), warmup_steps (the
# paper's schedule formula). They are labels as they are, with no catalog entry.
SYMBOLS = frozenset({"d_k", "d_model", "H", "T", "eps", "top_k", "warmup_steps"})
# the modules whose strings a reader sees (the rest of the package speaks to programmers, in errors and docstrings)
SHOWN = (*sorted(CHECKS.glob("*.py")),
         *(PACKAGE / "book" / f"{name}.py" for name in ("architecture_map", "interactive", "notebook", "plotting",
                                                         "translate", "viz")))
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


def control_names(folder: Path | None = None) -> dict[str, list[str]]:
    """Every name a chapter gives a control -> where ("notebooks/05_add_norm_ffn.ipynb:18": the notebook and its
    cell), in the order of the notebooks and cells: the keywords of each ``explore(...)`` call of the English
    notebooks' code cells but explore's own (:data:`EXPLORE_OPTIONS`) and the math's symbols (:data:`SYMBOLS`)."""
    import json

    from .code_cells import _python_source

    folder = NOTEBOOKS if folder is None else folder
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for n, cell in enumerate(cells):
            if cell["cell_type"] != "code" or "explore" not in "".join(cell["source"]):
                continue
            for node in ast.walk(ast.parse(_python_source("".join(cell["source"])))):
                if isinstance(node, ast.Call) and _name(node) == "explore":
                    for kw in node.keywords:
                        if kw.arg and kw.arg not in EXPLORE_OPTIONS and kw.arg not in SYMBOLS:
                            found.setdefault(kw.arg, []).append(f"{_where(path, n)}")
    return found


def wanted() -> dict[tuple[str | None, str], list[str]]:
    """What the catalog must hold: (msgctxt, msgid) -> where; the package's messages (no context), then the
    chapters' control names (msgctxt "control")."""
    return {**{(None, m): w for m, w in messages().items()},
            **{(CONTROL, name): w for name, w in control_names().items()}}


def _what(key: tuple[str | None, str]) -> str:
    return f"control name {key[1]!r}" if key[0] == CONTROL else repr(key[1])


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

    po, want = _load(), wanted()
    have = {(e.msgctxt, e.msgid): e for e in po}
    removed = [e for e in po if (e.msgctxt, e.msgid) not in want]
    for e in removed:
        po.remove(e)
    added = 0
    for (context, msgid), where in want.items():
        entry = have.get((context, msgid))
        if entry is None:
            entry = polib.POEntry(msgctxt=context, msgid=msgid, msgstr="")
            po.append(entry)
            added += 1
        entry.occurrences = [tuple(w.rsplit(":", 1)) for w in where[:3]]
    order = {key: i for i, key in enumerate(want)}
    po.sort(key=lambda e: order.get((e.msgctxt, e.msgid), 0))
    CATALOG.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(CATALOG))
    return added, len(removed)


def problems() -> list[str]:
    """What is wrong with the catalog: missing, stale, untranslated, fuzzy, fields changed, no Chinese."""
    import polib

    if not CATALOG.exists():
        return [f"{CATALOG.relative_to(ROOT)} does not exist: run python -m bookbuild.i18n package"]
    po, want = polib.pofile(str(CATALOG), wrapwidth=0), wanted()
    have = {(e.msgctxt, e.msgid): e for e in po}
    out = [f"missing from the catalog: {_what(k)} ({', '.join(w)})" for k, w in want.items() if k not in have]
    out += [f"stale (no longer in the sources): {_what(k)}" for k in have if k not in want]
    for e in po:
        what = _what((e.msgctxt, e.msgid))
        if not e.msgstr:
            out.append(f"untranslated: {what}")
            continue
        if "fuzzy" in e.flags:
            out.append(f"fuzzy: {what}")
        if fields(e.msgid) != fields(e.msgstr):
            out.append(f"fields differ: {what} has {fields(e.msgid)}, its Chinese {fields(e.msgstr)}")
        if not HAN.search(e.msgstr) and re.search("[A-Za-z]", FIELD.sub("", e.msgid)):  # ("{message} {rule}"
            # joins two messages: no words of its own)
            out.append(f"no Chinese in the translation of {what}: {e.msgstr!r}")
    return out
