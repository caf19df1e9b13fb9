"""Deliberately WRONG variants, for the pitfalls chapter (appendix C). Do not use them in a model.

Each function here is a mistake found in tutorials and blog posts, written so it runs
without error and returns a tensor of the right shape -- which is exactly why such bugs
survive. The chapter puts each one next to the correct function of the package and
shows the difference (``tests/test_pitfalls.py`` checks that every one of them differs).

    wrong                                    right
    layer_norm_unbiased_eps_outside          transformer_lite.layer_norm
    merge_heads_without_transpose            transformer_lite.merge_heads
    split_heads_without_transpose            transformer_lite.split_heads
    positional_encoding_reversed_frequencies transformer_lite.sinusoidal_positional_encoding
    attention_without_scaling                transformer_lite.scaled_dot_product_attention
    causal_mask_keep_convention_misread      transformer_lite.causal_mask
    causal_mask_including_diagonal           transformer_lite.causal_mask
    labels_not_shifted                       transformer_lite.training.teacher_forcing
    PatchEncoderPositionsSlicedByBatch       transformer_lite.vision.PatchEncoder (appendix A's bug hunt)
    TransformerEncoderPaddingNotMasked       transformer_lite.Transformer (chapter 13's bug hunt)
"""
from __future__ import annotations

import math

import torch

from ._checks import check_positive_int, check_tensor
from .model import Transformer
from .vision import PatchEncoder


def layer_norm_unbiased_eps_outside(x: torch.Tensor, weight: torch.Tensor | None = None,
                                    bias: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
    """WRONG: the Annotated Transformer's LayerNorm, ``a * (x - mean) / (std + eps) + b``.

    Two differences from ``nn.LayerNorm`` (and the paper's reference, Ba et al. 2016):

    * ``x.std()`` is the *unbiased* standard deviation (divides by D - 1, not D), so the
      output's variance is (D - 1) / D instead of 1 -- a visible gap for small D;
    * ``eps`` is added *outside* the square root, so for a nearly constant vector the
      result differs a lot (eps inside the root: x_hat ~ (x - mean) / sqrt(eps)).

    A model trained with it works fine; its weights just do not transfer to ``nn.LayerNorm``.
    Shape: x (..., D) -> (..., D).
    """
    check_tensor("x", x)
    mean = x.mean(dim=-1, keepdim=True)
    std = x.std(dim=-1, keepdim=True)  # unbiased: divides by D - 1
    out = (x - mean) / (std + eps)  # eps outside the root
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def merge_heads_without_transpose(x: torch.Tensor) -> torch.Tensor:
    """WRONG: (B, H, T, D_h) -> (B, T, D) by ``reshape`` alone, forgetting ``transpose(1, 2)``.

    The memory holds head 0's T rows, then head 1's, ... A plain reshape cuts that into
    rows of width D, so output "position" 0 is head 0's positions 0..H-1 glued together:
    features of *different tokens* end up in one vector. Shapes still match, nothing errors.
    Right: ``x.transpose(1, 2).reshape(B, T, D)`` (``transformer_lite.merge_heads``).
    """
    check_tensor("x", x, ndim=4)
    B, H, T, D_h = x.shape
    return x.reshape(B, T, H * D_h)  # (B, H, T, D_h) -> (B, T, D), positions mixed up


def split_heads_without_transpose(x: torch.Tensor, nhead: int) -> torch.Tensor:
    """WRONG: (B, T, D) -> (B, H, T, D_h) by ``view`` alone: each "head" gets slices of several positions.

    Right: ``x.view(B, T, H, D_h).transpose(1, 2)`` (``transformer_lite.split_heads``).
    """
    check_tensor("x", x, ndim=3)
    check_positive_int("nhead", nhead)
    B, T, D = x.shape
    if D % nhead:
        raise ValueError(f"the last dimension of x ({D}) must be divisible by nhead ({nhead})")
    return x.reshape(B, nhead, T, D // nhead)


def positional_encoding_reversed_frequencies(max_len: int, d_model: int) -> torch.Tensor:
    """WRONG: the frequencies run the wrong way -- the *last* dimensions oscillate fastest.

    The paper's dimension pair i uses sin(pos / 10000^(2i / d_model)): the first pair is the
    fastest (wavelength 2*pi), the last the slowest. Computing the exponent backwards,
    sin(pos / 10000^((d_model - 2 - 2i) / d_model)), flips that.
    The table is the right one with its sin/cos pairs in reverse order -- still a valid
    positional code, but not the paper's (§3.5), and weights trained with it do not
    transfer. Check: in the right table dimension 0 has wavelength 2*pi; here it has
    2*pi * 10000^((d_model - 2) / d_model).

    Shape: (max_len, d_model).
    """
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even for sin/cos pairs, got {d_model}")
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (D/2,)
    inv_freq = torch.exp(-math.log(10000.0) * (d_model - 2 - two_i) / d_model)  # reversed
    angles = pos * inv_freq  # (L, D/2)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


def attention_without_scaling(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor):
    """WRONG: softmax(Q K^T) V without the 1/sqrt(d_k): for large d_k the softmax saturates.

    Shape: query (..., T, d_k), key (..., S, d_k), value (..., S, d_v) -> (output, weights (..., T, S)).
    """
    check_tensor("query", query)
    check_tensor("key", key)
    check_tensor("value", value)
    weights = torch.softmax(query @ key.transpose(-2, -1), dim=-1)  # no / sqrt(d_k)
    return weights @ value, weights


def causal_mask_keep_convention_misread(T: int) -> torch.Tensor:
    """WRONG: a "1 = keep" lower-triangular mask passed where ``True`` means "blocked".

    Tutorials build ``torch.tril(torch.ones(T, T))`` with 1 = may attend; handed as a bool
    mask to ``nn.MultiheadAttention`` (or this package), it blocks the past and lets every
    position see the future -- and blocks the diagonal, so token 0 sees *only* the future.
    Shape: (T, T) bool.
    """
    check_positive_int("T", T)
    return torch.tril(torch.ones(T, T, dtype=torch.bool))


def causal_mask_including_diagonal(T: int) -> torch.Tensor:
    """WRONG: ``triu(..., diagonal=0)`` also blocks each position from itself.

    Position 0 then has no key left at all (a fully masked row: NaN in plain PyTorch).
    Right: ``diagonal=1`` (``transformer_lite.causal_mask``). Shape: (T, T) bool.
    """
    check_positive_int("T", T)
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)


def labels_not_shifted(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """WRONG teacher forcing: the decoder's input and its labels are the same sequence.

    With the causal mask, position t may see token t -- the very label it must predict --
    so the model learns to copy its input: training loss drops to ~0 and inference
    (which has no such input) produces garbage. Right: input ``tgt[:, :-1]``, labels
    ``tgt[:, 1:]`` (``transformer_lite.training.teacher_forcing``).
    """
    check_tensor("tgt", tgt, ndim=2)
    return tgt, tgt


class PatchEncoderPositionsSlicedByBatch(PatchEncoder):
    """WRONG: a :class:`~transformer_lite.vision.PatchEncoder` whose ``tokens`` slices the positions by the batch size.

    ``self.pos[:, : x.shape[0]]`` was meant to be ``self.pos[:, : x.shape[1]]`` (the sequence length). With a batch
    of at least N + 1 images the slice keeps every position and the model is exactly right; with one image it keeps
    only the [class] token's position (zeros), added to every token, and the model has no positions at all. Between
    the two it raises a shape error. A test on a large batch cannot see the bug; the swap test on one image can.
    """

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images)  # (B, N, D)
        cls = self.cls_token.expand(x.shape[0], -1, -1)  # (B, 1, D)
        x = torch.cat([cls, x], dim=1)  # (B, N+1, D)
        return x + self.pos[:, : x.shape[0]]  # WRONG: shape[0] is B, not N + 1


class TransformerEncoderPaddingNotMasked(Transformer):
    """WRONG: a :class:`~transformer_lite.Transformer` whose ``encode`` forgets the source padding mask.

    The encoder's self-attention then lets every English word attend to the ``<pad>`` tokens that fill a short
    sentence up to the batch's width, so a sentence's memory, and possibly its translation, depends on the other
    sentences of its batch. A sentence translated alone (no padding) is unaffected; the cross-attention still
    masks the padding (``decode`` gets ``src``). Chapter 8's test finds it: append padding, and the real tokens'
    outputs must not change.
    """

    def encode(self, src: torch.Tensor, return_attention: bool = False):
        x = self.src_pos(self.src_embed(src))  # (B, S) -> (B, S, D)
        run = self.encoder.forward_with_attention if return_attention else self.encoder
        return run(x)  # WRONG: no src_key_padding_mask=padding_mask(src, self.pad_id)
