#!/usr/bin/env python3
"""The Chinese edition's catalogs: the English book's messages, and their translations.

    python -m bookbuild.i18n extract
        # the English book's messages -> _build/gettext/**/*.pot (about 10 s)
    python -m bookbuild.i18n update
        # extract, then bring locales/zh_CN/LC_MESSAGES/**/*.po up to date (sphinx-intl):
        # a changed paragraph turns fuzzy, a new one untranslated; then the code
        # catalogs locales/zh_CN/code/notebooks/*.po (as code-update)
    python -m bookbuild.i18n code-update
        # the code catalogs alone (no Sphinx run: about 2 s)
    python -m bookbuild.i18n check
        # extract, then list every message, prose or code, that is missing, untranslated,
        # fuzzy, malformed, against locales/zh_CN/STYLE.md's punctuation and units, or not
        # in terminology.yml's terms (exit 1 if any); then, as "report: ...", what the
        # rules of REPORT_ONLY find on the pages where they do not fail yet
    python -m bookbuild.i18n fix [PAGE...]
        # STYLE.md's mechanical fixes in the catalogs (fix_style); check lists the rest
    python -m bookbuild.i18n notebooks
        # write notebooks/zh/*.ipynb: the notebooks with their markdown in Chinese, their
        # code's comments and figure strings in Chinese, `setup(..., language="zh")`
        # and the solutions' toggles in Chinese, for Jupyter and Colab; and the landing
        # page's map in both languages (book/architecture_map.svg, .zh_CN.svg)
    python -m bookbuild.i18n anchors
        # before each heading of notebooks/*.ipynb that a section link targets, the line
        # <div id="slug"></div> that JupyterLab scrolls to (drop the stale ones); run it
        # after changing a heading or a link, then `notebooks`
    python -m bookbuild.i18n package
        # the package's own catalog (transformer_lite/book/locale/zh_CN.po: the checks'
        # feedback, figure labels, controls; translation/package_catalog.py): add new
        # messages, drop stale ones, list what is untranslated (exit 1 if any)

Sphinx's gettext builder cuts every prose paragraph of the notebooks' markdown cells and of book/*.md
into one message. Code cells are not Sphinx messages: their comments and the strings their figures show
(titles, axis labels, legends, alt text) are messages of a second set of catalogs, one per notebook,
``locales/zh_CN/code/notebooks/<stem>.po`` with ``msgctxt "comment"`` / ``msgctxt "figure"``, extracted by
tokenize and the AST (translation/code_cells.py says what is and is not a message), merged by ``update`` and put
back, token for token, into ``notebooks/zh/`` by ``notebooks``: names, data strings, printed words and numbers
stay exactly the English notebook's. The Chinese notebooks call ``setup(seed=..., language="zh")``, which
switches the package's own strings (checks' feedback, plotting helpers, controls) to Chinese.
The notebooks are not executed for this. tests/test_i18n.py runs ``check``: a change to the English
text or to a comment must update the Chinese in the same commit.

This file is the command only; the work is done by bookbuild/translation/, one module per concern.
"""
from __future__ import annotations

import argparse
import sys

from bookbuild.translation import (
    anchors,
    checks,
    code_cells,
    landing_maps,
    notebooks,
    package_catalog,
    sphinx_catalogs,
    style,
)
from bookbuild.translation.paths import CODE_CATALOGS, ROOT, ZH_NOTEBOOKS
from bookbuild.translation.terminology import terminology_problems

COMMANDS = ("extract", "update", "code-update", "check", "notebooks", "package", "fix", "anchors")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=COMMANDS)
    ap.add_argument("pages", nargs="*", help="fix: the pages to fix, e.g. notebooks/07_masking (default: all)")
    args = ap.parse_args(argv)
    if args.command == "package":
        added, removed = package_catalog.update()
        problems = package_catalog.problems()
        for p in problems:
            print(p)
        print(f"{package_catalog.CATALOG.relative_to(ROOT)}: {added} added, {removed} removed, "
              f"{len(problems)} problem(s)")
        return 1 if problems else 0
    if args.command == "code-update":
        print(f"updated {len(code_cells.code_update())} code catalogs in {CODE_CATALOGS.relative_to(ROOT)}/notebooks/")
        return 0
    if args.command == "fix":
        for page, n in style.fix_catalogs(pages=args.pages or None).items():
            print(f"{page}: {n} message(s) fixed")
        return 0
    if args.command == "anchors":
        changed = anchors.write_anchors()
        print(f"wrote the section anchors of {len(changed)} notebook(s): {', '.join(p.name for p in changed)}")
        return 0
    if args.command == "notebooks":
        print(f"wrote {len(notebooks.write_notebooks())} notebooks into {ZH_NOTEBOOKS.relative_to(ROOT)}/")
        written = landing_maps.write_landing_maps()
        print(f"wrote the landing page's map: {', '.join(str(p.relative_to(ROOT)) for p in written)}")
        return 0
    pot = sphinx_catalogs.extract()
    if args.command == "update":
        sphinx_catalogs.update(pot)
    if args.command == "check":
        problems = checks.check(pot) + terminology_problems() + code_cells.code_check()
        found = checks.reports(pot)
        for p in problems:
            print(p)
        for r in found:
            print(f"report: {r}")
        print(f"{len(problems)} problem(s) in {len(sphinx_catalogs.pages(pot))} pages; {len(found)} report(s) of rules "
              f"that do not fail the check yet ({', '.join(style.REPORT_ONLY)}, on some pages: REPORT_ONLY in "
              "bookbuild/translation/style.py)")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
