"""Checks of chapter 4's exercises (transformer_lite.book.check): multi-head attention."""
from __future__ import annotations

import torch

import transformer_lite as tl
from transformer_lite import pitfalls

from . import Wrong, call, close, exercise, number


def _shape(answer, name: str) -> tuple:
    """A shape given as a tuple, a list or a torch.Size, as a tuple of ints."""
    try:
        return tuple(int(v) for v in answer)
    except (TypeError, ValueError):
        raise Wrong(f"{name} should be a shape such as (2, 3, 4), got {answer!r}.") from None


def _labelled(T: int = 3, D: int = 8) -> torch.Tensor:
    """The chapter's labelled tensor: x[0, t, d] = 10 t + d (tens digit = position, units digit = feature)."""
    return (10 * torch.arange(T)[:, None] + torch.arange(D)[None, :]).float()[None]


# ---- 4.1: shapes ---------------------------------------------------------------------------------------

@exercise("4.1", wrong=[
    lambda: ((2, 10, 8, 64), (2, 8, 10, 10), (2, 10, 512)),   # the view without the transpose
    lambda: ((2, 8, 10, 64), (2, 10, 10), (2, 10, 512)),      # torch's averaged weights
    lambda: ((2, 8, 10, 64), (2, 8, 10, 64), (2, 8, 10, 64)),
])
def exercise_4_1(shape_q, shape_weights, shape_merged):
    B, T, D, H = 2, 10, 512, 8
    with torch.random.fork_rng():  # the reader's random numbers stay as they were
        mha = tl.MultiHeadAttention(D, H)
    x = torch.randn(B, T, D, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        q = tl.split_heads(mha.q_proj(x), H)
        _, weights = mha(x, x, x)
    checks = [
        (shape_q, tuple(q.shape), "shape_q",
         "split_heads views (B, T, D) as (B, T, H, D_h) and then swaps T and H, so that each head holds a "
         "(T, D_h) matrix: the head axis comes before the word axis."),
        (shape_weights, tuple(weights.shape), "shape_weights",
         "every head has its own T x T table of weights (query word x key word); tl.MultiHeadAttention returns "
         "them per head (torch's nn.MultiheadAttention averages them over the heads by default)."),
        (shape_merged, tuple(tl.merge_heads(q).shape), "shape_merged",
         "merge_heads undoes split_heads: the heads' D_h-wide outputs are laid side by side again."),
    ]
    for answer, expected, name, hint in checks:
        got = _shape(answer, name)
        if len(got) != len(expected):
            raise Wrong(f"{name} should have {len(expected)} axes, got {len(got)}: {got}.", hint)
        if got != expected:
            raise Wrong(f"{name} = {got} is not right.", hint)
    return "split (B, H, T, D_h), weights (B, H, T, T), merged (B, T, D): checked by running tl.MultiHeadAttention."


# ---- 4.2: the split without the transpose ----------------------------------------------------------------

@exercise("4.2", wrong=[lambda: ([0, 1, 2],), lambda: ([0],), lambda: ([1, 2],)])
def exercise_4_2(positions):
    x = _labelled()
    bad_head0 = pitfalls.split_heads_without_transpose(x, 2)[0, 0]
    expected = sorted({int(v) for v in (bad_head0 // 10).flatten().tolist()})
    try:
        got = sorted({int(p) for p in positions})
    except (TypeError, ValueError):
        raise Wrong(f"positions should be a list of word positions such as [0, 2], got {positions!r}.") from None
    if got != expected:
        raise Wrong(f"positions {got} is not right.",
                    "print x.view(B, H, T, D_h)[0, 0] and read the tens digits: the view fills head 0 with the "
                    "first T * D_h numbers of x in memory order, word 0's features first.")
    return "the buggy head 0 holds all of word 0, half of word 1 and nothing of word 2."


# ---- 4.3: split and merge from scratch ------------------------------------------------------------------

@exercise("4.3", wrong=[
    lambda: (pitfalls.split_heads_without_transpose, tl.merge_heads),
    lambda: (tl.split_heads, pitfalls.merge_heads_without_transpose),
    lambda: (lambda x, nhead: x.reshape(x.shape[0], x.shape[1], nhead, -1), tl.merge_heads),
])
def exercise_4_3(my_split_heads, my_merge_heads):
    g = torch.Generator().manual_seed(0)
    for B, T, D, H in [(1, 3, 8, 2), (2, 5, 12, 3), (3, 4, 16, 4)]:
        x = torch.randn(B, T, D, generator=g)
        right = tl.split_heads(x, H)
        mine = call(my_split_heads, x, H, name="my_split_heads")
        hint = "view (B, T, D) as (B, T, H, D_h), then transpose(1, 2): (B, H, T, D_h) with D_h = D / H."
        if isinstance(mine, torch.Tensor) and torch.equal(mine, pitfalls.split_heads_without_transpose(x, H)):
            hint = ("that is x.view(B, H, T, D_h) without a transpose: each 'head' gets consecutive numbers of "
                    "memory, i.e. whole words. View as (B, T, H, D_h) first, then swap axes 1 and 2.")
        close(mine, right, f"my_split_heads(x, {H}) for x of shape {(B, T, D)}", hint=hint)
        heads = torch.randn(B, H, T, D // H, generator=g)
        merged = call(my_merge_heads, heads, name="my_merge_heads")
        hint = "transpose (B, H, T, D_h) back to (B, T, H, D_h) first, then reshape to (B, T, D)."
        if isinstance(merged, torch.Tensor) and torch.equal(merged, pitfalls.merge_heads_without_transpose(heads)):
            hint = ("that is a reshape without the transpose: it reads the heads in memory order, so a row "
                    "glues together pieces of different words. " + hint)
        close(merged, tl.merge_heads(heads), f"my_merge_heads(heads) for heads of shape {(B, H, T, D // H)}", hint=hint)
    return "your split and merge equal tl.split_heads and tl.merge_heads on three shapes."


# ---- 4.4: multi-head attention head by head --------------------------------------------------------------

def _heads_see_slices_of_x(mha, x):
    """WRONG: each head attends over its own slice of x (the misconception), with the D_h x D_h block of W."""
    n, d = mha.nhead, mha.head_dim
    out = mha.out_proj.bias
    for i in range(n):
        s = slice(i * d, (i + 1) * d)
        q, k, v = (x[..., s] @ p.weight[s, s].T + p.bias[s] for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        head, _ = tl.scaled_dot_product_attention(q, k, v)
        out = out + head @ mha.out_proj.weight[:, s].T
    return out


def _wo_rows(mha, x):
    """WRONG: W^O's block for head i taken as rows of out_proj.weight (nn.Linear's (out, in) storage forgotten)."""
    n, d = mha.nhead, mha.head_dim
    q, k, v = (tl.split_heads(p(x), n) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    heads, _ = tl.scaled_dot_product_attention(q, k, v)
    return sum(heads[:, i] @ mha.out_proj.weight[i * d:(i + 1) * d] for i in range(n)) + mha.out_proj.bias


def _no_transpose(mha, x):
    q, k, v = (tl.split_heads(p(x), mha.nhead) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    heads, _ = tl.scaled_dot_product_attention(q, k, v)
    return mha.out_proj(pitfalls.merge_heads_without_transpose(heads))


def _no_output_projection(mha, x):
    q, k, v = (tl.split_heads(p(x), mha.nhead) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    return tl.merge_heads(tl.scaled_dot_product_attention(q, k, v)[0])


_KNOWN_MISTAKES = [
    (_heads_see_slices_of_x, "your heads attend over slices of x. Each head's queries are x W_i^Q: ALL D features of x "
                             "times head i's columns of W^Q (rows i*D_h to (i+1)*D_h - 1 of q_proj.weight). Only the "
                             "projected q, k and v are cut into heads."),
    (_wo_rows, "W_i^O is the block of W^O that multiplies head i's columns. nn.Linear stores W^O transposed, (out, in), "
               "so that block is columns i*D_h to (i+1)*D_h - 1 of out_proj.weight (transposed), not rows."),
    (_no_transpose, "the heads were merged without the transpose: rows mix different words."),
    (_no_output_projection, "the output projection W^O (and its bias) is missing."),
]


@exercise("4.4", wrong=[lambda m=m: (m,) for m, _ in _KNOWN_MISTAKES])
def exercise_4_4(my_multi_head_attention):
    g = torch.Generator().manual_seed(0)
    for D, H in [(12, 3), (8, 2)]:
        with torch.random.fork_rng():  # the reader's random numbers stay as they were
            torch.manual_seed(4)
            mha = tl.MultiHeadAttention(D, H).eval()
        x = torch.randn(2, 5, D, generator=g)
        with torch.no_grad():
            expected = mha(x, x, x)[0]
            mine = call(my_multi_head_attention, mha, x, name="my_multi_head_attention")
            hint = ("head i reads ALL of x through its own D_h output rows of q_proj, k_proj and v_proj (nn.Linear "
                    "stores (out, in)); W^O's block for head i multiplies head i's D_h columns; b^O is added once.")
            if isinstance(mine, torch.Tensor) and mine.shape == expected.shape:
                for mistake, text in _KNOWN_MISTAKES:
                    if torch.allclose(mine, mistake(mha, x), atol=1e-5):
                        hint = text
                        break
            close(mine, expected, f"my_multi_head_attention(mha, x) with D = {D}, H = {H}", hint=hint)
    return "your head-by-head layer equals tl.MultiHeadAttention (D = 12, H = 3 and D = 8, H = 2)."


# ---- 4.5: parameters -------------------------------------------------------------------------------------

@exercise("4.5", wrong=[
    lambda: (4 * 1024 ** 2, 4 * 1024 ** 2),                          # the biases forgotten
    lambda: (16 * 4 * (1024 ** 2 + 1024), 8 * 4 * (1024 ** 2 + 1024)),  # "each head has its own D x D matrices"
    lambda: (4 * (1024 ** 2 + 1024), 2 * 4 * (1024 ** 2 + 1024)),
])
def exercise_4_5(n_big, n_big_8_heads):
    hint = ("four D x D projections (W^Q, W^K, W^V, W^O), each with a bias of length D; the heads are column "
            "blocks of the same matrices, so H does not change the count.")
    with torch.device("meta"):  # counted without allocating (or drawing) a single weight
        counts = [tl.count_parameters(tl.MultiHeadAttention(1024, nhead)) for nhead in (16, 8)]
    number(n_big, counts[0], "n_big", hint=hint, rel=0)
    number(n_big_8_heads, counts[1], "n_big_8_heads", hint=hint, rel=0)
    return "4 (D^2 + D) = 4,198,400 parameters with 16 heads and with 8: the count does not depend on H."
