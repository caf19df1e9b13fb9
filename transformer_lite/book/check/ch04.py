"""Checks of chapter 4's exercises (transformer_lite.book.check): multi-head attention."""
from __future__ import annotations

import copy

import torch

import transformer_lite as tl
from transformer_lite import pitfalls

from ..i18n import N_, tr
from . import Wrong, call, close, exercise


def _shape(answer, name: str) -> tuple:
    """A shape given as a tuple, a list or a torch.Size, as a tuple of ints."""
    try:
        return tuple(int(v) for v in answer)
    except (TypeError, ValueError):
        raise Wrong(tr("{name} should be a shape such as (2, 3, 4), got {answer!r}.",
                       name=name, answer=answer)) from None


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
         tr("split_heads views (B, T, D) as (B, T, H, D_h) and then swaps T and H, so that each head holds a "
            "(T, D_h) matrix: the head axis comes before the word axis.")),
        (shape_weights, tuple(weights.shape), "shape_weights",
         tr("every head has its own T x T table of weights (query word x key word); tl.MultiHeadAttention returns "
            "them per head (torch's nn.MultiheadAttention averages them over the heads by default).")),
        (shape_merged, tuple(tl.merge_heads(q).shape), "shape_merged",
         tr("merge_heads undoes split_heads: the heads' D_h-wide outputs are laid side by side again.")),
    ]
    for answer, expected, name, hint in checks:
        got = _shape(answer, name)
        if len(got) != len(expected):
            raise Wrong(tr("{name} should have {n_expected} axes, got {n_got}: {got}.",
                           name=name, n_expected=len(expected), n_got=len(got), got=got), hint)
        if got != expected:
            raise Wrong(tr("{name} = {got} is not right.", name=name, got=got), hint)
    return tr("split (B, H, T, D_h), weights (B, H, T, T), merged (B, T, D): checked by running tl.MultiHeadAttention.")


# ---- 4.2: the split without the transpose ----------------------------------------------------------------

@exercise("4.2", wrong=[lambda: ([0, 1, 2],), lambda: ([0],), lambda: ([1, 2],)])
def exercise_4_2(positions):
    x = _labelled()
    bad_head0 = pitfalls.split_heads_without_transpose(x, 2)[0, 0]
    expected = sorted({int(v) for v in (bad_head0 // 10).flatten().tolist()})
    try:
        got = sorted({int(p) for p in positions})
    except (TypeError, ValueError):
        raise Wrong(tr("positions should be a list of word positions such as [0, 2], got {positions!r}.",
                       positions=positions)) from None
    if got != expected:
        raise Wrong(tr("positions {got} is not right.", got=got),
                    tr("print x.view(B, H, T, D_h)[0, 0] and read the tens digits: the view fills head 0 with the "
                       "first T * D_h numbers of x in memory order, word 0's features first."))
    return tr("the buggy head 0 holds all of word 0, half of word 1 and nothing of word 2.")


# ---- 4.3: spot the slip in a split and merge that pass the round trip ---------------------------------------

def _split_strided(x: torch.Tensor, nhead: int) -> torch.Tensor:
    """WRONG (the chapter's suspect): D cut as (D_h, H), so head h gets every H-th column, not a block of D_h."""
    B, T, D = x.shape
    return x.view(B, T, D // nhead, nhead).permute(0, 3, 1, 2)


def _merge_strided(x: torch.Tensor) -> torch.Tensor:
    """WRONG: the inverse of _split_strided, so that the round trip merge(split(x)) == x holds."""
    B, H, T, D_h = x.shape
    return x.permute(0, 2, 3, 1).reshape(B, T, D_h * H)


_STRIDED = (N_("that cuts D as (D_h, H): head h gets every H-th column of q (h, h + H, ...), not the block of D_h "
               "neighbouring columns that W_h^Q fills, and the merge undoes the same cut, so a round trip cannot see "
               "it. "))


@exercise("4.3", wrong=[
    lambda: (_split_strided, _merge_strided),
    lambda: (pitfalls.split_heads_without_transpose, tl.merge_heads),
    lambda: (tl.split_heads, pitfalls.merge_heads_without_transpose),
    lambda: (tl.split_heads, _merge_strided),
    lambda: (lambda x, nhead: x.reshape(x.shape[0], x.shape[1], nhead, -1), tl.merge_heads),
])
def exercise_4_3(my_split_heads, my_merge_heads):
    g = torch.Generator().manual_seed(0)
    for B, T, D, H in [(1, 3, 8, 2), (2, 5, 12, 3), (3, 4, 16, 4)]:
        x = torch.randn(B, T, D, generator=g)
        right = tl.split_heads(x, H)
        mine = call(my_split_heads, x, H, name="my_split_heads")
        hint = tr("view (B, T, D) as (B, T, H, D_h), then transpose(1, 2): (B, H, T, D_h) with D_h = D / H.")
        if isinstance(mine, torch.Tensor) and torch.equal(mine, pitfalls.split_heads_without_transpose(x, H)):
            hint = (tr("that is x.view(B, H, T, D_h) without a transpose: each 'head' gets consecutive numbers of "
                       "memory, i.e. whole words. View as (B, T, H, D_h) first, then swap axes 1 and 2."))
        if isinstance(mine, torch.Tensor) and torch.equal(mine, _split_strided(x, H)):
            hint = tr(_STRIDED) + hint
        close(mine, right, tr("my_split_heads(x, {H}) for x of shape {x_shape}", H=H, x_shape=(B, T, D)), hint=hint)
        heads = torch.randn(B, H, T, D // H, generator=g)
        merged = call(my_merge_heads, heads, name="my_merge_heads")
        hint = tr("transpose (B, H, T, D_h) back to (B, T, H, D_h) first, then reshape to (B, T, D).")
        if isinstance(merged, torch.Tensor) and torch.equal(merged, pitfalls.merge_heads_without_transpose(heads)):
            hint = (tr("that is a reshape without the transpose: it reads the heads in memory order, so a row "
                       "glues together pieces of different words. ") + hint)
        if isinstance(merged, torch.Tensor) and torch.equal(merged, _merge_strided(heads)):
            hint = tr(_STRIDED) + hint
        close(merged, tl.merge_heads(heads), tr("my_merge_heads(heads) for heads of shape {heads_shape}",
                                                heads_shape=(B, H, T, D // H)), hint=hint)
    return tr("your split and merge equal tl.split_heads and tl.merge_heads on three shapes.")


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
    (_heads_see_slices_of_x, N_("your heads attend over slices of x. Each head's queries are x W_i^Q: ALL D features "
                                "of x "
                                "times head i's columns of W^Q (rows i*D_h to (i+1)*D_h - 1 of q_proj.weight). Only "
                                "the "
                                "projected q, k and v are cut into heads.")),
    (_wo_rows,
     N_("W_i^O is the block of W^O that multiplies head i's columns. nn.Linear stores W^O transposed, (out, in), "
                  "so that block is columns i*D_h to (i+1)*D_h - 1 of out_proj.weight (transposed), not rows.")),
    (_no_transpose, N_("the heads were merged without the transpose: rows mix different words.")),
    (_no_output_projection, N_("the output projection W^O (and its bias) is missing.")),
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
            hint = (tr("head i reads ALL of x through its own D_h output rows of q_proj, k_proj and v_proj (nn.Linear "
                       "stores (out, in)); W^O's block for head i multiplies head i's D_h columns; b^O is added once."))
            if isinstance(mine, torch.Tensor) and mine.shape == expected.shape:
                for mistake, text in _KNOWN_MISTAKES:
                    if torch.allclose(mine, mistake(mha, x), atol=1e-5):
                        hint = tr(text)
                        break
            close(mine, expected, tr("my_multi_head_attention(mha, x) with D = {D}, H = {H}", D=D, H=H), hint=hint)
    return tr("your head-by-head layer equals tl.MultiHeadAttention (D = 12, H = 3 and D = 8, H = 2).")


# ---- 4.5: heads have no numbers -------------------------------------------------------------------------

def _permuted(mha, order, rows=True, out=True):
    """A copy of mha with its heads reordered; rows=False moves columns of W^Q, W^K, W^V (wrong), out=False
    leaves W^O alone (wrong)."""
    d = mha.head_dim
    idx = torch.cat([torch.arange(i * d, (i + 1) * d) for i in order])
    new = copy.deepcopy(mha)
    with torch.no_grad():
        for p_new, p_old in [(new.q_proj, mha.q_proj), (new.k_proj, mha.k_proj), (new.v_proj, mha.v_proj)]:
            p_new.weight.copy_(p_old.weight[idx] if rows else p_old.weight[:, idx])
            p_new.bias.copy_(p_old.bias[idx] if rows else p_old.bias)
        if out:
            new.out_proj.weight.copy_(mha.out_proj.weight[:, idx])
    return new


@exercise("4.5", wrong=[
    lambda: (lambda mha, order: copy.deepcopy(mha),),                             # nothing moved
    lambda: (lambda mha, order: _permuted(mha, order, out=False),),               # W^O's columns left behind
    lambda: (lambda mha, order: _permuted(mha, order, rows=False),),              # columns of W^Q, W^K, W^V
    lambda: (lambda mha, order: _permuted(mha, [order.index(i) for i in range(len(order))]),),  # inverse order
])
def exercise_4_5(permute_heads):
    with torch.random.fork_rng():  # the reader's random numbers stay as they were
        torch.manual_seed(4)
        mha = tl.MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0))
    order = [2, 0, 3, 1]
    with torch.no_grad():
        out, weights = mha(x, x, x)
        new = call(permute_heads, copy.deepcopy(mha), list(order), name="permute_heads")
        if not isinstance(new, tl.MultiHeadAttention):
            raise Wrong(tr("permute_heads should return a tl.MultiHeadAttention, got {new_type}.",
                           new_type=type(new).__name__))
        out_new, weights_new = new.eval()(x, x, x)
    close(weights_new, weights[:, order], tr("the per-head weights of permute_heads(mha, [2, 0, 3, 1])"),
          hint=tr("new head i is old head order[i]: its queries and keys come from rows order[i]*D_h to "
                  "(order[i]+1)*D_h - 1 of the old q_proj and k_proj weights and biases (nn.Linear stores (out, in))."))
    close(out_new, out, tr("the output of permute_heads(mha, [2, 0, 3, 1])"),
          hint=tr("W^O multiplies the concatenated heads, so its columns must move with the heads: "
                  "out_proj.weight[:, idx] with the same index as the rows of q_proj, k_proj and v_proj."))
    return (tr("your layer has the heads in the new order and computes exactly the same output: "
               "a head's number names a place in the tensors, not a role."))
