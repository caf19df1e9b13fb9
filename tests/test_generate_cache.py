"""generate(use_cache=True) gives the same tokens as generate without a cache (issue 23)."""
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
