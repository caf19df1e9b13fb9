"""Encoder and decoder layers and their stacks (paper §3.1, §3.3).

Each sub-layer is wrapped as Add & Norm. ``norm_first=False`` is the paper's
Post-LN, ``norm_first=True`` is Pre-LN (Xiong et al. 2020):

    Post-LN:  x = LayerNorm(x + Sublayer(x))
    Pre-LN:   x = x + Sublayer(LayerNorm(x))

Names, defaults and positional order follow ``torch.nn.TransformerEncoderLayer``,
``TransformerDecoderLayer``, ``TransformerEncoder`` and ``TransformerDecoder``, so
``from_torch`` can copy weights. What differs from torch:

- batch-first only: tensors are (B, S, D); ``batch_first`` accepts only ``True``;
- ``forward`` takes no ``is_causal`` hints (pass the causal mask itself);
- no ``device``/``dtype`` arguments (use ``.to()``), and the stacks take no
  ``enable_nested_tensor``/``mask_check``;
- ``forward_with_attention`` also returns the attention weights per head;
- ``activation`` is a name: ``"relu"``, ``"gelu"`` or ``"gelu_tanh"`` (torch's
  ``F.relu``, ``nn.ReLU()``, ``F.gelu``, ``nn.GELU()`` and ``nn.GELU(approximate="tanh")``
  are accepted too and stored as these names);
- keyword-only extras torch does not have: ``cache`` (incremental decoding).
"""
from __future__ import annotations

import copy
import functools
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._checks import check_positive_int, check_probability, check_tensor
from .attention import KVCache, MultiHeadAttention
from .normalization import LayerNorm

_ACTIVATIONS = {
    "relu": F.relu,  # the paper
    "gelu": F.gelu,  # BERT, GPT
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),  # GPT-2's tanh approximation of GELU
}
_SUPPORTED = "'relu', 'gelu' or 'gelu_tanh' (or F.relu, nn.ReLU(), F.gelu, nn.GELU(), nn.GELU(approximate='tanh'))"


def activation_name(activation) -> str:
    """The name of a supported activation: a name itself, or one of torch's relu/gelu functions and modules.

    Anything else (``nn.SiLU()``, a lambda, ...) raises a ``ValueError``: nothing is
    silently replaced by a different function.
    """
    if isinstance(activation, str):
        if activation in _ACTIVATIONS:
            return activation
    elif activation is F.relu or activation is torch.relu or type(activation) is nn.ReLU:
        return "relu"
    elif activation is F.gelu:
        return "gelu"
    elif type(activation) is nn.GELU and activation.approximate in ("none", "tanh"):
        return "gelu" if activation.approximate == "none" else "gelu_tanh"
    raise ValueError(f"activation must be {_SUPPORTED}, got {activation!r}")


def _check_batch_first(batch_first) -> None:
    if batch_first is not True:
        raise ValueError(f"batch_first must be True (transformer_lite's tensors are (B, S, D); transpose "
                         f"(S, B, D) inputs with x.transpose(0, 1)), got {batch_first!r}")


class EncoderOutput(NamedTuple):
    """What ``forward_with_attention`` of an encoder layer or stack returns."""

    output: torch.Tensor  # (B, S, D)
    weights: torch.Tensor | list  # self-attention (B, H, S, S); a list of N of them for an Encoder


class DecoderOutput(NamedTuple):
    """What ``forward_with_attention`` of a decoder layer or stack returns."""

    output: torch.Tensor  # (B, T, D)
    self_weights: torch.Tensor | list  # masked self-attention (B, H, T, T); a list of N for a Decoder
    cross_weights: torch.Tensor | list  # cross-attention (B, H, T, S); a list of N for a Decoder


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (paper §3.3), the same MLP at every position.

    Shape: x (B, T, D) -> (B, T, D), through a hidden width ``dim_feedforward`` (the paper's d_ff = 4 D).
    ``activation``: ``"relu"`` (the paper), ``"gelu"`` or ``"gelu_tanh"``; ``bias=False`` drops b1 and b2.
    """

    def __init__(self, d_model: int, dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = "relu",
                 bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("dim_feedforward", dim_feedforward)
        self.activation_name = activation_name(activation)
        self.activation = _ACTIVATIONS[self.activation_name]
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)  # W1: D -> d_ff
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)  # W2: d_ff -> D

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # (B, T, D) -> (B, T, d_ff) -> (B, T, D)


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each with Add & Norm.

    Arguments as ``nn.TransformerEncoderLayer``, in its order; ``bias=False`` removes the
    biases of the attention projections, the FFN and the LayerNorms, as in torch.
    Differences from torch are listed in the module docstring (batch-first only, no ``is_causal``);
    ``cache`` (a :class:`KVCache`) is a keyword-only extra for incremental decoding: the layer run with a
    causal mask is a decoder-only model's layer (chapter 14).

    Shape: src (B, S, D); src_mask (S, S) or (B*H, S, S); src_key_padding_mask (B, S) -> (B, S, D).
    With a cache holding L earlier positions, the masks cover the keys: (S, L + S) and (B, L + S).
    :meth:`forward_with_attention` also returns the self-attention weights (B, H, S, S).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, bias: bool = True):
        super().__init__()
        _check_batch_first(batch_first)
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.ff = FeedForward(d_model, dim_feedforward, dropout, activation, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, *, cache: KVCache | None = None) -> torch.Tensor:
        return self._forward(src, src_mask, src_key_padding_mask, cache, need_weights=False).output

    def forward_with_attention(self, src, src_mask=None, src_key_padding_mask=None, *, cache=None) -> EncoderOutput:
        """``forward``'s output and the self-attention weights (B, H, S, S)."""
        return self._forward(src, src_mask, src_key_padding_mask, cache, need_weights=True)

    def _forward(self, src, src_mask, src_key_padding_mask, cache, need_weights: bool) -> EncoderOutput:
        check_tensor("src", src, ndim=3, last_dim=self.d_model)
        x = src
        if self.norm_first:  # Pre-LN
            sa, weights = self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, cache, need_weights)
            x = x + sa
            x = x + self._ff_block(self.norm2(x))
        else:  # Post-LN (the paper)
            sa, weights = self._sa_block(x, src_mask, src_key_padding_mask, cache, need_weights)
            x = self.norm1(x + sa)
            x = self.norm2(x + self._ff_block(x))
        return EncoderOutput(x, weights)

    def _sa_block(self, x, attn_mask, key_padding_mask, cache, need_weights):
        out, weights = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                                      need_weights=need_weights, cache=cache)
        return self.dropout1(out), weights

    def _ff_block(self, x):
        return self.dropout2(self.ff(x))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder's output, then the FFN; each with Add & Norm.

    Arguments as ``nn.TransformerDecoderLayer``, in its order; ``bias=False`` as in torch.
    Differences from torch are listed in the module docstring (batch-first only, no
    ``tgt_is_causal``/``memory_is_causal``); ``cache`` = (self-attention KVCache,
    cross-attention KVCache) is a keyword-only extra for incremental decoding.

    Shape: tgt (B, T, D), memory (B, S, D); tgt_mask (T, T); memory_mask (T, S);
    tgt_key_padding_mask (B, T); memory_key_padding_mask (B, S) -> (B, T, D).
    :meth:`forward_with_attention` also returns the self- (B, H, T, T) and cross-attention (B, H, T, S) weights.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, bias: bool = True):
        super().__init__()
        _check_batch_first(batch_first)
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)  # cross-attention
        self.ff = FeedForward(d_model, dim_feedforward, dropout, activation, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, *, cache: tuple[KVCache, KVCache] | None = None) -> torch.Tensor:
        return self._forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                             cache, need_weights=False).output

    def forward_with_attention(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                               memory_key_padding_mask=None, *, cache=None) -> DecoderOutput:
        """``forward``'s output, the self-attention (B, H, T, T) and the cross-attention (B, H, T, S) weights."""
        return self._forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                             cache, need_weights=True)

    def _forward(self, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                 cache, need_weights: bool) -> DecoderOutput:
        check_tensor("tgt", tgt, ndim=3, last_dim=self.d_model)
        check_tensor("memory", memory, ndim=3, last_dim=self.d_model)
        self_cache, cross_cache = cache if cache is not None else (None, None)
        x, need = tgt, need_weights
        if self.norm_first:  # Pre-LN
            sa, ws = self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, self_cache, need)
            x = x + sa
            ca, wc = self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, cross_cache, need)
            x = x + ca
            x = x + self._ff_block(self.norm3(x))
        else:  # Post-LN (the paper)
            sa, ws = self._sa_block(x, tgt_mask, tgt_key_padding_mask, self_cache, need)
            x = self.norm1(x + sa)
            ca, wc = self._mha_block(x, memory, memory_mask, memory_key_padding_mask, cross_cache, need)
            x = self.norm2(x + ca)
            x = self.norm3(x + self._ff_block(x))
        return DecoderOutput(x, ws, wc)

    def _sa_block(self, x, attn_mask, key_padding_mask, cache, need_weights):
        out, weights = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                                      need_weights=need_weights, cache=cache)
        return self.dropout1(out), weights

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, cache, need_weights):
        # Q from the decoder, K and V from the encoder's output.
        out, weights = self.multihead_attn(x, memory, memory, key_padding_mask=key_padding_mask,
                                           attn_mask=attn_mask, need_weights=need_weights, cache=cache)
        return self.dropout2(out), weights

    def _ff_block(self, x):
        return self.dropout3(self.ff(x))


def _clones(layer: nn.Module, num_layers: int) -> nn.ModuleList:
    check_positive_int("num_layers", num_layers)
    return nn.ModuleList(copy.deepcopy(layer) for _ in range(num_layers))


class Encoder(nn.Module):
    """N copies of an :class:`EncoderLayer`, then an optional final LayerNorm (needed by Pre-LN stacks).

    Arguments as ``nn.TransformerEncoder`` (without ``enable_nested_tensor``/``mask_check``);
    ``forward`` as its forward without ``is_causal``, plus the keyword-only ``cache`` (one
    :class:`KVCache` per layer, from :meth:`new_cache`; for a decoder-only model, chapter 14).

    Shape: src (B, S, D) -> (B, S, D); :meth:`forward_with_attention` also returns a list of N weights (B, H, S, S).
    """

    def __init__(self, encoder_layer: EncoderLayer, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        if not isinstance(encoder_layer, EncoderLayer):
            raise TypeError(f"encoder_layer must be an EncoderLayer, got {type(encoder_layer).__name__}")
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, *, cache: list | None = None) -> torch.Tensor:
        return self._forward(src, mask, src_key_padding_mask, cache, need_weights=False).output

    def forward_with_attention(self, src, mask=None, src_key_padding_mask=None, *,
                               cache: list | None = None) -> EncoderOutput:
        """``forward``'s output and every layer's self-attention weights, a list of N (B, H, S, S)."""
        return self._forward(src, mask, src_key_padding_mask, cache, need_weights=True)

    def _forward(self, src, mask, src_key_padding_mask, cache, need_weights: bool) -> EncoderOutput:
        if cache is not None and len(cache) != self.num_layers:
            raise ValueError(f"cache must hold one entry per layer ({self.num_layers}), got {len(cache)}")
        x, weights = src, []
        for i, layer in enumerate(self.layers):
            c = cache[i] if cache is not None else None
            if need_weights:
                x, w = layer.forward_with_attention(x, mask, src_key_padding_mask, cache=c)
                weights.append(w)
            else:
                x = layer(x, mask, src_key_padding_mask, cache=c)
        if self.norm is not None:
            x = self.norm(x)
        return EncoderOutput(x, weights)

    def new_cache(self) -> list[KVCache]:
        """An empty cache for incremental decoding: one :class:`KVCache` per layer."""
        return [KVCache() for _ in range(self.num_layers)]


class Decoder(nn.Module):
    """N copies of a :class:`DecoderLayer`, then an optional final LayerNorm.

    Arguments as ``nn.TransformerDecoder``; ``forward`` as its forward without
    ``tgt_is_causal``/``memory_is_causal``, plus the keyword-only ``cache`` (one entry per
    layer, from :meth:`new_cache`).

    Shape: tgt (B, T, D), memory (B, S, D) -> (B, T, D); :meth:`forward_with_attention` also
    returns two lists of N weights: self-attention (B, H, T, T) and cross-attention (B, H, T, S).
    """

    def __init__(self, decoder_layer: DecoderLayer, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        if not isinstance(decoder_layer, DecoderLayer):
            raise TypeError(f"decoder_layer must be a DecoderLayer, got {type(decoder_layer).__name__}")
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, *, cache: list | None = None) -> torch.Tensor:
        return self._forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                             cache, need_weights=False).output

    def forward_with_attention(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                               memory_key_padding_mask=None, *, cache: list | None = None) -> DecoderOutput:
        """``forward``'s output and every layer's self- and cross-attention weights (two lists of N)."""
        return self._forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                             cache, need_weights=True)

    def _forward(self, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                 cache, need_weights: bool) -> DecoderOutput:
        if cache is not None and len(cache) != self.num_layers:
            raise ValueError(f"cache must hold one entry per layer ({self.num_layers}), got {len(cache)}")
        masks = (tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)
        x, self_weights, cross_weights = tgt, [], []
        for i, layer in enumerate(self.layers):
            c = cache[i] if cache is not None else None
            if need_weights:
                x, ws, wc = layer.forward_with_attention(x, memory, *masks, cache=c)
                self_weights.append(ws)
                cross_weights.append(wc)
            else:
                x = layer(x, memory, *masks, cache=c)
        if self.norm is not None:
            x = self.norm(x)
        return DecoderOutput(x, self_weights, cross_weights)

    def new_cache(self) -> list[tuple[KVCache, KVCache]]:
        """An empty cache for incremental decoding: per layer (self-attention, cross-attention)."""
        return [(KVCache(static=False), KVCache(static=True)) for _ in range(self.num_layers)]
