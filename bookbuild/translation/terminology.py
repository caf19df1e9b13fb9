"""The glossary's terms and terminology.yml: the Chinese each term must have, the forms it must not."""
from __future__ import annotations

import re
from pathlib import Path

from .messages import is_display_math, prose_text
from .paths import CATALOGS, GLOSSARY, TERMINOLOGY

# -- terminology: the glossary's Chinese terms, wherever the English term appears ---------------------------

def glossary_terms() -> list[tuple[str, list[str], list[str]]]:
    """The glossary's table as ``(term, English forms, Chinese forms)``: "causal mask (look-ahead mask)" gives
    both English names; "因果掩码（前瞻掩码）" both Chinese ones."""
    terms = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| \*\*(.+?)\*\* \| (.+?) \|", line)
        if m:
            en, zh = m.groups()
            ens = [re.sub(r"\s*\(.*?\)", "", en).strip()] + [x.strip() for x in re.findall(r"\((.*?)\)", en)]
            zhs = [re.sub(r"（.*?）|\(.*?\)", "", zh).strip()] + [x.strip() for x in re.findall(r"（(.*?)）", zh)]
            terms.append((en, [e for e in ens if e], [z for z in zhs if z]))
    return terms


def load_rules(rules: Path = TERMINOLOGY) -> dict:
    """terminology.yml: ``aliases``, ``forbidden`` (Chinese forms never used for a term) and ``exceptions``."""
    import yaml

    return (yaml.safe_load(rules.read_text(encoding="utf-8")) if rules.exists() else None) or {}


def excused(rules: dict, page: str, msgid: str, kind: str, name: str) -> bool:
    """Whether terminology.yml's ``exceptions`` excuse one message of ``page`` from one check: ``kind`` is "term"
    (a glossary or forbidden term) or "rule" (one of RULE_NAMES); the entry names the start of the English."""
    return any(x.get("page") == page and x.get(kind) == name and msgid.startswith(x.get("english", "\0"))
               for x in rules.get("exceptions") or [])


def forbidden_problems(page: str, msgid: str, msgstr: str, rules: dict) -> list[str]:
    """The Chinese forms STYLE.md rules out for a term (terminology.yml ``forbidden``): 栈 for "stack" (unless the
    English speaks of the data structure), 屏蔽 / 遮挡 / 掩蔽 for the verb "mask", 软件包 / 代码包 / 本包 for
    "package". Words that merely contain a form (基本包括, 笔记本包含) are listed under ``not_in``."""
    out = []
    for rule in rules.get("forbidden") or []:
        text = msgstr
        for word in rule.get("not_in") or []:
            text = text.replace(word, " ")
        found = [f for f in rule["never"] if f in text]
        if not found or any(u.lower() in msgid.lower() for u in rule.get("unless_english") or []):
            continue
        if excused(rules, page, msgid, "term", rule["term"]):
            continue
        out.append(f"{page}: {rule['term']!r} is {rule['use']}, never {' / '.join(found)}: "
                   f"{msgid[:60]!r} -> {msgstr[:60]!r}")
    return out


def terminology_problems(catalogs: Path = CATALOGS, rules: Path = TERMINOLOGY) -> list[str]:
    """Every message whose English uses a glossary term and whose Chinese has none of that term's Chinese forms,
    and every message that uses a form terminology.yml forbids (``forbidden_problems``; the glossary included).

    ``rules`` (YAML) lists, per term, the other forms that count (``aliases``: e.g. 注意力 inside 自注意力), the
    forms never used (``forbidden``) and the messages excused, each with its reason (``exceptions``: page, the
    start of the English, term)."""
    import polib

    config = load_rules(rules)
    aliases = config.get("aliases") or {}
    excused = {(x["page"], x["term"], x["english"]) for x in config.get("exceptions") or [] if "term" in x}
    terms = glossary_terms()
    known = {t for t, _, _ in terms}
    problems = [f"{rules.name}: {t!r} is not a glossary term" for t in aliases if t not in known]
    for po_path in sorted(catalogs.rglob("*.po")):
        page = str(po_path.relative_to(catalogs).with_suffix(""))
        for e in polib.pofile(str(po_path)):
            if e.obsolete or not e.msgstr:
                continue
            problems += forbidden_problems(page, e.msgid, e.msgstr, config)
            if page == "book/glossary":  # the glossary itself names every term in both languages
                continue
            if is_display_math(e.msgid):  # a formula is its own translation
                continue
            english = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|\{[a-z:]+\}`[^`]*`", " ", e.msgid)
            for term, ens, zhs in terms:
                found = [m.group(0) for x in ens
                         for m in re.finditer(r"(?<![\w-])" + re.escape(x) + r"(?:s|es)?(?![\w-])", english, re.I)]
                if not found:
                    continue
                if any(z in e.msgstr for z in zhs + list(aliases.get(term) or [])):
                    continue
                if all(f in e.msgstr for f in found):  # kept verbatim: a title, a name, a label the code prints
                    continue
                if any((page, term) == (p, t) and e.msgid.startswith(x) for p, t, x in excused):
                    continue
                problems.append(f"{page}: {term!r} should be {' / '.join(zhs)}: {e.msgid[:80]!r} -> {e.msgstr[:60]!r}")
    return problems


def taught_in() -> dict[str, set[str]]:
    """{glossary term: the stems of the chapters its "taught in" cell links to}, e.g. "label smoothing" ->
    {"10_training"}."""
    out = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"\| \*\*(.+?)\*\* \|.*\|([^|]*)\|\s*$", line):
            out[m.group(1)] = set(re.findall(r"notebooks/([\w-]+)\.ipynb", m.group(2)))
    return out


# A bold phrase of the English taken as a term the chapter introduces (**intervention**, **near miss**): lower-case
# words, one of 8 letters or more, or two to four that do not start as emphasis does (**very first step**)
BOLD_TERM = re.compile(r"(?:[a-z][a-z-]{7,}|[a-z][a-z-]+(?: [a-z][a-z-]+){1,3})")
EMPHASIS = {"very", "not", "only", "all", "every", "no", "one", "two", "the", "a", "an", "your", "half", "small",
            "too", "more", "less", "same", "each", "any", "without", "with", "both", "never", "always", "much"}


def first_use_problems(page: str, messages: list[tuple[str, str]], rules: dict | None = None) -> list[str]:
    """STYLE.md §2 on one chapter (``messages``: its (msgid, msgstr) pairs): a term the chapter introduces whose
    English its Chinese never gives, as **标签平滑**（label smoothing） does. Where the gloss stands is left to
    the translator (a title or a list of what the chapter teaches may come first); that it is missing is
    reported. The terms a chapter introduces: the glossary's terms that link to it in their "taught in" column,
    and the phrases its English sets in bold (BOLD_TERM). A term whose Chinese carries its English already
    (KV 缓存) or an abbreviation terminology.yml accepts (RNN, LayerNorm) counts as given."""
    rules = load_rules() if rules is None else rules
    aliases, stem = rules.get("aliases") or {}, page.rsplit("/", 1)[-1]
    taught = taught_in()
    terms = [(en, ens, zhs + [a for a in aliases.get(en) or [] if re.search(r"[A-Za-z]{2}", a)])
             for en, ens, zhs in glossary_terms() if stem in taught.get(en, ())]
    known = {x.lower() for _, ens, _ in glossary_terms() for x in ens}
    given, told, out = " ".join(prose_text(msgstr) for _, msgstr in messages).lower(), set(), []
    for msgid, _ in messages:
        if is_display_math(msgid):
            continue
        english = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|\{[a-z:]+\}`[^`]*`", " ", msgid)
        bold = [(b, [b], []) for b in re.findall(r"\*\*([^*]+)\*\*", english)
                if BOLD_TERM.fullmatch(b) and b.split()[0] not in EMPHASIS and b.lower() not in known]
        for term, ens, zhs in terms + bold:
            if term in told or not any(re.search(r"(?<![\w-])" + re.escape(x) + r"(?:s|es)?(?![\w-])", english, re.I)
                                       for x in ens):
                continue
            told.add(term)
            if any(x.lower() in given for x in ens) or any(re.search(r"[A-Za-z]{2}", z) and z.lower() in given
                                                          for z in zhs):
                continue
            if excused(rules, page, msgid, "rule", "first-use English"):
                continue
            shown = ens[0] if not ens[0][:1].isupper() or ens[0][1:2].isupper() else ens[0].lower()
            out.append(f"first-use English: the chapter never gives the English of {term!r}: write 中文（{shown}）at "
                       f"its first use, here: {msgid[:60]!r}")
    return out
