"""Where the Chinese edition's sources, catalogs and generated notebooks live."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LANGUAGE = "zh_CN"
LOCALES = ROOT / "locales"
CATALOGS = LOCALES / LANGUAGE / "LC_MESSAGES"  # the prose: one catalog per page, as Sphinx reads them
CODE_CATALOGS = LOCALES / LANGUAGE / "code"    # the code cells' comments and figure strings, one per notebook
TERMINOLOGY = LOCALES / LANGUAGE / "terminology.yml"
GLOSSARY = ROOT / "book" / "glossary.md"
POT = ROOT / "_build" / "gettext"              # the English book's messages, extracted
ZH_NOTEBOOKS = ROOT / "notebooks" / "zh"       # generated from the English notebooks and the catalogs
