"""Checks of chapter 2's exercises (positional encoding; transformer_lite.book.check)."""
from __future__ import annotations

import torch

import transformer_lite as tl

from . import Wrong, call, close, exercise, tensor

# ---- 2.1: the first dimension whose wavelength exceeds 1,000 positions (d_model = 512) -------------

_D21, _LIMIT21 = 512, 1000.0


def _first_slow_dimension() -> int:
    return int((tl.wavelengths(_D21) > _LIMIT21).nonzero()[0])


@exercise("2.1", wrong=[lambda: (_first_slow_dimension() // 2,),   # the pair index i, not the dimension 2i
                        lambda: (_first_slow_dimension() - 1,),    # the cosine of the previous pair
                        lambda: (0,),                               # frequencies read backwards
                        lambda: (_D21 - 1 - _first_slow_dimension(),)])
def exercise_2_1(my_j):
    try:
        j = int(my_j)
    except (TypeError, ValueError):
        raise Wrong(f"my_j should be a dimension index (an int from 0 to {_D21 - 1}), "
                    f"got {type(my_j).__name__}.") from None
    if j != my_j:
        raise Wrong(f"my_j should be a whole number (a dimension index), got {my_j!r}.",
                    hint="round up: you want the smallest pair index i with 2π·10000^(2i/512) > 1000.")
    expected = _first_slow_dimension()
    if j == expected:
        return f"dimension {j} (the sine of pair {j // 2}) is the first whose wavelength exceeds 1,000 positions."
    lam = tl.wavelengths(_D21)
    if not 0 <= j < _D21:
        raise Wrong(f"my_j = {j} is not a dimension of a d_model = {_D21} table (0 to {_D21 - 1}).")
    if j == expected // 2:
        hint = "that is the pair index i. Pair i fills the columns 2i (sine) and 2i + 1 (cosine): the answer is 2i."
    elif j == 0 or lam[j] < lam[_D21 - 1 - j]:
        hint = ("the wavelength 2π·10000^(2i/d_model) grows with the index: dimension 0 is the fastest "
                "(2π positions), the last ones the slowest. Solve 2π·10000^(2i/512) > 1000 for i.")
    elif lam[j] <= _LIMIT21:
        hint = (f"dimension {j} has wavelength {lam[j]:,.1f}, not above 1,000 (a cosine column 2i + 1 shares "
                "the wavelength of its sine 2i). Take the next pair.")
    else:
        hint = "a smaller index also exceeds 1,000 positions: solve 2π·10000^(2i/512) > 1000 for the smallest pair i."
    raise Wrong(f"my_j = {j} is not the smallest dimension whose wavelength exceeds 1,000 positions "
                f"(its wavelength is {lam[j]:,.1f}).", hint)


# ---- 2.2: the sinusoidal table, written by the reader ---------------------------------------------------

def _table(max_len, d_model, exponent, swap=False, multiply=False, interleaved=True):
    """A sinusoidal table with a chosen exponent per pair (the right one and the classic mistakes)."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    power = torch.tensor(10000.0, dtype=torch.float64) ** exponent(two_i, d_model)
    angles = pos * power if multiply else pos / power  # (L, D/2)
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    if not interleaved:
        return torch.cat([first(angles), second(angles)], dim=1).float()
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = first(angles), second(angles)
    return pe.float()


def _right(two_i, d):
    return two_i / d


def _reversed(two_i, d):
    return (d - 2 - two_i) / d


def _column_index(max_len, d_model):
    # 10000^(j/d_model) with the column index j: the cosine of a pair gets a different frequency from its sine
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angles = pos / 10000.0 ** (j / d_model)
    pe = torch.where(j.long() % 2 == 0, torch.sin(angles), torch.cos(angles))
    return pe.float()


_MISTAKES_22 = [
    (lambda L, D: _table(L, D, _reversed),
     "your table is the paper's with the frequencies reversed: your first dimensions are the slow ones. "
     "Pair i divides pos by 10000^(2i/d_model), so i = 0 divides by 1 and is the fastest."),
    (lambda L, D: _table(L, D, _right, swap=True),
     "sine and cosine are swapped: the paper puts sin in the even columns 2i and cos in the odd ones 2i + 1."),
    (lambda L, D: _table(L, D, _right, multiply=True),
     "you multiply pos by 10000^(2i/d_model); the paper divides by it (the angle is pos / 10000^(2i/d_model))."),
    (_column_index,
     "the exponent uses the column index j; it should use 2i, the same for a sine (column 2i) and its cosine "
     "(column 2i + 1), so that each pair shares one frequency."),
    (lambda L, D: _table(L, D, _right, interleaved=False),
     "your table puts all the sines first and all the cosines after them (the concatenated layout); the paper "
     "interleaves them: sin, cos, sin, cos, …"),
]


@exercise("2.2", wrong=[lambda: (lambda max_len, d_model: _table(max_len, d_model, _reversed),),
                        lambda: (lambda max_len, d_model: _table(max_len, d_model, _right, swap=True),),
                        lambda: (lambda max_len, d_model: _table(max_len, d_model, _right, multiply=True),),
                        lambda: (_column_index,),
                        lambda: (lambda max_len, d_model: _table(max_len, d_model, _right, interleaved=False),)])
def exercise_2_2(my_positional_encoding):
    for L, D in [(50, 16), (20, 512), (3, 2)]:
        out = call(my_positional_encoding, L, D, name=f"my_positional_encoding({L}, {D})")
        out = tensor(out, f"my_positional_encoding({L}, {D})", (L, D))
        expected = tl.sinusoidal_positional_encoding(L, D)
        if torch.allclose(out.double(), expected.double(), atol=1e-4, rtol=1e-4):
            continue
        for mistake, hint in _MISTAKES_22:
            if torch.allclose(out.double(), mistake(L, D).double(), atol=1e-4, rtol=1e-4):
                raise Wrong(f"my_positional_encoding({L}, {D}) is not the paper's table.", hint)
        close(out, expected, f"my_positional_encoding({L}, {D})",
              hint="column 2i is sin(pos / 10000^(2i/d_model)) and column 2i + 1 the cosine of the same angle; "
                   "build pos as a (max_len, 1) column and 10000^(2i/d_model) as a (d_model/2,) row.")
    return "your table equals tl.sinusoidal_positional_encoding for (50, 16), (20, 512) and (3, 2)."


# ---- 2.3 and 2.4: the rotation M_k --------------------------------------------------------------------

def _rotation(k: int, d_model: int) -> torch.Tensor:
    """M_k (D, D), float64: PE(pos + k) = M_k @ PE(pos), one 2x2 rotation by k·ω_i per pair."""
    omega = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    M[0::2, 0::2], M[0::2, 1::2] = torch.diag(c), torch.diag(s)
    M[1::2, 0::2], M[1::2, 1::2] = torch.diag(-s), torch.diag(c)
    return M


def _formula64(max_len: int, d_model: int) -> torch.Tensor:
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    angles = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe


_K23, _D23, _L23 = 5, 32, 200


@exercise("2.3", wrong=[lambda: (_rotation(_K23, _D23),),          # forwards, not backwards
                        lambda: (torch.eye(_D23, dtype=torch.float64),),
                        lambda: (-_rotation(_K23, _D23),)])
def exercise_2_3(my_M_back):
    B = tensor(my_M_back, "my_M_back", (_D23, _D23)).double()
    table = _formula64(_L23, _D23)
    moved = table[_K23:] @ B.T                     # row form of B @ PE(pos), for pos = 5 .. 199
    if torch.allclose(moved, table[:-_K23], atol=1e-4, rtol=0):
        return f"my_M_back @ PE(pos) = PE(pos − {_K23}) for all {_L23 - _K23} positions (D = {_D23})."
    if torch.allclose(B, _rotation(_K23, _D23), atol=1e-4, rtol=0):
        raise Wrong(f"my_M_back is M_{_K23}, which moves {_K23} positions forwards: PE(pos + {_K23}).",
                    hint="undoing a rotation by the angle kω is rotating by −kω; for a rotation matrix that is "
                         "its transpose.")
    raise Wrong(f"my_M_back @ PE(pos) is not PE(pos − {_K23}) (checked for pos = {_K23}…{_L23 - 1}, D = {_D23}).",
                hint=f"use rotation(k, d_model) from the chapter: M_{{−k}} = M_kᵀ; a (D, D) matrix, D = {_D23}.")


_K24, _D24, _L24 = 3, 16, 512


@exercise("2.4", wrong=[lambda: (_rotation(_K24, _D24),),          # solved pe[k:] @ A ≈ pe[:-k], the other way
                        lambda: (torch.eye(_D24, dtype=torch.float64),),
                        lambda: (_rotation(_K24 - 1, _D24).T,)])                     # off by one position
def exercise_2_4(my_A):
    A = tensor(my_A, "my_A", (_D24, _D24)).double()
    expected = _rotation(_K24, _D24).T
    if torch.allclose(A, expected, atol=1e-4, rtol=0):
        return f"the least-squares fit of PE(pos + {_K24}) from PE(pos) is exactly M_{_K24}ᵀ (D = {_D24})."
    if isinstance(my_A, torch.Tensor) and my_A.dtype != torch.float64:
        raise Wrong(f"my_A ({my_A.dtype}) is not M_{_K24}ᵀ, the exact fit.",
                    hint="fit on the float64 table (pe_from_formula). The table is badly conditioned: its slowest "
                         "columns hardly change over 512 positions, and float32's rounding errors are amplified "
                         "into a wrong A.")
    if torch.allclose(A, _rotation(_K24, _D24), atol=1e-4, rtol=0):
        raise Wrong("my_A is M_3, the transpose of what the rows need: it maps PE(pos + 3) back to PE(pos).",
                    hint="solve pe[:-k] @ A ≈ pe[k:]: torch.linalg.lstsq(pe[:-k], pe[k:]).solution, in float64.")
    raise Wrong(f"my_A does not satisfy pe[:-{_K24}] @ my_A ≈ pe[{_K24}:] as well as the best fit does.",
                hint="torch.linalg.lstsq(X, Y).solution minimises |X @ A − Y|; here X = pe[:-k], Y = pe[k:], "
                     "with pe the float64 table of 512 positions and D = 16.")
