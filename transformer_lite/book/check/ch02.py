"""Checks of chapter 2's exercises (positional encoding; transformer_lite.book.check)."""
from __future__ import annotations

import torch

import transformer_lite as tl

from ..i18n import N_, tr
from . import Wrong, as_bool, call, close, exercise, tensor

# ---- 2.1: bug hunt -- which of three tables is not a sinusoidal encoding? ------------------------------
# Three tables that all look right (values in [-1, 1], first row 0, 1, 0, 1, ...): the paper's, the concatenated
# layout (a valid variant: the same columns permuted), and one with a silent bug (the cosine of pair i uses the
# column index 2i + 1 in its exponent). The reader writes a test from what chapter 2 checked about every correct
# table (|PE(pos)| = sqrt(D/2), PE(p)·PE(q) a function of p - q alone) and names the buggy table.

SUSPECTS_21 = {"A": "concatenated", "B": "bug", "C": "paper"}
_BUGGY_21 = "B"


def suspect_tables(max_len: int = 200, d_model: int = 64) -> dict[str, torch.Tensor]:
    """The three tables of exercise 2.1, by letter: each (max_len, d_model), float32."""
    from transformer_lite import pitfalls

    make = {"paper": lambda: tl.sinusoidal_positional_encoding(max_len, d_model),
            "concatenated": lambda: tl.sinusoidal_positional_encoding(max_len, d_model, interleaved=False),
            "bug": lambda: pitfalls.positional_encoding_cos_column_index(max_len, d_model)}
    return {letter: make[kind]() for letter, kind in SUSPECTS_21.items()}


def _shifted_cos(max_len, d_model):
    # sin(pos·ω_i) next to cos((pos + 1)·ω_i): every pair still on the unit circle, but not one angle
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    omega = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * omega), torch.cos((pos + 1) * omega)
    return pe.float()


def _all_sines(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    omega = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.sin(pos * omega).repeat_interleave(2, dim=1).float()


def _valid_21():
    from transformer_lite import pitfalls

    return [(tr("the paper's table (200, 64)"), tl.sinusoidal_positional_encoding(200, 64)),
            (tr("the paper's table (100, 16)"), tl.sinusoidal_positional_encoding(100, 16)),
            (tr("the concatenated layout (200, 64)"), tl.sinusoidal_positional_encoding(200, 64, interleaved=False)),
            (tr("the table with its pairs in reverse order (200, 64)"),
             pitfalls.positional_encoding_reversed_frequencies(200, 64))]


def _invalid_21():
    from transformer_lite import pitfalls

    return [(tr("the suspect with the bug (200, 64)"), pitfalls.positional_encoding_cos_column_index(200, 64)),
            (tr("a table whose cosines run one position ahead (200, 64)"), _shifted_cos(200, 64)),
            (tr("a table of sines only (100, 16)"), _all_sines(100, 16))]


def _distance_test(table):
    pe = torch.as_tensor(table).double()
    norms_ok = torch.allclose(pe.norm(dim=1), torch.full((pe.shape[0],), (pe.shape[1] / 2) ** 0.5,
                                                          dtype=torch.float64), atol=1e-3)
    dots = pe @ pe.T
    # the d-th diagonal holds PE(p)·PE(p + d) for every p: all the pairs at distance d (dots is symmetric)
    spread = max((dots.diagonal(d).max() - dots.diagonal(d).min()).item() for d in range(pe.shape[0] - 1))
    return bool(norms_ok and spread < 1e-2)


@exercise("2.1", wrong=[lambda: (lambda table: True, _BUGGY_21),                 # a test that passes everything
                        lambda: (_distance_test, "A"),                           # the valid variant, blamed
                        lambda: (_distance_test, "C"),
                        lambda: (lambda table: bool(torch.as_tensor(table).abs().max() <= 1), _BUGGY_21)])
def exercise_2_1(my_test, my_buggy):
    for name, table in _valid_21():
        verdict = as_bool(call(my_test, table.clone(), name="my_test"))
        if verdict is not True and verdict is not False:
            raise Wrong(tr("my_test should return True or False, got {verdict!r}.", verdict=verdict))
        if not verdict:
            raise Wrong(tr("my_test rejects {name}, which is a valid sinusoidal encoding.", name=name),
                        hint=tr("a layout with permuted columns is valid: test properties that do not depend on the "
                                "order of the columns (lengths of the rows, dot products of pairs of rows), and leave "
                                "a little tolerance for float32 rounding (about 1e-4 on a dot product)."))
    for name, table in _invalid_21():
        if as_bool(call(my_test, table.clone(), name="my_test")) is not False:
            raise Wrong(tr("my_test accepts {name}, which is not a sinusoidal encoding.", name=name),
                        hint=tr("every correct table has rows of length sqrt(D/2), and PE(p)·PE(q) depends only on "
                                "|p − q|: test that, for every distance."))
    letter = str(my_buggy).strip().upper()
    if letter not in SUSPECTS_21:
        raise Wrong(tr("my_buggy should be one of 'A', 'B', 'C', got {my_buggy!r}.", my_buggy=my_buggy))
    if letter != _BUGGY_21:
        kind = SUSPECTS_21[letter]
        hint = (tr("table A is the concatenated layout: all the sines, then all the cosines. Valid, only permuted.")
                if kind == "concatenated" else tr("table C is the paper's own table."))
        raise Wrong(tr("table {letter} passes the tests of this chapter.", letter=letter),
                    hint=hint + tr(" Run your test on each of the three."))
    return (tr("your test accepts every valid layout and rejects the broken ones; table B is the bug: its cosines use "
               "the column index 2i + 1 in the exponent, so a pair no longer shares one angle (its rows do not all "
               "have "
               "length √(D/2), and PE(p)·PE(q) depends on more than p − q)."))


# ---- 2.2: bug hunt -- the slip in a colleague's table, then the table written by the reader -------------------
# The chapter's suspect_table (shown in the notebook) writes i where §3.5 has 2i: angles pos / 10000^(i/d_model) for
# i = 0 .. D/2 - 1. Each pair still shares one angle, so its rows have length sqrt(D/2) and PE(p)·PE(q) depends on
# p - q alone (exercise 2.1's test passes it), but 10000^(i/d) = 100^(2i/d): the paper's table with base 100.

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


def _exponent_i(max_len, d_model):
    """WRONG (the chapter's suspect): pair i divides pos by 10000^(i/d_model), not 10000^(2i/d_model)."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angles = pos / 10000.0 ** (i / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe.float()


def _column_index(max_len, d_model):
    # 10000^(j/d_model) with the column index j: the cosine of a pair gets a different frequency from its sine
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angles = pos / 10000.0 ** (j / d_model)
    pe = torch.where(j.long() % 2 == 0, torch.sin(angles), torch.cos(angles))
    return pe.float()


_MISTAKES_22 = [
    (_exponent_i,
     N_("that is still the suspect's table: its first pair is right and the later pairs turn too fast. Compare the "
        "exponent of pair i with §3.5's, or print the divisor of each pair next to 10000^(2i/d_model).")),
    (lambda L, D: _table(L, D, _reversed),
     N_("your table is the paper's with the frequencies reversed: your first dimensions are the slow ones. "
        "Pair i divides pos by 10000^(2i/d_model), so i = 0 divides by 1 and is the fastest.")),
    (lambda L, D: _table(L, D, _right, swap=True),
     N_("sine and cosine are swapped: the paper puts sin in the even columns 2i and cos in the odd ones 2i + 1.")),
    (lambda L, D: _table(L, D, _right, multiply=True),
     N_("you multiply pos by 10000^(2i/d_model); the paper divides by it (the angle is pos / 10000^(2i/d_model)).")),
    (_column_index,
     N_("the exponent uses the column index j; it should use 2i, the same for a sine (column 2i) and its cosine "
        "(column 2i + 1), so that each pair shares one frequency.")),
    (lambda L, D: _table(L, D, _right, interleaved=False),
     N_("your table puts all the sines first and all the cosines after them (the concatenated layout); the paper "
        "interleaves them: sin, cos, sin, cos, …")),
]


@exercise("2.2", wrong=[lambda: (_exponent_i,),
                        lambda: (lambda max_len, d_model: _table(max_len, d_model, _reversed),),
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
                raise Wrong(tr("my_positional_encoding({L}, {D}) is not the paper's table.", L=L, D=D), tr(hint))
        close(out, expected, f"my_positional_encoding({L}, {D})",
              hint=tr("column 2i is sin(pos / 10000^(2i/d_model)) and column 2i + 1 the cosine of the same angle; "
                      "build pos as a (max_len, 1) column and 10000^(2i/d_model) as a (d_model/2,) row."))
    return (tr("your table equals tl.sinusoidal_positional_encoding for (50, 16), (20, 512) and (3, 2). The suspect "
               "wrote i where §3.5 has 2i: 10000^(i/d_model) = 100^(2i/d_model), the paper's table with base 100, so "
               "at "
               "d_model = 512 its slowest pair repeats after about 617 positions instead of 60,611. Each of its pairs "
               "still shares one angle, so exercise 2.1's test passes it: a valid encoding, but not the paper's."))


# ---- 2.3: the rotation M_k, fitted by least squares ------------------------------------------------------------------

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


_K24, _D24, _L24 = 3, 16, 512


@exercise("2.3", wrong=[lambda: (_rotation(_K24, _D24),),          # solved pe[k:] @ A ≈ pe[:-k], the other way
                        lambda: (torch.eye(_D24, dtype=torch.float64),),
                        lambda: (_rotation(_K24 - 1, _D24).T,)])                     # off by one position
def exercise_2_3(my_A):
    A = tensor(my_A, "my_A", (_D24, _D24)).double()
    expected = _rotation(_K24, _D24).T
    if torch.allclose(A, expected, atol=1e-4, rtol=0):
        return tr("the least-squares fit of PE(pos + {k24}) from PE(pos) is exactly M_{k24}ᵀ (D = {d24}).",
                  k24=_K24, d24=_D24)
    if isinstance(my_A, torch.Tensor) and my_A.dtype != torch.float64:
        raise Wrong(tr("my_A ({dtype}) is not M_{k24}ᵀ, the exact fit.", dtype=my_A.dtype, k24=_K24),
                    hint=tr("fit on the float64 table (pe_from_formula). The table is badly conditioned: its slowest "
                            "columns hardly change over 512 positions, and float32's rounding errors are amplified "
                            "into a wrong A."))
    if torch.allclose(A, _rotation(_K24, _D24), atol=1e-4, rtol=0):
        raise Wrong(tr("my_A is M_3, the transpose of what the rows need: it maps PE(pos + 3) back to PE(pos)."),
                    hint=tr("solve pe[:-k] @ A ≈ pe[k:]: torch.linalg.lstsq(pe[:-k], pe[k:]).solution, in float64."))
    raise Wrong(tr("my_A does not satisfy pe[:-{k24}] @ my_A ≈ pe[{k24}:] as well as the best fit does.", k24=_K24),
                hint=tr("torch.linalg.lstsq(X, Y).solution minimises |X @ A − Y|; here X = pe[:-k], Y = pe[k:], "
                        "with pe the float64 table of 512 positions and D = 16."))
