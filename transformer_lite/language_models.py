"""Encoder-only and decoder-only language models from the package's own layers (book chapter 14).

The encoder-decoder of the paper splits into the two families most readers use today:

* **decoder-only** (GPT): a stack of :class:`~transformer_lite.layers.EncoderLayer` run with a
  causal mask. A self-attention layer with a causal mask *is* a decoder layer without
  cross-attention, so no new layer is needed. Trained by next-token prediction.
* **encoder-only** (BERT): the same stack without the causal mask, trained to fill in masked
  tokens (:func:`mask_tokens`: BERT's 15 % / 80-10-10 corruption).

Both use the post-2018 choices by default: learned positions, GELU, Pre-LN with a final LayerNorm,
and an output layer tied to the token embedding. Also here: :func:`generate` (greedy, temperature,
top-k sampling without an encoder), :func:`lm_perplexity`, an interpolated bigram baseline
(:func:`bigram_log_probs`) and rotary position embeddings (:func:`rotary`).

Shape letters: B batch, L sequence length, D model width, V vocabulary.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._checks import (
    check_instance,
    check_int,
    check_number,
    check_positive_int,
    check_probability,
    check_tensor,
    check_token_ids,
)
from .embeddings import LearnedPositionalEncoding
from .layers import Encoder, EncoderLayer
from .masks import causal_mask, padding_mask
from .normalization import LayerNorm

__all__ = ["LanguageModel", "DecoderOnlyLM", "MaskedLM", "mask_tokens", "generate", "lm_perplexity",
           "bigram_log_probs", "bigram_perplexity", "rotary", "IGNORE_INDEX"]

IGNORE_INDEX = -100  # F.cross_entropy's default ignore_index: the label of a position that is not scored


class LanguageModel(nn.Module):
    """Token embedding + learned positions + N :class:`EncoderLayer` + (final norm) + output layer.

    ``causal=True`` makes it decoder-only (GPT), ``causal=False`` encoder-only (BERT).
    Shape: ids (B, L) long -> logits (B, L, V). ``pad_id`` tokens are masked as keys.
    ``tie_embeddings=True`` uses the token embedding matrix as the output layer (no bias).
    The token embedding is a plain ``nn.Embedding`` (no sqrt(D) scaling, as in GPT and BERT).
    """

    def __init__(self, vocab_size: int, d_model: int = 64, nhead: int = 4, num_layers: int = 2,
                 dim_feedforward: int | None = None, dropout: float = 0.0, activation: str = "gelu", *,
                 causal: bool, norm_first: bool = True, max_len: int = 64, pad_id: int = 0,
                 tie_embeddings: bool = True, layer_norm_eps: float = 1e-5):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        check_instance("causal", causal, bool)
        check_instance("norm_first", norm_first, bool)
        check_instance("tie_embeddings", tie_embeddings, bool)
        check_int("pad_id", pad_id)
        dim_feedforward = 4 * d_model if dim_feedforward is None else dim_feedforward
        self.vocab_size, self.d_model, self.max_len, self.pad_id = vocab_size, d_model, max_len, pad_id
        self.causal, self.norm_first = causal, norm_first
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position = LearnedPositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        layer = EncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                             norm_first=norm_first)
        # Pre-LN needs a last LayerNorm (chapter 11); Post-LN already ends every layer with one.
        final = LayerNorm(d_model, eps=layer_norm_eps) if norm_first else None
        self.layers = Encoder(layer, num_layers, norm=final)
        self.output = nn.Linear(d_model, vocab_size, bias=not tie_embeddings)  # D -> V
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)  # GPT-2's and BERT's initialisation
        if tie_embeddings:
            self.output.weight = self.token_embedding.weight  # (V, D): one matrix in and out

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        check_token_ids("ids", ids, self.vocab_size)
        L = ids.shape[1]
        x = self.position(self.token_embedding(ids))  # (B, L) -> (B, L, D)
        mask = causal_mask(L, device=ids.device) if self.causal else None  # (L, L), True = blocked
        h = self.layers(x, mask=mask, src_key_padding_mask=padding_mask(ids, self.pad_id))
        return self.output(h)  # (B, L, D) -> (B, L, V)

    def new_caches(self) -> list:
        """One empty KV cache per layer, for :meth:`forward_with_cache` (and ``generate(use_cache=True)``)."""
        return self.layers.new_cache()

    def forward_with_cache(self, new: torch.Tensor, ids: torch.Tensor, caches: list) -> torch.Tensor:
        """Logits (B, T, V) of the T newest tokens ``new`` (B, T); ``ids`` (B, L) is the whole sequence so far.

        Every layer appends the new keys and values to its cache and attends over all L of them (prefill: the
        whole prompt at once; decode: one token, which may see every key, so it needs no causal mask).
        """
        T, offset = new.shape[1], ids.shape[1] - new.shape[1]
        x = self.position(self.token_embedding(new), offset=offset)  # (B, T, D), positions offset..L-1
        mask = causal_mask(T, device=new.device, offset=offset) if (self.causal and T > 1) else None  # (T, L)
        kpm = padding_mask(ids, self.pad_id)  # (B, L): cached keys and the new ones
        h = self.layers(x, mask=mask, src_key_padding_mask=kpm, cache=caches)  # each layer extends its cache
        return self.output(h)  # (B, T, D) -> (B, T, V)


def DecoderOnlyLM(vocab_size: int, **kwargs) -> LanguageModel:
    """A GPT-style model: :class:`LanguageModel` with ``causal=True``."""
    return LanguageModel(vocab_size, causal=True, **kwargs)


def MaskedLM(vocab_size: int, **kwargs) -> LanguageModel:
    """A BERT-style model: :class:`LanguageModel` with ``causal=False`` (every token sees every token)."""
    return LanguageModel(vocab_size, causal=False, **kwargs)


def mask_tokens(ids: torch.Tensor, *, mask_id: int, vocab_size: int, special_ids: Sequence[int],
                select_prob: float = 0.15, mask_prob: float = 0.8, random_prob: float = 0.1,
                generator: torch.Generator | None = None, ignore_index: int = IGNORE_INDEX):
    """BERT's corruption for masked-LM training (Devlin et al. 2019, §3.1).

    Each non-special token is *selected* with probability ``select_prob`` (15 %). A selected token is
    replaced by ``mask_id`` with probability ``mask_prob`` (80 %), by a random non-special token with
    probability ``random_prob`` (10 %), and left unchanged otherwise (10 %). Only selected positions
    are scored: their label is the original token, every other label is ``ignore_index``.

    Shape: ids (B, L) long -> (inputs (B, L), labels (B, L)). ``special_ids`` (padding, BOS, EOS,
    ``mask_id``, ...) are never selected nor drawn as random replacements.
    """
    check_token_ids("ids", ids, vocab_size)
    check_positive_int("vocab_size", vocab_size)
    check_int("mask_id", mask_id)
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id must lie in [0, {vocab_size}) (the vocabulary size), got {mask_id}")
    check_probability("select_prob", select_prob, upper_inclusive=True)
    check_probability("mask_prob", mask_prob, upper_inclusive=True)
    check_probability("random_prob", random_prob, upper_inclusive=True)
    if mask_prob + random_prob > 1:
        raise ValueError(f"mask_prob + random_prob must be at most 1, got {mask_prob} + {random_prob}")
    check_instance("generator", generator, torch.Generator, allow_none=True)
    check_int("ignore_index", ignore_index)
    special = torch.tensor(sorted({int(i) for i in special_ids} | {mask_id}), dtype=torch.long)
    normal = torch.tensor([i for i in range(vocab_size) if i not in set(special.tolist())], dtype=torch.long)
    if len(normal) == 0:
        raise ValueError(f"special_ids leave no ordinary token in a vocabulary of {vocab_size}")
    u = torch.rand(ids.shape, generator=generator)  # one draw decides "selected"
    v = torch.rand(ids.shape, generator=generator)  # another decides what a selected token becomes
    selected = (u < select_prob) & ~torch.isin(ids, special.to(ids.device)).cpu()
    to_mask = selected & (v < mask_prob)
    to_random = selected & (v >= mask_prob) & (v < mask_prob + random_prob)
    random_ids = normal[torch.randint(len(normal), ids.shape, generator=generator)]
    inputs = ids.clone()
    inputs[to_mask.to(ids.device)] = mask_id
    inputs[to_random.to(ids.device)] = random_ids[to_random].to(ids.device)
    labels = torch.where(selected.to(ids.device), ids, torch.full_like(ids, ignore_index))
    return inputs, labels


@torch.no_grad()
def generate(model: nn.Module, prompt: torch.Tensor, max_new_tokens: int, *, eos_id: int | None = None,
             temperature: float = 0.0, top_k: int | None = None, generator: torch.Generator | None = None,
             pad_id: int = 0, use_cache: bool = False) -> torch.Tensor:
    """Extend ``prompt`` (B, L) token by token with a decoder-only ``model`` (ids -> logits (B, L, V)).

    ``temperature=0`` is greedy (argmax, chapter 12); otherwise each token is drawn from
    softmax(logits / temperature), among the ``top_k`` most probable only if given. After a row's
    ``eos_id`` come ``pad_id`` tokens; stops when every row has finished. ``use_cache=False``: the whole
    prefix is re-read every step (simple). ``use_cache=True`` (a model with ``new_caches`` and ``forward_with_cache``:
    :class:`LanguageModel`, :class:`~transformer_lite.modern.ModernLM`): the prompt is read once (prefill) and each
    later step reads only the newest token, reusing every layer's cached keys and values
    (:class:`~transformer_lite.attention.KVCache`); same tokens. Returns (B, L + n), n <= max_new_tokens.
    """
    check_token_ids("prompt", prompt)
    check_positive_int("max_new_tokens", max_new_tokens)
    check_number("temperature", temperature, minimum=0.0)
    if top_k is not None:
        check_positive_int("top_k", top_k)
    check_instance("generator", generator, torch.Generator, allow_none=True)
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be a bool, got {type(use_cache).__name__}")
    if use_cache and not hasattr(model, "forward_with_cache"):
        raise TypeError(f"use_cache=True needs a model with new_caches() and forward_with_cache() "
                        f"(LanguageModel, modern.ModernLM), got model of type {type(model).__name__}")
    caches = None
    was_training = model.training
    model.eval()
    ys = prompt
    done = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)
    try:
        for _ in range(max_new_tokens):
            if use_cache:
                if caches is None:  # prefill: the whole prompt once
                    caches = model.new_caches()
                    logits = model.forward_with_cache(ys, ys, caches)[:, -1].float()
                else:  # decode: only the newest token
                    logits = model.forward_with_cache(ys[:, -1:], ys, caches)[:, -1].float()
            else:
                logits = model(ys)[:, -1].float()  # (B, V): the next token's scores
            if temperature == 0:
                nxt = logits.argmax(dim=-1)
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1): the k-th largest logit
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                probs = torch.softmax(logits, dim=-1).cpu()
                nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1).to(ys.device)
            nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            if eos_id is not None:
                done = done | (nxt == eos_id)
                if bool(done.all()):
                    break
    finally:
        model.train(was_training)
    return ys


def _next_token_nll(log_probs: torch.Tensor, ids: torch.Tensor, pad_id: int):
    """Summed negative log-likelihood of ids[:, 1:] given log_probs (B, L-1, V) and the number of tokens scored."""
    targets = ids[:, 1:]
    keep = targets != pad_id
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return nll[keep].sum(), int(keep.sum())


@torch.no_grad()
def lm_perplexity(model: nn.Module, ids: torch.Tensor, pad_id: int = 0) -> float:
    """exp(mean negative log-likelihood) of every next token ids[:, 1:] (padding not scored)."""
    check_token_ids("ids", ids)
    if ids.shape[1] < 2:
        raise ValueError(f"ids must have at least 2 columns (a token and its successor), got shape {tuple(ids.shape)}")
    was_training = model.training
    model.eval()
    try:
        log_probs = F.log_softmax(model(ids[:, :-1]).float(), dim=-1)
    finally:
        model.train(was_training)
    nll, n = _next_token_nll(log_probs, ids, pad_id)
    return math.exp(nll.item() / n)


def bigram_log_probs(ids: torch.Tensor, vocab_size: int, lam: float = 0.9, pad_id: int = 0) -> torch.Tensor:
    """An interpolated bigram model: log P(next | prev) = log(lam P_bigram + (1 - lam) P_unigram), (V, V).

    Counted from the training sequences ``ids`` (B, L) (pairs with a ``pad_id`` successor are skipped).
    The unigram is add-one smoothed, so every token has a probability > 0 after every token;
    a previous token never seen in training falls back to the unigram.
    """
    check_token_ids("ids", ids, vocab_size)
    check_probability("lam", lam, upper_inclusive=False)
    prev, nxt = ids[:, :-1].reshape(-1), ids[:, 1:].reshape(-1)
    keep = nxt != pad_id
    prev, nxt = prev[keep], nxt[keep]
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
    counts.index_put_((prev.cpu(), nxt.cpu()), torch.ones(len(prev), dtype=torch.float64), accumulate=True)
    unigram = (counts.sum(0) + 1) / (counts.sum() + vocab_size)  # add-one
    rows = counts.sum(1, keepdim=True)
    bigram = torch.where(rows > 0, counts / rows.clamp(min=1), unigram)
    return torch.log(lam * bigram + (1 - lam) * unigram).float()


def bigram_perplexity(log_probs: torch.Tensor, ids: torch.Tensor, pad_id: int = 0) -> float:
    """The perplexity of ``ids`` (B, L) under a (V, V) table of log P(next | prev)."""
    check_tensor("log_probs", log_probs, ndim=2)
    check_token_ids("ids", ids, log_probs.shape[0])
    nll, n = _next_token_nll(log_probs[ids[:, :-1]], ids, pad_id)
    return math.exp(nll.item() / n)


def rotary(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (RoPE, Su et al. 2021): rotate each pair of features by pos * theta_i.

    x (..., L, D) with D even (in attention: (B, H, L, D_h), D the head_dim); pair i = features (2i, 2i+1)
    turns by the angle pos * theta_i, theta_i = base^(-2i/D), the frequencies of the paper's sinusoidal table:
    chapter 2's rotation M_k, applied to queries and keys instead of added to the input, so q . k depends on
    the positions only through their difference. Pairs are adjacent features, as in the RoFormer paper and
    Meta's Llama code (Hugging Face's Llama pairs i with i + D/2 instead). ``positions`` (L,) defaults to
    0..L-1. The angles are computed in float64 (exact for long positions), then cast to x's dtype.
    """
    check_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must be (..., L, D) with D even, got shape {tuple(x.shape)}")
    L, D = x.shape[-2], x.shape[-1]
    if D % 2:
        raise ValueError(f"x must be (..., L, D) with D even (D is the head_dim), got shape {tuple(x.shape)}")
    check_number("base", base, positive=True)
    if positions is None:
        positions = torch.arange(L, device=x.device)
    check_tensor("positions", positions, ndim=1)
    if positions.shape[0] != L:
        raise ValueError(f"positions must have length {L} (x's L), got shape {tuple(positions.shape)}")
    theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)  # (D/2,)
    angle = positions.to(torch.float64)[:, None] * theta  # (L, D/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., L, D/2) each
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., L, D/2, 2)
    return out.flatten(-2)  # (..., L, D): pairs back in place
