#!/usr/bin/env python3
"""The Chinese edition's catalogs: the English book's messages, and their translations.

    python tools/i18n.py extract   # the English book's messages -> _build/gettext/**/*.pot (about 10 s)
    python tools/i18n.py update    # extract, then bring locales/zh_CN/LC_MESSAGES/**/*.po up to date (sphinx-intl):
                                   # a changed paragraph turns fuzzy, a new one untranslated; then the code
                                   # catalogs locales/zh_CN/code/notebooks/*.po (as code-update)
    python tools/i18n.py code-update  # the code catalogs alone (no Sphinx run: about 2 s)
    python tools/i18n.py check     # extract, then list every message, prose or code, that is missing, untranslated,
                                   # fuzzy, malformed, against locales/zh_CN/STYLE.md's punctuation and units, or not
                                   # in terminology.yml's terms (exit 1 if any); then, as "report: ...", what the
                                   # rules of REPORT_ONLY find on the pages where they do not fail yet
    python tools/i18n.py fix [PAGE...] # STYLE.md's mechanical fixes in the catalogs (fix_style); check lists the rest
    python tools/i18n.py notebooks # write notebooks/zh/*.ipynb: the notebooks with their markdown in Chinese, their
                                   # code's comments and figure strings in Chinese, `setup(..., language="zh")`
                                   # and the solutions' toggles in Chinese, for Jupyter and Colab; and the landing
                                   # page's map in both languages (book/architecture_map.svg, .zh_CN.svg)
    python tools/i18n.py anchors   # before each heading of notebooks/*.ipynb that a section link targets, the line
                                   # <div id="slug"></div> that JupyterLab scrolls to (drop the stale ones); run it
                                   # after changing a heading or a link, then `notebooks`
    python tools/i18n.py package   # the package's own catalog (transformer_lite/book/locale/zh_CN.po: the checks'
                                   # feedback, figure labels, controls; tools/package_i18n.py): add new messages,
                                   # drop stale ones, list what is untranslated (exit 1 if any)

Sphinx's gettext builder cuts every prose paragraph of the notebooks' markdown cells and of book/*.md
into one message. Code cells are not Sphinx messages: their comments and the strings their figures show
(titles, axis labels, legends, alt text) are messages of a second set of catalogs, one per notebook,
``locales/zh_CN/code/notebooks/<stem>.po`` with ``msgctxt "comment"`` / ``msgctxt "figure"``, extracted by
tokenize and the AST (see "code cells" below for what is and is not a message), merged by ``update`` and put
back, token for token, into ``notebooks/zh/`` by ``notebooks``: names, data strings, printed words and numbers
stay exactly the English notebook's. The Chinese notebooks call ``setup(seed=..., language="zh")``, which
switches the package's own strings (checks' feedback, plotting helpers, controls) to Chinese.
The notebooks are not executed for this. tests/test_i18n.py runs ``check``: a change to the English
text or to a comment must update the Chinese in the same commit.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = "zh_CN"
LOCALES = ROOT / "locales"
CATALOGS = LOCALES / LANGUAGE / "LC_MESSAGES"
POT = ROOT / "_build" / "gettext"
# what the checks below compare between a message and its translation
CODE = re.compile(r"``?[^`]+``?")
MATH = re.compile(r"\$\$?[^$]+\$\$?")
LINK = re.compile(r"\]\(([^)\s]+)\)")
ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")
TAG = re.compile(r"</?[a-zA-Z][^>]*>")
HAN = re.compile(r"[\u3400-\u9fff]")
SEARCH_BAR_TEXT = "搜索本书……"  # Jupyter Book's "Search this book..." (a theme option, not a message)
# _config.yml's html.extra_footer in Chinese (a theme option, not a message): the licences, as in English
FOOTER = ('文字和图：<a href="https://creativecommons.org/licenses/by-sa/4.0/">CC BY-SA 4.0</a>；'
          '代码：MIT（见仓库中的 LICENSE）；HSK 句子：hsk-sentences-audio 1.0.0，CC BY-SA 4.0。'
          '本站由仓库中的笔记本生成；站上的一切都由本站自己提供。')


# The folded cells' toggles in Chinese (not messages: a solution's are cell metadata, mystnb.code_prompt_show/hide,
# the others myst-nb's defaults). The one table: notebooks/zh/ get the solutions' (chinese_notebook), the Chinese
# site all of them (build_edition -> tl_code_prompts, tools/sphinx_ext/tl_book.py). The prose says 显示答案.
CODE_PROMPTS = {"Show solution": "显示答案", "Hide solution": "隐藏答案",
                "Show code cell source": "显示代码", "Hide code cell source": "隐藏代码",
                "Open this deep dive": "展开这段深入内容", "Close this deep dive": "收起这段深入内容"}
# A solution's first line, its title in Colab (which folds a cell as a form with a title; Jupyter ignores it)
COLAB_TITLES = {"#@title Solution": "#@title 答案"}


PATHS = ("bibtex_bibfiles", "html_extra_path", "html_favicon", "html_logo", "html_static_path")


def sphinx_conf(dest: Path, **overrides) -> Path:
    """Write the book's Sphinx configuration (Jupyter Book's, from _config.yml and _toc.yml) as dest/conf.py.

    Its relative paths are made absolute (Sphinx reads them relative to the folder of conf.py);
    ``overrides`` replace or add settings (``html_theme_options`` is merged).
    """
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(user_yaml=ROOT / "_config.yml", sourcedir=ROOT,
                                 cli_config={"latex_individualpages": False})
    config["external_toc_path"] = str(ROOT / "_toc.yml")
    for key in PATHS:
        if isinstance(config.get(key), str):
            config[key] = str(ROOT / config[key])
        elif isinstance(config.get(key), list):
            config[key] = [str(ROOT / v) for v in config[key]]
    theme = dict(config.get("html_theme_options") or {}, **overrides.pop("html_theme_options", {}))
    config.update(overrides, html_theme_options=theme)
    dest.mkdir(parents=True, exist_ok=True)
    lines = [f"{key} = {config[key]!r}" for key in sorted(config)]
    (dest / "conf.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def extract(out: Path = POT) -> Path:
    """The English book's messages, one .pot per page, into ``out`` (emptied first: a renamed page's old .pot
    would otherwise make ``update`` create its catalog again)."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="tl-i18n-") as tmp:
        conf = sphinx_conf(Path(tmp) / "conf")
        cmd = [str(Path(sys.executable).parent / "sphinx-build"), "-b", "gettext", "-q", "-c", str(conf),
               "-D", "nb_execution_mode=off", "-D", "gettext_compact=0", "-D", "gettext_location=0",
               "-D", "gettext_uuid=0", "-d", str(Path(tmp) / "doctrees"), str(ROOT), str(out)]
        env = {"PYTHONPATH": str(ROOT / "tools" / "sphinx_ext")}
        proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"sphinx-build -b gettext failed:\n{proc.stderr[-3000:]}")
    add_theme_messages(out)
    return out


# The words the theme and Sphinx show on every page that the gettext builder does not extract (it reads the
# templates' _() calls, not Python code or a {% trans %} block with variables), per catalog domain: "sphinx" (Sphinx
# and pydata-sphinx-theme: the footer, the "#" beside a heading) and "booktheme" (sphinx-book-theme's header buttons,
# tools/sphinx_ext/tl_book.py theme_catalog). extract adds them to the .pot files, so that `update` keeps their
# translations and `check` requires them.
THEME_MESSAGES = {
    "sphinx": ("© Copyright %(copyright)s.", "Copyright %(copyright)s", "Link to this heading",
               "Link to this equation", "Link to this definition", "Link to this term", "Link to this table",
               "Link to this code", "Link to this image", "Link to this toctree"),
    "booktheme": ("Repository", "Open issue", "Source repositories", "Launch interactive content",
                  "Launch on Colab", "Launch on Binder"),
}


def add_theme_messages(pot_dir: Path) -> None:
    import polib

    for domain, msgids in THEME_MESSAGES.items():
        path = pot_dir / f"{domain}.pot"
        pot = polib.pofile(str(path), wrapwidth=0) if path.exists() else polib.POFile(wrapwidth=0)
        if not path.exists():
            pot.metadata = {"Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "8bit"}
        known = {e.msgid for e in pot}
        for msgid in msgids:
            if msgid not in known:
                pot.append(polib.POEntry(msgid=msgid, msgstr=""))
        pot.save(str(path))


def pages(pot_dir: Path = POT) -> dict[str, Path]:
    """{page: .pot} for the extracted messages, e.g. "notebooks/05_add_norm_ffn" -> .../05_add_norm_ffn.pot."""
    return {str(p.relative_to(pot_dir).with_suffix("")): p for p in sorted(pot_dir.rglob("*.pot"))}


def is_display_math(msgid: str) -> bool:
    """A $$...$$ block reaches the catalog as its LaTeX alone: starting with a newline, without the $$."""
    return msgid.startswith("\n") and "$" not in msgid


def rendered(text: str) -> dict:
    """What markdown-it (MyST's parser) makes of a message: counts of bold, italic, code and links.
    Chinese punctuation can keep a closing ** from closing (**事实。**后面): the counts must match the English."""
    from markdown_it import MarkdownIt

    counts: dict[str, int] = {}
    for tok in MarkdownIt("commonmark").parseInline(text):
        for child in tok.children or []:
            if child.type in ("strong_open", "em_open", "code_inline", "link_open"):
                counts[child.type] = counts.get(child.type, 0) + 1
    return counts


def _prose(text: str) -> str:
    for rx in (CODE, MATH, ROLE, TAG):
        text = rx.sub(" ", text)
    return LINK.sub("]", text)


def message_problems(msgid: str, msgstr: str, fuzzy: bool = False, may_stay_english: bool = False) -> list[str]:
    """What is wrong with one translation (an empty list: nothing)."""
    if not msgstr.strip():
        return ["untranslated"]
    out = ["fuzzy: the English changed since it was translated"] if fuzzy else []
    for name, rx in (("code spans", CODE), ("math", MATH), ("link targets", LINK), ("roles", ROLE)):
        a, b = sorted(rx.findall(msgid)), sorted(rx.findall(msgstr))
        if name == "math":  # the words in a formula's \text{…} are translated (STYLE.md), its symbols are not
            a, b = (sorted(FORMULA_TEXT.sub(r"\\text{}", m) for m in x) for x in (a, b))
        if a != b:
            out.append(f"{name} differ from the English: {sorted(set(a) ^ set(b))}")
    if is_display_math(msgid):
        return out
    if rendered(msgid) != rendered(msgstr):
        out.append(f"renders differently (bold/italic/code/links): {rendered(msgid)} vs {rendered(msgstr)}")
    words = re.findall(r"[A-Za-z]{2,}", _prose(msgid))
    if len(words) >= 3 and not HAN.search(_prose(msgstr)) and not may_stay_english:
        out.append("no Chinese in a prose message")
    return out


SHAPE_LETTERS = {"model width, d_model", "number of attention heads", "width of one head, D / H"}


def kept_in_english(page: str, msgid: str) -> bool:
    """The glossary's English column: a term's English name (a whole bold cell, or a cell of the table of shape
    letters) is kept in English in the Chinese edition too, next to the Chinese column. Nothing else is."""
    return page == "book/glossary" and (bool(re.fullmatch(r"\*\*[^*]+\*\*", msgid)) or msgid in SHAPE_LETTERS)


def check(pot_dir: Path = POT, catalogs: Path = CATALOGS, rules: Path | None = None) -> list[str]:
    """Every message of every page translated, not fuzzy, well formed and in STYLE.md's punctuation and units
    (style_problems, unit_problems; ``rules``: terminology.yml, for its exceptions); each problem names page and
    paragraph."""
    import polib

    problems, config = [], load_rules(rules or TERMINOLOGY)
    for page, pot in pages(pot_dir).items():
        po_path = catalogs / f"{page}.po"
        if not po_path.exists():
            problems.append(f"{page}: no catalog {po_path} (run `python tools/i18n.py update`)")
            continue
        po = {e.msgid: e for e in polib.pofile(str(po_path)) if not e.obsolete}
        done = []
        for entry in polib.pofile(str(pot)):
            e = po.get(entry.msgid)
            found = ["missing: a new or changed English paragraph"] if e is None else \
                message_problems(e.msgid, e.msgstr, "fuzzy" in e.flags, kept_in_english(page, e.msgid))
            if e is not None and e.msgstr and "fuzzy" not in e.flags:
                found += style_problems(page, e.msgid, e.msgstr, config)
                done.append((e.msgid, e.msgstr))
            problems += [f"{page}: {p}: {entry.msgid[:100]!r}" for p in found]
        problems += [f"{page}: {p}" for p in unit_problems(page, done, config)]
    return problems


def reports(pot_dir: Path = POT, catalogs: Path = CATALOGS, code_catalogs: Path | None = None) -> list[str]:
    """What ``check`` prints without failing (REPORT_ONLY): the findings of the rules that only report on a page,
    and (first_use_problems) a chapter's terms whose English the Chinese does not give at their first use."""
    import polib

    out, rules = [], load_rules()
    for page, pot in pages(pot_dir).items():
        po_path = catalogs / f"{page}.po"
        if not po_path.exists():
            continue
        po = {e.msgid: e for e in polib.pofile(str(po_path)) if not e.obsolete and e.msgstr and "fuzzy" not in e.flags}
        done = [(e.msgid, e.msgstr) for e in (po.get(x.msgid) for x in polib.pofile(str(pot))) if e is not None]
        found = [p for msgid, msgstr in done for p in style_problems(page, msgid, msgstr, rules, report=True)]
        if report_only("first-use English", page):
            found += first_use_problems(page, done, rules)
        out += [f"{page}: {p}" for p in found]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        path, page = code_catalog_path(notebook, code_catalogs or CODE_CATALOGS), f"code/{notebook.stem}"
        if path.exists():
            out += [f"{page} [{e.msgctxt}]: {p}: {e.msgid[:100]!r}" for e in polib.pofile(str(path))
                    if not e.obsolete and e.msgstr and "fuzzy" not in e.flags
                    for p in code_style_problems(page, e.msgid, e.msgstr, rules, report=True, context=e.msgctxt)]
    return out


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
    of its English file (tools/sphinx_ext/tl_book.py, ``tl_notebook_sources``). Nothing is executed (mode "off")."""
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
        env = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tools" / "sphinx_ext"),
                                                                  env.get("PYTHONPATH", "")])))
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
                         f"{len(theirs)} (run `python tools/i18n.py notebooks`)")
    nb = copy.deepcopy(english)
    for i, (en, zh) in enumerate(zip(ours, theirs)):
        if en["cell_type"] != zh["cell_type"] or en.get("id") != zh.get("id"):
            raise ValueError(f"{name}: cell {i} is a {en['cell_type']} cell with id {en.get('id')!r} in English and a "
                             f"{zh['cell_type']} cell with id {zh.get('id')!r} in the executed Chinese notebook "
                             "(run `python tools/i18n.py notebooks`)")
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


# -- search: Chinese words in the index ---------------------------------------------------------------------
# Sphinx's Chinese search (sphinx/search/zh.py) cuts the text into words with jieba (requirements.in), and only
# when jieba imports: without it the index holds no Chinese word and the search finds pages by their titles alone.
# The browser looks a query up as one word: jieba's own dictionary cuts 位置编码 into 位置 + 编码 and 束搜索 into
# 束 + 搜索, so a reader typing the book's terms would find nothing. The glossary's Chinese terms are therefore
# added to jieba's dictionary (Sphinx's html_search_options "dict"); its search mode indexes the parts as well.


def require_jieba() -> None:
    import importlib.util

    if importlib.util.find_spec("jieba") is None:
        raise SystemExit("jieba is not installed (requirements.in; run `make install`): without it the Chinese "
                         "edition's search index holds no Chinese word")


def search_words() -> list[str]:
    """The glossary's Chinese terms that jieba can take as words (Han characters only, no spaces), in order."""
    words = [z for _, _, zhs in glossary_terms() for z in zhs if re.fullmatch(r"[\u3400-\u9fff]{2,}", z)]
    return list(dict.fromkeys(words))


def search_dictionary(folder: Path) -> Path:
    """jieba's user dictionary (one word a line) of the glossary's terms, for html_search_options["dict"], written
    into ``folder`` under a name that changes with its words only: Sphinx rewrites every page (and re-indexes it)
    when the option changes, so an unchanged dictionary keeps an incremental build incremental."""
    import hashlib

    text = "".join(f"{w}\n" for w in search_words())
    dest = folder / f"search-words-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
    folder.mkdir(parents=True, exist_ok=True)
    if not dest.exists():
        dest.write_text(text, encoding="utf-8")
    return dest


# -- terminology: the glossary's Chinese terms, wherever the English term appears ---------------------------

GLOSSARY = ROOT / "book" / "glossary.md"
TERMINOLOGY = LOCALES / LANGUAGE / "terminology.yml"


def glossary_terms() -> list[tuple[str, list[str], list[str]]]:
    """The glossary's table as ``(term, English forms, Chinese forms)``: "causal mask (look-ahead mask)" gives
    both English names; "因果掩码（前瞻掩码）" both Chinese ones."""
    terms = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| \*\*(.+?)\*\* \| (.+?) \|", line)
        if m:
            en, zh = m.groups()
            ens = [re.sub(r"\s*\(.*?\)", "", en).strip()] + [x.strip() for x in re.findall(r"\((.*?)\)", en)]
            zhs = [re.sub(r"（.*?）|\(.*?\)", "", zh).strip()] + [x.strip() for x in re.findall(r"（(.*?)）", zh)]
            terms.append((en, [e for e in ens if e], [z for z in zhs if z]))
    return terms


def load_rules(rules: Path = TERMINOLOGY) -> dict:
    """terminology.yml: ``aliases``, ``forbidden`` (Chinese forms never used for a term) and ``exceptions``."""
    import yaml

    return (yaml.safe_load(rules.read_text(encoding="utf-8")) if rules.exists() else None) or {}


def excused(rules: dict, page: str, msgid: str, kind: str, name: str) -> bool:
    """Whether terminology.yml's ``exceptions`` excuse one message of ``page`` from one check: ``kind`` is "term"
    (a glossary or forbidden term) or "rule" (one of RULE_NAMES); the entry names the start of the English."""
    return any(x.get("page") == page and x.get(kind) == name and msgid.startswith(x.get("english", "\0"))
               for x in rules.get("exceptions") or [])


def forbidden_problems(page: str, msgid: str, msgstr: str, rules: dict) -> list[str]:
    """The Chinese forms STYLE.md rules out for a term (terminology.yml ``forbidden``): 栈 for "stack" (unless the
    English speaks of the data structure), 屏蔽 / 遮挡 / 掩蔽 for the verb "mask", 软件包 / 代码包 / 本包 for
    "package". Words that merely contain a form (基本包括, 笔记本包含) are listed under ``not_in``."""
    out = []
    for rule in rules.get("forbidden") or []:
        text = msgstr
        for word in rule.get("not_in") or []:
            text = text.replace(word, " ")
        found = [f for f in rule["never"] if f in text]
        if not found or any(u.lower() in msgid.lower() for u in rule.get("unless_english") or []):
            continue
        if excused(rules, page, msgid, "term", rule["term"]):
            continue
        out.append(f"{page}: {rule['term']!r} is {rule['use']}, never {' / '.join(found)}: "
                   f"{msgid[:60]!r} -> {msgstr[:60]!r}")
    return out


def terminology_problems(catalogs: Path = CATALOGS, rules: Path = TERMINOLOGY) -> list[str]:
    """Every message whose English uses a glossary term and whose Chinese has none of that term's Chinese forms,
    and every message that uses a form terminology.yml forbids (``forbidden_problems``; the glossary included).

    ``rules`` (YAML) lists, per term, the other forms that count (``aliases``: e.g. 注意力 inside 自注意力), the
    forms never used (``forbidden``) and the messages excused, each with its reason (``exceptions``: page, the
    start of the English, term)."""
    import polib

    config = load_rules(rules)
    aliases = config.get("aliases") or {}
    excused = {(x["page"], x["term"], x["english"]) for x in config.get("exceptions") or [] if "term" in x}
    terms = glossary_terms()
    known = {t for t, _, _ in terms}
    problems = [f"{rules.name}: {t!r} is not a glossary term" for t in aliases if t not in known]
    for po_path in sorted(catalogs.rglob("*.po")):
        page = str(po_path.relative_to(catalogs).with_suffix(""))
        for e in polib.pofile(str(po_path)):
            if e.obsolete or not e.msgstr:
                continue
            problems += forbidden_problems(page, e.msgid, e.msgstr, config)
            if page == "book/glossary":  # the glossary itself names every term in both languages
                continue
            if is_display_math(e.msgid):  # a formula is its own translation
                continue
            english = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|\{[a-z:]+\}`[^`]*`", " ", e.msgid)
            for term, ens, zhs in terms:
                found = [m.group(0) for x in ens
                         for m in re.finditer(r"(?<![\w-])" + re.escape(x) + r"(?:s|es)?(?![\w-])", english, re.I)]
                if not found:
                    continue
                if any(z in e.msgstr for z in zhs + list(aliases.get(term) or [])):
                    continue
                if all(f in e.msgstr for f in found):  # kept verbatim: a title, a name, a label the code prints
                    continue
                if any((page, term) == (p, t) and e.msgid.startswith(x) for p, t, x in excused):
                    continue
                problems.append(f"{page}: {term!r} should be {' / '.join(zhs)}: {e.msgid[:80]!r} -> {e.msgstr[:60]!r}")
    return problems


# -- style: the punctuation and the units of locales/zh_CN/STYLE.md ----------------------------------------------
# Each rule reads a message's Chinese without its code spans, formulas, roles, HTML tags and link targets (each
# replaced by HOLE, which is neither a space nor a letter nor punctuation), so `a, b` or $f(x)$ never trips it.

HOLE = "\ue000"
_H = r"[\u3400-\u9fff]"  # a Chinese character
_STOPS = "，。：；！？、"  # full-width punctuation that a space must neither follow nor precede
_CLOSE = _STOPS + "）》」』”"  # ... and the closing brackets and quotes, which a space must not follow
STYLE_RULES = {  # name: (pattern, what is wrong and what to write instead)
    "percent": (re.compile(r"\d(?:[ \u00a0]+[%％]|％)"),
                "a space before %, or a full-width ％: write 15% (no space, half-width %)"),
    "space after punctuation": (re.compile(f"[{_CLOSE}][*_]*[ \u00a0]+(?=[^ \u00a0])"),
                                "a space after full-width punctuation: write 。后面 (no space); after bold or italic "
                                "put the punctuation outside the markers, **常见误解**。后面, since **常见误解。**后面 "
                                "does not render as bold"),
    "space before punctuation": (re.compile(f"(?<=[^ \u00a0\\n{HOLE}])[ \u00a0]+[*_]*[{_STOPS}]"),
                                 "a space before full-width punctuation: write Mac，好 (no space)"),
    "ASCII quotes": (re.compile(r'"[^"\n]*"'),
                     "ASCII quotes in a Chinese message: write “…” (full-width), around English words too"),
    "ASCII punctuation": (re.compile(f"(?<={_H})[ ]?[,;:!?][ ]?(?={_H})|(?<={_H})\\((?=[^)]*\\))|"
                                     f"\\)(?={_H})"),
                          "ASCII , ; : ! ? ( ) next to Chinese characters: write ，；：！？（ ） (a shape such as "
                          "(B, S, D) keeps its ASCII parentheses, with a space before it)"),
    "exercise title": (re.compile(r"练习\s*[0-9A-Z]+\.\d+\s*(?:[—–-]+|:)"),
                       "an exercise title with a dash or ASCII colon: write 练习 3.1：标题 (full-width colon)"),
    # a lone … against a Chinese character or full-width punctuation; a sequence in notation (1, 2, …, 5) keeps it
    "ellipsis": (re.compile(f"(?<=[\u3400-\u9fff{_STOPS}”])…(?!…)|(?<!…)…(?={_H})"),
                 "a single … in Chinese text: write …… (two U+2026); a sequence in notation, 1, 2, …, 5, keeps one"),
    # a lone — (a dash is two U+2014), and a reference list's `{cite}` — … (a role is a HOLE here)
    "dash": (re.compile(f"(?<!—)—(?!—)|(?<={HOLE})[ \u00a0]+——"),
             "a single — or a space before ——: write —— (two U+2014), `{cite}`——… in a reference list "
             "(as appendices A and C), “指令——答案” between two nouns"),
}
# Rules that `check` only reports on some pages, while the chapters they still flag are being corrected: there
# their findings are printed after the problems, as "report: ...", and neither the exit status nor
# tests/test_i18n.py counts them; on every other page (the package's catalog among them) they are enforced.
# {rule: the page prefixes where it only reports}. A rule leaves this table once it reports nothing.
REPORT_ONLY = {"ellipsis": ("notebooks/",), "dash": ("notebooks/",), "figure numbers": ("code/",),
               "first-use English": ("notebooks/",)}


def report_only(rule: str, page: str) -> bool:
    """Whether ``rule`` only reports on ``page`` (REPORT_ONLY)."""
    return page.startswith(REPORT_ONLY.get(rule, ("\0",)))


# Counts written with Chinese units (1.1 亿, 6300 万) or with Latin ones (110M, 1.5B): one style per page. A model's
# name keeps its size (Llama 2 7B, Qwen2.5-0.5B): MODEL_NAME is removed first.
UNITS_ZH = re.compile(r"\d+(?:\.\d+)?\s*[亿万](?!一)")
UNITS_EN = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?\s?[MB](?![\w-])")
MODEL_NAME = re.compile(r"[A-Za-z][\w.]*(?:[ -]\d[\d.]*)?[ -]\d+(?:\.\d+)?[MB](?![\w-])")


# every rule a terminology.yml exception may name under `rule:`
RULE_NAMES = (*STYLE_RULES, "exercise instructions", "formula text", "units", "figure numbers", "first-use English")
# \text{…} in a display formula (its own message): words are translated (\text{因果掩码}), labels are not
FORMULA_TEXT = re.compile(r"\\text\{([^{}]*)\}")


# The exercises' instructions, one wording for every variant of the English "Each exercise has a cell for your
# answer, a one-line check to run after it, and a (worked) solution folded ..." (the parenthesis only where the
# English names the `...` to replace); a chapter may add sentences after it.
EXERCISE_INSTRUCTIONS = ("每道练习有三部分：一个供你作答的单元格{}，一行作答后运行的检查，"
                         "以及一份折叠在“显示答案”下的完整解答。")
EXERCISE_BLANK = "（把其中的 `...` 换成你的答案）"


def exercise_instructions(msgid: str) -> str | None:
    """The Chinese the exercises' instructions must start with, or None if ``msgid`` is not those instructions."""
    if not msgid.startswith("Each exercise has"):
        return None
    return EXERCISE_INSTRUCTIONS.format(EXERCISE_BLANK if "`...`" in msgid else "")


def _style_text(text: str) -> str:
    for rx in (ROLE, CODE, MATH, TAG):  # a role before the code span that ends it
        text = rx.sub(HOLE, text)
    return re.sub(r"https?://\S+", HOLE, LINK.sub("]" + HOLE, text))


def style_problems(page: str, msgid: str, msgstr: str, rules: dict | None = None, report: bool = False) -> list[str]:
    """What one translation does against STYLE.md's punctuation rules (STYLE_RULES), each with the text found and
    what to write instead; a message listed in terminology.yml's ``exceptions`` under ``rule`` is excused. The
    rules that only report on ``page`` (REPORT_ONLY) are left out, or with ``report``, they alone are applied."""
    rules = load_rules() if rules is None else rules
    if report:
        if not HAN.search(msgstr) or is_display_math(msgid):
            return []
        text = _style_text(msgstr)
        return [_style_finding(name, rx, advice, text) for name, (rx, advice) in STYLE_RULES.items()
                if report_only(name, page) and rx.search(text) and not excused(rules, page, msgid, "rule", name)]
    if is_display_math(msgid):  # a formula: its words in \text{…} are translated, its symbols are not
        words = [t for t in FORMULA_TEXT.findall(msgstr) if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", t)]
        if words and not excused(rules, page, msgid, "rule", "formula text"):
            return [f"formula text: English words in a formula: write them in Chinese, e.g. \\text{{因果掩码}} for "
                    f"\\text{{causal mask}} (a symbol's label such as d_\\text{{model}} stays); found {words[:3]}"]
        return []
    inline = [t for m in MATH.findall(msgstr) for t in FORMULA_TEXT.findall(m)
              if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", t)]
    if inline and HAN.search(msgstr) and not excused(rules, page, msgid, "rule", "formula text"):
        return [f"formula text: English words in an inline formula: write them in Chinese, e.g. \\text{{批大小}} for "
                f"\\text{{batch size}} (a symbol's label such as \\mu_{{\\text{{batch}}}} stays); found {inline[:3]}"]
    if not HAN.search(msgstr):
        return []
    text, out = _style_text(msgstr), []
    for name, (rx, advice) in STYLE_RULES.items():
        if rx.search(text) and not report_only(name, page) and not excused(rules, page, msgid, "rule", name):
            out.append(_style_finding(name, rx, advice, text))
    wording = exercise_instructions(msgid)
    if wording and not msgstr.startswith(wording) and not excused(rules, page, msgid, "rule", "exercise instructions"):
        out.append(f"exercise instructions: not the one wording; write {wording!r} (then any sentences of this page)")
    return out


def _style_finding(name: str, rx: re.Pattern, advice: str, text: str) -> str:
    shown = ", ".join(repr(text[max(0, m.start() - 6):m.end() + 6].replace(HOLE, "…"))
                      for m in list(rx.finditer(text))[:3])
    return f"{name}: {advice}; found {shown}"


def taught_in() -> dict[str, set[str]]:
    """{glossary term: the stems of the chapters its "taught in" cell links to}, e.g. "label smoothing" ->
    {"10_training"}."""
    out = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"\| \*\*(.+?)\*\* \|.*\|([^|]*)\|\s*$", line):
            out[m.group(1)] = set(re.findall(r"notebooks/([\w-]+)\.ipynb", m.group(2)))
    return out


# A bold phrase of the English taken as a term the chapter introduces (**intervention**, **near miss**): lower-case
# words, one of 8 letters or more, or two to four that do not start as emphasis does (**very first step**)
BOLD_TERM = re.compile(r"(?:[a-z][a-z-]{7,}|[a-z][a-z-]+(?: [a-z][a-z-]+){1,3})")
EMPHASIS = {"very", "not", "only", "all", "every", "no", "one", "two", "the", "a", "an", "your", "half", "small",
            "too", "more", "less", "same", "each", "any", "without", "with", "both", "never", "always", "much"}


def first_use_problems(page: str, messages: list[tuple[str, str]], rules: dict | None = None) -> list[str]:
    """STYLE.md §2 on one chapter (``messages``: its (msgid, msgstr) pairs): a term the chapter introduces whose
    English its Chinese never gives, as **标签平滑**（label smoothing） does. Where the gloss stands is left to
    the translator (a title or a list of what the chapter teaches may come first); that it is missing is
    reported. The terms a chapter introduces: the glossary's terms that link to it in their "taught in" column,
    and the phrases its English sets in bold (BOLD_TERM). A term whose Chinese carries its English already
    (KV 缓存) or an abbreviation terminology.yml accepts (RNN, LayerNorm) counts as given."""
    rules = load_rules() if rules is None else rules
    aliases, stem = rules.get("aliases") or {}, page.rsplit("/", 1)[-1]
    taught = taught_in()
    terms = [(en, ens, zhs + [a for a in aliases.get(en) or [] if re.search(r"[A-Za-z]{2}", a)])
             for en, ens, zhs in glossary_terms() if stem in taught.get(en, ())]
    known = {x.lower() for _, ens, _ in glossary_terms() for x in ens}
    given, told, out = " ".join(_prose(msgstr) for _, msgstr in messages).lower(), set(), []
    for msgid, _ in messages:
        if is_display_math(msgid):
            continue
        english = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|\{[a-z:]+\}`[^`]*`", " ", msgid)
        bold = [(b, [b], []) for b in re.findall(r"\*\*([^*]+)\*\*", english)
                if BOLD_TERM.fullmatch(b) and b.split()[0] not in EMPHASIS and b.lower() not in known]
        for term, ens, zhs in terms + bold:
            if term in told or not any(re.search(r"(?<![\w-])" + re.escape(x) + r"(?:s|es)?(?![\w-])", english, re.I)
                                       for x in ens):
                continue
            told.add(term)
            if any(x.lower() in given for x in ens) or any(re.search(r"[A-Za-z]{2}", z) and z.lower() in given
                                                          for z in zhs):
                continue
            if excused(rules, page, msgid, "rule", "first-use English"):
                continue
            shown = ens[0] if not ens[0][:1].isupper() or ens[0][1:2].isupper() else ens[0].lower()
            out.append(f"first-use English: the chapter never gives the English of {term!r}: write 中文（{shown}）at "
                       f"its first use, here: {msgid[:60]!r}")
    return out


def figure_number_problems(msgstr: str) -> list[str]:
    """STYLE.md §5 in a Chinese figure string (msgctxt "figure"): a format field with a thousands separator
    ({n:,} shows 25,472) and a Latin unit after a number or field ({x / 1e3:.0f}k, 63.0 M) instead of 万 / 亿. Their
    fields are the English string's, so the fix starts in the English notebook (a field without `,`; a count
    computed in units of 1e4)."""
    if not HAN.search(msgstr):
        return []
    found = [f for f in format_fields(msgstr) if re.search(r"[,_]", f.rsplit(":", 1)[-1]) and ":" in f
             and not re.search(r"[\]\)'\"]", f.rsplit(":", 1)[-1])]
    found += [m.group(0) for m in re.finditer(r"(?:\}|\d)[ ]?[kKMB](?![\w-])", MODEL_NAME.sub(HOLE, msgstr))]
    if not found:
        return []
    return [f"figure numbers: a thousands separator or a k / M / B unit in a Chinese figure string: write 25472 "
            f"(a field without `,`) and 万 / 亿 (约 {{n / 1e4:.0f}} 万个词元); found {found[:3]}"]


def unit_problems(page: str, messages: list[tuple[str, str]], rules: dict | None = None) -> list[str]:
    """A page that writes counts both with 亿/万 and with M/B (``messages``: its (msgid, msgstr) pairs)."""
    rules = load_rules() if rules is None else rules
    zh, en = [], []
    for msgid, msgstr in messages:
        if is_display_math(msgid) or excused(rules, page, msgid, "rule", "units"):
            continue
        text = MODEL_NAME.sub(HOLE, _style_text(msgstr))
        zh += UNITS_ZH.findall(text)
        en += UNITS_EN.findall(text)
    if zh and en:
        return [f"units: counts written both as {', '.join(dict.fromkeys(zh))} and as {', '.join(dict.fromkeys(en))}"
                f" on one page: use 亿/万 in prose throughout (1.1 亿, 1.24 亿)"]
    return []


def fix_style(msgid: str, msgstr: str) -> str:
    """``msgstr`` with STYLE.md's mechanical fixes: a bold or italic lead-in's full-width punctuation moved
    outside the markers with the space after it dropped (**常见误解。** 后面 -> **常见误解**。后面), other spaces
    around full-width punctuation dropped, 15 % -> 15%, ASCII "…" -> “…”, ”␣{cite} -> ”{cite}, an exercise
    title's dash -> 练习 N.M：(its own colon -> ——), and the exercises' one instruction wording. Code spans,
    formulas, roles, tags and link targets are left alone, and a fix that would change what the message renders
    or its code, math or links is not made. Terms and units need a translator."""
    def prose(text: str) -> str:  # the fixes of the text outside code, math, roles, tags and link targets
        text = re.sub(r"([。：？！])\*\*[ \u00a0]", r"**\1", text)
        text = re.sub(r"([。？])\*(?!\*)[ \u00a0]", r"*\1", text)
        text = re.sub(r"(\d)[ \u00a0]*[%％]|(\d)％", lambda m: (m.group(1) or m.group(2)) + "%", text)
        if text.count('"') % 2 == 0:  # ASCII quotes -> “…”, which take no space on either side
            text = re.sub(r'[ \u00a0]*"([^"\n]*)"[ \u00a0]*', r"“\1”", text)
        text = re.sub(f"([{_CLOSE}])([*_]*)[ \u00a0]+(?=\\S)", r"\1\2", text)
        return re.sub(f"(?<=\\S)[ \u00a0]+([*_]*[{_STOPS}])", r"\1", text)

    protected = re.compile("|".join(f"(?:{rx.pattern})" for rx in (ROLE, CODE, MATH, TAG))
                           + r"|\]\([^)\s]+\)|https?://\S+")
    pieces, at = [], 0
    for m in protected.finditer(msgstr):
        pieces += [prose(msgstr[at:m.start()]), m.group(0)]
        at = m.end()
    out = "".join(pieces + [prose(msgstr[at:])])
    out = re.sub(r"” (\{[a-z:]+\}`)", r"”\1", out)  # a citation right after a closing quote

    def title(m: re.Match) -> str:
        head, rest = m.group(1), m.group(2)
        return f"**练习 {head}：" + rest.replace("：", "——", 1)
    out = re.sub(r"\*\*练习 ([0-9A-Z]+\.\d+)\s*[—–-]+\s*([^*]*)", title, out)
    if re.match(r"\*\*Exercise \S+ [—–-] Bug hunt", msgid):  # one name for the bug hunts: 找 bug
        out = re.sub(r"(\*\*练习 [0-9A-Z]+\.\d+：)(?:找错|排错|捉虫)——", r"\1找 bug——", out)
    wording = exercise_instructions(msgid)
    if wording and not out.startswith(wording) and "。" in out:
        out = wording + out.split("。", 1)[1]
    if out != msgstr and set(message_problems(msgid, out)) - set(message_problems(msgid, msgstr)):
        return msgstr
    return out


def fix_catalogs(catalogs: Path = CATALOGS, pages: list[str] | None = None) -> dict[str, int]:
    """Apply ``fix_style`` to every translated message of ``pages`` (default: every catalog); {page: messages
    changed}. Run ``check`` afterwards: what remains needs a translator."""
    import polib

    changed = {}
    for po_path in sorted(catalogs.rglob("*.po")):
        page = str(po_path.relative_to(catalogs).with_suffix(""))
        if pages is not None and page not in pages:
            continue
        po, n = polib.pofile(str(po_path), wrapwidth=0), 0
        for e in po:
            if e.obsolete or not e.msgstr or is_display_math(e.msgid):
                continue
            new = fix_style(e.msgid, e.msgstr)
            if new != e.msgstr:
                e.msgstr, n = new, n + 1
        if n:
            po.save(str(po_path))
            changed[page] = n
    return changed


# -- the Chinese notebooks (notebooks/zh/): the English notebooks with their markdown translated ------------

ZH_NOTEBOOKS = ROOT / "notebooks" / "zh"


def _markdown_parser():
    """MyST's own markdown-it parser with the book's extensions: the same blocks Sphinx made messages of."""
    import yaml
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set(config["parse"]["myst_enable_extensions"])
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


def translate_markdown(source: str, translations: dict, md=None) -> tuple[str, list[str]]:
    """``source`` (one markdown cell) with every paragraph, heading, table cell and formula replaced by its
    translation; returns ``(text, untranslated)``. A paragraph's message is its lines joined by spaces
    (Sphinx's rule), so a translated paragraph becomes one line, after the first line's prefix ("> ", "- ")."""
    md = md or _markdown_parser()
    lines = source.split("\n")
    replace_lines, in_line, missing = [], {}, []
    for tok in md.parse(source):
        if tok.type == "inline" and tok.content.strip() and tok.map:
            msgid = tok.content.replace("\n", " ")
            if msgid not in translations:
                missing.append(msgid)
                continue
            start, end = tok.map
            first = tok.content.split("\n")[0]
            if end - start == 1 or "\n" not in tok.content:
                in_line.setdefault(start, []).append((first, translations[msgid]))
            else:
                at = lines[start].find(first)
                replace_lines.append((start, end, [lines[start][:at] + translations[msgid]]))
        elif tok.type in ("math_block", "amsmath") and tok.map:
            key = next((k for k in ("\n" + tok.content, tok.content, "\n" + tok.content.strip("\n") + "\n")
                        if k in translations), None)
            if key is None:
                missing.append(tok.content)
            elif translations[key] != key:
                start, end = tok.map
                replace_lines.append((start + 1, end - 1, translations[key].strip("\n").split("\n")))
    for n, pieces in in_line.items():  # several cells of one table row: left to right
        line, cursor, out = lines[n], 0, ""
        for old, new in pieces:
            at = line.find(old, cursor)
            if at < 0:
                missing.append(old)
                continue
            out += line[cursor:at] + new
            cursor = at + len(old)
        lines[n] = out + line[cursor:]
    for start, end, new in sorted(replace_lines, reverse=True):
        lines[start:end] = new
    text = "\n".join(lines).replace("](../", "](../../")  # notebooks/zh/ is one folder deeper
    return text, missing


# -- section links in JupyterLab: anchors and cell ids ------------------------------------------------------
# The chapters link to sections by MyST's slug of the English heading ([...](#the-math), [...](07_masking.ipynb#x);
# myst_heading_anchors: 3), which is what the site's sections are called; the site is built from the English
# sources and the catalogs (tools/i18n.py check keeps a msgstr's link targets equal to its msgid's), so it must see
# nothing of what follows but the anchor lines, which it drops. What JupyterLab 4.6 does (read in .venv's
# share/jupyter/lab/static, @jupyterlab/rendermime and @jupyterlab/notebook):
#   * a heading's id is "its text with spaces turned into -" (case and punctuation kept: "The-math"), stored as
#     data-jupyter-id (its sanitizer moves every `id` there): never a MyST slug, and in notebooks/zh/ Chinese;
#   * a click on an in-page link `#x` scrolls to the element whose data-jupyter-id is anchor.hash without the `#`,
#     percent-encoded as the browser gives it ("ε" arrives as "%CE%B5");
#   * a link to another notebook opens it (or brings its tab forward) and calls setFragment once its file has
#     loaded: `#x` is looked up in the rendered cells only, `#cell-id=<id>` in the notebook's model (so it is
#     found even where JupyterLab's windowing has not rendered the cell). Either way, when the click opens the
#     notebook the scroll happens before its cells are laid out, and the notebook shows its top (seen in the
#     test); once the notebook is open, a click on the link lands on the section.
# So every heading that a link targets has, right before it, a line of its own `<div id="english-slug"></div>` (and
# the percent-encoded id beside it when they differ): written into the English notebooks by `tools/i18n.py anchors`
# (write_anchors, heading_anchors; tests/test_i18n.py fails when one is missing or stale) and copied into
# notebooks/zh/ as it is (translate_markdown leaves HTML blocks alone). It is a CommonMark HTML block, not part of
# a paragraph or a heading, so Sphinx's gettext makes no message of it (the catalogs did not change when it came),
# and the site, whose sections already carry these ids, drops it (tools/sphinx_ext/tl_book.py
# drop_jupyter_anchors: one element per id). JupyterLab's sanitizer keeps the div and its id (as data-jupyter-id);
# scrolled to the top, the empty div leaves the heading just under it. A link to another chapter's section names
# the heading's cell in notebooks/zh/: `07_masking.ipynb#cell-id=cell-17` (cross_chapter_links; cell ids are
# stable, nbformat 4.5); the English notebooks keep `07_masking.ipynb#slug`, which the site needs, and JupyterLab
# finds the div among the rendered cells. tests/test_jupyterlab.py clicks both kinds in both editions (a link that
# opens the other notebook shows its top the first time, as said above).
# Colab: links to headings or to `<a id>`/`<a name>`/`<div id>` do not scroll there at all; only
# `#scrollTo=<cell id>` does (googlecolab/colabtools#3983, open since 2023: "the only anchor links that work
# are the ones that reference cell ids"). Colab cannot be reached from this machine and is not tested.


def heading_slugs(cells: list[dict], md=None) -> list[list[str | None]]:
    """For each cell, the MyST slug of each of its headings in order (None beyond level 3, which MyST does not
    anchor), unique in the notebook as MyST makes them (a repeated slug gets -1, -2, ...)."""
    from mdit_py_plugins.anchors.index import slugify

    md, seen, out = md or _markdown_parser(), set(), []
    for cell in cells:
        slugs = []
        if cell["cell_type"] == "markdown":
            tokens = md.parse("".join(cell["source"]))
            for i, tok in enumerate(tokens):
                if tok.type != "heading_open":
                    continue
                if int(tok.tag[1]) > 3:
                    slugs.append(None)
                    continue
                title = "".join(c.content for c in tokens[i + 1].children or [] if c.type in ("text", "code_inline"))
                slug, n = slugify(title), 1
                while slug in seen:
                    slug, n = f"{slugify(title)}-{n}", n + 1
                seen.add(slug)
                slugs.append(slug)
        out.append(slugs)
    return out


def link_targets(folder: Path = ROOT / "notebooks") -> dict[str, set[str]]:
    """{notebook file name: the fragments the notebooks of ``folder`` link to in it}."""
    import json

    targets: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                for target, fragment in re.findall(r"\]\(([\w.-]*\.ipynb|)#([^)\s]+)\)", "".join(cell["source"])):
                    targets.setdefault(target or path.name, set()).add(fragment)
    return targets


ANCHOR_LINE = re.compile(r'(<div id="[^"<>\s]+"></div>)+')


def anchor_ids(slug: str, md=None) -> list[str]:
    """The ids that name a section for JupyterLab: its slug, and the slug percent-encoded when that differs (a link's
    fragment reaches JupyterLab as anchor.hash: "ε" as "%CE%B5")."""
    encoded = (md or _markdown_parser()).normalizeLink("#" + slug)[1:]
    return [slug] + ([encoded] if encoded != slug else [])


def heading_anchors(text: str, slugs: list[str | None], wanted: set[str], md=None) -> str:
    """``text`` (an English markdown cell) with a line `<div id="slug"></div>` and a blank line before each heading
    whose slug (``slugs``, in order) is in ``wanted``, and no other such line: what ``anchors`` writes. The line is an
    HTML block of its own (CommonMark type 6), not part of a paragraph, so Sphinx's gettext makes no message of it,
    and the site drops it (tools/sphinx_ext/tl_book.py drop_jupyter_anchors), its sections having those ids."""
    md = md or _markdown_parser()
    lines, out, skip_blank = text.split("\n"), [], False
    for line in lines:  # the anchor lines there are, with the blank line after each
        if ANCHOR_LINE.fullmatch(line):
            skip_blank = True
            continue
        if skip_blank and not line.strip():
            skip_blank = False
            continue
        skip_blank = False
        out.append(line)
    lines = out
    headings = [tok for tok in md.parse("\n".join(lines)) if tok.type == "heading_open"]
    if len(headings) != len(slugs):
        raise ValueError(f"{len(headings)} headings in the cell, {len(slugs)} slugs given: {text[:80]!r}")
    for tok, slug in reversed(list(zip(headings, slugs))):
        if slug in wanted:
            if not tok.map or not lines[tok.map[0]].startswith("#"):
                raise ValueError(f"the heading {slug!r} is not an ATX heading at the start of a line: {text[:80]!r}")
            lines[tok.map[0]:tok.map[0]] = ["".join(f'<div id="{i}"></div>' for i in anchor_ids(slug, md)), ""]
    return "\n".join(lines)


def write_anchors(folder: Path = ROOT / "notebooks") -> list[Path]:
    """Give every heading of the English notebooks that a link targets its anchor line, and drop the others
    (heading_anchors); returns the notebooks that changed. notebooks/zh/ copy the lines (translate_markdown leaves
    HTML blocks as they are)."""
    import json

    md, wanted, changed = _markdown_parser(), link_targets(folder), []
    for path in sorted(folder.glob("*.ipynb")):
        before = path.read_text(encoding="utf-8")
        nb = json.loads(before)
        for cell, slugs in zip(nb["cells"], heading_slugs(nb["cells"], md)):
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                new = heading_anchors(text, slugs, wanted.get(path.name, set()), md)
                if new != text:
                    cell["source"] = _lines(new)
        after = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(path)
    return changed


def heading_cells(folder: Path = ROOT / "notebooks", md=None) -> dict[str, dict[str, str]]:
    """{notebook file name: {heading slug: id of the cell that holds the heading}}."""
    import json

    out = {}
    for path in sorted(folder.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        out[path.name] = {s: cell["id"] for cell, slugs in zip(cells, heading_slugs(cells, md)) for s in slugs
                          if s and "id" in cell}
    return out


def cross_chapter_links(text: str, cells: dict[str, dict[str, str]]) -> str:
    """Links to a section of another notebook, ``](NN_x.ipynb#slug)``, as ``](NN_x.ipynb#cell-id=<id>)``: JupyterLab
    finds the cell whose id that is in the notebook's model, rendered or not, where a plain fragment is looked for
    in the rendered cells only (see "section links" above). A link whose section is unknown is left as it is."""
    def cell_link(m):
        target, slug = m.group(1), m.group(2)
        cell = cells.get(target, {}).get(slug)
        return f"]({target}#cell-id={cell})" if cell else m.group(0)

    return re.sub(r"\]\(([\w.-]+\.ipynb)#([^)\s]+)\)", cell_link, text)


def chinese_notebook(path: Path, md=None) -> tuple[dict, list[str]]:
    """The Chinese version of one English notebook: markdown translated from its catalog; in the code cells, the
    comments and figure strings translated from its code catalog and `setup(..., language="zh")` (code_translated),
    the rest of the code identical."""
    import json

    import polib

    page = str(path.relative_to(ROOT).with_suffix(""))
    catalog = {e.msgid: e.msgstr for e in polib.pofile(str(CATALOGS / f"{page}.po"))
               if not e.obsolete and e.msgstr and "fuzzy" not in e.flags}
    nb = json.loads(path.read_text(encoding="utf-8"))
    md, missing = md or _markdown_parser(), []
    code = code_translations(path)
    cells = heading_cells(md=md)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text, miss = translate_markdown("".join(cell["source"]), catalog, md)
            missing += miss
            text = cross_chapter_links(text, cells)  # the anchor lines come from the English (write_anchors)
            cell["source"] = _lines(text)
        else:
            chinese_toggles(cell)
            text, _ = code_translated("".join(cell["source"]), code)  # untranslated ones: `check` lists them
            cell["source"] = _lines(text)
    nb.setdefault("metadata", {})["language_info"] = dict(nb["metadata"].get("language_info", {}), name="python")
    nb["metadata"]["tl_edition"] = {"language": "zh_CN", "source": path.name,
                                    "note": "generated by tools/i18n.py notebooks from the English notebook and "
                                            f"locales/{LANGUAGE}; do not edit"}
    return nb, missing


def _lines(text: str) -> list[str]:
    """A cell's source as Jupyter stores it: a list of lines, each but the last ending in a line break."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def chinese_toggles(cell: dict) -> dict:
    """A code cell's fold in Chinese (CODE_PROMPTS, COLAB_TITLES): the site's toggle (mystnb.code_prompt_show/hide)
    and, in a solution, Colab's form title. Nothing else of a code cell changes."""
    prompts = cell.get("metadata", {}).get("mystnb", {})
    for key in ("code_prompt_show", "code_prompt_hide"):
        if key in prompts:
            prompts[key] = CODE_PROMPTS.get(prompts[key], prompts[key])
    source = cell.get("source")
    lines = source.splitlines(keepends=True) if isinstance(source, str) else source
    if lines and lines[0].rstrip("\n") in COLAB_TITLES:
        first = lines[0].rstrip("\n")
        lines = [COLAB_TITLES[first] + lines[0][len(first):]] + list(lines[1:])
        cell["source"] = "".join(lines) if isinstance(source, str) else lines
    return cell


def chinese_notebooks() -> dict[Path, str]:
    """{path of a Chinese notebook: its text} for every English notebook; raises if a paragraph has no translation."""
    import json

    md, out, missing = _markdown_parser(), {}, []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb, miss = chinese_notebook(path, md)
        missing += [f"{path.name}: {m[:90]!r}" for m in miss]
        out[ZH_NOTEBOOKS / path.name] = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if missing:
        raise ValueError(f"{len(missing)} paragraph(s) without a translation:\n" + "\n".join(missing[:20]))
    return out


def write_notebooks() -> list[Path]:
    ZH_NOTEBOOKS.mkdir(parents=True, exist_ok=True)
    written = []
    for path, text in chinese_notebooks().items():
        path.write_text(text, encoding="utf-8")
        written.append(path)
    for stale in set(ZH_NOTEBOOKS.glob("*.ipynb")) - set(written):
        stale.unlink()
    return written


# -- code cells: their comments and the strings a figure shows, in Chinese (locales/zh_CN/code/) -------------
# One catalog per notebook, locales/zh_CN/code/notebooks/<stem>.po, OUTSIDE LC_MESSAGES (Sphinx reads every .po
# under LC_MESSAGES as a page's catalog). Two contexts:
#   msgctxt "comment": the text of a `#` comment (found by tokenize, so a `#` inside a string is not one),
#       without the `#` and the spaces around it. Consecutive full-line comments at one indentation are one
#       message (their lines joined by spaces): a sentence cut over two lines is translated as one sentence, and
#       the Chinese is wrapped again to the block's width. Not messages (code_comment_is_prose): Colab's forms
#       (`#@title`), shebangs, the noqa/`type:`/pragma/`fmt:` comments, comments with no English word (shapes like
#       `(B, T, D)`, formulas like `h_{-1} = 0`) and commented-out code (the text parses as Python and holds `=`
#       or `(`).
#   msgctxt "figure": the string literals a figure shows, found with the AST: every string argument (also inside
#       a list, a tuple or an `a if c else b`) of a call to FIGURE_CALLS, the keyword arguments FIGURE_KEYWORDS
#       of any call, and a string assigned to a variable of one of those names (`label = f"..."`). The msgid is the
#       literal's source text between its quotes (escapes as written; an f-string's `{...}` fields kept; implicitly
#       concatenated pieces joined); the Chinese must keep the same `{...}` fields, code spans and `$...$` math and make
#       a valid literal (checked). Strings that are data (tokens, sentences, keys, modes passed to functions, printed
#       labels) are never messages: a print's words stay English next to its numbers, and the code computes exactly what
#       the English notebook does.
# `tools/i18n.py update` extracts them and merges: a new message untranslated, a changed one fuzzy (the old
# Chinese of the most similar vanished message of the same context), a vanished one dropped. `notebooks` puts the
# translations back into notebooks/zh/ token by token (code_translated) and adds `language="zh"` to the set-up
# call; `check` lists untranslated, fuzzy and malformed code messages with the prose's.

CODE_CATALOGS = LOCALES / LANGUAGE / "code"
FIGURE_CALLS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "title", "xlabel", "ylabel", "text", "annotate",
                "legend", "supxlabel", "supylabel", "figtext"}
FIGURE_KEYWORDS = {"label", "title", "titles", "xlabel", "ylabel", "suptitle", "alt"}
NOT_PROSE_COMMENT = re.compile(r"#[@!]|#\s*(noqa|type:|pragma|fmt:|-\*-)")
ENGLISH_WORD = re.compile(r"(?<![\w\\])[A-Za-z]{2,}(?![\w])")
FIELD = re.compile(r"\{\{|\}\}|\{")
SETUP_LANGUAGE = ', language="zh"'


def code_comment_is_prose(text: str) -> bool:
    """Whether one comment (with its `#`) is words a reader reads, to translate; see the rules above."""
    if NOT_PROSE_COMMENT.match(text):
        return False
    body = text.lstrip("#").strip()
    if not ENGLISH_WORD.search(body):
        return False
    if "=" in body or "(" in body:
        import ast

        try:
            ast.parse(body)
        except (SyntaxError, ValueError):
            return True
        return False
    return True


def format_fields(text: str) -> list[str]:
    """The `{...}` replacement fields of a literal's text (f-string or str.format template), sorted; `{{`/`}}`
    are not fields. Nested braces inside a field (`{x:{width}}`) belong to it."""
    fields, i = [], 0
    while i < len(text):
        if text.startswith("{{", i) or text.startswith("}}", i):
            i += 2
            continue
        if text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            fields.append(text[i:j + 1])
            i = j + 1
            continue
        i += 1
    return sorted(fields)


def _python_source(source: str) -> str:
    """A code cell's source with IPython's magics and shell lines (`%pip ...`, `!ls`) blanked to `pass` + spaces
    of the same length, so that tokenize and ast read it and every position stays where it was."""
    out = []
    for line in source.split("\n"):
        stripped = line.lstrip()
        if stripped[:1] in ("%", "!") and not stripped.startswith("!="):
            indent = line[:len(line) - len(stripped)]
            line = indent + "pass" + " " * max(0, len(stripped) - 4)
        out.append(line)
    return "\n".join(out)


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers index it from 1)."""
    starts = [0, 0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return starts


class _Piece:
    """One string token of a figure string: where its text between the quotes starts and ends (offsets into the
    cell's source), and its prefix (f, r, ...)."""

    def __init__(self, start: int, end: int, prefix: str, quote: str):
        self.start, self.end, self.prefix, self.quote = start, end, prefix, quote


def _string_pieces(source: str, start: int, end: int) -> list[_Piece]:
    """The string tokens between offsets ``start`` and ``end`` of ``source`` (one literal, maybe implicitly
    concatenated): for each, the span of its text between the quotes."""
    pieces, i = [], start
    while i < end:
        m = re.compile(r"([rRbBuUfF]{0,2})('''|\"\"\"|'|\")").match(source, i)
        if not m:
            i += 1
            continue
        prefix, quote = m.groups()
        j = m.end()
        while not source.startswith(quote, j):
            j += 2 if source[j] == "\\" else 1
        pieces.append(_Piece(m.end(), j, prefix, quote))
        i = j + len(quote)
    return pieces


def _figure_nodes(tree) -> list:
    import ast

    found = []

    def strings(node):
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            if isinstance(node, ast.JoinedStr) or isinstance(node.value, str):
                found.append(node)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for el in node.elts:
                strings(el)
        elif isinstance(node, ast.IfExp):
            strings(node.body)
            strings(node.orelse)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in FIGURE_KEYWORDS:  # label = f"..." (then label=label)
            strings(node.value)
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in FIGURE_CALLS:
            for arg in node.args:
                strings(arg)
        for kw in node.keywords:
            if kw.arg in FIGURE_KEYWORDS:
                strings(kw.value)
    return found


def figure_literals(source: str, tree=None) -> list[tuple]:
    """Every string literal a figure shows in one code cell (whatever its words): ``(node, pieces)``, the pieces
    being the literal's string tokens (_Piece: the span of the text between its quotes)."""
    import ast

    python = _python_source(source)
    tree = tree or ast.parse(python)
    starts, lines, out = _offsets(python), python.split("\n"), []
    for node in _figure_nodes(tree):
        begin = starts[node.lineno] + len(lines[node.lineno - 1].encode()[:node.col_offset].decode())
        end = starts[node.end_lineno] + len(lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())
        out.append((node, _string_pieces(python, begin, end)))
    return out


def code_messages(source: str) -> list[dict]:
    """The messages of one code cell, in source order: dicts with ``context`` ("comment"/"figure"), ``msgid``,
    ``line`` (1-based) and what code_translated needs to put a translation back (``spans``: the (start, end)
    character offsets it replaces; for a comment block, ``indent`` and ``width``; for a figure string, its
    pieces)."""
    import ast
    import io
    import tokenize

    python = _python_source(source)
    starts = _offsets(python)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(python).readline))
        tree = ast.parse(python)
    except (SyntaxError, tokenize.TokenError) as err:
        raise ValueError(f"code cell does not parse as Python: {err}\n{source[:200]}") from err
    messages = []
    previous = None  # the last full-line comment message, to continue a block
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        if not code_comment_is_prose(tok.string):
            previous = None
            continue
        (row, col), (_, end_col) = tok.start, tok.end
        full_line = not python.split("\n")[row - 1][:col].strip()
        text = tok.string.lstrip("#").strip()
        at = starts[row] + col + tok.string.index(text)
        span = (at, at + len(text))
        if full_line and previous and previous["last_line"] == row - 1 and previous["col"] == col:
            previous["msgid"] += " " + text
            previous["spans"].append(span)
            previous["last_line"] = row
            previous["width"] = max(previous["width"], end_col)
            continue
        message = {"context": "comment", "msgid": text, "line": row, "spans": [span], "col": col,
                   "last_line": row, "full_line": full_line, "width": end_col,
                   "prefix": tok.string[:tok.string.index(text)]}
        messages.append(message)
        previous = message if full_line else None
    for node, pieces in figure_literals(python, tree):
        msgid = "".join(python[p.start:p.end] for p in pieces)
        if not (ENGLISH_WORD.search(re.sub(r"\$[^$]*\$|\{[^{}]*\}", " ", msgid))):
            continue  # `$x_{t}$`, "", "{name}": nothing a reader reads as words
        if any(p.prefix.lower() in ("b", "rb", "br") for p in pieces):
            continue
        messages.append({"context": "figure", "msgid": msgid, "line": node.lineno, "pieces": pieces,
                         "spans": [(p.start, p.end) for p in pieces]})
    return sorted(messages, key=lambda m: m["spans"][0])


def display_width(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_comment(text: str, width: int) -> list[str]:
    """``text`` cut into lines of at most ``width`` display columns (a Han character counts two), between Han
    characters or at spaces, never inside a `code span`."""
    if display_width(text) <= width:
        return [text]
    breaks, in_code = [], False  # positions where a line may end (before text[i])
    for i, ch in enumerate(text):
        if ch == "`":
            in_code = not in_code
        if i and not in_code and (ch == " " or (HAN.match(ch) and text[i - 1] not in "`") or
                                  (HAN.match(text[i - 1]) and ch not in "，。：；！？）」”、")):
            breaks.append(i)
    lines, start = [], 0
    while display_width(text[start:]) > width:
        fits = [b for b in breaks if start < b and display_width(text[start:b].rstrip()) <= width]
        # rather after a punctuation mark or at a space, if that fills at least 70% of the line
        good = [b for b in fits if (text[b - 1] in "，。：；！？、）” " or text[b] == " ")
                and display_width(text[start:b]) >= 0.7 * width]
        cut = (good or fits)[-1] if fits else next((b for b in breaks if b > start), len(text))
        lines.append(text[start:cut].rstrip())
        start = cut + (1 if text[cut:cut + 1] == " " else 0)
        if start >= len(text):
            break
    if start < len(text):
        lines.append(text[start:])
    return lines


def _figure_replacement(message: dict, msgstr: str, source: str) -> list[tuple[int, int, str]]:
    """Where a figure string's translation goes: into its one literal; a concatenation (`"...\\n" f"..."`) gets one
    chunk per piece when the Chinese has as many `\\n`-ended chunks and each fits its piece (fields only in
    f-pieces), else the whole translation in the first piece and the other pieces emptied."""
    pieces = message["pieces"]
    if len(pieces) == 1:
        return [(pieces[0].start, pieces[0].end, msgstr)]
    chunks = re.findall(r".*?\\n|.+$", msgstr)
    if len(chunks) == len(pieces) and all("f" in p.prefix.lower() or not FIELD.search(c)
                                          for p, c in zip(pieces, chunks)):
        return [(p.start, p.end, c) for p, c in zip(pieces, chunks)]
    if any("f" in p.prefix.lower() for p in pieces) and "f" not in pieces[0].prefix.lower():
        return []  # cannot be placed exactly: check() reports it
    return [(pieces[0].start, pieces[0].end, msgstr)] + [(p.start, p.end, "") for p in pieces[1:]]


def code_translated(source: str, translations: dict, language: bool = True) -> tuple[str, list[tuple[str, str]]]:
    """A code cell with its comments and figure strings in Chinese (``translations``: {(context, msgid): msgstr})
    and, when ``language``, `setup(...)` given `language="zh"`; returns ``(source, untranslated)``. Everything
    else stays byte for byte; a message without a translation stays English."""
    import ast

    edits, missing = [], []
    python = _python_source(source)
    for m in code_messages(source):
        msgstr = translations.get((m["context"], m["msgid"]))
        if not msgstr:
            missing.append((m["context"], m["msgid"]))
            continue
        if m["context"] == "figure":
            edits += _figure_replacement(m, msgstr, python)
        elif len(m["spans"]) == 1 and not m["full_line"] or len(m["spans"]) == 1 and \
                display_width(m["prefix"]) + display_width(msgstr) + m["col"] <= max(m["width"], 100):
            edits.append((*m["spans"][0], msgstr))
        else:  # a block of full-line comments: wrapped again to its width (at least 60 columns of text)
            width = max(m["width"] - m["col"] - len(m["prefix"]), 60)
            lines = wrap_comment(msgstr, width)
            joiner = "\n" + " " * m["col"] + m["prefix"]
            first, last = m["spans"][0][0], m["spans"][-1][1]
            edits.append((first, last, joiner.join(lines)))
    if language:
        tree = ast.parse(python)
        starts = _offsets(python)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup" and \
                    not any(k.arg == "language" for k in node.keywords):
                line = python.split("\n")[node.end_lineno - 1]
                close = starts[node.end_lineno] + len(line.encode()[:node.end_col_offset].decode()) - 1
                edits.append((close, close, SETUP_LANGUAGE if node.args or node.keywords else SETUP_LANGUAGE[2:]))
    for start, end, new in sorted(edits, reverse=True):
        source = source[:start] + new + source[end:]
    return source, missing


def code_catalog_path(notebook: Path, catalogs: Path = CODE_CATALOGS) -> Path:
    return catalogs / "notebooks" / f"{notebook.stem}.po"


def _code_cells(notebook: Path) -> list[tuple[int, str]]:
    import json

    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return [(n, "".join(c["source"])) for n, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def code_template(notebook: Path):
    """The code messages of one notebook as a polib catalog (msgstr empty): one entry per (context, msgid),
    with the cells and lines where it occurs and, as an extracted comment, the line of code it belongs to."""
    import polib

    pot, seen = polib.POFile(wrapwidth=0), {}
    for n, source in _code_cells(notebook):
        lines = source.split("\n")
        for m in code_messages(source):
            key = (m["context"], m["msgid"])
            if key not in seen:
                code_line = lines[m["line"] - 1].strip()
                seen[key] = polib.POEntry(msgctxt=m["context"], msgid=m["msgid"], msgstr="",
                                          comment=code_line[:120] if m["context"] == "figure" else "")
                pot.append(seen[key])
            seen[key].occurrences.append((f"cell {n}", str(m["line"])))
    return pot


def code_update(notebooks: list[Path] | None = None, catalogs: Path = CODE_CATALOGS) -> list[Path]:
    """Bring each notebook's code catalog up to date with its code: new messages untranslated, changed ones fuzzy
    (the Chinese of the most similar vanished message of the same context, difflib ratio >= 0.6), vanished ones
    dropped; the entries in the notebook's order. Returns the catalogs written."""
    import difflib

    import polib

    written = []
    for notebook in notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        path = code_catalog_path(notebook, catalogs)
        old = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(path))} if path.exists() else {}
        po = code_template(notebook)
        new_keys = {(e.msgctxt, e.msgid) for e in po}
        vanished = [e for k, e in old.items() if k not in new_keys and e.msgstr]
        for e in po:
            before = old.get((e.msgctxt, e.msgid))
            if before is not None:
                e.msgstr, e.flags = before.msgstr, [f for f in before.flags if f == "fuzzy"]
                e.previous_msgid = before.previous_msgid if "fuzzy" in before.flags else None
                continue
            similar = max(((difflib.SequenceMatcher(None, v.msgid, e.msgid).ratio(), i) for i, v in enumerate(vanished)
                           if v.msgctxt == e.msgctxt), default=(0, None))
            if similar[0] >= 0.6:
                v = vanished.pop(similar[1])
                e.msgstr, e.flags, e.previous_msgid = v.msgstr, ["fuzzy"], v.msgid
        po.metadata = {"Content-Type": "text/plain; charset=utf-8", "Language": LANGUAGE,
                       "X-Source": f"notebooks/{notebook.name} (code cells; tools/i18n.py update)"}
        path.parent.mkdir(parents=True, exist_ok=True)
        po.save(str(path))
        written.append(path)
    return written


def code_message_problems(context: str, msgid: str, msgstr: str, fuzzy: bool = False) -> list[str]:
    """What is wrong with one code message's translation: untranslated, fuzzy, or not the same code spans, math,
    `{...}` fields (a figure string: they are the f-string's or the template's values), or a figure string's
    translation that is no valid literal (a bare quote, a raw line break)."""
    import ast

    if not msgstr.strip():
        return ["untranslated"]
    out = ["fuzzy: the English changed since it was translated"] if fuzzy else []
    checks = [("code spans", CODE), ("math", MATH)]
    for name, rx in checks:
        a, b = sorted(rx.findall(msgid)), sorted(rx.findall(msgstr))
        if a != b:
            out.append(f"{name} differ from the English: {sorted(set(a) ^ set(b))}")
    if context == "figure":
        if format_fields(msgid) != format_fields(msgstr):
            out.append(f"{{...}} fields differ from the English: {format_fields(msgid)} vs {format_fields(msgstr)}")
        for quote in ('"', "'"):  # the quotes the English literal can be written in: the Chinese must fit them too
            try:
                ast.parse(quote + msgid + quote)
            except SyntaxError:
                continue
            try:
                ast.parse(quote + msgstr + quote)
            except SyntaxError as err:
                out.append(f"not a valid string literal between {quote} quotes: {err.msg}")
    elif "\n" in msgstr:
        out.append("a comment's translation holds a line break (the generator wraps it)")
    if len(ENGLISH_WORD.findall(re.sub(r"`[^`]*`|\$[^$]*\$|\{[^{}]*\}|\w+\(", " ", msgid))) >= 3 and \
            not HAN.search(msgstr):
        out.append("no Chinese in a message with English words")
    return out


def code_style_problems(page: str, msgid: str, msgstr: str, rules: dict | None = None, report: bool = False,
                        context: str = "") -> list[str]:
    """STYLE.md's punctuation rules for a comment or figure string, where code notation is at home: a string
    literal quoted as in the English ("batch", a value the reader types) keeps its ASCII quotes, and tuples, calls
    and formulas keep their ASCII commas and parentheses ((层, 头) -> ..., P(下一个词元 | 源句子)): the rule
    "ASCII punctuation" is not applied. The others are (full-width quotes around words, no space after
    full-width punctuation, 15%, ...)."""
    literals = set(re.findall(r'"[^"\n]*"', msgid))
    masked = re.sub(r'"[^"\n]*"', lambda m: HOLE if m.group(0) in literals else m.group(0), msgstr)
    out = [p for p in style_problems(page, msgid, masked, rules, report) if not p.startswith("ASCII punctuation:")]
    rules = load_rules() if rules is None else rules
    if context == "figure" and report_only("figure numbers", page) == report and \
            not excused(rules, page, msgid, "rule", "figure numbers"):
        out += figure_number_problems(msgstr)
    return out


def code_check(notebooks: list[Path] | None = None, catalogs: Path = CODE_CATALOGS) -> list[str]:
    """Every comment and figure string of every notebook's code translated, not fuzzy, well formed, and following
    STYLE.md's punctuation and terms (code_style_problems, forbidden_problems; excused by terminology.yml's
    exceptions under the page "code/<stem>")."""
    import polib

    problems, rules = [], load_rules()
    for notebook in notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        path = code_catalog_path(notebook, catalogs)
        page = f"code/{notebook.stem}"
        if not path.exists():
            problems.append(f"{page}: no code catalog {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
                            f" (run `python tools/i18n.py update`)")
            continue
        po = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(path)) if not e.obsolete}
        for e in code_template(notebook):
            have = po.get((e.msgctxt, e.msgid))
            found = ["missing: a new or changed comment or figure string"] if have is None else \
                code_message_problems(e.msgctxt, e.msgid, have.msgstr, "fuzzy" in have.flags)
            if have is not None and have.msgstr:  # STYLE.md's punctuation and terms, as in the prose catalogs
                found += code_style_problems(page, e.msgid, have.msgstr, rules, context=e.msgctxt)
                found += [p.split(": ", 1)[1] for p in forbidden_problems(page, e.msgid, have.msgstr, rules)]
            problems += [f"{page} [{e.msgctxt}]: {p}: {e.msgid[:100]!r}" for p in found]
    return problems


def code_translations(notebook: Path, catalogs: Path = CODE_CATALOGS) -> dict:
    """{(context, msgid): msgstr} of one notebook's code catalog: the translated, not fuzzy, well-formed entries."""
    import polib

    path = code_catalog_path(notebook, catalogs)
    if not path.exists():
        return {}
    return {(e.msgctxt, e.msgid): e.msgstr for e in polib.pofile(str(path))
            if not e.obsolete and e.msgstr and not code_message_problems(e.msgctxt, e.msgid, e.msgstr,
                                                                          "fuzzy" in e.flags)}


def update(pot_dir: Path = POT) -> None:
    """sphinx-intl update: new messages appear untranslated, changed ones fuzzy, vanished ones obsolete; then the
    code catalogs (code_update)."""
    subprocess.run([str(Path(sys.executable).parent / "sphinx-intl"), "update", "-p", str(pot_dir), "-l", LANGUAGE,
                    "-d", str(LOCALES), "-w", "0"], check=True, cwd=ROOT)
    code_update()


# -- the landing page's map, in each edition's language ------------------------------------------------------
# book/intro.md shows book/architecture_map.svg; Sphinx's figure_language_filename ("{root}.{language}{ext}") takes
# book/architecture_map.zh_CN.svg instead in the Chinese edition. Both are drawn by the package's
# transformer_lite.book.architecture_map (chapter 0's linked map is the same drawing), in English and in Chinese: its
# words are messages of the package's catalog (tr), so no file holds a hand-made Chinese copy. Generated files, like
# notebooks/zh/: `notebooks` writes them, and tests/test_architecture_map.py fails when they differ.

LANDING_MAPS = {"en": ROOT / "book" / "architecture_map.svg", "zh": ROOT / "book" / f"architecture_map.{LANGUAGE}.svg"}


def landing_maps() -> dict[Path, str]:
    """{file: its text} of the landing page's map in each language, drawn by the checkout's package (in a child
    Python started in the checkout: the venv's installed copy may be older than the sources)."""
    import json

    code = ("import json, sys\nfrom transformer_lite.book import architecture_map, i18n\n"
            f"json.dump({{lang: (i18n.set_language(lang), architecture_map.landing_page_svg())[1] "
            f"for lang in {sorted(LANDING_MAPS)!r}}}, sys.stdout)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return {LANDING_MAPS[lang]: text for lang, text in json.loads(proc.stdout).items()}


def write_landing_maps() -> list[Path]:
    written = []
    for path, text in landing_maps().items():
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["extract", "update", "code-update", "check", "notebooks", "package", "fix",
                                            "anchors"])
    ap.add_argument("pages", nargs="*", help="fix: the pages to fix, e.g. notebooks/07_masking (default: all)")
    args = ap.parse_args(argv)
    if args.command == "package":
        sys.path.insert(0, str(ROOT / "tools"))
        import package_i18n

        added, removed = package_i18n.update()
        problems = package_i18n.problems()
        for p in problems:
            print(p)
        print(f"{package_i18n.CATALOG.relative_to(ROOT)}: {added} added, {removed} removed, "
              f"{len(problems)} problem(s)")
        return 1 if problems else 0
    if args.command == "code-update":
        print(f"updated {len(code_update())} code catalogs in {CODE_CATALOGS.relative_to(ROOT)}/notebooks/")
        return 0
    if args.command == "fix":
        for page, n in fix_catalogs(pages=args.pages or None).items():
            print(f"{page}: {n} message(s) fixed")
        return 0
    if args.command == "anchors":
        changed = write_anchors()
        print(f"wrote the section anchors of {len(changed)} notebook(s): {', '.join(p.name for p in changed)}")
        return 0
    if args.command == "notebooks":
        print(f"wrote {len(write_notebooks())} notebooks into {ZH_NOTEBOOKS.relative_to(ROOT)}/")
        print(f"wrote the landing page's map: {', '.join(str(p.relative_to(ROOT)) for p in write_landing_maps())}")
        return 0
    pot = extract()
    if args.command == "update":
        update(pot)
    if args.command == "check":
        problems = check(pot) + terminology_problems() + code_check()
        found = reports(pot)
        for p in problems:
            print(p)
        for r in found:
            print(f"report: {r}")
        print(f"{len(problems)} problem(s) in {len(pages(pot))} pages; {len(found)} report(s) of rules that do not "
              f"fail the check yet ({', '.join(REPORT_ONLY)}, on some pages: REPORT_ONLY in tools/i18n.py)")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
