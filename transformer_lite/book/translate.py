"""Type a sentence, watch the shipped translator translate it: in Jupyter and on the static page.

:func:`translator_box` is the capstone's "try it yourself" box (chapter 13, and chapter 12 for
decoding). The reader types English and sees:

* the greedy translation, and the beam-search translation with the beam size as a control;
* the cross-attention of a chosen layer and head over the greedy translation, Chinese tokens
  (rows) against English tokens (columns);
* the few most probable next tokens at each step of greedy decoding;
* which input words are outside the vocabulary (read as ``<unk>``).

In Jupyter and Colab the box is live Python (ipywidgets) over :func:`translation_details`. On the
book's static site there is no kernel, so the same model runs in the reader's browser: ``make book``
exports it to ONNX (``tools/web_export.py``), ONNX Runtime Web executes it, and
``tools/site_assets/tl-translator.js`` decodes exactly as :mod:`transformer_lite.decoding` does.
The browser test (``tests/test_translator_web.py``) checks that page against
:func:`translation_details`, sentence by sentence.

How typed text becomes tokens (:func:`read_english`) is one rule, written once, here; the page
receives it as data (:func:`reading_rules`): lower case, a space before every ``?``, split on
whitespace (Python's own definition of whitespace), at most ``model.max_len`` words.
"""
from __future__ import annotations

import html
import json

import torch

from ..data import BOS, EOS, UNK, Vocab
from ..decoding import beam_search, greedy_decode
from .interactive import _check_examples, static_mode

MAX_NEW_TOKENS = 20  # tokens generated after <bos>, <eos> included (the capstone's setting)
LENGTH_PENALTY = 0.6  # GNMT alpha, as in the paper's beam search
TOP_K = 5  # next-token candidates shown per decoding step
MAX_BEAM = 8  # the beam-size control goes from 1 (greedy) to this
DOWNLOAD_MB = 6  # what the page loads on first use, in MB (tests/test_translator_web.py measures the files)
SPLIT_BEFORE = "?"  # characters that become words of their own ("where ?" is how the grammar writes it)

__all__ = ["read_english", "translation_details", "translator_box", "translator_box_html", "reading_rules",
           "MAX_NEW_TOKENS", "LENGTH_PENALTY", "TOP_K", "MAX_BEAM"]


def _words(text: str) -> list[str]:
    text = text.lower()
    for ch in SPLIT_BEFORE:
        text = text.replace(ch, f" {ch} ")
    return text.split()


def read_english(text, vocab: Vocab, max_words: int) -> tuple[list[str], list[int], list[str]]:
    """Typed text -> ``(words, ids, unknown)``: the words the model reads, their ids, and the unknown ones.

    Lower-cases, puts a space around every ``?``, splits on whitespace; a word the vocabulary does
    not have becomes ``UNK`` (and is listed, once, in ``unknown``). Raises ``ValueError`` for text
    without words or with more than ``max_words`` (the model's position table), ``TypeError`` for a non-str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (an English sentence), got {type(text).__name__}")
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a transformer_lite.data.Vocab, got {type(vocab).__name__}")
    words = _words(text)
    if not words:
        raise ValueError("text holds no words: type an English sentence")
    if len(words) > max_words:
        raise ValueError(f"text has {len(words)} words; the model reads at most {max_words}")
    ids = [vocab.stoi.get(w, UNK) for w in words]
    unknown = list(dict.fromkeys(w for w in words if w not in vocab))
    return words, ids, unknown


def reading_rules() -> dict:
    """:func:`read_english`'s rules as data, for the page's JavaScript (one source of truth).

    ``whitespace`` lists every code point Python's ``str.split()`` splits on (JavaScript's ``\\s``
    is another set), ``split_before`` the characters that become words of their own.
    """
    return {"whitespace": [c for c in range(0x110000) if chr(c).isspace()], "split_before": SPLIT_BEFORE}


def _until_eos(ids: list[int]) -> list[int]:
    return ids[: ids.index(EOS) + 1] if EOS in ids else ids


def translation_details(model, data, text: str, beam_size: int = 4, top_k: int = TOP_K) -> dict:
    """Everything the box shows for ``text``, computed by the package's own decoders.

    Returns a dict (lists, JSON-ready):
    ``words``, ``unknown`` (see :func:`read_english`); ``greedy`` and ``beam``: the output ids after
    ``<bos>``, up to and including ``<eos>`` (:func:`~transformer_lite.decoding.greedy_decode`,
    :func:`~transformer_lite.decoding.beam_search` with ``beam_size``, ``MAX_NEW_TOKENS`` and
    ``LENGTH_PENALTY``), ``greedy_text`` and ``beam_text``; ``steps``: for each greedy step, the
    ``top_k`` most probable next tokens as ``[token, probability]``; ``cross``: the cross-attention
    over the greedy output, teacher-forced, a (layers, heads, T, S) nested list (row t predicts
    ``greedy[t]``).
    """
    if not isinstance(beam_size, int) or isinstance(beam_size, bool) or not 1 <= beam_size <= MAX_BEAM:
        raise ValueError(f"beam_size must be an int in [1, {MAX_BEAM}], got {beam_size!r}")
    words, ids, unknown = read_english(text, data.src_vocab, model.max_len)
    src = torch.tensor([ids])
    g = greedy_decode(model, src, MAX_NEW_TOKENS, BOS, EOS)[0].tolist()
    b = beam_search(model, src, beam_size, MAX_NEW_TOKENS, BOS, EOS, length_penalty=LENGTH_PENALTY)[0].tolist()
    greedy, beam = _until_eos(g[1:]), _until_eos(b[1:])
    ys_in = torch.tensor([[BOS] + greedy[:-1]])  # teacher-forced: row t predicts greedy[t]
    was_training = model.training
    model.eval()
    try:  # one pass gives the logits and every layer's cross-attention
        with torch.no_grad():
            logits, _, cross = model.decode(ys_in, model.encode(src), src=src, return_attention=True)
    finally:
        model.train(was_training)
    probs = torch.softmax(logits[0].float(), dim=-1)  # (T, V)
    cross = torch.stack([c[0] for c in cross])  # (L, H, T, S)
    p, i = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    itos = data.tgt_vocab.itos
    steps = [[[itos[j], float(q)] for j, q in zip(row_i, row_p)] for row_i, row_p in zip(i.tolist(), p.tolist())]
    return dict(text=text, words=words, unknown=unknown, greedy=greedy, beam=beam, beam_size=beam_size,
                greedy_text=data.tgt_vocab.decode(greedy), beam_text=data.tgt_vocab.decode(beam),
                steps=steps, cross=cross.tolist())


# -- the box -----------------------------------------------------------------------------------

_PROMPT = "Type an English sentence (the model's words are listed below the box), or pick an example."


def translator_box_html(model, data, examples, beam_size: int = 4, assets: str = "_static/tl/translator/") -> str:
    """The static page's box: controls and an empty result, which ``tl-translator.js`` brings to life.

    Nothing is computed here and nothing heavy is loaded with the page: the script loads the model
    (ONNX Runtime Web and the exported translator, ``assets`` under the site's root) on first use.
    """
    examples = _check_examples(examples)
    cfg = model.config
    settings = dict(assets=assets, download_mb=DOWNLOAD_MB, examples=examples, beam=beam_size, max_beam=MAX_BEAM,
                    layers=cfg.num_decoder_layers,
                    heads=cfg.nhead, max_new_tokens=MAX_NEW_TOKENS, length_penalty=LENGTH_PENALTY, top_k=TOP_K)
    words = " ".join(sorted(data.src_vocab.itos[4:]))
    buttons = "".join(f'<button type="button" class="tl-tr-example">{html.escape(e)}</button>' for e in examples)
    layer_opts = "".join(f'<option value="{n}">{n + 1}</option>' for n in range(cfg.num_decoder_layers))
    head_opts = "".join(f'<option value="{n}">{n + 1}</option>' for n in range(cfg.nhead))
    last = cfg.num_decoder_layers - 1
    layer_opts = layer_opts.replace(f'value="{last}"', f'value="{last}" selected')
    # "<" as \u003c: nothing inside the JSON can end or open a <script> (the examples are the author's, but still)
    data_json = json.dumps(settings, ensure_ascii=False).replace("<", "\\u003c")
    return (
        '<div class="tl-translator">'
        f'<script type="application/json" class="tl-tr-settings">{data_json}</script>'
        '<div class="tl-tr-row"><label>English <input type="text" class="tl-tr-input" autocomplete="off" '
        f'spellcheck="false" value="{html.escape(examples[0])}"></label>'
        '<button type="button" class="tl-tr-go">Translate</button></div>'
        f'<div class="tl-tr-row tl-tr-examples"><span>Examples:</span>{buttons}</div>'
        '<div class="tl-tr-row">'
        f'<label>beam size <input type="range" class="tl-tr-beam" min="1" max="{MAX_BEAM}" value="{beam_size}">'
        f'<output class="tl-tr-beam-value">{beam_size}</output></label>'
        f'<label>cross-attention layer <select class="tl-tr-layer">{layer_opts}</select></label>'
        f'<label>head <select class="tl-tr-head">{head_opts}</select></label></div>'
        f'<p class="tl-tr-status" role="status" aria-live="polite">{html.escape(_PROMPT)} '
        f'The model runs in your browser; it loads (about {DOWNLOAD_MB} MB) when you first use the box.</p>'
        '<div class="tl-tr-result"></div>'
        f'<details class="tl-tr-vocab"><summary>The model\'s English words</summary><p>{html.escape(words)}</p>'
        '</details><noscript>The translator needs JavaScript.</noscript>'
        "<script>(function(){if(window.tlTranslatorLoading)return;window.tlTranslatorLoading=1;"
        "var s=document.createElement('script');"
        "s.src=(document.documentElement.dataset.content_root||'')+'_static/tl/tl-translator.js';"
        "document.head.appendChild(s);})();</script></div>")


def _describe(details: dict) -> str:
    """The text part of the live box: translations, unknown words, step probabilities."""
    lines = [f"English read:  {' '.join(details['words'])}",
             f"greedy:        {details['greedy_text']}",
             f"beam, k = {details['beam_size']}:  {details['beam_text']}",
             ("unknown words, read as <unk>: " + ", ".join(details["unknown"])) if details["unknown"]
             else "all words known", "", "greedy decoding, the most probable next tokens at each step:"]
    for t, row in enumerate(details["steps"], start=1):
        lines.append(f"  step {t:2d}: " + "   ".join(f"{w} {p:.3f}" for w, p in row))
    return "\n".join(lines)


def translator_box(model, data, examples, beam_size: int = 4) -> None:
    """Show the translator box: live ipywidgets in Jupyter/Colab, the in-browser model on the static site."""
    from IPython.display import HTML, display

    if static_mode():
        display(HTML(translator_box_html(model, data, examples, beam_size=beam_size)))
        return
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from .plotting import attention_heatmap

    examples = _check_examples(examples)
    cfg = model.config
    box = widgets.Text(value=examples[0], description="English", continuous_update=False,
                       layout=widgets.Layout(width="100%"))
    pick = widgets.Dropdown(options=examples, value=examples[0], description="examples")
    beam = widgets.IntSlider(value=beam_size, min=1, max=MAX_BEAM, description="beam size", continuous_update=False)
    layer = widgets.Dropdown(options=[(str(n + 1), n) for n in range(cfg.num_decoder_layers)],
                             value=cfg.num_decoder_layers - 1, description="layer")
    head = widgets.Dropdown(options=[(str(n + 1), n) for n in range(cfg.nhead)], value=0, description="head")
    out = widgets.Output()

    def run(*_):
        out.clear_output(wait=True)
        with out:
            try:
                d = translation_details(model, data, box.value, beam_size=beam.value)
            except ValueError as e:
                print(e)
                return
            print(_describe(d))
            rows = [data.tgt_vocab.itos[i] for i in d["greedy"]]
            w = torch.tensor(d["cross"][layer.value][head.value])
            attention_heatmap(w, rows, d["words"], title=f"cross-attention, layer {layer.value + 1}, "
                              f"head {head.value + 1} (rows: the greedy output)")
            plt.show()

    for w in (box, beam, layer, head):
        w.observe(run, names="value")
    pick.observe(lambda ch: setattr(box, "value", ch["new"]), names="value")
    display(widgets.VBox([pick, box, widgets.HBox([beam, layer, head]), out]))
    run()
