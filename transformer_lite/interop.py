"""``from_torch``: turn a ``torch.nn`` attention/transformer module into ours, same weights.

Any claim in this book that "ours equals PyTorch's" is a call to
``from_torch`` followed by ``torch.testing.assert_close`` -- a test anyone can run.

PyTorch packs W^Q, W^K, W^V into one ``in_proj_weight`` of shape (3D, D); we
keep them as three Linear layers, so the copy splits it in three.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .attention import MultiHeadAttention
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, activation_name
from .model import EncoderDecoder
from .normalization import LayerNorm


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
