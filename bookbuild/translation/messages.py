"""A translated message's markup (code spans, math, links, roles, tags, {fields}) and what is wrong with one."""
from __future__ import annotations

import re

# what the checks below compare between a message and its translation
CODE = re.compile(r"``?[^`]+``?")
MATH = re.compile(r"\$\$?[^$]+\$\$?")
LINK = re.compile(r"\]\(([^)\s]+)\)")
ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")
TAG = re.compile(r"</?[a-zA-Z][^>]*>")
HAN = re.compile(r"[\u3400-\u9fff]")


def is_display_math(msgid: str) -> bool:
    """A $$...$$ block reaches the catalog as its LaTeX alone: starting with a newline, without the $$."""
    return msgid.startswith("\n") and "$" not in msgid


def rendered(text: str) -> dict:
    """What markdown-it (MyST's parser) makes of a message: counts of bold, italic, code and links.
    Chinese punctuation can keep a closing ** from closing (**事实。**后面): the counts must match the English."""
    from markdown_it import MarkdownIt

    counts: dict[str, int] = {}
    for tok in MarkdownIt("commonmark").parseInline(text):
        for child in tok.children or []:
            if child.type in ("strong_open", "em_open", "code_inline", "link_open"):
                counts[child.type] = counts.get(child.type, 0) + 1
    return counts


def prose_text(text: str) -> str:
    for rx in (CODE, MATH, ROLE, TAG):
        text = rx.sub(" ", text)
    return LINK.sub("]", text)


def message_problems(msgid: str, msgstr: str, fuzzy: bool = False, may_stay_english: bool = False) -> list[str]:
    """What is wrong with one translation (an empty list: nothing)."""
    if not msgstr.strip():
        return ["untranslated"]
    out = ["fuzzy: the English changed since it was translated"] if fuzzy else []
    for name, rx in (("code spans", CODE), ("math", MATH), ("link targets", LINK), ("roles", ROLE)):
        a, b = sorted(rx.findall(msgid)), sorted(rx.findall(msgstr))
        if name == "math":  # the words in a formula's \text{…} are translated (STYLE.md), its symbols are not
            a, b = (sorted(FORMULA_TEXT.sub(r"\\text{}", m) for m in x) for x in (a, b))
        if a != b:
            out.append(f"{name} differ from the English: {sorted(set(a) ^ set(b))}")
    if is_display_math(msgid):
        return out
    if rendered(msgid) != rendered(msgstr):
        out.append(f"renders differently (bold/italic/code/links): {rendered(msgid)} vs {rendered(msgstr)}")
    words = re.findall(r"[A-Za-z]{2,}", prose_text(msgid))
    if len(words) >= 3 and not HAN.search(prose_text(msgstr)) and not may_stay_english:
        out.append("no Chinese in a prose message")
    return out


SHAPE_LETTERS = {"model width, d_model", "number of attention heads", "width of one head, D / H"}


def kept_in_english(page: str, msgid: str) -> bool:
    """The glossary's English column: a term's English name (a whole bold cell, or a cell of the table of shape
    letters) is kept in English in the Chinese edition too, next to the Chinese column. Nothing else is."""
    return page == "book/glossary" and (bool(re.fullmatch(r"\*\*[^*]+\*\*", msgid)) or msgid in SHAPE_LETTERS)


# \text{…} in a display formula (its own message): words are translated (\text{因果掩码}), labels are not
FORMULA_TEXT = re.compile(r"\\text\{([^{}]*)\}")


def format_fields(text: str) -> list[str]:
    """The `{...}` replacement fields of a literal's text (f-string or str.format template), sorted; `{{`/`}}`
    are not fields. Nested braces inside a field (`{x:{width}}`) belong to it."""
    fields, i = [], 0
    while i < len(text):
        if text.startswith("{{", i) or text.startswith("}}", i):
            i += 2
            continue
        if text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            fields.append(text[i:j + 1])
            i = j + 1
            continue
        i += 1
    return sorted(fields)
