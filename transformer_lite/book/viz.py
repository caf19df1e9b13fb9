"""bertviz's head view and model view, made to work offline, compactly and several times per page.

``bertviz`` (Vig, 2019) draws attention client-side with d3, so its views stay interactive on the
static site. Called directly it has three problems there, fixed here while reusing its own
``head_view.js``/``model_view.js`` read from the installed package:

* size: it writes every weight at full precision, and twice; here weights are rounded to 3
  decimals and written once (6 layers x 8 heads x 20 tokens: ~820 KiB -> ~150 KiB);
* several views on one page: bertviz reuses element ids (``#layer``, ``#vis``, ``#attention``…);
  here every id gets the view's own prefix;
* CDNs: it loads require.js, d3 and jquery from cdnjs. On the book's site a small script the site
  serves (``window.tlRequire``) loads the site's own copies instead; in Jupyter/Colab bertviz's
  normal CDN paths are used.

The model view is scaled to fit the text column (an SVG ``viewBox``), and both views sit on a white
card so they stay readable in the theme's dark mode. Each drop-down sits in a ``<label>`` ("Layer:",
"Attention:"), its accessible name (WCAG 4.1.2; axe-core's ``select-name``, checked by tests/test_site.py).
"""
from __future__ import annotations

import functools
import html
import json
import re
from importlib import resources

from .i18n import N_, tr
from .interactive import _next_id

__all__ = ["head_view", "model_view", "head_view_html", "model_view_html"]

# the bertviz release every patch below was written for (pinned in requirements-nodeps.in); a failing patch names it
BERTVIZ_WRITTEN_FOR = "1.4.1"
_REQUIRE_CDN = "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"
_FONT = "font-family:'Helvetica Neue', Helvetica, Arial, sans-serif"  # i18n: data


def _sub(pattern: str, repl: str, text: str, name: str, count: int = 0, regex: bool = False, flags: int = 0) -> str:
    """Replace, failing loudly if bertviz's JS no longer contains what we patch (every edit goes through here)."""
    new, n = (re.subn(pattern, repl, text, count=count, flags=flags) if regex else
              (text.replace(pattern, repl, count or -1), text.count(pattern)))
    if n == 0:
        raise RuntimeError(f"bertviz's {name} changed since {BERTVIZ_WRITTEN_FOR}: {pattern!r} not found; "
                           "update transformer_lite/book/viz.py")
    return new


# what each view selects as `#${config.rootDivId} #<id>` (one id per page, so two views on a page would clash)
_SCOPED_IDS = {"head_view.js": ("layer", "filter", "vis"), "model_view.js": ("filter", "vis")}


@functools.cache
def _bertviz_js(name: str) -> tuple[str, str]:
    """bertviz's view script with ids made per-view, and its require.js CDN config (separately)."""
    src = resources.files("bertviz").joinpath(name).read_text(encoding="utf-8")
    m = re.search(r"require\.config\(\{.*?\}\);", src, flags=re.S)
    if not m:
        raise RuntimeError(f"bertviz's {name} has no require.config block (it had in {BERTVIZ_WRITTEN_FOR}); "
                           "update transformer_lite/book/viz.py")
    cdn_config, js = m.group(0), src[:m.start()] + src[m.end():]
    if name not in _SCOPED_IDS:
        raise ValueError(f"name must be one of {sorted(_SCOPED_IDS)}, got {name!r}")
    js = _sub(r"/\*\*.*?\*\*/", "", js, name, count=1, regex=True, flags=re.S)  # the licence-free change log header
    js = _sub(r"const params = PYTHON_PARAMS;.*", "const params = TL_PARAMS;", js, name, regex=True)  # i18n: data
    for el in _SCOPED_IDS[name]:  # root-scoped duplicates -> unique ids
        js = _sub(f"`#${{config.rootDivId}} #{el}`", f"`#${{config.rootDivId}}-{el}`", js, name)
    if name == "head_view.js":
        js = _sub('.attr("id", isLeft ? "left" : "right")',
                  '.attr("id", config.rootDivId + (isLeft ? "-left" : "-right"))', js, name)
        js = _sub('svg.select("#" + id)', 'svg.select("#" + config.rootDivId + "-" + id)', js, name)
        js = _sub('.attr("id", "attention")', '.attr("id", config.rootDivId + "-attention")', js, name)
        js = _sub('svg.select("#attention")', 'svg.select("#" + config.rootDivId + "-attention")', js, name)
    else:
        js = _sub(".attr(\"id\", 'attn_background_' + layerIndex",
                  ".attr(\"id\", config.rootDivId + '-attn_background_' + layerIndex", js, name)
        # fit the text column: scale the fixed 970-px drawing with a viewBox
        js = _sub(r'\.attr\("width", DIV_WIDTH\)\s*\.attr\("height", config\.divHeight\)',
                  '.attr("viewBox", "0 0 " + DIV_WIDTH + " " + config.divHeight).attr("width", "100%")'
                  '.style("max-width", DIV_WIDTH + "px").style("height", "auto")', js, name, regex=True)
        js = _sub('vis.attr("height", config.divHeight);', "", js, name)
        js = _sub('console.log("x", x, y)', "", js, name)
    if name == "head_view.js":
        js = _sub('console.log("d3 version", d3.version)', "", js, name)
    js = re.sub(r"\n\s*\n+", "\n", js)
    return js, cdn_config


# ---------------------------------------------------------------- data

def _stack_to_numpy(layers, name: str, batch_index: int):
    import numpy as np

    if not isinstance(layers, (list, tuple)) or not layers:
        raise TypeError(f"{name} must be a non-empty tuple of per-layer (B, H, L, L) tensors, "
                        f"got {type(layers).__name__}")
    out = []
    for i, a in enumerate(layers):
        if hasattr(a, "detach"):
            a = a.detach().cpu().float().numpy()
        a = np.asarray(a, dtype=float)
        if a.ndim != 4:
            raise ValueError(f"{name}[{i}] must be (B, H, L_query, L_key), got shape {tuple(a.shape)}")
        if not -a.shape[0] <= batch_index < a.shape[0]:
            raise ValueError(f"batch_index={batch_index} is out of range for {name}[{i}] with B={a.shape[0]}")
        out.append(a[batch_index])
    shapes = {x.shape for x in out}
    if len(shapes) != 1:
        raise ValueError(f"{name}: every layer must have the same (H, L_query, L_key), got {sorted(shapes)}")
    return np.stack(out)  # (layers, H, Lq, Lk)


def _fmt(x) -> str:
    """Compact JSON for an array of weights in [0, 1]: 3 decimals, no trailing zeros."""
    if x.ndim == 1:
        return "[" + ",".join(("%.3f" % v).rstrip("0").rstrip(".") or "0" for v in x.tolist()) + "]"
    return "[" + ",".join(_fmt(row) for row in x) + "]"


def _attn_data(maps, src_tokens, tgt_tokens, batch_index):
    """bertviz's list of {name, attn, left_text, right_text} (attn as compact JSON text)."""
    from ..model import AttentionMaps

    def tokens(toks, name):
        if toks is None:
            return None
        if isinstance(toks, str) or not hasattr(toks, "__iter__"):
            raise TypeError(f"{name} must be a list of token strings, got {type(toks).__name__}")
        return [str(t) for t in toks]

    src, tgt = tokens(src_tokens, "src_tokens"), tokens(tgt_tokens, "tgt_tokens")
    if src is None:
        raise ValueError("src_tokens is required")
    if isinstance(maps, AttentionMaps):
        if tgt is None and (maps.decoder or maps.cross):
            raise ValueError("tgt_tokens is required for the decoder and cross attention of AttentionMaps")
        stacks = [(N_("Encoder"), maps.encoder, src, src), (N_("Decoder"), maps.decoder, tgt, tgt),
                  (N_("Cross"), maps.cross, tgt, src)]
        stacks = [s for s in stacks if s[1]]
    else:
        # one stack; with tgt_tokens it is read as cross attention (queries = tgt, keys = src)
        stacks = [(None, maps, tgt if tgt is not None else src, src)]
    data = []
    for name, layers, left, right in stacks:
        a = _stack_to_numpy(layers, (name or "maps").lower(), batch_index)
        _, _, lq, lk = a.shape
        if lq != len(left):
            raise ValueError(f"{name or 'the'} attention has {lq} query positions but {len(left)} tokens were given: "
                             f"{left}")
        if lk != len(right):
            raise ValueError(f"{name or 'the'} attention has {lk} key positions but {len(right)} tokens were given: "
                             f"{right}")
        data.append({"name": name, "attn": _fmt(a), "left_text": left, "right_text": right})
    return data, a.shape[1], a.shape[0]


def _params_json(params: dict, attn_data) -> str:
    # splice the pre-formatted weight arrays into the JSON without re-encoding them
    items = []
    for d in attn_data:
        items.append('{"name":%s,"attn":%s,"left_text":%s,"right_text":%s}' % (
            json.dumps(d["name"]), d["attn"], json.dumps(d["left_text"], ensure_ascii=False),
            json.dumps(d["right_text"], ensure_ascii=False)))
    rest = json.dumps(params, separators=(",", ":"))
    return ('{"attention":[' + ",".join(items) + "]," + rest[1:]).replace("</", "<\\/")


def _page(uid: str, controls: str, js_name: str, params_json: str) -> str:
    js, cdn_config = _bertviz_js(js_name)
    # One <script type="application/json"> holds the data (written once); the loader prefers the
    # site's own require.js/d3/jquery (window.tlRequire, served by the book) and falls back to
    # bertviz's CDN paths in Jupyter/Colab.
    loader = (
        "(function(){var TL_PARAMS=JSON.parse(document.getElementById(%(uid)s+'-data').textContent);"  # i18n: data
        "function run(){%(js)s}"
        "if(window.tlRequire){window.tlRequire(run);return;}"
        "function go(){%(cdn)s run();}"
        "if(typeof window.requirejs==='function'){go();return;}"
        "var s=document.createElement('script');s.src=%(req)s;s.onload=go;document.head.appendChild(s);})();"
    ) % {"uid": json.dumps(uid), "js": js, "cdn": cdn_config, "req": json.dumps(_REQUIRE_CDN)}
    return (f'<div class="tl-bertviz" style="background:#fff;color:#000;padding:6px 8px;border-radius:4px;'
            f'overflow-x:auto">'
            f'<div id="{uid}" style="{_FONT};">'
            f'<span style="user-select:none">{controls}</span>'
            f'<div id="{uid}-vis"></div></div></div>'
            f'<script type="application/json" id="{uid}-data">{params_json}</script>'
            f"<script>{loader}</script>")


def _filter_select(uid: str, attn_data) -> str:
    if len(attn_data) < 2:
        return ""
    opts = "".join(f'<option value="{i}">{html.escape(tr(d["name"]))}</option>' for i, d in enumerate(attn_data))
    label = html.escape(tr("Attention:"))
    return f' <label>{label} <select id="{uid}-filter">{opts}</select></label>'


def head_view_html(maps, src_tokens, tgt_tokens=None, batch_index: int = 0, layer: int | None = None,
                   heads=None) -> str:
    """The HTML of ``head_view`` as a string (one self-contained output)."""
    attn_data, n_heads, n_layers = _attn_data(maps, src_tokens, tgt_tokens, batch_index)
    if layer is not None and not 0 <= layer < n_layers:
        raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer}")
    uid = _next_id("tl-bertviz")
    params = {"default_filter": "0", "root_div_id": uid, "layer": layer,
              "heads": list(heads) if heads is not None else None, "include_layers": list(range(n_layers))}
    label = html.escape(tr("Layer:"))
    controls = (f'<label>{label} <select id="{uid}-layer"></select></label>'
                + _filter_select(uid, attn_data))
    return _page(uid, controls, "head_view.js", _params_json(params, attn_data))


def model_view_html(maps, src_tokens, tgt_tokens=None, batch_index: int = 0, display_mode: str = "light") -> str:
    """The HTML of ``model_view`` as a string (one self-contained output)."""
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}")
    attn_data, n_heads, n_layers = _attn_data(maps, src_tokens, tgt_tokens, batch_index)
    uid = _next_id("tl-bertviz")
    params = {"default_filter": "0", "display_mode": display_mode, "root_div_id": uid,
              "include_layers": list(range(n_layers)), "include_heads": list(range(n_heads)), "total_heads": n_heads}
    return _page(uid, _filter_select(uid, attn_data), "model_view.js", _params_json(params, attn_data))


def head_view(maps, src_tokens, tgt_tokens=None, batch_index: int = 0, layer: int | None = None, heads=None):
    """bertviz's head view of one example: lines from each query token to the keys it attends to.

    ``maps`` is ``Transformer.attention_maps(src, tgt)`` (encoder, decoder and cross attention, picked
    with a drop-down), or a tuple of per-layer (B, H, L_query, L_key) tensors for one stack (with
    ``tgt_tokens`` it is read as cross attention: queries = tgt, keys = src). ``batch_index`` picks
    the example. Displays the view; returns None.
    """
    from IPython.display import HTML, display

    display(HTML(head_view_html(maps, src_tokens, tgt_tokens, batch_index, layer, heads)))


def model_view(maps, src_tokens, tgt_tokens=None, batch_index: int = 0, display_mode: str = "light"):
    """bertviz's model view: every layer x head as a thumbnail; click one for its detail.

    Same inputs as :func:`head_view`. Displays the view; returns None.
    """
    from IPython.display import HTML, display

    display(HTML(model_view_html(maps, src_tokens, tgt_tokens, batch_index, display_mode)))
