"""The book's map: the Transformer laid out like Figure 1 of the paper, each part labelled with its chapter.

One drawing, two places, in the reader's language (``i18n.language()``: the Chinese notebooks call
``setup(..., language="zh")``):

* chapter 0 shows :func:`architecture_map_html`, every box a link to its chapter;
* the landing page (``book/intro.md``) shows :func:`landing_page_svg`, the same map without links, as the image
  files ``book/architecture_map.svg`` and ``book/architecture_map.zh_CN.svg`` (Sphinx takes the second in the
  Chinese edition). ``python -m bookbuild.i18n notebooks`` writes both from here; a test fails when they differ.

Every word the map shows goes through :func:`~.i18n.tr`, so its Chinese is in the package's catalog
(``locale/zh_CN.po``, ``bookbuild/i18n.py package``), in the terms of the Chinese chapters' titles and the glossary.
"""
from __future__ import annotations

from html import escape

from .i18n import N_, language, tr

__all__ = ["ENCODER", "DECODER", "ALSO", "STACKS", "architecture_svg", "architecture_map_html", "landing_page_svg"]

ENCODER = [  # bottom to top: (label, chapter file, chapter number, fill colour)
    (N_("Input embedding"), "01_tokens_and_embeddings", "1", "#f3e1ef"),
    (N_("+ Positional encoding"), "02_positional_encoding", "2", "#f3e1ef"),
    (N_("Multi-head attention"), "04_multi_head_attention", "4", "#fde8c8"),
    (N_("Add & Norm"), "05_add_norm_ffn", "5", "#fbf6c2"),
    (N_("Feed forward"), "05_add_norm_ffn", "5", "#cfe8f7"),
    (N_("Add & Norm"), "05_add_norm_ffn", "5", "#fbf6c2"),
]
DECODER = [
    (N_("Output embedding"), "01_tokens_and_embeddings", "1", "#f3e1ef"),
    (N_("+ Positional encoding"), "02_positional_encoding", "2", "#f3e1ef"),
    (N_("Masked multi-head attention"), "07_masking", "7", "#fde8c8"),
    (N_("Add & Norm"), "05_add_norm_ffn", "5", "#fbf6c2"),
    (N_("Cross-attention"), "09_decoder", "9", "#fde8c8"),
    (N_("Add & Norm"), "05_add_norm_ffn", "5", "#fbf6c2"),
    (N_("Feed forward"), "05_add_norm_ffn", "5", "#cfe8f7"),
    (N_("Add & Norm"), "05_add_norm_ffn", "5", "#fbf6c2"),
    (N_("Linear → softmax"), "09_decoder", "9", "#dcefdc"),
]
ALSO = [  # the other chapters, listed in the empty corner: (title, chapter file, its number or letter)
    (N_("Self-attention in six steps"), "03_self_attention", "3"),
    (N_("BatchNorm vs LayerNorm"), "06_batchnorm_vs_layernorm", "6"),
    (N_("Training"), "10_training", "10"),
    (N_("Pre-LN vs Post-LN"), "11_pre_ln_vs_post_ln", "11"),
    (N_("Inference"), "12_inference", "12"),
    (N_("Capstone: a tiny translator"), "13_capstone_translator", "13"),
    (N_("Capstone II: real sentences"), "13b_real_sentences", "13b"),
    (N_("Beyond: BERT and GPT"), "14_bert_and_gpt", "14"),
    (N_("Since 2017"), "15_since_2017", "15"),
    (N_("Appendix A: vision"), "appendix_a_vision", "A"),       # an appendix's title names its letter
    (N_("Appendix B: glossary"), "../book/glossary.md", "B"),
    (N_("Appendix C: pitfalls"), "appendix_c_pitfalls", "C"),
]
STACKS = [(N_("The encoder,"), "08_encoder", "8"), (N_("The decoder,"), "09_decoder", "9")]  # + "N× · 8"
Y_ENC = [500, 448, 350, 306, 250, 206]                       # top edge of each box (SVG y grows downwards)
Y_DEC = [500, 448, 350, 306, 250, 206, 150, 106, 40]
CX_ENC, CX_DEC, W, H = 230, 530, 200, 30                      # column centres, box size
LINK, TEXT = "#1a6fb0", "#333"                                # a link's colour, a plain label's


def _label(title: str, number: str) -> str:
    """A label as the map shows it: the title, then its chapter ("Training · 10"); an appendix's title names it."""
    return tr(title) if number.isalpha() else f"{tr(title)} · {number}"


def _href(target: str) -> str:
    """Where a link points in Jupyter: the chapter's notebook beside this one, or a page of book/ (the Chinese
    notebooks are one folder deeper, in notebooks/zh/). On the web site a script points them at the .html pages."""
    if target.endswith(".md"):
        return target.replace("../", "../../", 1) if language() == "zh" else target
    return f"{target}.ipynb"


def _linked(links: bool, target: str, number: str, inner: str) -> str:
    if not links:
        return inner
    title = tr("Appendix {letter}", letter=number) if number.isalpha() else tr("Chapter {number}", number=number)
    return f'<a href="{_href(target)}" class="tl-map-link"><title>{escape(title)}</title>{inner}</a>'


def _arrow(x1, y1, x2, y2, head=True) -> str:
    end = ' marker-end="url(#tl-arrow)"' if head else ""
    return f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#666" stroke-width="1.5"{end}/>'


def architecture_svg(links: bool = True) -> str:
    """The map as one ``<svg>`` element, in the current language: with ``links``, every box, both stacks' labels
    and every title of the list a link to its chapter (chapter 0); without, plain labels (the landing page)."""
    colour, underline = (LINK, ' text-decoration="underline"') if links else (TEXT, "")
    p = ['<defs><marker id="tl-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
         'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#666"/></marker></defs>',
         '<rect width="800" height="600" rx="10" fill="white"/>',      # readable in the dark theme too
         '<rect x="125" y="194" width="210" height="198" rx="10" fill="none" stroke="#888" stroke-dasharray="5 4"/>',
         '<rect x="425" y="94" width="210" height="298" rx="10" fill="none" stroke="#888" stroke-dasharray="5 4"/>']
    # the stacks' labels, on two lines so that they fit the page, linked to the chapters on the whole stacks
    for (title, target, number), x, y, anchor in zip(STACKS, (118, 642), (290, 240), ("end", "start")):
        p.append(_linked(links, target, number,
                         f'<text x="{x}" y="{y}" text-anchor="{anchor}" font-size="12" fill="{colour}"{underline}>'
                         f'{escape(tr(title))}<tspan x="{x}" dy="15">N× · {number}</tspan></text>'))
    # data flow: inputs -> columns, encoder output -> cross-attention, decoder -> probabilities
    for cx, ys in ((CX_ENC, Y_ENC), (CX_DEC, Y_DEC)):
        p.append(_arrow(cx, 570, cx, ys[0] + H + 2))
        for lower, upper in zip(ys, ys[1:]):
            p.append(_arrow(cx, lower, cx, upper + H + 2))
    p += [_arrow(CX_ENC, Y_ENC[-1], CX_ENC, 170, head=False), _arrow(CX_ENC, 170, 395, 170, head=False),
          _arrow(395, 170, 395, Y_DEC[4] + H / 2, head=False),
          _arrow(395, Y_DEC[4] + H / 2, CX_DEC - W / 2 - 2, Y_DEC[4] + H / 2),
          _arrow(CX_DEC, Y_DEC[-1], CX_DEC, 24)]
    for x, y, size, words in ((300, 162, 11, N_("encoder output (keys, values)")),
                              (CX_ENC, 590, 13, N_("source tokens")),
                              (CX_DEC, 590, 13, N_("target tokens, shifted right")),
                              (CX_DEC, 16, 13, N_("next-token probabilities"))):
        p.append(f'<text x="{x}" y="{y}" text-anchor="middle" font-size="{size}" fill="#555">'
                 f'{escape(tr(words))}</text>')
    for cx, column, ys in ((CX_ENC, ENCODER, Y_ENC), (CX_DEC, DECODER, Y_DEC)):
        for (title, target, number, fill), y in zip(column, ys):
            p.append(_linked(links, target, number,
                             f'<rect x="{cx - W / 2}" y="{y}" width="{W}" height="{H}" rx="6" fill="{fill}" '
                             f'stroke="#444"/><text x="{cx}" y="{y + 20}" text-anchor="middle" font-size="12" '
                             f'fill="#222">{escape(_label(title, number))}</text>'))
    also = escape(tr("Also in the book:"))
    p.append(f'<text x="20" y="26" font-size="12" font-weight="bold" fill="#555">{also}</text>')
    for i, (title, target, number) in enumerate(ALSO):  # 14 px a line: the last one ends above the encoder's frame
        x, y = 20 + 194 * (i // 6), 44 + 14 * (i % 6)    # two columns of six
        p.append(_linked(links, target, number, f'<text x="{x}" y="{y}" font-size="11" fill="{colour}"{underline}>'
                                                f'{escape(_label(title, number))}</text>'))
    if links:
        name = tr("The Transformer architecture; each part links to the chapter that teaches it")
        head = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 800 600" width="100%" '
                f'style="max-width:800px;font-family:sans-serif" role="group" aria-label="{escape(name)}">')
    else:
        title = tr("The Transformer, annotated with the chapters of this book")
        head = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 800 600" style="font-family:sans-serif" '
                'role="img" aria-labelledby="tl-map-title tl-map-desc">\n'
                f'<title id="tl-map-title">{escape(title)}</title>\n'
                f'<desc id="tl-map-desc">{escape(tr(DESCRIPTION))}</desc>')
    return head + "\n".join([""] + p + ["</svg>"])


DESCRIPTION = N_(
    "Left, the encoder: input embedding (chapter 1) plus positional encoding (chapter 2), then multi-head attention "
    "(chapter 4), Add & Norm and feed forward (chapter 5), stacked N times (chapter 8). Right, the decoder: output "
    "embedding (1) plus positional encoding (2), masked multi-head attention (chapter 7), cross-attention over the "
    "encoder output (chapter 9), feed forward and Add & Norm (5), stacked N times (9), then a linear layer and "
    "softmax (9). Also: self-attention (3), BatchNorm vs LayerNorm (6), training (10), Pre-LN vs Post-LN (11), "
    "inference (12), the capstone translator (13), the capstone on real sentences (13b), BERT and GPT (14), since "
    "2017 (15), and appendices A (vision), B (glossary) and C (pitfalls).")


def architecture_map_html() -> str:
    """Chapter 0's map: the linked SVG and a one-line script. Its links point to the .ipynb files, which is what
    Jupyter opens; on the book's web pages the script points them at the .html pages."""
    script = ("<script>(function(){if(!/\\.html?$/.test(location.pathname))return;"
              "document.querySelectorAll('a.tl-map-link').forEach(function(a){"
              "a.setAttribute('href',a.getAttribute('href').replace(/^\\.\\.\\/\\.\\.\\/book\\//,'../book/')"
              ".replace(/\\.(ipynb|md)$/,'.html'));});})();</script>")
    return '<div class="tl-architecture-map">' + architecture_svg(links=True) + "</div>" + script


def landing_page_svg() -> str:
    """The landing page's image file (book/architecture_map.svg, or .zh_CN.svg in Chinese): the map without links,
    with a title and a description for a reader who opens the file itself."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + architecture_svg(links=False) + "\n"
