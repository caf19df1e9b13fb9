"""The Chinese notebooks (notebooks/zh/): the English notebooks with their prose and code strings translated."""
from __future__ import annotations

import re
from pathlib import Path

from .anchors import cross_chapter_links, heading_cells
from .code_cells import code_translated, code_translations
from .markdown import cell_lines, markdown_parser
from .paths import CATALOGS, LANGUAGE, ROOT, ZH_NOTEBOOKS

# -- the Chinese notebooks (notebooks/zh/): the English notebooks with their markdown translated ------------

# The folded cells' toggles in Chinese (not messages: a solution's are cell metadata, mystnb.code_prompt_show/hide,
# the others myst-nb's defaults). The one table: notebooks/zh/ get the solutions' (chinese_notebook), the Chinese
# site all of them (build_edition -> tl_code_prompts, bookbuild/sphinx_ext/tl_book.py). The prose says 显示答案.
CODE_PROMPTS = {"Show solution": "显示答案", "Hide solution": "隐藏答案",
                "Show code cell source": "显示代码", "Hide code cell source": "隐藏代码",
                "Open this deep dive": "展开这段深入内容", "Close this deep dive": "收起这段深入内容"}

# A solution's first line, its title in Colab (which folds a cell as a form with a title; Jupyter ignores it)
COLAB_TITLES = {"#@title Solution": "#@title 答案"}


def translate_markdown(source: str, translations: dict, md=None) -> tuple[str, list[str]]:
    """``source`` (one markdown cell) with every paragraph, heading, table cell and formula replaced by its
    translation; returns ``(text, untranslated)``. A paragraph's message is its lines joined by spaces
    (Sphinx's rule), so a translated paragraph becomes one line, after the first line's prefix ("> ", "- ")."""
    md = md or markdown_parser()
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
                if at < 0:  # the prefix kept before the translation would be a wrong slice of the line
                    raise ValueError(f"a paragraph's first line {first!r} is not on line {start + 1} of its cell, "
                                     f"{lines[start]!r}: cannot put its translation there")
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


# A chapter's link to the explainer's page names the published page (bookbuild/repository.py moves it with the address):
# from a Chinese notebook it opens the Chinese edition's page. The catalogs keep the English target, as they keep every
# link target, and the Chinese site makes the link relative to its own page (bookbuild/sphinx_ext/tl_explainer.py).
EXPLAINER_LINK = re.compile(r"(\]\(https?://[^\s()]+?/)(?<!/zh/)(book/explainer\.html[?#)])")


def chinese_explainer_links(text: str) -> str:
    """A markdown cell's links to the published explainer page, made links to its Chinese edition's page."""
    return EXPLAINER_LINK.sub(r"\1zh/\2", text)


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
    md, missing = md or markdown_parser(), []
    code = code_translations(path)
    cells = heading_cells(md=md)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text, miss = translate_markdown("".join(cell["source"]), catalog, md)
            missing += miss
            text = cross_chapter_links(text, cells)  # the anchor lines come from the English (write_anchors)
            text = chinese_explainer_links(text)
            cell["source"] = cell_lines(text)
        else:
            chinese_toggles(cell)
            text, _ = code_translated("".join(cell["source"]), code)  # untranslated ones: `check` lists them
            cell["source"] = cell_lines(text)
    nb.setdefault("metadata", {})["language_info"] = dict(nb["metadata"].get("language_info", {}), name="python")
    nb["metadata"]["tl_edition"] = {"language": "zh_CN", "source": path.name,
                                    "note": "generated by bookbuild/i18n.py notebooks from the English notebook and "
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

    md, out, missing = markdown_parser(), {}, []
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
