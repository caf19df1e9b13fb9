"""Deep dives folded on the site as JupyterLab and Colab fold them (bookbuild/chapters.py), their code waiting in
<template>s until the reader opens them."""
from __future__ import annotations

import re

from docutils import nodes

# A section whose title starts with one of these is a deep dive: its title and first paragraph show, the rest folds.
DEEP_DIVE = ("Deep dive:", "深入：")


DEEP_DIVE_PROMPTS = ("Open this deep dive", "Close this deep dive")  # translated by tl_code_prompts (bookbuild/i18n.py)


class deep_dive_fold(nodes.General, nodes.Element):
    """The folded part of a deep dive: a <details> on the site (the PDF prints it open, bookbuild/build_pdf.py)."""


def fold_deep_dives(app, doctree) -> None:
    """A deep dive, as JupyterLab and Colab collapse it under its heading (bookbuild/chapters.py): everything after the
    section's title and its first paragraph goes into one fold. Sub-sections fold with it."""
    for section in list(doctree.findall(nodes.section)):
        title = section.children[0] if section.children else None
        if not isinstance(title, nodes.title) or not title.astext().strip().startswith(DEEP_DIVE):
            continue
        keep = 2 if len(section.children) > 1 and isinstance(section.children[1], nodes.paragraph) else 1
        rest = section.children[keep:]
        if not rest:
            continue
        section["classes"].append("tl-deep-dive")
        fold = deep_dive_fold()
        for child in rest:
            section.remove(child)
        fold.extend(rest)
        section += fold


def visit_deep_dive_fold(self, node) -> None:
    prompts = self.config.tl_code_prompts or {}
    show, hide = (prompts.get(t, t) for t in DEEP_DIVE_PROMPTS)
    from html import escape

    self.body.append(f'<details class="tl-deep-dive-fold">\n<summary>'
                     f'<span class="tl-when-closed">{escape(show)}</span>'
                     f'<span class="tl-when-open">{escape(hide)}</span></summary>\n')
    node["tl_body_start"] = len(self.body)


# a code cell's source in a deep dive's fold: it waits in a <template> until the fold opens (static/tl-lazy.js)
_FOLDED_CODE = re.compile(r'(?<!<template class="tl-lazy">)(<div class="cell_input docutils container">)'
                          r'(\s*<div class="highlight-[\w-]+ notranslate">'
                          r'<div class="highlight"><pre>.*?</pre></div>\s*</div>\s*)'
                          r'(</div>)', re.S)


def depart_deep_dive_fold(self, node) -> None:
    """The fold closes; the code cells' sources inside it wait in <template>s (a chapter's deep dives
    hold thousands of highlighted-code elements that a reader who does not open them never sees)."""
    start = node.get("tl_body_start")
    if start is not None:
        folded = "".join(self.body[start:])
        del self.body[start:]
        self.body.append(_FOLDED_CODE.sub(r'\1<template class="tl-lazy">\2</template>\3', folded))
    self.body.append("</details>\n")


def _skip(self, node) -> None:
    pass


def setup(app) -> None:
    app.connect("doctree-read", fold_deep_dives)
    app.add_node(deep_dive_fold, html=(visit_deep_dive_fold, depart_deep_dive_fold),
                 latex=(_skip, _skip), text=(_skip, _skip), man=(_skip, _skip), texinfo=(_skip, _skip))
    app.add_js_file("tl-deep-dive.js", loading_method="defer")
