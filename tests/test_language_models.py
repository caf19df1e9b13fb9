"""transformer_lite.language_models: decoder-only and masked LMs, BERT's corruption, generation, baselines, RoPE."""
import math

import pytest
import torch

import transformer_lite as tl
from transformer_lite import language_models as lm

V, MASK = 30, 29
SPECIALS = [0, 1, 2, 3]


def _ids(B=64, L=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, MASK, (B, L), generator=g)
    ids[:, 0], ids[:, -1] = 1, 2  # <bos> ... <eos>
    ids[: B // 2, -4:] = 0  # some right padding
    return ids


def test_decoder_only_is_causal_and_masked_lm_is_not():
    torch.manual_seed(0)
    for causal in (True, False):
        model = lm.LanguageModel(V, d_model=16, nhead=2, num_layers=2, max_len=12, causal=causal).eval()
        a = torch.randint(4, V, (1, 8))
        b = a.clone()
        b[0, 5:] = (b[0, 5:] + 1 - 4) % (V - 4) + 4  # change the future
        with torch.no_grad():
            same_prefix = torch.allclose(model(a)[0, :5], model(b)[0, :5], atol=1e-6)
        assert same_prefix == causal
        assert model(a).shape == (1, 8, V)


def test_padding_does_not_change_real_positions():
    torch.manual_seed(0)
    model = lm.DecoderOnlyLM(V, d_model=16, nhead=2, num_layers=2, max_len=12).eval()
    ids = torch.tensor([[1, 5, 6, 7]])
    padded = torch.tensor([[1, 5, 6, 7, 0, 0]])
    with torch.no_grad():
        assert torch.allclose(model(ids)[0], model(padded)[0, :4], atol=1e-6)


@pytest.mark.parametrize("norm_first", [False, True])
def test_forward_with_cache_equals_forward(norm_first):
    """The cached path runs the same layers: the prefill, and the later tokens one at a time or in chunks, give
    forward's logits (a left-padded row too: its pad keys stay masked through the cache)."""
    torch.manual_seed(3)
    model = lm.DecoderOnlyLM(V, d_model=16, nhead=2, num_layers=2, max_len=16, norm_first=norm_first).eval()
    ids = torch.randint(4, V, (3, 9))
    ids[0, :2] = 0  # left padding
    with torch.no_grad():
        full = model(ids)
        caches = model.new_caches()
        prefill = model.forward_with_cache(ids[:, :4], ids[:, :4], caches)
        torch.testing.assert_close(prefill, full[:, :4])
        steps = [model.forward_with_cache(ids[:, t:t + 1], ids[:, :t + 1], caches) for t in range(4, 9)]
        torch.testing.assert_close(torch.cat([prefill] + steps, dim=1), full)
        caches = model.new_caches()
        chunks = [model.forward_with_cache(ids[:, a:b], ids[:, :b], caches) for a, b in ((0, 3), (3, 7), (7, 9))]
        torch.testing.assert_close(torch.cat(chunks, dim=1), full)
    assert [len(c) for c in caches] == [9, 9]
    with pytest.raises(ValueError, match="one entry per layer"):
        model.forward_with_cache(ids, ids, caches[:1])


def test_encoder_layer_with_a_cache_equals_the_layer_over_the_whole_sequence():
    torch.manual_seed(4)
    layer = tl.EncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, norm_first=True).eval()
    x = torch.randn(2, 6, 16)
    full = layer(x, tl.causal_mask(6))
    cache = tl.KVCache()
    first = layer(x[:, :4], tl.causal_mask(4), cache=cache)
    rest, weights = layer.forward_with_attention(x[:, 4:], tl.causal_mask(2, offset=4), cache=cache)
    assert weights.shape == (2, 2, 2, 6)  # the 2 new queries over all 6 keys
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full)


def test_tying_and_parameter_counts_on_meta():
    tied = lm.DecoderOnlyLM(V, d_model=16, nhead=2, num_layers=1, max_len=8)
    untied = lm.DecoderOnlyLM(V, d_model=16, nhead=2, num_layers=1, max_len=8, tie_embeddings=False)
    assert tied.output.weight is tied.token_embedding.weight
    assert tl.count_parameters(untied) - tl.count_parameters(tied) == V * 16 + V
    with torch.device("meta"):
        gpt2 = lm.DecoderOnlyLM(50257, d_model=768, nhead=12, num_layers=12, max_len=1024)
    assert tl.count_parameters(gpt2) == 124_439_808


def test_post_ln_has_no_final_norm():
    assert lm.MaskedLM(V, d_model=16, nhead=2, norm_first=False).layers.norm is None
    assert lm.MaskedLM(V, d_model=16, nhead=2).layers.norm is not None


def test_mask_tokens_rules_exactly():
    ids = _ids(256, 30)
    g = torch.Generator().manual_seed(0)
    inputs, labels = lm.mask_tokens(ids, mask_id=MASK, vocab_size=V, special_ids=SPECIALS, generator=g)
    special = torch.isin(ids, torch.tensor(SPECIALS))
    selected = labels != lm.IGNORE_INDEX
    assert not (selected & special).any()  # specials are never selected
    assert torch.equal(inputs[special], ids[special])  # nor changed
    assert torch.equal(labels[selected], ids[selected])  # labels: the original token
    assert torch.equal(inputs[~selected], ids[~selected])  # unselected tokens are untouched
    changed = selected & (inputs != MASK)
    assert not torch.isin(inputs[changed], torch.tensor(SPECIALS + [MASK])).any()  # random ids are ordinary


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_mask_tokens_rates(seed):
    ids = _ids(512, 40, seed)
    g = torch.Generator().manual_seed(seed)
    inputs, labels = lm.mask_tokens(ids, mask_id=MASK, vocab_size=V, special_ids=SPECIALS, generator=g)
    ordinary = ~torch.isin(ids, torch.tensor(SPECIALS))
    n = ordinary.sum().item()
    selected = labels != -100
    k = selected.sum().item()
    masked = (inputs == MASK).sum().item()
    kept = (selected & (inputs == ids)).sum().item()
    # binomial standard errors: 0.15 of n ~ 17,000 tokens -> sd 0.0027; 0.8 of k ~ 2,600 -> sd 0.008
    assert abs(k / n - 0.15) < 0.01
    assert abs(masked / k - 0.8) < 0.03
    assert abs(kept / k - (0.1 + 0.1 / 25)) < 0.025  # 10 % kept, plus random draws that hit the original (1/25)


def test_mask_tokens_is_seeded_and_custom_ignore_index():
    ids = _ids()
    a, b = (lm.mask_tokens(ids, mask_id=MASK, vocab_size=V, special_ids=SPECIALS,
                           generator=torch.Generator().manual_seed(5)) for _ in range(2))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    _, labels = lm.mask_tokens(ids, mask_id=MASK, vocab_size=V, special_ids=SPECIALS, ignore_index=0,
                               select_prob=0.0)
    assert (labels == 0).all()
    inputs, labels = lm.mask_tokens(ids, mask_id=MASK, vocab_size=V, special_ids=SPECIALS, select_prob=1.0,
                                    mask_prob=1.0, random_prob=0.0)
    assert torch.equal(inputs == MASK, ~torch.isin(ids, torch.tensor(SPECIALS)))


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(ids=torch.zeros(2, 3)), TypeError, "ids"),
    (dict(ids=torch.full((2, 3), 40)), ValueError, "ids"),
    (dict(mask_id=30), ValueError, "mask_id"),
    (dict(select_prob=1.5), ValueError, "select_prob"),
    (dict(mask_prob=0.95, random_prob=0.1), ValueError, "mask_prob + random_prob"),
    (dict(generator=0), TypeError, "generator"),
    (dict(special_ids=list(range(30))), ValueError, "special_ids"),
])
def test_mask_tokens_validates(kwargs, exc, words):
    args = dict(ids=_ids(), mask_id=MASK, vocab_size=V, special_ids=SPECIALS) | kwargs
    ids = args.pop("ids")
    with pytest.raises(exc, match=words.replace("+", r"\+")):
        lm.mask_tokens(ids, **args)


class _Counter(torch.nn.Module):
    """A fake decoder-only model: always predicts (last token + 1) mod V, with a fixed distribution."""

    def forward(self, ids):
        logits = torch.full((*ids.shape, V), -5.0)
        logits.scatter_(-1, ((ids + 1) % V).unsqueeze(-1), 5.0)
        return logits


def test_generate_greedy_eos_and_padding():
    out = lm.generate(_Counter(), torch.tensor([[1], [0]]), 5, eos_id=3, pad_id=0)
    assert out.tolist() == [[1, 2, 3, 0], [0, 1, 2, 3]]  # row 0 ends first and is padded; stop when both end
    out = lm.generate(_Counter(), torch.tensor([[5]]), 4)
    assert out.tolist() == [[5, 6, 7, 8, 9]]


def test_generate_sampling_is_seeded_and_top_k_1_is_greedy():
    torch.manual_seed(0)
    model = lm.DecoderOnlyLM(V, d_model=16, nhead=2, num_layers=1, max_len=16)
    start = torch.ones(3, 1, dtype=torch.long)
    a = lm.generate(model, start, 8, temperature=1.5, generator=torch.Generator().manual_seed(1))
    b = lm.generate(model, start, 8, temperature=1.5, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    greedy = lm.generate(model, start, 8)
    top1 = lm.generate(model, start, 8, temperature=2.0, top_k=1, generator=torch.Generator().manual_seed(2))
    assert torch.equal(greedy, top1) and model.training  # mode restored
    with pytest.raises(ValueError, match="temperature"):
        lm.generate(model, start, 3, temperature=-1.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        lm.generate(model, start, 0)


def test_perplexity_of_a_uniform_model_is_V():
    class Uniform(torch.nn.Module):
        def forward(self, ids):
            return torch.zeros(*ids.shape, V)

    assert lm.lm_perplexity(Uniform(), _ids()) == pytest.approx(V, rel=1e-5)
    table = torch.full((V, V), -math.log(V))
    assert lm.bigram_perplexity(table, _ids()) == pytest.approx(V, rel=1e-5)


def test_bigram_is_normalised_and_learns_a_deterministic_chain():
    chain = torch.tensor([[1, 4, 5, 6, 7, 2]] * 10)
    logp = lm.bigram_log_probs(chain, V, lam=0.9)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(V), atol=1e-5)
    assert logp[4].argmax() == 5 and logp[6].argmax() == 7
    assert lm.bigram_perplexity(logp, chain) < 1.2 < lm.bigram_perplexity(lm.bigram_log_probs(chain, V, lam=0.1), chain)


def test_rotary_depends_only_on_offset_and_preserves_norms():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 32, generator=g)
    def score(m, n):
        return (lm.rotary(q[None], torch.tensor([m])) @ lm.rotary(k[None], torch.tensor([n])).T).item()

    assert score(5, 2) == pytest.approx(score(105, 102), abs=1e-3)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-2)
    x = torch.randn(3, 7, 32, generator=g)
    assert torch.allclose(lm.rotary(x).norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.equal(lm.rotary(x)[:, 0], x[:, 0])  # position 0: no rotation
    with pytest.raises(ValueError, match="D even"):
        lm.rotary(torch.randn(4, 5))
    with pytest.raises(ValueError, match="positions"):
        lm.rotary(torch.randn(4, 6), torch.arange(3))


def test_language_model_validates():
    with pytest.raises(TypeError, match="causal"):
        lm.LanguageModel(V, causal=1)
    with pytest.raises(ValueError, match="ids"):
        lm.DecoderOnlyLM(V, d_model=16, nhead=2)(torch.tensor([[V]]))
    with pytest.raises(ValueError, match="max_len"):
        lm.DecoderOnlyLM(V, d_model=16, nhead=2, max_len=4)(torch.ones(1, 5, dtype=torch.long))
