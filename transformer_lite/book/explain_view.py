"""The explainer's page on the static site: the reader's sentence through a shipped translator, one step at a time.

:func:`explainer_html` writes the view's controls (a sentence box, the translator to use, a start button, the step
control) with its settings; ``web/tl-explainer.js`` (shipped with the package, copied into the site's ``_static/tl/``
by the build) brings it to life. Nothing heavy loads with the
page: when the reader presses start (or follows a link that names a step), the script asks
``window.tlExplainer.trace`` (``bookbuild/site_assets/tl-translator.js``: the shipped translator and its explainer's
graphs in ONNX Runtime Web, equal to :func:`transformer_lite.book.explain.trace`) for the sentence's trace, and
draws each step from it.

The steps, each with an id that a link can name (``?s=<sentence>&step=<id>&model=<key>``; layers count from 1):

* ``tokens`` (chapter 1), ``embedding`` (chapters 1 and 2: the scaled embedding, the positional encoding, their sum);
* for each encoder layer ``L``: ``encL-qkv``, ``encL-scores``, ``encL-scaled``, ``encL-mask``, ``encL-softmax``,
  ``encL-weighted`` (chapter 3's six steps, one head at a time), ``encL-heads`` (chapter 4: the heads side by side),
  ``encL-concat`` (the heads concatenated, then W_O), ``encL-norm1`` (chapter 5: the residual and LayerNorm, norms
  before and after), ``encL-ffn`` (the FFN and the second Add & Norm);
* ``memory`` (chapter 8: what every cross-attention reads);
* for each decoder layer ``L``: ``decL-causal`` (chapter 7: the causal mask on the scaled scores), ``decL-self``
  (the masked self-attention's heads and the Add & Norm), ``decL-cross`` (chapter 9: cross-attention drawn as an
  alignment of the English and the Chinese), ``decL-ffn``;
* ``lens`` (the logit lens: each decoder layer's output read through the output projection), ``next`` (chapter
  12: the most probable next tokens of each step, and greedy's choice).

Every text the script writes is an English template in :data:`VIEW_TEXTS`, handed to it in the page's language
(the package's catalog), as the translator box does.

In Jupyter and Colab, :func:`show` draws the same view as a cell's output from a trace the kernel computes
(:func:`transformer_lite.book.explain.trace`): :func:`notebook_html` puts the trace in the settings and the script and
its style inline, so the output loads nothing and runs no model in the browser. On the book's site (the build runs
the chapters with static controls) :func:`show` writes the site's view instead, opening on the same sentence.
"""
from __future__ import annotations

import functools
import html
import json
import re
from importlib import resources

from .i18n import N_, language, tr
from .translate import SHIPPED, _check_key, shipped_examples

__all__ = ["explainer_html", "notebook_html", "show", "as_typed", "VIEW_TEXTS", "STEP_TITLES", "CHAPTERS", "step_ids",
           "step_title"]

# The chapters a step links to (tl-explainer.js names them by number): number -> the notebook's page name
CHAPTERS = {1: "01_tokens_and_embeddings", 2: "02_positional_encoding", 3: "03_self_attention",
            4: "04_multi_head_attention", 5: "05_add_norm_ffn", 7: "07_masking", 8: "08_encoder", 9: "09_decoder",
            12: "12_inference"}

# The kinds of step, in order within their part (the module's docstring); tl-explainer.js builds the list from a
# trace's config, and tests/test_explainer_web.py compares its ids with these.
ENCODER_STEPS = ("qkv", "scores", "scaled", "mask", "softmax", "weighted", "heads", "concat", "norm1", "ffn")
DECODER_STEPS = ("causal", "self", "cross", "ffn")


def step_ids(num_encoder_layers: int, num_decoder_layers: int, lens: bool = True) -> list[str]:
    """Every step id of a model with these numbers of layers, in the view's order (``lens``: a trace that holds
    the logit lens, ``logit_lens``, has its step)."""
    return (["tokens", "embedding"]
            + [f"enc{i}-{s}" for i in range(1, num_encoder_layers + 1) for s in ENCODER_STEPS] + ["memory"]
            + [f"dec{i}-{s}" for i in range(1, num_decoder_layers + 1) for s in DECODER_STEPS]
            + (["lens"] if lens else []) + ["next"])


# Each kind of step's title (the layer's number is filled in), by its id without the layer: "enc-qkv" is the title
# of enc1-qkv, enc2-qkv...
STEP_TITLES = {
    "tokens": N_("Tokens"),
    "embedding": N_("Embedding and positions"),
    "enc-qkv": N_("Encoder layer {layer}: Q, K and V"),
    "enc-scores": N_("Encoder layer {layer}: scores"),
    "enc-scaled": N_("Encoder layer {layer}: scaled scores"),
    "enc-mask": N_("Encoder layer {layer}: the mask"),
    "enc-softmax": N_("Encoder layer {layer}: softmax"),
    "enc-weighted": N_("Encoder layer {layer}: weighted sum of V"),
    "enc-heads": N_("Encoder layer {layer}: the heads side by side"),
    "enc-concat": N_("Encoder layer {layer}: concatenation and W_O"),
    "enc-norm1": N_("Encoder layer {layer}: residual and LayerNorm"),
    "enc-ffn": N_("Encoder layer {layer}: feed-forward network"),
    "memory": N_("The memory"),
    "dec-causal": N_("Decoder layer {layer}: the causal mask"),
    "dec-self": N_("Decoder layer {layer}: masked self-attention"),
    "dec-cross": N_("Decoder layer {layer}: cross-attention"),
    "dec-ffn": N_("Decoder layer {layer}: feed-forward network"),
    "lens": N_("The logit lens"),
    "next": N_("The next token"),
}


def step_title(step_id: str) -> str:
    """The title the view shows for ``step_id`` ("enc2-scores": "Encoder layer 2: scores"), in the current language."""
    m = re.fullmatch(r"(enc|dec)(\d+)-(\w+)", step_id) if isinstance(step_id, str) else None
    kind = f"{m[1]}-{m[3]}" if m else step_id
    if not isinstance(step_id, str) or kind not in STEP_TITLES or (m is None and "-" in kind):
        raise ValueError(f"step_id must be a step of the view ({', '.join(STEP_TITLES)}, with a layer for enc/dec), "
                         f"got {step_id!r}")
    return tr(STEP_TITLES[kind], layer=int(m[2])) if m else tr(STEP_TITLES[kind])


# the controls' labels, tr()'d when the HTML is written (the first three are the translator box's too)
_ENGLISH, _TRANSLATOR, _EXAMPLES = N_("English"), N_("Translator"), N_("Examples:")
_START, _PREVIOUS, _NEXT, _STEP, _NO_SCRIPT = (N_("Start"), N_("← Previous"), N_("Next →"), N_("Step"),
                                              N_("The explainer needs JavaScript."))
_PRESS_START = N_("Press “Start” to load the translator and follow your sentence through it, one step at a time.")
# Every text tl-explainer.js writes, by its English ({field}s filled by the script); tests/test_explainer_web.py
# checks that every say(v, "...") of the script is listed here and that the catalog translates each.
VIEW_TEXTS = tuple(STEP_TITLES.values()) + (
    # status lines
    N_("Loading the translator and its explainer into your browser (once)…"),
    N_("Explained in your browser in {ms} ms: {n} steps."),
    N_("The explainer could not run here: {error}"),
    N_("text holds no words: type an English sentence"),
    N_("text has {n} words; the model reads at most {max_words}"),
    N_("Step {i} of {n}: {title}"),
    N_("The step {step} does not exist for this translator: showing the first step."),
    # controls
    N_("Explain this sentence"),
    N_("head"),
    N_("Read more: chapter {n}"),
    N_("The numbers"),
    N_("token"),
    N_("writes"),
    N_("reads"),
    N_("step"),
    N_("norm"),
    N_("mean"),
    N_("standard deviation"),
    # what each step says
    N_("The model reads {n} tokens: your sentence in lower case, cut into words (and punctuation), each looked up "
       "in its English vocabulary; a word it does not know becomes <unk>. A token's id is its row in the embedding "
       "matrix."),
    N_("id"),
    N_("Unknown to the model, read as <unk>: {words}."),
    N_("Its greedy translation has {t} tokens: {words}"),
    N_("Each token's row of the embedding matrix is multiplied by √d_model = {scale}, then the positional encoding "
       "of its position is added. The sum, one row of {d} numbers per token, is what the first encoder layer reads."),
    N_("scaled embedding"),
    N_("positional encoding"),
    N_("their sum: the encoder's input"),
    N_("Step 1 of attention: the layer's input x (one row per token) is multiplied by W_Q, W_K and W_V and split "
       "into {h} heads of {dh} numbers. Head {head}'s queries, keys and values:"),
    N_("Step 2: each query is compared with every key by a dot product, q·k. Row = query token, column = key "
       "token (head {head})."),
    N_("Step 3: the scores are divided by √d_k = √{dh} = {root}, so that their spread does not grow with the width "
       "of a head (head {head})."),
    N_("Step 4: the mask. One English sentence has no padding, so the encoder blocks no key: every token may read "
       "every token, before and after it."),
    N_("Step 4: the causal mask. A grey cell is blocked (score −∞): row t may read the tokens up to t, never a "
       "later one, as when the decoder writes one token at a time (head {head})."),
    N_("Step 5: softmax along each row turns the scaled scores into weights that sum to 1: how much each query "
       "token reads from each key token (head {head})."),
    N_("Step 6: each token's output is the weighted sum of the value vectors, weights times V (head {head})."),
    N_("The {h} heads of this layer, each with its own W_Q, W_K and W_V, attend in their own ways: each square is "
       "one head's weights."),
    N_("The {h} heads' outputs are concatenated back to {d} numbers per token (one block per head), then "
       "multiplied by W_O: the layer's attention output."),
    N_("concatenated heads"),
    N_("after W_O"),
    N_("Add & Norm: the sub-layer's output is added to its input (the residual), then LayerNorm brings each row "
       "back to mean 0 and standard deviation 1 (before its γ and β). The norms of each token's vector:"),
    N_("The feed-forward network: the same two-layer network at every position, {d} → {dff} → {d}. Its hidden "
       "activations after ReLU ({zero} % of them are 0):"),
    N_("the FFN's output"),
    N_("The memory is the encoder's output, one vector of {d} numbers per English token. Every cross-attention of "
       "the decoder reads it as its keys and values."),
    N_("The decoder reads <bos> and its own translation so far, one token per row. Head {head}'s scaled scores "
       "with the causal mask:"),
    N_("The masked self-attention's heads: each row t reads only the tokens up to t."),
    N_("Cross-attention: queries from the decoder (the Chinese it is writing), keys and values from the memory "
       "(the English). Each line links a Chinese token to the English tokens it reads; the darker the line, the "
       "larger the weight."),
    N_("Each row of the table is one decoding step: the token it writes, and how much it reads from each English "
       "token."),
    N_("The logit lens: each decoder layer's output read through the final projection onto the vocabulary. Which "
       "token would the model write if it stopped after that layer? The right one appears when a layer's top "
       "token becomes the greedy choice."),
    N_("after decoder layer {layer}"),
    N_("At each step the decoder's output goes through the projection onto the Chinese vocabulary and a softmax. "
       "These are the {k} most probable next tokens; greedy decoding writes the first."),
    N_("The translation: {words}"),
    N_("Beam search, k = {k}, keeps the {k} most probable prefixes at each step instead of one, and translates: "
       "{words}"),
    N_("cross-attention weights, layer {layer}"),
    # a notebook's view (show): the kernel computed the trace
    N_("Traced in Python by transformer_lite.book.explain.trace: {n} steps."),
    # switching heads off (the site's view)
    N_("Clear a box to switch that head off (W_O no longer reads it); the sentence is traced again."),
    N_("encoder layer {layer}"),
    N_("decoder layer {layer}, masked self-attention"),
    N_("decoder layer {layer}, cross-attention"),
    N_("Heads switched off: {n}. The translation:"),
    N_("With every head on:"),
)
_HEADS_OFF = N_("Switch heads off")
# a notebook's view before its script runs (Jupyter runs an output's script only in a notebook it trusts)
_RUN_THE_CELL = N_("Run the cell to draw the view: Jupyter runs an output's script only in a notebook it trusts.")


def _check_static(static) -> str:
    if not isinstance(static, str):
        raise TypeError(f"static must be a str (the page's relative path to the site's _static/), got "
                        f"{type(static).__name__}")
    if not static.endswith("_static/") or re.search(r"[\"'<>\s]", static):
        raise ValueError(f"static must be a relative path ending in '_static/' without quotes or spaces, got "
                         f"{static!r}")
    return static


def as_typed(text: str, key: str) -> str:
    """An example sentence as a person would type it. The grammar translator's sentences are stored as it reads them
    ("does he play football in the library ?"); shown with a capital, "I" and the "?" at the word ("Does he play
    football in the library?"), they read the same (the grammar's reading lowers the case and splits "?" apart).
    The real sentences are already as written."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (an English sentence), got {type(text).__name__}")
    if _check_key(key) != "grammar":
        return text
    words = ["I" if w == "i" else w for w in text.split()]
    typed = " ".join(words).replace(" ?", "?")
    return typed[:1].upper() + typed[1:]


def explainer_html(key: str = "grammar", static: str = "_static/", chapters: str = "../notebooks/",
                   text: str | None = None) -> str:
    """The view's HTML: its controls, the settings its script reads, and the tags that load its script and style.

    ``key``: the translator it opens on (``"grammar"`` or ``"real"``); ``static``: the page's relative path to the
    site's ``_static/`` (the English edition's: the Chinese pages load its files); ``chapters``: the page's relative
    path to the chapters' pages; ``text``: the sentence in its box (by default the translator's first example).
    Raises ``TypeError``/``ValueError`` naming the argument.
    """
    _check_key(key)
    _check_static(static)
    if not isinstance(chapters, str) or chapters and not chapters.endswith("/"):
        raise ValueError(f"chapters must be a relative path ending in '/' (or '' for the page's own folder), got "
                         f"{chapters!r}")
    if text is not None and not isinstance(text, str):
        raise TypeError(f"text must be a str (an English sentence) or None, got {type(text).__name__}")
    head, view = _view_html(key, {str(n): f"{chapters}{name}.html" for n, name in CHAPTERS.items()}, text)
    return (f'<link rel="stylesheet" href="{static}tl/tl-explainer.css">{head}{view}'
            f'<script src="{static}tl/tl-explainer.js" defer></script></div>')


def _view_html(key: str, chapters: dict, text: str | None, trace: dict | None = None, step: str | None = None):
    """The view's opening tag and its controls (without its script and the closing tag): ``(opening, controls)``.
    With ``trace`` (a notebook's view) the settings hold it and the sentence shows as text instead of a box."""
    models = {k: dict(label=tr(label), examples=[as_typed(e, k) for e in shipped_examples(k)])
              for k, label in SHIPPED.items()}
    settings = dict(model=key, models=models, language=language(), chapters=chapters,
                    text={english: tr(english) for english in VIEW_TEXTS})
    if trace is not None:
        settings.update(trace=trace, step=step)
    data_json = json.dumps(settings, ensure_ascii=False).replace("<", "\\u003c")  # nothing can close the <script>
    first = models[key]["examples"][0] if text is None else text
    given = trace is not None
    options = "".join(f'<option value="{k}"{" selected" if k == key else ""}>{html.escape(m["label"])}</option>'
                      for k, m in models.items())
    examples = "".join(
        f'<div class="tlx-row tlx-examples" data-tl-model="{k}"{"" if k == key else " hidden"}>'
        f'<span>{html.escape(tr(_EXAMPLES))}</span>'
        + "".join(f'<button type="button" class="tlx-example" lang="en">{html.escape(e)}</button>'
                  for e in m["examples"])
        + "</div>" for k, m in models.items())
    colon = "：" if language() == "zh" else ": "
    sentence = (f'<p class="tlx-sentence">{html.escape(tr(_ENGLISH))}{colon}<span lang="en">{html.escape(first)}</span>'
                f' · {html.escape(tr(_TRANSLATOR))}{colon}{html.escape(models[key]["label"])}</p>' if given else "")
    hide = " hidden" if given else ""  # a notebook's view draws the kernel's trace: no box, no start
    return (
        f'<div class="tl-explainer" data-tl-state="idle" data-tl-model="{key}">',
        f'<script type="application/json" class="tlx-settings">{data_json}</script>{sentence}'
        f'<div class="tlx-row"{hide}>'
        f'<label>{html.escape(tr(_ENGLISH))} <input type="text" class="tlx-input" lang="en" autocomplete="off" '
        f'spellcheck="false" value="{html.escape(first)}"></label>'
        f'<label>{html.escape(tr(_TRANSLATOR))} <select class="tlx-model">{options}</select></label>'
        f'<button type="button" class="tlx-start">{html.escape(tr(_START))}</button></div>'
        f'{"" if given else examples}'
        '<div class="tlx-row tlx-nav" hidden>'
        f'<button type="button" class="tlx-prev" aria-keyshortcuts="ArrowLeft">{html.escape(tr(_PREVIOUS))}</button>'
        f'<label>{html.escape(tr(_STEP))} <select class="tlx-step-select"></select></label>'
        f'<button type="button" class="tlx-next" aria-keyshortcuts="ArrowRight">{html.escape(tr(_NEXT))}</button>'
        f'<label class="tlx-head-label">{html.escape(tr("head"))} <select class="tlx-head"></select></label></div>'
        + ("" if given else  # the boxes trace again in the browser: a notebook's trace is the kernel's
           f'<details class="tlx-heads-off" hidden><summary>{html.escape(tr(_HEADS_OFF))}</summary>'
           '<div class="tlx-heads-grid tlx-scroll"></div><p class="tlx-heads-result" aria-live="polite"></p></details>')
        + f'<p class="tlx-status" role="status" aria-live="polite">'
        f'{html.escape(tr(_RUN_THE_CELL if given else _PRESS_START))}</p>'
        '<section class="tlx-view" tabindex="-1" aria-live="off"></section>'
        f'<noscript>{html.escape(tr(_NO_SCRIPT))}</noscript>')


@functools.cache
def _web(name: str) -> str:
    """The view's script or style, as the package ships it (``web/``; the site's ``_static/tl/`` has copies)."""
    return resources.files(__package__).joinpath("web", name).read_text(encoding="utf-8")


def notebook_html(key: str, text: str, heads_off=(), step: str | None = None) -> str:
    """The view as a notebook cell's output: :func:`transformer_lite.book.explain.trace` of ``text`` through
    shipped translator ``key`` (with ``heads_off`` switched off), drawn by the site's own script and style, both
    inline: the HTML loads nothing (no request leaves it) and computes nothing but what the script draws. It opens on
    ``step`` (an id of :func:`step_ids`; by default the first). The chapters' links name their notebooks
    (``03_self_attention.ipynb``), beside the reader's. Raises ``TypeError``/``ValueError`` naming the argument."""
    from .explain import trace as explain_trace

    if step is not None:
        step_title(step)  # names a step that is no step of the view
    traced = explain_trace(key, text, heads_off=heads_off)
    cfg = traced["config"]
    if step is not None and step not in step_ids(cfg["num_encoder_layers"], cfg["num_decoder_layers"]):
        raise ValueError(f"step must be a step of translator {key!r}, got {step!r}")
    head, view = _view_html(key, {str(n): f"{name}.ipynb" for n, name in CHAPTERS.items()}, text, traced, step)
    # </script> cannot occur inside the script (a string or comment of it would end the tag early): checked
    script = _web("tl-explainer.js")
    if "</script" in script.lower():
        raise RuntimeError("web/tl-explainer.js holds '</script': it cannot be written inline")
    return f'<style>{_web("tl-explainer.css")}</style>{head}{view}<script>{script}</script></div>'


def show(key: str = "grammar", text: str | None = None, heads_off=(), step: str | None = None) -> None:
    """Show the explainer's view of ``text`` through shipped translator ``key`` as the cell's output, stepping by its
    buttons, its list and the arrow keys, in the package's language (``setup(language="zh")``).

    In Jupyter and Colab the kernel computes the trace (:func:`notebook_html`: ``heads_off`` switches heads off,
    ``step`` opens on that step); on the book's site (static controls) the view is the site's own, with ``text`` in
    its box, computed in the reader's browser once started. ``text`` defaults to the translator's first example."""
    from IPython.display import HTML, display

    from .interactive import static_mode

    _check_key(key)
    if text is None:
        text = as_typed(shipped_examples(key)[0], key)
    if static_mode():  # a chapter's page: notebooks/ (English) or zh/notebooks/ (the English edition's _static/)
        static = "../_static/" if language() == "en" else "../../_static/"
        display(HTML(explainer_html(key, static=static, chapters="", text=text)))
        return
    display(HTML(notebook_html(key, text, heads_off=heads_off, step=step)))
