"""``from_torch``: turn a ``torch.nn`` attention/transformer module into ours, same weights.

Any claim in this book that "ours equals PyTorch's" is a call to
``from_torch`` followed by ``torch.testing.assert_close`` -- a test anyone can run.

PyTorch packs W^Q, W^K, W^V into one ``in_proj_weight`` of shape (3D, D); we
keep them as three Linear layers, so the copy splits it in three.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MultiHeadAttention
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer
from .model import EncoderDecoder
from .normalization import LayerNorm


@torch.no_grad()
def _copy_linear(ours: nn.Linear, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    ours.weight.copy_(weight)
    if bias is not None:
        ours.bias.copy_(bias)


def _mha(m: nn.MultiheadAttention) -> MultiHeadAttention:
    if not m.batch_first:
        raise ValueError("from_torch needs nn.MultiheadAttention(batch_first=True); this one has batch_first=False")
    if not m._qkv_same_embed_dim:
        raise ValueError(f"from_torch needs kdim == vdim == embed_dim ({m.embed_dim}), got kdim={m.kdim}, vdim={m.vdim}")
    if m.bias_k is not None or m.add_zero_attn:
        raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
    bias = m.in_proj_bias is not None
    ours = MultiHeadAttention(m.embed_dim, m.num_heads, dropout=m.dropout, bias=bias)
    wq, wk, wv = m.in_proj_weight.chunk(3, dim=0)  # (3D, D) -> three (D, D)
    bq, bk, bv = m.in_proj_bias.chunk(3) if bias else (None, None, None)
    _copy_linear(ours.q_proj, wq, bq)
    _copy_linear(ours.k_proj, wk, bk)
    _copy_linear(ours.v_proj, wv, bv)
    _copy_linear(ours.out_proj, m.out_proj.weight, m.out_proj.bias)
    return ours


@torch.no_grad()
def _layer_norm(m: nn.LayerNorm) -> LayerNorm:
    if len(m.normalized_shape) != 1:
        raise ValueError(f"from_torch supports LayerNorm over the last dimension only, got {m.normalized_shape}")
    ours = LayerNorm(m.normalized_shape[0], eps=m.eps, elementwise_affine=m.weight is not None)
    if m.weight is not None:
        ours.weight.copy_(m.weight)
        ours.bias.copy_(m.bias)
    return ours


def _activation_name(layer) -> str:
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or isinstance(act, nn.GELU):
        return "gelu"
    raise ValueError(f"from_torch supports relu and gelu activations, got {act!r}")


def _layer_kwargs(layer) -> dict:
    return dict(d_model=layer.self_attn.embed_dim, nhead=layer.self_attn.num_heads,
                dim_feedforward=layer.linear1.out_features, dropout=layer.dropout.p,
                activation=_activation_name(layer), layer_norm_eps=layer.norm1.eps, norm_first=layer.norm_first)


def _copy_common(ours, theirs) -> None:
    """Copy the self-attention, the FFN and the norms shared by encoder and decoder layers."""
    ours.self_attn = _mha(theirs.self_attn)
    _copy_linear(ours.ff.linear1, theirs.linear1.weight, theirs.linear1.bias)
    _copy_linear(ours.ff.linear2, theirs.linear2.weight, theirs.linear2.bias)
    for name in ("norm1", "norm2", "norm3"):
        if hasattr(ours, name):
            setattr(ours, name, _layer_norm(getattr(theirs, name)))


def _encoder_layer(m: nn.TransformerEncoderLayer) -> EncoderLayer:
    if not m.self_attn.batch_first:
        raise ValueError("from_torch needs batch_first=True; this TransformerEncoderLayer has batch_first=False")
    ours = EncoderLayer(**_layer_kwargs(m))
    _copy_common(ours, m)
    return ours


def _decoder_layer(m: nn.TransformerDecoderLayer) -> DecoderLayer:
    if not m.self_attn.batch_first:
        raise ValueError("from_torch needs batch_first=True; this TransformerDecoderLayer has batch_first=False")
    ours = DecoderLayer(**_layer_kwargs(m))
    _copy_common(ours, m)
    ours.multihead_attn = _mha(m.multihead_attn)
    return ours


def _stack(cls, layers, norm, convert):
    ours = cls(convert(layers[0]), len(layers), _layer_norm(norm) if norm is not None else None)
    ours.layers = nn.ModuleList(convert(layer) for layer in layers)
    return ours


def _transformer(m: nn.Transformer) -> EncoderDecoder:
    if not m.batch_first:
        raise ValueError("from_torch needs nn.Transformer(batch_first=True); this one has batch_first=False")
    first = m.encoder.layers[0]
    kw = _layer_kwargs(first)
    ours = EncoderDecoder(num_encoder_layers=len(m.encoder.layers), num_decoder_layers=len(m.decoder.layers),
                          final_norm=m.encoder.norm is not None, **kw)
    ours.encoder = _stack(Encoder, m.encoder.layers, m.encoder.norm, _encoder_layer)
    ours.decoder = _stack(Decoder, m.decoder.layers, m.decoder.norm, _decoder_layer)
    return ours


_CONVERTERS = [
    (nn.MultiheadAttention, _mha),
    (nn.TransformerEncoderLayer, _encoder_layer),
    (nn.TransformerDecoderLayer, _decoder_layer),
    (nn.TransformerEncoder, lambda m: _stack(Encoder, m.layers, m.norm, _encoder_layer)),
    (nn.TransformerDecoder, lambda m: _stack(Decoder, m.layers, m.norm, _decoder_layer)),
    (nn.Transformer, _transformer),
    (nn.LayerNorm, _layer_norm),
]


def from_torch(module: nn.Module) -> nn.Module:
    """The ``transformer_lite`` equivalent of a ``torch.nn`` module, with identical weights.

    Supports ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``,
    ``nn.TransformerEncoder``, ``nn.TransformerDecoder``, ``nn.Transformer`` (all ``batch_first=True``)
    and ``nn.LayerNorm``. The result's ``forward`` takes the same tensors and mask keywords and is
    in the same train/eval mode.
    """
    for cls, convert in _CONVERTERS:
        if isinstance(module, cls):
            ours = convert(module)
            ours.train(module.training)
            return ours
    names = ", ".join(c.__name__ for c, _ in _CONVERTERS)
    raise TypeError(f"module must be one of nn.{names}; got {type(module).__name__}")
