"""The pieces of today's block (chapter 15, "Since 2017"), each checked against the 2017 block it replaces.

* :class:`RMSNorm` — chapter 5's LayerNorm without the mean and without beta (Zhang & Sennrich, 2019).
* :func:`rotary` — RoPE: chapter 2's rotation M_k applied to q and k (Su et al., 2021).
* :class:`SwiGLU` — the FFN with a gate, sized by :func:`llama_ffn_dim` (Shazeer, 2020).
* :class:`GroupedQueryAttention`, :func:`kv_cache_bytes` — heads sharing keys and values (GQA, MQA), with RoPE inside.
* :func:`sliding_window_mask` — Mistral's causal mask that keeps only the last W keys (Jiang et al., 2023).
* :func:`tiled_attention` — FlashAttention's online softmax: attention tile by tile with a running max and sum,
  never holding the whole T x S score matrix (Milakov & Gimelshein, 2018; Dao et al., 2022).
* :class:`ModernBlock`, :class:`ModernLM` — the block of Llama-style models assembled: pre-RMSNorm, RoPE, GQA,
  SwiGLU, no biases; a decoder-only LM built from it, whose parameter counts match published ones.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ._checks import check_number, check_positive_int, check_tensor, check_token_ids
from ._fused import attend
from .attention import KVCache, merge_head_masks, merge_heads, split_heads
from .language_models import rotary  # RoPE: one implementation, shared with chapter 14
from .masks import causal_mask


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """RMSNorm(x) = x / sqrt(mean(x^2) + eps) * gamma: LayerNorm with the mean taken as 0 and no beta.

    Shape: x (..., D) -> (..., D).
    """
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1): root mean square over D
    y = x / rms
    return y if weight is None else y * weight


class RMSNorm(nn.Module):
    """``nn.RMSNorm(d_model, eps)`` with the formula in plain sight (see :func:`rms_norm`).

    Shape: x (..., D) -> (..., D). gamma (``weight``) starts at 1; ``elementwise_affine=False`` drops it.
    Unlike ``nn.RMSNorm`` the eps must be given (no dtype-dependent default).
    """

    def __init__(self, d_model: int, eps: float = 1e-6, elementwise_affine: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.d_model, self.eps = d_model, check_number("eps", eps, positive=True)
        self.register_parameter("weight", nn.Parameter(torch.ones(d_model)) if elementwise_affine else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.d_model)
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


def llama_ffn_dim(d_model: int, multiple_of: int = 256) -> int:
    """Llama's hidden size of the SwiGLU FFN: 2/3 of 4 * d_model (floored), rounded up to ``multiple_of``.

    2/3 * 4D keeps the parameter count of a 4D ReLU FFN (three matrices instead of two); the rounding
    makes it a multiple of 256 for fast matrix products: d_model=4096 -> 10922 -> 11008 (Llama 7B).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("multiple_of", multiple_of)
    hidden = int(2 * (4 * d_model) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class SwiGLU(nn.Module):
    """FFN(x) = W2 (SiLU(W1 x) * W3 x): chapter 5's FFN with a gate (Shazeer, 2020), without biases as in Llama.

    ``w1`` (gate), ``w3`` (up), ``w2`` (down), named as in Llama's code. Three D x d_ff matrices
    instead of two, so d_ff = 8/3 * D gives a ReLU FFN's 8 D^2 parameters (exactly when 3 divides D;
    :func:`llama_ffn_dim` rounds). Shape: x (..., D) -> (..., D).
    """

    def __init__(self, d_model: int, dim_feedforward: int, bias: bool = False):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("dim_feedforward", dim_feedforward)
        self.d_model = d_model
        self.w1 = nn.Linear(d_model, dim_feedforward, bias=bias)  # D -> d_ff, the gate
        self.w3 = nn.Linear(d_model, dim_feedforward, bias=bias)  # D -> d_ff, the value
        self.w2 = nn.Linear(dim_feedforward, d_model, bias=bias)  # d_ff -> D

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, last_dim=self.d_model)
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))  # (..., d_ff) -> (..., D)


class GroupedQueryAttention(nn.Module):
    """Self-attention whose ``nhead`` query heads share ``num_kv_heads`` key/value heads (Ainslie et al., 2023).

    Chapter 4's heads, with each group of nhead / num_kv_heads query heads reading the same K and V.
    ``num_kv_heads == nhead`` is multi-head attention: the same numbers as
    :class:`~transformer_lite.attention.MultiHeadAttention` on the same weights, through the same helpers (masks,
    split and merge, attention; a row whose keys are all masked gives 0, not NaN). ``num_kv_heads == 1`` is
    multi-query attention (Shazeer, 2019). Smaller K and V mean a smaller KV cache (:func:`kv_cache_bytes`).

    ``rope_base`` turns q and k by their positions (:func:`rotary`; the cached keys were turned when they were
    new, so a step at position p uses p). ``bias`` is for the q, k, v projections (Qwen2 has them) and, unless
    ``out_bias`` says otherwise, for the output projection.

    Shape: x (B, T, D); attn_mask (T, S) or (B*H, T, S) and key_padding_mask (B, S), bool (True = blocked) or
    float (added), S = the cached positions + T; cache: a :class:`KVCache` holding (B, H_kv, S, D_h).
    Returns (B, T, D).
    """

    def __init__(self, d_model: int, nhead: int, num_kv_heads: int, bias: bool = False, *,
                 rope_base: float | None = None, out_bias: bool | None = None):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("nhead", nhead)
        check_positive_int("num_kv_heads", num_kv_heads)
        if rope_base is not None:
            check_number("rope_base", rope_base, positive=True)
        if d_model % nhead:
            raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
        if nhead % num_kv_heads:
            raise ValueError(f"nhead ({nhead}) must be divisible by num_kv_heads ({num_kv_heads})")
        self.d_model, self.nhead, self.num_kv_heads = d_model, nhead, num_kv_heads
        self.head_dim = d_model // nhead
        if rope_base is not None and self.head_dim % 2:
            raise ValueError(f"rotary positions need an even head_dim, got d_model / nhead = {self.head_dim}")
        self.rope_base = rope_base  # None: no positions here; else RoPE on q and k with this base
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # D -> H * D_h
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)  # D -> H_kv * D_h
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias if out_bias is None else out_bias)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, *,
                key_padding_mask: torch.Tensor | None = None, cache: KVCache | None = None) -> torch.Tensor:
        check_tensor("x", x, ndim=3, last_dim=self.d_model)
        q = split_heads(self.q_proj(x), self.nhead)  # (B, T, D) -> (B, H, T, D_h)
        k = split_heads(self.k_proj(x), self.num_kv_heads)  # (B, T, H_kv * D_h) -> (B, H_kv, T, D_h)
        v = split_heads(self.v_proj(x), self.num_kv_heads)
        if self.rope_base is not None:  # RoPE: turn q and k by their positions (after the cached ones)
            start = 0 if cache is None else len(cache)
            positions = torch.arange(start, start + x.shape[1], device=x.device)
            q, k = rotary(q, positions, self.rope_base), rotary(k, positions, self.rope_base)
        if cache is not None:
            k, v = cache.update(k, v)  # (B, H_kv, S, D_h): the earlier steps' keys and values, then this step's
        group = self.nhead // self.num_kv_heads
        k = k.repeat_interleave(group, dim=1)  # (B, H, S, D_h): query head h reads K/V head h // group
        v = v.repeat_interleave(group, dim=1)
        mask = merge_head_masks(attn_mask, key_padding_mask, q, k)  # one mask, broadcast to (B, H, T, S)
        out, _ = attend(q, k, v, mask, need_weights=False)  # chapter 4's attention, every head: (B, H, T, D_h)
        return self.out_proj(merge_heads(out))  # merge, W^O: (B, H, T, D_h) -> (B, T, D) -> (B, T, D)


def kv_cache_bytes(batch: int, seq_len: int, num_layers: int, num_kv_heads: int, head_dim: int,
                   dtype: torch.dtype = torch.float32) -> int:
    """Bytes of a KV cache: 2 (K and V) x batch x seq_len x num_layers x num_kv_heads x head_dim x element size."""
    for name, value in [("batch", batch), ("seq_len", seq_len), ("num_layers", num_layers),
                        ("num_kv_heads", num_kv_heads), ("head_dim", head_dim)]:
        check_positive_int(name, value)
    return 2 * batch * seq_len * num_layers * num_kv_heads * head_dim * torch.empty((), dtype=dtype).element_size()


def sliding_window_mask(T: int, window: int, device=None) -> torch.Tensor:
    """(T, T) bool mask, ``True`` = may not attend: query t sees keys t - window + 1 .. t, itself and the
    ``window - 1`` positions before it (Mistral 7B's sliding-window attention, Jiang et al., 2023).

    Each query keeps at most ``window`` keys, so the scores grow as T * window, not T^2, and a KV cache needs only the
    last ``window`` keys. With ``window >= T`` it is :func:`causal_mask` (T); in a stack of L layers the information
    at position t can come from up to L * (window - 1) + 1 positions.
    """
    check_positive_int("T", T)
    check_positive_int("window", window)
    t = torch.arange(T, device=device)
    back = t[:, None] - t[None, :]  # (T, T): how far key j lies behind query i (negative: in the future)
    return (back < 0) | (back >= window)


def tiled_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_q: int = 16, block_k: int = 16,
                    causal: bool = False) -> tuple[torch.Tensor, tuple[int, int]]:
    """softmax(q k^T / sqrt(D_h)) v computed tile by tile with FlashAttention's online softmax (Dao et al., 2022).

    For each tile of ``block_q`` queries, the keys are read ``block_k`` at a time. A running maximum m and a
    running sum l of exp(score - m) are kept per query with the running output; when a new tile raises the
    maximum, what was summed so far is rescaled by exp(m_old - m_new) (Milakov & Gimelshein, 2018). After the
    last tile, dividing by l gives exactly softmax attention. At no time is more than a
    (block_q x block_k) tile of scores held, instead of the whole (T x S) matrix.

    ``causal=True`` blocks key j for query i when j > i (T == S). Shape: q (B, H, T, D_h), k and v
    (B, H, S, D_h) -> (out (B, H, T, D_h), the largest score tile held, (rows, cols)).
    """
    check_tensor("q", q, ndim=4)
    check_tensor("k", k, ndim=4, last_dim=q.shape[-1])
    check_tensor("v", v, ndim=4)
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"k and v must have the same (B, H, S), got {tuple(k.shape)} and {tuple(v.shape)}")
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    T, S = q.shape[-2], k.shape[-2]
    if causal and T != S:
        raise ValueError(f"causal=True needs as many queries as keys, got T={T} and S={S}")
    scale = q.shape[-1] ** -0.5
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)  # (B, H, T, D_v)
    largest = (0, 0)
    for i in range(0, T, block_q):
        qi = q[..., i:i + block_q, :]  # (B, H, bq, D_h)
        rows = torch.arange(i, i + qi.shape[-2], device=q.device)
        m = torch.full(qi.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)  # (B, H, bq): running max
        l = torch.zeros_like(m)  # running sum of exp(score - m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)  # (B, H, bq, D_v)
        for j in range(0, S, block_k):
            if causal and j > rows[-1]:
                break  # every key from here on is in the future of every query of this tile
            s = qi @ k[..., j:j + block_k, :].transpose(-1, -2) * scale  # (B, H, bq, bk): one tile of scores
            largest = max(largest, tuple(s.shape[-2:]), key=lambda rc: rc[0] * rc[1])
            if causal:
                cols = torch.arange(j, j + s.shape[-1], device=q.device)
                s = s.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1))  # (B, H, bq)
            p = torch.exp(s - m_new[..., None])  # (B, H, bq, bk)
            correction = torch.exp(m - m_new)  # rescales what was summed under the old maximum (0 at the start)
            l = l * correction + p.sum(dim=-1)
            acc = acc * correction[..., None] + p @ v[..., j:j + block_k, :]
            m = m_new
        out[..., i:i + block_q, :] = acc / l[..., None]
    return out, largest


class ModernBlock(nn.Module):
    """The decoder block of Llama-style models: x + Attn(RMSNorm(x)), then x + SwiGLU(RMSNorm(x)).

    Against the paper's block (chapter 9 without cross-attention): Pre-norm (chapter 11) with RMSNorm instead
    of Post-LN LayerNorm, RoPE inside attention instead of sinusoids added to the input, grouped-query
    attention, a SwiGLU FFN instead of ReLU, and no biases (``qkv_bias=True``: biases on q, k, v only, as
    in Qwen2). Shape: x (B, T, D), attn_mask (T, S) bool (True = blocked) -> (B, T, D).
    """

    def __init__(self, d_model: int, nhead: int, num_kv_heads: int, dim_feedforward: int, *,
                 norm_eps: float = 1e-5, rope_base: float = 10000.0, qkv_bias: bool = False):
        super().__init__()
        self.attention_norm = RMSNorm(d_model, eps=norm_eps)
        self.attention = GroupedQueryAttention(d_model, nhead, num_kv_heads, bias=qkv_bias, rope_base=rope_base,
                                               out_bias=False)
        self.ffn_norm = RMSNorm(d_model, eps=norm_eps)
        self.feed_forward = SwiGLU(d_model, dim_feedforward)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, *, cache=None) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), attn_mask, cache=cache)  # (B, T, D)
        return x + self.feed_forward(self.ffn_norm(x))


class ModernLM(nn.Module):
    """A decoder-only language model of :class:`ModernBlock` layers: token embedding (no position table),
    N blocks, a final RMSNorm, and an output layer (tied to the embedding if ``tie_embeddings``).

    Built on the ``meta`` device it has full-size shapes without memory, so :func:`count_parameters` gives a
    published model's size (Llama 2 7B, Qwen2.5-0.5B: see chapter 15). ``dim_feedforward`` defaults to
    :func:`llama_ffn_dim`. Shape: ids (B, L) long -> logits (B, L, V). With ``caches`` (one
    :class:`~transformer_lite.attention.KVCache` per layer, from :meth:`new_caches`), ``ids`` are the newest
    tokens only and the cached keys and values stand for the earlier ones.
    """

    def __init__(self, vocab_size: int, d_model: int, nhead: int, num_kv_heads: int, num_layers: int,
                 dim_feedforward: int | None = None, *, tie_embeddings: bool = False, qkv_bias: bool = False,
                 norm_eps: float = 1e-5, rope_base: float = 10000.0):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_layers", num_layers)
        if not isinstance(tie_embeddings, bool):
            raise TypeError(f"tie_embeddings must be a bool, got {type(tie_embeddings).__name__}")
        dim_feedforward = llama_ffn_dim(d_model) if dim_feedforward is None else dim_feedforward
        self.vocab_size, self.d_model = vocab_size, d_model
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            ModernBlock(d_model, nhead, num_kv_heads, dim_feedforward, norm_eps=norm_eps, rope_base=rope_base,
                        qkv_bias=qkv_bias) for _ in range(num_layers))
        self.norm = RMSNorm(d_model, eps=norm_eps)
        self.output = nn.Linear(d_model, vocab_size, bias=False)  # D -> V
        if tie_embeddings:
            self.output.weight = self.token_embedding.weight  # (V, D): one matrix in and out

    def new_caches(self) -> list:
        """One empty KV cache per layer, for :meth:`forward` with ``caches`` (and ``generate(use_cache=True)``)."""
        return [KVCache() for _ in self.layers]

    def forward(self, ids: torch.Tensor, caches: list | None = None) -> torch.Tensor:
        check_token_ids("ids", ids, self.vocab_size)
        if caches is not None and len(caches) != len(self.layers):
            raise ValueError(f"caches must hold one KVCache per layer ({len(self.layers)}), got {len(caches)}")
        T = ids.shape[1]
        past = 0 if caches is None else len(caches[0])
        x = self.token_embedding(ids)  # (B, T, D): no positions here; RoPE turns q and k in every layer
        mask = causal_mask(T, device=ids.device, offset=past)  # (T, past + T), True = blocked
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, cache=None if caches is None else caches[i])
        return self.output(self.norm(x))  # (B, T, D) -> (B, T, V)

    def forward_with_cache(self, new: torch.Tensor, ids: torch.Tensor, caches: list) -> torch.Tensor:
        """Logits (B, T, V) of the newest tokens ``new`` (B, T); for
        :func:`~transformer_lite.language_models.generate`."""
        return self(new, caches)
