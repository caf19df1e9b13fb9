"""STYLE.md's punctuation, units and wording in a Chinese message: checked, and the mechanical ones fixed."""
from __future__ import annotations

import re
from pathlib import Path

from .messages import CODE, FORMULA_TEXT, HAN, LINK, MATH, ROLE, TAG, format_fields, is_display_math, message_problems
from .paths import CATALOGS
from .terminology import excused, load_rules

# -- style: the punctuation and the units of locales/zh_CN/STYLE.md ----------------------------------------------
# Each rule reads a message's Chinese without its code spans, formulas, roles, HTML tags and link targets (each
# replaced by HOLE, which is neither a space nor a letter nor punctuation), so `a, b` or $f(x)$ never trips it.

HOLE = "\ue000"
_H = r"[\u3400-\u9fff]"  # a Chinese character
_STOPS = "，。：；！？、"  # full-width punctuation that a space must neither follow nor precede
_CLOSE = _STOPS + "）》」』”"  # ... and the closing brackets and quotes, which a space must not follow
STYLE_RULES = {  # name: (pattern, what is wrong and what to write instead)
    "percent": (re.compile(r"\d(?:[ \u00a0]+[%％]|％)"),
                "a space before %, or a full-width ％: write 15% (no space, half-width %)"),
    "space after punctuation": (re.compile(f"[{_CLOSE}][*_]*[ \u00a0]+(?=[^ \u00a0])"),
                                "a space after full-width punctuation: write 。后面 (no space); after bold or italic "
                                "put the punctuation outside the markers, **常见误解**。后面, since **常见误解。**后面 "
                                "does not render as bold"),
    "space before punctuation": (re.compile(f"(?<=[^ \u00a0\\n{HOLE}])[ \u00a0]+[*_]*[{_STOPS}]"),
                                 "a space before full-width punctuation: write Mac，好 (no space)"),
    "ASCII quotes": (re.compile(r'"[^"\n]*"'),
                     "ASCII quotes in a Chinese message: write “…” (full-width), around English words too"),
    "ASCII punctuation": (re.compile(f"(?<={_H})[ ]?[,;:!?][ ]?(?={_H})|(?<={_H})\\((?=[^)]*\\))|"
                                     f"\\)(?={_H})"),
                          "ASCII , ; : ! ? ( ) next to Chinese characters: write ，；：！？（ ） (a shape such as "
                          "(B, S, D) keeps its ASCII parentheses, with a space before it)"),
    "exercise title": (re.compile(r"练习\s*[0-9A-Z]+\.\d+\s*(?:[—–-]+|:)"),
                       "an exercise title with a dash or ASCII colon: write 练习 3.1：标题 (full-width colon)"),
    # a lone … against a Chinese character or full-width punctuation; a sequence in notation (1, 2, …, 5) keeps it
    "ellipsis": (re.compile(f"(?<=[\u3400-\u9fff{_STOPS}”])…(?!…)|(?<!…)…(?={_H})"),
                 "a single … in Chinese text: write …… (two U+2026); a sequence in notation, 1, 2, …, 5, keeps one"),
    # a lone — (a dash is two U+2014), and a reference list's `{cite}` — … (a role is a HOLE here)
    "dash": (re.compile(f"(?<!—)—(?!—)|(?<={HOLE})[ \u00a0]+——"),
             "a single — or a space before ——: write —— (two U+2014), `{cite}`——… in a reference list "
             "(as appendices A and C), “指令——答案” between two nouns"),
}

# Rules that `check` only reports on some pages, while the chapters they still flag are being corrected: there
# their findings are printed after the problems, as "report: ...", and neither the exit status nor
# tests/test_i18n.py counts them; on every other page (the package's catalog among them) they are enforced.
# {rule: the page prefixes where it only reports}. A rule leaves this table once it reports nothing.
REPORT_ONLY = {"ellipsis": ("notebooks/",), "dash": ("notebooks/",), "figure numbers": ("code/",),
               "first-use English": ("notebooks/",)}


def report_only(rule: str, page: str) -> bool:
    """Whether ``rule`` only reports on ``page`` (REPORT_ONLY)."""
    return page.startswith(REPORT_ONLY.get(rule, ("\0",)))


# Counts written with Chinese units (1.1 亿, 6300 万) or with Latin ones (110M, 1.5B): one style per page. A model's
# name keeps its size (Llama 2 7B, Qwen2.5-0.5B): MODEL_NAME is removed first.
UNITS_ZH = re.compile(r"\d+(?:\.\d+)?\s*[亿万](?!一)")
UNITS_EN = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?\s?[MB](?![\w-])")
MODEL_NAME = re.compile(r"[A-Za-z][\w.]*(?:[ -]\d[\d.]*)?[ -]\d+(?:\.\d+)?[MB](?![\w-])")

# every rule a terminology.yml exception may name under `rule:`
RULE_NAMES = (*STYLE_RULES, "exercise instructions", "formula text", "units", "figure numbers", "first-use English")

# The exercises' instructions, one wording for every variant of the English "Each exercise has a cell for your
# answer, a one-line check to run after it, and a (worked) solution folded ..." (the parenthesis only where the
# English names the `...` to replace); a chapter may add sentences after it.
EXERCISE_INSTRUCTIONS = ("每道练习有三部分：一个供你作答的单元格{}，一行作答后运行的检查，"
                         "以及一份折叠在“显示答案”下的完整解答。")
EXERCISE_BLANK = "（把其中的 `...` 换成你的答案）"


def exercise_instructions(msgid: str) -> str | None:
    """The Chinese the exercises' instructions must start with, or None if ``msgid`` is not those instructions."""
    if not msgid.startswith("Each exercise has"):
        return None
    return EXERCISE_INSTRUCTIONS.format(EXERCISE_BLANK if "`...`" in msgid else "")


def _style_text(text: str) -> str:
    for rx in (ROLE, CODE, MATH, TAG):  # a role before the code span that ends it
        text = rx.sub(HOLE, text)
    return re.sub(r"https?://\S+", HOLE, LINK.sub("]" + HOLE, text))


def style_problems(page: str, msgid: str, msgstr: str, rules: dict | None = None, report: bool = False) -> list[str]:
    """What one translation does against STYLE.md's punctuation rules (STYLE_RULES), each with the text found and
    what to write instead; a message listed in terminology.yml's ``exceptions`` under ``rule`` is excused. The
    rules that only report on ``page`` (REPORT_ONLY) are left out, or with ``report``, they alone are applied."""
    rules = load_rules() if rules is None else rules
    if report:
        if not HAN.search(msgstr) or is_display_math(msgid):
            return []
        text = _style_text(msgstr)
        return [_style_finding(name, rx, advice, text) for name, (rx, advice) in STYLE_RULES.items()
                if report_only(name, page) and rx.search(text) and not excused(rules, page, msgid, "rule", name)]
    if is_display_math(msgid):  # a formula: its words in \text{…} are translated, its symbols are not
        words = [t for t in FORMULA_TEXT.findall(msgstr) if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", t)]
        if words and not excused(rules, page, msgid, "rule", "formula text"):
            return [f"formula text: English words in a formula: write them in Chinese, e.g. \\text{{因果掩码}} for "
                    f"\\text{{causal mask}} (a symbol's label such as d_\\text{{model}} stays); found {words[:3]}"]
        return []
    inline = [t for m in MATH.findall(msgstr) for t in FORMULA_TEXT.findall(m)
              if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", t)]
    if inline and HAN.search(msgstr) and not excused(rules, page, msgid, "rule", "formula text"):
        return [f"formula text: English words in an inline formula: write them in Chinese, e.g. \\text{{批大小}} for "
                f"\\text{{batch size}} (a symbol's label such as \\mu_{{\\text{{batch}}}} stays); found {inline[:3]}"]
    if not HAN.search(msgstr):
        return []
    text, out = _style_text(msgstr), []
    for name, (rx, advice) in STYLE_RULES.items():
        if rx.search(text) and not report_only(name, page) and not excused(rules, page, msgid, "rule", name):
            out.append(_style_finding(name, rx, advice, text))
    wording = exercise_instructions(msgid)
    if wording and not msgstr.startswith(wording) and not excused(rules, page, msgid, "rule", "exercise instructions"):
        out.append(f"exercise instructions: not the one wording; write {wording!r} (then any sentences of this page)")
    return out


def _style_finding(name: str, rx: re.Pattern, advice: str, text: str) -> str:
    shown = ", ".join(repr(text[max(0, m.start() - 6):m.end() + 6].replace(HOLE, "…"))
                      for m in list(rx.finditer(text))[:3])
    return f"{name}: {advice}; found {shown}"


def figure_number_problems(msgstr: str) -> list[str]:
    """STYLE.md §5 in a Chinese figure string (msgctxt "figure"): a format field with a thousands separator
    ({n:,} shows 25,472) and a Latin unit after a number or field ({x / 1e3:.0f}k, 63.0 M) instead of 万 / 亿. Their
    fields are the English string's, so the fix starts in the English notebook (a field without `,`; a count
    computed in units of 1e4)."""
    if not HAN.search(msgstr):
        return []
    found = [f for f in format_fields(msgstr) if re.search(r"[,_]", f.rsplit(":", 1)[-1]) and ":" in f
             and not re.search(r"[\]\)'\"]", f.rsplit(":", 1)[-1])]
    found += [m.group(0) for m in re.finditer(r"(?:\}|\d)[ ]?[kKMB](?![\w-])", MODEL_NAME.sub(HOLE, msgstr))]
    if not found:
        return []
    return [f"figure numbers: a thousands separator or a k / M / B unit in a Chinese figure string: write 25472 "
            f"(a field without `,`) and 万 / 亿 (约 {{n / 1e4:.0f}} 万个词元); found {found[:3]}"]


def unit_problems(page: str, messages: list[tuple[str, str]], rules: dict | None = None) -> list[str]:
    """A page that writes counts both with 亿/万 and with M/B (``messages``: its (msgid, msgstr) pairs)."""
    rules = load_rules() if rules is None else rules
    zh, en = [], []
    for msgid, msgstr in messages:
        if is_display_math(msgid) or excused(rules, page, msgid, "rule", "units"):
            continue
        text = MODEL_NAME.sub(HOLE, _style_text(msgstr))
        zh += UNITS_ZH.findall(text)
        en += UNITS_EN.findall(text)
    if zh and en:
        return [f"units: counts written both as {', '.join(dict.fromkeys(zh))} and as {', '.join(dict.fromkeys(en))}"
                f" on one page: use 亿/万 in prose throughout (1.1 亿, 1.24 亿)"]
    return []


def fix_style(msgid: str, msgstr: str) -> str:
    """``msgstr`` with STYLE.md's mechanical fixes: a bold or italic lead-in's full-width punctuation moved
    outside the markers with the space after it dropped (**常见误解。** 后面 -> **常见误解**。后面), other spaces
    around full-width punctuation dropped, 15 % -> 15%, ASCII "…" -> “…”, ”␣{cite} -> ”{cite}, an exercise
    title's dash -> 练习 N.M：(its own colon -> ——), and the exercises' one instruction wording. Code spans,
    formulas, roles, tags and link targets are left alone, and a fix that would change what the message renders
    or its code, math or links is not made. Terms and units need a translator."""
    def prose(text: str) -> str:  # the fixes of the text outside code, math, roles, tags and link targets
        text = re.sub(r"([。：？！])\*\*[ \u00a0]", r"**\1", text)
        text = re.sub(r"([。？])\*(?!\*)[ \u00a0]", r"*\1", text)
        text = re.sub(r"(\d)[ \u00a0]*[%％]|(\d)％", lambda m: (m.group(1) or m.group(2)) + "%", text)
        if text.count('"') % 2 == 0:  # ASCII quotes -> “…”, which take no space on either side
            text = re.sub(r'[ \u00a0]*"([^"\n]*)"[ \u00a0]*', r"“\1”", text)
        text = re.sub(f"([{_CLOSE}])([*_]*)[ \u00a0]+(?=\\S)", r"\1\2", text)
        return re.sub(f"(?<=\\S)[ \u00a0]+([*_]*[{_STOPS}])", r"\1", text)

    protected = re.compile("|".join(f"(?:{rx.pattern})" for rx in (ROLE, CODE, MATH, TAG))
                           + r"|\]\([^)\s]+\)|https?://\S+")
    pieces, at = [], 0
    for m in protected.finditer(msgstr):
        pieces += [prose(msgstr[at:m.start()]), m.group(0)]
        at = m.end()
    out = "".join(pieces + [prose(msgstr[at:])])
    out = re.sub(r"” (\{[a-z:]+\}`)", r"”\1", out)  # a citation right after a closing quote

    def title(m: re.Match) -> str:
        head, rest = m.group(1), m.group(2)
        return f"**练习 {head}：" + rest.replace("：", "——", 1)
    out = re.sub(r"\*\*练习 ([0-9A-Z]+\.\d+)\s*[—–-]+\s*([^*]*)", title, out)
    if re.match(r"\*\*Exercise \S+ [—–-] Bug hunt", msgid):  # one name for the bug hunts: 找 bug
        out = re.sub(r"(\*\*练习 [0-9A-Z]+\.\d+：)(?:找错|排错|捉虫)——", r"\1找 bug——", out)
    wording = exercise_instructions(msgid)
    if wording and not out.startswith(wording) and "。" in out:
        out = wording + out.split("。", 1)[1]
    if out != msgstr and set(message_problems(msgid, out)) - set(message_problems(msgid, msgstr)):
        return msgstr
    return out


def fix_catalogs(catalogs: Path = CATALOGS, pages: list[str] | None = None) -> dict[str, int]:
    """Apply ``fix_style`` to every translated message of ``pages`` (default: every catalog); {page: messages
    changed}. Run ``check`` afterwards: what remains needs a translator."""
    import polib

    changed = {}
    for po_path in sorted(catalogs.rglob("*.po")):
        page = str(po_path.relative_to(catalogs).with_suffix(""))
        if pages is not None and page not in pages:
            continue
        po, n = polib.pofile(str(po_path), wrapwidth=0), 0
        for e in po:
            if e.obsolete or not e.msgstr or is_display_math(e.msgid):
                continue
            new = fix_style(e.msgid, e.msgstr)
            if new != e.msgstr:
                e.msgstr, n = new, n + 1
        if n:
            po.save(str(po_path))
            changed[page] = n
    return changed
