"""What axe-core (WCAG 2.1 A/AA) asks of the pages: citations as list items, folded cells named by their visible
text, and every figure's alt text from its output's metadata."""
from __future__ import annotations

import re

from docutils import nodes

from bookbuild import patches as registry


def visit_citation(self, node) -> None:
    """docutils' citation with role="listitem" instead of the deprecated DPUB role "doc-biblioentry"
    (DPUB-ARIA 1.1; w3c/dpub-aria#22): a role="list" needs listitem children (axe aria-required-children,
    aria-deprecated-role on the references page)."""
    if not isinstance(node.previous_sibling(), type(node)):
        self.body.append('<div role="list" class="citation-list">\n')
    self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))


def depart_citation(self, node) -> None:
    self.body.append("</div>\n")
    if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
        self.body.append("</div>\n")


def visit_hidden_cell(self, node) -> None:
    """myst-nb's folded cell without aria-label="Toggle hidden content": the summary's visible text
    ("Show code cell source", "Show solution") is its name (WCAG 2.5.3, axe label-content-name-mismatch).
    In the Chinese edition the texts are bookbuild/i18n.py's CODE_PROMPTS (config ``tl_code_prompts``)."""
    from html import escape

    prompts = self.config.tl_code_prompts or {}
    show, hide = (prompts.get(node[k], node[k]) for k in ("prompt_show", "prompt_hide"))
    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n<summary>\n'
                     f'<p class="collapsed admonition-title">{escape(show)}</p>\n'
                     f'<p class="expanded admonition-title">{escape(hide)}</p>\n</summary>\n')
    node["tl_body_start"] = len(self.body)


# What a folded cell may not hold for its content to wait in a <template>: a script (a control's, which must run
# with the page), a heading (a link target of the page's contents).
_NOT_LAZY = re.compile(r"<script\b|<h[1-6]\b")


def depart_hidden_cell(self, node) -> None:
    """The folded cell's content (highlighted code: thousands of elements per chapter) waits inside a
    <template> until the reader opens the fold (static/tl-lazy.js puts it in place; printing and
    bookbuild/build_pdf.py do too): the page's DOM is the part the reader sees."""
    start = node.get("tl_body_start")
    if start is not None and not _NOT_LAZY.search("".join(self.body[start:])):
        self.body.insert(start, '<template class="tl-lazy">')
        self.body.append("</template>")
    self.body.append("</details>\n")


def alt_text_from_outputs() -> None:
    """A notebook's image takes its ``<img alt>`` from the output's own metadata, ``{"image/png": {"alt": ...}}``:
    what ``transformer_lite.book.plotting`` gives every matplotlib figure (its titles, axis labels, legend), in the
    notebook's language. myst-nb 1.x reads only ``width`` and ``height`` there (``alt`` only from the cell's
    ``mystnb.image`` metadata), and Sphinx writes the file's path when an image has no alt: myst-nb's
    ``render_image`` is wrapped to add it. A cell's own ``mystnb.image.alt`` still wins."""
    from myst_nb.core.render import NbElementRenderer

    def wrap(render):
        def render_image(self, data):
            made = render(self, data)
            alt = (data.output_metadata or {}).get(data.mime_type, {}).get("alt")
            if isinstance(alt, str) and alt.strip():
                for node in made:
                    if isinstance(node, nodes.image) and not node.get("alt"):
                        node["alt"] = alt.strip()
            return made

        render_image.tl_alt_text = True
        return render_image

    registry.monkeypatch("myst-nb-image-alt-from-output-metadata", NbElementRenderer, "render_image", wrap)


def setup(app) -> None:
    from myst_nb.sphinx_ import HideCodeCellNode

    app.add_node(nodes.citation, override=True, html=(visit_citation, depart_citation))
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    alt_text_from_outputs()
