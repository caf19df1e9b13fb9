"""bookbuild/build_book.py without a full build: the toc it reads, the configuration it relies on instead of
editing the built HTML, the checks that fail the build, and the kernels' tqdm set-up."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from bookbuild import build_book as bb

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- the site's JavaScript


def test_npm_ci_runs_when_node_modules_differs_from_the_lock_not_when_files_are_newer(tmp_path):
    lock = {"name": "x", "lockfileVersion": 3, "packages": {
        "": {"name": "x", "dependencies": {"d3": "5.16.0"}},
        "node_modules/d3": {"version": "5.16.0", "integrity": "sha512-aaa", "license": "BSD-3-Clause"}}}
    _write(tmp_path / "package-lock.json", json.dumps(lock))
    assert not bb.npm_matches_lock(tmp_path)  # nothing installed
    hidden = {"name": "x", "lockfileVersion": 3, "packages": {k: v for k, v in lock["packages"].items() if k}}
    _write(tmp_path / "node_modules" / ".package-lock.json", json.dumps(hidden))
    assert bb.npm_matches_lock(tmp_path)
    (tmp_path / "package-lock.json").touch()  # a copy or checkout makes the lock newer: still installed
    assert bb.npm_matches_lock(tmp_path)
    hidden["packages"]["node_modules/d3"]["version"] = "7.9.0"
    _write(tmp_path / "node_modules" / ".package-lock.json", json.dumps(hidden))
    assert not bb.npm_matches_lock(tmp_path)


# ---------------------------------------------------------------- _toc.yml


def test_the_toc_lists_every_notebook_and_page_and_nothing_else():
    docs = bb.toc_entries(ROOT / "_toc.yml")
    assert len(docs) == len(set(docs)), "a document is listed twice"
    on_disk = {f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    on_disk |= {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")}
    assert set(docs) == on_disk
    assert docs[0] == "book/intro" and docs[1] == "notebooks/00_why_transformers"


def _write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


NESTED_TOC = """\
format: jb-book
root: intro  # a comment
parts:
  - caption: "First: the basics"
    chapters:
      - file: a
        sections:
          - file: a1
          - file: gone1
  - caption: Encoder–decoder
    chapters:
      - file: gone2
      - file: gone3
  - caption: Last
    chapters:
      - file: b
      - url: https://example.org
        title: elsewhere
"""


def test_toc_entries_walks_every_level(tmp_path):
    toc = _write(tmp_path / "_toc.yml", NESTED_TOC)
    assert bb.toc_entries(toc) == ["intro", "a", "a1", "gone1", "gone2", "gone3", "b"]


def test_existing_only_toc_drops_missing_files_and_the_parts_they_empty(tmp_path):
    for doc in ("intro.md", "a.ipynb", "a1.md", "b.ipynb"):
        _write(tmp_path / doc)
    toc = _write(tmp_path / "_toc.yml", NESTED_TOC)
    out = bb.existing_only_toc(tmp_path / "existing_toc.yml", toc=toc, root=tmp_path)
    assert bb.toc_entries(out) == ["intro", "a", "a1", "b"]
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert [p["caption"] for p in data["parts"]] == ["First: the basics", "Last"]  # the emptied part is gone
    assert data["parts"][1]["chapters"][1] == {"url": "https://example.org", "title": "elsewhere"}
    assert "Encoder–decoder" not in out.read_text(encoding="utf-8")


def test_existing_only_toc_of_the_book_keeps_every_existing_document(tmp_path):
    out = bb.existing_only_toc(tmp_path / "_toc.yml")
    assert bb.toc_entries(out) == [d for d in bb.toc_entries(ROOT / "_toc.yml") if bb.existing(d)]


# ---------------------------------------------------------------- configuration instead of post-processing


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def test_the_theme_mode_is_configured():
    assert _config()["sphinx"]["config"]["html_context"]["default_mode"] == bb.theme_mode() == "auto"


def test_the_extensions_are_jupyter_books_own_without_thebe():
    """_config.yml replaces JB's extension list to leave sphinx-thebe out; when a JB update changes its
    list, this fails, and _config.yml's list must follow."""
    from jupyter_book.config import get_default_sphinx_config

    ours = _config()["sphinx"]["config"]["extensions"]
    assert "sphinx_thebe" in get_default_sphinx_config()["extensions"]
    assert ours == [e for e in get_default_sphinx_config()["extensions"] if e != "sphinx_thebe"] + [
        "sphinxcontrib.bibtex", "bookbuild.sphinx_ext.tl_book", "bookbuild.sphinx_ext.tl_math"]  # and the book's own
    assert _config()["launch_buttons"]["thebe"] is False  # the extension would be needed for thebe


# ---------------------------------------------------------------- the checks that fail the build

PAGE = """<!DOCTYPE html><html lang="en" data-theme="auto"><head>
<script>document.documentElement.dataset.mode = localStorage.getItem("mode") || "{mode}";</script>
{extra}</head><body data-default-mode="{mode}"><main>text</main></body></html>"""


def _site(tmp_path, mode="auto", extra=""):
    html = tmp_path / "html"
    _write(html / "index.html", '<meta http-equiv="Refresh" content="0; url=book/intro.html" />')  # as JB writes it
    _write(html / "book" / "intro.html", PAGE.format(mode="auto", extra=""))
    _write(html / "notebooks" / "ch.html", PAGE.format(mode=mode, extra=extra))
    return html


def test_check_site_passes_a_clean_site(tmp_path):
    assert bb.check_site(_site(tmp_path), mode="auto") == []


def test_check_site_fails_a_page_without_the_configured_mode(tmp_path):
    problems = bb.check_site(_site(tmp_path, mode=""), mode="auto")
    assert len(problems) == 1
    assert problems[0].startswith("notebooks/ch.html: no data-default-mode=\"auto\"")


@pytest.mark.parametrize("extra, what", [
    ('<script src="https://unpkg.com/thebe@0.8.2/lib/index.js"></script>', "loads from another host"),
    ('<link rel="stylesheet" href="//fonts.googleapis.com/css?family=Lato">', "loads from another host"),
    ('<script type="application/vnd.jupyter.widget-view+json">{}</script>', "ipywidgets output"),
])
def test_check_site_fails_what_the_browser_would_fetch_or_could_not_run(tmp_path, extra, what):
    problems = bb.check_site(_site(tmp_path, extra=extra), mode="auto")
    assert len(problems) == 1 and problems[0].startswith("notebooks/ch.html: ") and what in problems[0]


def test_check_site_fails_a_heavy_page(tmp_path):
    html = _site(tmp_path, extra="<!--" + "x" * bb.MAX_PAGE + "-->")
    assert [p.split(":")[0] for p in bb.check_site(html, mode="auto")] == ["notebooks/ch.html"]


def test_theme_mode_refuses_a_config_without_it(tmp_path):
    config = _write(tmp_path / "_config.yml", "title: x\nsphinx:\n  config:\n    html_static_path: [_assets]\n")
    with pytest.raises(SystemExit, match="html_context.default_mode is not set"):
        bb.theme_mode(config)
    _write(config, "sphinx:\n  config:\n    html_context:\n      default_mode: night\n")
    with pytest.raises(SystemExit, match="must be 'auto', 'light' or 'dark', got 'night'"):
        bb.theme_mode(config)


# ---------------------------------------------------------------- files the configuration names


def _names_in_the_repository() -> set[str]:
    names = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_")) and d not in ("node_modules", "__pycache__")]
        names.update(files)
    return names


def test_every_file_named_in_the_configuration_tools_and_prose_exists():
    """Paths into the repository (bookbuild/..., notebooks/..., binder/...) and every *.md named, in the
    configuration, the Makefile, CI and the workflows, the tools, the prose (README, CONTRIBUTING, book/) and the
    package. ``NN`` stands for a chapter's number (notebooks/NN_x.ipynb, check/chNN.py): not a file."""
    named_in = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CITATION.cff", ROOT / ".pre-commit-config.yaml",
                *(ROOT / ".github" / "workflows").glob("*.yml"),
                ROOT / "_config.yml", ROOT / "_toc.yml", ROOT / "Makefile", ROOT / ".ci" / "run",
                *(ROOT / "book").glob("*.md"), *(ROOT / "bookbuild").glob("*.py"), *(ROOT / "bookbuild").glob("*.sh"),
                *(ROOT / "bookbuild" / "site_assets").iterdir(),
                *(ROOT / "transformer_lite" / "book" / "web").iterdir(), *(ROOT / "transformer_lite").rglob("*.py")]
    names = _names_in_the_repository()
    top = "bookbuild|tests|notebooks|binder|benchmarks|transformer_lite|\\.ci"
    missing = []
    for f in named_in:
        text = f.read_text(encoding="utf-8")
        for ref in re.findall(r"(?<![\w./-])((?:%s)/[\w./-]*[\w-])" % top, text):
            page = ref.removesuffix(".html")  # or a page of the built site: its notebook or markdown file
            if not re.search(r"NN[_.]", ref) and not any((ROOT / f"{name}{ext}").exists() for name in (ref, page)
                                                         for ext in ("", ".ipynb", ".md")):
                missing.append(f"{f.relative_to(ROOT)}: {ref}")
        missing += [f"{f.relative_to(ROOT)}: {m}" for m in re.findall(r"[\w.-]+\.md\b", text) if m not in names]
    assert not missing


# ---------------------------------------------------------------- tqdm in the build's kernels

TQDM_CELLS = [
    "from tqdm.auto import tqdm, trange\nfor _ in tqdm(range(3), desc='auto'): pass",
    "for _ in tqdm(range(3), desc='explicit', disable=False): pass  # as train(..., progress=True) does",
    "for _ in trange(3, desc='trange'): pass",
    "from tqdm.notebook import tqdm as tqdm_notebook, tnrange\nfor _ in tqdm_notebook(tnrange(3)): pass",
    "from tqdm.autonotebook import tqdm as tqdm_autonotebook\nfor _ in tqdm_autonotebook(range(3)): pass",
]


def _run_cells(cells, env, cwd) -> list[dict]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute(env=env, cwd=str(cwd))
    return [o for cell in nb.cells for o in cell.outputs]


def _kinds(outputs) -> set:
    return {o.get("name") or ",".join(sorted(o.get("data", {}))) for o in outputs}


def test_tqdm_disable_alone_still_draws_a_widget_in_a_kernel(tmp_path):
    """Why bookbuild/kernel_startup.py exists. If this fails, tqdm honours TQDM_DISABLE in Jupyter now:
    set it in build_book.build_env and delete the start-up file."""
    env = bb.build_env(tmp_path / ".ipython")
    env["IPYTHONDIR"] = str(tmp_path / "plain-ipython")  # no start-up file
    env["TQDM_DISABLE"] = "1"
    widgets = [o for o in _run_cells(TQDM_CELLS[:1], env, tmp_path) if "application/vnd.jupyter.widget-view+json" in
               o.get("data", {})]
    assert widgets, "tqdm.auto drew no widget with TQDM_DISABLE=1: switch the build to it"


def test_the_builds_kernels_show_no_progress_output_at_all(tmp_path):
    env = bb.build_env(tmp_path / ".ipython")
    assert (tmp_path / ".ipython" / "profile_default" / "startup" / "00-transformer-lite-static.py").exists()
    assert env["TRANSFORMER_LITE_STATIC"] == "1"
    outputs = _run_cells(TQDM_CELLS, env, tmp_path)
    assert not outputs, _kinds(outputs)


def test_check_site_fails_a_misconception_note_left_as_a_plain_quote(tmp_path):
    quote = "<blockquote>\n<div><p><strong>Misconception.</strong> “X.”</p></div></blockquote>"
    problems = bb.check_site(_site(tmp_path, extra=quote), mode="auto")
    assert len(problems) == 1 and "misconception note left as a plain quote" in problems[0]


def test_check_site_fails_a_chinese_misconception_note_left_as_a_plain_quote(tmp_path):
    for lead in ("<strong>常见误解。</strong>", "<strong>常见误解</strong>。"):  # locales/zh_CN/STYLE.md: the second
        quote = f"<blockquote>\n<div><p>{lead}“X。”</p></div></blockquote>"
        problems = bb.check_site(_site(tmp_path, extra=quote), mode="auto")
        assert len(problems) == 1 and "misconception note left as a plain quote" in problems[0]


# ---------------------------------------------------------------- the book's Sphinx extension

def _doctree(markdown: str):
    from docutils.core import publish_doctree
    from myst_parser.docutils_ import Parser

    return publish_doctree(markdown, parser=Parser(), settings_overrides={"report_level": 5})


def test_the_extension_styles_a_misconception_note_and_nothing_else():

    from docutils import nodes

    from bookbuild.sphinx_ext import markup

    doctree = _doctree('> **Misconception.** "X is Y."\n>\n> **What is true.** Z.\n>\n> **Checked** below.\n\n'
                       "> **Note.** an ordinary quote\n")
    markup.convert(None, doctree)
    (box,) = list(doctree.findall(nodes.admonition))
    assert box["classes"] == ["misconception"] and box[0].astext() == "Misconception"
    assert box[1].astext() == "\"X is Y.\"" and box[2].astext().startswith("What is true.")
    (quote,) = list(doctree.findall(nodes.block_quote))  # the ordinary quote is left alone
    assert quote.astext().startswith("Note.")


def test_the_extension_drops_jupyterlabs_section_anchors_and_no_other_html():
    """The notebooks' `<div id="slug"></div>` lines before a heading (bookbuild/i18n.py anchors) are for JupyterLab; the
    site's section already has that id, so the extension removes them (one element per id, for axe), and runs
    before the deep-dive fold (a stray node at a deep dive's end would make an empty fold). Other HTML stays."""

    from docutils import nodes

    from bookbuild.sphinx_ext import markup

    doctree = _doctree('## A\n\ntext\n\n<div id="the-math"></div>\n\n## The math\n\n'
                       '<div id="ε-x"></div><div id="%CE%B5-x"></div>\n\n## ε x\n\n'
                       '<div id="keep" class="c"></div>\n\n'
                       '<div id="keep-2"></div>\nmore\n')
    raws = [r.astext() for r in doctree.findall(nodes.raw)]
    assert len(raws) == 4 and raws[0].startswith('<div id="the-math">'), raws
    markup.drop_jupyter_anchors(None, doctree)
    # a div with more than an id, and an HTML block that goes on past the div, are not such anchors
    assert [r.astext().strip() for r in doctree.findall(nodes.raw)] == ['<div id="keep" class="c"></div>',
                                                                        '<div id="keep-2"></div>\nmore']
    assert [t.astext() for t in doctree.findall(nodes.title)] == ["A", "The math", "ε x"]


def test_the_extension_styles_a_chinese_misconception_note_with_its_stop_outside_the_bold():

    from docutils import nodes

    from bookbuild.sphinx_ext import markup

    for source in ("> **常见误解**。“X 是 Y。”\n>\n> **事实**。Z。\n",
                   "> **常见误解。** “X 是 Y。”\n>\n> **事实**。Z。\n",
                   "> **常见误解**。X 是 Y。\n>\n> **事实**。Z。\n"):
        doctree = _doctree(source)
        markup.convert(None, doctree)
        (box,) = list(doctree.findall(nodes.admonition))
        assert box[0].astext() == "常见误解", source
        assert box[1].astext() in ("“X 是 Y。”", "X 是 Y。") and box[2].astext() == "事实。Z。", source


def test_our_webpack_macros_are_the_themes_without_fontawesome_js():
    """bookbuild/sphinx_ext/templates/static/webpack-macros.html drops the theme's 1.5 MB fontawesome.js from every
    page (its CSS draws the icons with web fonts); a theme update that changes the file must be followed."""
    import pydata_sphinx_theme

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    theme = theme / "static" / "webpack-macros.html"
    ours = ROOT / "bookbuild" / "sphinx_ext" / "templates" / "static" / "webpack-macros.html"
    theirs = [line for line in theme.read_text(encoding="utf-8").splitlines()
              if "scripts/fontawesome.js" not in line and "So that users can add custom icons" not in line]
    assert len(theirs) == len(theme.read_text(encoding="utf-8").splitlines()) - 2
    assert ours.read_text(encoding="utf-8").split("-#}\n", 1)[1].splitlines() == theirs


def test_the_build_fails_if_a_kernel_imported_the_package_from_the_checkout(tmp_path):
    """Every chapter runs from the package as pip installs it: the build's kernels record where they imported
    transformer_lite from (bookbuild/kernel_startup.py), and a record pointing into the checkout is a problem."""
    log = tmp_path / "imports"
    log.mkdir()
    (log / "101.txt").write_text("/x/.venv/lib/python3.11/site-packages/transformer_lite/__init__.py")
    assert bb.installed_package_used(log) == []
    (log / "102.txt").write_text(str(ROOT / "transformer_lite" / "__init__.py"))
    (problem,) = bb.installed_package_used(log)
    assert "from the checkout" in problem and "102" in problem


def test_the_chapters_start_longest_first_and_the_chinese_ones_a_little_ahead():
    """Both editions' chapters share the build's two kernels, the longest first; the Chinese ones run a little ahead,
    so that the Chinese Sphinx pass (the longer one, which starts once they have all run) starts while the last English
    chapters still run."""
    english = sorted((ROOT / "notebooks").glob("*.ipynb"))
    chinese = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
    chapters = [(p, 0) for p in english] + [(p, 1) for p in chinese]
    plain, ahead = bb.execution_order(chapters), bb.execution_order(chapters, ahead=1)
    assert sorted(map(str, plain)) == sorted(map(str, ahead)) == sorted(map(str, chapters))
    for order in (plain, ahead):
        for edition in (0, 1):  # within an edition, the longest first
            seconds = [bb.expected_seconds(p) for p, e in order if e == edition]
            assert seconds == sorted(seconds, reverse=True)
    # without ahead, each English chapter starts no later than its Chinese twin; with it, after it
    assert all(plain.index((p, 0)) < plain.index((ROOT / "notebooks" / "zh" / p.name, 1)) for p in english)
    assert all(ahead.index((p, 0)) > ahead.index((ROOT / "notebooks" / "zh" / p.name, 1)) for p in english)
    # a few English chapters, and only those, run after the last Chinese one: the Sphinx pass starts that early
    last_chinese = max(i for i, (_, e) in enumerate(ahead) if e == 1)
    after = ahead[last_chinese + 1:]
    assert all(e == 0 for _, e in after) and 3 <= len(after) <= 8, [p.stem for p, _ in after]
    assert ahead[0][1] == 1 and bb.expected_seconds(ahead[0][0]) == max(bb.expected_seconds(p) for p in english)


def test_the_kernels_record_where_they_import_the_package_from(tmp_path):
    env = {**bb.build_env(tmp_path / "ipython"), "TRANSFORMER_LITE_IMPORT_LOG": str(tmp_path / "imports")}
    _run_cells(["x = 1", "import transformer_lite", "y = 2"], env, tmp_path)
    (record,) = (tmp_path / "imports").glob("*.txt")
    import transformer_lite

    # the kernel runs the Python of this venv from an empty folder, so it finds what pip installed there
    assert Path(record.read_text()).name == "__init__.py"
    assert Path(record.read_text()).parent.name == Path(transformer_lite.__file__).parent.name


# ---------------------------------------------------------------- the Chinese edition's search


def _search_index(folder: Path, terms: dict, titleterms: dict | None = None) -> Path:
    index = {"terms": terms, "titleterms": titleterms or {}, "docnames": ["a"], "titles": ["A"]}
    _write(folder / "searchindex.js", "Search.setIndex(" + json.dumps(index, ensure_ascii=False) + ")")
    return folder


def test_the_build_fails_a_chinese_search_index_without_chinese_words(tmp_path):
    """Without jieba Sphinx's Chinese index holds no Chinese word (measured: 0, and 3,984 with it): the build fails."""
    from bookbuild.translation.search import search_words

    glossary = {w: 0 for w in search_words()}
    many = {chr(0x4E00 + i) + chr(0x4E00 + i + 1): 0 for i in range(bb.MIN_CHINESE_TERMS)}
    assert bb.chinese_search_problems(_search_index(tmp_path / "ok", {**many, **glossary}, {"注意力": 0})) == []
    latin_only = bb.chinese_search_problems(_search_index(tmp_path / "latin", {"attent": 0, "layer": 0}))
    assert len(latin_only) == 2 and "jieba" in latin_only[0] and "glossary terms" in latin_only[1]
    without_a_term = {k: v for k, v in {**many, **glossary}.items() if k != "束搜索"}
    problems = bb.chinese_search_problems(_search_index(tmp_path / "cut", without_a_term))
    assert len(problems) == 1 and "束搜索" in problems[0]
    assert "missing" in bb.chinese_search_problems(tmp_path / "nothing")[0]


def test_the_chinese_edition_needs_jieba(monkeypatch):
    import importlib.util

    from bookbuild.translation.search import require_jieba

    require_jieba()  # installed by `make install` (requirements.in)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jieba" else object())
    with pytest.raises(SystemExit, match="jieba"):
        require_jieba()


def test_the_glossarys_terms_are_words_of_the_chinese_search(tmp_path):
    """jieba (as Sphinx's Chinese search runs it) with the book's dictionary keeps the glossary's terms whole,
    and still indexes their parts; its own dictionary cuts 位置编码 into 位置 + 编码."""
    import jieba

    from bookbuild.translation.search import search_dictionary, search_words

    tokenizer = jieba.Tokenizer()
    assert "位置编码" not in set(tokenizer.cut_for_search("位置编码的波长"))
    words = search_dictionary(tmp_path)
    assert words == search_dictionary(tmp_path)
    assert words.read_text(encoding="utf-8").split() == search_words()
    tokenizer.load_userdict(str(words))
    for text, words in [("位置编码的波长", {"位置编码", "位置", "编码", "波长"}),
                        ("束搜索保留最好的假设", {"束搜索", "搜索"}),
                        ("训练时用教师强制和标签平滑", {"教师强制", "标签平滑"})]:
        assert words <= set(tokenizer.cut_for_search(text)), text


def test_the_chinese_search_language_splits_and_stems_as_sphinxs():
    """editions.py registers Sphinx's Chinese search with its Latin words in a set (its list made stem() scan 100k+
    words for each distinct word of a page): the same words, the same stems."""
    from types import SimpleNamespace

    from sphinx.search.zh import SearchChinese

    from bookbuild.sphinx_ext import editions

    registered = []
    app = SimpleNamespace(config=SimpleNamespace(language="zh_CN"), add_search_language=registered.append)
    editions.chinese_search(app, app.config)
    english = SimpleNamespace(config=SimpleNamespace(language="en"), add_search_language=registered.append)
    editions.chinese_search(english, english.config)
    assert len(registered) == 1 and registered[0].lang == "zh"
    ours, sphinxs = registered[0]({}), SearchChinese({})
    text = "残差连接让梯度在深层网络中流动：LayerNorm normalizes each token; the GPU runs attention heads at once."
    assert ours.split(text) == sphinxs.split(text)
    assert [ours.stem(w) for w in ours.split(text)] == [sphinxs.stem(w) for w in sphinxs.split(text)]


def test_the_lock_leaves_out_what_the_overrides_name_so_importing_nbformat_builds_no_grammar():
    """requirements-overrides.txt names packages `make lock` keeps out of requirements.lock (uv's --override, with a
    marker that never holds): rfc3987-syntax, which jsonschema imports at import time and which then builds a Lark
    grammar, about 2 CPU-seconds in each of the build's notebook runners and every process that imports nbformat."""
    import subprocess
    import sys

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    root = Path(bb.ROOT)
    lines = (root / "requirements-overrides.txt").read_text(encoding="utf-8").splitlines()
    overrides = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    locked = {canonicalize_name(name) for name in
              re.findall(r"^([A-Za-z0-9_.\-]+)==", (root / "requirements.lock").read_text(encoding="utf-8"), re.M)}
    assert [canonicalize_name(r.name) for r in overrides] == ["rfc3987-syntax"]
    for r in overrides:
        assert r.marker is not None and not r.marker.evaluate(), f"{r}: an override that leaves a package out"
        assert canonicalize_name(r.name) not in locked, f"{r.name} is in requirements.lock: run make lock"
    assert "--override requirements-overrides.txt requirements.in -o requirements.lock" in \
        (root / "Makefile").read_text(encoding="utf-8")
    probe = ("import importlib.util, sys; installed = importlib.util.find_spec('rfc3987_syntax') is not None; "
             "import nbformat, nbclient; print(installed, 'rfc3987_syntax' in sys.modules)")
    installed, imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                         check=True).stdout.split()
    if installed == "True":  # a venv made from an older lock (uv pip install adds, it never removes)
        pytest.skip("rfc3987-syntax is installed from an older requirements.lock: "
                    ".venv/bin/uv pip uninstall --python .venv/bin/python rfc3987-syntax lark")
    assert imported == "False"
