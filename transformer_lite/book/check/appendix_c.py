"""Checks of appendix C's exercises (pitfalls)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import transformer_lite as tl

from ..i18n import tr
from . import Wrong, call, close, exercise

PAD = 0


def _accumulated_grad(micro_batch_loss, pad_id=PAD):
    """The gradient of the logits after accumulating micro_batch_loss over two micro-batches of unequal lengths,
    and the gradient of the whole batch's token mean (the reference)."""
    g = torch.Generator().manual_seed(0)
    V = 7
    logits = torch.randn(4, 6, V, generator=g)
    labels = torch.randint(1, V, (4, 6), generator=g)
    labels[:2, 2:] = pad_id  # micro-batch 1: two sentences of 2 tokens; micro-batch 2: two of 6
    n_tokens = int((labels != pad_id).sum())
    acc = logits.clone().requires_grad_()
    for rows in (slice(0, 2), slice(2, 4)):
        loss = micro_batch_loss(acc[rows], labels[rows].clone(), pad_id, n_tokens)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise Wrong(tr("my_micro_batch_loss should return a scalar tensor, got "
                           "{got}.",
                           got=type(loss).__name__ if not isinstance(loss, torch.Tensor) else tuple(loss.shape)))
        if not loss.requires_grad:
            raise Wrong(tr("my_micro_batch_loss's result has no gradient: compute it from logits with torch "
                           "operations."))
        loss.backward()  # gradients add up across micro-batches, as in gradient accumulation
    ref = logits.clone().requires_grad_()
    F.cross_entropy(ref.reshape(-1, V), labels.reshape(-1), ignore_index=pad_id).backward()
    return acc.grad, ref.grad


def _micro_loss_from(function):
    def run(logits, labels, pad_id, n_tokens):
        return call(function, logits, labels, pad_id, n_tokens,
                    name="my_micro_batch_loss(logits, labels, pad_id, n_tokens)")
    return run


@exercise("C.1", wrong=[lambda: (lambda lg, lb, pad, n: F.cross_entropy(lg.reshape(-1, lg.shape[-1]), lb.reshape(-1),
                                                                      ignore_index=pad) / 2,),   # the mean of means
                        lambda: (lambda lg, lb, pad, n: F.cross_entropy(lg.reshape(-1, lg.shape[-1]), lb.reshape(-1),
                                                                      ignore_index=pad, reduction="sum") / lb.numel(),),
                        lambda: (lambda lg, lb, pad, n: F.cross_entropy(lg.reshape(-1, lg.shape[-1]), lb.reshape(-1),
                                                                      reduction="sum") / n,)])     # pads counted
def exercise_C_1(my_micro_batch_loss):
    got, expected = _accumulated_grad(_micro_loss_from(my_micro_batch_loss))
    close(got, expected, tr("the accumulated gradient"), atol=1e-6, rtol=1e-5,
          hint=tr("every non-pad token of the whole batch must weigh 1 / n_tokens: sum this micro-batch's token losses "
                  "(reduction='sum', ignore_index=pad_id) and divide by n_tokens, "
                  "the non-pad tokens of ALL micro-batches."))
    return (tr("two micro-batches of unequal lengths, accumulated with your loss, give exactly the gradient of the "
               "whole "
               "batch's token mean."))


def _expected_positions(ids, pad_id):
    return ((ids != pad_id).cumsum(-1) - 1).clamp(min=0)


@exercise("C.2", wrong=[lambda: (lambda ids, pad: torch.arange(ids.shape[1]).expand(ids.shape),),   # pads counted
                        lambda: (lambda ids, pad: (ids != pad).cumsum(-1),),                      # starts at 1
                        lambda: (lambda ids, pad: (ids == pad).cumsum(-1),)])
def exercise_C_2(my_position_ids):
    ids = torch.tensor([[PAD, PAD, 5, 6, 7], [PAD, 8, 9, 10, 11], [5, 6, 7, 8, 9]])  # left padding, 2, 1 and 0 pads
    got = call(my_position_ids, ids.clone(), PAD, name="my_position_ids(ids, pad_id)")
    if not isinstance(got, torch.Tensor) or got.shape != ids.shape:
        raise Wrong(tr("my_position_ids(ids, pad_id) should be a tensor of shape {ids_shape}, got "
                       "{got}.",
                       ids_shape=tuple(ids.shape),
                       got=tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__))
    real = ids != PAD
    if not torch.equal(got[real].long(), _expected_positions(ids, PAD)[real]):
        raise Wrong(tr("the real tokens do not get the positions 0, 1, 2, ... "
                       "counted from each sentence's first real token."),
                    hint=tr("count only the real tokens: "
                            "a running count of (ids != pad_id) along the sequence, minus one."))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = tl.Transformer(20, 20, d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=1,
                               dim_feedforward=32, dropout=0.0).eval()
    pe = tl.sinusoidal_positional_encoding(16, 16)
    pos = got.long().clamp(0, 15)
    with torch.no_grad():
        x = model.src_embed(ids) + pe[pos]
        left = model.encoder(x, src_key_padding_mask=tl.padding_mask(ids, PAD))
        alone = model.encode(ids[:1, 2:])
    torch.testing.assert_close(left[:1, 2:], alone)
    return tr("with your position ids, a left-padded sentence is encoded exactly as the sentence alone.")


def _attention_cases():
    """(name, attention (B, T, D) -> (B, T, D), whether it mixes the sentences of a batch)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        default = torch.nn.MultiheadAttention(8, 2)  # batch_first=False
        first = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        ours = tl.MultiHeadAttention(8, 2).eval()
    return [("nn.MultiheadAttention(8, 2)", lambda x: default(x, x, x)[0], True),
            ("nn.MultiheadAttention(8, 2, batch_first=True)", lambda x: first(x, x, x)[0], False),
            ("tl.MultiHeadAttention(8, 2)", lambda x: ours(x, x, x)[0], False)]


@exercise("C.3", wrong=[lambda: (lambda attn: True,), lambda: (lambda attn: False,),
                        lambda: (lambda attn: attn(torch.randn(2, 3, 8)).shape != (2, 3, 8),)])   # shapes say nothing
def exercise_C_3(my_mixes_batch):
    for name, attn, mixes in _attention_cases():
        with torch.no_grad():
            got = call(my_mixes_batch, attn, name="my_mixes_batch(attention)")
        if not isinstance(got, bool) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            raise Wrong(tr("my_mixes_batch should return True or False, got {got_type}.", got_type=type(got).__name__))
        if bool(got) != mixes:
            raise Wrong(tr("for {name} your test says {got}, but it does mix the sentences of a batch.",
                           name=name, got=bool(got)) if mixes
                        else tr("for {name} your test says {got}, but it does not mix the sentences of a batch.",
                                name=name, got=bool(got)),
                        hint=tr("feed a (B, T, D) batch, change only sentence 1, "
                                "and see whether sentence 0's output moves."))
    return (tr("your behavioural test tells the default nn.MultiheadAttention (mixes) "
               "from batch_first=True and tl's (do not)."))
