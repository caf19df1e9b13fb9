"""Checks of chapter 15's exercises (since 2017): transformer_lite.book.check."""
from __future__ import annotations

import math

import torch

from transformer_lite import language_models as lm, modern
from transformer_lite.model import count_parameters

from ..i18n import N_, tr
from . import Wrong, call, exercise

LLAMA3_8B = 8_030_261_248  # Meta's config.json for Llama 3 8B, counted on the meta device


def _llama3(**changes):
    def build():
        config = dict(vocab_size=128_256, d_model=4096, nhead=32, num_kv_heads=8, num_layers=32,
                      dim_feedforward=14_336, tie_embeddings=False, rope_base=500_000.0)
        config.update(changes)
        with torch.device("meta"):
            return modern.ModernLM(**config)
    return build


@exercise("15.1", wrong=[lambda: (_llama3(tie_embeddings=True),), lambda: (_llama3(num_kv_heads=32),),
                         lambda: (_llama3(dim_feedforward=None),), lambda: (_llama3(vocab_size=32_000),)])
def exercise_15_1(my_llama3_8b):
    model = call(my_llama3_8b, name="my_llama3_8b()")
    if not isinstance(model, modern.ModernLM):
        raise Wrong(tr("my_llama3_8b() should return a modern.ModernLM, got {model_type}.",
                       model_type=type(model).__name__),
                    hint=tr("build it inside `with torch.device(\"meta\"):` so that no memory is allocated."))
    got = count_parameters(model)
    if got != LLAMA3_8B:
        layer = model.layers[0]
        if model.output.weight is model.token_embedding.weight:
            hint = tr("Llama 3 8B does not tie its output layer to the embedding (tie_word_embeddings: false).")
        elif layer.attention.num_kv_heads != 8:
            hint = tr("num_key_value_heads is 8: grouped-query attention, 4 query heads per key/value head.")
        elif layer.feed_forward.w1.out_features != 14_336:
            hint = tr("intermediate_size is 14,336 (3.5 D), wider than llama_ffn_dim's 8/3 D rule.")
        else:
            hint = tr("vocab_size 128,256, hidden_size 4,096, 32 layers, 32 heads, 8 key/value heads.")
        raise Wrong(tr("your model has {got:,} parameters; Llama 3 8B has {llama3_8b:,}.",
                       got=got, llama3_8b=LLAMA3_8B), hint=hint)
    per_token = modern.kv_cache_bytes(1, 1, len(model.layers), model.layers[0].attention.num_kv_heads,
                                      model.layers[0].attention.head_dim, torch.bfloat16)
    return (tr("{got:,} parameters, Llama 3 8B's count; its KV cache takes {kib} KiB per token in 16 bits, "
               "a quarter of what 32 key/value heads would take.", got=got, kib=per_token // 1024))


def _pairs_to_halves_wrong(kind):
    def permute(w, num_heads):
        d = w.shape[0] // num_heads
        w = w.reshape(num_heads, d, -1)
        if kind == "inverse":  # halves -> pairs: the other direction
            w = w.reshape(num_heads, 2, d // 2, -1).transpose(1, 2)
        elif kind == "whole":  # across the whole output, not per head
            return w.reshape(num_heads * d, -1).reshape(-1, 2, w.shape[-1]).transpose(0, 1).reshape(num_heads * d, -1)
        return w.reshape(num_heads * d, -1)
    return permute


def _rotate_half_rope(x, base=10000.0):
    """RoPE in Hugging Face's layout: feature i pairs with i + D/2 (``rotate_half``). x (H, L, D)."""
    D = x.shape[-1]
    theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    angle = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * theta  # (L, D/2)
    cos, sin = torch.cat([angle.cos()] * 2, -1).to(x.dtype), torch.cat([angle.sin()] * 2, -1).to(x.dtype)
    rotated = torch.cat([-x[..., D // 2:], x[..., :D // 2]], dim=-1)
    return x * cos + rotated * sin


def _scores(w_q, w_k, x, num_heads, rope):
    q = (x @ w_q.T).reshape(x.shape[0], num_heads, -1).transpose(0, 1)  # (H, L, D_h)
    k = (x @ w_k.T).reshape(x.shape[0], num_heads, -1).transpose(0, 1)
    q, k = rope(q), rope(k)
    return q @ k.transpose(-1, -2)  # (H, L, L)


@exercise("15.2", wrong=[lambda: (_pairs_to_halves_wrong("inverse"),), lambda: (_pairs_to_halves_wrong("whole"),),
                         lambda: (lambda w, num_heads: w,)])
def exercise_15_2(my_to_halves):
    g = torch.Generator().manual_seed(0)
    num_heads, d_h, D, L = 3, 8, 24, 6
    w_q, w_k = (torch.randn(num_heads * d_h, D, generator=g, dtype=torch.float64) for _ in range(2))
    x = torch.randn(L, D, generator=g, dtype=torch.float64)
    expected = _scores(w_q, w_k, x, num_heads, lm.rotary)  # neighbouring pairs (Meta's layout)
    got_q = call(my_to_halves, w_q.clone(), num_heads, name="my_to_halves(w_q, num_heads)")
    got_k = call(my_to_halves, w_k.clone(), num_heads, name="my_to_halves(w_k, num_heads)")
    for got in (got_q, got_k):
        if not isinstance(got, torch.Tensor) or got.shape != w_q.shape:
            raise Wrong(tr("my_to_halves should return a tensor of shape {w_q_shape}, got "
                           "{got_type} {got_shape}.",
                           w_q_shape=tuple(w_q.shape), got_type=type(got).__name__,
                           got_shape=tuple(getattr(got, 'shape', ()))))
    if sorted(got_q.sum(-1).tolist()) != sorted(w_q.sum(-1).tolist()):
        raise Wrong(tr("my_to_halves should only reorder the rows of w (the output features), not change them."),
                    hint=tr("index w with a permutation of its rows, e.g. w[order]."))
    scores = _scores(got_q.to(torch.float64), got_k.to(torch.float64), x, num_heads, _rotate_half_rope)
    if not torch.allclose(scores, expected, atol=1e-8):
        raise Wrong(tr("with your rows and rotate_half's RoPE, the attention scores differ from those of the original "
                       "rows with neighbouring pairs."),
                    hint=tr("per head, the new order of the rows is the even features 0, 2, 4, ... then the odd ones "
                            "1, 3, 5, ...: pair (2i, 2i + 1) becomes (i, i + D_h / 2)."))
    return (tr("the same scores in both layouts: per head, the even rows then the odd ones. "
               "Hugging Face's conversion script for Meta's Llama weights does exactly this to W_Q and W_K."))


def _merge_right(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


@exercise("15.3", wrong=[lambda: (lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2),),
                         lambda: (lambda m1, l1, m2, l2: (max(m1, m2), l1 * math.exp(max(m1, m2) - m1)
                                                          + l2 * math.exp(max(m1, m2) - m2)),),
                         lambda: (lambda m1, l1, m2, l2: (m1 + m2, l1 * l2),)])
def exercise_15_3(my_merge):
    g = torch.Generator().manual_seed(3)
    for _ in range(4):
        s = torch.randn(10, generator=g, dtype=torch.float64) * 4
        a, b = s[:6], s[6:]
        m1, l1 = a.max().item(), torch.exp(a - a.max()).sum().item()
        m2, l2 = b.max().item(), torch.exp(b - b.max()).sum().item()
        got = call(my_merge, m1, l1, m2, l2, name="my_merge(m1, l1, m2, l2)")
        try:
            m, l = (float(v) for v in got)
        except (TypeError, ValueError):
            raise Wrong(tr("my_merge should return a pair (m, l), got {got!r}.", got=got)) from None
        m_true, l_true = s.max().item(), torch.exp(s - s.max()).sum().item()
        if abs(m - m_true) > 1e-9:
            raise Wrong(tr("m = {m:.4f}, but the maximum of all the scores is {m_true:.4f}.", m=m, m_true=m_true),
                        hint=tr("the merged maximum is the larger of the two maxima."))
        if abs(l - l_true) > 1e-9 * max(1.0, l_true):
            hint = (tr("each sum was taken with its own maximum: multiply l1 by exp(m1 - m) and l2 by exp(m2 - m), "
                       "which are at most 1."))
            raise Wrong(tr("l = {l:.6f}, but the sum of exp(s - m) over all the scores is {l_true:.6f}.",
                           l=l, l_true=l_true), hint=hint)
    return tr("your merge is the online softmax's step: FlashAttention does it for every tile.")


def _mean_pooled(mha, num_kv_heads, pool=lambda w: w.mean(1)):
    """A GroupedQueryAttention from a MultiHeadAttention: W_Q and W^O copied, each group of H / H_kv consecutive
    K (and V) heads pooled into one by ``pool`` over the group axis (Ainslie et al., 2023: the mean)."""
    D, H, d_h = mha.d_model, mha.nhead, mha.head_dim
    bias = mha.k_proj.bias is not None
    gqa = modern.GroupedQueryAttention(D, H, num_kv_heads, bias=bias)
    with torch.no_grad():
        gqa.q_proj.load_state_dict(mha.q_proj.state_dict())
        gqa.out_proj.load_state_dict(mha.out_proj.state_dict())
        for name in ("k_proj", "v_proj"):
            ours, theirs = getattr(mha, name), getattr(gqa, name)
            theirs.weight.copy_(pool(ours.weight.reshape(num_kv_heads, H // num_kv_heads, d_h, D)).reshape(-1, D))
            if bias:
                theirs.bias.copy_(pool(ours.bias.reshape(num_kv_heads, H // num_kv_heads, d_h)).reshape(-1))
    return gqa.eval()


def _strided_groups(mha, num_kv_heads):  # groups of heads h, h + H_kv, ...: not the heads GQA's query groups read
    H = mha.nhead
    order = torch.arange(H).reshape(H // num_kv_heads, num_kv_heads).T.reshape(-1)
    mixed = type(mha)(mha.d_model, H, bias=mha.k_proj.bias is not None)
    mixed.load_state_dict(mha.state_dict())
    with torch.no_grad():
        for name in ("k_proj", "v_proj"):
            layer = getattr(mixed, name)
            layer.weight.copy_(layer.weight.reshape(H, -1, mha.d_model)[order].reshape(-1, mha.d_model))
            if layer.bias is not None:
                layer.bias.copy_(layer.bias.reshape(H, -1)[order].reshape(-1))
    return _mean_pooled(mixed, num_kv_heads)


def _translator_attention():
    """The shipped translator's first encoder self-attention and its input: 500 held-out sentences embedded."""
    from transformer_lite.book.pretrained import tiny_translator
    from transformer_lite.masks import padding_mask

    model, data, _ = tiny_translator()
    src = data.test_src
    with torch.no_grad():
        x = model.src_pos(model.src_embed(src))  # (B, S, D): what the first layer's self-attention reads (Post-LN)
    return model.encoder.layers[0].self_attn.eval(), x, padding_mask(src, model.pad_id)


def _relative_change(gqa, mha, x, pad):
    with torch.no_grad():
        ref = mha(x, x, x, key_padding_mask=pad, need_weights=False)[0][~pad]  # (tokens, D), padding left out
        out = gqa(x, key_padding_mask=pad)[~pad]
    return ((out - ref).norm() / ref.norm()).item()


@exercise("15.4", wrong=[lambda: (lambda mha, n: _mean_pooled(mha, n, pool=lambda w: w[:, 0]),),
                         lambda: (lambda mha, n: _mean_pooled(mha, n, pool=lambda w: w.sum(1)),),
                         lambda: (_strided_groups,)])
def exercise_15_4(my_gqa_from_mha):
    mha, x, pad = _translator_attention()
    H, changes = mha.nhead, {}
    for num_kv_heads in (H, H // 2, 1):
        got = call(my_gqa_from_mha, mha, num_kv_heads, name=f"my_gqa_from_mha(mha, {num_kv_heads})")
        if not isinstance(got, modern.GroupedQueryAttention) or got.num_kv_heads != num_kv_heads:
            raise Wrong(tr("my_gqa_from_mha(mha, {num_kv_heads}) should return a modern.GroupedQueryAttention with "
                           "num_kv_heads={num_kv_heads}, got {got_type}.",
                           num_kv_heads=num_kv_heads, got_type=type(got).__name__),
                        hint=tr("modern.GroupedQueryAttention(mha.d_model, mha.nhead, num_kv_heads, bias=True), then "
                                "copy the weights into it under torch.no_grad()."))
        got.eval()
        with torch.no_grad():
            out = got(x, key_padding_mask=pad)[~pad]
            expected = _mean_pooled(mha, num_kv_heads)(x, key_padding_mask=pad)[~pad]
        if not torch.allclose(out, expected, atol=1e-5):
            hint = (tr("with num_kv_heads = H nothing is pooled: copy all four projections as they are.")
                    if num_kv_heads == H else
                    tr("average, do not pick or add: the K rows of heads 0..g-1 (g = H / H_kv, each D_h rows) become "
                       "K/V head 0, the next g heads head 1, ...: GQA's query head h reads K/V head h // g. Pool the "
                       "biases the same way."))
            raise Wrong(tr("with {num_kv_heads} key/value head(s), your layer's output differs from the mean-pooled "
                           "layer's by up to {diff:.3g}.",
                           num_kv_heads=num_kv_heads, diff=(out - expected).abs().max().item()), hint=hint)
        changes[num_kv_heads] = _relative_change(got, mha, x, pad)
    first = _relative_change(_mean_pooled(mha, 1, pool=lambda w: w[:, 0]), mha, x, pad)
    return (tr("the shipped translator's first self-attention, on 500 held-out sentences: the output changes by "
               "{changes:.0%} with {H} key/value heads, {changes2:.0%} with {half}, {changes3:.0%} with 1 "
               "(multi-query); keeping only the first head instead of the mean changes it by {first:.0%} with 1. "
               "Ainslie et al. then train the pooled model briefly (5 % of the pre-training steps) to win the rest "
               "back.",
               changes=changes[H], H=H, changes2=changes[H // 2], half=H // 2, changes3=changes[1], first=first))


# ---- 15.5: a sliding-window causal mask (Mistral 7B, Jiang et al. 2023) ----------------------------------------------
# Query t keeps keys t - W + 1 .. t: itself and the W - 1 before it. The reference is modern.sliding_window_mask.

_CASES_155 = [(6, 3), (8, 1), (9, 4), (5, 5), (7, 10), (64, 8)]   # W < T, W = 1, W = T, W > T


def _window_slip(kind):
    def mask(T, W):
        back = torch.arange(T)[:, None] - torch.arange(T)[None, :]   # how far key j lies behind query i
        return {"W + 1 keys": (back < 0) | (back > W),
                "W - 1 keys": (back < 0) | (back >= W - 1),
                "both sides": back.abs() >= W,
                "True = keep": (back >= 0) & (back < W),
                "causal": back < 0}[kind]
    return mask


_SLIPS_155 = {
    "W + 1 keys": N_("each query keeps W + 1 keys, itself and W before it; the window holds W keys in all: itself and "
                     "the W − 1 before it (Mistral's W = 4,096 is the number of keys a query sees)."),
    "W - 1 keys": N_("each query keeps W − 1 keys; the window holds W: itself and the W − 1 keys before it."),
    "both sides": N_("your mask lets a query see the keys after it: the window reaches back only, and the future stays "
                     "blocked, as in tl.causal_mask."),
    "True = keep": N_("your mask is True where attention is allowed; in this book, as in nn.MultiheadAttention, True "
                      "means blocked."),
    "causal": N_("that is tl.causal_mask(T): it ignores W. Block also the keys W or more positions back."),
}


def _receptive_field(mask: torch.Tensor, layers: int) -> int:
    """How many positions the last position draws on through ``layers`` layers with this (T, T) mask."""
    keep = (~mask).to(torch.float64)
    reach = torch.eye(mask.shape[0], dtype=torch.float64)
    for _ in range(layers):
        reach = (reach @ keep).clamp(max=1.0)   # key j reaches query i through one more layer
    return int(reach[-1].sum().item())


@exercise("15.5", wrong=[lambda kind=kind: (_window_slip(kind),) for kind in _SLIPS_155])
def exercise_15_5(my_sliding_window_mask):
    for T, W in _CASES_155:
        name = f"my_sliding_window_mask({T}, {W})"
        mask = call(my_sliding_window_mask, T, W, name=name)
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise Wrong(tr("{name} should be a bool tensor, got {got}.", name=name, got=got),
                        hint=tr("True where a query may not attend, as tl.causal_mask(T) returns."))
        if tuple(mask.shape) != (T, T):
            raise Wrong(tr("{name} should have shape {shape}, got {mask_shape}.",
                           name=name, shape=(T, T), mask_shape=tuple(mask.shape)))
        mask = mask.detach().cpu()
        if torch.equal(mask, modern.sliding_window_mask(T, W)):
            last = mask
            continue
        for kind, hint in _SLIPS_155.items():
            if torch.equal(mask, _window_slip(kind)(T, W)):
                raise Wrong(tr("{name} is not the sliding window.", name=name), tr(hint))
        i, j = (mask != modern.sliding_window_mask(T, W)).nonzero()[0].tolist()
        hint = tr("query i keeps keys i − W + 1 … i, itself and the W − 1 before it; every other entry is True.")
        if mask[i, j]:
            raise Wrong(tr("{name} blocks query {i} from key {j}, which the window keeps.", name=name, i=i, j=j), hint)
        raise Wrong(tr("{name} lets query {i} see key {j}, which the window blocks.", name=name, i=i, j=j), hint)
    field = _receptive_field(last, 3)   # the last case, T = 64 and W = 8
    T, W, L = 32_768, 4096, 32   # Mistral 7B: a window of 4,096 keys, 32 layers
    kept, causal = W * (W + 1) // 2 + (T - W) * W, T * (T + 1) // 2   # query t keeps min(t + 1, W) keys
    return (tr("your mask is the sliding window for six sizes, and tl.causal_mask(T) when W ≥ T. Through 3 layers "
               "with W = 8, the last position draws on {field} positions, 3 × (W − 1) + 1: each layer reaches W − 1 "
               "further back. At T = 32,768, Mistral 7B's W = 4,096 keeps {kept:,} of the causal mask's {causal:,} "
               "scores ({share:.0%}), its KV cache holds only the last 4,096 keys, and its 32 layers reach "
               "back {reach:,} positions.",
               field=field, kept=kept, causal=causal, share=kept / causal, reach=L * (W - 1) + 1))
