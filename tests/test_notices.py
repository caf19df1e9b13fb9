"""The licences page (book/notices.md, in the site and the PDF) names what the site serves, at the versions
installed: a dependency upgraded without updating the notice fails here."""
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTICE = (ROOT / "book" / "notices.md").read_text(encoding="utf-8")

NPM = {"mathjax": "MathJax", "requirejs": "require.js", "d3": "d3", "jquery": "jQuery",
       "onnxruntime-web": "ONNX Runtime Web"}
PYPI = {"hsk-sentences-audio": "hsk-sentences-audio", "mplfonts": "mplfonts", "bertviz": "bertviz",
        "sphinx-book-theme": "sphinx-book-theme", "pydata-sphinx-theme": "pydata-sphinx-theme", "sphinx": "Sphinx"}


@pytest.mark.parametrize("package,name", NPM.items())
def test_npm_assets_named_at_their_installed_version(package, name):
    installed = json.loads((ROOT / "node_modules" / package / "package.json").read_text())["version"]
    assert re.search(rf"{re.escape(name)} {re.escape(installed)}\b", NOTICE), \
        f"{name} {installed} not in book/notices.md"


@pytest.mark.parametrize("package,name", PYPI.items())
def test_python_packages_named_at_their_installed_version(package, name):
    installed = version(package)
    assert f"{name} {installed}" in NOTICE or f"`{name}` {installed}" in NOTICE, \
        f"{name} {installed} not in book/notices.md"


def test_the_notice_is_in_the_book_and_names_both_licences():
    assert "- file: book/notices" in (ROOT / "_toc.yml").read_text()
    assert "MIT" in NOTICE and "CC BY-SA 4.0" in NOTICE
    for licence in ("Apache-2.0", "SIL OFL 1.1", "BSD-3-Clause"):
        assert licence in NOTICE
