"""Token embeddings and positional encodings (paper §3.4, §3.5).

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Dimension pair i has wavelength 2*pi * 10000^(2i/d_model): the *first*
dimensions (small i) oscillate fastest (wavelength 2*pi) and tell neighbouring
positions apart; the *last* dimensions vary slowly (wavelength up to
10000 * 2*pi) and carry long-range position.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from ._checks import check_positive_int, check_probability, check_tensor, check_token_ids


def sinusoidal_positional_encoding(max_len: int, d_model: int, interleaved: bool = True) -> torch.Tensor:
    """The paper's sinusoidal table, shape (max_len, d_model).

    ``interleaved=True`` (the paper): sin in even columns, cos in odd ones.
    ``interleaved=False``: all sines in the first half, all cosines in the
    second (as some libraries write it) -- the same numbers, columns permuted.
    """
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even for sin/cos pairs, got {d_model}")
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (D/2,)
    inv_freq = torch.exp(-math.log(10000.0) * two_i / d_model)  # 1 / 10000^(2i/d_model)
    angles = pos * inv_freq  # (L, D/2)
    pe = torch.zeros(max_len, d_model)
    if interleaved:
        pe[:, 0::2] = torch.sin(angles)
        pe[:, 1::2] = torch.cos(angles)
    else:
        pe[:, : d_model // 2] = torch.sin(angles)
        pe[:, d_model // 2 :] = torch.cos(angles)
    return pe


def wavelengths(d_model: int) -> torch.Tensor:
    """Wavelength (in positions) of each dimension 0..d_model-1: 2*pi * 10000^(2i/d_model)."""
    check_positive_int("d_model", d_model)
    i = torch.arange(d_model) // 2
    return 2 * math.pi * torch.pow(10000.0, 2 * i / d_model)


class TokenEmbedding(nn.Module):
    """Look up each token id's vector and multiply by sqrt(d_model) (paper §3.4).

    Shape: ids (B, L) long -> (B, L, D).
    ``forward`` checks the ids' dtype and shape. Their range, [0, vocab_size), is checked once per call
    where they enter the model (``Transformer.encode`` / ``decode``): reading the values costs a
    device-to-host copy on a GPU. Used alone, an id out of range raises ``nn.Embedding``'s IndexError.
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = None):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        self.vocab_size, self.d_model = vocab_size, d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        self.scale = math.sqrt(d_model)

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        check_token_ids("ids", ids)
        return self.embedding(ids) * self.scale  # (B, L) -> (B, L, D)


class PositionalEncoding(nn.Module):
    """Add the fixed sinusoidal table to the embeddings, then dropout (paper §3.5, §5.4).

    Shape: x (B, L, D) -> (B, L, D). ``offset`` shifts the positions (incremental decoding).
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_tensor("x", x, ndim=3, last_dim=self.d_model)
        L = x.shape[1]
        if offset + L > self.max_len:
            raise ValueError(
                f"sequence length {offset + L} exceeds the positional encoding's max_len ({self.max_len})"
            )
        return self.dropout(x + self.pe[offset : offset + L])  # (B, L, D) + (L, D)


class LearnedPositionalEncoding(nn.Module):
    """Add a trained vector per position (the alternative of paper §3.5 / Table 3 row E).

    Shape: x (B, L, D) -> (B, L, D). Cannot go beyond ``max_len``: there is no vector for it.
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.position = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.position.weight, std=0.02)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_tensor("x", x, ndim=3, last_dim=self.d_model)
        L = x.shape[1]
        if offset + L > self.max_len:
            raise ValueError(
                f"sequence length {offset + L} exceeds the learned positions' max_len ({self.max_len})"
            )
        pos = torch.arange(offset, offset + L, device=x.device)
        return self.dropout(x + self.position(pos))
