"""The book's map in both editions (every line a Chinese reader sees is Chinese, its labels included).

transformer_lite.book.architecture_map draws it: chapter 0 shows it with every part a link, the landing page as the
image files book/architecture_map.svg and book/architecture_map.zh_CN.svg (Sphinx's figure_language_filename takes
the second in the Chinese edition), which ``python -m bookbuild.i18n notebooks`` writes. Its words come from the
package's catalog (tr), in the current language: the Chinese notebooks call ``setup(..., language="zh")``.

The last test reads the built site and is skipped when it has no Chinese edition.
"""
from __future__ import annotations

import os
import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bookbuild.translation.landing_maps import LANDING_MAPS, landing_maps
from transformer_lite.book import architecture_map, i18n as package_i18n

ROOT = Path(__file__).resolve().parent.parent

HTML = Path(os.environ.get("SITE_HTML", ROOT / "_build" / "html"))
HAN = re.compile(r"[\u3400-\u9fff]")
ENGLISH_WORD = re.compile(r"[A-Za-z]{2,}")
# the names a Chinese map keeps in Latin letters, as the Chinese chapters do (STYLE.md: model and function names)
NAMES = {"softmax", "BERT", "GPT", "Transformer"}
# a text without a Han character that a Chinese map may show: the stacks' "N× · 8", numbers, arrows
SYMBOLS = re.compile(r"[N×·+→\d\s]*")


class _Shown(HTMLParser):
    """What an SVG (or chapter 0's HTML) shows a reader: every text node (of <text>, <tspan>, <title>, <desc>;
    not of <script>) and every aria-label, in order, as (where, text)."""

    def __init__(self):
        super().__init__()
        self.shown, self.open = [], []

    def handle_starttag(self, tag, attrs):
        self.open.append(tag)
        for name, value in attrs:
            if name == "aria-label":
                self.shown.append((f"<{tag} aria-label>", value))

    def handle_endtag(self, tag):
        while self.open and self.open.pop() != tag:
            pass

    def handle_data(self, data):
        if data.strip() and (not self.open or self.open[-1] != "script"):
            self.shown.append((f"<{self.open[-1] if self.open else ''}>", data.strip()))


def shown(markup: str) -> list[tuple[str, str]]:
    parser = _Shown()
    parser.feed(markup)
    return parser.shown


def english_left(markup: str) -> list[tuple[str, str]]:
    """The texts of a map that a Chinese reader would read as English: without a Han character (unless they are
    symbols and numbers), or with an English word that is not a name the Chinese chapters keep."""
    return [(where, text) for where, text in shown(markup)
            if not (HAN.search(text) or SYMBOLS.fullmatch(text))
            or set(ENGLISH_WORD.findall(text)) - NAMES]


@pytest.fixture
def language():
    """Draw in a language, then restore the package's."""
    before = package_i18n.language()
    yield package_i18n.set_language
    package_i18n.set_language(before)


def _maps(language, lang: str) -> dict[str, str]:
    language(lang)
    return {"chapter 0": architecture_map.architecture_map_html(),
            "landing page": architecture_map.landing_page_svg()}


def test_every_word_on_the_chinese_maps_is_chinese(language):
    zh, en = _maps(language, "zh"), _maps(language, "en")
    for where in zh:
        assert english_left(zh[where]) == [], where
        # the same texts as the English map, one for one: none left out
        assert [w for w, _ in shown(zh[where])] == [w for w, _ in shown(en[where])], where
    texts = {text for _, text in shown(zh["chapter 0"])}
    assert {"多头注意力 · 4", "残差连接与层归一化 · 5", "掩码多头注意力 · 7", "本书还有：", "第 4 章",
            "附录 B"} <= texts
    assert "Transformer 的架构；每个部件都链接到讲解它的章节" in texts  # the aria-label


def test_an_english_label_on_a_chinese_map_fails_the_check(language):
    """The check above finds English: the English maps have every label in it, and one label left in English
    (or an English word beside Chinese) on a Chinese map is found."""
    en = _maps(language, "en")["chapter 0"]
    left = {text for _, text in english_left(en)}
    assert {"Add & Norm · 5", "Also in the book:", "Chapter 4", "Appendix B: glossary"} <= left
    assert "N× · 8" not in left  # symbols and numbers are no English
    zh = _maps(language, "zh")["chapter 0"]
    assert english_left(zh.replace("交叉注意力 · 9", "Cross-attention · 9")) == [("<text>", "Cross-attention · 9")]
    assert english_left(zh.replace("本书还有：", "本书还有 (also):")) == [("<text>", "本书还有 (also):")]


def test_the_landing_pages_maps_are_the_packages_drawing():
    """book/architecture_map.svg and .zh_CN.svg are generated: `python -m bookbuild.i18n notebooks` writes them."""
    for path, text in landing_maps().items():
        assert path.exists() and path.read_text(encoding="utf-8") == text, \
            f"{path.relative_to(ROOT)} is not the package's drawing: run `python -m bookbuild.i18n notebooks`"
    assert LANDING_MAPS["zh"].name == "architecture_map.zh_CN.svg"  # Sphinx's "{root}.{language}{ext}"


HREF = re.compile(r'href="([^"]+)"')


def _on_the_site(href: str) -> str:
    """What chapter 0's one-line script makes of a link on a web page (its two replacements)."""
    return re.sub(r"\.(ipynb|md)$", ".html", re.sub(r"^\.\./\.\./book/", "../book/", href))


@pytest.mark.parametrize("lang, folder, site", [("en", "notebooks", ""), ("zh", "notebooks/zh", "zh/")])
def test_chapter_0s_map_links_to_its_own_editions_pages(language, lang, folder, site):
    """In Jupyter each link opens a file beside the edition's notebook (notebooks/zh/ for the Chinese one, the
    glossary two folders up); on the site, the script's .html page of the same edition (zh/...)."""
    language(lang)
    page = architecture_map.architecture_map_html()
    hrefs = sorted(set(HREF.findall(page)))
    assert len(hrefs) == 19  # chapters 1-15 and 13b, appendices A, B (the glossary) and C
    for href in hrefs:
        assert (ROOT / folder / href).resolve().is_file(), href
        on_site = posixpath.normpath(posixpath.join(f"{site}notebooks", _on_the_site(href)))
        assert on_site.endswith(".html") and not on_site.startswith(".."), on_site
        assert on_site.startswith("zh/") == (lang == "zh"), on_site
    script = page[page.index("<script>"):]
    assert r"/^\.\.\/\.\.\/book\//,'../book/'" in script and r"/\.(ipynb|md)$/,'.html'" in script


def test_the_built_chinese_edition_shows_the_chinese_maps():
    if not (HTML / "zh" / "notebooks").is_dir():
        pytest.skip("the site (with its Chinese edition) is not built")
    intro = (HTML / "zh" / "book" / "intro.html").read_text(encoding="utf-8")
    src = re.search(r'<img\b[^>]*\bsrc="([^"]*architecture_map[^"]*)"', intro)[1]
    assert src.endswith("architecture_map.zh_CN.svg"), src
    image = (HTML / "zh" / "book" / src).resolve().read_text(encoding="utf-8")
    assert english_left(image) == [] and HAN.search(image)
    chapter = (HTML / "zh" / "notebooks" / "00_why_transformers.html").read_text(encoding="utf-8")
    drawn = re.search(r'<div class="tl-architecture-map">.*?</svg>', chapter, re.S)[0]
    assert english_left(drawn) == [] and "掩码多头注意力 · 7" in drawn
