"""The shipped translator for the reader's browser: ONNX export and the site's model files.

Build-only code (it needs onnx, onnxscript, onnxruntime and node_modules), so it lives with the build
tools, not in the package. ``make book`` (``bookbuild/build_book.py``) calls :func:`write_site_assets`, so the
page always runs the model the package ships. The export is cached (:func:`cached_export`) under
``_build/.onnx-cache/``, keyed on the model's weights and configuration, this file's source and the
versions of torch, onnx, onnxscript and onnxruntime: a build whose inputs did not change reuses it.

* :func:`export_onnx` exports four graphs with ``torch.onnx.export(..., dynamo=True)``. The translator's:
  ``encoder`` (src ids -> memory) and ``decoder`` (memory, src ids, target prefix -> next-token
  logits at every position and every layer's cross-attention); batch, source and target lengths
  are dynamic. The explainer's (``window.tlExplainer.trace``, one sentence, source and target lengths
  dynamic): ``explain_encoder`` and ``explain_decoder`` are :func:`transformer_lite.book.explain.record_encoder`
  and ``record_decoder``, the code ``explain.trace`` runs, with every intermediate of the trace as an output
  named by ``explain.flat`` (``"encoder.0.attention_steps.q"``), from which the page rebuilds the trace's dict.
  Each also reads its heads' masks (``head_mask_encoder``; ``head_mask_self``, ``head_mask_cross``: (layers, H), 1 for
  a head that counts, 0 for one switched off; ``explain.heads_masked``), so the page traces with heads off as
  ``explain.trace(heads_off=...)`` does; the export checks one head of each part off too.
  They are graphs of their own, not extra outputs of the translator's: ONNX Runtime computes every output of
  a graph whether or not it is fetched (its inference builds do not prune), and the translator runs its
  decoder at every step of greedy and beam search. The export is checked: ONNX Runtime must reproduce
  PyTorch's outputs within 1e-4, every output of all four graphs (relative to the value where it is above 1:
  a raw attention score of a few hundred is kept to 3e-5 by float32).
* :func:`write_site_assets` writes what the page loads on first use, as classic scripts so they
  load from a web server and from ``file://`` alike (a page opened from disk may not ``fetch``):
  one ``model-<key>.js`` for each shipped translator the box offers (``transformer_lite.book.translate.SHIPPED``:
  ``model-grammar.js``, ``model-real.js``; both graphs in float32, gzip + base64, with the vocabularies and
  the reading rules), ``ort.js`` (ONNX Runtime Web's single-file bundle, from npm, turned into a classic
  script) and ``ort-wasm.js`` (its WebAssembly, gzip + base64, decompressed by the browser). The page
  loads the runtime and the selected model's file; the other model's file only when the reader selects it.
  ``explain-<key>.js`` holds the explainer's two graphs (float32, gzip + base64: the model's weights a second
  time, about the size of ``model-<key>.js``) and the trace's ``config``; the page loads it only when a trace
  of that model is asked for.

Needs ``onnx``, ``onnxscript`` and ``onnxruntime`` (the build's requirements, not the package's).
"""
from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import tempfile
from pathlib import Path

import torch
import torch.nn as nn

from transformer_lite.book import explain
from transformer_lite.book.translate import (
    LENGTH_PENALTY,
    MAX_BEAM,
    MAX_NEW_TOKENS,
    SHIPPED,
    TOP_K,
    reading_of,
    reading_rules,
    shipped_translator,
)
from transformer_lite.data import BOS, EOS, PAD, UNK

ORT_BUNDLE = "onnxruntime-web/dist/ort.wasm.bundle.min.mjs"  # ES module: the API and its WebAssembly glue
ORT_WASM = "onnxruntime-web/dist/ort-wasm-simd-threaded.wasm"
TOLERANCE = 1e-4  # on |ONNX Runtime - PyTorch| / max(1, |PyTorch|): see _difference
# The translator's two graphs, and the explainer's two (explain.record_encoder / record_decoder, every intermediate
# as an output): apart, so that the translator's graphs, run at every decoding step, stay as they were (ONNX Runtime
# computes every output of a graph, fetched or not) and the explainer's file loads only when a trace is asked for.
GRAPHS = ("encoder", "decoder", "explain_encoder", "explain_decoder")


class _Encoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, src):  # (B, S) -> memory (B, S, D)
        return self.model.encode(src)


class _Decoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, memory, src, ys):  # (B, S, D), (B, S), (B, T) -> logits (B, T, V), cross (B, L, H, T, S)
        logits, _, cross = self.model.decode(ys, memory, src=src, return_attention=True)
        return logits, torch.stack(list(cross), dim=1)


class _ExplainEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, src, head_mask_encoder):  # (1, S), (L_enc, H) -> the encoder's side of a trace, flat:
        # explain.flat's order and names, each head's share of W_O's input scaled by its mask (1: on, 0: off)
        with explain.heads_masked(self.model, {"encoder": head_mask_encoder}):
            return tuple(t for _, t in explain.flat(explain.record_encoder(self.model, src)))


class _ExplainDecoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, memory, src, ys, head_mask_self, head_mask_cross):  # (1, S, D), (1, S), (1, T), (L_dec, H) x 2
        # -> the decoder's side of a trace and its logits, with the heads' masks as the encoder's
        with explain.heads_masked(self.model, {"self": head_mask_self, "cross": head_mask_cross}):
            return tuple(t for _, t in explain.flat(explain.record_decoder(self.model, memory, src, ys)))


@contextlib.contextmanager
def _causal_mask_of_a_traced_length():
    """While the explainer's decoder is captured: ``causal_mask(T)`` takes ``T = tgt.shape[1]`` as a torch.SymInt.

    The translator's decoder is captured by torch.export's strict mode (dynamo), in which ``T`` passes the
    package's ``isinstance(T, int)`` check; the explainer's cannot be (dynamo does not trace the registration of
    the trace's forward hooks), and in non-strict mode ``T`` is a SymInt. Letting the package accept SymInts
    would let the translator's decoder be captured non-strict too: another graph, which the page's tests and
    budgets would have to vet again. So only this capture sees it, and the translator's graphs stay byte for
    byte what they were.
    """
    from transformer_lite import masks

    own = masks.check_positive_int

    def check(name, value, minimum=1):
        return value if isinstance(value, torch.SymInt) else own(name, value, minimum)

    masks.check_positive_int = check
    try:
        yield
    finally:
        masks.check_positive_int = own


def _strip(model_proto):
    """Drop what only a debugger needs (source locations, doc strings): the files halve."""
    for node in model_proto.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    model_proto.doc_string = ""
    del model_proto.metadata_props[:]
    return model_proto


def _difference(got, expected) -> float:
    """The largest difference of two arrays, relative to the value where it is above 1 in size. float32 keeps
    about 7 significant digits: a raw attention score of 357 (the grammar translator's largest, before the
    1/sqrt(D_h)) is kept to 3e-5, so two correct orders of its sum differ by 1e-4 there (seen: 1.2e-4), while
    every value up to 1 in size (the weights, the probabilities) is held to 1e-4 itself."""
    got, expected = got.astype("float64"), expected.astype("float64")
    return float((abs(got - expected) / abs(expected).clip(min=1.0)).max())


def _shared_weights(model_proto):
    """One initializer for equal ones. The explainer's graphs compute a layer's projections twice (the layer's
    own call, and the trace's hook reading its q_proj, k_proj, v_proj and linear1), and the exporter writes each
    call's copy of the weight matrix it folded: the same bytes twice, half again the file's size."""
    first, rename = {}, {}
    for init in list(model_proto.graph.initializer):
        same = first.setdefault((init.data_type, tuple(init.dims), init.raw_data), init.name)
        if same != init.name and init.raw_data:
            rename[init.name] = same
            model_proto.graph.initializer.remove(init)
    for node in model_proto.graph.node:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    return model_proto


def export_onnx(model, directory) -> dict:
    """Export ``model`` (a :class:`~transformer_lite.Transformer`) as ``encoder.onnx`` and ``decoder.onnx`` (the
    translator's), ``explain_encoder.onnx`` and ``explain_decoder.onnx`` (the explainer's).

    Returns ``{name: path, ..., "max_error": float}``, the largest difference between ONNX Runtime's and
    PyTorch's outputs on check inputs, every output of every graph, relative to the value where it is above 1
    (:func:`_difference`; raises ``RuntimeError`` above 1e-4, or when
    an explainer graph's outputs are not named as :func:`transformer_lite.book.explain.flat` names them).
    """
    import onnx
    import onnxruntime as ort

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = model.cpu().eval()
    g = torch.Generator().manual_seed(0)
    V_src, V_tgt = model.src_vocab_size, model.tgt_vocab_size
    src = torch.randint(4, V_src, (2, 7), generator=g)
    src[1, 5:] = PAD  # a padded row: the masks are part of the graph
    ys = torch.randint(4, V_tgt, (2, 4), generator=g)
    ys[:, 0] = BOS
    one_src, one_ys = src[:1], ys[:1]  # the explainer reads one sentence, as explain.trace does
    # the explainer's head masks: exported with every head on; checked with one head of each part off, against
    # explain.heads_switched_off (what explain.trace(heads_off=...) runs)
    ones = explain.head_masks(model)
    off = [(part, 0, 1 % model.config.nhead) for part in explain.HEAD_PARTS]
    masks = explain.head_masks(model, off)
    with torch.no_grad():
        memory = model.encode(src)
        logits, cross = _Decoder(model).eval()(memory, src, ys)
        enc_record = explain.flat(explain.record_encoder(model, one_src))
        one_memory = dict(enc_record)["memory"][None]
        dec_record = explain.flat(explain.record_decoder(model, one_memory, one_src, one_ys))
        with explain.heads_switched_off(model, off):
            enc_off = explain.flat(explain.record_encoder(model, one_src))
            off_memory = dict(enc_off)["memory"][None]
            dec_off = explain.flat(explain.record_decoder(model, off_memory, one_src, one_ys))
    B, S, T = torch.export.Dim("B"), torch.export.Dim("S", max=model.max_len), torch.export.Dim("T", max=model.max_len)
    mask_names = ["head_mask_encoder"], ["head_mask_self", "head_mask_cross"]
    paths = {name: directory / f"{name}.onnx" for name in GRAPHS}
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet), torch.no_grad():
        programs = dict(
            encoder=torch.onnx.export(_Encoder(model).eval(), (src,), input_names=["src"], output_names=["memory"],
                                      dynamic_shapes=({0: B, 1: S},), dynamo=True, optimize=True, verbose=False),
            decoder=torch.onnx.export(_Decoder(model).eval(), (memory, src, ys), input_names=["memory", "src", "ys"],
                                      output_names=["logits", "cross"],
                                      dynamic_shapes=({0: B, 1: S}, {0: B, 1: S}, {0: B, 1: T}),
                                      dynamo=True, optimize=True, verbose=False))
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet), torch.no_grad(), \
            _causal_mask_of_a_traced_length():
        programs.update(
            explain_encoder=torch.onnx.export(_ExplainEncoder(model).eval(), (one_src, ones["encoder"]),
                                              input_names=["src", *mask_names[0]],
                                              output_names=[n for n, _ in enc_record],
                                              dynamic_shapes=({1: S}, None), dynamo=True, optimize=True,
                                              verbose=False),
            explain_decoder=torch.onnx.export(_ExplainDecoder(model).eval(),
                                              (one_memory, one_src, one_ys, ones["self"], ones["cross"]),
                                              input_names=["memory", "src", "ys", *mask_names[1]],
                                              output_names=[n for n, _ in dec_record],
                                              dynamic_shapes=({1: S}, {1: S}, {1: T}, None, None),
                                              dynamo=True, optimize=True, verbose=False))
    for name, program in programs.items():
        proto = _strip(program.model_proto)
        onnx.save(_shared_weights(proto) if name.startswith("explain_") else proto, paths[name])

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    run = {name: ort.InferenceSession(str(paths[name]), opts, providers=["CPUExecutionProvider"]) for name in GRAPHS}
    (m,) = run["encoder"].run(None, {"src": src.numpy()})
    lo, cr = run["decoder"].run(None, {"memory": m, "src": src.numpy(), "ys": ys.numpy()})
    errors = [(_difference(m, memory.numpy()), "encoder's memory"),
              (_difference(lo, logits.numpy()), "decoder's logits"),
              (_difference(cr, cross.numpy()), "decoder's cross")]
    def feeds(masks, memory):
        return dict(explain_encoder={"src": one_src.numpy(), "head_mask_encoder": masks["encoder"].numpy()},
                    explain_decoder={"memory": memory.numpy(), "src": one_src.numpy(), "ys": one_ys.numpy(),
                                     "head_mask_self": masks["self"].numpy(),
                                     "head_mask_cross": masks["cross"].numpy()})
    for name, record, feed in (("explain_encoder", enc_record, feeds(ones, one_memory)["explain_encoder"]),
                               ("explain_decoder", dec_record, feeds(ones, one_memory)["explain_decoder"]),
                               ("explain_encoder", enc_off, feeds(masks, off_memory)["explain_encoder"]),
                               ("explain_decoder", dec_off, feeds(masks, off_memory)["explain_decoder"])):
        names = [o.name for o in run[name].get_outputs()]
        if names != [n for n, _ in record]:
            raise RuntimeError(f"{name}'s outputs are {names[:4]}..., not explain.flat's names")
        for (n, expected), got in zip(record, run[name].run(None, feed)):
            if got.shape != tuple(expected.shape):
                raise RuntimeError(f"{name}'s {n} has shape {got.shape}, PyTorch's {tuple(expected.shape)}")
            errors.append((_difference(got, expected.double().numpy()), f"{name}'s {n}"))
    error, where = max(errors)
    if not error <= TOLERANCE:
        raise RuntimeError(f"the ONNX export differs from PyTorch by {error:.2e} > {TOLERANCE} ({where}; relative to "
                           "the value where it is above 1)")
    return dict(paths, max_error=error)


def export_key(model) -> str:
    """What decides the exported graphs: the weights, the configuration, this file, the explainer's code
    (transformer_lite/book/explain.py) and the exporter's versions."""
    from importlib.metadata import version

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(str(tuple(tensor.shape)).encode() + str(tensor.dtype).encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    h.update(repr(getattr(model, "config", None)).encode())
    h.update(Path(__file__).read_bytes())
    h.update(Path(explain.__file__).read_bytes())  # the explainer's graphs are its record_encoder / record_decoder
    for package in ("torch", "onnx", "onnxscript", "onnxruntime"):
        h.update(f"{package}=={version(package)}".encode())
    return h.hexdigest()[:20]


def cached_export(model, cache_dir) -> dict:
    """:func:`export_onnx`, reused from ``cache_dir`` when :func:`export_key` is unchanged.

    Returns ``{name: bytes for each of GRAPHS, "max_error": float, "cached": bool}``.
    """
    folder = Path(cache_dir) / export_key(model)
    meta = folder / "export.json"
    if meta.exists():
        return dict({k: (folder / f"{k}.onnx").read_bytes() for k in GRAPHS},
                    max_error=json.loads(meta.read_text())["max_error"], cached=True)
    with tempfile.TemporaryDirectory(prefix="tl-onnx-") as tmp:
        exported = export_onnx(model, tmp)
        graphs = {k: exported[k].read_bytes() for k in GRAPHS}
    folder.mkdir(parents=True, exist_ok=True)
    for k, raw in graphs.items():
        (folder / f"{k}.onnx").write_bytes(raw)
    meta.write_text(json.dumps({"max_error": exported["max_error"]}))  # last: a folder without it is incomplete
    return dict(graphs, max_error=exported["max_error"], cached=False)


def _gzip_b64(raw: bytes) -> str:
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


ORT_CLASSIC_PATCHES = ("onnxruntime-web-as-a-classic-script-exports", "onnxruntime-web-as-a-classic-script-own-url")


def classic_ort_script(bundle_text: str) -> str:
    """ONNX Runtime Web's ES-module bundle as a classic script that defines ``window.ort``.

    A page opened from disk (``file://``) may run classic scripts but not import modules. The bundle's
    one ``export {...}`` becomes an assignment, and ``import.meta.url`` (used only to find files we
    hand over in memory instead) becomes the script's own address (bookbuild/patches.py: both patches fail,
    naming the installed onnxruntime-web, when its bundle changes).
    """
    from bookbuild import patches

    body = patches.without_source_map(patches.apply(bundle_text, *ORT_CLASSIC_PATCHES)).rstrip()
    if "import.meta" in body or "export{" in body or "export {" in body:
        raise patches.PATCHES[ORT_CLASSIC_PATCHES[0]].fail("the patched bundle still imports or exports")
    return ("/* onnxruntime-web (MIT License, Microsoft), converted to a classic script by "
            "bookbuild/web_export.py */\n(function(){\n" + body + "\n})();\n")


def model_script(key: str, model, data, exported: dict) -> str:
    """``model-<key>.js``: the exported graphs (gzip + base64), the vocabularies and the reading rules of ``data``."""
    graphs = {k: exported[k] for k in ("encoder", "decoder")}
    cfg = model.config
    payload = dict(
        format=2, key=key, label=SHIPPED[key],
        config=dict(d_model=cfg.d_model, nhead=cfg.nhead, layers=cfg.num_decoder_layers, max_len=cfg.max_len),
        special=dict(pad=PAD, bos=BOS, eos=EOS, unk=UNK),
        decoding=dict(max_new_tokens=MAX_NEW_TOKENS, length_penalty=LENGTH_PENALTY, top_k=TOP_K, max_beam=MAX_BEAM),
        reading=reading_rules(reading_of(data)),
        src_vocab=list(data.src_vocab.itos), tgt_vocab=list(data.tgt_vocab.itos),
        sha256={k: hashlib.sha256(v).hexdigest() for k, v in graphs.items()},
        encoder=_gzip_b64(graphs["encoder"]), decoder=_gzip_b64(graphs["decoder"]),
    )
    return ("(self.tlTranslatorModels=self.tlTranslatorModels||{})[" + json.dumps(key) + "]="
            + json.dumps(payload, ensure_ascii=False) + ";\n")


def explain_script(key: str, model, exported: dict) -> str:
    """``explain-<key>.js``: the explainer's two graphs (gzip + base64) and what a trace says besides their
    outputs (its ``config``, the decimals its floats keep); loaded only when the page asks for a trace."""
    graphs = {k: exported[f"explain_{k}"] for k in ("encoder", "decoder")}
    payload = dict(
        format=1, key=key, config=explain.config_of(model), decimals=explain.DECIMALS,
        sha256={k: hashlib.sha256(v).hexdigest() for k, v in graphs.items()},
        encoder=_gzip_b64(graphs["encoder"]), decoder=_gzip_b64(graphs["decoder"]),
    )
    return ("(self.tlExplainModels=self.tlExplainModels||{})[" + json.dumps(key) + "]="
            + json.dumps(payload, ensure_ascii=False) + ";\n")


def write_site_assets(directory, node_modules, models=None, cache_dir=None) -> dict:
    """Write ``model-<key>.js`` and ``explain-<key>.js`` for each translator, ``ort.js`` and ``ort-wasm.js``
    into ``directory``.

    ``models``: ``{key: (model, data)}``, by default every shipped translator
    (``transformer_lite.book.translate.shipped_translator``). Each is exported and checked (ONNX Runtime
    against PyTorch within 1e-4), reused from ``cache_dir`` when unchanged (None: export afresh, cache
    nothing). Other ``model*.js`` and ``explain*.js`` files in ``directory`` (an older build's) are removed.
    Returns the files' ``sizes``, and per key the export's ``max_error`` and whether it was ``cached``.
    """
    if models is None:
        models = {key: shipped_translator(key) for key in SHIPPED}
    directory, node_modules = Path(directory), Path(node_modules)
    directory.mkdir(parents=True, exist_ok=True)
    bundle, wasm = node_modules / ORT_BUNDLE, node_modules / ORT_WASM
    for f in (bundle, wasm):
        if not f.exists():
            raise FileNotFoundError(f"missing {f}: run `npm ci` (package.json pins onnxruntime-web)")
    max_error, cached = {}, {}
    for key, (model, data) in models.items():
        if key not in SHIPPED:
            raise ValueError(f"models' keys must be among {tuple(SHIPPED)}, got {key!r}")
        if cache_dir is None:
            with tempfile.TemporaryDirectory(prefix="tl-onnx-") as tmp:  # the graphs go into the script, not beside it
                out = export_onnx(model, tmp)
                exported = dict({k: out[k].read_bytes() for k in GRAPHS},
                                max_error=out["max_error"], cached=False)
        else:
            exported = cached_export(model, cache_dir)
        max_error[key], cached[key] = exported["max_error"], exported["cached"]
        (directory / f"model-{key}.js").write_text(model_script(key, model, data, exported), encoding="utf-8")
        (directory / f"explain-{key}.js").write_text(explain_script(key, model, exported), encoding="utf-8")
    for stale in [*directory.glob("model*.js"), *directory.glob("explain*.js")]:
        if stale.name not in {f"{kind}-{key}.js" for key in models for kind in ("model", "explain")}:
            stale.unlink()
    (directory / "ort.js").write_text(classic_ort_script(bundle.read_text(encoding="utf-8")), encoding="utf-8")
    (directory / "ort-wasm.js").write_text(f'self.tlOrtWasm="{_gzip_b64(wasm.read_bytes())}";\n', encoding="ascii")
    sizes = {f.name: f.stat().st_size for f in sorted(directory.iterdir())}
    return dict(sizes=sizes, max_error=max_error, cached=cached)
