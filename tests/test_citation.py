"""CITATION.cff: valid Citation File Format 1.2.0 (cffconvert, offline), and consistent with the project.

cffconvert 2.0.0 validates against the CFF 1.2.0 JSON schema it ships; it is installed without its declared
dependencies (requirements-nodeps.txt: it pins jsonschema<4, which JupyterLab's jupyter-events cannot run
with) and runs with the jsonschema 4 the project has; its other dependencies are in requirements.txt.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

cffconvert = pytest.importorskip("cffconvert")  # a test dependency (requirements-nodeps.txt)

ROOT = Path(__file__).resolve().parents[1]
CFF = ROOT / "CITATION.cff"
sys.path.insert(0, str(ROOT / "tools"))
from set_repository_url import repository_url  # noqa: E402


def _cff() -> dict:
    return yaml.safe_load(CFF.read_text(encoding="utf-8"))


def test_citation_cff_is_valid():
    citation = cffconvert.Citation(CFF.read_text(encoding="utf-8"))
    assert citation.cffversion == "1.2.0"
    citation.validate()  # raises jsonschema's ValidationError, naming the key
    assert "Transformer, Step by Step" in citation.as_bibtex("book")


def test_the_validation_is_not_vacuous():
    from jsonschema.exceptions import ValidationError

    text = CFF.read_text(encoding="utf-8")
    for broken in (re.sub(r"(?m)^license:\n(  - .*\n)+", "license: NOT-A-LICENCE\n", text),
                   text.replace("repository-code: \"https://", "repository-code: \"not a url ", 1),
                   re.sub(r"(?m)^authors:\n  - name: .*\n", "", text, count=1)):
        assert broken != text
        with pytest.raises(ValidationError):
            cffconvert.Citation(broken).validate()


def test_the_citation_agrees_with_the_project():
    cff = _cff()
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert cff["title"] == config["title"] == cff["preferred-citation"]["title"]
    authors = [{"name": config["author"]}]
    assert cff["authors"] == authors == cff["preferred-citation"]["authors"]
    assert str(cff["preferred-citation"]["year"]) == str(config["copyright"])
    # the address lives in _config.yml (README, "Publishing"); the citation must follow it
    assert cff["repository-code"] == repository_url() == cff["preferred-citation"]["repository-code"], \
        "CITATION.cff's repository-code differs from _config.yml's repository.url: change it in CITATION.cff"
    version = re.search(r'(?m)^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert str(cff["version"]) == version.group(1)
    # the README's licences: code MIT, text and figures CC BY-SA 4.0
    assert cff["license"] == ["MIT", "CC-BY-SA-4.0"] == cff["preferred-citation"]["license"]
    assert cff["preferred-citation"]["type"] == "book"
