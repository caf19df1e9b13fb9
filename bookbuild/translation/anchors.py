"""Section links in JupyterLab: an anchor line before each linked heading, cell-id links between chapters."""
from __future__ import annotations

import re
from pathlib import Path

from .markdown import cell_lines, markdown_parser
from .paths import ROOT

# -- section links in JupyterLab: anchors and cell ids ------------------------------------------------------
# The chapters link to sections by MyST's slug of the English heading ([...](#the-math), [...](07_masking.ipynb#x);
# myst_heading_anchors: 3), which is what the site's sections are called; the site is built from the English
# sources and the catalogs (bookbuild/i18n.py check keeps a msgstr's link targets equal to its msgid's), so it must see
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
# the percent-encoded id beside it when they differ): written into the English notebooks by `bookbuild/i18n.py anchors`
# (write_anchors, heading_anchors; tests/test_i18n.py fails when one is missing or stale) and copied into
# notebooks/zh/ as it is (translate_markdown leaves HTML blocks alone). It is a CommonMark HTML block, not part of
# a paragraph or a heading, so Sphinx's gettext makes no message of it (the catalogs did not change when it came),
# and the site, whose sections already carry these ids, drops it (bookbuild/sphinx_ext/markup.py
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

    md, seen, out = md or markdown_parser(), set(), []
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
    encoded = (md or markdown_parser()).normalizeLink("#" + slug)[1:]
    return [slug] + ([encoded] if encoded != slug else [])


def heading_anchors(text: str, slugs: list[str | None], wanted: set[str], md=None) -> str:
    """``text`` (an English markdown cell) with a line `<div id="slug"></div>` and a blank line before each heading
    whose slug (``slugs``, in order) is in ``wanted``, and no other such line: what ``anchors`` writes. The line is an
    HTML block of its own (CommonMark type 6), not part of a paragraph, so Sphinx's gettext makes no message of it,
    and the site drops it (bookbuild/sphinx_ext/markup.py drop_jupyter_anchors), its sections having those ids."""
    md = md or markdown_parser()
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

    md, wanted, changed = markdown_parser(), link_targets(folder), []
    for path in sorted(folder.glob("*.ipynb")):
        before = path.read_text(encoding="utf-8")
        nb = json.loads(before)
        for cell, slugs in zip(nb["cells"], heading_slugs(nb["cells"], md)):
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                new = heading_anchors(text, slugs, wanted.get(path.name, set()), md)
                if new != text:
                    cell["source"] = cell_lines(new)
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
