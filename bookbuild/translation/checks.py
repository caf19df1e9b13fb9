"""The check of every catalog that `bookbuild/i18n.py check` prints: prose, terms, style and code, then the reports."""
from __future__ import annotations

from pathlib import Path

from .code_cells import code_catalog_path, code_style_problems
from .messages import kept_in_english, message_problems
from .paths import CATALOGS, CODE_CATALOGS, POT, ROOT, TERMINOLOGY
from .sphinx_catalogs import pages
from .style import report_only, style_problems, unit_problems
from .terminology import first_use_problems, load_rules


def check(pot_dir: Path = POT, catalogs: Path = CATALOGS, rules: Path | None = None) -> list[str]:
    """Every message of every page translated, not fuzzy, well formed and in STYLE.md's punctuation and units
    (style_problems, unit_problems; ``rules``: terminology.yml, for its exceptions); each problem names page and
    paragraph."""
    import polib

    problems, config = [], load_rules(rules or TERMINOLOGY)
    for page, pot in pages(pot_dir).items():
        po_path = catalogs / f"{page}.po"
        if not po_path.exists():
            problems.append(f"{page}: no catalog {po_path} (run `python -m bookbuild.i18n update`)")
            continue
        po = {e.msgid: e for e in polib.pofile(str(po_path)) if not e.obsolete}
        done = []
        for entry in polib.pofile(str(pot)):
            e = po.get(entry.msgid)
            found = ["missing: a new or changed English paragraph"] if e is None else \
                message_problems(e.msgid, e.msgstr, "fuzzy" in e.flags, kept_in_english(page, e.msgid))
            if e is not None and e.msgstr and "fuzzy" not in e.flags:
                found += style_problems(page, e.msgid, e.msgstr, config)
                done.append((e.msgid, e.msgstr))
            problems += [f"{page}: {p}: {entry.msgid[:100]!r}" for p in found]
        problems += [f"{page}: {p}" for p in unit_problems(page, done, config)]
    return problems


def reports(pot_dir: Path = POT, catalogs: Path = CATALOGS, code_catalogs: Path | None = None) -> list[str]:
    """What ``check`` prints without failing (REPORT_ONLY): the findings of the rules that only report on a page,
    and (first_use_problems) a chapter's terms whose English the Chinese does not give at their first use."""
    import polib

    out, rules = [], load_rules()
    for page, pot in pages(pot_dir).items():
        po_path = catalogs / f"{page}.po"
        if not po_path.exists():
            continue
        po = {e.msgid: e for e in polib.pofile(str(po_path)) if not e.obsolete and e.msgstr and "fuzzy" not in e.flags}
        done = [(e.msgid, e.msgstr) for e in (po.get(x.msgid) for x in polib.pofile(str(pot))) if e is not None]
        found = [p for msgid, msgstr in done for p in style_problems(page, msgid, msgstr, rules, report=True)]
        if report_only("first-use English", page):
            found += first_use_problems(page, done, rules)
        out += [f"{page}: {p}" for p in found]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        path, page = code_catalog_path(notebook, code_catalogs or CODE_CATALOGS), f"code/{notebook.stem}"
        if path.exists():
            out += [f"{page} [{e.msgctxt}]: {p}: {e.msgid[:100]!r}" for e in polib.pofile(str(path))
                    if not e.obsolete and e.msgstr and "fuzzy" not in e.flags
                    for p in code_style_problems(page, e.msgid, e.msgstr, rules, report=True, context=e.msgctxt)]
    return out
