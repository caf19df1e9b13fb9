"""CITATION.cff: valid Citation File Format 1.2.0 (cffconvert, offline), and consistent with the project.

cffconvert 2.0.0 validates against the CFF 1.2.0 JSON schema it ships; it is installed without its declared
dependencies (requirements-nodeps.in: it pins jsonschema<4, which JupyterLab's jupyter-events cannot run
with) and runs with the jsonschema 4 the project has; its other dependencies are in requirements.in.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

cffconvert = pytest.importorskip("cffconvert")  # a test dependency (requirements-nodeps.in)

ROOT = Path(__file__).resolve().parents[1]
CFF = ROOT / "CITATION.cff"


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
    for broken in (re.sub(r"(?m)^license: .*$", "license: NOT-A-LICENCE", text, count=1),
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
    # the address lives in _config.yml; the citation must follow it (`make repository` rewrites both)
    assert cff["repository-code"] == config["repository"]["url"] == cff["preferred-citation"]["repository-code"], \
        "CITATION.cff's repository-code differs from _config.yml's repository.url: change it in CITATION.cff"
    assert cff["url"] == config["html"]["baseurl"] == cff["preferred-citation"]["url"], \
        "CITATION.cff's url differs from _config.yml's html.baseurl (the site): change it in CITATION.cff"
    version = re.search(r'(?m)^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert str(cff["version"]) == version.group(1)
    assert cff["preferred-citation"]["type"] == "book"


# -- the licence: which licence covers what, with no choice offered ------------------------------------------------

def _schema() -> dict:
    return json.loads((Path(cffconvert.__file__).parent / "schemas" / "1.2.0" / "schema.json").read_text())


def test_the_schema_still_reads_a_list_of_licences_as_a_choice():
    """Why CITATION.cff names one licence: CFF 1.2.0 reads a list as "any one of these", and takes no SPDX
    expression. If a later schema says otherwise, CITATION.cff's comment and license are to be revisited."""
    schema = _schema()
    as_list = [alt for alt in schema["definitions"]["license"]["oneOf"] if alt.get("type") == "array"]
    assert len(as_list) == 1 and "OR" in as_list[0]["$comment"], as_list
    accepted = schema["definitions"]["license-enum"]["enum"]
    assert "MIT" in accepted and "CC-BY-SA-4.0" in accepted and "MIT AND CC-BY-SA-4.0" not in accepted


def test_the_citation_names_one_licence_and_says_which_part_is_mit():
    cff = _cff()
    # one identifier, the one the whole work may be shared under; a list would read as a choice (above)
    assert cff["license"] == "CC-BY-SA-4.0" == cff["preferred-citation"]["license"]
    # the code's own licence is stated, so a reader of the citation alone learns it too
    for text in (cff["message"], cff["abstract"]):
        assert re.search(r"\bcode\b[^.;]*\b(is|are) MIT\b", text) and "CC BY-SA 4.0" in text, text
    # the data the real-sentence translator derives from is cited with its licence
    hsk = [r for r in cff["references"] if r["title"] == "hsk-sentences-audio"]
    assert len(hsk) == 1 and hsk[0]["license"] == "CC-BY-SA-4.0" and str(hsk[0]["version"]) == "1.0.0"
    pinned = re.search(r'"hsk-sentences-audio==([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pinned and pinned.group(1) == str(hsk[0]["version"]), "cite the version the book extra pins"


def test_a_list_of_licences_would_still_validate():
    """The schema cannot catch a list of licences (it is valid CFF, read as a choice): the test above must."""
    text = CFF.read_text(encoding="utf-8").replace("license: CC-BY-SA-4.0\n",
                                                   "license:\n  - MIT\n  - CC-BY-SA-4.0\n", 1)
    assert text != CFF.read_text(encoding="utf-8")
    cffconvert.Citation(text).validate()
