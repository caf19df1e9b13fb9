"""The reader's own sentence through every layer of a shipped translator: one trace, one source of truth.

:func:`trace` runs a shipped translator (``"grammar"``: chapter 13's, ``"real"``: chapter 13b's, see
:data:`~transformer_lite.book.translate.SHIPPED`) on an English sentence and returns every intermediate
tensor as a JSON-ready dict: nested lists of floats, ints and strings, no tensors. The numbers are the
model's own: the trace calls ``model.encode`` and ``model.decode`` (with ``return_attention=True``) and
reads the sub-modules through forward hooks; the steps inside one attention are those of the package's
own :func:`~transformer_lite.attention.scaled_dot_product_attention` (``return_steps=True``), fed the
projections of the module's own ``q_proj``/``k_proj``/``v_proj`` and the mask the module merged. Nothing
here re-implements a layer. :func:`record_encoder` and :func:`record_decoder` hold that code and return
the tensors; :func:`trace` writes them as JSON. The browser's explainer (``window.tlExplainer.trace`` in
``bookbuild/site_assets/tl-translator.js``) runs the same two functions, exported by ``bookbuild/web_export.py`` as
ONNX graphs whose outputs are named by :func:`flat`, and is checked against :func:`trace` in Chromium
(``tests/test_translator_web.py``).

Shape letters as everywhere in the book: S source tokens, T target tokens, D model width, H heads,
D_h = D / H the width of a head, d_ff the FFN's hidden width. Both shipped translators are Post-LN (the
paper's layout): each sub-block is ``x = LayerNorm(x + Sublayer(x))``.

The keys:

* ``key``, ``text``, ``k``: the arguments; ``heads_off``, only when heads were switched off (:func:`trace`'s
  ``heads_off``, :func:`heads_switched_off`): those heads as ``[part, layer, head]``. ``config``: ``d_model``
  (D), ``nhead`` (H), ``head_dim`` (D_h), ``dim_feedforward`` (d_ff), ``num_encoder_layers``,
  ``num_decoder_layers``, ``activation``, ``norm_first``, ``embedding_scale`` (sqrt(D)) and ``attention_scale``
  (1 / sqrt(D_h)).
* ``src_tokens`` (S strings): the words the model reads, as the translator box reads them
  (:func:`~transformer_lite.book.translate.read_english`); ``src_ids``; ``unknown``: the words read as
  ``<unk>``. ``tgt_tokens`` (T strings) and ``tgt_ids``: the greedy translation, up to and including
  ``<eos>``, as :func:`~transformer_lite.decoding.greedy_decode` gives it (the box's greedy line).
  ``decoder_input_tokens`` (T): ``<bos>`` and the greedy output shifted right: the decoder reads row t
  and predicts ``tgt_tokens[t]`` (teacher forcing on the model's own output, chapter 10). ``beam_size``
  (:data:`BEAM_SIZE`), ``beam_tokens`` and ``beam_ids``: beam search's translation beside greedy's, as the box's
  beam line gives it (:func:`~transformer_lite.decoding.beam_search` with the box's length penalty; chapter 12).
* ``embedding`` (chapters 1 and 2), for the source: ``token`` (S, D), the embedding row times sqrt(D);
  ``position`` (S, D), the positional encoding of each position; ``sum`` (S, D), their sum, the encoder's
  input. ``target_embedding``: the same three for the decoder's input (T, D).
* ``encoder``: one dict per layer, with
  ``attention`` (H, S, S), each head's attention weights as the module returned them (row = query token,
  column = key token; chapter 3's step 4, the softmax over the keys);
  ``attention_steps``, chapter 3's six steps and chapter 4's heads: ``q``, ``k``, ``v`` (H, S, D_h)
  (step 1, the projections split into heads), ``scores`` (H, S, S) = Q K^T (step 2), ``scaled`` (H, S, S) =
  scores / sqrt(D_h) (step 3), ``mask`` (S, S) of 0/1 with 1 = may not attend (chapter 7; the masked scores
  are ``scaled`` with -inf where the mask is 1: -inf has no JSON), ``heads`` (H, S, D_h) = weights @ V
  (steps 5 and 6), ``output`` (S, D) = Concat(heads) W_O + b_O (chapter 4);
  ``norm1``: chapter 5's first Add & Norm, ``input`` (S, D) = x + MultiHead(x), ``output`` (S, D) =
  LayerNorm of it; ``ffn``: ``hidden`` (S, d_ff) = activation(x W1 + b1), the FFN's activations, and
  ``output`` (S, D) = hidden W2 + b2; ``norm2``: the second Add & Norm (``input`` = x + FFN(x)).
  The residual stream is written once: layer i reads ``embedding["sum"]`` (i = 0) or layer i-1's
  ``norm2["output"]``, and its own output is its ``norm2["output"]``.
* ``memory`` (S, D): the encoder's output, what every cross-attention reads as keys and values.
* ``decoder``: one dict per layer, teacher-forced on the greedy output, reading
  ``target_embedding["sum"]`` or the previous layer's ``norm3["output"]``, with
  ``self_attention`` (H, T, T), the masked self-attention (the causal mask: weight 0 on later tokens),
  and its ``self_attention_steps`` (as ``attention_steps``, T for S); ``norm1``;
  ``cross_attention`` (H, T, S), queries from the decoder, keys and values from ``memory`` (chapter 9),
  and its ``cross_attention_steps`` (``q`` (H, T, D_h); ``k``, ``v`` (H, S, D_h); ``scores``, ``scaled``
  (H, T, S); ``mask`` (T, S)); ``norm2``; ``ffn``; ``norm3`` (its ``output`` is the layer's output).
* ``decoder_output`` (T, D): what the output projection (D -> V) reads (the last layer's output, after
  the stack's final LayerNorm when the model has one).
* ``steps`` (T lists of ``k`` pairs): at each decoding step, the ``k`` most probable next tokens as
  ``[token, probability]``, most probable first (the softmax of ``decoder_output`` W_out^T + b: chapter 9's
  last two boxes). Row t's first token is ``tgt_tokens[t]``: greedy decoding takes it.
* ``logit_lens`` (one entry per decoder layer, each as ``steps``): the logit lens, each decoder layer's output
  (its ``norm3["output"]``) read through the stack's final LayerNorm, if any, and the output projection, as if the
  model stopped after that layer: at which layer does the greedy token come first? The last entry is ``steps``.

Size (what a browser has to parse): floats are rounded to :data:`DECIMALS` decimals (float32 keeps about 7
significant digits; most values here are of order 0.1 to 10, so rounding changes each by at most 5e-7 and
the logits rebuilt from ``decoder_output`` stay within 1e-5 of the model's). There are no logits over the
whole vocabulary (V is 1,000s wide): only the top ``k``. The FFN's activations are kept whole (d_ff is 128
or 256 here), and nothing is written twice. A trace holds 3 H Q K + Q K + 3 Q D + 2 K D numbers per
attention (Q queries, K keys), 4 S D per encoder layer and 6 T D per decoder layer for the Add & Norms,
S (d_ff + D) or T (d_ff + D) per layer for the FFN, and 4 (S + T) D for the embeddings, ``memory`` and
``decoder_output``: about 10 bytes each in ``json.dumps``. A typical sentence
(4-12 words) is 0.25-0.45 MB for the grammar translator (D = 64) and 0.6-1.2 MB for the real one
(D = 128); the longest the box accepts (S = 64 words, T = 20 tokens) stays under :data:`MAX_JSON_BYTES`
(7 MB) at 13 bytes a number. ``tests/test_explain.py`` checks the count and the bound.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import math

import torch

from .._checks import check_positive_int
from ..attention import merge_head_masks, scaled_dot_product_attention, split_heads
from ..data import BOS, EOS
from ..decoding import beam_search, greedy_decode
from .translate import (
    LENGTH_PENALTY,
    MAX_NEW_TOKENS,
    TOP_K,
    _check_key,
    _until_eos,
    read_english,
    reading_of,
    shipped_translator,
)

DECIMALS = 6  # decimals kept of every float: see the module's docstring
BEAM_SIZE = 4  # the beam beside greedy in a trace: the translator box's default (tl-translator.js has the same)
MAX_JSON_BYTES = 7_000_000  # json.dumps(trace(...)) of any sentence the box accepts (64 words in, 20 out), at most

__all__ = ["trace", "record_encoder", "record_decoder", "flat", "config_of", "heads_switched_off", "heads_masked",
           "head_masks", "HEAD_PARTS",
           "DECIMALS", "MAX_JSON_BYTES"]

# where a head can be switched off (trace's heads_off): the encoder's self-attention, the decoder's masked
# self-attention, the decoder's cross-attention
HEAD_PARTS = ("encoder", "self", "cross")


@functools.cache
def _shipped(key: str):
    """The shipped translator ``key`` as ``(model, data)``, loaded once per process (the trace never changes it)."""
    return shipped_translator(key)


def _floats(x: torch.Tensor) -> list:
    """A tensor as nested lists of Python floats, rounded to DECIMALS (JSON has no tensors, and fewer digits
    keep a trace small)."""
    flat = [round(v, DECIMALS) for v in x.detach().double().flatten().tolist()]
    if x.dim() == 0:
        return flat[0]
    for size in reversed(x.shape[1:]):
        flat = [flat[i:i + size] for i in range(0, len(flat), size)]
    return flat


def _attention_hook(store: list):
    """A forward hook for a MultiHeadAttention: the six steps of its one call, from the module's own parts."""

    def hook(module, args, kwargs, output):
        bound = inspect.signature(module.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if a["cache"] is not None:
            raise RuntimeError("trace reads attention without a key/value cache")
        q = split_heads(module.q_proj(a["query"]), module.nhead)  # (B, T, D) -> (B, H, T, D_h)
        k = split_heads(module.k_proj(a["key"]), module.nhead)  # (B, S, D) -> (B, H, S, D_h)
        v = split_heads(module.v_proj(a["value"]), module.nhead)
        mask = merge_head_masks(a["attn_mask"], a["key_padding_mask"], q, k)  # broadcasts to (B, H, T, S)
        steps = scaled_dot_product_attention(q, k, v, mask, return_steps=True)
        T, S = q.shape[2], k.shape[2]
        if mask is None:
            blocked = torch.zeros(T, S, dtype=torch.bool)
        else:  # the model's masks are the same for every head: the first head's (T, S) says it
            first = torch.broadcast_to(mask, (1, module.nhead, T, S))[0, 0]
            blocked = first if mask.dtype == torch.bool else torch.isneginf(first)
        out, weights = output
        store.append(dict(
            weights=weights[0],  # what the module returned: (H, T, S)
            steps=dict(q=q[0], k=k[0], v=v[0], scores=steps.scores[0], scaled=steps.scaled[0],
                       mask=blocked.int(), heads=steps.output[0],  # int 0/1: the browser's graph returns it too
                       output=out[0])))

    return hook


def _io_hook(store: list):
    """A forward hook that keeps a module's input and output (a LayerNorm's)."""

    def hook(module, args, output):
        store.append(dict(input=args[0][0], output=output[0]))

    return hook


def _ffn_hook(store: list):
    """A forward hook for a FeedForward: its hidden activations, from its own linear1 and activation."""

    def hook(module, args, output):
        store.append(dict(hidden=module.activation(module.linear1(args[0]))[0], output=output[0]))

    return hook


def _embedding(embed, positions, ids: torch.Tensor) -> dict:
    """The scaled token embeddings, the position vectors and their sum, from the model's own modules."""
    token = embed(ids)  # (1, L) -> (1, L, D), times sqrt(D)
    summed = positions(token)  # + the positional encoding (eval mode: no dropout)
    L = ids.shape[1]
    if hasattr(positions, "pe"):
        position = positions.pe[:L]  # the sinusoidal table (L, D)
    else:
        position = positions.position(torch.arange(L))  # learned positions (L, D)
    return dict(token=token[0], position=position, sum=summed[0])


def _hooked(model, side: str):
    """Forward hooks on every attention, LayerNorm and FFN of ``model``'s encoder or decoder (``side``), and
    the records they fill: ``(handles, records)``, the records in call order (one call per layer)."""
    records = dict(self=[], cross=[], norms={}, ffns={})
    handles = []
    layers = model.encoder.layers if side == "encoder" else model.decoder.layers
    norms = ("norm1", "norm2") if side == "encoder" else ("norm1", "norm2", "norm3")
    for i, layer in enumerate(layers):
        handles.append(layer.self_attn.register_forward_hook(_attention_hook(records["self"]), with_kwargs=True))
        if side == "decoder":
            handles.append(layer.multihead_attn.register_forward_hook(_attention_hook(records["cross"]),
                                                                      with_kwargs=True))
        for n in norms:
            handles.append(getattr(layer, n).register_forward_hook(_io_hook(records["norms"].setdefault((i, n), []))))
        handles.append(layer.ff.register_forward_hook(_ffn_hook(records["ffns"].setdefault(i, []))))
    return handles, records


def _check_model(model) -> None:
    from ..model import Transformer

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lite.Transformer, got {type(model).__name__}")
    if model.config.norm_first:
        raise ValueError("model must be Post-LN (the shipped translators' layout): the trace reads its norms so")


def _check_ids(name: str, ids) -> None:
    if not isinstance(ids, torch.Tensor) or ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must be a tensor of token ids (integers), got "
                        f"{getattr(ids, 'dtype', type(ids).__name__)}")
    if ids.dim() != 2 or ids.shape[0] != 1:
        raise ValueError(f"{name} must have shape (1, length): one sentence, got {tuple(ids.shape)}")


def _one(records: list) -> dict:
    (rec,) = records  # one call per trace
    return rec


def record_encoder(model, src: torch.Tensor) -> dict:
    """The encoder's side of a trace as tensors, for ``src`` (1, S): ``embedding``, ``encoder``, ``memory``
    (the module's docstring gives each; the batch's one row, no batch dimension).

    What :func:`trace` writes as JSON, and what ``bookbuild/web_export.py`` exports as the outputs of the browser's
    explainer graph: the same code, so the browser computes what the package computes. Call it in eval mode
    under ``torch.no_grad()``. Raises ``TypeError``/``ValueError`` naming ``model`` or ``src``.
    """
    _check_model(model)
    _check_ids("src", src)
    handles, rec = _hooked(model, "encoder")
    try:
        memory, _ = model.encode(src, return_attention=True)
        embedding = _embedding(model.src_embed, model.src_pos, src)
    finally:
        for h in handles:
            h.remove()
    encoder = [dict(attention=a["weights"], attention_steps=a["steps"], norm1=_one(rec["norms"][(i, "norm1")]),
                    ffn=_one(rec["ffns"][i]), norm2=_one(rec["norms"][(i, "norm2")]))
               for i, a in enumerate(rec["self"])]
    return dict(embedding=embedding, encoder=encoder, memory=memory[0])


def record_decoder(model, memory: torch.Tensor, src: torch.Tensor, ys_in: torch.Tensor) -> dict:
    """The decoder's side of a trace as tensors: ``memory`` (1, S, D) from :func:`record_encoder`, ``src``
    (1, S), ``ys_in`` (1, T) the decoder's input. ``target_embedding``, ``decoder``, ``decoder_output`` and
    ``logits`` (T, V), from which :func:`trace` takes the top ``k`` of each step, and ``logit_lens``, one (T, V) per
    layer (the module's docstring). As :func:`record_encoder`."""
    _check_model(model)
    _check_ids("src", src)
    _check_ids("ys_in", ys_in)
    if not isinstance(memory, torch.Tensor) or memory.dim() != 3 or memory.shape[0] != 1:
        raise ValueError("memory must be a tensor (1, S, D), record_encoder's memory[None], got "
                         f"{tuple(memory.shape) if isinstance(memory, torch.Tensor) else type(memory).__name__}")
    handles, rec = _hooked(model, "decoder")
    decoder_output = []
    handles.append(model.output_projection.register_forward_hook(
        lambda m, args, out: decoder_output.append(args[0][0])))
    try:
        logits, _, _ = model.decode(ys_in, memory, src=src, return_attention=True)  # (1, T, V)
        target_embedding = _embedding(model.tgt_embed, model.tgt_pos, ys_in)
    finally:
        for h in handles:
            h.remove()
    decoder = [dict(self_attention=s["weights"], self_attention_steps=s["steps"],
                    norm1=_one(rec["norms"][(i, "norm1")]),
                    cross_attention=c["weights"], cross_attention_steps=c["steps"],
                    norm2=_one(rec["norms"][(i, "norm2")]), ffn=_one(rec["ffns"][i]),
                    norm3=_one(rec["norms"][(i, "norm3")]))
               for i, (s, c) in enumerate(zip(rec["self"], rec["cross"]))]
    # the logit lens: each layer's output read as the last layer's is, through the stack's final LayerNorm (when
    # the model has one) and the output projection; the last layer's are the logits themselves
    final = model.decoder.norm if model.decoder.norm is not None else (lambda h: h)
    logit_lens = [model.output_projection(final(d["norm3"]["output"])) for d in decoder]  # each (T, V)
    return dict(target_embedding=target_embedding, decoder=decoder, decoder_output=_one(decoder_output),
                logits=logits[0], logit_lens=logit_lens)


def flat(record: dict, prefix: str = "") -> list:
    """``record``'s tensors as ``[(name, tensor)]`` in order, each named by its path with dots
    (``"encoder.0.attention_steps.q"``): the output names of the browser's explainer graphs, from which the
    browser rebuilds the nested dict."""
    if not isinstance(record, (dict, list)):
        raise TypeError(f"record must be a dict or list of tensors (record_encoder's), got {type(record).__name__}")
    items = record.items() if isinstance(record, dict) else enumerate(record)
    out = []
    for name, value in items:
        if isinstance(value, torch.Tensor):
            out.append((f"{prefix}{name}", value))
        elif isinstance(value, (dict, list)):
            out.extend(flat(value, f"{prefix}{name}."))
        else:
            raise TypeError(f"record holds a {type(value).__name__} at {prefix}{name}: only tensors, dicts and lists")
    return out


def _json(x):
    """A record's tensors as nested lists: floats rounded (:func:`_floats`), integers (the masks) as they are."""
    if isinstance(x, torch.Tensor):
        return x.tolist() if not x.is_floating_point() else _floats(x)
    if isinstance(x, dict):
        return {name: _json(value) for name, value in x.items()}
    return [_json(value) for value in x]


def config_of(model) -> dict:
    """A trace's ``config``: the sizes the shapes name, and the two scales."""
    _check_model(model)
    c = model.config
    return dict(d_model=c.d_model, nhead=c.nhead, head_dim=c.d_model // c.nhead,
                dim_feedforward=c.dim_feedforward, num_encoder_layers=c.num_encoder_layers,
                num_decoder_layers=c.num_decoder_layers, activation=c.activation, norm_first=c.norm_first,
                embedding_scale=model.src_embed.scale, attention_scale=1 / math.sqrt(c.d_model // c.nhead))


def _attention_module(model, part: str, layer: int):
    if part == "encoder":
        return model.encoder.layers[layer].self_attn
    return model.decoder.layers[layer].self_attn if part == "self" else model.decoder.layers[layer].multihead_attn


def _check_heads_off(model, heads_off) -> list[tuple[str, int, int]]:
    if not isinstance(heads_off, (list, tuple)):
        raise TypeError(f"heads_off must be a list of (part, layer, head), got {type(heads_off).__name__}")
    c, out = model.config, []
    layers = {"encoder": c.num_encoder_layers, "self": c.num_decoder_layers, "cross": c.num_decoder_layers}
    for item in heads_off:
        if not (isinstance(item, (list, tuple)) and len(item) == 3 and isinstance(item[0], str)
                and all(isinstance(i, int) and not isinstance(i, bool) for i in item[1:])):
            raise TypeError(f"heads_off must hold (part, layer, head) triples (a str and two ints), got {item!r}")
        part, layer, head = item
        if part not in HEAD_PARTS or not 0 <= layer < layers[part] or not 0 <= head < c.nhead:
            raise ValueError(f"heads_off: {tuple(item)!r} is no head of this model: part one of {HEAD_PARTS}, layer "
                             f"0..{layers.get(part, 1) - 1}, head 0..{c.nhead - 1} (counted from 0)")
        out.append((part, layer, head))
    return out


def head_masks(model, heads_off=()) -> dict:
    """``{part: (layers, H) float tensor}`` for each part of :data:`HEAD_PARTS`: 1 for a head that counts, 0 for one of
    ``heads_off`` (``(part, layer, head)``, counted from 0). The browser's explainer graphs take these as inputs."""
    _check_model(model)
    c = model.config
    layers = {"encoder": c.num_encoder_layers, "self": c.num_decoder_layers, "cross": c.num_decoder_layers}
    masks = {part: torch.ones(layers[part], c.nhead) for part in HEAD_PARTS}
    for part, layer, head in _check_heads_off(model, heads_off):
        masks[part][layer, head] = 0.0
    return masks


@contextlib.contextmanager
def heads_masked(model, masks: dict):
    """Within the block, head h of layer l of each part in ``masks`` (:func:`head_masks`) adds ``masks[part][l, h]``
    times its output to its layer: the head's slice of the heads' concatenation, what W_O reads, is multiplied by it
    (a forward pre-hook on the attention's ``out_proj``). 1 leaves the number as it is; 0 switches the head off, so the
    layer's output is the other heads' alone. The head still computes its weights and output. ``masks`` may be graph
    inputs: the browser's explainer graphs are exported under this block."""
    handles = []

    def scale(attention, row):
        def pre_hook(module, args):
            x = args[0]  # (B, T, D): the heads' outputs side by side, head h in columns h D_h ... (h + 1) D_h - 1
            return (x * row.repeat_interleave(attention.head_dim).to(x.dtype), *args[1:])
        return pre_hook

    try:
        for part, mask in masks.items():
            for layer in range(mask.shape[0]):
                attention = _attention_module(model, part, layer)
                handles.append(attention.out_proj.register_forward_pre_hook(scale(attention, mask[layer])))
        yield
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def heads_switched_off(model, heads_off):
    """Within the block, each head of ``heads_off`` (``(part, layer, head)``, counted from 0, ``part`` one of
    :data:`HEAD_PARTS`) adds nothing to its layer: its slice of the heads' concatenation that W_O reads is multiplied
    by 0 (:func:`heads_masked`, the same hooks the browser's graphs run), so the layer's output is the other heads'
    alone. The head still computes its weights and its output; only W_O no longer reads them. Raises
    ``TypeError``/``ValueError`` naming ``heads_off``."""
    _check_model(model)
    chosen = _check_heads_off(model, heads_off)
    masks = head_masks(model, chosen)
    parts = {part for part, _, _ in chosen}
    with heads_masked(model, {part: masks[part] for part in HEAD_PARTS if part in parts}):
        yield chosen


def trace(key: str, text: str, k: int = TOP_K, heads_off=()) -> dict:
    """Every intermediate of shipped translator ``key`` on ``text``: a JSON-ready dict (the module's docstring
    lists its keys and shapes; the floats are rounded to :data:`DECIMALS` decimals).

    ``key``: ``"grammar"`` or ``"real"``; ``text``: an English sentence, read as the translator box reads it;
    ``k``: how many next-token candidates each entry of ``steps`` lists; ``heads_off``: heads to switch off
    (:func:`heads_switched_off`), for the translation and every number: the trace then holds ``heads_off`` as
    ``[part, layer, head]`` lists, and the translation is the model's without those heads. Raises
    ``TypeError``/``ValueError`` naming the argument for another key, a non-str or wordless text (or one longer
    than the model reads), ``k`` < 1 and a head the model does not have.
    """
    _check_key(key)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (an English sentence), got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"text must hold an English sentence, got {text!r}")
    check_positive_int("k", k)
    model, data = _shipped(key)
    off = _check_heads_off(model, heads_off)
    words, ids, unknown = read_english(text, data.src_vocab, model.max_len, reading_of(data))
    src = torch.tensor([ids])  # (1, S)

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), heads_switched_off(model, off):
            greedy = _until_eos(greedy_decode(model, src, MAX_NEW_TOKENS, BOS, EOS)[0, 1:].tolist())  # the box's
            beam = _until_eos(beam_search(model, src, BEAM_SIZE, MAX_NEW_TOKENS, BOS, EOS,
                                          length_penalty=LENGTH_PENALTY)[0, 1:].tolist())
            ys_in = torch.tensor([[BOS] + greedy[:-1]])  # (1, T): row t predicts greedy[t]
            enc = record_encoder(model, src)
            dec = record_decoder(model, enc["memory"][None], src, ys_in)
    finally:
        model.train(was_training)
    itos = data.tgt_vocab.itos

    def top_k(logits: torch.Tensor) -> list:  # (T, V) -> T lists of the k most probable [token, probability]
        p, top = torch.softmax(logits.float(), dim=-1).topk(min(k, logits.shape[-1]), dim=-1)
        return [[[itos[j], round(q, DECIMALS)] for j, q in zip(row_i, row_p)] for row_i, row_p in
                zip(top.tolist(), p.double().tolist())]

    steps = top_k(dec.pop("logits"))
    logit_lens = [top_k(lens) for lens in dec.pop("logit_lens")]
    enc, dec = _json(enc), _json(dec)
    switched = dict(heads_off=[list(h) for h in off]) if off else {}  # only when asked: the browser's has none
    return dict(
        key=key, text=text, k=k, **switched, config=config_of(model),
        src_tokens=words, src_ids=ids, unknown=unknown,
        tgt_tokens=[itos[i] for i in greedy], tgt_ids=greedy,
        beam_size=BEAM_SIZE, beam_tokens=[itos[i] for i in beam], beam_ids=beam,
        decoder_input_tokens=[itos[i] for i in ys_in[0].tolist()],
        embedding=enc["embedding"], encoder=enc["encoder"], memory=enc["memory"],
        target_embedding=dec["target_embedding"], decoder=dec["decoder"], decoder_output=dec["decoder_output"],
        steps=steps, logit_lens=logit_lens)
