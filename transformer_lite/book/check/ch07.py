"""Checks of chapter 7's exercises (masking): transformer_lite.book.check."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import transformer_lite as tl

from ..i18n import tr
from . import Wrong, call, close, exercise, number

PAD = 0


def _padded_ids():
    """Three right-padded sentences (B = 3, T = 5), padding id 0."""
    return torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD], [4, 8, PAD, PAD, PAD]])


def _as_bool_mask(answer, name, shape):
    if not isinstance(answer, torch.Tensor):
        raise Wrong(tr("{name} should be a torch tensor, got {answer_type}.",
                       name=name, answer_type=type(answer).__name__))
    if answer.dtype != torch.bool:
        raise Wrong(tr("{name} should be a bool tensor, got dtype {dtype}.", name=name, dtype=answer.dtype),
                    hint=tr("compare with == or build it with torch.triu/torch.tril on a bool tensor; a float mask is "
                            "ADDED to the scores by PyTorch, so 0/1 floats would block nothing."))
    try:
        return torch.broadcast_to(answer, shape)
    except RuntimeError:
        raise Wrong(tr("{name} has shape {answer_shape}, which does not broadcast to {shape}.",
                       name=name, answer_shape=tuple(answer.shape), shape=tuple(shape)),
                    hint=tr("view the (B, S) padding mask as (B, 1, 1, S) and the (T, T) causal mask as (1, 1, T, T) "
                            "before combining them.")) from None


def _mask_mistake(got, expected, causal):
    """A hint naming the classic mistake, if the answer is one of them."""
    if torch.equal(got, ~expected):
        return tr("your mask is inverted: here True means BLOCKED (may not attend), as in nn.MultiheadAttention.")
    if torch.equal(got, expected | torch.eye(causal.shape[-1], dtype=torch.bool)):
        return tr("off by one: you also block the diagonal, so a token may not attend to itself (use diagonal=1).")
    if torch.equal(got, expected & ~causal) or not got[..., causal].all():
        return tr("some future keys are allowed: the causal part must block every key j > i.")
    return tr("the padding part: every query must be blocked from every <pad> KEY (a column), in its own sentence.")


def _right_mask(ids, pad_id):
    B, T = ids.shape
    return tl.merge_masks(tl.causal_mask(T), tl.padding_mask(ids, pad_id), B, T, T)


def _decoder_mask_mistakes():
    def inverted(ids, pad_id):  # "True = keep"
        return ~_right_mask(ids, pad_id)

    def with_diagonal(ids, pad_id):  # triu without diagonal=1: a token may not see itself
        T = ids.shape[1]
        return torch.triu(torch.ones(T, T, dtype=torch.bool)) | (ids == pad_id)[:, None, None, :]

    def padding_only(ids, pad_id):
        return (ids == pad_id)[:, None, None, :]

    return [lambda: (inverted,), lambda: (with_diagonal,), lambda: (padding_only,)]


@exercise("7.1", wrong=_decoder_mask_mistakes())
def exercise_7_1(my_decoder_mask):
    for ids, pad_id in [(_padded_ids(), PAD), (torch.tensor([[7, 3, 3], [2, 4, 5]]), 3)]:
        B, T = ids.shape
        causal = tl.causal_mask(T)
        expected = _right_mask(ids, pad_id).expand(B, 1, T, T)
        got = _as_bool_mask(call(my_decoder_mask, ids, pad_id, name="my_decoder_mask(ids, pad_id)"),
                            "my_decoder_mask(ids, pad_id)", (B, 1, T, T))
        if not torch.equal(got, expected):
            wrong = int((got != expected).sum())
            raise Wrong(tr("my_decoder_mask(ids, pad_id={pad_id}) for ids of shape {ids_shape} differs from the "
                           "right (B, 1, T, T) mask in {wrong} of {n_entries} entries.",
                           pad_id=pad_id, ids_shape=tuple(ids.shape), wrong=wrong, n_entries=expected.numel()),
                        hint=_mask_mistake(got, expected, causal))
    return tr("your (B, 1, T, T) mask equals tl.merge_masks(causal_mask, padding_mask) (True = blocked), any pad id.")


@exercise("7.2", wrong=[lambda: (tl.causal_mask,),                                                  # True = blocked
                        lambda: (lambda T: torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1),),
                        lambda: (lambda T: torch.triu(torch.ones(T, T, dtype=torch.bool)),),
                        lambda: (lambda T: torch.tril(torch.ones(T, T)),)])                          # 0/1 float
def exercise_7_2(my_keep_causal):
    g = torch.Generator().manual_seed(0)
    for T in (4, 7, 1):
        got = _as_bool_mask(call(my_keep_causal, T, name=f"my_keep_causal({T})"), f"my_keep_causal({T})", (T, T))
        expected = ~tl.causal_mask(T)
        q, k, v = (torch.randn(2, 3, T, 4, generator=g) for _ in range(3))
        ours, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=tl.causal_mask(T))
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=got)
        if not torch.equal(got, expected) or not torch.allclose(torch.nan_to_num(theirs), ours, atol=1e-5):
            if torch.equal(got, ~expected):
                hint = (tr("this is PyTorch's 'True = blocked' mask; F.scaled_dot_product_attention reads True as "
                           "'takes part', so it would attend to exactly the future."))
            elif T > 1 and not got.diagonal().all():
                hint = tr("off by one: each position must keep itself (the diagonal), so keep j <= i.")
            else:
                hint = tr("keep = True where key j <= query i: the lower triangle, diagonal included (torch.tril).")
            raise Wrong(tr("my_keep_causal({T}) is not the causal mask in the 'True = keep' convention "
                           "({n_wrong} of {n_entries} entries differ).",
                           T=T, n_wrong=int((got != expected).sum()), n_entries=T * T), hint=hint)
    return tr("F.scaled_dot_product_attention with your keep-mask equals tl's attention with tl.causal_mask (T = 4, 7, "
              "1).")


def _bug_hunt_leaks(t0=5, V=20, T=8):
    """Positions before t0 whose logits move in pitfalls.transformer_with_mask_bug when only token t0 changes
    (two decoder layers, as the chapter's model)."""
    from transformer_lite import pitfalls

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = tl.Transformer(V, V, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                               dim_feedforward=32, dropout=0.0).eval()
        src, tgt = torch.randint(4, V, (1, 6)), torch.randint(4, V, (1, T))
    suspect = pitfalls.transformer_with_mask_bug(model)
    tgt2 = tgt.clone()
    tgt2[0, t0] = 4 + (tgt[0, t0] - 4 + 1) % (V - 4)  # change only the token at t0
    with torch.no_grad():
        moved = (suspect(src, tgt2) - suspect(src, tgt))[0].abs().amax(-1)  # (T,)
    return [t for t in range(t0) if moved[t] > 1e-5]


@exercise("7.3", wrong=[lambda: ([], 1),                      # the leak test not run: "nothing leaks"
                        lambda: ([0, 1, 2, 3, 4], 0),         # "it sees the whole future"
                        lambda: ([4], 2),                      # one layer's leak; the model has two
                        lambda: ([3, 4], 0)])                  # the right leak, the wrong diagonal
def exercise_7_3(my_leaky_positions, my_diagonal):
    try:
        given = sorted({int(t) for t in my_leaky_positions})
    except (TypeError, ValueError):
        raise Wrong(tr("my_leaky_positions should be a list of positions (ints from 0 to 4), "
                       "got {my_leaky_positions!r}.", my_leaky_positions=my_leaky_positions)) from None
    expected = _bug_hunt_leaks()
    if given != expected:
        raise Wrong(tr("your list of leaking positions is not what the leak test measures."),
                    hint=tr("change only the token at position 5 (as in the chapter's leak test) and compare the "
                            "suspect's logits at positions 0-4 before and after; list those that move."))
    number(my_diagonal, 2, "my_diagonal", rel=0, abs_=0.5,
           hint=tr("torch.triu(ones, diagonal=d) blocks key j for query i when j >= i + d. Which d lets query i see "
                   "key i + 1 but not i + 2?"))
    return (tr("positions 3 and 4 move: each query also sees the NEXT token (the mask is triu(diagonal=2), "
               "pitfalls.causal_mask_off_by_one), and with two layers the leak reaches two positions back. "
               "The fix is diagonal=1, tl.causal_mask."))


def _decoder_changes(n_real=5, n_pad=3):
    """Positions whose decoder output changes when tgt_key_padding_mask is dropped (right padding)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = tl.Transformer(20, 20, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                               dim_feedforward=32, dropout=0.0).eval()
        src = torch.randint(4, 20, (1, 6))
        tgt = torch.cat([torch.randint(4, 20, (1, n_real)), torch.full((1, n_pad), PAD)], dim=1)
    T = n_real + n_pad
    with torch.no_grad():
        memory = model.encode(src)
        x = model.tgt_pos(model.tgt_embed(tgt))
        with_kpm = model.decoder(x, memory, tgt_mask=tl.causal_mask(T), tgt_key_padding_mask=tl.padding_mask(tgt, PAD))
        without = model.decoder(x, memory, tgt_mask=tl.causal_mask(T))
    return [t for t in range(T) if (with_kpm[0, t] - without[0, t]).abs().max() > 1e-5]


@exercise("7.4", wrong=[lambda: ([],), lambda: ([6, 7],), lambda: (list(range(8)),)])
def exercise_7_4(my_changed_positions):
    try:
        given = sorted({int(t) for t in my_changed_positions})
    except (TypeError, ValueError):
        raise Wrong(tr("my_changed_positions should be a list of positions (ints from 0 to 7), "
                       "got {my_changed_positions!r}.", my_changed_positions=my_changed_positions)) from None
    expected = _decoder_changes()
    if given != expected:
        hint = (tr("the real tokens 0-4 come before every <pad>, so the causal mask already hides the pads from them.")
                if any(t < 5 for t in given) else
                tr("look at each <pad> QUERY: which <pad> keys may it see under the causal mask alone? Include "
                   "itself."))
        missing, extra = set(expected) - set(given), set(given) - set(expected)
        raise Wrong(tr("your list misses {n_missing} position(s) that change and holds {n_extra} that do not.",
                       n_missing=len(missing), n_extra=len(extra)),
                    hint=hint)
    return (tr("measured on a small decoder: only the <pad> positions change; the real positions 0-4 are identical "
               "without the target padding mask (right padding)."))


@exercise("7.5", wrong=[lambda: (torch.zeros(5),), lambda: (torch.full((5,), float("nan")),),
                        lambda: (torch.tensor([1.0, 0, 0, 0, 0]),)])
def exercise_7_5(my_dead_row):
    s = torch.randn(5, generator=torch.Generator().manual_seed(0)).half()
    expected = torch.softmax(s.masked_fill(torch.ones(5, dtype=torch.bool), torch.finfo(torch.float16).min), dim=-1)
    close(my_dead_row, expected.float(), "my_dead_row", atol=1e-3, rtol=0,
          hint=tr("with a finite fill value every score of a fully masked row becomes the same number; the softmax of "
                  "equal numbers is not 0 and not NaN."))
    return tr("a fully masked float16 row filled with finfo(float16).min gets uniform weights 1/5, like −1e9 in "
              "float32.")
