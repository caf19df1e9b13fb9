"""The shipped translator for the reader's browser: ONNX export and the site's model files.

Build-only code (it needs onnx, onnxscript, onnxruntime and node_modules), so it lives with the build
tools, not in the package. ``make book`` (``tools/build_book.py``) calls :func:`write_site_assets`, so the
page always runs the model the package ships. The export is cached (:func:`cached_export`) under
``_build/.onnx-cache/``, keyed on the model's weights and configuration, this file's source and the
versions of torch, onnx, onnxscript and onnxruntime: a build whose inputs did not change reuses it.

* :func:`export_onnx` exports two graphs with ``torch.onnx.export(..., dynamo=True)``:
  ``encoder`` (src ids -> memory) and ``decoder`` (memory, src ids, target prefix -> next-token
  logits at every position and every layer's cross-attention). Batch, source and target lengths
  are dynamic. The export is checked: ONNX Runtime must reproduce PyTorch's outputs within 1e-4.
* :func:`write_site_assets` writes what the page loads on first use, as classic scripts so they
  load from a web server and from ``file://`` alike (a page opened from disk may not ``fetch``):
  one ``model-<key>.js`` for each shipped translator the box offers (``transformer_lite.book.translate.SHIPPED``:
  ``model-grammar.js``, ``model-real.js``; both graphs in float32, gzip + base64, with the vocabularies and
  the reading rules), ``ort.js`` (ONNX Runtime Web's single-file bundle, from npm, turned into a classic
  script) and ``ort-wasm.js`` (its WebAssembly, gzip + base64, decompressed by the browser). The page
  loads the runtime and the selected model's file; the other model's file only when the reader selects it.

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
TOLERANCE = 1e-4


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


def _strip(model_proto):
    """Drop what only a debugger needs (source locations, doc strings): the files halve."""
    for node in model_proto.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    model_proto.doc_string = ""
    del model_proto.metadata_props[:]
    return model_proto


def export_onnx(model, directory) -> dict:
    """Export ``model`` (a :class:`~transformer_lite.Transformer`) as ``encoder.onnx`` and ``decoder.onnx``.

    Returns ``{"encoder": path, "decoder": path, "max_error": float}``, the largest difference between
    ONNX Runtime's and PyTorch's outputs on a check batch (raises ``RuntimeError`` above 1e-4).
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
    with torch.no_grad():
        memory = model.encode(src)
        logits, cross = _Decoder(model).eval()(memory, src, ys)
    B, S, T = torch.export.Dim("B"), torch.export.Dim("S", max=model.max_len), torch.export.Dim("T", max=model.max_len)
    paths = {"encoder": directory / "encoder.onnx", "decoder": directory / "decoder.onnx"}
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet), torch.no_grad():
        enc = torch.onnx.export(_Encoder(model).eval(), (src,), input_names=["src"], output_names=["memory"],
                                dynamic_shapes=({0: B, 1: S},), dynamo=True, optimize=True, verbose=False)
        dec = torch.onnx.export(_Decoder(model).eval(), (memory, src, ys), input_names=["memory", "src", "ys"],
                                output_names=["logits", "cross"],
                                dynamic_shapes=({0: B, 1: S}, {0: B, 1: S}, {0: B, 1: T}),
                                dynamo=True, optimize=True, verbose=False)
    for name, program in (("encoder", enc), ("decoder", dec)):
        onnx.save(_strip(program.model_proto), paths[name])

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    run_enc = ort.InferenceSession(str(paths["encoder"]), opts, providers=["CPUExecutionProvider"])
    run_dec = ort.InferenceSession(str(paths["decoder"]), opts, providers=["CPUExecutionProvider"])
    (m,) = run_enc.run(None, {"src": src.numpy()})
    lo, cr = run_dec.run(None, {"memory": m, "src": src.numpy(), "ys": ys.numpy()})
    error = max(float(abs(m - memory.numpy()).max()), float(abs(lo - logits.numpy()).max()),
                float(abs(cr - cross.numpy()).max()))
    if not error <= TOLERANCE:
        raise RuntimeError(f"the ONNX export differs from PyTorch by {error:.2e} > {TOLERANCE}")
    return dict(paths, max_error=error)


def export_key(model) -> str:
    """What decides the exported graphs: the weights, the configuration, this file and the exporter's versions."""
    from importlib.metadata import version

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(str(tuple(tensor.shape)).encode() + str(tensor.dtype).encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    h.update(repr(getattr(model, "config", None)).encode())
    h.update(Path(__file__).read_bytes())
    for package in ("torch", "onnx", "onnxscript", "onnxruntime"):
        h.update(f"{package}=={version(package)}".encode())
    return h.hexdigest()[:20]


def cached_export(model, cache_dir) -> dict:
    """:func:`export_onnx`, reused from ``cache_dir`` when :func:`export_key` is unchanged.

    Returns ``{"encoder": bytes, "decoder": bytes, "max_error": float, "cached": bool}``.
    """
    folder = Path(cache_dir) / export_key(model)
    meta = folder / "export.json"
    if meta.exists():
        return dict({k: (folder / f"{k}.onnx").read_bytes() for k in ("encoder", "decoder")},
                    max_error=json.loads(meta.read_text())["max_error"], cached=True)
    with tempfile.TemporaryDirectory(prefix="tl-onnx-") as tmp:
        exported = export_onnx(model, tmp)
        graphs = {k: exported[k].read_bytes() for k in ("encoder", "decoder")}
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
    hand over in memory instead) becomes the script's own address (tools/patches.py: both patches fail,
    naming the installed onnxruntime-web, when its bundle changes).
    """
    import patches

    body = patches.without_source_map(patches.apply(bundle_text, *ORT_CLASSIC_PATCHES)).rstrip()
    if "import.meta" in body or "export{" in body or "export {" in body:
        raise patches.PATCHES[ORT_CLASSIC_PATCHES[0]].fail("the patched bundle still imports or exports")
    return ("/* onnxruntime-web (MIT License, Microsoft), converted to a classic script by "
            "tools/web_export.py */\n(function(){\n" + body + "\n})();\n")


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


def write_site_assets(directory, node_modules, models=None, cache_dir=None) -> dict:
    """Write ``model-<key>.js`` for each translator, ``ort.js`` and ``ort-wasm.js`` into ``directory``.

    ``models``: ``{key: (model, data)}``, by default every shipped translator
    (``transformer_lite.book.translate.shipped_translator``). Each is exported and checked (ONNX Runtime
    against PyTorch within 1e-4), reused from ``cache_dir`` when unchanged (None: export afresh, cache
    nothing). Other ``model*.js`` files in ``directory`` (an older build's) are removed. Returns the files'
    ``sizes``, and per key the export's ``max_error`` and whether it was ``cached``.
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
                exported = dict({k: out[k].read_bytes() for k in ("encoder", "decoder")},
                                max_error=out["max_error"], cached=False)
        else:
            exported = cached_export(model, cache_dir)
        max_error[key], cached[key] = exported["max_error"], exported["cached"]
        (directory / f"model-{key}.js").write_text(model_script(key, model, data, exported), encoding="utf-8")
    for stale in directory.glob("model*.js"):
        if stale.name not in {f"model-{key}.js" for key in models}:
            stale.unlink()
    (directory / "ort.js").write_text(classic_ort_script(bundle.read_text(encoding="utf-8")), encoding="utf-8")
    (directory / "ort-wasm.js").write_text(f'self.tlOrtWasm="{_gzip_b64(wasm.read_bytes())}";\n', encoding="ascii")
    sizes = {f.name: f.stat().st_size for f in sorted(directory.iterdir())}
    return dict(sizes=sizes, max_error=max_error, cached=cached)
