"""The landing page's map in each edition's language, drawn by the package's architecture_map."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .paths import LANGUAGE, ROOT

# -- the landing page's map, in each edition's language ------------------------------------------------------
# book/intro.md shows book/architecture_map.svg; Sphinx's figure_language_filename ("{root}.{language}{ext}") takes
# book/architecture_map.zh_CN.svg instead in the Chinese edition. Both are drawn by the package's
# transformer_lite.book.architecture_map (chapter 0's linked map is the same drawing), in English and in Chinese: its
# words are messages of the package's catalog (tr), so no file holds a hand-made Chinese copy. Generated files, like
# notebooks/zh/: `notebooks` writes them, and tests/test_architecture_map.py fails when they differ.

LANDING_MAPS = {"en": ROOT / "book" / "architecture_map.svg", "zh": ROOT / "book" / f"architecture_map.{LANGUAGE}.svg"}


def landing_maps() -> dict[Path, str]:
    """{file: its text} of the landing page's map in each language, drawn by the checkout's package (in a child
    Python started in the checkout: the venv's installed copy may be older than the sources)."""
    import json

    code = ("import json, sys\nfrom transformer_lite.book import architecture_map, i18n\n"
            f"json.dump({{lang: (i18n.set_language(lang), architecture_map.landing_page_svg())[1] "
            f"for lang in {sorted(LANDING_MAPS)!r}}}, sys.stdout)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return {LANDING_MAPS[lang]: text for lang, text in json.loads(proc.stdout).items()}


def write_landing_maps() -> list[Path]:
    written = []
    for path, text in landing_maps().items():
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
