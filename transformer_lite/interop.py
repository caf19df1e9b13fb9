"""``from_torch``: turn a ``torch.nn`` attention/transformer module into ours, same weights; and
``from_hf_gpt2`` / ``from_hf_qwen2``: load a Hugging Face GPT-2 or Qwen2 checkpoint into ``DecoderOnlyLM`` /
``ModernLM`` (chapters 14 and 15).

Any claim in this book that "ours equals PyTorch's" is a call to
``from_torch`` followed by ``torch.testing.assert_close`` -- a test anyone can run.

PyTorch packs W^Q, W^K, W^V into one ``in_proj_weight`` of shape (3D, D); we
keep them as three Linear layers, so the copy splits it in three.
"""
from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn as nn

from ._checks import check_number, check_positive_int
from .attention import MultiHeadAttention
from .language_models import DecoderOnlyLM, LanguageModel
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, activation_name
from .model import EncoderDecoder
from .modern import ModernLM
from .normalization import LayerNorm

_MISSING = object()  # "no default": a config key that must be present


def _check_type(module, cls, name: str) -> None:
    """Only the torch class itself: a subclass may compute something else in its own ``forward``."""
    if type(module) is not cls:
        raise ValueError(f"from_torch needs {name} to be an nn.{cls.__name__}, got {type(module).__name__}")


@torch.no_grad()
def _linear(m: nn.Module, name: str) -> nn.Linear:
    if not isinstance(m, nn.Linear):
        raise ValueError(f"from_torch needs {name} to be an nn.Linear, got {type(m).__name__}")
    ours = nn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
    ours.weight.copy_(m.weight)
    if m.bias is not None:
        ours.bias.copy_(m.bias)
    return ours


@torch.no_grad()
def _mha(m: nn.MultiheadAttention, name: str = "module") -> MultiHeadAttention:
    _check_type(m, nn.MultiheadAttention, name)
    if not m._qkv_same_embed_dim:
        raise ValueError(f"from_torch needs {name} with kdim == vdim == embed_dim ({m.embed_dim}), "
                         f"got kdim={m.kdim}, vdim={m.vdim}")
    if m.bias_k is not None:
        raise ValueError(f"from_torch does not support {name} with add_bias_kv=True")
    if m.add_zero_attn:
        raise ValueError(f"from_torch does not support {name} with add_zero_attn=True")
    bias = m.in_proj_bias is not None
    ours = MultiHeadAttention(m.embed_dim, m.num_heads, dropout=m.dropout, bias=bias)
    wq, wk, wv = m.in_proj_weight.chunk(3, dim=0)  # (3D, D) -> three (D, D)
    bq, bk, bv = m.in_proj_bias.chunk(3) if bias else (None, None, None)
    for proj, w, b in ((ours.q_proj, wq, bq), (ours.k_proj, wk, bk), (ours.v_proj, wv, bv)):
        proj.weight.copy_(w)
        if b is not None:
            proj.bias.copy_(b)
    ours.out_proj = _linear(m.out_proj, f"{name}.out_proj")
    return ours


@torch.no_grad()
def _layer_norm(m: nn.LayerNorm, name: str = "module") -> LayerNorm:
    _check_type(m, nn.LayerNorm, name)
    if len(m.normalized_shape) != 1:
        raise ValueError(f"from_torch supports {name} over the last dimension only, "
                         f"got normalized_shape={tuple(m.normalized_shape)}")
    ours = LayerNorm(m.normalized_shape[0], eps=m.eps, elementwise_affine=m.elementwise_affine,
                     bias=m.bias is not None)
    if m.weight is not None:
        ours.weight.copy_(m.weight)
    if m.bias is not None:
        ours.bias.copy_(m.bias)
    return ours


def _layer(m, name: str):
    """An EncoderLayer or DecoderLayer with the converted parts of torch's layer ``m``."""
    cls, norms, attentions = {
        nn.TransformerEncoderLayer: (EncoderLayer, ("norm1", "norm2"), ("self_attn",)),
        nn.TransformerDecoderLayer: (DecoderLayer, ("norm1", "norm2", "norm3"), ("self_attn", "multihead_attn")),
    }[type(m)]
    try:
        activation = activation_name(m.activation)
    except ValueError as err:
        raise ValueError(f"from_torch cannot convert {name}.activation: {err}") from None
    parts = {a: _mha(getattr(m, a), f"{name}.{a}") for a in attentions}
    parts.update({n: _layer_norm(getattr(m, n), f"{name}.{n}") for n in norms})
    linear1, linear2 = _linear(m.linear1, f"{name}.linear1"), _linear(m.linear2, f"{name}.linear2")
    ours = cls(parts["self_attn"].d_model, parts["self_attn"].nhead, dim_feedforward=linear1.out_features,
               dropout=m.dropout.p, activation=activation, layer_norm_eps=parts["norm1"].eps,
               norm_first=m.norm_first, bias=linear1.bias is not None)
    for attr, module in parts.items():  # each part keeps its own settings (bias, eps)
        setattr(ours, attr, module)
    ours.ff.linear1, ours.ff.linear2 = linear1, linear2
    return ours


def _stack(m, name: str):
    """An Encoder or Decoder: every layer converted, and the final norm if there is one."""
    cls, layer_cls = {nn.TransformerEncoder: (Encoder, nn.TransformerEncoderLayer),
                      nn.TransformerDecoder: (Decoder, nn.TransformerDecoderLayer)}[type(m)]
    if len(m.layers) == 0:
        raise ValueError(f"from_torch needs {name} with at least one layer, got num_layers=0")
    layers = []
    for i, layer in enumerate(m.layers):
        _check_type(layer, layer_cls, f"{name}.layers[{i}]")
        layers.append(_layer(layer, f"{name}.layers[{i}]"))
    norm = None if m.norm is None else _layer_norm(m.norm, f"{name}.norm")
    ours = cls(layers[0], len(layers), norm)
    ours.layers = nn.ModuleList(layers)
    return ours


def _transformer(m: nn.Transformer, name: str) -> EncoderDecoder:
    _check_type(m.encoder, nn.TransformerEncoder, f"{name}.encoder (a custom_encoder)")
    _check_type(m.decoder, nn.TransformerDecoder, f"{name}.decoder (a custom_decoder)")
    encoder, decoder = _stack(m.encoder, f"{name}.encoder"), _stack(m.decoder, f"{name}.decoder")
    first = encoder.layers[0]
    ours = EncoderDecoder(m.d_model, m.nhead, len(encoder.layers), len(decoder.layers),
                          first.ff.linear1.out_features, first.dropout1.p, first.ff.activation_name,
                          norm_first=first.norm_first, bias=first.ff.linear1.bias is not None,
                          final_norm=encoder.norm is not None)
    ours.encoder, ours.decoder = encoder, decoder  # each stack as converted, final norm or not
    return ours


_CONVERTERS = {
    nn.MultiheadAttention: _mha,
    nn.TransformerEncoderLayer: _layer,
    nn.TransformerDecoderLayer: _layer,
    nn.TransformerEncoder: _stack,
    nn.TransformerDecoder: _stack,
    nn.Transformer: _transformer,
    nn.LayerNorm: _layer_norm,
}


def from_torch(module: nn.Module) -> nn.Module:
    """The ``transformer_lite`` equivalent of a ``torch.nn`` module, with identical weights.

    Converts ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``,
    ``nn.TransformerEncoder``, ``nn.TransformerDecoder``, ``nn.Transformer`` and ``nn.LayerNorm``
    (the classes themselves, not subclasses). The result is in the same train/eval mode and
    computes the same function:

    - **The result is batch-first**, whatever the module's ``batch_first``: the weights do not
      depend on the layout, so a ``batch_first=False`` module converts too; give ours
      (B, S, D) where torch's took (S, B, D) (``x.transpose(0, 1)``).
    - ``bias=False`` (no biases in the projections, the FFN and the LayerNorms) converts exactly;
      so do any eps, ``norm_first``, and a final norm present or absent in each stack.
    - Activations: ``"relu"``/``F.relu``/``nn.ReLU()``, ``"gelu"``/``F.gelu``/``nn.GELU()`` and
      ``nn.GELU(approximate="tanh")`` (ours: ``"gelu_tanh"``). Any other activation raises a
      ``ValueError``; none is replaced by something else.
    - Refused with a ``ValueError`` that names the part: ``kdim``/``vdim`` different from
      ``embed_dim``, ``add_bias_kv``, ``add_zero_attn``, a LayerNorm over more than one dimension,
      a norm or sub-layer that is not the torch class (e.g. ``nn.RMSNorm``), and a
      ``custom_encoder``/``custom_decoder`` that is not an ``nn.TransformerEncoder``/``Decoder``.

    The computation reproduced is the one the module's Python ``forward`` defines. torch's own
    inference fast path (eval mode, no autograd) departs from it in two places: it treats every
    ``nn.GELU`` as exact GELU, and ``nn.TransformerEncoder`` with ``enable_nested_tensor=True`` returns
    0 at padding positions.
    """
    convert = _CONVERTERS.get(type(module))
    if convert is None:
        for cls in _CONVERTERS:
            if isinstance(module, cls):
                raise ValueError(f"from_torch converts nn.{cls.__name__} itself, not its subclass "
                                 f"{type(module).__name__} (whose forward may compute something else)")
        names = ", nn.".join(c.__name__ for c in _CONVERTERS)
        raise TypeError(f"module must be one of nn.{names}; got {type(module).__name__}")
    ours = convert(module, type(module).__name__)
    ours.train(module.training)
    return ours


# --- Hugging Face checkpoints -------------------------------------------------------------------------------------
# A checkpoint is a state dict (name -> tensor) and a config (Hugging Face's config.json). The converters read only
# plain tensors and values, so the package never imports `transformers`: pass `hf_model.state_dict()` and
# `hf_model.config`, or the tensors of a safetensors file and the dict of its config.json.

def _hf_config(config) -> dict:
    """A config as a plain dict: a mapping (config.json) or an object with ``to_dict()`` (a transformers config)."""
    if hasattr(config, "to_dict") and not isinstance(config, Mapping):
        config = config.to_dict()
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping of config.json's keys or a transformers config (with to_dict()), "
                        f"got {type(config).__name__}")
    return dict(config)


def _hf_value(config: dict, key: str, kind, default=_MISSING):
    """``config[key]``, checked: a positive int, a positive float, a bool or a str (``kind``)."""
    if key not in config or (config[key] is None and default is not _MISSING):
        if default is _MISSING:
            raise ValueError(f"config is missing {key!r}")
        return default
    value = config[key]
    if kind is int:
        return check_positive_int(f"config[{key!r}]", value)
    if kind is float:
        return check_number(f"config[{key!r}]", value, positive=True)
    if not isinstance(value, kind):
        raise TypeError(f"config[{key!r}] must be a {kind.__name__}, got {type(value).__name__}")
    return value


class _Tensors:
    """The state dict's tensors under their names without ``prefix``; each read checks the shape and is ticked off."""

    def __init__(self, state_dict, prefix: str, ignore: tuple[str, ...] = ()):
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping of names to tensors, got {type(state_dict).__name__}")
        self.tensors = {}
        for key, value in state_dict.items():
            if not isinstance(key, str) or not isinstance(value, torch.Tensor):
                raise TypeError(f"state_dict must map names (str) to tensors, got {key!r}: {type(value).__name__}")
            if not key.endswith(ignore):  # buffers some versions save with the weights (masks, RoPE's angles)
                self.tensors[key.removeprefix(prefix)] = value
        self.prefix, self.unused = prefix, set(self.tensors)

    def __contains__(self, key: str) -> bool:
        return key in self.tensors

    def get(self, key: str, shape: tuple[int, ...]) -> torch.Tensor:
        full = key if key == "lm_head.weight" else self.prefix + key  # the output layer sits outside the prefix
        if key not in self.tensors:
            raise ValueError(f"state_dict is missing {full!r}" + (f" (or {key!r})" if full != key else ""))
        t = self.tensors[key]
        if tuple(t.shape) != shape:
            raise ValueError(f"state_dict[{full!r}] has shape {tuple(t.shape)}, but the config's sizes need {shape}")
        self.unused.discard(key)
        return t

    def check_all_used(self) -> None:
        if self.unused:
            names = ", ".join(repr(k) for k in sorted(self.unused)[:5])
            raise ValueError(f"state_dict has {len(self.unused)} tensors this architecture does not have: {names}"
                             + (" ..." if len(self.unused) > 5 else ""))


_GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


@torch.no_grad()
def from_hf_gpt2(state_dict, config) -> LanguageModel:
    """A :func:`~transformer_lite.language_models.DecoderOnlyLM` holding a Hugging Face GPT-2 checkpoint.

    ``state_dict``: GPT-2's tensors (``GPT2LMHeadModel.state_dict()``, with or without the ``transformer.`` prefix,
    or a safetensors file's); ``config``: its config (a ``GPT2Config`` or config.json's dict). What differs from
    our modules, and how it is read:

    - GPT-2's layers are ``Conv1D`` modules that store their weight as (in, out), the transpose of
      ``nn.Linear``'s (out, in): every matrix is transposed;
    - ``attn.c_attn`` holds W^Q, W^K, W^V side by side in one (D, 3D) matrix: split into q_proj, k_proj, v_proj;
    - ``wpe`` is the learned position table, ``ln_f`` the final LayerNorm of Pre-LN, ``lm_head`` the token
      embedding itself (tied) unless ``tie_word_embeddings`` is False;
    - ``activation_function`` "gelu_new" is the tanh approximation of GELU (ours: ``"gelu_tanh"``); the LayerNorms'
      eps is ``layer_norm_epsilon`` (1e-5).

    GPT-2 has no padding token, so no id is masked as padding (``pad_id=-1``). Returned in eval mode, float32.
    A missing tensor, a tensor of the wrong shape, a tensor GPT-2 does not have, or a config this model cannot
    reproduce (another activation, cross-attention, ``scale_attn_by_inverse_layer_idx``) raises a ``ValueError``.
    """
    cfg = _hf_config(config)
    V, T = _hf_value(cfg, "vocab_size", int), _hf_value(cfg, "n_positions", int)
    D, N, H = _hf_value(cfg, "n_embd", int), _hf_value(cfg, "n_layer", int), _hf_value(cfg, "n_head", int)
    F_ = _hf_value(cfg, "n_inner", int, default=4 * D)
    eps = _hf_value(cfg, "layer_norm_epsilon", float, default=1e-5)
    act = _hf_value(cfg, "activation_function", str, default="gelu_new")
    tied = _hf_value(cfg, "tie_word_embeddings", bool, default=True)
    if act not in _GPT2_ACTIVATIONS:
        raise ValueError(f"config['activation_function'] must be one of {sorted(_GPT2_ACTIVATIONS)}, got {act!r}")
    for key, works in (("add_cross_attention", False), ("scale_attn_by_inverse_layer_idx", False),
                       ("scale_attn_weights", True)):
        if cfg.get(key, works) != works:
            raise ValueError(f"config[{key!r}] = {cfg[key]!r} is not supported (DecoderOnlyLM needs {works})")
    if D % H:
        raise ValueError(f"config's n_embd ({D}) must be divisible by n_head ({H})")
    sd = _Tensors(state_dict, "transformer.", ignore=(".attn.bias", ".attn.masked_bias"))
    ours = DecoderOnlyLM(V, d_model=D, nhead=H, num_layers=N, dim_feedforward=F_, dropout=0.0,
                         activation=_GPT2_ACTIVATIONS[act], norm_first=True, max_len=T, pad_id=-1,
                         tie_embeddings=tied, layer_norm_eps=eps)
    ours.token_embedding.weight.copy_(sd.get("wte.weight", (V, D)))
    ours.position.position.weight.copy_(sd.get("wpe.weight", (T, D)))
    for i, layer in enumerate(ours.layers.layers):
        h = f"h.{i}."
        attn = layer.self_attn
        wq, wk, wv = sd.get(h + "attn.c_attn.weight", (D, 3 * D)).T.chunk(3, dim=0)  # (D, 3D) -> three (D, D)
        bq, bk, bv = sd.get(h + "attn.c_attn.bias", (3 * D,)).chunk(3)
        for proj, w, b in ((attn.q_proj, wq, bq), (attn.k_proj, wk, bk), (attn.v_proj, wv, bv)):
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        for linear, name, shape in ((attn.out_proj, "attn.c_proj", (D, D)), (layer.ff.linear1, "mlp.c_fc", (D, F_)),
                                    (layer.ff.linear2, "mlp.c_proj", (F_, D))):
            linear.weight.copy_(sd.get(h + name + ".weight", shape).T)  # Conv1D's (in, out) -> Linear's (out, in)
            linear.bias.copy_(sd.get(h + name + ".bias", shape[1:]))
        for norm, name in ((layer.norm1, "ln_1"), (layer.norm2, "ln_2")):
            norm.weight.copy_(sd.get(h + name + ".weight", (D,)))
            norm.bias.copy_(sd.get(h + name + ".bias", (D,)))
    ours.layers.norm.weight.copy_(sd.get("ln_f.weight", (D,)))
    ours.layers.norm.bias.copy_(sd.get("ln_f.bias", (D,)))
    _read_output(sd, ours.output, tied, ours.token_embedding.weight, (V, D))
    sd.check_all_used()
    return ours.eval()


def _read_output(sd: _Tensors, output: nn.Linear, tied: bool, embedding: torch.Tensor, shape) -> None:
    """The output layer: the embedding itself when tied (a saved copy must equal it), else ``lm_head.weight``."""
    if tied:
        if "lm_head.weight" in sd and not torch.equal(sd.get("lm_head.weight", shape).to(embedding), embedding):
            raise ValueError("config['tie_word_embeddings'] is True but state_dict['lm_head.weight'] differs from "
                             "the token embedding")
        return
    output.weight.copy_(sd.get("lm_head.weight", shape))
    if output.bias is not None:
        output.bias.zero_()  # Hugging Face's output layers have no bias


def _rope_theta(cfg: dict) -> float:
    """RoPE's base: ``rope_theta`` (transformers 4) or ``rope_parameters["rope_theta"]`` (5), unscaled only."""
    params = cfg.get("rope_parameters") or {}
    if not isinstance(params, Mapping):
        raise TypeError(f"config['rope_parameters'] must be a dict, got {type(params).__name__}")
    scaling = cfg.get("rope_scaling") or {}
    kind = params.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    if kind != "default":
        raise ValueError(f"config's RoPE type {kind!r} is not supported: ModernLM turns q and k by unscaled angles "
                         f"('default')")
    theta = params.get("rope_theta", cfg.get("rope_theta"))
    if theta is None:
        raise ValueError("config is missing 'rope_theta' (or rope_parameters['rope_theta'])")
    return check_number("config['rope_theta']", theta, positive=True)


def _rotate_half_to_pairs(w: torch.Tensor, heads: int) -> torch.Tensor:
    """Reorder each head's features from Hugging Face's RoPE layout to ours (rows of W_Q, W_K, or their biases).

    Hugging Face's ``rotate_half`` turns feature j with feature j + D_h/2; :func:`rotary` turns 2i with 2i + 1, at
    the same angle pos * theta_i. Putting HF's features i and i + D_h/2 at our places 2i and 2i + 1 gives the same
    rotated q and k, reordered alike, so every q . k, and the attention, is unchanged.
    """
    d_h = w.shape[0] // heads
    order = torch.arange(d_h).view(2, d_h // 2).T.reshape(-1)  # [0, D_h/2, 1, D_h/2 + 1, ...]
    return w.view(heads, d_h, *w.shape[1:])[:, order].reshape(w.shape)


@torch.no_grad()
def from_hf_qwen2(state_dict, config) -> ModernLM:
    """A :class:`~transformer_lite.modern.ModernLM` holding a Hugging Face Qwen2 / Qwen2.5 checkpoint.

    ``state_dict``: ``Qwen2ForCausalLM.state_dict()`` (or a safetensors file's tensors; ``model.`` prefix optional);
    ``config``: a ``Qwen2Config`` or config.json's dict. How it is read:

    - RMSNorm with ``rms_norm_eps``; biases on the q, k, v projections, none on o (``qkv_bias=True``);
    - ``num_key_value_heads`` key/value heads shared by the query heads (GQA);
    - RoPE with base ``rope_theta``, in Hugging Face's ``rotate_half`` layout (feature j turns with j + D_h/2):
      the rows of W_Q, W_K and their biases are reordered per head to our adjacent pairs
      (:func:`_rotate_half_to_pairs`), which leaves every attention score unchanged;
    - SwiGLU: gate_proj, up_proj, down_proj are our w1, w3, w2;
    - the output layer is the embedding when ``tie_word_embeddings`` (Qwen2.5-0.5B), else ``lm_head``.

    Returned in eval mode, float32. A missing or extra tensor, a wrong shape, or what ModernLM does not have
    (sliding-window layers, scaled RoPE, another activation, a head_dim other than hidden_size / heads) raises a
    ``ValueError``.
    """
    cfg = _hf_config(config)
    V, D = _hf_value(cfg, "vocab_size", int), _hf_value(cfg, "hidden_size", int)
    N, H = _hf_value(cfg, "num_hidden_layers", int), _hf_value(cfg, "num_attention_heads", int)
    H_kv = _hf_value(cfg, "num_key_value_heads", int, default=H)
    F_ = _hf_value(cfg, "intermediate_size", int)
    eps = _hf_value(cfg, "rms_norm_eps", float)
    tied = _hf_value(cfg, "tie_word_embeddings", bool)
    theta = _rope_theta(cfg)
    if _hf_value(cfg, "hidden_act", str, default="silu") != "silu":
        raise ValueError(f"config['hidden_act'] must be 'silu' (SwiGLU's gate), got {cfg['hidden_act']!r}")
    if cfg.get("use_sliding_window") or "sliding_attention" in (cfg.get("layer_types") or ()):
        raise ValueError("config uses sliding-window attention, which ModernLM does not have")
    if D % H or H % H_kv:
        raise ValueError(f"config's hidden_size ({D}) must be divisible by num_attention_heads ({H}), and that by "
                         f"num_key_value_heads ({H_kv})")
    D_h = D // H
    if cfg.get("head_dim") not in (None, D_h):
        raise ValueError(f"config['head_dim'] must be hidden_size / num_attention_heads = {D_h}, got {cfg['head_dim']}")
    sd = _Tensors(state_dict, "model.", ignore=("rotary_emb.inv_freq",))
    ours = ModernLM(V, D, nhead=H, num_kv_heads=H_kv, num_layers=N, dim_feedforward=F_, tie_embeddings=tied,
                    qkv_bias=True, norm_eps=eps, rope_base=theta)
    ours.token_embedding.weight.copy_(sd.get("embed_tokens.weight", (V, D)))
    for i, block in enumerate(ours.layers):
        p, attn, ffn = f"layers.{i}.", block.attention, block.feed_forward
        for proj, name, heads in ((attn.q_proj, "q_proj", H), (attn.k_proj, "k_proj", H_kv),
                                  (attn.v_proj, "v_proj", 0)):
            w = sd.get(f"{p}self_attn.{name}.weight", (proj.out_features, D))
            b = sd.get(f"{p}self_attn.{name}.bias", (proj.out_features,))
            if heads:  # q and k: HF's rotate_half layout -> our adjacent pairs (v is not rotated)
                w, b = _rotate_half_to_pairs(w, heads), _rotate_half_to_pairs(b, heads)
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        attn.out_proj.weight.copy_(sd.get(p + "self_attn.o_proj.weight", (D, D)))
        ffn.w1.weight.copy_(sd.get(p + "mlp.gate_proj.weight", (F_, D)))
        ffn.w3.weight.copy_(sd.get(p + "mlp.up_proj.weight", (F_, D)))
        ffn.w2.weight.copy_(sd.get(p + "mlp.down_proj.weight", (D, F_)))
        block.attention_norm.weight.copy_(sd.get(p + "input_layernorm.weight", (D,)))
        block.ffn_norm.weight.copy_(sd.get(p + "post_attention_layernorm.weight", (D,)))
    ours.norm.weight.copy_(sd.get("norm.weight", (D,)))
    _read_output(sd, ours.output, tied, ours.token_embedding.weight, (V, D))
    sd.check_all_used()
    return ours.eval()
