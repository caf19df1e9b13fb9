"""Chapter 15 (since 2017): the chapter's claims, checked through the package.

RoPE is chapter 2's rotation M_m (in row form) and makes scores depend on distance only; RMSNorm is
nn.RMSNorm and LayerNorm on zero-mean inputs; SwiGLU with d_ff = 8D/3 has the ReLU FFN's parameters; the
KV-cache sizes the chapter quotes; the shipped decoder-only cache speed-up; the published parameter counts
by the per-layer formula. The pieces themselves are tested in tests/test_modern.py.
"""
import torch
import torch.nn as nn

import transformer_lite as tl
from transformer_lite import language_models as lm, modern
from transformer_lite.book.check.ch02 import _rotation as _chapter2_rotation  # chapter 2's M_k, as chapter 2 writes it
from transformer_lite.book.pretrained import benchmark_results


def test_rotary_is_chapter2_rotation_transposed():
    D, L = 32, 300
    x = torch.randn(L, D, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    expected = torch.stack([x[m] @ _chapter2_rotation(m, D) for m in range(L)])
    torch.testing.assert_close(lm.rotary(x), expected)
    # and it is not the other direction: M_m itself (not transposed) gives something else
    wrong = torch.stack([x[m] @ _chapter2_rotation(m, D).T for m in range(L)])
    assert (lm.rotary(x) - wrong).abs().max() > 0.1


def test_rotary_positions_and_float64_angles():
    """Angles are float64: position 100,000 in float32 input is still a rotation to ~1e-6."""
    x = torch.randn(4, 1, 64, generator=torch.Generator().manual_seed(1))
    pos = torch.tensor([100_000])
    ref = lm.rotary(x.double(), pos).float()
    torch.testing.assert_close(lm.rotary(x, pos), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lm.rotary(x, pos).norm(dim=-1), x.norm(dim=-1))


def test_rmsnorm_claims():
    x = torch.randn(5, 64, generator=torch.Generator().manual_seed(2)) * 3 + 1
    rms, ln = modern.RMSNorm(64, eps=1e-6), tl.LayerNorm(64, eps=1e-6)
    torch.testing.assert_close(rms(x), nn.RMSNorm(64, eps=1e-6)(x))
    c = x - x.mean(-1, keepdim=True)
    torch.testing.assert_close(rms(c), ln(c))
    assert (rms(x) - ln(x)).abs().max() > 0.1


def test_kv_cache_sizes_quoted():
    f16 = torch.float16
    assert modern.kv_cache_bytes(8, 4096, 32, 32, 128, f16) == 16 * 2**30
    assert modern.kv_cache_bytes(8, 4096, 32, 8, 128, f16) == 4 * 2**30
    assert modern.kv_cache_bytes(1, 1, 32, 32, 128, f16) == 512 * 1024
    assert modern.kv_cache_bytes(1, 1, 24, 2, 64, f16) == 12 * 1024


def test_prediction_15_1_llama2_7b_cache_outgrows_its_weights():
    with torch.device("meta"):
        llama = modern.ModernLM(32000, 4096, nhead=32, num_kv_heads=32, num_layers=32)
    weights = tl.count_parameters(llama) * 2                       # 16-bit numbers
    assert weights == 6_738_415_616 * 2 and f"{weights / 2**30:.1f}" == "12.6"   # the numbers the chapter quotes
    assert modern.kv_cache_bytes(8, 4096, 32, 32, 128, torch.float16) > weights


def test_shipped_decoder_only_cache_speedup():
    bench = benchmark_results()["lm_kv_cache"]
    assert set(bench["models"]) == {"gpt", "modern_gqa"}
    for r in bench["models"].values():
        assert r["speedup"] > 2 and r["full_seconds"] > r["cached_seconds"]
        assert 3_000_000 < r["parameters"] < 4_000_000
    assert bench["tokens"] == 128


def test_published_counts_by_formula():
    def formula(V, D, N, H_kv, D_h, F_, tied, qkv_bias):
        layer = 2 * D * D + 2 * D * H_kv * D_h + 3 * D * F_ + 2 * D + (D + 2 * H_kv * D_h if qkv_bias else 0)
        return V * D * (1 if tied else 2) + N * layer + D

    with torch.device("meta"):
        llama = modern.ModernLM(32000, 4096, nhead=32, num_kv_heads=32, num_layers=32)
        qwen = modern.ModernLM(151936, 896, nhead=14, num_kv_heads=2, num_layers=24, dim_feedforward=4864,
                               tie_embeddings=True, qkv_bias=True)
    assert tl.count_parameters(llama) == formula(32000, 4096, 32, 32, 128, 11008, False, False)
    assert tl.count_parameters(qwen) == formula(151936, 896, 24, 2, 64, 4864, True, True)


def test_exercise_15_1_llama3_8b_count_and_cache():
    with torch.device("meta"):
        model = modern.ModernLM(128_256, 4096, nhead=32, num_kv_heads=8, num_layers=32, dim_feedforward=14_336)
    assert tl.count_parameters(model) == 8_030_261_248  # Meta's 8.03B
    assert modern.kv_cache_bytes(1, 1, 32, 8, 128, torch.bfloat16) == 128 * 1024


def test_exercise_15_2_the_two_rope_layouts_give_the_same_scores():
    from transformer_lite.book.check import ch15

    g = torch.Generator().manual_seed(1)
    H, d_h, D = 2, 8, 16
    w_q, w_k = (torch.randn(H * d_h, D, generator=g, dtype=torch.float64) for _ in range(2))
    x = torch.randn(5, D, generator=g, dtype=torch.float64)
    halves = lambda w: w.reshape(H, d_h // 2, 2, -1).transpose(1, 2).reshape(w.shape)  # noqa: E731
    assert torch.allclose(ch15._scores(w_q, w_k, x, H, lm.rotary),
                          ch15._scores(halves(w_q), halves(w_k), x, H, ch15._rotate_half_rope), atol=1e-10)
    assert not torch.allclose(ch15._scores(w_q, w_k, x, H, lm.rotary),
                              ch15._scores(w_q, w_k, x, H, ch15._rotate_half_rope), atol=1e-3)


def test_exercise_15_4_mean_pooling_gives_mha_at_full_heads_and_the_check_wants_the_mean():
    from transformer_lite.book.check import ch15

    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(32, 4, bias=True).eval()
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        torch.testing.assert_close(ch15._mean_pooled(mha, 4)(x), mha(x, x, x, need_weights=False)[0])
        k = mha.k_proj.weight.reshape(4, 8, 32)  # (H, D_h, D): groups of neighbouring heads, (0, 1) and (2, 3)
        torch.testing.assert_close(ch15._mean_pooled(mha, 2).k_proj.weight,
                                   torch.cat([(k[0] + k[1]) / 2, (k[2] + k[3]) / 2]))
    right = ch15.exercise_15_4(lambda m, n: ch15._mean_pooled(m, n))
    first_head = ch15.exercise_15_4(lambda m, n: ch15._mean_pooled(m, n, pool=lambda w: w[:, 0]))
    assert right.status == "right" and "1 (multi-query)" in right.message
    assert first_head.status == "wrong" and "mean-pooled" in first_head.message


def test_exercise_15_5_sliding_window_numbers_and_the_check():
    """Exercise 15.5's report: W >= T is the causal mask, the receptive field after L layers is L (W - 1) + 1
    (measured on masks, and Mistral's 131,041 for 32 layers of W = 4,096), and the scores kept at T = 32,768."""
    from transformer_lite.book.check import ch15

    for T, W, L in [(64, 8, 3), (40, 5, 4), (30, 2, 1)]:
        assert ch15._receptive_field(modern.sliding_window_mask(T, W), L) == L * (W - 1) + 1
    assert torch.equal(modern.sliding_window_mask(12, 12), tl.causal_mask(12))
    T, W = 1024, 128   # the kept-scores formula of the check, counted on a mask
    assert int((~modern.sliding_window_mask(T, W)).sum()) == W * (W + 1) // 2 + (T - W) * W
    right = ch15.exercise_15_5(modern.sliding_window_mask)
    assert right.status == "right" and "131,041" in right.message and "125,831,168" in right.message
    assert "536,887,296" in right.message and 32 * 4095 + 1 == 131_041
    off_by_one = ch15.exercise_15_5(ch15._window_slip("W + 1 keys"))
    assert off_by_one.status == "wrong" and "W + 1 keys" in off_by_one.hint
