"""Chapter 2 (positional encoding): the chapter's claims, checked through the package.

The literal transcription of the formula (``pe_from_formula``) and the rotation matrix
(``rotation``) are teaching code that lives only in the notebook; they are read from the notebook
here (not pasted twice) and checked against the package.
"""
import math
from pathlib import Path

import pytest
import torch

import transformer_lite as tl
from notebook_code import code_cell
from transformer_lite.book import N_

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "02_positional_encoding.ipynb"


def _notebook_function(name):
    src = code_cell(NOTEBOOK, f"def {name}(")
    src = src.split("\ntorch.testing")[0].split("\ntorch.set_printoptions")[0]  # the definition, not the demo
    namespace = {"torch": torch, "math": math}
    exec(compile(src, str(NOTEBOOK), "exec"), namespace)
    return namespace[name]


@pytest.fixture(scope="module")
def pe_from_formula():
    return _notebook_function("pe_from_formula")


@pytest.fixture(scope="module")
def rotation():
    return _notebook_function("rotation")


def test_attention_without_positions_is_permutation_equivariant():
    attn = tl.MultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 6, 16)
    perm = torch.tensor([5, 2, 0, 4, 1, 3])
    with torch.no_grad():
        y, _ = attn(x, x, x)
        y_perm, _ = attn(x[:, perm], x[:, perm], x[:, perm])
        torch.testing.assert_close(y_perm, y[:, perm])
        pe = tl.sinusoidal_positional_encoding(6, 16)
        z, _ = attn(x + pe, x + pe, x + pe)
        xs = x[:, perm] + pe
        z_perm, _ = attn(xs, xs, xs)
    assert (z_perm - z[:, perm]).abs().max() > 1e-3  # positions make order matter


@pytest.mark.parametrize("L,D", [(1, 2), (50, 16), (33, 6)])
def test_table_is_the_papers_formula(pe_from_formula, L, D):
    torch.testing.assert_close(tl.sinusoidal_positional_encoding(L, D), pe_from_formula(L, D).float())


def test_first_dimensions_are_fast_last_are_slow():
    D, L = 128, 512
    lam = tl.wavelengths(D)
    assert math.isclose(lam[0].item(), 2 * math.pi, rel_tol=1e-6)
    assert torch.all(lam[0::2][1:] > lam[0::2][:-1])
    assert lam[-1] < 10000 * 2 * math.pi
    torch.testing.assert_close(lam[0::2], lam[1::2])  # a sine and its cosine share a wavelength
    # Measured from the table: how far each (sin, cos) pair moves per position shrinks with the index.
    pe = tl.sinusoidal_positional_encoding(L, D)
    step = (pe[1:] - pe[:-1]).view(L - 1, D // 2, 2).norm(dim=-1).mean(0)
    assert torch.all(step[1:] < step[:-1])
    torch.testing.assert_close(step, 2 * torch.sin(math.pi / lam[0::2]), atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("k", [1, 2, 17, 100, 511])
def test_shift_is_one_rotation_for_every_position(rotation, pe_from_formula, k):
    L, D = 512, 64
    pe64 = pe_from_formula(L, D)
    torch.testing.assert_close(pe64[:-k] @ rotation(k, D).T, pe64[k:], atol=1e-10, rtol=0)
    pe32 = tl.sinusoidal_positional_encoding(L, D)
    torch.testing.assert_close(pe32[:-k] @ rotation(k, D).T.float(), pe32[k:], atol=1e-4, rtol=0)


def test_rotation_is_orthogonal_and_composes(rotation):
    D = 32
    torch.testing.assert_close(rotation(5, D).T @ rotation(5, D), torch.eye(D, dtype=torch.float64))
    torch.testing.assert_close(rotation(2, D) @ rotation(9, D), rotation(11, D))
    torch.testing.assert_close(rotation(-4, D), rotation(4, D).T)
    assert not torch.allclose(rotation(1, D), rotation(2, D))


def test_dot_product_depends_only_on_distance():
    L, D = 96, 32
    pe = tl.sinusoidal_positional_encoding(L, D).double()
    dots = pe @ pe.T
    p = torch.arange(L)
    dist = (p[:, None] - p[None, :]).abs()
    for d in (0, 1, 7, 50):
        vals = dots[dist == d]
        assert vals.max() - vals.min() < 1e-4
    diag = dots.diagonal().clone()
    assert torch.all(diag > dots.fill_diagonal_(-1e9).max(dim=1).values)  # nothing is closer to p than p


def test_interleaved_and_concatenated_are_a_column_permutation():
    L, D = 40, 12
    inter = tl.sinusoidal_positional_encoding(L, D, interleaved=True)
    concat = tl.sinusoidal_positional_encoding(L, D, interleaved=False)
    perm = torch.cat([torch.arange(0, D, 2), torch.arange(1, D, 2)])
    torch.testing.assert_close(concat, inter[:, perm])
    assert not torch.allclose(concat, inter)


def test_beyond_max_len():
    D = 16
    short, long = tl.PositionalEncoding(D, max_len=32), tl.PositionalEncoding(D, max_len=300)
    with pytest.raises(ValueError, match="max_len"):
        short(torch.zeros(1, 33, D))
    torch.testing.assert_close(long.pe[:32], short.pe)  # a longer table starts with the same rows
    x = torch.randn(2, 5, D)
    torch.testing.assert_close(long(x, offset=100), x + long.pe[100:105])
    learned = tl.LearnedPositionalEncoding(D, max_len=32)
    with pytest.raises(ValueError, match="max_len"):
        learned(torch.zeros(1, 33, D))
    assert tl.count_parameters(learned) == 32 * D and tl.count_parameters(short) == 0


def test_slow_dimensions_take_new_values_beyond_the_training_length():
    D, L = 64, 64
    table = tl.sinusoidal_positional_encoding(2 * L, D).double()
    train, beyond = table[:L], table[L:]
    lo, hi = train.min(0).values, train.max(0).values
    outside = (torch.maximum(lo - beyond, beyond - hi) > 0.01 * (hi - lo)).double().mean(0)
    lam = tl.wavelengths(D).double()
    assert outside[lam <= L].max() == 0
    assert outside[lam > 10 * L].min() == 1


# ---- the circulating reversed frequencies; adding vs concatenating; dropout on the sum ----------------------

def test_reversed_frequencies_give_the_circulating_first_row_at_512():
    from transformer_lite import pitfalls

    right = tl.sinusoidal_positional_encoding(4, 512)
    wrong = pitfalls.positional_encoding_reversed_frequencies(4, 512)
    assert [round(v, 4) for v in right[1, :2].tolist()] == [0.8415, 0.5403]
    assert [round(v, 4) for v in wrong[1, :2].tolist()] == [0.0001, 1.0]
    torch.testing.assert_close(wrong[:, :2], right[:, -2:])


def test_a_map_of_a_concatenation_is_a_sum_of_maps():
    torch.manual_seed(0)
    x, p, W = torch.randn(5, 8), tl.sinusoidal_positional_encoding(5, 8), torch.randn(3, 16)
    torch.testing.assert_close(torch.cat([x, p], 1) @ W.T, x @ W[:, :8].T + p @ W[:, 8:].T)
    torch.testing.assert_close(torch.cat([x, p], 1) @ torch.cat([W[:, :8]] * 2, 1).T, (x + p) @ W[:, :8].T)


def test_positions_fill_few_directions_that_random_words_barely_use():
    pe = tl.sinusoidal_positional_encoding(100, 512).double()
    _, s, Vh = torch.linalg.svd(pe, full_matrices=False)
    r = int(((s ** 2).cumsum(0) / (s ** 2).sum() < 0.99).sum()) + 1
    words = torch.randn(1000, 512, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    share = ((words @ Vh[:r].T) ** 2).sum(1) / (words ** 2).sum(1)
    assert r < 512 / 10 and abs(share.mean() / (r / 512) - 1) < 0.1


def test_dropout_acts_on_the_sum_in_training_only():
    torch.manual_seed(0)
    module = tl.PositionalEncoding(16, max_len=64, dropout=0.1)
    x = torch.randn(8, 40, 16)
    summed = x + tl.sinusoidal_positional_encoding(40, 16)
    out = module.train()(x)
    kept = out != 0
    torch.testing.assert_close(out[kept], summed[kept] / 0.9)
    assert 0.06 < 1 - kept.float().mean() < 0.14
    torch.testing.assert_close(module.eval()(x), summed)
    assert tl.PositionalEncoding(16).dropout.p == 0.0
    model = tl.Transformer(src_vocab_size=5, tgt_vocab_size=5, d_model=16, nhead=2, num_encoder_layers=1,
                           num_decoder_layers=1, dim_feedforward=16)
    assert model.src_pos.dropout.p == model.tgt_pos.dropout.p == 0.1


# ---- what positions let a model do: attend k back with M_k; a causal decoder knows positions; train short, test long

@pytest.mark.parametrize("k", [1, 3, 10])
def test_projections_built_from_M_k_attend_exactly_k_back(rotation, k):
    L, D = 64, 64
    pe = tl.sinusoidal_positional_encoding(L, D)
    _, w = tl.scaled_dot_product_attention(pe @ (16.0 * torch.eye(D)), pe @ rotation(k, D).T.float(), pe)
    rows = torch.arange(k, L)
    assert torch.equal(w[rows].argmax(-1), rows - k)
    assert w[rows, rows - k].min() > 0.5
    _, w_plain = tl.scaled_dot_product_attention(pe * 16.0, pe, pe)   # without M_k: each position looks at itself
    assert torch.equal(w_plain.argmax(-1), torch.arange(L))


def test_causal_uniform_attention_gives_position_dependent_outputs():
    T, D = 8, 16
    bos, word = torch.randn(2, D, generator=torch.Generator().manual_seed(1))
    seq = torch.stack([bos] + [word] * (T - 1))
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    out, _ = tl.scaled_dot_product_attention(torch.zeros(T, 4), torch.zeros(T, 4), seq, attn_mask=mask)
    t = torch.arange(T, dtype=torch.float32)[:, None]
    torch.testing.assert_close(out, (bos + t * word) / (t + 1))
    full, _ = tl.scaled_dot_product_attention(torch.zeros(T, 4), torch.zeros(T, 4), seq)
    torch.testing.assert_close(full, full[:1].expand(T, D))


def test_the_extrapolation_experiment_fails_beyond_the_training_length():
    ns = {"torch": torch, "tl": tl, "N_": N_}       # the cells mark their printed lines with N_
    src = code_cell(NOTEBOOK, "from transformer_lite.book.runtime import book_seed")   # the model
    src += "\n" + code_cell(NOTEBOOK, "def accuracy_by_position").replace("check.reveal", "(lambda *a: None)")
    exec(compile(src, str(NOTEBOOK), "exec"), ns)   # runs the chapter's cell, with its asserts
    assert ns["short_acc"] > 0.95 and ns["unseen"] < 0.6


def test_bug_hunt_2_2_suspect_passes_exercise_2_1s_test_and_is_the_base_100_table():
    """Exercise 2.2's text: the chapter's suspect passes 2.1's test (rows of length sqrt(D/2), PE(p)·PE(q) a
    function of p - q) yet is not §3.5's table; the check's copy of the slip is the notebook's suspect."""
    from transformer_lite.book.check import ch02

    namespace = {"torch": torch}
    exec(compile(code_cell(NOTEBOOK, "def suspect_table(", until="suspect ="), str(NOTEBOOK), "exec"), namespace)
    suspect = namespace["suspect_table"]
    torch.testing.assert_close(suspect(50, 16), ch02._exponent_i(50, 16))
    assert ch02._distance_test(suspect(200, 64)) and not ch02._distance_test(ch02._column_index(200, 64))
    assert not torch.allclose(suspect(50, 16), tl.sinusoidal_positional_encoding(50, 16), atol=0.1)
    base_100 = 1 / 100 ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16)             # 10000^(i/d) = 100^(2i/d)
    angles = torch.arange(50, dtype=torch.float64)[:, None] * base_100
    torch.testing.assert_close(suspect(50, 16)[:, 0::2].double(), torch.sin(angles), atol=1e-5, rtol=0)
    assert round(2 * math.pi * 100 ** (510 / 512)) == 617 and round(2 * math.pi * 10000 ** (510 / 512)) == 60611
    assert ch02.exercise_2_2(lambda L, D: tl.sinusoidal_positional_encoding(L, D))
    assert not ch02.exercise_2_2(suspect)
