"""Controls that work in both worlds: live in Jupyter/Colab, precomputed on the static site.

A chapter writes one line::

    from transformer_lite.book.interactive import explore
    explore(draw, d_model=[16, 64, 256], pos=[0, 10, 50])

* In Jupyter, JupyterLab, VS Code and Colab the controls are ipywidgets driving live Python.
* In the book build there is no kernel behind the page, so an ipywidgets control would be
  inert. The build exports ``TRANSFORMER_LITE_STATIC=1`` (``bookbuild/build_book.py``); the
  notebook kernel inherits the build's environment, and in that mode every combination of
  control values is computed once, at build time, and written into ONE HTML output with
  plain ``<select>``/``<input type="range">`` elements and a few lines of inline JavaScript
  that swap the frames. No ipywidgets output is produced at all in static mode.

``draw(**params)`` may return a matplotlib ``Figure`` (or ``Axes``), an HTML string, or any
object with ``_repr_html_``; whatever it prints is shown above its result.
"""
from __future__ import annotations

import base64
import contextlib
import html
import io
import itertools
import json
import numbers
import os

from .i18n import CONTEXT, N_, catalog, language, tr

__all__ = ["explore", "live_text", "static_mode", "explore_html", "live_text_html", "control_label"]

STATIC_ENV = "TRANSFORMER_LITE_STATIC"
MAX_FRAMES = 48
CONTROL = "control"  # the msgctxt of the controls' names in the package's catalog

_counter = itertools.count(1)  # element ids: deterministic per kernel, hence per page


def static_mode() -> bool:
    """True when the book build asks for precomputed, kernel-free controls."""
    return os.environ.get(STATIC_ENV, "").strip().lower() in ("1", "true", "yes")


def _next_id(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}"


def _check_controls(controls: dict, max_frames: int) -> dict:
    if not controls:
        raise ValueError("explore needs at least one control, e.g. explore(draw, n=[1, 2, 4])")
    values = {}
    for name, options in controls.items():
        if isinstance(options, (str, bytes)) or not hasattr(options, "__iter__"):
            raise TypeError(f"control {name!r} must be a list of values, got {type(options).__name__}: {options!r}")
        options = list(options)
        if not options:
            raise ValueError(f"control {name!r} must have at least one value, got an empty list")
        values[name] = options
    n = 1
    for options in values.values():
        n *= len(options)
    if n > max_frames:
        sizes = " x ".join(f"{k}: {len(v)}" for k, v in values.items())
        longest = max(values, key=lambda k: len(values[k]))
        raise ValueError(f"too many frames to precompute: {n} ({sizes}) > max_frames={max_frames}; "
                         f"give {longest!r} fewer values")
    return values


def control_label(name: str) -> str:
    """The label of the control that ``explore`` makes for the keyword ``name``, live and on the static page: in
    Chinese, the name's translation in the package's catalog (msgctxt "control"; bookbuild's package_catalog
    lists every name a chapter gives a control), else the name itself, as a symbol of the math (d_k, T) stays."""
    if language() != "zh":
        return name
    return catalog().get(CONTROL + CONTEXT + name, name)


def _label(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _is_numeric(options) -> bool:
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in options) and len(options) > 1


def _small_png(png: bytes) -> bytes:
    """The same figure as a 256-colour PNG when that is smaller (typically a third: pages stay light)."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - pillow comes with matplotlib
        return png
    im = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    im.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
    return out.getvalue() if out.tell() < len(png) else png


def _result_to_html(result, dpi: int, alt: str, text_is_html: bool = True) -> str:
    """One frame's HTML: a PNG for a figure, else the object's HTML (matplotlib figures are closed)."""
    fig = None
    try:
        from matplotlib.axes import Axes
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is a book dependency
        Figure = Axes = ()
    if isinstance(result, Axes):
        fig = result.figure
    elif isinstance(result, Figure):
        fig = result
    if fig is not None:
        import matplotlib.pyplot as plt

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        plt.close(fig)
        data = base64.b64encode(_small_png(buf.getvalue())).decode("ascii")
        return (f'<img class="tl-frame-img" alt="{html.escape(alt)}" '
                f'style="max-width:100%;height:auto" src="data:image/png;base64,{data}">')
    if result is None:
        return ""
    if isinstance(result, str):
        return result if text_is_html else f'<pre class="tl-text">{html.escape(result)}</pre>'
    if hasattr(result, "_repr_html_"):
        out = result._repr_html_()
        if out is not None:
            return out
    return f'<pre class="tl-text">{html.escape(repr(result))}</pre>'


def _run(fn, kwargs, dpi, alt, text_is_html=True) -> str:
    """Call fn, capturing what it prints; return the frame's HTML."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(**kwargs)
    printed = out.getvalue()
    if result is None and not printed:
        raise TypeError(f"draw({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) returned None and printed "
                        "nothing: return what to show (e.g. `return fig`) instead of calling plt.show(), "
                        "so that the static page can store it")
    body = _result_to_html(result, dpi, alt, text_is_html)
    if printed:
        body = f'<pre class="tl-text">{html.escape(printed)}</pre>' + body
    return body


def _json_for_script(obj) -> str:
    # "</" inside a <script> would end it early.
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


_STYLE = ("<style>.tl-explore{margin:.5em 0 1em}.tl-controls{display:flex;flex-wrap:wrap;gap:.4em 1.5em;"
          "align-items:center;margin-bottom:.4em;font-size:.9em}.tl-controls label{display:flex;gap:.5em;"
          "align-items:center}.tl-controls output{min-width:3em;font-family:monospace}"
          ".tl-note{font-size:.85em;opacity:.8;margin:.2em 0}.tl-frame img{background:#fff}</style>")

# Frames are stored once (identical frames shared; the initial one only in the page, null in the
# data); `index` maps the combination (row-major over the
# controls) to a frame. Each control carries its axis number; changing one recomputes the combination.
# The frames are read on the control's first use, not as the page loads: in Jupyter from the <script class="tl-data">
# that holds them; on the book's site, where the build moves them to a file of their own (the holder then names it
# in data-tl-key), through window.tlExploreData (bookbuild/sphinx_ext/static/tl-lazy.js loads that file).
_SCRIPT = """<script>(function(){var r=document.getElementById(%(id)s);if(!r)return;
var d=null,v=r.querySelector('.tl-frame'),
c=r.querySelectorAll('[data-tl-axis]'),f0=v.innerHTML;function u(){if(!d){var h=r.querySelector('script.tl-data');
if(h.dataset.tlKey){window.tlExploreData(r).then(function(x){d=x;u();});return;}d=JSON.parse(h.textContent);}
var k=0;c.forEach(function(e){var a=+e.dataset.tlAxis;
k=k*d.sizes[a]+(+e.value);var o=e.parentNode.querySelector('output');if(o)o.textContent=d.labels[a][+e.value];});
var f=d.frames[d.index[k]];v.innerHTML=f===null?f0:f;r.dataset.tlFrame=k;}
c.forEach(function(e){e.addEventListener('input',u);e.addEventListener('change',u);});})();</script>"""


def explore_html(draw, /, *, initial: dict | None = None, max_frames: int = MAX_FRAMES, dpi: int = 90,
                 alt: str | None = None, **controls) -> str:
    """The static-site HTML for ``explore``: every combination precomputed, switched by inline JS."""
    values = _check_controls(controls, max_frames)
    names = list(values)
    initial = dict(initial or {})
    for k in initial:
        if k not in values:
            raise ValueError(f"initial has {k!r}, which is not a control; controls are {names}")
    start = []
    for name in names:
        if name in initial:
            try:
                start.append(values[name].index(initial[name]))
            except ValueError:
                raise ValueError(f"initial[{name!r}]={initial[name]!r} is not one of {values[name]!r}") from None
        else:
            start.append(0)

    frames, index, seen = [], [], {}
    for combo in itertools.product(*(values[n] for n in names)):
        params = dict(zip(names, combo))
        label = ("，" if language() == "zh" else ", ").join(f"{control_label(k)} = {_label(v)}"
                                                             for k, v in params.items())
        frame = _run(draw, params, dpi, alt.format(**params) if alt else tr("Figure for {label}", label=label))
        if frame not in seen:
            seen[frame] = len(frames)
            frames.append(frame)
        index.append(seen[frame])

    uid = _next_id("tl-explore")
    parts = [_STYLE, f'<div class="tl-explore" id="{uid}">', '<div class="tl-controls">']
    for axis, name in enumerate(names):
        opts, i0, shown = values[name], start[axis], html.escape(control_label(name))
        if _is_numeric(opts):
            parts.append(f'<label>{shown} <input type="range" id="{uid}-{axis}" data-tl-axis="{axis}" '
                         f'min="0" max="{len(opts) - 1}" step="1" value="{i0}" aria-label="{shown}">'
                         f'<output>{html.escape(_label(opts[i0]))}</output></label>')
        else:
            options = "".join(f'<option value="{i}"{" selected" if i == i0 else ""}>{html.escape(_label(v))}</option>'
                              for i, v in enumerate(opts))
            parts.append(f'<label>{shown} <select id="{uid}-{axis}" data-tl-axis="{axis}">'
                         f'{options}</select></label>')
    parts.append("</div>")
    k0 = 0
    for axis, name in enumerate(names):
        k0 = k0 * len(values[name]) + start[axis]
    parts.append(f'<div class="tl-frame">{frames[index[k0]]}</div>')
    frames[index[k0]] = None  # already in the page
    data = {"sizes": [len(values[n]) for n in names], "labels": [[_label(v) for v in values[n]] for n in names],
            "index": index, "frames": frames}
    parts.append(f'<script type="application/json" class="tl-data">{_json_for_script(data)}</script>')
    parts.append(_SCRIPT % {"id": json.dumps(uid)})
    parts.append("</div>")
    return "".join(parts)


def _show(obj):
    """Display a draw()/fn() result in a live output area, closing figures so they show once."""
    from IPython.display import HTML, display

    try:
        from matplotlib.axes import Axes
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover
        Figure = Axes = ()
    if isinstance(obj, Axes):
        obj = obj.figure
    if isinstance(obj, Figure):
        import matplotlib.pyplot as plt

        display(obj)
        plt.close(obj)
    elif isinstance(obj, str):
        display(HTML(obj))
    elif obj is not None:
        display(obj)


def explore(draw, /, *, initial: dict | None = None, max_frames: int = MAX_FRAMES, dpi: int = 90,
            alt: str | None = None, **controls) -> None:
    """Show ``draw(**params)`` with one control per keyword; each control is a list of values.

    Numeric lists become sliders, anything else a drop-down. ``initial`` picks the starting value
    per control (default: the first). Statically (``TRANSFORMER_LITE_STATIC=1``) every combination
    is precomputed, so keep the product of the list lengths <= ``max_frames`` and figures small;
    ``alt`` is a format string for the image's alt text, e.g. ``"Heatmap for d_model={d_model}"``.
    """
    from IPython.display import HTML, display

    if static_mode():
        display(HTML(explore_html(draw, initial=initial, max_frames=max_frames, dpi=dpi, alt=alt, **controls)))
        return
    import ipywidgets as widgets

    values = _check_controls(controls, max_frames=10**9)  # live: no frame limit
    initial = dict(initial or {})
    ws = {}
    for name, opts in values.items():
        start = opts.index(initial[name]) if name in initial else 0
        options = [(_label(v), i) for i, v in enumerate(opts)]
        if _is_numeric(opts):
            ws[name] = widgets.SelectionSlider(options=options, value=start, description=control_label(name),
                                               continuous_update=False)
        else:
            ws[name] = widgets.Dropdown(options=options, value=start, description=control_label(name))

    def run(**idx):
        _show(draw(**{k: values[k][i] for k, i in idx.items()}))

    out = widgets.interactive_output(run, ws)
    # i18n: data
    display(widgets.VBox([widgets.HBox(list(ws.values()), layout=widgets.Layout(flex_flow="row wrap")), out]))


_NOTE = N_("Type your own input when the notebook runs in Jupyter or Colab.")
_LABEL = N_("input")


def live_text_html(fn, examples, *, dpi: int = 90, label: str = _LABEL, note: str = _NOTE) -> str:
    """The static-site HTML for ``live_text``: a drop-down of the precomputed examples (the default label and note
    in the package's language, :mod:`.i18n`)."""
    examples = _check_examples(examples)
    label, note = tr(label), tr(note)
    frames = [_run(lambda text: fn(text), {"text": ex}, dpi, tr("Result for {example}", example=ex),
                   text_is_html=False) for ex in examples]
    uid = _next_id("tl-live")
    options = "".join(f'<option value="{i}">{html.escape(ex)}</option>' for i, ex in enumerate(examples))
    first, frames[0] = frames[0], None  # already in the page
    data = {"sizes": [len(examples)], "labels": [list(examples)], "index": list(range(len(examples))),
            "frames": frames}
    return "".join([
        _STYLE, f'<div class="tl-explore tl-live" id="{uid}">',
        f'<div class="tl-controls"><label>{html.escape(label)} <select id="{uid}-0" data-tl-axis="0">{options}'
        f'</select></label></div>',
        f'<p class="tl-note">{html.escape(note)}</p>',
        f'<div class="tl-frame">{first}</div>',
        f'<script type="application/json" class="tl-data">{_json_for_script(data)}</script>',
        _SCRIPT % {"id": json.dumps(uid)}, "</div>"])


def _check_examples(examples):
    if isinstance(examples, str) or not hasattr(examples, "__iter__"):
        raise TypeError(f"examples must be a list of strings, got {type(examples).__name__}")
    examples = list(examples)
    if not examples or not all(isinstance(e, str) for e in examples):
        raise ValueError(f"examples must be a non-empty list of strings, got {examples!r}")
    if len(examples) > MAX_FRAMES:
        raise ValueError(f"examples has {len(examples)} entries > {MAX_FRAMES}; keep a few")
    return examples


def live_text(fn, examples, *, dpi: int = 90, label: str = _LABEL, note: str = _NOTE) -> None:
    """A "type your own" box: ``fn(text)`` runs on what the reader types.

    ``fn`` may print, return a figure, an HTML object, or a plain string (shown as text).
    Live: a text box (starting at ``examples[0]``) and its output. Statically: a drop-down of the
    precomputed ``examples`` and a note that typing your own needs Jupyter or Colab.
    """
    from IPython.display import HTML, display

    if static_mode():
        display(HTML(live_text_html(fn, examples, dpi=dpi, label=label, note=note)))
        return
    import ipywidgets as widgets

    examples = _check_examples(examples)
    box = widgets.Text(value=examples[0], description=tr(label), continuous_update=False,
                       layout=widgets.Layout(width="100%"))
    pick = widgets.Dropdown(options=examples, value=examples[0], description=tr("examples"))
    out = widgets.Output()

    def run(text):
        out.clear_output(wait=True)
        with out:
            result = fn(text)
            if isinstance(result, str):
                print(result)
            else:
                _show(result)

    box.observe(lambda ch: run(ch["new"]), names="value")
    pick.observe(lambda ch: setattr(box, "value", ch["new"]), names="value")
    display(widgets.VBox([pick, box, out]))
    run(box.value)
