#!/usr/bin/env python3
"""The Chinese edition's catalogs: the English book's messages, and their translations.

    python tools/i18n.py extract   # the English book's messages -> _build/gettext/**/*.pot (about 10 s)
    python tools/i18n.py update    # extract, then bring locales/zh_CN/LC_MESSAGES/**/*.po up to date (sphinx-intl):
                                   # a changed paragraph turns fuzzy, a new one untranslated
    python tools/i18n.py check     # extract, then list every message that is missing, untranslated, fuzzy
                                   # or malformed (exit 1 if any)
    python tools/i18n.py notebooks # write notebooks/zh/*.ipynb: the notebooks with their markdown in Chinese
                                   # (the same code; the solutions' toggles in Chinese), for Jupyter and Colab

Sphinx's gettext builder cuts every prose paragraph of the notebooks' markdown cells and of book/*.md
into one message; code cells and outputs are not messages (they stay English in both editions).
The notebooks are not executed for this. tests/test_i18n.py runs ``check``: a change to the English
text must update the Chinese in the same commit.
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

    config, _ = get_final_config(user_yaml=ROOT / "_config.yml", sourcedir=ROOT, cli_config={"latex_individualpages": False})
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
    return out


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


def check(pot_dir: Path = POT, catalogs: Path = CATALOGS) -> list[str]:
    """Every message of every page translated, not fuzzy, well formed; each problem names page and paragraph."""
    import polib

    problems = []
    for page, pot in pages(pot_dir).items():
        po_path = catalogs / f"{page}.po"
        if not po_path.exists():
            problems.append(f"{page}: no catalog {po_path} (run `python tools/i18n.py update`)")
            continue
        po = {e.msgid: e for e in polib.pofile(str(po_path)) if not e.obsolete}
        for entry in polib.pofile(str(pot)):
            e = po.get(entry.msgid)
            found = ["missing: a new or changed English paragraph"] if e is None else \
                message_problems(e.msgid, e.msgstr, "fuzzy" in e.flags, kept_in_english(page, e.msgid))
            problems += [f"{page}: {p}: {entry.msgid[:100]!r}" for p in found]
    return problems


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
# Sphinx's Chinese search (sphinx/search/zh.py) cuts the text into words with jieba (requirements.txt), and only
# when jieba imports: without it the index holds no Chinese word and the search finds pages by their titles alone.
# The browser looks a query up as one word: jieba's own dictionary cuts 位置编码 into 位置 + 编码 and 束搜索 into
# 束 + 搜索, so a reader typing the book's terms would find nothing. The glossary's Chinese terms are therefore
# added to jieba's dictionary (Sphinx's html_search_options "dict"); its search mode indexes the parts as well.


def require_jieba() -> None:
    import importlib.util

    if importlib.util.find_spec("jieba") is None:
        raise SystemExit("jieba is not installed (requirements.txt; run `make install`): without it the Chinese "
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


def terminology_problems(catalogs: Path = CATALOGS, rules: Path = TERMINOLOGY) -> list[str]:
    """Every message whose English uses a glossary term and whose Chinese has none of that term's Chinese forms.

    ``rules`` (YAML) lists, per term, the other forms that count (``aliases``: e.g. 注意力 inside 自注意力) and
    the messages excused, each with its reason (``exceptions``: page, the start of the English, term)."""
    import polib
    import yaml

    config = yaml.safe_load(rules.read_text(encoding="utf-8")) if rules.exists() else {}
    aliases = config.get("aliases") or {}
    excused = {(x["page"], x["term"], x["english"]) for x in config.get("exceptions") or []}
    terms = glossary_terms()
    known = {t for t, _, _ in terms}
    problems = [f"{rules.name}: {t!r} is not a glossary term" for t in aliases if t not in known]
    for po_path in sorted(catalogs.rglob("*.po")):
        page = str(po_path.relative_to(catalogs).with_suffix(""))
        if page == "book/glossary":  # the glossary itself names every term in both languages
            continue
        for e in polib.pofile(str(po_path)):
            if e.obsolete or not e.msgstr:
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


def chinese_notebook(path: Path, md=None) -> tuple[dict, list[str]]:
    """The Chinese version of one English notebook: markdown translated from its catalog, code cells identical."""
    import json

    import polib

    page = str(path.relative_to(ROOT).with_suffix(""))
    catalog = {e.msgid: e.msgstr for e in polib.pofile(str(CATALOGS / f"{page}.po"))
               if not e.obsolete and e.msgstr and "fuzzy" not in e.flags}
    nb = json.loads(path.read_text(encoding="utf-8"))
    md, missing = md or _markdown_parser(), []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text, miss = translate_markdown("".join(cell["source"]), catalog, md)
            missing += miss
            parts = text.split("\n")
            cell["source"] = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        else:
            chinese_toggles(cell)
    nb.setdefault("metadata", {})["language_info"] = dict(nb["metadata"].get("language_info", {}), name="python")
    nb["metadata"]["tl_edition"] = {"language": "zh_CN", "source": path.name,
                                    "note": "generated by tools/i18n.py notebooks from the English notebook and "
                                            f"locales/{LANGUAGE}; do not edit"}
    return nb, missing


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


def update(pot_dir: Path = POT) -> None:
    """sphinx-intl update: new messages appear untranslated, changed ones fuzzy, vanished ones obsolete."""
    subprocess.run([str(Path(sys.executable).parent / "sphinx-intl"), "update", "-p", str(pot_dir), "-l", LANGUAGE,
                    "-d", str(LOCALES), "-w", "0"], check=True, cwd=ROOT)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["extract", "update", "check", "notebooks"])
    args = ap.parse_args(argv)
    if args.command == "notebooks":
        print(f"wrote {len(write_notebooks())} notebooks into {ZH_NOTEBOOKS.relative_to(ROOT)}/")
        return 0
    pot = extract()
    if args.command == "update":
        update(pot)
    if args.command == "check":
        problems = check(pot)
        for p in problems:
            print(p)
        print(f"{len(problems)} problem(s) in {len(pages(pot))} pages")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
