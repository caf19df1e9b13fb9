"""Deliberately WRONG variants, for the pitfalls chapter (appendix C). Do not use them in a model.

Each function here is a mistake found in tutorials and blog posts, written so it runs
without error and returns a tensor of the right shape -- which is exactly why such bugs
survive. The chapter puts each one next to the correct function of the package and
shows the difference (``tests/test_pitfalls.py`` checks that every one of them differs).

    wrong                                    right
    layer_norm_unbiased_eps_outside          transformer_lite.layer_norm
    LayerNormAffineFirst                     transformer_lite.LayerNorm
    merge_heads_without_transpose            transformer_lite.merge_heads
    split_heads_without_transpose            transformer_lite.split_heads
    positional_encoding_reversed_frequencies transformer_lite.sinusoidal_positional_encoding
    attention_without_scaling                transformer_lite.scaled_dot_product_attention
    causal_mask_keep_convention_misread      transformer_lite.causal_mask
    causal_mask_including_diagonal           transformer_lite.causal_mask
    labels_not_shifted                       transformer_lite.training.teacher_forcing
    layer_norm_over_positions                transformer_lite.layer_norm (chapter 6's bug hunt)
    pre_ln_normalizing_the_highway           transformer_lite.EncoderLayer(norm_first=True) (chapter 11's)
    causal_mask_off_by_one                   transformer_lite.causal_mask
    transformer_with_mask_bug                transformer_lite.Transformer.forward
    position_ids_ignoring_padding            (ids != pad_id).cumsum(-1) - 1, for left padding
    micro_batch_loss_mean_of_means           sum of token losses / tokens in the whole accumulated batch
    encode_with_vocab                        Vocab.encode of the tokenizer's tokens (chapter 1's bug hunt)
    DecoderLayerIgnoringSourcePadding        transformer_lite.DecoderLayer
    cross_entropy_counting_padding           transformer_lite.training.label_smoothed_cross_entropy
    decoder_only_lm_seeing_one_ahead         transformer_lite.language_models.DecoderOnlyLM
    PatchEncoderPositionsSlicedByBatch       transformer_lite.vision.PatchEncoder (appendix A's bug hunt)
    TransformerEncoderPaddingNotMasked       transformer_lite.Transformer (chapter 13's bug hunt)
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._checks import check_int, check_positive_int, check_tensor, check_token_ids
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


class LayerNormAffineFirst(torch.nn.Module):
    """WRONG: scale and shift *before* normalizing, ``normalize(x * weight + bias)``.

    The same parameters as ``nn.LayerNorm`` (``weight`` starts at 1, ``bias`` at 0), so a freshly built
    module gives exactly ``nn.LayerNorm``'s numbers and a test on it passes. Once ``weight`` and ``bias``
    move (training, or a test that sets them) it is another function: a uniform ``weight`` has no effect
    at all, since the normalization divides it out, and every output has mean 0 and variance 1 whatever
    ``bias`` is. Chapter 5's bug hunt. Shape: x (..., D) -> (..., D).
    """

    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        check_positive_int("normalized_shape", normalized_shape)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps <= 0:
            raise ValueError(f"eps must be a positive number, got {eps!r}")
        self.normalized_shape, self.eps = (normalized_shape,), float(eps)
        self.weight = torch.nn.Parameter(torch.ones(normalized_shape))
        self.bias = torch.nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.normalized_shape[0])
        y = x * self.weight + self.bias  # the bug: gamma and beta come first ...
        mean = y.mean(dim=-1, keepdim=True)
        var = y.var(dim=-1, keepdim=True, correction=0)
        return (y - mean) / torch.sqrt(var + self.eps)  # ... and the normalization undoes much of them

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


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


def _check_table_size(max_len: int, d_model: int) -> None:
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even for sin/cos pairs, got {d_model}")


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
    _check_table_size(max_len, d_model)
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


def layer_norm_over_positions(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """WRONG: a LayerNorm that takes its statistics over ``dim=1`` of a (B, T, D) batch instead of ``dim=-1``.

    Code written for a (B, D, T) layout, or a ``dim=1`` that should have been ``dim=-1``: each feature is
    normalized over the positions of its own sentence. A token's output then depends on the other tokens
    of its sentence and on how much padding the sentence has (not on the other sentences of the batch).
    Right: ``transformer_lite.layer_norm`` (statistics over the last axis).
    """
    check_tensor("x", x, ndim=3)
    mean = x.mean(dim=1, keepdim=True)                      # (B, 1, D): over the positions -- the bug
    var = x.var(dim=1, keepdim=True, correction=0)
    return (x - mean) / torch.sqrt(var + eps)


def pre_ln_normalizing_the_highway(layer, x: torch.Tensor) -> torch.Tensor:
    """WRONG Pre-LN: ``x = norm1(x); x = x + self_attn(x)`` -- the normalized copy replaces the highway.

    ``layer`` is a ``transformer_lite.EncoderLayer`` (its ``norm1``, ``self_attn``, ``norm2``, ``ff`` are used).
    The block computes LN(x) + F(LN(x)): the residual highway is normalized at every sub-layer, so it
    neither keeps its input (as Pre-LN's does) nor ends normalized (as Post-LN's does). Right:
    ``x + F(LN(x))``, ``EncoderLayer(..., norm_first=True)``.
    """
    check_tensor("x", x, ndim=3)
    for name in ("norm1", "self_attn", "norm2", "ff"):
        if not hasattr(layer, name):
            raise TypeError(f"layer must be a transformer_lite.EncoderLayer (with .{name}), got {type(layer).__name__}")
    x = layer.norm1(x)                                      # the bug: the highway itself is replaced
    x = x + layer.self_attn(x, x, x)[0]
    x = layer.norm2(x)
    return x + layer.ff(x)


def causal_mask_off_by_one(T: int) -> torch.Tensor:
    """WRONG: ``triu(..., diagonal=2)``: each position may also attend to the *next* one.

    The mask still looks triangular, and position ``T - 1`` is right; every other position peeks one
    token ahead, so a decoder trained with it can copy its next label. Right: ``diagonal=1``
    (``transformer_lite.causal_mask``). Shape: (T, T) bool, ``True`` = blocked.
    """
    check_positive_int("T", T)
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=2)


def transformer_with_mask_bug(model):
    """WRONG: ``model``'s forward pass (src, tgt) -> logits, with one line of the decoder's mask changed.

    The same weights and the same padding masks as ``model(src, tgt)``; the causal mask is
    :func:`causal_mask_off_by_one`. Chapter 7's bug hunt: its leak test finds which positions peek.
    """
    from .masks import padding_mask

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lite.Transformer, got {type(model).__name__}")

    def forward(src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        check_token_ids("tgt", tgt, model.tgt_vocab_size)
        memory = model.encode(src)
        x = model.tgt_pos(model.tgt_embed(tgt))  # (B, T, D)
        h = model.decoder(x, memory, tgt_mask=causal_mask_off_by_one(tgt.shape[1]).to(tgt.device),
                          tgt_key_padding_mask=padding_mask(tgt, model.pad_id),
                          memory_key_padding_mask=padding_mask(src, model.pad_id))
        return model.output_projection(h)  # (B, T, V)

    return forward


def position_ids_ignoring_padding(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """WRONG for left padding: positions 0, 1, 2, ... counted from the first column, pads included.

    With padding on the left, a sentence's first real token then sits at position (number of pads),
    not 0, so the same sentence gets different positional vectors in different batches -- even though
    the padding mask hides the pads. Right: count only real tokens, ``(ids != pad_id).cumsum(-1) - 1``
    (clamped at 0 on the pads). Shape: ids (B, L) -> (B, L) long.
    """
    check_token_ids("ids", ids)
    check_int("pad_id", pad_id)
    return torch.arange(ids.shape[1], device=ids.device).expand(ids.shape)


def micro_batch_loss_mean_of_means(logits: torch.Tensor, labels: torch.Tensor, pad_id: int,
                                   num_micro_batches: int) -> torch.Tensor:
    """WRONG under gradient accumulation: this micro-batch's *token mean* divided by the number of micro-batches.

    Summed over the micro-batches this is the mean of the micro-batches' means, which equals the mean
    over all tokens only when every micro-batch has the same number of (non-pad) tokens; otherwise a
    token in a short micro-batch weighs more. Right: ``cross_entropy(..., reduction="sum") / n_tokens``
    with ``n_tokens`` the non-pad tokens of the whole accumulated batch.
    Shape: logits (B, T, V), labels (B, T) -> a scalar.
    """
    check_tensor("logits", logits, ndim=3)
    check_token_ids("labels", labels)
    check_int("pad_id", pad_id)
    check_positive_int("num_micro_batches", num_micro_batches)
    if labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must have shape {tuple(logits.shape[:2])}, got {tuple(labels.shape)}")
    mean = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=pad_id)
    return mean / num_micro_batches


def positional_encoding_cos_column_index(max_len: int, d_model: int) -> torch.Tensor:
    """WRONG: the exponent uses the column index j, so a cosine (column 2i + 1) gets another frequency than its sine.

    The paper's pair i shares one angle, pos / 10000^(2i / d_model), between sin (column 2i) and cos (column
    2i + 1). Writing 10000^(j / d_model) with the column index j gives the cosine the angle pos / 10000^((2i + 1) /
    d_model). Every value is still in [-1, 1] and the first row still reads 0, 1, 0, 1, ... -- but a pair is no
    longer a point on a circle: |PE(pos)| varies with pos, PE(p) · PE(q) is no longer a function of p - q, and no
    rotation M_k maps PE(pos) to PE(pos + k). The bug hunt of chapter 2 (exercise 2.1).

    Shape: (max_len, d_model).
    """
    _check_table_size(max_len, d_model)
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    j = torch.arange(d_model, dtype=torch.float32)  # (D,) the column index, not the pair's 2i
    angles = pos * torch.exp(-math.log(10000.0) * j / d_model)  # (L, D)
    pe = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, 1::2])
    return pe


def attention_softmax_over_queries(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor):
    """WRONG: softmax(Q K^T / sqrt(d_k)) taken over the queries (dim=-2) instead of over the keys (dim=-1).

    The shapes are right and, for T = S, nothing fails: but the *columns* of the weights sum to 1, not the rows,
    so a word's output is no longer a weighted average of the values. Found by comparing with
    torch.nn.functional.scaled_dot_product_attention, or by checking that each row of the weights sums to 1
    (chapter 3, exercise 3.1).

    Shape: query (..., T, d_k), key (..., S, d_k), value (..., S, d_v) -> (output, weights (..., T, S)).
    """
    check_tensor("query", query)
    check_tensor("key", key)
    check_tensor("value", value)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    weights = torch.softmax(scores, dim=-2)  # over the queries: the bug
    return weights @ value, weights


def encode_with_vocab(vocab, text: str) -> list[int]:
    """WRONG: ids for ``text.split()``, with a vocabulary built from a tokenizer's tokens.

    The vocabulary was built from lower-cased tokens with punctuation cut off ("the", "mat",
    "."), but this splits on spaces only, so "The" and "mat." are not in it: they silently
    become ``<unk>``, training runs, and the model never sees those words. Right: encode the
    tokens of the same tokenizer that built the vocabulary, ``vocab.encode(tokenize(text))``
    (chapter 1); a test that catches it: no token of the vocabulary's own corpus may be ``<unk>``.
    """
    from .data import Vocab

    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a transformer_lite.data.Vocab, got {type(vocab).__name__}")
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return vocab.encode(text.split())


class DecoderLayerIgnoringSourcePadding:
    """WRONG: a decoder layer whose cross-attention drops ``memory_key_padding_mask``.

    Built by :func:`decoder_layer_ignoring_source_padding`. Without padding it computes exactly what
    ``transformer_lite.DecoderLayer`` computes, so a test on one unpadded sentence passes; in a padded batch
    every target position also attends to the source's padding vectors, and its output changes with them.
    Right: pass the mask as ``key_padding_mask`` to the cross-attention (``DecoderLayer._mha_block``).
    """


def decoder_layer_ignoring_source_padding(layer):
    """WRONG: a copy of the decoder layer ``layer`` (same weights) that ignores source padding; see
    :class:`DecoderLayerIgnoringSourcePadding`."""
    import copy

    from .layers import DecoderLayer

    if not isinstance(layer, DecoderLayer):
        raise TypeError(f"layer must be a transformer_lite.DecoderLayer, got {type(layer).__name__}")

    class _Ignoring(DecoderLayer, DecoderLayerIgnoringSourcePadding):
        def _mha_block(self, x, memory, attn_mask, key_padding_mask, cache, need_weights):
            return super()._mha_block(x, memory, attn_mask, None, cache, need_weights)  # the bug: mask dropped

    wrong = copy.deepcopy(layer)
    wrong.__class__ = _Ignoring
    return wrong


def cross_entropy_counting_padding(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """WRONG: the mean cross-entropy over ALL positions, padding included (``ignore_index`` forgotten).

    On a batch without padding it equals the right loss; in a padded batch the model is also trained to predict
    ``<pad>`` after ``<eos>``, and the loss changes when more padding is appended. Right:
    ``F.cross_entropy(..., ignore_index=PAD)`` or ``transformer_lite.training.label_smoothed_cross_entropy``.

    Shape: logits (B, T, V), labels (B, T) -> scalar.
    """
    check_tensor("logits", logits, ndim=3)
    check_tensor("labels", labels, ndim=2)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def decoder_only_lm_seeing_one_ahead(model):
    """WRONG: a copy of the decoder-only language model ``model`` (same weights) whose forward uses
    :func:`causal_mask_off_by_one` instead of the causal mask."""
    import copy

    from .language_models import LanguageModel
    from .masks import padding_mask

    if not isinstance(model, LanguageModel) or not model.causal:
        raise TypeError(f"model must be a decoder-only transformer_lite.language_models.LanguageModel (causal=True), "
                        f"got {type(model).__name__}")

    class _OneAhead(LanguageModel):
        def forward(self, ids):
            x = self.position(self.token_embedding(ids))  # (B, L, D)
            mask = causal_mask_off_by_one(ids.shape[1]).to(ids.device)  # the bug: one position too many
            return self.output(self.layers(x, mask=mask, src_key_padding_mask=padding_mask(ids, self.pad_id)))

    wrong = copy.deepcopy(model)
    wrong.__class__ = _OneAhead
    return wrong


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
    masks the padding (``decode`` gets ``src``). Chapter 7's test finds it: append padding, and the real tokens'
    outputs must not change.
    """

    def encode(self, src: torch.Tensor, return_attention: bool = False):
        x = self.src_pos(self.src_embed(src))  # (B, S) -> (B, S, D)
        run = self.encoder.forward_with_attention if return_attention else self.encoder
        return run(x)  # WRONG: no src_key_padding_mask=padding_mask(src, self.pad_id)
