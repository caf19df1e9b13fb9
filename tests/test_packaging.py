"""The package as PyPI will take it, and the files a reader meets first: pyproject.toml, README.md, CHANGELOG.md.

- pyproject.toml: a distribution name of our own (``transformer-lite`` is another project on PyPI), the Python
  that torch's floor needs, a licence expression that covers what the wheel ships (the code and the grammar
  translator are MIT; the real-sentence translator's weights, derived from the HSK sentences, CC BY-SA 4.0) with
  both licence texts, and project URLs that are _config.yml's addresses.
- README.md is also the PyPI page, where a relative link leads nowhere: every link is absolute, and every link
  into the repository, the site or Colab names a file that exists.
- One version number: CITATION.cff's and CHANGELOG.md's newest release follow pyproject.toml's, and the release's
  date is the same in both (or absent from both while it is unreleased).

The slow test builds the sdist and the wheel as ``make release`` does and runs ``twine check --strict``; it needs
``build`` and ``twine`` (skipped where they are not installed).
"""
from __future__ import annotations

import contextlib
import email.parser
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10, the oldest the package supports, has no tomllib
    import tomli as tomllib
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
REPO = CONFIG["repository"]["url"].rstrip("/")      # https://github.com/OWNER/NAME
SITE = CONFIG["html"]["baseurl"]                     # https://OWNER.github.io/NAME/
SLUG = REPO.removeprefix("https://github.com/")      # OWNER/NAME
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
CFF = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))

SPDX_MIT, SPDX_CC = "MIT", "CC-BY-SA-4.0"


# -- pyproject.toml --------------------------------------------------------------------------------------------

def test_the_distribution_has_a_name_of_its_own_and_keeps_the_import_name():
    name = canonicalize_name(PROJECT["name"])
    assert name == "transformer-step-by-step"
    # transformer_lite normalises to transformer-lite, which is another project on PyPI
    assert name != canonicalize_name("transformer_lite")
    assert "transformer_lite" in SETUPTOOLS["packages"]
    assert PROJECT["readme"] == "README.md"


def test_requires_python_is_the_oldest_python_torchs_floor_installs_on():
    spec = SpecifierSet(PROJECT["requires-python"])
    assert "3.10" in spec and "3.9" not in spec  # torch>=2.10 has no wheel for 3.9 (pip there finds 2.8 at most)
    listed = sorted(Version(c.rsplit(" :: ", 1)[1]) for c in PROJECT["classifiers"]
                    if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert listed and listed[0] == Version("3.10"), "the classifiers start at requires-python's floor"
    assert all(str(v) in spec for v in listed)
    assert [v.minor for v in listed] == list(range(listed[0].minor, listed[-1].minor + 1)), "no version skipped"


def test_the_torch_floor_lets_a_colab_image_keep_its_torch():
    torch = [Requirement(r) for r in PROJECT["dependencies"] if Requirement(r).name == "torch"]
    assert len(torch) == 1
    floor = [s for s in torch[0].specifier if s.operator == ">="]
    assert len(floor) == 1, "torch needs a floor that a test runs (make test-oldest)"
    assert "2.10.0" in torch[0].specifier  # Python 3.12 + torch 2.10: a Colab image of the last year
    assert {Requirement(r).name for r in PROJECT["dependencies"]} == {"torch", "numpy", "tqdm"}  # the core's imports
    assert "book" in PROJECT["optional-dependencies"]


def test_the_licence_expression_covers_both_licences_at_once():
    from packaging.licenses import canonicalize_license_expression

    expression = canonicalize_license_expression(PROJECT["license"])
    assert re.split(r"\s+AND\s+", expression) and set(re.split(r"\s+AND\s+", expression)) == {SPDX_MIT, SPDX_CC}, \
        f"both licences apply to the wheel at once (AND), got {expression!r}"
    # PEP 639: a licence expression replaces the licence classifiers (PyPI rejects both together)
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]


def test_every_licence_a_shipped_asset_declares_is_in_the_expression():
    expression = set(re.split(r"\s+AND\s+", PROJECT["license"]))
    import json

    declared = {}
    for report in sorted((ROOT / "transformer_lite" / "book" / "assets").glob("*.json")):
        licence = json.loads(report.read_text(encoding="utf-8")).get("weights_license")
        if licence:
            declared[report.name] = licence
    assert declared.get("real_translator.json") == SPDX_CC  # the HSK sentences' licence, carried by the weights
    assert set(declared.values()) <= expression, declared


def test_both_licence_texts_ship():
    files = PROJECT["license-files"]
    assert sorted(files) == ["LICENSE", "LICENSE-TEXT"]
    mit = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert mit.startswith("MIT License") and "Permission is hereby granted, free of charge" in mit
    cc = " ".join((ROOT / "LICENSE-TEXT").read_text(encoding="utf-8").split())
    assert cc.startswith("Attribution-ShareAlike 4.0 International")  # the legal code, not a summary of it
    assert "Creative Commons Attribution-ShareAlike 4.0 International Public License" in cc
    assert "Section 8 -- Interpretation." in cc


def test_the_project_urls_are_the_configured_addresses():
    urls = PROJECT["urls"]
    assert urls["Homepage"] == urls["Documentation"] == SITE
    assert urls["Source"] == REPO
    assert urls["Issues"] == f"{REPO}/issues"
    assert urls["Changelog"] == f"{REPO}/blob/main/CHANGELOG.md"
    assert (ROOT / "CHANGELOG.md").exists()


def test_every_classifier_is_one_pypi_knows():
    trove = pytest.importorskip("trove_classifiers")  # PyPI rejects an upload with an unknown classifier
    unknown = [c for c in PROJECT["classifiers"] if c not in trove.classifiers]
    assert not unknown
    for wanted in ("Intended Audience :: Education", "Topic :: Scientific/Engineering :: Artificial Intelligence",
                   "Operating System :: OS Independent"):
        assert wanted in PROJECT["classifiers"]


# -- one version number ------------------------------------------------------------------------------------------

VERSION = PROJECT["version"]
HEADING = re.compile(r"(?m)^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S+))?\s*$")


def test_the_citation_and_the_package_say_the_same_version():
    assert str(CFF["version"]) == VERSION
    init = (ROOT / "transformer_lite" / "__init__.py").read_text(encoding="utf-8")
    literal = re.search(r'(?m)^__version__ = "([^"]+)"', init)
    if literal:  # a version written in the package too must be this one (tl.__version__)
        assert literal.group(1) == VERSION


def _releases() -> list[tuple[str, str | None]]:
    return [(m["version"], m["date"]) for m in HEADING.finditer(CHANGELOG) if m["version"].lower() != "unreleased"]


def test_the_changelog_starts_at_this_version_and_agrees_with_the_citation_on_its_date():
    releases = _releases()
    assert releases, "CHANGELOG.md has no '## [X.Y.Z] - date' section"
    newest, date = releases[0]
    assert newest == VERSION, f"CHANGELOG.md's newest section is {newest}, pyproject.toml says {VERSION}"
    assert [Version(v) for v, _ in releases] == sorted((Version(v) for v, _ in releases), reverse=True)
    for version, when in releases:
        assert when == "Unreleased" or re.fullmatch(r"\d{4}-\d{2}-\d{2}", when or ""), \
            f"## [{version}] needs ' - YYYY-MM-DD' (or ' - Unreleased' before it is tagged), got {when!r}"
    if date == "Unreleased":
        assert "date-released" not in CFF, "CITATION.cff dates a release the changelog calls unreleased"
    else:
        assert str(CFF.get("date-released")) == date, "CITATION.cff's date-released differs from CHANGELOG.md's"
    ref = os.environ.get("GITHUB_REF", "")
    if ref.startswith("refs/tags/v"):  # the workflow's run on a release tag: the release must be dated by now
        assert ref == f"refs/tags/v{VERSION}" and date != "Unreleased", (ref, date)


def test_every_changelog_version_links_to_its_release():
    links = dict(re.findall(r"(?m)^\[([^\]]+)\]: (\S+)\s*$", CHANGELOG))
    for version, _ in _releases():
        assert links.get(version, "").startswith((f"{REPO}/releases/tag/v{version}", f"{REPO}/compare/")), \
            f"CHANGELOG.md: [{version}] has no link to {REPO}/releases/tag/v{version} (or a compare link)"
    assert "Keep a Changelog" in CHANGELOG and "keepachangelog.com/en/1.1.0" in CHANGELOG


# -- README.md: the reader's page, and PyPI's ------------------------------------------------------------------

def links(markdown: str) -> list[str]:
    """Every address a markdown file links to: inline links and images, reference definitions, autolinks, and the
    href/src of HTML tags."""
    found = re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", markdown)
    found += re.findall(r"(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", markdown)
    found += re.findall(r"<((?:https?|mailto):[^>\s]+)>", markdown)
    found += re.findall(r"""(?:href|src)\s*=\s*["']([^"']+)["']""", markdown)
    return found


def test_the_link_finder_finds_relative_links():
    sample = ('See [a](CONTRIBUTING.md) and ![b](book/logo.svg "logo"), <https://x.org/y>,\n'
              '<a href="notebooks/00.ipynb">d</a> <img src="_assets/x.png">\n'
              '[c]: LICENSE\n')
    assert sorted(links(sample)) == sorted(["CONTRIBUTING.md", "book/logo.svg", "https://x.org/y",
                                            "notebooks/00.ipynb", "_assets/x.png", "LICENSE"])


def test_every_readme_link_is_absolute():
    found = links(README)
    assert len(found) >= 20
    relative = [u for u in found if not re.match(r"^(https://|mailto:)", u)]
    assert not relative, f"PyPI shows README.md away from the repository; make these absolute: {relative}"


def _github_heading_ids(markdown: str) -> set[str]:
    ids = set()
    for title in re.findall(r"(?m)^#{1,6}\s+(.+?)\s*$", markdown):
        ids.add(re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-"))
    return ids


def test_every_readme_link_into_the_book_names_what_exists():
    checked = 0
    for url in links(README):
        url, _, anchor = url.partition("#")
        path = None
        if url.startswith(f"{REPO}/blob/main/"):
            path = url.removeprefix(f"{REPO}/blob/main/")
        elif url.startswith(f"https://colab.research.google.com/github/{SLUG}/blob/main/"):
            path = url.removeprefix(f"https://colab.research.google.com/github/{SLUG}/blob/main/")
        elif url.startswith(SITE) and url.endswith(".html"):
            stem = url.removeprefix(SITE).removesuffix(".html")
            sources = [ROOT / f"{stem}{ext}" for ext in (".ipynb", ".md")]
            assert any(s.exists() for s in sources), f"{url}: the site has no page from {stem}.ipynb or .md"
            assert re.search(rf"(?m)^\s*- file: {re.escape(stem)}\s*$", (ROOT / "_toc.yml").read_text()), url
            checked += 1
        elif url.startswith(f"{REPO}/actions/workflows/"):
            path = ".github/workflows/" + url.removeprefix(f"{REPO}/actions/workflows/").split("/")[0]
        elif not url.startswith((REPO, SITE)) and ("github.com/" in url or ".github.io" in url):
            # another address of the book's own is a leftover of a move (`make repository` rewrites this file)
            owner = SLUG.split("/")[0].lower()
            assert f"github.com/{owner}/" not in url.lower() and f"{owner}.github.io" not in url.lower(), url
        if path is not None:
            assert (ROOT / path).exists(), f"{url}: {path} is not in the repository"
            if anchor and path.endswith(".md"):
                assert anchor in _github_heading_ids((ROOT / path).read_text(encoding="utf-8")), f"{url}#{anchor}"
            checked += 1
    assert checked >= 20


def test_the_readme_opens_with_what_a_reader_came_for():
    assert len(README.splitlines()) < 150
    opening = README.split("\n## ", 1)[0]  # before the first section
    wanted = {
        "the build's badge": f"{REPO}/actions/workflows/book.yml/badge.svg",
        "read online": f"<{SITE}>",
        "open in Colab": f"https://colab.research.google.com/github/{SLUG}/blob/main/notebooks/00_why_transformers.ipynb",
        "download the PDF": f"{REPO}/releases/latest",
        "cite": f"{REPO}/blob/main/CITATION.cff",
        "report an error": f"{REPO}/issues",
        "the code's licence": f"{REPO}/blob/main/LICENSE)",
        "the text's licence": f"{REPO}/blob/main/LICENSE-TEXT)",
    }
    missing = [what for what, address in wanted.items() if address not in opening]
    assert not missing, f"README.md's opening (before its first section) lacks: {missing}"


def test_the_readmes_example_runs_and_prints_what_it_says():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) == 1
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 6 and "import transformer_lite as tl" in code
    promised = re.search(r"(?m)^print\(.*\)\s*#\s*(?P<out>.+?):", code)
    assert promised, "the example's print line says what it prints, after '# ', up to a ':'"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    assert out.getvalue().strip() == promised["out"].strip()
    install = re.findall(r"(?m)^pip install \"?([\w.-]+)", README)
    assert install and {canonicalize_name(n.split("[")[0]) for n in install} == {canonicalize_name(PROJECT["name"])}


# -- the sdist and the wheel, as PyPI sees them ----------------------------------------------------------------

def _built(tmp_path: Path) -> tuple[Path, Path]:
    """The sdist and the wheel, built from a copy of what they are made of, so the checkout (which other work
    shares) gets no build/ or *.egg-info."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", *PROJECT["license-files"]):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "transformer_lite", src / "transformer_lite",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path / "dist"
    run = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (sdist,), (wheel,) = dist.glob("*.tar.gz"), dist.glob("*.whl")
    return sdist, wheel


@pytest.mark.slow
def test_the_sdist_and_the_wheel_pass_twine_check_and_carry_both_licences(tmp_path):
    for tool in ("build", "twine"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"{tool} is not installed here (make release installs it)")
    sdist, wheel = _built(tmp_path)
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and check.stdout.count("PASSED") == 2, check.stdout + check.stderr

    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(whl.read(f"{info}/METADATA").decode("utf-8"))
    assert canonicalize_name(meta["Name"]) == "transformer-step-by-step" and meta["Version"] == VERSION
    assert meta["Metadata-Version"] and Version(meta["Metadata-Version"]) >= Version("2.4")  # licence expressions
    assert meta["License-Expression"] == PROJECT["license"]
    assert sorted(meta.get_all("License-File")) == sorted(PROJECT["license-files"])
    assert meta["Requires-Python"] == PROJECT["requires-python"]
    assert meta["Description-Content-Type"].startswith("text/markdown")
    assert {u.split(", ", 1)[0] for u in meta.get_all("Project-URL")} >= {"Homepage", "Source", "Issues", "Changelog"}
    for name in PROJECT["license-files"]:
        assert f"{info}/licenses/{name}" in names
    for asset in ("real_translator.pt", "tiny_translator.pt", "real_translator.json", "tiny_translator.json"):
        assert f"transformer_lite/book/assets/{asset}" in names  # what the licence expression is about

    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
        top = tar.getmembers()[0].name.split("/")[0]
        pkg_info = tar.extractfile(f"{top}/PKG-INFO").read().decode("utf-8")
    assert {"LICENSE", "LICENSE-TEXT", "README.md", "pyproject.toml"} <= members
    assert f"License-Expression: {PROJECT['license']}" in pkg_info
