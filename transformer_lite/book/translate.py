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
exports it to ONNX (``bookbuild/web_export.py``), ONNX Runtime Web executes it, and
``bookbuild/site_assets/tl-translator.js`` decodes exactly as :mod:`transformer_lite.decoding` does.
The browser test (``tests/test_translator_web.py``) checks that page against
:func:`translation_details`, sentence by sentence.

The box offers both shipped translators (:data:`SHIPPED`): the grammar translator of chapter 13
(:func:`~transformer_lite.book.pretrained.tiny_translator`) and the one trained on real HSK sentences
(:func:`~transformer_lite.book.real_translator.real_translator`). It opens on the model the cell
passed; a selector switches to the other one, which is loaded only then.

How typed text becomes tokens (:func:`read_english`) depends on the data the model was trained on
(:func:`reading_of`), and each rule is written once, in Python; the page receives it as data
(:func:`reading_rules`):

* ``"grammar"`` (the generated task): lower case, a space before every ``?``, split on whitespace
  (Python's own definition of whitespace);
* ``"hsk"`` (the real sentences): :func:`transformer_lite.book.real_data.tokenize_english`: Unicode NFKC,
  straight apostrophes, lower case, then its regular expression, which the page receives with Python's
  ``\\d``, ``\\w`` and ``\\s`` written out as the code points Python's ``re`` puts in them.

Either way at most ``model.max_len`` tokens; a token the vocabulary lacks reads as ``<unk>``. The
grammar's Chinese is written as words with spaces between them, the real translator's as characters
without spaces.
"""
from __future__ import annotations

import functools
import html
import json
import re

import torch

from ..data import BOS, EOS, UNK, TranslationData, Vocab
from ..decoding import beam_search, greedy_decode
from .i18n import N_, language, tr
from .interactive import _check_examples, static_mode

MAX_NEW_TOKENS = 20  # tokens generated after <bos>, <eos> included (the capstone's setting)
LENGTH_PENALTY = 0.6  # GNMT alpha, as in the paper's beam search
TOP_K = 5  # next-token candidates shown per decoding step
MAX_BEAM = 8  # the beam-size control goes from 1 (greedy) to this
SPLIT_BEFORE = "?"  # characters that become words of their own ("where ?" is how the grammar writes it)
READINGS = ("grammar", "hsk")  # how typed English becomes tokens: see reading_of and read_english
# The shipped translators the box offers: key -> label of the selector, and the reading of its data.
SHIPPED = {"grammar": N_("Grammar translator (chapter 13)"), "real": N_("Real sentences (HSK)")}  # shown via tr()
SHIPPED_READING = {"grammar": "grammar", "real": "hsk"}
# What the page loads on first use of each model, in MB: ONNX Runtime Web and the model's file (DOWNLOAD_MB),
# and the model's file alone (MODEL_MB), loaded when the reader switches to it once the other one ran.
# tests/test_translator_web.py measures the files.
DOWNLOAD_MB = {"grammar": 6, "real": 10}
MODEL_MB = {"grammar": 1, "real": 5}
N_EXAMPLES = 4  # example sentences of the model the cell did not pass: the first held-out ones

__all__ = ["read_english", "translation_details", "translator_box", "translator_box_html", "reading_rules",
           "reading_of", "shipped_key", "shipped_translator", "shipped_examples", "SHIPPED",
           "MAX_NEW_TOKENS", "LENGTH_PENALTY", "TOP_K", "MAX_BEAM"]


def _words(text: str) -> list[str]:
    text = text.lower()
    for ch in SPLIT_BEFORE:
        text = text.replace(ch, f" {ch} ")
    return text.split()


def _check_reading(reading) -> str:
    if not isinstance(reading, str):
        raise TypeError(f"reading must be a str, one of {READINGS}, got {type(reading).__name__}")
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    return reading


def reading_of(data) -> str:
    """How typed English becomes ``data``'s tokens: ``"hsk"`` for the real sentences
    (:class:`~transformer_lite.book.real_data.HSKTranslationData`), ``"grammar"`` for any other data."""
    if not isinstance(data, TranslationData):
        raise TypeError(f"data must be a transformer_lite.data.TranslationData, got {type(data).__name__}")
    return _check_reading(getattr(data, "english_reading", "grammar"))


def _tokens(text: str, reading: str) -> list[str]:
    if reading == "hsk":
        from .real_data import tokenize_english  # the real translator's own rule, not a copy

        return tokenize_english(text)
    return _words(text)


def read_english(text, vocab: Vocab, max_words: int,
                 reading: str = "grammar") -> tuple[list[str], list[int], list[str]]:
    """Typed text -> ``(words, ids, unknown)``: the words the model reads, their ids, and the unknown ones.

    ``reading="grammar"``: lower-cases, puts a space around every ``?``, splits on whitespace.
    ``reading="hsk"``: :func:`transformer_lite.book.real_data.tokenize_english`. A word the vocabulary
    does not have becomes ``UNK`` (and is listed, once, in ``unknown``). Raises ``ValueError`` for text
    without words or with more than ``max_words`` (the model's position table), ``TypeError`` for a non-str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (an English sentence), got {type(text).__name__}")
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a transformer_lite.data.Vocab, got {type(vocab).__name__}")
    words = _tokens(text, _check_reading(reading))
    if not words:
        raise ValueError(tr("text holds no words: type an English sentence"))
    if len(words) > max_words:
        raise ValueError(tr("text has {n} words; the model reads at most {max_words}", n=len(words),
                            max_words=max_words))
    ids = [vocab.stoi.get(w, UNK) for w in words]
    unknown = list(dict.fromkeys(w for w in words if w not in vocab))
    return words, ids, unknown


# -- the rules as data, for the page ------------------------------------------------------------

_SYNTAX = set("^$\\.*+?()[]{}|/-")  # what JavaScript's u flag lets a regular expression escape


@functools.cache
def _class_ranges(letter: str) -> tuple[tuple[int, int], ...]:
    """The code points Python's ``re`` puts in ``\\d``, ``\\w`` or ``\\s`` (str patterns), as inclusive ranges."""
    every = "".join(map(chr, range(0x110000)))
    return tuple((m.start(), m.end() - 1) for m in re.finditer(f"\\{letter}+", every))


def translate_pattern(pattern: str, target: str = "js") -> str:
    """A Python regular expression with ``\\d``, ``\\w`` and ``\\s`` written out as Python's code points.

    ``target="js"`` writes them as ``\\u{...}`` for a JavaScript ``RegExp`` with the ``u`` flag (whose own
    ``\\w`` is ASCII only), ``"python"`` as ``\\U........`` (to check the translation in Python).
    Raises ``ValueError`` for what it does not translate (other escapes, ``(?`` groups other than ``(?:``).
    """
    if target not in ("js", "python"):
        raise ValueError(f"target must be 'js' or 'python', got {target!r}")
    esc = (lambda c: f"\\u{{{c:x}}}") if target == "js" else (lambda c: f"\\U{c:08x}")  # noqa: E731
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            n = pattern[i + 1:i + 2]
            if n in ("d", "w", "s"):
                body = "".join(esc(lo) + (f"-{esc(hi)}" if hi > lo else "") for lo, hi in _class_ranges(n))
                out.append(body if in_class else f"[{body}]")
            elif n and n in _SYNTAX:
                out.append(c + n)
            else:
                raise ValueError(f"translate_pattern does not translate the escape \\{n} in {pattern!r}")
            i += 2
            continue
        if c == "(" and pattern[i + 1:i + 2] == "?" and pattern[i + 2:i + 3] != ":":
            raise ValueError(f"translate_pattern translates only (?: groups, got {pattern[i:i + 4]!r} in {pattern!r}")
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def reading_rules(reading: str = "grammar") -> dict:
    """:func:`read_english`'s rules as data, for the page's JavaScript (one source of truth).

    ``"grammar"``: ``whitespace`` lists every code point Python's ``str.split()`` splits on (JavaScript's
    ``\\s`` is another set), ``split_before`` the characters that become words of their own.
    ``"hsk"``: ``normalize`` (the Unicode form), ``replace`` (pairs, in order), then lower case, then
    every match of ``pattern`` (:func:`translate_pattern` of :func:`~transformer_lite.book.real_data.tokenize_english`'s
    expression, for ``RegExp(pattern, flags)``). ``join``: what the Chinese tokens are joined with.
    """
    if _check_reading(reading) == "grammar":
        return {"kind": "split", "whitespace": [c for c in range(0x110000) if chr(c).isspace()],
                "split_before": SPLIT_BEFORE, "join": " "}
    from . import real_data

    return {"kind": "pattern", "normalize": real_data.ENGLISH_NORMAL_FORM,
            "replace": [[a, b] for a, b in real_data.ENGLISH_APOSTROPHES.items()],
            "pattern": translate_pattern(real_data._ENGLISH_TOKEN.pattern), "flags": "gu", "join": ""}


def _join(reading: str) -> str:
    return "" if reading == "hsk" else " "  # the real translator writes characters: no spaces in Chinese


# -- the shipped translators --------------------------------------------------------------------

def _check_key(key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, one of {tuple(SHIPPED)}, got {type(key).__name__}")
    if key not in SHIPPED:
        raise ValueError(f"key must be one of {tuple(SHIPPED)}, got {key!r}")
    return key


def shipped_key(data) -> str:
    """The shipped translator whose data reads English as ``data`` does: ``"grammar"`` or ``"real"``."""
    reading = reading_of(data)
    return next(k for k, r in SHIPPED_READING.items() if r == reading)


def shipped_translator(key: str):
    """The shipped translator ``key`` (``"grammar"`` or ``"real"``): ``(model, data)``, on the CPU, in eval mode."""
    if _check_key(key) == "real":
        from .real_translator import real_translator

        model, data, _ = real_translator()
    else:
        from .pretrained import tiny_translator

        model, data, _ = tiny_translator()
    return model.eval(), data


def shipped_examples(key: str, data=None) -> list[str]:
    """The box's examples for a shipped translator the cell did not pass: its first held-out sentences
    (the real ones as the data writes them, with capitals and punctuation)."""
    if _check_key(key) == "real":
        from .real_data import split_pairs

        return [p.english for p in split_pairs()["test"][:N_EXAMPLES]]
    data = data if data is not None else shipped_translator(key)[1]
    return [en for en, _ in data.test_pairs[:N_EXAMPLES]]


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
    reading = reading_of(data)
    words, ids, unknown = read_english(text, data.src_vocab, model.max_len, reading)
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
    join = _join(reading)
    return dict(text=text, words=words, unknown=unknown, greedy=greedy, beam=beam, beam_size=beam_size,
                greedy_text=join.join(data.tgt_vocab.decode(greedy, join=False)),
                beam_text=join.join(data.tgt_vocab.decode(beam, join=False)),
                steps=steps, cross=cross.tolist())


# -- the box -----------------------------------------------------------------------------------

_PROMPT = N_("Type an English sentence (the model's words are listed below the box), or pick an example.")
# The status lines and captions tl-translator.js writes, each as its English template ({field}s filled by the script):
# the box's settings carry them in the package's language (settings["text"]), so the Chinese lives only in the
# package's catalog. tests/test_package_i18n.py checks that every t("...") of the script is listed here.
JS_TEXTS = (
    N_("Loading the model ({label}) into your browser (about {mb} MB, once)…"),
    N_("Translated in your browser in {ms} ms."),
    N_("The translator could not run here: {error}"),
    N_("text holds no words: type an English sentence"),
    N_("text has {n} words; the model reads at most {max_words}"),
    N_("Cross-attention of layer {layer}, head {head} while writing the greedy translation: each row is one "
       "decoding step (the Chinese token it writes), each column an English token; a row sums to 1."),
    N_("writes ↓ / reads →"),
    N_("not in the vocabulary: read as <unk>"),
    N_("English, as the model reads it"),
    N_("greedy"),
    N_("beam search, k = {k}"),
    N_("Not in the model's vocabulary, read as <unk>: {words}."),
    N_("Every word is in the model's vocabulary."),
    N_("This box reads English: the model translates English into Chinese, so Chinese typed here is unknown to it."),
    N_("The greedy translation stopped after {n} tokens without <eos>."),
    N_("Greedy decoding, step by step: the {k} most probable next tokens and their probabilities (the first is the "
       "one it writes)."),
    N_("step"),
)


def _load_note(mb: int) -> str:
    return tr("The model runs in your browser; it loads (about {mb} MB) when you first use the box.", mb=mb)


def _offered(model, data, examples) -> dict:
    """key -> (model, data, examples) for every shipped translator: the cell's own for its key, the shipped
    one with its first held-out sentences for the other."""
    cell = shipped_key(data)
    offered = {}
    for key in SHIPPED:
        if key == cell:
            offered[key] = (model, data, examples)
        else:
            m, d = shipped_translator(key)
            offered[key] = (m, d, shipped_examples(key, d))
    return offered


def translator_box_html(model, data, examples, beam_size: int = 4, assets: str = "_static/tl/translator/") -> str:
    """The static page's box: controls and an empty result, which ``tl-translator.js`` brings to life.

    It offers every shipped translator (:data:`SHIPPED`) with a selector, each with its own examples and
    word list; it opens on the one whose data ``data`` is (:func:`shipped_key`), with ``examples``.
    Nothing is computed here and nothing heavy is loaded with the page: the script loads ONNX Runtime Web
    and the selected model's file (``assets`` under the site's root) on first use, the other model's file
    only if the reader selects it.
    """
    examples = _check_examples(examples)
    cell = shipped_key(data)
    offered = _offered(model, data, examples)
    models = {key: dict(label=tr(SHIPPED[key]), examples=ex, layers=m.config.num_decoder_layers, heads=m.config.nhead,
                        download_mb=DOWNLOAD_MB[key], model_mb=MODEL_MB[key])
              for key, (m, _, ex) in offered.items()}
    settings = dict(assets=assets, model=cell, models=models, beam=beam_size, max_beam=MAX_BEAM,
                    max_new_tokens=MAX_NEW_TOKENS, length_penalty=LENGTH_PENALTY, top_k=TOP_K,
                    text={english: tr(english) for english in JS_TEXTS})
    hidden = lambda key: "" if key == cell else " hidden"  # noqa: E731
    # the box's words, translated before the f-strings below (the extractor does not read inside an f-string)
    say = {english: html.escape(tr(english)) for english in (
        N_("Translator"), N_("English"), N_("Translate"), N_("Examples:"), N_("beam size"), N_("cross-attention layer"),
        N_("head"), N_("The translator needs JavaScript."))}
    model_opts = "".join(f'<option value="{k}"{" selected" if k == cell else ""}>{html.escape(tr(label))}</option>'
                         for k, label in SHIPPED.items())
    example_rows = "".join(
        '<div class="tl-tr-row tl-tr-examples" '
        f'data-tl-model="{k}"{hidden(k)}><span>{say["Examples:"]}</span>'
        + "".join(f'<button type="button" class="tl-tr-example">{html.escape(e)}</button>' for e in ex) + "</div>"
        for k, (_, _, ex) in offered.items())
    word_lists = "".join(
        f'<details class="tl-tr-vocab" data-tl-model="{k}"{hidden(k)}><summary>'
        + html.escape(tr("{model}: the English words it knows ({n})", model=tr(SHIPPED[k]),
                         n=len(d.src_vocab.itos) - 4))
        + '</summary>'
        f'<p>{html.escape(" ".join(sorted(d.src_vocab.itos[4:])))}</p></details>'
        for k, (_, d, _) in offered.items())
    cfg = model.config
    layer_opts = "".join(f'<option value="{n}"{" selected" if n == cfg.num_decoder_layers - 1 else ""}>{n + 1}</option>'
                         for n in range(cfg.num_decoder_layers))
    head_opts = "".join(f'<option value="{n}">{n + 1}</option>' for n in range(cfg.nhead))
    # "<" as \u003c: nothing inside the JSON can end or open a <script> (the examples are the author's, but still)
    data_json = json.dumps(settings, ensure_ascii=False).replace("<", "\\u003c")
    return (
        f'<div class="tl-translator" data-tl-model="{cell}">'
        f'<script type="application/json" class="tl-tr-settings">{data_json}</script>'
        f'<div class="tl-tr-row"><label>{say["Translator"]} <select class="tl-tr-model">{model_opts}'
        '</select></label></div>'
        f'<div class="tl-tr-row"><label>{say["English"]} <input type="text" class="tl-tr-input" '
        f'autocomplete="off" spellcheck="false" value="{html.escape(examples[0])}"></label>'
        f'<button type="button" class="tl-tr-go">{say["Translate"]}</button></div>'
        f'{example_rows}'
        '<div class="tl-tr-row">'
        f'<label>{say["beam size"]} <input type="range" class="tl-tr-beam" min="1" max="{MAX_BEAM}" '
        f'value="{beam_size}"><output class="tl-tr-beam-value">{beam_size}</output></label>'
        f'<label>{say["cross-attention layer"]} <select class="tl-tr-layer">{layer_opts}</select></label>'
        f'<label>{say["head"]} <select class="tl-tr-head">{head_opts}</select></label></div>'
        f'<p class="tl-tr-status" role="status" aria-live="polite">{html.escape(tr(_PROMPT))}'
        f'{"" if language() == "zh" else " "}{html.escape(_load_note(DOWNLOAD_MB[cell]))}</p>'
        '<div class="tl-tr-result"></div>'
        f'{word_lists}<noscript>{say["The translator needs JavaScript."]}</noscript>'
        "<script>(function(){if(window.tlTranslatorLoading)return;window.tlTranslatorLoading=1;"
        "var s=document.createElement('script');"
        "s.src=(document.documentElement.dataset.content_root||'')+'_static/tl/tl-translator.js';"
        "document.head.appendChild(s);})();</script></div>")


def _describe(details: dict) -> str:
    """The text part of the live box: translations, unknown words, step probabilities."""
    lines = [tr("English read:  {words}", words=" ".join(details["words"])),
             tr("greedy:        {text}", text=details["greedy_text"]),
             tr("beam, k = {k}:  {text}", k=details["beam_size"], text=details["beam_text"]),
             tr("unknown words, read as <unk>: {words}", words=", ".join(details["unknown"])) if details["unknown"]
             else tr("all words known"), "", tr("greedy decoding, the most probable next tokens at each step:")]
    for t, row in enumerate(details["steps"], start=1):
        lines.append("  " + tr("step {t}:", t=format(t, "2d")) + " " + "   ".join(f"{w} {p:.3f}" for w, p in row))
    return "\n".join(lines)


def translator_box(model, data, examples, beam_size: int = 4) -> None:
    """Show the translator box: live ipywidgets in Jupyter/Colab, the in-browser model on the static site.

    Both offer every shipped translator (:data:`SHIPPED`), opening on the one ``data`` belongs to
    (:func:`shipped_key`) with ``model`` and ``examples``; the other is loaded when the reader selects it.
    """
    from IPython.display import HTML, display

    if static_mode():
        display(HTML(translator_box_html(model, data, examples, beam_size=beam_size)))
        return
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from .plotting import attention_heatmap

    examples = _check_examples(examples)
    cell = shipped_key(data)
    offered = {cell: (model, data, examples)}  # the other translator joins when it is selected
    cfg = model.config
    which = widgets.Dropdown(options=[(tr(label), k) for k, label in SHIPPED.items()], value=cell,
                             description=tr("translator"), layout=widgets.Layout(width="max-content"))
    box = widgets.Text(value=examples[0], description=tr("English"), continuous_update=False,
                       layout=widgets.Layout(width="100%"))
    pick = widgets.Dropdown(options=examples, value=examples[0], description=tr("examples"))
    beam = widgets.IntSlider(value=beam_size, min=1, max=MAX_BEAM, description=tr("beam size"),
                             continuous_update=False)
    layer = widgets.Dropdown(options=[(str(n + 1), n) for n in range(cfg.num_decoder_layers)],
                             value=cfg.num_decoder_layers - 1, description=tr("layer"))
    head = widgets.Dropdown(options=[(str(n + 1), n) for n in range(cfg.nhead)], value=0, description=tr("head"))
    out = widgets.Output()
    switching = []  # non-empty while the controls are being reset for another translator

    def run(*_):
        if switching:
            return
        m, d, _ = offered[which.value]
        out.clear_output(wait=True)
        with out:
            try:
                details = translation_details(m, d, box.value, beam_size=beam.value)
            except ValueError as e:
                print(e)
                return
            print(_describe(details))
            rows = [d.tgt_vocab.itos[i] for i in details["greedy"]]
            w = torch.tensor(details["cross"][layer.value][head.value])
            attention_heatmap(w, rows, details["words"], title=tr(
                "cross-attention, layer {layer}, head {head} (rows: the greedy output)",
                layer=layer.value + 1, head=head.value + 1))
            plt.show()

    def switch(change):
        key = change["new"]
        if key not in offered:
            out.clear_output(wait=True)
            with out:
                print(tr("Loading {model}...", model=tr(SHIPPED[key])))
            m, d = shipped_translator(key)
            offered[key] = (m, d, shipped_examples(key, d))
        m, _, ex = offered[key]
        switching.append(1)
        try:
            pick.options, pick.value, box.value = ex, ex[0], ex[0]
            layer.options = [(str(n + 1), n) for n in range(m.config.num_decoder_layers)]
            layer.value = m.config.num_decoder_layers - 1
            head.options = [(str(n + 1), n) for n in range(m.config.nhead)]
            head.value = 0
        finally:
            switching.clear()
        run()

    for w in (box, beam, layer, head):
        w.observe(run, names="value")
    which.observe(switch, names="value")
    pick.observe(lambda ch: setattr(box, "value", ch["new"]) if not switching and ch["new"] is not None else None,
                 names="value")
    display(widgets.VBox([which, pick, box, widgets.HBox([beam, layer, head]), out]))
    run()
