"""Encoder and decoder layers and their stacks (paper §3.1, §3.3).

Each sub-layer is wrapped as Add & Norm. ``norm_first=False`` is the paper's
Post-LN, ``norm_first=True`` is Pre-LN (Xiong et al. 2020):

    Post-LN:  x = LayerNorm(x + Sublayer(x))
    Pre-LN:   x = x + Sublayer(LayerNorm(x))

Names and defaults follow ``torch.nn.TransformerEncoderLayer`` /
``TransformerDecoderLayer`` (batch-first), so ``from_torch`` can copy weights.
"""
from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._checks import check_positive_int, check_probability, check_tensor
from .attention import KVCache, MultiHeadAttention
from .normalization import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(name):
    if not isinstance(name, str) or name not in _ACTIVATIONS:
        raise ValueError(f"activation must be 'relu' or 'gelu', got {name!r}")
    return _ACTIVATIONS[name]


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (paper §3.3), the same MLP at every position.

    Shape: x (B, T, D) -> (B, T, D), through a hidden width ``dim_feedforward`` (the paper's d_ff = 4 D).
    """

    def __init__(self, d_model: int, dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = "relu"):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("dim_feedforward", dim_feedforward)
        self.activation_name = activation
        self.activation = _activation(activation)
        self.linear1 = nn.Linear(d_model, dim_feedforward)  # W1: D -> d_ff
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.linear2 = nn.Linear(dim_feedforward, d_model)  # W2: d_ff -> D

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # (B, T, D) -> (B, T, d_ff) -> (B, T, D)


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each with Add & Norm.

    Shape: src (B, S, D); src_mask (S, S) or (B*H, S, S); src_key_padding_mask (B, S) -> (B, S, D).
    With ``return_attention=True`` also returns the self-attention weights (B, H, S, S).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, norm_first: bool = False):
        super().__init__()
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout)
        self.ff = FeedForward(d_model, dim_feedforward, dropout, activation)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, return_attention: bool = False):
        check_tensor("src", src, ndim=3, last_dim=self.d_model)
        x, w = src, None
        if self.norm_first:  # Pre-LN
            sa, w = self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, return_attention)
            x = x + sa
            x = x + self._ff_block(self.norm2(x))
        else:  # Post-LN (the paper)
            sa, w = self._sa_block(x, src_mask, src_key_padding_mask, return_attention)
            x = self.norm1(x + sa)
            x = self.norm2(x + self._ff_block(x))
        return (x, w) if return_attention else x

    def _sa_block(self, x, attn_mask, key_padding_mask, need_weights):
        out, w = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=need_weights)
        return self.dropout1(out), w

    def _ff_block(self, x):
        return self.dropout2(self.ff(x))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder's output, then the FFN; each with Add & Norm.

    Shape: tgt (B, T, D), memory (B, S, D); tgt_mask (T, T); memory_mask (T, S);
    tgt_key_padding_mask (B, T); memory_key_padding_mask (B, S) -> (B, T, D).
    With ``return_attention=True`` also returns the self- (B, H, T, T) and cross-attention (B, H, T, S) weights.
    ``cache`` = (self-attention KVCache, cross-attention KVCache) for incremental decoding.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, norm_first: bool = False):
        super().__init__()
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout=dropout)  # cross-attention
        self.ff = FeedForward(d_model, dim_feedforward, dropout, activation)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, cache: tuple[KVCache, KVCache] | None = None,
                return_attention: bool = False):
        check_tensor("tgt", tgt, ndim=3, last_dim=self.d_model)
        check_tensor("memory", memory, ndim=3, last_dim=self.d_model)
        self_cache, cross_cache = cache if cache is not None else (None, None)
        x, need = tgt, return_attention
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
        return (x, ws, wc) if return_attention else x

    def _sa_block(self, x, attn_mask, key_padding_mask, cache, need_weights):
        out, w = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                                need_weights=need_weights, cache=cache)
        return self.dropout1(out), w

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, cache, need_weights):
        # Q from the decoder, K and V from the encoder's output.
        out, w = self.multihead_attn(x, memory, memory, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                                     need_weights=need_weights, cache=cache)
        return self.dropout2(out), w

    def _ff_block(self, x):
        return self.dropout3(self.ff(x))


def _clones(layer: nn.Module, num_layers: int) -> nn.ModuleList:
    check_positive_int("num_layers", num_layers)
    return nn.ModuleList(copy.deepcopy(layer) for _ in range(num_layers))


class Encoder(nn.Module):
    """N copies of an :class:`EncoderLayer`, then an optional final LayerNorm (needed by Pre-LN stacks).

    Shape: src (B, S, D) -> (B, S, D); with ``return_attention`` also a list of N weights (B, H, S, S).
    """

    def __init__(self, encoder_layer: EncoderLayer, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        if not isinstance(encoder_layer, EncoderLayer):
            raise TypeError(f"encoder_layer must be an EncoderLayer, got {type(encoder_layer).__name__}")
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, return_attention: bool = False):
        x, weights = src, []
        for layer in self.layers:
            if return_attention:
                x, w = layer(x, mask, src_key_padding_mask, return_attention=True)
                weights.append(w)
            else:
                x = layer(x, mask, src_key_padding_mask)
        if self.norm is not None:
            x = self.norm(x)
        return (x, weights) if return_attention else x


class Decoder(nn.Module):
    """N copies of a :class:`DecoderLayer`, then an optional final LayerNorm.

    Shape: tgt (B, T, D), memory (B, S, D) -> (B, T, D); with ``return_attention`` also two
    lists of N weights: self-attention (B, H, T, T) and cross-attention (B, H, T, S).
    """

    def __init__(self, decoder_layer: DecoderLayer, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        if not isinstance(decoder_layer, DecoderLayer):
            raise TypeError(f"decoder_layer must be a DecoderLayer, got {type(decoder_layer).__name__}")
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, cache: list | None = None, return_attention: bool = False):
        x, self_w, cross_w = tgt, [], []
        if cache is not None and len(cache) != self.num_layers:
            raise ValueError(f"cache must hold one entry per layer ({self.num_layers}), got {len(cache)}")
        for i, layer in enumerate(self.layers):
            c = cache[i] if cache is not None else None
            if return_attention:
                x, ws, wc = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                  memory_key_padding_mask, cache=c, return_attention=True)
                self_w.append(ws)
                cross_w.append(wc)
            else:
                x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, cache=c)
        if self.norm is not None:
            x = self.norm(x)
        return (x, self_w, cross_w) if return_attention else x

    def new_cache(self) -> list[tuple[KVCache, KVCache]]:
        """An empty cache for incremental decoding: per layer (self-attention, cross-attention)."""
        return [(KVCache(static=False), KVCache(static=True)) for _ in range(self.num_layers)]
