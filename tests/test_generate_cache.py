"""generate(use_cache=True) gives the same tokens as generate without a cache: the cache only saves work."""
import pytest
import torch

from transformer_lite.language_models import DecoderOnlyLM, generate


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("L,n", [(1, 6), (3, 10), (7, 4)])
def test_cache_equals_no_cache(norm_first, L, n):
    torch.manual_seed(L + 10 * n)
    model = DecoderOnlyLM(20, d_model=32, nhead=4, num_layers=2, max_len=32, norm_first=norm_first)
    prompt = torch.randint(1, 20, (3, L))
    a = generate(model, prompt, n)
    b = generate(model, prompt, n, use_cache=True)
    assert torch.equal(a, b) and a.shape == (3, L + n)
    for seed in range(3):
        a = generate(model, prompt, n, temperature=1.5, generator=torch.Generator().manual_seed(seed))
        b = generate(model, prompt, n, temperature=1.5, generator=torch.Generator().manual_seed(seed), use_cache=True)
        assert torch.equal(a, b)


def test_cache_bad_arguments():
    model = DecoderOnlyLM(20, d_model=16, nhead=2, num_layers=1, max_len=16)
    with pytest.raises(TypeError, match="use_cache"):
        generate(model, torch.ones(1, 2, dtype=torch.long), 3, use_cache=1)
    with pytest.raises(TypeError, match="model"):
        generate(lambda ids: ids, torch.ones(1, 2, dtype=torch.long), 3, use_cache=True)


@pytest.mark.parametrize("modern_model", [False, True])
def test_cache_equals_no_cache_with_eos_and_left_padding(modern_model):
    """Rows that finish early (eos_id) are padded the same way with and without the cache; a left-padded
    prompt (pad_id keys masked) gives the same tokens too (the GPT-style model masks padding keys)."""
    from transformer_lite.modern import ModernLM
    torch.manual_seed(11)
    if modern_model:
        model = ModernLM(12, 16, 4, 2, 2, 24).eval()
    else:
        model = DecoderOnlyLM(12, d_model=16, nhead=2, num_layers=2, max_len=40).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.5)  # GPT's 0.02 makes every row generate the same token from an untrained model
    prompt = torch.randint(1, 12, (6, 4))
    free = generate(model, prompt, 12)
    new = free[:, 4:]
    for eos in new.unique().tolist():  # a token the rows generate at different steps: some rows stop early
        firsts = {int((row == eos).nonzero()[0]) if (row == eos).any() else None for row in new}
        if len(firsts) > 1:
            break
    else:
        pytest.fail("no token ends the rows at different steps")
    a, b = generate(model, prompt, 12, eos_id=eos), generate(model, prompt, 12, eos_id=eos, use_cache=True)
    assert torch.equal(a, b) and (a[:, 4:] == 0).any()  # finished rows padded alike
    if not modern_model:
        padded = torch.cat([torch.zeros(6, 2, dtype=torch.long), prompt], dim=1)  # two pad keys in front
        assert torch.equal(generate(model, padded, 8), generate(model, padded, 8, use_cache=True))
