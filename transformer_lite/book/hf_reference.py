"""Chapters 14 and 15: our models against Hugging Face's on the same weights, without downloading anything.

Two tiny checkpoints, GPT-2 and Qwen2 (2 layers, width 32, a vocabulary of 100), with random weights under Hugging
Face's names and shapes (:func:`tiny_state_dict`, from a seed), and the logits Hugging Face's ``transformers``
computed with them (:func:`reference`, recorded in ``assets/hf_reference.json``). The chapters load the same weights
into ours (:func:`~transformer_lite.interop.from_hf_gpt2`, :func:`~transformer_lite.interop.from_hf_qwen2`) and
compare. The book's own environment does not install ``transformers`` (bertviz needs none of it); where it is
installed (Colab; ``pip install transformer-step-by-step[book]`` brings it with bertviz), :func:`hf_logits` runs
Hugging Face's model itself.

``python -m transformer_lite.book.hf_reference transformer_lite/book/assets/hf_reference.json`` writes the
recording again; it needs ``transformers``.
"""
from __future__ import annotations

import importlib.util
import json
import sys

import torch

from .pretrained import ASSETS, output_path

REFERENCE = ASSETS / "hf_reference.json"
SEED = 0
IDS_SHAPE = (2, 12)  # (B, T): two sequences of 12 token ids

# What each tiny checkpoint is: Hugging Face's model class and the arguments of its config class
MODELS = {
    "gpt2": ("GPT2LMHeadModel", "GPT2Config",
             dict(n_layer=2, n_embd=32, n_head=4, vocab_size=100, n_positions=64)),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config",
              dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                   intermediate_size=64, vocab_size=100, tie_word_embeddings=True, rms_norm_eps=1e-6,
                   rope_theta=1e6)),
    "qwen2_untied": ("Qwen2ForCausalLM", "Qwen2Config",
                     dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                          intermediate_size=64, vocab_size=100, tie_word_embeddings=False, rms_norm_eps=1e-6,
                          rope_theta=1e6)),
}


def _check_kind(kind) -> None:
    if kind not in MODELS:
        raise ValueError(f"kind must be one of {sorted(MODELS)}, got {kind!r}")


def _shapes(kind: str) -> dict[str, tuple[int, ...]]:
    """Every tensor of the checkpoint, by Hugging Face's name, with its shape."""
    c = MODELS[kind][2]
    shapes = {}
    if kind == "gpt2":
        D, V, F_ = c["n_embd"], c["vocab_size"], 4 * c["n_embd"]
        shapes.update({"transformer.wte.weight": (V, D), "transformer.wpe.weight": (c["n_positions"], D)})
        for i in range(c["n_layer"]):
            h = f"transformer.h.{i}."
            shapes.update({h + "ln_1.weight": (D,), h + "ln_1.bias": (D,),
                           h + "attn.c_attn.weight": (D, 3 * D), h + "attn.c_attn.bias": (3 * D,),  # Conv1D: (in, out)
                           h + "attn.c_proj.weight": (D, D), h + "attn.c_proj.bias": (D,),
                           h + "ln_2.weight": (D,), h + "ln_2.bias": (D,),
                           h + "mlp.c_fc.weight": (D, F_), h + "mlp.c_fc.bias": (F_,),
                           h + "mlp.c_proj.weight": (F_, D), h + "mlp.c_proj.bias": (D,)})
        shapes.update({"transformer.ln_f.weight": (D,), "transformer.ln_f.bias": (D,)})
        return shapes
    D, V, F_ = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    kv = c["num_key_value_heads"] * D // c["num_attention_heads"]
    shapes["model.embed_tokens.weight"] = (V, D)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "self_attn.q_proj.weight": (D, D), p + "self_attn.q_proj.bias": (D,),
                       p + "self_attn.k_proj.weight": (kv, D), p + "self_attn.k_proj.bias": (kv,),
                       p + "self_attn.v_proj.weight": (kv, D), p + "self_attn.v_proj.bias": (kv,),
                       p + "self_attn.o_proj.weight": (D, D),
                       p + "mlp.gate_proj.weight": (F_, D), p + "mlp.up_proj.weight": (F_, D),
                       p + "mlp.down_proj.weight": (D, F_),
                       p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,)})
    shapes["model.norm.weight"] = (D,)
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, D)
    return shapes


def tiny_state_dict(kind: str, seed: int = SEED) -> dict[str, torch.Tensor]:
    """Random weights for ``kind`` ("gpt2", "qwen2", "qwen2_untied") under Hugging Face's names and shapes.

    Uniform draws from a seeded generator (the same bits on every machine), scaled so that every layer's output
    stays of order 1: matrices by sqrt(3 / fan-in), norm gains around 1, biases small, embeddings of std 0.14. A tied
    output layer is the embedding itself, saved under ``lm_head.weight`` too, as ``state_dict()`` does.
    """
    _check_kind(kind)
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in _shapes(kind).items():
        u = torch.rand(shape, generator=g) * 2 - 1  # uniform in [-1, 1): variance 1/3
        if "norm" in name or "ln_" in name:
            out[name] = 0.1 * u if name.endswith(".bias") else 1 + 0.2 * u
        elif name.endswith(".bias"):
            out[name] = 0.1 * u
        elif "wte" in name or "wpe" in name or "embed_tokens" in name:
            out[name] = 0.25 * u  # std 0.14, GPT-2's own token vectors' spread: logits of a few units
        else:  # Conv1D (in, out) for GPT-2, Linear (out, in) for Qwen2
            fan_in = shape[0] if kind == "gpt2" else shape[1]
            out[name] = u * (3 / fan_in) ** 0.5
    if kind == "gpt2" or MODELS[kind][2]["tie_word_embeddings"]:
        out["lm_head.weight"] = out["transformer.wte.weight" if kind == "gpt2" else "model.embed_tokens.weight"]
    return out


def reference(kind: str) -> dict:
    """What ``transformers`` computed on :func:`tiny_state_dict` (``kind``): its full ``config`` (a dict), the token
    ``ids`` (B, T), its ``logits`` (B, T, V) and the ``transformers`` and ``torch`` versions that computed them."""
    _check_kind(kind)
    if not REFERENCE.exists():
        raise FileNotFoundError(f"{REFERENCE} is missing; write it with `python -m transformer_lite.book.hf_reference "
                                "transformer_lite/book/assets/hf_reference.json` where transformers is installed")
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    model = data["models"][kind]
    return dict(config=model["config"], ids=torch.tensor(model["ids"]),
                logits=torch.tensor(model["logits"], dtype=torch.float32),
                transformers=data["transformers"], torch=data["torch"])


def transformers_available() -> bool:
    """Whether Hugging Face's ``transformers`` can be imported here (Colab: yes; the book's build: no)."""
    return importlib.util.find_spec("transformers") is not None


@torch.no_grad()
def hf_model(kind: str, state_dict: dict[str, torch.Tensor] | None = None):
    """Hugging Face's model for ``kind`` (needs ``transformers``), in eval mode, float32, holding ``state_dict``
    (all of it: ``strict``), by default :func:`tiny_state_dict`."""
    _check_kind(kind)
    import transformers

    model_class, config_class, kwargs = MODELS[kind]
    config = getattr(transformers, config_class)(**kwargs)
    config._attn_implementation = "eager"  # the plain softmax(q k^T / sqrt(D_h)) v, as in the chapters
    model = getattr(transformers, model_class)(config).float().eval()
    model.load_state_dict(tiny_state_dict(kind) if state_dict is None else state_dict, strict=True)
    return model


@torch.no_grad()
def hf_logits(kind: str, state_dict: dict[str, torch.Tensor] | None = None, ids: torch.Tensor | None = None):
    """The logits (B, T, V) of Hugging Face's model (:func:`hf_model`) on ``ids`` (default: the recorded ones)."""
    ids = reference(kind)["ids"] if ids is None else ids
    return hf_model(kind, state_dict)(ids).logits


def write_reference(out) -> dict:
    """Run ``transformers`` on every tiny checkpoint and write its logits, with the configs, to ``out``."""
    out = output_path("out", out)
    import transformers

    g = torch.Generator().manual_seed(SEED)
    data = {"about": "Hugging Face transformers' logits on transformer_lite.book.hf_reference.tiny_state_dict "
                     "(random weights, seed 0); written by python -m transformer_lite.book.hf_reference",
            "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0], "models": {}}
    for kind in MODELS:
        model = hf_model(kind)
        ids = torch.randint(0, model.config.vocab_size, IDS_SHAPE, generator=g)
        with torch.no_grad():
            logits = model(ids).logits
        config = json.loads(model.config.to_json_string(use_diff=False))
        data["models"][kind] = {"hf_class": MODELS[kind][0], "config": config, "ids": ids.tolist(),
                                "logits": [[[round(x, 6) for x in row] for row in seq] for seq in logits.tolist()]}
    out.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")  # one line: 0.06 MB
    return data


if __name__ == "__main__":  # pragma: no cover - needs transformers
    if len(sys.argv) != 2:
        sys.exit("usage: python -m transformer_lite.book.hf_reference transformer_lite/book/assets/hf_reference.json")
    write_reference(sys.argv[1])
