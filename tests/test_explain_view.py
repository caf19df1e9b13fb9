"""The explainer's page, without a browser: transformer_lite.book.explain_view (the view's HTML and settings, in
either language, on the site and in a notebook) and what transformer_lite/book/web/tl-explainer.js writes (every text
in the package's catalog, the steps' ids and titles the module names). The page in Chromium:
tests/test_explainer_web.py; a notebook's view in JupyterLab: tests/test_jupyterlab.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bookbuild import repository
from transformer_lite.book import i18n
from transformer_lite.book.explain_view import (
    DECODER_STEPS,
    ENCODER_STEPS,
    STEP_TITLES,
    VIEW_TEXTS,
    as_typed,
    explainer_html,
    notebook_html,
    step_ids,
    step_title,
)
from transformer_lite.book.translate import SHIPPED, read_english, reading_of, shipped_examples, shipped_translator

ROOT = Path(__file__).resolve().parent.parent
JS = (ROOT / "transformer_lite" / "book" / "web" / "tl-explainer.js").read_text(encoding="utf-8")
STRING = r'"(?:[^"\\]|\\.)*"'
HAN = re.compile(r"[\u3400-\u9fff]")
# three plain English words in a row, once {fields}, <tokens>, code and formulas are taken out
ENGLISH = re.compile(r"\b[A-Za-z][a-z]+[,.;:]? [A-Za-z][a-z]+[,.;:]? [A-Za-z][a-z]+\b")


def assert_chinese(text: str, english: str) -> None:
    plain = re.sub(r"\{\w+\}|<\w+>|\w+\([^)]*\)|[√\w]+_\w+", " ", text)
    assert HAN.search(text) or text == english and not HAN.search(english) and len(english) <= 2, (english, text)
    assert not ENGLISH.search(plain), f"English left in {text!r} (for {english!r})"


@pytest.fixture(autouse=True)
def english_afterwards():
    before = i18n.language()
    yield
    i18n.set_language(before)


def _settings(html: str) -> dict:
    return json.loads(re.search(r'class="tlx-settings">(.*?)</script>', html).group(1))


def test_every_text_the_script_writes_is_listed_and_translated():
    said = set()
    for m in re.finditer(rf"(?:say\(v, |\bN\()((?:{STRING}\s*\+?\s*)+)", JS):
        said.add("".join(json.loads(s) for s in re.findall(STRING, m.group(1))))
    assert said == set(VIEW_TEXTS), (sorted(said - set(VIEW_TEXTS)), sorted(set(VIEW_TEXTS) - said))
    catalog = i18n.catalog()
    assert [t for t in VIEW_TEXTS if t not in catalog] == []
    for english in VIEW_TEXTS:
        chinese = catalog[english]
        assert sorted(re.findall(r"\{\w+\}", chinese)) == sorted(re.findall(r"\{\w+\}", english)), english


def test_the_scripts_steps_are_the_modules():
    """Each kind of step of tl-explainer.js (its id and title) is one of explain_view's, in the same order."""
    encoder = re.findall(rf'\["(\w+)", N\(({STRING})\), \[[\d, ]+\], (?:true|false), drawEnc|'
                         rf'\["(\w+)", N\(({STRING})\), \[[\d, ]+\], (?:true|false), draw(?:QKV|Scores|Scaled|Softmax|'
                         rf'Weighted|Heads|Concat)', JS)
    kinds = [(a or c, json.loads(b or d)) for a, b, c, d in encoder]
    assert [k for k, _ in kinds] == list(ENCODER_STEPS)
    assert all(STEP_TITLES[f"enc-{k}"] == title for k, title in kinds)
    decoder = re.findall(rf'\["(\w+)", N\(({STRING})\), \[[\d, ]+\], (?:true|false), draw(?:Causal|Self|Cross|'
                         rf'DecoderFFN)', JS)
    assert [k for k, _ in decoder] == list(DECODER_STEPS)
    assert all(STEP_TITLES[f"dec-{k}"] == json.loads(title) for k, title in decoder)


def test_step_ids_and_titles():
    ids = step_ids(2, 3, lens=False)
    assert len(ids) == 2 + 2 * len(ENCODER_STEPS) + 1 + 3 * len(DECODER_STEPS) + 1 and len(set(ids)) == len(ids)
    assert ids[:3] == ["tokens", "embedding", "enc1-qkv"] and ids[-1] == "next" and "lens" not in ids
    assert step_ids(1, 1)[-2:] == ["lens", "next"]
    assert step_title("enc2-scores") == "Encoder layer 2: scores"
    assert step_title("dec1-cross") == "Decoder layer 1: cross-attention"
    i18n.set_language("zh")
    assert step_title("dec1-cross") == "解码器第 1 层：交叉注意力"
    for bad in ("enc-scores", "enc1-nothing", "lens2", 3):
        with pytest.raises(ValueError, match="step_id must be a step of the view"):
            step_title(bad)


@pytest.mark.parametrize("key", list(SHIPPED))
def test_examples_show_as_typed_and_read_as_stored(key):
    model, data = shipped_translator(key)
    reading = reading_of(data)
    stored = shipped_examples(key, data) + ([en for en, _ in data.test_pairs[:200]] if key == "grammar" else [])
    for text in stored:
        typed = as_typed(text, key)
        assert read_english(typed, data.src_vocab, model.max_len, reading) == \
            read_english(text, data.src_vocab, model.max_len, reading), (text, typed)
        assert typed[0].isupper(), typed
    if key == "grammar":
        assert as_typed("does he play football in the library ?", key) == "Does he play football in the library?"
        assert as_typed("i have a cat", key) == "I have a cat"


def test_as_typed_names_bad_input():
    with pytest.raises(TypeError, match="text must be a str"):
        as_typed(None, "grammar")
    with pytest.raises(ValueError, match="key must be one of"):
        as_typed("i have a cat", "french")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_views_html_speaks_the_language(lang):
    i18n.set_language(lang)
    html = explainer_html("real", static="../../_static/", chapters="../notebooks/")
    settings = _settings(html)
    assert settings["model"] == "real" and set(settings["models"]) == set(SHIPPED)
    assert set(settings["text"]) == set(VIEW_TEXTS)
    assert settings["chapters"]["3"] == "../notebooks/03_self_attention.html"
    assert 'href="../../_static/tl/tl-explainer.css"' in html and 'src="../../_static/tl/tl-explainer.js"' in html
    first = settings["models"]["real"]["examples"][0]
    assert f'value="{first}"' in html.replace("&#x27;", "'")
    assert settings["models"]["grammar"]["examples"][0][0].isupper()
    labels = re.findall(r">([^<>]+)</(?:button|label|p|option|span|noscript)>", html)
    if lang == "zh":
        for english, text in settings["text"].items():
            assert_chinese(text, english)
        assert "开始" in labels and "步骤" in html
    else:
        assert settings["text"] == {t: t for t in VIEW_TEXTS} and "Start" in labels


def test_the_views_html_names_bad_arguments():
    with pytest.raises(ValueError, match="key must be one of"):
        explainer_html("french")
    with pytest.raises(ValueError, match="static must be a relative path ending in '_static/'"):
        explainer_html("grammar", static="../static")
    with pytest.raises(ValueError, match="static must be"):
        explainer_html("grammar", static='"><script>_static/')
    with pytest.raises(TypeError, match="static must be a str"):
        explainer_html("grammar", static=None)
    with pytest.raises(ValueError, match="chapters must be a relative path ending in '/'"):
        explainer_html("grammar", chapters="../notebooks")


# -- the view as a notebook cell's output (explain_view.show, notebook_html) -----------------------------------------

NOTEBOOK_SENTENCE = "Does she read books at school every day?"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_notebooks_view_is_self_contained_and_draws_the_kernels_trace(lang):
    from transformer_lite.book import explain

    i18n.set_language(lang)
    html = notebook_html("grammar", NOTEBOOK_SENTENCE)
    # nothing to fetch: no script or style file, no address of another host, no loader of the site's files
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|<img\b|<iframe\b", html)
    addresses = set(re.findall(r"https?://[^\s\"']*", html)) - {"http://www.w3.org/2000/svg"}  # SVG's namespace
    assert not addresses, addresses
    assert html.count("<script>") == 1  # the view's script; the browser test sees that it requests nothing
    settings = _settings(html)
    assert settings["trace"] == json.loads(json.dumps(explain.trace("grammar", NOTEBOOK_SENTENCE)))  # the kernel's
    assert settings["step"] is None and settings["language"] == lang
    assert settings["chapters"]["3"] == "03_self_attention.ipynb"  # beside the reader's notebook
    # the site's script and style, inline, as the package ships them
    assert JS in html and (ROOT / "transformer_lite" / "book" / "web" / "tl-explainer.css").read_text() in html
    assert "tlx-input" in html and 'class="tlx-row" hidden' in html  # no sentence box: the kernel chose the sentence
    sentence = re.search(r'<p class="tlx-sentence">(.*?)</p>', html).group(1)
    assert NOTEBOOK_SENTENCE in sentence
    status = re.search(r'class="tlx-status"[^>]*>(.*?)</p>', html).group(1)
    if lang == "zh":
        assert_chinese(settings["text"]["Traced in Python by transformer_lite.book.explain.trace: {n} steps."],
                       "Traced in Python")
        assert HAN.search(status) and "英文" in sentence
    else:
        assert status.startswith("Run the cell")


def test_a_notebooks_view_opens_on_a_step_with_heads_off():
    html = notebook_html("grammar", NOTEBOOK_SENTENCE, heads_off=[("cross", 0, 1)], step="dec1-cross")
    settings = _settings(html)
    assert settings["step"] == "dec1-cross" and settings["trace"]["heads_off"] == [["cross", 0, 1]]


def test_a_notebooks_view_names_bad_arguments():
    with pytest.raises(ValueError, match="key must be one of"):
        notebook_html("french", "I have a cat")
    with pytest.raises(TypeError, match="text must be a str"):
        notebook_html("grammar", None)
    with pytest.raises(ValueError, match="step_id must be a step of the view"):
        notebook_html("grammar", "I have a cat", step="enc1-nothing")
    with pytest.raises(ValueError, match="step must be a step of translator 'grammar'"):
        notebook_html("grammar", "I have a cat", step="enc9-scores")
    with pytest.raises(ValueError, match="heads_off"):
        notebook_html("grammar", "I have a cat", heads_off=[("cross", 0, 99)])


def test_show_draws_the_notebooks_view_or_on_the_site_the_sites(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401 - IPython is there

    from transformer_lite.book import explain_view
    from transformer_lite.book.interactive import STATIC_ENV

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj.data))
    monkeypatch.delenv(STATIC_ENV, raising=False)
    explain_view.show("grammar", NOTEBOOK_SENTENCE)
    assert '"trace": {' in shown[-1] and "<style>" in shown[-1]
    monkeypatch.setenv(STATIC_ENV, "1")  # the book's build: the site's view, its files from the English _static/
    explain_view.show("grammar", NOTEBOOK_SENTENCE)
    assert 'src="../_static/tl/tl-explainer.js"' in shown[-1] and '"trace"' not in shown[-1]
    assert f'value="{NOTEBOOK_SENTENCE}"' in shown[-1] and '"3": "03_self_attention.html"' in shown[-1]
    i18n.set_language("zh")
    explain_view.show("real")
    assert 'src="../../_static/tl/tl-explainer.js"' in shown[-1]
# -- the chapters' links into the view (their markdown; the built site's: tests/test_explainer_web.py) ----------------

# the chapters that teach a step of the view (every chapter the view's steps name, explain_view.CHAPTERS, and chapter
# 10's next-token training); chapters 6 (BatchNorm) and 11 (where LayerNorm sits) teach no step of the shipped models
LINKED = ["01_tokens_and_embeddings", "02_positional_encoding", "03_self_attention", "04_multi_head_attention",
          "05_add_norm_ffn", "07_masking", "08_encoder", "09_decoder", "10_training", "12_inference"]
SITE = repository.configured(ROOT).site  # the published site: the one place it is written is _config.yml
LINK = re.compile(r"\]\((?P<url>https?://[^\s()]+?/(?:zh/)?book/explainer\.html\?[^\s()]*)\)")


def _links(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [m["url"] for c in cells if c["cell_type"] == "markdown" for m in LINK.finditer("".join(c["source"]))]


def test_every_chapter_that_teaches_a_step_links_to_it_from_its_notebooks():
    """In Jupyter and Colab a relative link cannot reach the page, so a notebook names the published page: the
    English one from notebooks/, the Chinese one from notebooks/zh/, at the address bookbuild/repository.py keeps
    (its check holds every such link to it), with a step the view has and a sentence its model reads."""
    from urllib.parse import parse_qs, urlsplit

    from transformer_lite.book.explain_view import CHAPTERS

    assert set(CHAPTERS.values()) <= set(LINKED)
    site = SITE
    for stem in sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb")):
        english = _links(ROOT / "notebooks" / f"{stem}.ipynb")
        chinese = _links(ROOT / "notebooks" / "zh" / f"{stem}.ipynb")
        if stem not in LINKED:
            assert not english and not chinese, stem
            continue
        assert len(english) == 1 and len(chinese) == 1, (stem, english, chinese)
        assert english[0].startswith(site + "book/explainer.html?"), english
        assert chinese[0] == english[0].replace(site, site + "zh/", 1), chinese
        query = {k: v[0] for k, v in parse_qs(urlsplit(english[0]).query).items()}
        assert set(query) == {"s", "step", "model"}, (stem, query)
        assert query["step"] in step_ids(2, 2), (stem, query)
        model, data = shipped_translator(query["model"])
        assert read_english(query["s"], data.src_vocab, model.max_len, reading_of(data))[0], (stem, query)


def test_a_chapters_link_to_the_published_page_opens_the_editions_own():
    """bookbuild/sphinx_ext/tl_explainer.py: a link to the published explainer page (any copy's address, either
    edition's), with its query, becomes a relative link on the site, its "&" as the link wrote it; other links stay."""
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.utils import new_document

    from bookbuild.sphinx_ext.tl_explainer import local_explainer_links

    doc = new_document("test")
    links = {"https://someone.github.io/fork/book/explainer.html?s=I+have+a+cat&amp;step=next&amp;model=grammar":
             "../book/explainer.html?s=I+have+a+cat&step=next&model=grammar",
             SITE + "book/explainer.html": "../book/explainer.html",
             SITE + "zh/book/explainer.html?s=x&step=tokens": "../book/explainer.html?s=x&step=tokens",
             "https://example.org/book/explainers.html?s=x": "https://example.org/book/explainers.html?s=x",
             "https://colab.research.google.com/github/o/r/blob/main/book/explainer.md":
             "https://colab.research.google.com/github/o/r/blob/main/book/explainer.md"}
    for uri in links:
        doc += nodes.paragraph("", "", nodes.reference("", "link", refuri=uri))
    local_explainer_links(SimpleNamespace(env=SimpleNamespace(docname="notebooks/09_decoder")), doc)
    got = [r["refuri"] for r in doc.findall(nodes.reference)]
    assert got == list(links.values())
    assert [bool(r.get("internal")) for r in doc.findall(nodes.reference)] == [True, True, True, False, False]


def test_the_sites_copies_of_the_notebooks_name_the_address_it_is_built_for(tmp_path):
    """The site's _sources/ (its download button, which Jupyter opens) link the explainer at the build's own site, in
    either edition; other addresses stay."""
    from types import SimpleNamespace

    from bookbuild.sphinx_ext.tl_explainer import published_sources

    fork = "https://example-reader.github.io/a-fork-of-the-book/"
    nb = tmp_path / "_sources" / "notebooks" / "09_decoder.ipynb"
    nb.parent.mkdir(parents=True)
    text = json.dumps({"cells": [{"cell_type": "markdown", "source": [
        f"[a]({SITE}book/explainer.html?s=She+eats&step=dec1-cross&model=grammar) and\n",
        f"[b]({SITE}zh/book/explainer.html?s=x) [c](https://colab.research.google.com/github/o/r/blob/main/x.ipynb) "
        f"[d]({SITE}book/intro.html)"]}]}, indent=1)
    nb.write_text(text, encoding="utf-8")
    figure = tmp_path / "_sources" / "notebooks" / "figure.png"
    figure.write_bytes(b"\x89PNG" + SITE.encode())
    app = SimpleNamespace(config=SimpleNamespace(html_baseurl=fork), builder=SimpleNamespace(format="html"),
                          outdir=str(tmp_path))
    published_sources(app, None)
    new = nb.read_text(encoding="utf-8")
    assert new == text.replace(f"{SITE}book/explainer", f"{fork}book/explainer").replace(
        f"{SITE}zh/book/explainer", f"{fork}zh/book/explainer")
    assert f"{SITE}book/intro.html" in new and figure.read_bytes() == b"\x89PNG" + SITE.encode()
    published_sources(app, None)
    assert nb.read_text(encoding="utf-8") == new
    published_sources(SimpleNamespace(config=SimpleNamespace(html_baseurl=SITE), builder=app.builder,
                                      outdir=str(tmp_path)), RuntimeError("failed"))  # a failed build: untouched
    assert nb.read_text(encoding="utf-8") == new
