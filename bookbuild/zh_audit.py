"""How much of the built Chinese site's chapter output is still English: output lines, figures, table cells, controls.

    .venv/bin/python -m bookbuild.zh_audit [_build/html] [--page 04_multi_head_attention ...] [--quiet] [--ceilings]
    .venv/bin/python -m bookbuild.zh_audit OUT/04_multi_head_attention.ipynb ...   # chapters executed in Chinese

For each Chinese chapter page (``zh/notebooks/*.html`` of the built site) it reads what the chapter's code put on the
page, not the translated prose:

- output lines: the text outputs of code cells (``.cell_output``: streams, text/plain, the visible text of HTML
  outputs such as the checks' verdicts and an explorer's text frame), one line each, blank lines left out;
- figures: every output image's alt text (the site writes each figure's own texts into it,
  transformer_lite.book.plotting.figure_alt), and every frame of an explorer (the frames the build moved to
  ``_data/<key>.js``, transformer_lite.book.interactive.explore);
- table cells of HTML tables in outputs, the texts of controls (``<option>``, ``<label>``, ``<button>``) and the
  headings' link tooltips (``a.headerlink[title]``).

A text counts as English when it holds an English word the allowlist below does not excuse; an output line is
English-only when it also holds no Chinese character. The allowlist is kept short: code names (identifiers with
``_``, ``.`` or digits, camelCase, a word followed by ``(`` ``=`` ``[`` or in backticks or in a quoted repr, Python's
constants, the names of Greek letters and math functions that code writes: mu, sigma, log, sqrt), data
(the toy grammar's English words and the HSK sentences' English, read from the package, not listed here, and the
string literals in the tuples and lists of the chapter's own code: the sentences it gives its translator), units,
and the names of models, libraries and metrics, and the English terms the Chinese edition keeps
(locales/zh_CN/terminology.yml's aliases). tests/test_chinese_site.py asserts the counts.
"""
from __future__ import annotations

import argparse
import functools
import html
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# an English word: two letters or more (single letters are symbols: x, B, T, H), with an inner apostrophe or hyphen
WORD = re.compile(r"(?<![\w])[A-Za-z][A-Za-z]*(?:['’-][A-Za-z]+)*(?![\w])")

# names of models, libraries, metrics, hardware and tools, kept in English in Chinese texts (STYLE.md 1: 保留英文的),
# and of the methods the glossary names in Latin in its Chinese column (字节对编码（BPE）, top-k 采样, top-p 采样)
NAMES = frozenset("""
Transformer Transformers Annotated fairseq BERT GPT GRU LSTM RNN RNNs CNN ViT ONNX PyTorch torch python Python
numpy NumPy T5 Llama Qwen Mistral GNMT BLEU chrF RMS IBM HSK Colab Jupyter JupyterLab bertviz Hugging Face
CPU GPU cpu cuda gpu mps MKL Xavier Adam AdamW SGD GELU ReLU SwiGLU RoPE RMSNorm LayerNorm BatchNorm softmax logits
KV GQA MQA FFN MLP PE LN BN Pre-LN Post-LN NaN nan inf Inf BPE top-k top-p
""".split())
# units and unit-like abbreviations (SI prefixes, bytes, time, rates)
UNITS = frozenset("ms µs us ns KB MB GB KiB MiB GiB TiB Hz FLOPs FLOP TFLOPs GFLOPs".split())
# Python's constants and repr words, and the names of Greek letters that code writes for symbols (mu, sigma, eps)
PY = frozenset("True False None tensor dtype device grad_fn requires_grad lr alpha beta gamma lambda mu sigma eps "
               "epsilon theta pos log ln exp sqrt sin cos argmax softmax".split())


@functools.cache
def _terms() -> frozenset:
    """The English forms locales/zh_CN/terminology.yml lets the Chinese text use for a term (its aliases)."""
    import yaml

    data = yaml.safe_load((ROOT / "locales" / "zh_CN" / "terminology.yml").read_text(encoding="utf-8"))
    words = set()
    for forms in (data.get("aliases") or {}).values():
        for form in forms:
            words.update(WORD.findall(form))  # the Latin of 注意力 and of "[class] 词元" alike
    return frozenset(words)


@functools.cache
def _toy_words() -> frozenset:
    """The English words of the book's toy grammar (transformer_lite.data), with the laboratory's swaps."""
    from transformer_lite.data import SPECIALS, all_translation_pairs

    words = {w for en, _ in all_translation_pairs(swaps=True) for w in en.split()}
    return frozenset(words | {s.strip("<>") for s in SPECIALS})


def _key(words) -> tuple:
    return tuple(w.lower().replace("’", "'") for w in words)


@functools.cache
def _sentences() -> tuple[frozenset, frozenset]:
    """The English sentences of the real data (HSK pairs, transformer_lite.book.real_data) as word tuples: the whole
    sentences, and every run of three words or more inside one."""
    try:
        from transformer_lite.book.real_data import load_pairs
    except ImportError:  # pragma: no cover - the data's package is a book dependency
        return frozenset(), frozenset()
    whole, parts = set(), set()
    for pair in load_pairs()[0]:
        words = _key(WORD.findall(pair.english))
        whole.add(words)
        for i in range(len(words)):
            for j in range(i + 3, len(words) + 1):
                parts.add(words[i:j])
    return frozenset(whole), frozenset(parts)


def _is_code(text: str, m: re.Match) -> bool:
    word, a, b = m.group(), m.start(), m.end()
    before, after = text[a - 1:a], text[b:b + 1]
    if before in "._`∂√/" and before or after in "._([`" and after:
        return True  # module.attr, call(, index[, `code`, ∂loss
    if re.match(r"\s*=(?!=)", text[b:]):
        return True  # keyword=, name = value: a parameter's name
    if re.search(r"\w\($", text[:a]):
        return True  # an argument: embed(ids), PE(pos, j)
    if text.count("“", 0, a) > text.count("”", 0, a):
        return True  # quoted inside Chinese: “Thinking Machines”, “it”
    if re.search(r"[a-z][A-Z]", word) and word not in NAMES:
        return True  # camelCase / CamelCase with an inner capital: a class or function name
    # inside backticks, or inside a quoted Python string (a repr of data: ['the', 'cat'], 'The cat sat.')
    return text.count("`", 0, a) % 2 == 1 or bool(re.search(r"(?:^|[\[({,:=\s])'[^']*$", text[:a])
                                                    and re.match(r"[^']*'(?:$|[\])},:\s])", text[b:]))


def _runs(text: str) -> list[list[re.Match]]:
    """The text's English words grouped into runs: words separated only by spaces and sentence punctuation."""
    runs, run, end = [], [], 0
    for m in WORD.finditer(text):
        gap = text[end:m.start()]
        if run and not re.fullmatch(r"[\s,.;:?!'\"]*", gap):
            runs.append(run)
            run = []
        run.append(m)
        end = m.end()
    if run:
        runs.append(run)
    return runs


def code_data(code: str) -> set[tuple]:
    """The data a chapter's code holds, as word tuples: the string literals inside its tuples and lists (sentences a
    translator is given, a toy vocabulary), which the outputs may show as they are. Dict keys, a call's own
    arguments (``print("...")``) and a list given to a keyword (a control's options) are not data."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:  # an IPython magic, a cell left for the reader (...)
        return set()
    # a list given to a keyword is a control's options (explore(draw, scale=["none", "LayerNorm"])): words shown
    options = {id(k.value) for call in ast.walk(tree) if isinstance(call, ast.Call) for k in call.keywords}
    return {_key(WORD.findall(node.value)) for parent in ast.walk(tree)
            if isinstance(parent, (ast.Tuple, ast.List)) and id(parent) not in options
            for node in parent.elts if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def english_words(text: str, data: frozenset | set = frozenset()) -> list[str]:
    """The words of ``text`` that make it English: words the allowlist does not excuse (``data``: the chapter's own
    data, code_data)."""
    out = []
    whole, parts = _sentences()
    toy, terms = _toy_words(), _terms()
    for run in _runs(text):
        key = _key(m.group() for m in run)
        if key in whole or (len(key) >= 3 and key in parts) or key in data:
            continue  # a sentence of the real data (or a piece of one)
        if all(k in toy for k in key):
            continue  # a sentence (or words) of the toy grammar
        for m in run:
            w = m.group()
            if w in NAMES or w in UNITS or w in PY or w in terms or _is_code(text, m):
                continue
            if len(w) <= 1:
                continue
            out.append(w)
    return out


def is_english(text: str, data: frozenset | set = frozenset()) -> bool:
    return bool(english_words(text, data))


def is_english_only(text: str, data: frozenset | set = frozenset()) -> bool:
    return not HAN.search(text) and is_english(text, data)


# ---------------------------------------------------------------- reading a page

@dataclass
class Chapter:
    name: str
    lines: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # alt texts
    others: list[tuple[str, str]] = field(default_factory=list)  # (kind, text): table cells, controls, tooltips
    data: set[tuple] = field(default_factory=set)  # the data of the chapter's code (code_data)

    @property
    def english_lines(self) -> list[str]:
        return [ln for ln in self.lines if is_english_only(ln, self.data)]

    @property
    def english_figures(self) -> list[str]:
        return [alt for alt in self.figures if is_english(alt, self.data)]

    @property
    def english_others(self) -> list[tuple[str, str]]:
        return [(k, t) for k, t in self.others if is_english(t, self.data)]

    def row(self) -> dict:
        return {"lines": len(self.lines), "english_lines": len(self.english_lines), "figures": len(self.figures),
                "english_figures": len(self.english_figures), "others": len(self.others),
                "english_others": len(self.english_others)}


def _frames(site: Path | None, holder) -> list[str]:
    """The HTML of an explorer's frames that the build moved to _data/<key>.js (page_speed.lazy_explore_data)."""
    key = holder.get("data-tl-key")
    if not key:
        try:
            data = json.loads(holder.get_text())
        except ValueError:
            return []
    elif site is None:
        return []
    else:
        path = site / "zh" / "_data" / f"{key}.js"
        if not path.exists():
            path = site / "_data" / f"{key}.js"
        if not path.exists():
            return []
        text = path.read_text(encoding="utf-8")
        data = json.loads(text[text.index("=", text.index("]")) + 1:].rstrip().rstrip(";"))
    return [f for f in data.get("frames", []) if f]


_BLOCKS = ("div", "p", "br", "li", "tr", "pre", "h1", "h2", "h3", "h4", "section", "summary")


def _visible_lines(node) -> list[str]:
    """The visible text of an HTML output, one line per block, without controls, tables, figures and scripts."""
    for tag in node.find_all(["script", "style", "select", "label", "button", "table", "img", "input", "template"]):
        tag.decompose()
    for tag in node.find_all(_BLOCKS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    return [ln.strip() for ln in node.get_text().splitlines() if ln.strip()]


def _controls_and_figures(node, chapter: Chapter, site: Path | None) -> None:
    """An output's figures (alt texts, an explorer's frames), table cells and controls, into ``chapter``."""
    for img in node.find_all("img"):
        chapter.figures.append(html.unescape(img.get("alt", "")))
    for holder in node.find_all("script", class_="tl-data"):
        for frame in _frames(site, holder):
            for alt in re.findall(r'<img\b[^>]*\balt="([^"]*)"', frame):
                chapter.figures.append(html.unescape(alt))
    for cell in node.find_all(["td", "th"]):
        chapter.others.append(("table cell", cell.get_text(" ", strip=True)))
    for control in node.find_all(["option", "button"]):
        chapter.others.append((control.name, control.get_text(" ", strip=True)))
    for label in node.find_all("label"):
        chapter.others.append(("label", "".join(label.find_all(string=True, recursive=False)).strip()))


def _text_lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()]


def read_page(path: Path, site: Path | None = None) -> Chapter:
    """A built chapter page's outputs (``site``: the site's root, for the explorers' frames in _data/)."""
    from bs4 import BeautifulSoup

    site = site or path.parent.parent.parent
    # the site folds solutions into <template class="tl-lazy"> (laid out on demand); a template's content is not part
    # of the document for CSS selectors or for BeautifulSoup's get_text, so it is read as the <div> it becomes
    text = re.sub(r"<template\b", "<div", path.read_text(encoding="utf-8")).replace("</template>", "</div>")
    soup = BeautifulSoup(text, "lxml")
    chapter = Chapter(path.stem)
    for cell in soup.find_all("div", class_="cell_input"):
        chapter.data |= code_data(cell.find("pre").get_text() if cell.find("pre") else "")
    for a in soup.select("a.headerlink[title]"):
        chapter.others.append(("tooltip", a["title"]))
    for out in soup.find_all("div", class_="cell_output"):
        if out.find_parent("div", class_="cell_output"):
            continue
        _controls_and_figures(out, chapter, site)
        for block in out.find_all(["div", "pre"], recursive=False) or [out]:
            classes = block.get("class", [])
            if any(c.startswith("highlight-") and c != "highlight-myst-ansi" for c in classes):
                continue  # code the cell shows (show_source: the package's own source), not what it printed
            if "text_html" in classes:
                chapter.lines += _visible_lines(block)
            else:
                chapter.lines += _text_lines((block.find("pre") or block).get_text())
    chapter.others = [(k, t) for k, t in chapter.others if t]
    return chapter


def read_notebook(path: Path) -> Chapter:
    """An executed Chinese notebook's outputs, read as the site shows them (for a chapter run with
    ``python -m bookbuild.run_notebooks ... --static --save DIR``, before a site is built). Headings' tooltips are
    the site's: a notebook has none."""
    import nbformat
    from bs4 import BeautifulSoup

    chapter = Chapter(path.stem)
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            chapter.data |= code_data(cell.source)
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.output_type == "stream":
                chapter.lines += _text_lines(out.text)
                continue
            if out.output_type == "error":
                chapter.lines += _text_lines(re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out.traceback)))
                continue
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                continue  # a live control: the site shows the control, not its text/plain stand-in
            if "text/html" in data:
                soup = BeautifulSoup(data["text/html"], "lxml")
                _controls_and_figures(soup, chapter, None)
                chapter.lines += _visible_lines(soup)
            elif "image/png" in data:
                chapter.figures.append(out.get("metadata", {}).get("image/png", {}).get("alt", ""))
            elif "text/markdown" in data:
                if not data["text/markdown"].lstrip().startswith("```"):
                    chapter.lines += _text_lines(data["text/markdown"])
            elif "text/plain" in data:
                chapter.lines += _text_lines(data["text/plain"])
    chapter.others = [(k, t) for k, t in chapter.others if t]
    return chapter


def chapters(site: Path, names: list[str] | None = None) -> list[Chapter]:
    pages = sorted((site / "zh" / "notebooks").glob("*.html"))
    return [read_page(p, site) for p in pages if not names or p.stem in names]


def table(result: list[Chapter], show: bool = True) -> str:
    head = f"{'chapter':28s} {'lines':>6s} {'English':>8s} {'%':>6s} {'figures':>8s} {'English':>8s} {'other':>6s} " \
           f"{'English':>8s}"
    rows = [head]
    tot = dict.fromkeys(("lines", "english_lines", "figures", "english_figures", "others", "english_others"), 0)
    for ch in result:
        r = ch.row()
        for k in tot:
            tot[k] += r[k]
        pct = 100 * r["english_lines"] / r["lines"] if r["lines"] else 0.0
        rows.append(f"{ch.name:28s} {r['lines']:6d} {r['english_lines']:8d} {pct:6.1f} {r['figures']:8d} "
                    f"{r['english_figures']:8d} {r['others']:6d} {r['english_others']:8d}")
    pct = 100 * tot["english_lines"] / tot["lines"] if tot["lines"] else 0.0
    rows.append(f"{'all':28s} {tot['lines']:6d} {tot['english_lines']:8d} {pct:6.1f} {tot['figures']:8d} "
                f"{tot['english_figures']:8d} {tot['others']:6d} {tot['english_others']:8d}")
    if show:
        for ch in result:
            bad = ([f"  line:   {ln}" for ln in ch.english_lines] + [f"  figure: {alt}" for alt in ch.english_figures]
                   + [f"  {k}: {t}" for k, t in ch.english_others])
            if bad:
                rows += ["", f"{ch.name}:"] + [b[:160] for b in bad]
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[ROOT / "_build" / "html"],
                    help="the built site (default _build/html), or executed Chinese notebooks (.ipynb)")
    ap.add_argument("--page", action="append", help="only this chapter (its file's stem); repeatable")
    ap.add_argument("--quiet", action="store_true", help="the table only, not the English texts")
    ap.add_argument("--ceilings", action="store_true",
                    help="print the counts as tests/test_chinese_site.py's CEILING entries instead")
    args = ap.parse_args(argv)
    result = []
    for path in args.paths:
        if path.suffix == ".ipynb":
            result.append(read_notebook(path))
        elif (path / "zh" / "notebooks").is_dir():
            result += chapters(path, args.page)
        else:
            ap.error(f"{path} is neither an executed notebook nor a built site with a Chinese edition (zh/notebooks/)")
    if args.ceilings:
        for ch in result:
            print(f'    "{ch.name}": ({len(ch.english_lines)}, {len(ch.english_figures)}, {len(ch.english_others)}),')
    else:
        print(table(result, show=not args.quiet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
