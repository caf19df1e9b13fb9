"""The code cells' comments, figure strings and marked strings: into locales/zh_CN/code/, back token for token."""
from __future__ import annotations

import re
from pathlib import Path

from .messages import CODE, HAN, MATH, format_fields
from .paths import CODE_CATALOGS, LANGUAGE, ROOT
from .style import HOLE, figure_number_problems, report_only, style_problems
from .terminology import excused, forbidden_problems, load_rules

# -- code cells: their comments and the strings a figure shows, in Chinese (locales/zh_CN/code/) -------------
# One catalog per notebook, locales/zh_CN/code/notebooks/<stem>.po, OUTSIDE LC_MESSAGES (Sphinx reads every .po
# under LC_MESSAGES as a page's catalog). Two contexts:
#   msgctxt "comment": the text of a `#` comment (found by tokenize, so a `#` inside a string is not one),
#       without the `#` and the spaces around it. Consecutive full-line comments at one indentation are one
#       message (their lines joined by spaces): a sentence cut over two lines is translated as one sentence, and
#       the Chinese is wrapped again to the block's width. Not messages (code_comment_is_prose): Colab's forms
#       (`#@title`), shebangs, the noqa/`type:`/pragma/`fmt:` comments, comments with no English word (shapes like
#       `(B, T, D)`, formulas like `h_{-1} = 0`) and commented-out code (the text parses as Python and holds `=`
#       or `(`).
#   msgctxt "figure": the string literals a figure shows, found with the AST: every string argument (also inside
#       a list, a tuple or an `a if c else b`) of a call to FIGURE_CALLS, the keyword arguments FIGURE_KEYWORDS
#       of any call, and a string assigned to a variable of one of those names (`label = f"..."`). The msgid is the
#       literal's source text between its quotes (escapes as written; an f-string's `{...}` fields kept; implicitly
#       concatenated pieces joined); the Chinese must keep the same `{...}` fields, code spans and `$...$` math and make
#       a valid literal (checked). Strings that are data (tokens, sentences, keys, modes passed to functions, printed
#       labels) are never messages, and the code computes exactly what the English notebook does.
#   msgctxt "display": the string literals the notebook marks as shown to the reader, `N_("...")` or `N_(f"...")`,
#       N_ being the package's no-op marker (transformer_lite.book.i18n.N_, gettext's gettext_noop: it returns its
#       argument): printed lines and their templates, a drawing helper's labels, a legend's dictionary keys, control
#       options, whatever the call shapes above cannot see. It is marked where it is written, not guessed; put back
#       as a figure string is, `N_` and its fields staying where they are.
# `bookbuild/i18n.py update` extracts them and merges: a new message untranslated, a changed one fuzzy (the old
# Chinese of the most similar vanished message of the same context), a vanished one dropped. `notebooks` puts the
# translations back into notebooks/zh/ token by token (code_translated) and adds `language="zh"` to the set-up
# call; `check` lists untranslated, fuzzy and malformed code messages with the prose's.

FIGURE_CALLS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "title", "xlabel", "ylabel", "text", "annotate",
                "legend", "supxlabel", "supylabel", "figtext"}
FIGURE_KEYWORDS = {"label", "title", "titles", "xlabel", "ylabel", "suptitle", "alt"}
MARKER = "N_"  # marks a display string in a notebook (msgctxt "display")
LITERALS = ("figure", "display")  # the contexts whose messages are string literals, put back token for token
NOT_PROSE_COMMENT = re.compile(r"#[@!]|#\s*(noqa|type:|pragma|fmt:|-\*-)")
ENGLISH_WORD = re.compile(r"(?<![\w\\])[A-Za-z]{2,}(?![\w])")  # not a LaTeX command's name (\sqrt, \tanh)
# \n, \r or \t written in a (not raw) literal, not after an escaped backslash: a break before the next word, so the
# "Total" of "\nTotal" is a word, which ENGLISH_WORD alone reads as the name after a backslash
ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\[nrt]")
FIELD = re.compile(r"\{\{|\}\}|\{")
SETUP_LANGUAGE = ', language="zh"'


def literal_words(text: str, raw: bool = False) -> list[str]:
    """The English words of a string literal's source text (escapes as written): its \\n, \\r, \\t break words
    apart, unless the literal is raw; `$...$` math and `{...}` fields are no words."""
    if not raw:
        text = ESCAPE.sub(r"\1 ", text)
    return ENGLISH_WORD.findall(re.sub(r"\$[^$]*\$|\{[^{}]*\}", " ", text))


def code_comment_is_prose(text: str) -> bool:
    """Whether one comment (with its `#`) is words a reader reads, to translate; see the rules above."""
    if NOT_PROSE_COMMENT.match(text):
        return False
    body = text.lstrip("#").strip()
    if not ENGLISH_WORD.search(body):
        return False
    if "=" in body or "(" in body:
        import ast

        try:
            ast.parse(body)
        except (SyntaxError, ValueError):
            return True
        return False
    return True


def _python_source(source: str) -> str:
    """A code cell's source with IPython's magics and shell lines (`%pip ...`, `!ls`) blanked to `pass` + spaces
    of the same length, so that tokenize and ast read it and every position stays where it was."""
    out = []
    for line in source.split("\n"):
        stripped = line.lstrip()
        if stripped[:1] in ("%", "!") and not stripped.startswith("!="):
            indent = line[:len(line) - len(stripped)]
            line = indent + "pass" + " " * max(0, len(stripped) - 4)
        out.append(line)
    return "\n".join(out)


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers index it from 1)."""
    starts = [0, 0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return starts


class _Piece:
    """One string token of a figure string: where its text between the quotes starts and ends (offsets into the
    cell's source), and its prefix (f, r, ...)."""

    def __init__(self, start: int, end: int, prefix: str, quote: str):
        self.start, self.end, self.prefix, self.quote = start, end, prefix, quote


def _string_pieces(source: str, start: int, end: int) -> list[_Piece]:
    """The string tokens between offsets ``start`` and ``end`` of ``source`` (one literal, maybe implicitly
    concatenated): for each, the span of its text between the quotes."""
    pieces, i = [], start
    while i < end:
        m = re.compile(r"([rRbBuUfF]{0,2})('''|\"\"\"|'|\")").match(source, i)
        if not m:
            i += 1
            continue
        prefix, quote = m.groups()
        j = m.end()
        while not source.startswith(quote, j):
            j += 2 if source[j] == "\\" else 1
        pieces.append(_Piece(m.end(), j, prefix, quote))
        i = j + len(quote)
    return pieces


def _marked_nodes(tree) -> list:
    """The string literals (or f-strings) marked `N_(...)`: the first argument of each call to MARKER."""
    import ast

    return [node.args[0] for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == MARKER and node.args
            and (isinstance(node.args[0], ast.JoinedStr) or isinstance(node.args[0], ast.Constant)
                 and isinstance(node.args[0].value, str))]


def _figure_nodes(tree) -> list:
    """The string literals a figure shows (FIGURE_CALLS, FIGURE_KEYWORDS), then the marked ones (_marked_nodes)."""
    import ast

    found = []

    def strings(node):
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            if isinstance(node, ast.JoinedStr) or isinstance(node.value, str):
                found.append(node)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for el in node.elts:
                strings(el)
        elif isinstance(node, ast.IfExp):
            strings(node.body)
            strings(node.orelse)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in FIGURE_KEYWORDS:  # label = f"..." (then label=label)
            strings(node.value)
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in FIGURE_CALLS:
            for arg in node.args:
                strings(arg)
        for kw in node.keywords:
            if kw.arg in FIGURE_KEYWORDS:
                strings(kw.value)
    seen = {id(node) for node in found}
    return found + [node for node in _marked_nodes(tree) if id(node) not in seen]


def figure_literals(source: str, tree=None) -> list[tuple]:
    """Every string literal a figure shows or the cell marks for display (whatever its words): ``(node, pieces)``,
    the pieces being the literal's string tokens (_Piece: the span of the text between its quotes)."""
    import ast

    python = _python_source(source)
    tree = tree or ast.parse(python)
    starts, lines, out = _offsets(python), python.split("\n"), []
    for node in _figure_nodes(tree):
        begin = starts[node.lineno] + len(lines[node.lineno - 1].encode()[:node.col_offset].decode())
        end = starts[node.end_lineno] + len(lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())
        out.append((node, _string_pieces(python, begin, end)))
    return out


def code_messages(source: str) -> list[dict]:
    """The messages of one code cell, in source order: dicts with ``context`` ("comment"/"figure"/"display"), ``msgid``,
    ``line`` (1-based) and what code_translated needs to put a translation back (``spans``: the (start, end)
    character offsets it replaces; for a comment block, ``indent`` and ``width``; for a figure string, its
    pieces)."""
    import ast
    import io
    import tokenize

    python = _python_source(source)
    starts = _offsets(python)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(python).readline))
        tree = ast.parse(python)
    except (SyntaxError, tokenize.TokenError) as err:
        raise ValueError(f"code cell does not parse as Python: {err}\n{source[:200]}") from err
    messages = []
    previous = None  # the last full-line comment message, to continue a block
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        if not code_comment_is_prose(tok.string):
            previous = None
            continue
        (row, col), (_, end_col) = tok.start, tok.end
        full_line = not python.split("\n")[row - 1][:col].strip()
        text = tok.string.lstrip("#").strip()
        at = starts[row] + col + tok.string.index(text)
        span = (at, at + len(text))
        if full_line and previous and previous["last_line"] == row - 1 and previous["col"] == col:
            previous["msgid"] += " " + text
            previous["spans"].append(span)
            previous["last_line"] = row
            previous["width"] = max(previous["width"], end_col)
            continue
        message = {"context": "comment", "msgid": text, "line": row, "spans": [span], "col": col,
                   "last_line": row, "full_line": full_line, "width": end_col,
                   "prefix": tok.string[:tok.string.index(text)]}
        messages.append(message)
        previous = message if full_line else None
    marked = {id(node) for node in _marked_nodes(tree)}
    for node, pieces in figure_literals(python, tree):
        msgid = "".join(python[p.start:p.end] for p in pieces)
        unescaped = "".join(python[p.start:p.end] if "r" in p.prefix.lower() else
                            ESCAPE.sub(r"\1 ", python[p.start:p.end]) for p in pieces)
        if not literal_words(unescaped, raw=True):
            continue  # `$x_{t}$`, "", "{name}": nothing a reader reads as words
        if any(p.prefix.lower() in ("b", "rb", "br") for p in pieces):
            continue
        messages.append({"context": "display" if id(node) in marked else "figure", "msgid": msgid,
                         "line": node.lineno, "pieces": pieces,
                         "spans": [(p.start, p.end) for p in pieces]})
    return sorted(messages, key=lambda m: m["spans"][0])


def display_width(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_comment(text: str, width: int) -> list[str]:
    """``text`` cut into lines of at most ``width`` display columns (a Han character counts two), between Han
    characters or at spaces, never inside a `code span`."""
    if display_width(text) <= width:
        return [text]
    breaks, in_code = [], False  # positions where a line may end (before text[i])
    for i, ch in enumerate(text):
        if ch == "`":
            in_code = not in_code
        if i and not in_code and (ch == " " or (HAN.match(ch) and text[i - 1] not in "`") or
                                  (HAN.match(text[i - 1]) and ch not in "，。：；！？）」”、")):
            breaks.append(i)
    lines, start = [], 0
    while display_width(text[start:]) > width:
        fits = [b for b in breaks if start < b and display_width(text[start:b].rstrip()) <= width]
        # rather after a punctuation mark or at a space, if that fills at least 70% of the line
        good = [b for b in fits if (text[b - 1] in "，。：；！？、）” " or text[b] == " ")
                and display_width(text[start:b]) >= 0.7 * width]
        cut = (good or fits)[-1] if fits else next((b for b in breaks if b > start), len(text))
        lines.append(text[start:cut].rstrip())
        start = cut + (1 if text[cut:cut + 1] == " " else 0)
        if start >= len(text):
            break
    if start < len(text):
        lines.append(text[start:])
    return lines


def _figure_replacement(message: dict, msgstr: str, source: str) -> list[tuple[int, int, str]]:
    """Where a figure string's translation goes: into its one literal; a concatenation (`"...\\n" f"..."`) gets one
    chunk per piece when the Chinese has as many `\\n`-ended chunks and each fits its piece (fields only in
    f-pieces), else the whole translation in the first piece and the other pieces emptied."""
    pieces = message["pieces"]
    if len(pieces) == 1:
        return [(pieces[0].start, pieces[0].end, msgstr)]
    chunks = re.findall(r".*?\\n|.+$", msgstr)
    if len(chunks) == len(pieces) and all("f" in p.prefix.lower() or not FIELD.search(c)
                                          for p, c in zip(pieces, chunks)):
        return [(p.start, p.end, c) for p, c in zip(pieces, chunks)]
    if any("f" in p.prefix.lower() for p in pieces) and "f" not in pieces[0].prefix.lower():
        return []  # cannot be placed exactly: check() reports it
    return [(pieces[0].start, pieces[0].end, msgstr)] + [(p.start, p.end, "") for p in pieces[1:]]


def code_translated(source: str, translations: dict, language: bool = True) -> tuple[str, list[tuple[str, str]]]:
    """A code cell with its comments and figure strings in Chinese (``translations``: {(context, msgid): msgstr})
    and, when ``language``, `setup(...)` given `language="zh"`; returns ``(source, untranslated)``. Everything
    else stays byte for byte; a message without a translation stays English."""
    import ast

    edits, missing = [], []
    python = _python_source(source)
    for m in code_messages(source):
        msgstr = translations.get((m["context"], m["msgid"]))
        if not msgstr:
            missing.append((m["context"], m["msgid"]))
            continue
        if m["context"] in LITERALS:
            edits += _figure_replacement(m, msgstr, python)
        elif len(m["spans"]) == 1 and not m["full_line"] or len(m["spans"]) == 1 and \
                display_width(m["prefix"]) + display_width(msgstr) + m["col"] <= max(m["width"], 100):
            edits.append((*m["spans"][0], msgstr))
        else:  # a block of full-line comments: wrapped again to its width (at least 60 columns of text)
            width = max(m["width"] - m["col"] - len(m["prefix"]), 60)
            lines = wrap_comment(msgstr, width)
            joiner = "\n" + " " * m["col"] + m["prefix"]
            first, last = m["spans"][0][0], m["spans"][-1][1]
            edits.append((first, last, joiner.join(lines)))
    if language:
        tree = ast.parse(python)
        starts = _offsets(python)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup" and \
                    not any(k.arg == "language" for k in node.keywords):
                line = python.split("\n")[node.end_lineno - 1]
                close = starts[node.end_lineno] + len(line.encode()[:node.end_col_offset].decode()) - 1
                edits.append((close, close, SETUP_LANGUAGE if node.args or node.keywords else SETUP_LANGUAGE[2:]))
    for start, end, new in sorted(edits, reverse=True):
        source = source[:start] + new + source[end:]
    return source, missing


def code_catalog_path(notebook: Path, catalogs: Path = CODE_CATALOGS) -> Path:
    return catalogs / "notebooks" / f"{notebook.stem}.po"


def _code_cells(notebook: Path) -> list[tuple[int, str]]:
    import json

    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return [(n, "".join(c["source"])) for n, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def code_template(notebook: Path):
    """The code messages of one notebook as a polib catalog (msgstr empty): one entry per (context, msgid),
    with the cells and lines where it occurs and, as an extracted comment, the line of code it belongs to."""
    import polib

    pot, seen = polib.POFile(wrapwidth=0), {}
    for n, source in _code_cells(notebook):
        lines = source.split("\n")
        for m in code_messages(source):
            key = (m["context"], m["msgid"])
            if key not in seen:
                code_line = lines[m["line"] - 1].strip()
                seen[key] = polib.POEntry(msgctxt=m["context"], msgid=m["msgid"], msgstr="",
                                          comment=code_line[:120] if m["context"] in LITERALS else "")
                pot.append(seen[key])
            seen[key].occurrences.append((f"cell {n}", str(m["line"])))
    return pot


def code_update(notebooks: list[Path] | None = None, catalogs: Path = CODE_CATALOGS) -> list[Path]:
    """Bring each notebook's code catalog up to date with its code: new messages untranslated, changed ones fuzzy
    (the Chinese of the most similar vanished message of the same context, difflib ratio >= 0.6), vanished ones
    dropped; the entries in the notebook's order. Returns the catalogs written."""
    import difflib

    import polib

    written = []
    for notebook in notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        path = code_catalog_path(notebook, catalogs)
        old = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(path))} if path.exists() else {}
        po = code_template(notebook)
        new_keys = {(e.msgctxt, e.msgid) for e in po}
        vanished = [e for k, e in old.items() if k not in new_keys and e.msgstr]
        for e in po:
            before = old.get((e.msgctxt, e.msgid))
            if before is not None:
                e.msgstr, e.flags = before.msgstr, [f for f in before.flags if f == "fuzzy"]
                e.previous_msgid = before.previous_msgid if "fuzzy" in before.flags else None
                continue
            similar = max(((difflib.SequenceMatcher(None, v.msgid, e.msgid).ratio(), i) for i, v in enumerate(vanished)
                           if v.msgctxt == e.msgctxt), default=(0, None))
            if similar[0] >= 0.6:
                v = vanished.pop(similar[1])
                e.msgstr, e.flags, e.previous_msgid = v.msgstr, ["fuzzy"], v.msgid
        po.metadata = {"Content-Type": "text/plain; charset=utf-8", "Language": LANGUAGE,
                       "X-Source": f"notebooks/{notebook.name} (code cells; bookbuild/i18n.py update)"}
        path.parent.mkdir(parents=True, exist_ok=True)
        po.save(str(path))
        written.append(path)
    return written


def code_message_problems(context: str, msgid: str, msgstr: str, fuzzy: bool = False) -> list[str]:
    """What is wrong with one code message's translation: untranslated, fuzzy, or not the same code spans, math,
    `{...}` fields (a figure string: they are the f-string's or the template's values), or a figure string's
    translation that is no valid literal (a bare quote, a raw line break)."""
    import ast

    if not msgstr.strip():
        return ["untranslated"]
    out = ["fuzzy: the English changed since it was translated"] if fuzzy else []
    checks = [("code spans", CODE), ("math", MATH)]
    for name, rx in checks:
        a, b = sorted(rx.findall(msgid)), sorted(rx.findall(msgstr))
        if a != b:
            out.append(f"{name} differ from the English: {sorted(set(a) ^ set(b))}")
    if context in LITERALS:
        if format_fields(msgid) != format_fields(msgstr):
            out.append(f"{{...}} fields differ from the English: {format_fields(msgid)} vs {format_fields(msgstr)}")
        for quote in ('"', "'"):  # the quotes the English literal can be written in: the Chinese must fit them too
            try:
                ast.parse(quote + msgid + quote)
            except SyntaxError:
                continue
            try:
                ast.parse(quote + msgstr + quote)
            except SyntaxError as err:
                out.append(f"not a valid string literal between {quote} quotes: {err.msg}")
    elif "\n" in msgstr:
        out.append("a comment's translation holds a line break (the generator wraps it)")
    english = re.sub(r"`[^`]*`|\$[^$]*\$|\{[^{}]*\}|\w+\(", " ", msgid)
    if len(literal_words(english) if context in LITERALS else ENGLISH_WORD.findall(english)) >= 3 and \
            not HAN.search(msgstr):
        out.append("no Chinese in a message with English words")
    return out


def code_style_problems(page: str, msgid: str, msgstr: str, rules: dict | None = None, report: bool = False,
                        context: str = "") -> list[str]:
    """STYLE.md's punctuation rules for a comment or figure string, where code notation is at home: a string
    literal quoted as in the English ("batch", a value the reader types) keeps its ASCII quotes, and tuples, calls
    and formulas keep their ASCII commas and parentheses ((层, 头) -> ..., P(下一个词元 | 源句子)): the rule
    "ASCII punctuation" is not applied. The others are (full-width quotes around words, no space after
    full-width punctuation, 15%, ...)."""
    literals = set(re.findall(r'"[^"\n]*"', msgid))
    masked = re.sub(r'"[^"\n]*"', lambda m: HOLE if m.group(0) in literals else m.group(0), msgstr)
    out = [p for p in style_problems(page, msgid, masked, rules, report) if not p.startswith("ASCII punctuation:")]
    rules = load_rules() if rules is None else rules
    if context in LITERALS and report_only("figure numbers", page) == report and \
            not excused(rules, page, msgid, "rule", "figure numbers"):
        out += figure_number_problems(msgstr)
    return out


def code_check(notebooks: list[Path] | None = None, catalogs: Path = CODE_CATALOGS) -> list[str]:
    """Every comment and figure string of every notebook's code translated, not fuzzy, well formed, and following
    STYLE.md's punctuation and terms (code_style_problems, forbidden_problems; excused by terminology.yml's
    exceptions under the page "code/<stem>")."""
    import polib

    problems, rules = [], load_rules()
    for notebook in notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        path = code_catalog_path(notebook, catalogs)
        page = f"code/{notebook.stem}"
        if not path.exists():
            problems.append(f"{page}: no code catalog {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
                            f" (run `python -m bookbuild.i18n update`)")
            continue
        po = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(path)) if not e.obsolete}
        for e in code_template(notebook):
            have = po.get((e.msgctxt, e.msgid))
            found = ["missing: a new or changed comment or figure string"] if have is None else \
                code_message_problems(e.msgctxt, e.msgid, have.msgstr, "fuzzy" in have.flags)
            if have is not None and have.msgstr:  # STYLE.md's punctuation and terms, as in the prose catalogs
                found += code_style_problems(page, e.msgid, have.msgstr, rules, context=e.msgctxt)
                found += [p.split(": ", 1)[1] for p in forbidden_problems(page, e.msgid, have.msgstr, rules)]
            problems += [f"{page} [{e.msgctxt}]: {p}: {e.msgid[:100]!r}" for p in found]
    return problems


def code_translations(notebook: Path, catalogs: Path = CODE_CATALOGS) -> dict:
    """{(context, msgid): msgstr} of one notebook's code catalog: the translated, not fuzzy, well-formed entries."""
    import polib

    path = code_catalog_path(notebook, catalogs)
    if not path.exists():
        return {}
    return {(e.msgctxt, e.msgid): e.msgstr for e in polib.pofile(str(path))
            if not e.obsolete and e.msgstr and not code_message_problems(e.msgctxt, e.msgid, e.msgstr,
                                                                          "fuzzy" in e.flags)}
