"""The book's figures: one style, colour-blind-safe colours, readable in light and dark themes.

Every function returns the matplotlib ``Figure`` (or ``Axes``) it drew on and never prints;
the notebook decides what to show.
"""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .i18n import N_, tr

__all__ = ["OKABE_ITO", "use_book_style", "figure_alt", "attention_heatmap", "attention_grid", "pe_heatmap",
           "loss_curves"]

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
HEATMAP_CMAP = "viridis"  # perceptually uniform and colour-blind safe


def use_book_style() -> None:
    """Set the book's matplotlib defaults.

    Figures get an opaque white background, so they stay readable when the site is in dark mode
    (a transparent PNG would put black tick labels on a dark page).
    """
    mpl.rcParams.update({
        "axes.prop_cycle": mpl.cycler(color=OKABE_ITO),
        "image.cmap": HEATMAP_CMAP,
        "figure.figsize": (6.0, 3.6),
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "axes.facecolor": "white",
        "savefig.transparent": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "xtick.labelsize": 9,
        "ytick.labelsize": 9,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "figure.constrained_layout.use": True,
    })
    cjk = _cjk_font()
    if cjk is not None:  # Chinese tokens (the translator's target language) in labels
        mpl.rcParams["font.family"] = _families(cjk)
        # The CJK font has one weight; bold labels fall back to it, which matplotlib would log every time.
        import logging

        logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    _show_figures_with_alt_text()


ALT_MAX = 400  # characters: an alt text is read out whole by a screen reader


def figure_alt(fig) -> str:
    """A figure's alt text, made of its own words: the suptitle, then each axes' title, axis labels and legend
    entries (figure legends too), in the order they were drawn; repeated pieces once. In the figure's language:
    Chinese labels give a Chinese alt text, with full-width separators. Empty when the figure has no text."""
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")

    def clean(text) -> str:
        text = text.get_text() if hasattr(text, "get_text") else str(text or "")
        return " ".join(text.replace("$", "").split())

    def legend(owner) -> list[str]:
        found = []
        for lg in ([owner.get_legend()] if hasattr(owner, "get_legend") else []) + list(getattr(owner, "legends", [])):
            if lg is not None:
                found += [t for t in (clean(x) for x in lg.get_texts()) if t and not t.startswith("_")]
        return found

    texts = []
    for ax in fig.axes:
        titles = [clean(ax.get_title(loc)) for loc in ("left", "center", "right")]
        labels = [clean(ax.get_xlabel()), clean(ax.get_ylabel())]
        texts.append(([t for t in titles if t], [t for t in labels if t], legend(ax)))
    suptitle = clean(fig.get_suptitle()) if hasattr(fig, "get_suptitle") else ""  # matplotlib >= 3.8
    everything = " ".join([suptitle] + [" ".join(a + b + c) for a, b, c in texts] + legend(fig))
    zh = any("\u3400" <= ch <= "\u9fff" for ch in everything)
    colon, semi, comma, slash, op, cl, stop = (("：", "；", "，", " / ", "（", "）", "。") if zh
                                               else (": ", "; ", ", ", " / ", " (", ")", ". "))
    pieces = []
    for titles, labels, entries in texts:
        piece = " ".join(titles)
        if labels:
            piece += (colon if piece else "") + slash.join(labels)
        if entries:
            piece += f"{op}{comma.join(entries)}{cl}" if piece else comma.join(entries)
        if piece and piece not in pieces:
            pieces.append(piece)
    if legend(fig):
        pieces.append(comma.join(legend(fig)))
    alt = semi.join(pieces)
    if suptitle:
        alt = suptitle + (stop + alt if alt else "")
    alt = alt.strip()
    return alt if len(alt) <= ALT_MAX else alt[:ALT_MAX - 1].rstrip() + "…"


def _show_figures_with_alt_text() -> None:
    """In IPython (Jupyter, the book build), a figure's PNG output carries its alt text (``figure_alt``) in the
    output's metadata, ``{"image/png": {"alt": ...}}``: the site's ``<img alt>`` (the book's Sphinx extension).
    IPython formatters may return ``(data, metadata)``; this wraps the inline backend's own PNG formatter, after
    making the backend register it (it replaces every Figure formatter when it is first set up). Nothing happens
    outside IPython or when no PNG formatter shows figures (another backend or format)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return
    if "inline" in str(mpl.get_backend()):
        import matplotlib_inline.backend_inline  # noqa: F401 - importing it selects the inline figure formats
    from matplotlib.figure import Figure

    png = ip.display_formatter.formatters["image/png"]
    try:
        draw = png.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(draw, "tl_alt_text", False):
        return

    def with_alt(fig):
        out = draw(fig)
        if out is None:
            return None
        data, metadata = out if isinstance(out, tuple) else (out, None)
        alt = figure_alt(fig)
        if alt:
            metadata = dict(metadata or {}, alt=alt)
        return (data, metadata) if metadata else data

    with_alt.tl_alt_text = True
    png.for_type(Figure, with_alt)


def _chinese_ready() -> None:
    """In Chinese (:mod:`.i18n`), make sure the CJK font comes first even when ``use_book_style`` was not called
    (``setup`` calls it) or was called in English: the labels would otherwise be drawn as empty boxes."""
    from .i18n import language

    if language() != "zh":
        return
    cjk = _cjk_font()
    if cjk is not None and list(mpl.rcParams["font.family"])[:1] != [cjk]:
        mpl.rcParams["font.family"] = _families(cjk, list(mpl.rcParams["font.family"]))


def _families(cjk: str, others: list[str] | None = None) -> list[str]:
    """The fonts a label is drawn with, in order: in English DejaVu Sans, then the CJK font for the translator's
    Chinese tokens; in Chinese the CJK font first. A label that mixes text with math (``"从 $x_0$ 到 $h_5$"``) is
    drawn by mathtext, which sets its text in the first font alone, with no fallback: DejaVu Sans first would draw
    every Chinese character of it as an empty box. (Other labels fall back glyph by glyph, so DejaVu Sans still
    draws what the CJK font lacks.)"""
    from .i18n import language

    others = [f for f in (others or ["DejaVu Sans"]) if f != cjk]
    return [cjk, *others] if language() == "zh" else [*others, cjk]


def _cjk_font() -> str | None:
    """Register a Chinese-capable font as a fallback: Noto Sans CJK SC from the ``mplfonts`` wheel
    (installed by the book's requirements; no download at run time), else one the system has."""
    import importlib.util
    from pathlib import Path

    from matplotlib import font_manager

    spec = importlib.util.find_spec("mplfonts")  # located, not imported: only its font file is needed
    if spec is not None and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / "fonts" / "NotoSansCJKsc-Regular.otf"
        if path.exists():
            font_manager.fontManager.addfont(str(path))
            return font_manager.FontProperties(fname=str(path)).get_name()
    for name in ("Noto Sans CJK SC", "Noto Sans SC", "WenQuanYi Micro Hei", "SimHei", "Microsoft YaHei"):  # i18n: data
        if any(f.name == name for f in font_manager.fontManager.ttflist):
            return name
    return None


def _to_numpy(x, name: str, ndim: int) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    x = np.asarray(x, dtype=float)
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    return x


def _check_tokens(tokens, n: int, name: str, axis: str):
    if tokens is None:
        return [str(i) for i in range(n)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{name} has {len(tokens)} tokens but the weights have {n} {axis}")
    return tokens


def attention_heatmap(weights, query_tokens=None, key_tokens=None, ax=None, title=None, annotate=None,
                      colorbar=True):
    """Heatmap of one attention matrix: rows are queries (T), columns are keys (S). Returns the Axes.

    ``annotate`` writes each weight in its cell (default: when the matrix is at most 8 x 8).
    """
    w = _to_numpy(weights, "weights", 2)
    T, S = w.shape
    _chinese_ready()
    qt = _check_tokens(query_tokens, T, "query_tokens", "rows (queries)")  # i18n: data
    kt = _check_tokens(key_tokens, S, "key_tokens", "columns (keys)")  # i18n: data
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.45 * S + 1.0, 0.8 + 0.45 * T))
    im = ax.imshow(w, cmap=HEATMAP_CMAP, vmin=0.0, vmax=max(1e-9, float(np.nanmax(w))) if w.size else 1.0,
                   aspect="auto")
    ax.set_xticks(range(S), kt, rotation=45 if max(map(len, kt), default=0) > 3 else 0, ha="right"
                  if max(map(len, kt), default=0) > 3 else "center")
    ax.set_yticks(range(T), qt)
    ax.set_xlabel(tr("key (attended to)"))
    ax.set_ylabel(tr("query (attending)"))
    ax.grid(False)
    if title:
        ax.set_title(title)
    if annotate is None:
        annotate = T <= 8 and S <= 8
    if annotate:
        for i in range(T):
            for j in range(S):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if w[i, j] > 0.6 * np.nanmax(w) else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=tr("attention weight"), shrink=0.8)
    return ax


def attention_grid(weights, query_tokens=None, key_tokens=None, titles=None, ncols=None, suptitle=None):
    """One heatmap per head, side by side: ``weights`` is (H, T, S). Returns the Figure."""
    w = _to_numpy(weights, "weights", 3)
    H, T, S = w.shape
    _chinese_ready()
    if titles is None:
        titles = [tr("head {h}", h=h) for h in range(H)]
    if len(titles) != H:
        raise ValueError(f"titles has {len(titles)} entries but weights has {H} heads")
    ncols = ncols or min(H, 4)
    nrows = -(-H // ncols)
    size = 0.3 * max(S, T) + 1.2
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * size + 0.8, nrows * size), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        attention_heatmap(w[h], query_tokens, key_tokens, ax=ax, title=titles[h], annotate=False, colorbar=False)
        if h % ncols:
            ax.set_ylabel("")
            ax.set_yticklabels([])
        if h < H - ncols:
            ax.set_xlabel("")
    fig.colorbar(mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(0, 1), cmap=HEATMAP_CMAP), ax=axes,
                 label=tr("attention weight"), shrink=0.8)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def pe_heatmap(pe, ax=None, title=N_("Sinusoidal positional encoding")):
    """Heatmap of a positional-encoding table ``pe`` (L, D): rows are positions. Returns the Axes.

    The default title and the labels are in the package's language (:mod:`.i18n`)."""
    p = _to_numpy(pe, "pe", 2)
    _chinese_ready()
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.6))
    im = ax.imshow(p, cmap=HEATMAP_CMAP, vmin=-1.0, vmax=1.0, aspect="auto", interpolation="nearest")
    ax.set_xlabel(tr("dimension i (0 … D-1)"))
    ax.set_ylabel(tr("position pos"))
    ax.grid(False)
    if title:
        ax.set_title(tr(title) if isinstance(title, str) else title)
    ax.figure.colorbar(im, ax=ax, label=tr("PE value"))
    return ax


def loss_curves(curves: dict, ax=None, xlabel=N_("training step"), ylabel=N_("loss (nats per token)"), logy=False,
                title=None):
    """Plot several named curves (label -> list of values) on one Axes. Returns the Axes.

    The default axis labels are in the package's language (:mod:`.i18n`)."""
    if not isinstance(curves, dict) or not curves:
        raise ValueError(f"curves must be a non-empty dict label -> list of values, got {type(curves).__name__}")
    _chinese_ready()
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.4))
    for label, ys in curves.items():
        ys = np.asarray(ys, dtype=float)
        ax.plot(np.arange(len(ys)), ys, label=str(label), linewidth=1.6)
    ax.set_xlabel(tr(xlabel) if isinstance(xlabel, str) else xlabel)
    ax.set_ylabel(tr(ylabel) if isinstance(ylabel, str) else ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if len(curves) > 1:
        ax.legend()
    return ax
