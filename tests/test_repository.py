"""One address, set by whoever publishes the book (bookbuild/repository.py).

A fork's workflow builds with GitHub's ``GITHUB_REPOSITORY``; locally ``BOOK_REPOSITORY`` or ``make repository``
sets it. These tests set made-up addresses and look for the default everywhere it could hide: the committed files
(after ``set``), the built site of both editions (sitemap, OpenGraph, the buttons), and the PDF cover.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
MADE_UP = "example-reader/a-fork-of-the-book"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bookbuild" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


repository = _load("repository")
DEFAULT = repository.configured(ROOT)


def _default_traces(text: str) -> list[str]:
    """Mentions of the configured address: its owner/name pair or its site's host and path."""
    site = DEFAULT.site.split("://", 1)[1].rstrip("/")
    return re.findall(rf"{re.escape(DEFAULT.slug)}|{re.escape(site)}", text)


def _without_explainer_links(text: str, addr) -> str:
    """``text`` without its links to ``addr``'s explainer page (either edition's), the one form of the address
    that the notebooks and their catalogs may hold."""
    return re.sub(rf"{re.escape(addr.site)}{repository.EXPLAINER_PAGE}", "", text)


# --- the resolver ----------------------------------------------------------------------------------

def test_the_environment_overrides_the_configured_address_in_order():
    assert repository.address({}) == DEFAULT
    fork = repository.address({"GITHUB_REPOSITORY": "someone/their-book"})
    assert (fork.url, fork.site, fork.source) == ("https://github.com/someone/their-book",
                                                  "https://someone.github.io/their-book/", "GITHUB_REPOSITORY")
    both = repository.address({"GITHUB_REPOSITORY": "someone/their-book",
                               "BOOK_REPOSITORY": "https://github.com/Other/x.git",
                               "BOOK_SITE_URL": "https://book.example"})
    assert (both.slug, both.site, both.source) == ("Other/x", "https://book.example/", "BOOK_REPOSITORY")
    # a user's or organisation's own Pages repository is served at the root of its domain
    assert repository.address({"BOOK_REPOSITORY": "Org/org.github.io"}).site == "https://org.github.io/"


@pytest.mark.parametrize("env, match", [
    ({"BOOK_REPOSITORY": "just-a-name"}, "BOOK_REPOSITORY must be 'owner/name'"),
    ({"GITHUB_REPOSITORY": "a/b/c"}, "GITHUB_REPOSITORY must be"),
    ({"BOOK_SITE_URL": "book.example"}, "BOOK_SITE_URL must be an http"),
])
def test_a_bad_address_is_refused_by_name(env, match):
    with pytest.raises(ValueError, match=match):
        repository.address(env)


# --- the committed files ---------------------------------------------------------------------------

def test_the_committed_files_name_only_the_configured_address():
    assert repository.check(ROOT) == []


def test_the_default_lives_in_one_place_and_set_moves_every_trace_of_it(tmp_path):
    """Outside the files a reader sees as committed (bookbuild/repository.py LITERAL_FILES), no tracked file names the
    default address, but for the chapters' links to the explainer's page in EXPLAINER_LINK_FILES; after `set`, none
    does at all."""
    tracked = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    elsewhere = {}
    linking = {str(p.relative_to(ROOT)) for p in repository.explainer_link_files(ROOT)}
    for rel in filter(None, tracked):
        src = ROOT / rel
        if not src.is_file() or src.stat().st_size > 3_000_000:
            continue
        try:
            text = src.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        if rel in linking:
            text = _without_explainer_links(text, DEFAULT)
        if _default_traces(text) and rel not in repository.LITERAL_FILES:
            elsewhere[rel] = _default_traces(text)[:3]
    assert not elsewhere, f"the default address outside {repository.LITERAL_FILES}: {elsewhere}"

    assert repository.main(["--root", str(tmp_path), "set", MADE_UP]) == 0
    left = {str(p.relative_to(tmp_path)): _default_traces(p.read_text(encoding="utf-8"))[:3]
            for p in tmp_path.rglob("*") if p.is_file() and _default_traces(p.read_text(encoding="utf-8"))}
    assert not left, f"the default address is left after `set {MADE_UP}`: {left}"
    fork = repository.configured(tmp_path)
    assert (fork.slug, fork.site) == (MADE_UP, "https://example-reader.github.io/a-fork-of-the-book/")
    for rel in ("README.md", "CITATION.cff", "pyproject.toml"):
        assert MADE_UP in (tmp_path / rel).read_text(encoding="utf-8"), rel
    assert repository.check(tmp_path) == []
    assert repository.main(["--root", str(tmp_path), "set", MADE_UP]) == 0  # idempotent
    assert repository.check(tmp_path) == []


def _explainer_links(text: str) -> list[str]:
    return re.findall(r"https?://[^\s\"'<>()\[\]]+?/(?:zh/)?book/explainer\.html[^\s\"'<>()\[\]]*", text)


def test_set_moves_the_chapters_links_to_the_explainer(tmp_path):
    """The chapters link to the explainer's page by its published address (Jupyter and Colab cannot follow a relative
    link): `set` moves every such link of the English notebooks, the Chinese ones and the prose catalogs to the new
    site, query and all, and the catalogs still translate the notebooks' paragraphs; check knows the places."""
    files = repository.explainer_link_files(ROOT)
    rels = [p.relative_to(ROOT) for p in files]
    for rel in ("_config.yml", *map(str, rels)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    before = {rel: _explainer_links((ROOT / rel).read_text(encoding="utf-8")) for rel in rels}
    linking = {str(rel) for rel, links in before.items() if links}
    for part in ("notebooks/0", "notebooks/zh/0", "LC_MESSAGES/notebooks/0"):
        assert any(part in rel for rel in linking), f"no explainer link in {part}*: {sorted(linking)}"
    assert repository.check(tmp_path) == []

    assert repository.main(["--root", str(tmp_path), "set", MADE_UP]) == 0
    fork = repository.configured(tmp_path)
    for rel, links in before.items():
        text = (tmp_path / rel).read_text(encoding="utf-8")
        moved = [link.replace(DEFAULT.site, fork.site, 1) for link in links]
        assert _explainer_links(text) == moved, rel
        assert not _default_traces(text), (rel, _default_traces(text)[:3])
        if links and "/zh/" in str(rel):  # a Chinese notebook opens the Chinese page
            assert all(link.startswith(fork.site + "zh/book/explainer.html?") for link in moved), rel
    # every link paragraph of an English notebook is still a message of its catalog, translated with the same link
    import polib

    for nb in sorted((tmp_path / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        paragraphs = [p for c in cells if c["cell_type"] == "markdown"
                      for p in "".join(c["source"]).split("\n\n") if "book/explainer.html" in p]
        if not paragraphs:
            continue
        po = polib.pofile(str(tmp_path / "locales/zh_CN/LC_MESSAGES/notebooks" / f"{nb.stem}.po"))
        for p in paragraphs:
            entry = po.find(p.replace("\n", " "))
            assert entry is not None and entry.msgstr, (nb.name, p)
            assert _explainer_links(entry.msgstr) == _explainer_links(p), (nb.name, entry.msgstr)
    assert repository.check(tmp_path) == []

    # check names a link that `set` did not move, and the address written in another form
    nb = tmp_path / sorted(r for r in linking if r.startswith("notebooks/0"))[0]
    text = nb.read_text(encoding="utf-8")
    nb.write_text(text.replace(fork.site, "https://someone-else.github.io/book/", 1), encoding="utf-8")
    assert any("links the explainer at https://someone-else.github.io/book/" in p for p in repository.check(tmp_path))
    nb.write_text(text.replace(fork.site + "book/explainer.html", fork.site + "book/intro.html", 1), encoding="utf-8")
    assert any("outside a link to the explainer" in p for p in repository.check(tmp_path))


# --- the built site and the PDFs --------------------------------------------------------------------

def _build_info() -> dict:
    path = ROOT / "_build" / "build-info.json"
    if not (SITE / "zh" / "index.html").exists() or not path.exists():
        pytest.skip("no built site (make book)")
    return json.loads(path.read_text(encoding="utf-8"))


def _site_texts():
    for path in sorted(SITE.rglob("*")):
        if path.suffix in {".html", ".xml", ".txt", ".js", ".json", ".ipynb"} and path.is_file():
            yield path, path.read_text(encoding="utf-8", errors="replace")


def test_the_site_links_only_the_address_it_was_built_for():
    info = _build_info()
    built = repository.Address(*repository.parse_slug(info["repository"]), info["site"], "build")
    intro = (SITE / "book" / "intro.html").read_text(encoding="utf-8")
    assert f'property="og:url" content="{built.site}book/intro.html"' in intro
    assert f'property="og:image" content="{built.site}social.png"' in intro
    chapter = (SITE / "notebooks" / "03_self_attention.html").read_text(encoding="utf-8")
    zh_chapter = (SITE / "zh" / "notebooks" / "03_self_attention.html").read_text(encoding="utf-8")
    for page, nb in ((chapter, "notebooks/03_self_attention.ipynb"),
                     (zh_chapter, "notebooks/zh/03_self_attention.ipynb")):
        assert f"colab.research.google.com/github/{built.slug}/blob/main/{nb}" in page
        assert f"mybinder.org/v2/gh/{built.slug}/main" in page
        assert f'href="{built.url}"' in page and f"{built.url}/issues/new" in page
    # the one version number, pyproject.toml's, at the foot of every page of both editions
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert info["version"] == version
    assert f"Version {version}." in chapter and f"版本 {version}。" in zh_chapter
    sitemap = (SITE / "sitemap.xml").read_text(encoding="utf-8")
    assert f"<loc>{built.site}zh/notebooks/03_self_attention.html</loc>" in sitemap
    strays = {}
    for path, text in _site_texts():
        found = repository.stray_addresses(text, built)
        if built.slug != DEFAULT.slug:
            found += _default_traces(text)
        if found:
            strays[str(path.relative_to(SITE))] = found[:3]
    assert not strays, f"pages naming another address than {built.url} / {built.site}: {strays}"


def test_the_pdf_covers_name_the_address_the_site_was_built_for():
    info = _build_info()
    pypdf = pytest.importorskip("pypdf")
    pdfs = [ROOT / "_build" / "pdf" / f"transformer-step-by-step.{e}.pdf" for e in ("en", "zh")]
    if not all(p.exists() for p in pdfs):
        pytest.skip("no PDFs (make pdf)")
    for pdf in pdfs:
        cover = pypdf.PdfReader(pdf).pages[0].extract_text()
        flat = re.sub(r"\s+", "", cover)
        assert info["repository"] in flat and info["site"].rstrip("/") in flat, (pdf.name, cover)
        assert info["version"] in cover, (pdf.name, cover)
        if info["repository"] != DEFAULT.url:
            assert not _default_traces(flat), (pdf.name, cover)
