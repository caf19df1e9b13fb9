"""transformer_lite.modern: each piece of today's block against PyTorch or the 2017 piece it replaces."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_lite.modern import RMSNorm
from transformer_lite.normalization import LayerNorm


@pytest.mark.parametrize("shape", [(2, 5, 8), (7, 16), (3,  2, 4, 32)])
@pytest.mark.parametrize("eps", [1e-6, 1e-5, 0.1])
def test_rmsnorm_equals_torch(shape, eps):
    torch.manual_seed(0)
    ours, ref = RMSNorm(shape[-1], eps=eps), nn.RMSNorm(shape[-1], eps=eps)
    with torch.no_grad():
        ref.weight.normal_()
        ours.weight.copy_(ref.weight)
    x = torch.randn(shape) * 3
    torch.testing.assert_close(ours(x), ref(x))


def test_rmsnorm_is_layernorm_on_zero_mean_inputs():
    torch.manual_seed(1)
    x = torch.randn(4, 6, 16)
    ln, rms = LayerNorm(16, eps=1e-5, bias=False), RMSNorm(16, eps=1e-5)
    with torch.no_grad():
        ln.weight.normal_()
        rms.weight.copy_(ln.weight)
    assert not torch.allclose(ln(x), rms(x), atol=1e-3)  # differs on general inputs
    x0 = x - x.mean(dim=-1, keepdim=True)
    torch.testing.assert_close(ln(x0), rms(x0))


def test_rmsnorm_bad_arguments():
    with pytest.raises((TypeError, ValueError), match="eps"):
        RMSNorm(8, eps=0)
    with pytest.raises((TypeError, ValueError), match="d_model"):
        RMSNorm(0)
    with pytest.raises(ValueError, match="x"):
        RMSNorm(8)(torch.randn(2, 7))


def test_rotary_scores_depend_only_on_distance():
    from transformer_lite.modern import rotary
    torch.manual_seed(2)
    L, D = 24, 16
    q, k = torch.randn(D, dtype=torch.float64), torch.randn(D, dtype=torch.float64)
    Q = rotary(q.expand(1, 1, L, D).clone())  # the same q at every position
    K = rotary(k.expand(1, 1, L, D).clone())
    S = (Q @ K.transpose(-1, -2))[0, 0]  # (L, L): q at m, k at n
    for d in range(-(L - 1), L):
        diag = torch.diagonal(S, offset=d)
        torch.testing.assert_close(diag, diag[:1].expand_as(diag))
    assert S.diagonal(0)[0] != S.diagonal(1)[0]  # and it does depend on the distance


def test_rotary_equals_complex_formulation():
    from transformer_lite.modern import rotary
    torch.manual_seed(3)
    x = torch.randn(2, 3, 10, 8)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    z = torch.view_as_complex(x.double().reshape(2, 3, 10, 4, 2))  # x_2i + i x_2i+1
    w = torch.polar(torch.ones(10, 4, dtype=torch.float64), torch.arange(10.0, dtype=torch.float64)[:, None] * theta)
    ref = torch.view_as_real(z * w).reshape(2, 3, 10, 8).float()
    torch.testing.assert_close(rotary(x), ref)
    with pytest.raises(ValueError, match="head_dim"):
        rotary(torch.randn(1, 1, 4, 7))


@pytest.mark.parametrize("D", [48, 96, 384])
def test_swiglu_parameter_count_equals_relu_ffn(D):
    from transformer_lite.layers import FeedForward
    from transformer_lite.modern import SwiGLU
    def count(m):
        return sum(p.numel() for p in m.parameters())

    relu = FeedForward(D, 4 * D, bias=False)  # the paper's ReLU FFN, d_ff = 4D, no biases as in Llama
    swi = SwiGLU(D, 8 * D // 3)  # 3 | D: 8D/3 is an integer
    assert count(swi) == 3 * D * (8 * D // 3) == 8 * D * D
    assert count(relu) == count(swi)
    x = torch.randn(2, 5, D)
    assert swi(x).shape == (2, 5, D)


def test_llama_ffn_dim():
    from transformer_lite.modern import SwiGLU, llama_ffn_dim
    assert llama_ffn_dim(4096) == 11008  # Llama 2 7B's intermediate_size
    assert llama_ffn_dim(5120) == 13824  # Llama 2 13B's
    with pytest.raises(ValueError, match="dim_feedforward"):
        SwiGLU(8, 0)


def test_gqa_with_all_heads_equals_multihead_attention():
    from transformer_lite.attention import MultiHeadAttention
    from transformer_lite.masks import causal_mask
    from transformer_lite.modern import GroupedQueryAttention
    torch.manual_seed(4)
    mha, gqa = MultiHeadAttention(32, 4, bias=True), GroupedQueryAttention(32, 4, 4, bias=True)
    gqa.load_state_dict(mha.state_dict(), strict=False)
    assert all(torch.equal(p, q) for p, q in zip(mha.parameters(), gqa.parameters()))
    x, m = torch.randn(2, 7, 32), causal_mask(7)
    torch.testing.assert_close(gqa(x, m), mha(x, x, x, attn_mask=m, need_weights=False)[0])


@pytest.mark.parametrize("kv", [1, 2, 8])
def test_gqa_equals_torch_sdpa_enable_gqa(kv):
    import torch.nn.functional as F

    from transformer_lite.modern import GroupedQueryAttention
    torch.manual_seed(5)
    g = GroupedQueryAttention(64, 8, kv)
    x = torch.randn(3, 9, 64)
    B, T = 3, 9
    q = g.q_proj(x).view(B, T, 8, 8).transpose(1, 2)
    k = g.k_proj(x).view(B, T, kv, 8).transpose(1, 2)
    v = g.v_proj(x).view(B, T, kv, 8).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    ref = g.out_proj(ref.transpose(1, 2).reshape(B, T, 64))
    from transformer_lite.masks import causal_mask
    torch.testing.assert_close(g(x, causal_mask(T)), ref)
    with pytest.raises(ValueError, match="num_kv_heads"):
        GroupedQueryAttention(64, 8, 3)


def _padded_causal(B=3, T=7):
    """A causal mask and a key padding mask under which row 0's first two queries have no key at all."""
    from transformer_lite.masks import causal_mask
    kpm = torch.zeros(B, T, dtype=torch.bool)
    kpm[0, :2] = True  # row 0: two padding keys in front; its queries 0 and 1 see only padding
    kpm[1, -1] = True
    return causal_mask(T), kpm


@pytest.mark.parametrize("fused", [True, False])
def test_gqa_with_all_heads_is_multihead_attention_with_padding_and_dead_rows(fused):
    """As many KV heads as heads, the same weights: MultiHeadAttention's numbers exactly, a padding mask included,
    on both attention paths; a query whose keys are all masked gets 0 before W^O (its bias), not NaN."""
    from transformer_lite._fused import use_fused
    from transformer_lite.attention import MultiHeadAttention
    from transformer_lite.modern import GroupedQueryAttention
    torch.manual_seed(7)
    mha, gqa = MultiHeadAttention(32, 4, bias=True), GroupedQueryAttention(32, 4, 4, bias=True)
    gqa.load_state_dict(mha.state_dict())
    x = torch.randn(3, 7, 32)
    causal, kpm = _padded_causal()
    with use_fused(fused), torch.no_grad():
        ours = gqa(x, causal, key_padding_mask=kpm)
        theirs, _ = mha(x, x, x, key_padding_mask=kpm, attn_mask=causal, need_weights=False)
        assert torch.equal(ours, theirs)
        additive = torch.zeros(7, 7).masked_fill(causal, float("-inf"))  # 0 = may attend, -inf = may not
        torch.testing.assert_close(gqa(x, additive), gqa(x, causal))
    assert not ours.isnan().any()
    assert torch.equal(ours[0, :2], gqa.out_proj.bias.expand(2, -1))  # attended to nothing: 0, then W^O's bias


@pytest.mark.parametrize("kv", [1, 2, 4])
def test_gqa_with_a_padding_mask_equals_torch_sdpa_enable_gqa(kv):
    from transformer_lite.modern import GroupedQueryAttention
    torch.manual_seed(8)
    g = GroupedQueryAttention(32, 4, kv)
    x = torch.randn(3, 7, 32)
    causal, kpm = _padded_causal()
    q = g.q_proj(x).view(3, 7, 4, 8).transpose(1, 2)
    k = g.k_proj(x).view(3, 7, kv, 8).transpose(1, 2)
    v = g.v_proj(x).view(3, 7, kv, 8).transpose(1, 2)
    keep = ~(causal | kpm[:, None, None, :])  # (B, 1, T, S): F.scaled_dot_product_attention's True = keep
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, enable_gqa=True)
    ref = g.out_proj(ref.transpose(1, 2).reshape(3, 7, 32))
    ours = g(x, causal, key_padding_mask=kpm)
    alive = keep.any(-1)[:, 0]  # (B, T): queries with at least one key (PyTorch gives NaN for the others)
    torch.testing.assert_close(ours[alive], ref[alive])
    assert torch.equal(ours[~alive], torch.zeros_like(ours[~alive]))  # no bias: exactly 0


def test_gqa_padding_mask_through_the_cache_and_bad_masks():
    from transformer_lite.attention import KVCache
    from transformer_lite.masks import causal_mask
    from transformer_lite.modern import GroupedQueryAttention
    torch.manual_seed(9)
    g = GroupedQueryAttention(32, 4, 2, rope_base=1e4).eval()
    x = torch.randn(3, 7, 32)
    causal, kpm = _padded_causal()
    full = g(x, causal, key_padding_mask=kpm)
    cache = KVCache()
    steps = [g(x[:, :4], causal_mask(4), key_padding_mask=kpm[:, :4], cache=cache)]
    steps += [g(x[:, t:t + 1], key_padding_mask=kpm[:, :t + 1], cache=cache) for t in range(4, 7)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(3, 7\), got \(3, 6\)"):
        g(x, causal, key_padding_mask=kpm[:, :6])
    with pytest.raises(ValueError, match="attn_mask must have shape"):
        g(x, causal[:6])
    with pytest.raises(TypeError, match="key_padding_mask must be a bool tensor"):
        g(x, key_padding_mask=kpm.long())


@pytest.mark.parametrize("kv", [8, 2, 1])  # MHA, GQA, MQA
def test_kv_cache_bytes_formula_equals_measured(kv):
    from transformer_lite.attention import KVCache
    from transformer_lite.modern import GroupedQueryAttention, kv_cache_bytes
    layers = [GroupedQueryAttention(64, 8, kv) for _ in range(3)]
    caches = [KVCache() for _ in layers]
    x = torch.randn(2, 5, 64)
    for layer, c in zip(layers, caches):
        layer(x, cache=c)
    measured = sum(c.k.numel() * c.k.element_size() + c.v.numel() * c.v.element_size() for c in caches)
    assert measured == kv_cache_bytes(2, 5, 3, kv, 8)
    assert kv_cache_bytes(2, 5, 3, kv, 8, torch.bfloat16) * 2 == measured


# --- online softmax, the assembled block, published parameter counts (chapter 15) ---------------------------

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T,bq,bk", [(37, 8, 5), (16, 16, 16), (9, 4, 1), (5, 64, 64)])
def test_tiled_attention_equals_softmax_attention(causal, T, bq, bk):
    from transformer_lite.modern import tiled_attention
    g = torch.Generator().manual_seed(T + bq + bk)
    q, k, v = (torch.randn(2, 3, T, 8, generator=g, dtype=torch.float64) for _ in range(3))
    q = q * 4  # large scores: without the running maximum, exp would lose precision
    out, largest = tiled_attention(q, k, v, bq, bk, causal=causal)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    assert largest == (min(bq, T), min(bk, T))  # never the whole (T, S) matrix unless one tile covers it


def test_tiled_attention_bad_arguments():
    from transformer_lite.modern import tiled_attention
    x = torch.randn(1, 1, 4, 8)
    with pytest.raises(ValueError, match="block_q"):
        tiled_attention(x, x, x, 0)
    with pytest.raises(ValueError, match="causal=True"):
        tiled_attention(x, torch.randn(1, 1, 5, 8), torch.randn(1, 1, 5, 8), causal=True)
    with pytest.raises(TypeError, match="causal"):
        tiled_attention(x, x, x, causal=1)
    with pytest.raises(ValueError, match="k must"):
        tiled_attention(x, torch.randn(1, 1, 4, 6), x)


@pytest.mark.parametrize("T", [1, 2, 7, 16])
@pytest.mark.parametrize("W", [1, 3, 7, 20])
def test_sliding_window_mask_keeps_itself_and_the_w_minus_1_keys_before(T, W):
    from transformer_lite.masks import causal_mask
    from transformer_lite.modern import sliding_window_mask
    mask = sliding_window_mask(T, W)
    assert mask.dtype == torch.bool and mask.shape == (T, T)
    for i in range(T):  # query i keeps exactly keys max(0, i - W + 1) .. i
        assert [j for j in range(T) if not mask[i, j]] == list(range(max(0, i - W + 1), i + 1))
    assert torch.equal(mask | causal_mask(T), mask)  # never more than the causal mask keeps
    assert torch.equal(mask, causal_mask(T)) == (W >= T)


def test_sliding_window_mask_in_attention_and_bad_arguments():
    from transformer_lite import scaled_dot_product_attention
    from transformer_lite.modern import sliding_window_mask
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 9, 4, generator=g) for _ in range(3))
    out, weights = scaled_dot_product_attention(q, k, v, attn_mask=sliding_window_mask(9, 3))
    assert torch.all((weights > 0).sum(-1) == torch.tensor([1, 2, 3, 3, 3, 3, 3, 3, 3]))  # at most W keys
    keep = ~sliding_window_mask(9, 3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=keep))  # its bool: True = keep
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(4, 0)
    with pytest.raises(TypeError, match="T"):
        sliding_window_mask(4.0, 2)


def test_gqa_with_rope_equals_reference():
    from transformer_lite.language_models import rotary
    from transformer_lite.modern import GroupedQueryAttention
    torch.manual_seed(5)
    attn = GroupedQueryAttention(32, 8, 2, rope_base=500.0).eval()
    x = torch.randn(2, 6, 32)
    q = attn.q_proj(x).view(2, 6, 8, 4).transpose(1, 2)
    k = attn.k_proj(x).view(2, 6, 2, 4).transpose(1, 2)
    v = attn.v_proj(x).view(2, 6, 2, 4).transpose(1, 2)
    ref = F.scaled_dot_product_attention(rotary(q, base=500.0), rotary(k, base=500.0), v, is_causal=True,
                                         enable_gqa=True)
    ref = attn.out_proj(ref.transpose(1, 2).reshape(2, 6, 32))
    from transformer_lite.masks import causal_mask
    torch.testing.assert_close(attn(x, causal_mask(6)), ref)
    with pytest.raises(ValueError, match="rope_base"):
        GroupedQueryAttention(32, 8, 2, rope_base=0.0)
    with pytest.raises(ValueError, match="even head_dim"):
        GroupedQueryAttention(24, 8, 2, rope_base=1e4)


def test_modern_lm_cache_equals_full_forward_and_generate():
    from transformer_lite.language_models import generate
    from transformer_lite.modern import ModernLM
    torch.manual_seed(6)
    model = ModernLM(40, 32, 4, 2, 2, 48).eval()
    ids = torch.randint(0, 40, (3, 9))
    full = model(ids)
    caches = model.new_caches()
    steps = [model(ids[:, :4], caches)] + [model(ids[:, t:t + 1], caches) for t in range(4, 9)]  # prefill, decode
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    a, b = generate(model, ids[:, :3], 7), generate(model, ids[:, :3], 7, use_cache=True)
    assert torch.equal(a, b) and a.shape == (3, 10)
    with pytest.raises(ValueError, match="caches"):
        model(ids, caches[:1])


def test_modern_block_is_pre_norm_residual():
    from transformer_lite.masks import causal_mask
    from transformer_lite.modern import ModernBlock
    torch.manual_seed(7)
    block = ModernBlock(16, 4, 2, 40).eval()
    assert not any(n.endswith("bias") for n, _ in block.named_parameters())  # no biases anywhere
    x = torch.randn(2, 5, 16)
    h = x + block.attention(block.attention_norm(x), causal_mask(5))
    torch.testing.assert_close(block(x, causal_mask(5)), h + block.feed_forward(block.ffn_norm(h)))


def test_published_parameter_counts():
    """Llama 2 7B (Touvron et al. 2023: "7B"; LLaMA's Table 2: 6.7B) and Qwen2.5-0.5B (model card: 0.49B,
    0.36B without embeddings), built on the meta device from their published configurations."""
    from transformer_lite.model import count_parameters
    from transformer_lite.modern import ModernLM, llama_ffn_dim
    with torch.device("meta"):
        llama2 = ModernLM(32000, 4096, 32, 32, 32)
        qwen = ModernLM(151936, 896, 14, 2, 24, 4864, tie_embeddings=True, qkv_bias=True, norm_eps=1e-6,
                        rope_base=1e6)
    assert llama_ffn_dim(4096) == 11008
    assert count_parameters(llama2) == 6_738_415_616
    assert count_parameters(qwen) == 494_032_768
    assert count_parameters(qwen) - 151936 * 896 == 357_898_112
    assert f"{count_parameters(llama2) / 1e9:.1f}" == "6.7"
    assert f"{count_parameters(qwen) / 1e9:.2f}" == "0.49"
    assert f"{(count_parameters(qwen) - 151936 * 896) / 1e9:.2f}" == "0.36"
