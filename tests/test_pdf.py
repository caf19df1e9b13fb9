"""The PDF editions (`make pdf`, bookbuild/build_pdf.py): opened with pypdf, each must have every chapter in its
bookmarks, a known paragraph in its text (English and Chinese), no text past the right edge of a page, and be
at most 40 MB.

`make pdf` prints the built site in Chromium (about 3 minutes for both editions on 2 busy cores), so it is a
target of its own, not part of `make book`; these tests skip when the PDFs have not been made (and fail under
CI=true only if they were asked for: TL_REQUIRE_PDF=1).
"""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import pytest

from bookbuild.build_book import toc_entries
from bookbuild.build_pdf import EDITIONS, HTML, MAX_PDF, pdf_path

ROOT = Path(__file__).resolve().parent.parent


pypdf = pytest.importorskip("pypdf")

# a paragraph of chapter 3 and its Chinese (locales/zh_CN/LC_MESSAGES/notebooks/03_self_attention.po)
KNOWN = {"en": "A word with a tiny weight contributes almost nothing.",
         "zh": "权重很小的词几乎没有贡献。"}


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


class Edition:
    """One PDF, read once: its bookmarks, and each page's runs of text with where each ends (pypdf's layout-mode
    positions, which measure each run with its font's widths). Parsing a page's content stream is the slow part
    (~0.3 s a page), so it is done once per edition for every test."""

    def __init__(self, name: str, path: Path):
        from pypdf._text_extraction import _layout_mode
        from pypdf.generic import ContentStream

        self.name, self.path = name, path
        reader = pypdf.PdfReader(str(path))
        self.reader, self.pages, self.over = reader, [], []
        for number, page in enumerate(reader.pages, 1):
            contents = page.get("/Contents")
            if contents is None:
                self.pages.append("")
                continue
            ops = list(ContentStream(contents.get_object(), reader, "bytes").operations)
            # Chromium draws each page in its own units: the first `cm` scales them to points (0.24), the
            # second moves the origin to the left margin
            cms = [operands for operands, op in ops if op == b"cm"][:2]
            scale = float(cms[0][0])
            left = scale * float(cms[1][4]) if len(cms) > 1 else 0.0
            width = float(page.mediabox.width)
            runs = _layout_mode.text_show_operations(iter(ops), page._layout_mode_fonts(), True, None)
            # NFKC: the CJK font maps some glyphs to Kangxi radicals (⽂ for 文)
            self.pages.append(unicodedata.normalize("NFKC", "".join(run["text"] for run in runs)))
            for run in runs:
                right = left + scale * float(run["displaced_tx"])
                if right > width - 14 and run["text"].strip():  # into the outer half of the 14 mm (40 pt) margin
                    self.over.append(f"page {number}: {run['text'].strip()[:60]!r} ends at {right:.0f} pt of "
                                     f"{width:.0f}")


# one group per edition: under `make test` (-n 3 --dist loadgroup) the two PDFs are read on the two workers
@pytest.fixture(scope="module", params=[pytest.param(e, marks=pytest.mark.xdist_group(f"pdf-{e}"))
                                        for e in sorted(EDITIONS)])
def edition(request):
    path = pdf_path(request.param)
    if not path.exists():
        if os.environ.get("TL_REQUIRE_PDF") == "1":
            pytest.fail(f"{path} is missing (TL_REQUIRE_PDF=1): run `make pdf`")
        pytest.skip(f"{path.name} not made (run `make pdf`)")
    return Edition(request.param, path)


def _bookmarks(outline, depth=0, out=None):
    out = [] if out is None else out
    for item in outline:
        if isinstance(item, list):
            _bookmarks(item, depth + 1, out)
        else:
            out.append((depth, item.title))
    return out


def _chapter_titles(edition: str) -> list[str]:
    """Each chapter's title, from the built site's page of that edition (its h1)."""
    from bs4 import BeautifulSoup

    titles = []
    for doc in toc_entries(ROOT / "_toc.yml"):
        page = BeautifulSoup((HTML / EDITIONS[edition] / f"{doc}.html").read_text(encoding="utf-8"), "lxml")
        h1 = page.select_one("article.bd-article h1")
        assert h1, f"{doc}: no h1 in the built page"
        for link in h1.select(".headerlink"):
            link.decompose()
        titles.append(re.sub(r"\s+", " ", h1.get_text()).strip())
    return titles


@pytest.mark.slow  # reads ~400 pages a PDF: `make test`, not `make check`
def test_every_chapter_is_a_bookmark(edition):
    name, path = edition.name, edition.path
    marks = _bookmarks(edition.reader.outline)
    top = [t for depth, t in marks if depth == 0]
    for title in _chapter_titles(name):
        assert title in top, f"{path.name}: no top-level bookmark {title!r} (top level: {top})"
    assert len(marks) > 3 * len(top), f"{path.name}: sections are not bookmarked ({len(marks)} bookmarks)"


@pytest.mark.slow  # reads ~400 pages a PDF: `make test`, not `make check`
def test_a_known_paragraph_is_in_the_text(edition):
    name, path = edition.name, edition.path
    text = _squash("".join(edition.pages))
    assert _squash(KNOWN[name]) in text, f"{path.name}: {KNOWN[name]!r} is not in the PDF's text"
    if name == "zh":  # the Chinese edition is Chinese (and its CJK font has its glyphs: the text extracts as Chinese)
        assert len(re.findall(r"[\u4e00-\u9fff]", text)) > 20_000


@pytest.mark.slow  # reads ~400 pages a PDF: `make test`, not `make check`
def test_the_cover_names_the_edition(edition):
    name = edition.name
    cover = edition.pages[0]
    assert ("English edition" if name == "en" else "中文版") in cover, cover
    assert re.search(r"\d+\.\d+\.\d+", cover), f"no version on the cover: {cover!r}"
    assert "CC BY-SA 4.0" in cover and "MIT" in cover, f"the cover does not name the licences: {cover!r}"


@pytest.mark.slow  # reads ~400 pages a PDF: `make test`, not `make check`
def test_no_text_runs_past_the_right_edge(edition):
    """Every run of text ends inside the page's right margin: code wraps, wide formulas and tables fit."""
    assert not edition.over, (f"{edition.path.name}: {len(edition.over)} runs of text past the right margin: "
                              f"{edition.over[:10]}")


@pytest.mark.slow  # reads ~400 pages a PDF: `make test`, not `make check`
def test_size(edition):
    path = edition.path
    assert path.stat().st_size <= MAX_PDF, f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB"
    assert len(edition.pages) > 100


def test_the_pages_link_the_pdf_only_when_it_exists(tmp_path):
    """`make book` puts "PDF" beside the download button, and the file into the site, when `make pdf` made this
    edition's PDF (bookbuild/sphinx_ext/published.py); without it, no button and no file."""
    from types import SimpleNamespace

    from bookbuild.sphinx_ext import published

    for language, edition in (("en", "en"), ("zh_CN", "zh")):
        out = tmp_path / f"site-{edition}"
        app = SimpleNamespace(srcdir=str(tmp_path), outdir=str(out), builder=SimpleNamespace(format="html"),
                              config=SimpleNamespace(language=language))
        context = {"header_buttons": [{"label": "launch-buttons"}, {"label": "download-buttons"},
                                      {"label": "fullscreen-button"}],
                   "pathto": lambda name, resource=0: "../" + name}
        published.pdf_button(app, "notebooks/03_self_attention", "page.html", context, None)
        published.copy_pdf(app, None)
        assert [b["label"] for b in context["header_buttons"]] == ["launch-buttons", "download-buttons",
                                                                  "fullscreen-button"]
        assert not (out / "pdf").exists()

        made = tmp_path / "_build" / "pdf" / f"transformer-step-by-step.{edition}.pdf"
        made.parent.mkdir(parents=True, exist_ok=True)
        made.write_bytes(b"%PDF-1.7 test")
        published.pdf_button(app, "notebooks/03_self_attention", "page.html", context, None)
        published.copy_pdf(app, None)
        button = context["header_buttons"][2]
        assert button["text"] == "PDF" and button["url"] == f"../pdf/{made.name}", context["header_buttons"]
        assert (out / "pdf" / made.name).read_bytes() == made.read_bytes()


def test_a_link_with_a_query_leads_to_the_published_page_and_the_others_stay_in_the_document():
    """The chapters link to the explainer's view with their own sentence and step (?s=…&step=…). The view runs only
    in a browser, so in the PDF such a link opens the published page with both, where an in-book link would land on a
    note and lose them; links between pages stay in the document, http(s) stays as it is."""
    from bookbuild.build_pdf import printed_href

    anchor_of = {"notebooks/03_self_attention": "p3", "book/explainer": "p20"}
    id_maps = {"notebooks/03_self_attention": {"scores": "p3-scores"}, "book/explainer": {}}
    site = "https://example.github.io/book/zh/"
    link = "../book/explainer.html?s=The+animal+didn%27t+cross.&step=enc1-qkv&model=real"
    assert printed_href("notebooks/03_self_attention", link, anchor_of, id_maps, site) == \
        "https://example.github.io/book/zh/book/explainer.html?s=The+animal+didn%27t+cross.&step=enc1-qkv&model=real"
    assert printed_href("book/explainer", "../notebooks/03_self_attention.html#scores", anchor_of, id_maps, site) \
        == "#p3-scores"
    assert printed_href("notebooks/03_self_attention", "../book/explainer.html", anchor_of, id_maps, site) == "#p20"
    assert printed_href("book/explainer", "https://arxiv.org/abs/1706.03762", anchor_of, id_maps, site) == \
        "https://arxiv.org/abs/1706.03762"
    assert printed_href("book/explainer", "../_static/x.js", anchor_of, id_maps, site) is None
