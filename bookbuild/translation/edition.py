"""The Chinese site: built by Sphinx from the English sources, the catalogs and the Chinese notebooks' runs."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from .notebooks import CODE_PROMPTS
from .paths import CATALOGS, LANGUAGE, LOCALES, ROOT, ZH_NOTEBOOKS
from .search import require_jieba, search_dictionary
from .sphinx_catalogs import sphinx_conf

SEARCH_BAR_TEXT = "搜索本书……"  # Jupyter Book's "Search this book..." (a theme option, not a message)

# _config.yml's html.extra_footer in Chinese (a theme option, not a message): the licences, as in English
FOOTER = ('文字和图：<a href="https://creativecommons.org/licenses/by-sa/4.0/">CC BY-SA 4.0</a>；'
          '代码：MIT（见仓库中的 LICENSE）；HSK 句子：hsk-sentences-audio 1.0.0，CC BY-SA 4.0。'
          '本站由仓库中的笔记本生成；站上的一切都由本站自己提供。')


def translated(msgid: str, page: str = "book/intro") -> str:
    """The Chinese of one English message of ``page`` (e.g. the book's title), from its catalog."""
    import polib

    for e in polib.pofile(str(CATALOGS / f"{page}.po")):
        if e.msgid == msgid and e.msgstr and "fuzzy" not in e.flags:
            return e.msgstr
    raise KeyError(f"{page}: no translation of {msgid!r}")


def build_edition(out: Path, doctrees: Path, notebooks: dict[str, Path], env: dict,
                  strict: bool = True) -> subprocess.CompletedProcess:
    """Build the Chinese edition into ``out`` with Sphinx: the English book's sources and configuration, the
    catalogs' translations, and each chapter read from ``notebooks`` ({docname: notebook}, zh_site_notebooks:
    the English markdown, the Chinese notebook's code cells and their outputs from its own execution) instead
    of its English file (sphinx_ext/editions.py, ``tl_notebook_sources``). Nothing is executed (mode "off")."""
    import yaml

    title = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]
    require_jieba()
    words = search_dictionary(doctrees)
    with tempfile.TemporaryDirectory(prefix="tl-zh-") as tmp:
        conf = sphinx_conf(Path(tmp), language=LANGUAGE, locale_dirs=[str(LOCALES)], gettext_compact=False,
                           html_title=translated(title), nb_execution_mode="off",
                           tl_notebook_sources={doc: str(path) for doc, path in sorted(notebooks.items())},
                           tl_nb_output_folder=str(doctrees.parent / "jupyter_execute_zh"),
                           html_search_options={"dict": str(words)}, tl_code_prompts=CODE_PROMPTS,
                           html_theme_options={"search_bar_text": SEARCH_BAR_TEXT, "extra_footer": FOOTER})
        cmd = [str(Path(sys.executable).parent / "sphinx-build"), "-b", "html", "-n", "--keep-going", "-c", str(conf),
               "-d", str(doctrees), str(ROOT), str(out)] + (["-W"] if strict else [])
        return subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True)


def site_notebook(english: dict, executed: dict, name: str = "") -> dict:
    """One chapter of the Chinese site: the English notebook's markdown cells (the catalogs translate them as Sphinx
    reads them; msgids are the English paragraphs, and the anchors stay the English slugs the site links to) and the
    executed Chinese notebook's code cells (Chinese comments and figure strings, with their outputs) in their place.
    The two correspond cell by cell, as chinese_notebook writes them: a different count, kind or cell id raises."""
    import copy

    ours, theirs = english.get("cells", []), executed.get("cells", [])
    if len(ours) != len(theirs):
        raise ValueError(f"{name}: the English notebook has {len(ours)} cells and the executed Chinese one "
                         f"{len(theirs)} (run `python -m bookbuild.i18n notebooks`)")
    nb = copy.deepcopy(english)
    for i, (en, zh) in enumerate(zip(ours, theirs)):
        if en["cell_type"] != zh["cell_type"] or en.get("id") != zh.get("id"):
            raise ValueError(f"{name}: cell {i} is a {en['cell_type']} cell with id {en.get('id')!r} in English and a "
                             f"{zh['cell_type']} cell with id {zh.get('id')!r} in the executed Chinese notebook "
                             "(run `python -m bookbuild.i18n notebooks`)")
        if en["cell_type"] == "code":
            nb["cells"][i] = copy.deepcopy(zh)
    return nb


def zh_site_notebooks(cache: Path, dest: Path, names: list[str] | None = None) -> dict[str, Path]:
    """{docname: notebook} for build_edition: for each Chinese notebook (``names``: every one), site_notebook of
    its English notebook and its execution from the jupyter-cache ``cache``, written into ``dest`` (a file is
    rewritten only when it changes, so an unchanged rebuild stays incremental). Raises KeyError when a Chinese
    notebook has no execution in the cache (it changed, or it failed), ValueError when the cells do not correspond."""
    import json

    import nbformat
    from jupyter_cache import get_cache

    store = get_cache(str(cache))
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for zh_path in sorted(ZH_NOTEBOOKS.glob("*.ipynb")):
        if names is not None and zh_path.stem not in names:
            continue
        english_path = ROOT / "notebooks" / zh_path.name
        if not english_path.exists():
            continue
        try:
            _, executed = store.merge_match_into_notebook(nbformat.read(str(zh_path), as_version=4))
        except KeyError:
            raise KeyError(f"{zh_path.relative_to(ROOT)} has no execution in {cache} "
                           "(it changed since, or it failed)") from None
        english = json.loads(english_path.read_text(encoding="utf-8"))
        nb = site_notebook(english, json.loads(nbformat.writes(executed)), zh_path.name)
        text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        target = dest / zh_path.name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        out[f"notebooks/{zh_path.stem}"] = target
    return out
