"""Checks of chapter 14's exercises (from the Transformer to BERT and GPT): transformer_lite.book.check."""
from __future__ import annotations

import torch

import transformer_lite as tl
from transformer_lite import language_models as lm

from ..i18n import tr
from . import Wrong, call, exercise


def _keep_mistakes():
    def inverted(family, L):  # PyTorch's "True = blocked" convention
        return tl.causal_mask(L) if family == "decoder-only" else torch.zeros(L, L, dtype=torch.bool)

    def no_diagonal(family, L):  # a token may not see itself
        return torch.tril(torch.ones(L, L, dtype=torch.bool), diagonal=-1) if family == "decoder-only" \
            else torch.ones(L, L, dtype=torch.bool)

    def both_causal(family, L):  # "BERT is masked too"
        return ~tl.causal_mask(L)

    return [lambda: (inverted,), lambda: (no_diagonal,), lambda: (both_causal,)]


@exercise("14.1", wrong=_keep_mistakes())
def exercise_14_1(my_keep):
    for family in ("encoder-only", "decoder-only"):
        for L in (1, 4, 7):
            expected = torch.ones(L, L, dtype=torch.bool) if family == "encoder-only" else ~tl.causal_mask(L)
            got = call(my_keep, family, L, name=f"my_keep({family!r}, {L})")
            if not isinstance(got, torch.Tensor) or got.dtype != torch.bool or tuple(got.shape) != (L, L):
                raise Wrong(tr("my_keep({family!r}, {L}) should be a bool tensor of shape ({L}, {L}), got "
                               "{got_type} {got_shape} "
                               "{got_dtype}.",
                               family=family, L=L, got_type=type(got).__name__,
                               got_shape=tuple(getattr(got, 'shape', ())), got_dtype=getattr(got, 'dtype', '')))
            if not torch.equal(got, expected):
                if torch.equal(got, ~expected):
                    hint = tr("inverted: here True means MAY attend (tl.causal_mask is the opposite, True = blocked).")
                elif family == "encoder-only":
                    hint = tr("an encoder-only model (BERT) has no causal mask: every token sees both sides.")
                elif not got.diagonal().all():
                    hint = tr("off by one: a token may always see itself, so keep the diagonal (j <= i).")
                else:
                    hint = tr("a decoder-only model (GPT) lets query i see the keys j <= i: the lower triangle.")
                raise Wrong(tr("my_keep({family!r}, {L}) differs from the right mask in "
                               "{n_wrong} of {n_entries} entries.",
                               family=family, L=L, n_wrong=int((got != expected).sum()), n_entries=L * L), hint=hint)
    return tr("an encoder-only token sees every key; a decoder-only token sees itself and the keys before it.")


def suspect_gpt(model):
    """Exercise 14.2's suspect: a copy of the decoder-only model ``model`` (same weights) with one silent bug."""
    from transformer_lite import pitfalls

    return pitfalls.decoder_only_lm_seeing_one_ahead(model)


def _leak_test(model):  # chapter 7's test: change token t, and no row before t may move
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    for t in range(1, ids.shape[1]):
        changed = ids.clone()
        changed[0, t] = 10 if ids[0, t] != 10 else 11
        if (model(ids)[0, :t] != model(changed)[0, :t]).any():
            return False
    return True


_MASK_DIAGNOSES = ("future", "itself", "past")


@exercise("14.2", wrong=[lambda: ("itself", _leak_test), lambda: ("past", _leak_test),
                         lambda: ("future", lambda model: True), lambda: ("future", lambda model: False)])
def exercise_14_2(my_diagnosis, my_test):
    if not isinstance(my_diagnosis, str) or my_diagnosis.strip().lower() not in _MASK_DIAGNOSES:
        raise Wrong(tr("my_diagnosis should be one of {mask_diagnoses}, got {my_diagnosis!r}.",
                       mask_diagnoses=list(_MASK_DIAGNOSES), my_diagnosis=my_diagnosis))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        right = lm.DecoderOnlyLM(128, d_model=32, nhead=4, num_layers=2, max_len=32).eval()  # room for any small ids
    verdicts = {}
    for key, name, model in (("right", tr("a correct DecoderOnlyLM"), right),
                             ("suspect", tr("the suspect"), suspect_gpt(right))):
        with torch.no_grad():
            v = call(my_test, model, name="my_test(model)")
        if not isinstance(v, (bool, torch.Tensor)) or (isinstance(v, torch.Tensor) and v.numel() != 1):
            raise Wrong(tr("my_test should return True or False, got {v!r} for {name}.", v=v, name=name))
        verdicts[key] = bool(v)
    if not verdicts["right"]:
        raise Wrong(tr("my_test fails a correct DecoderOnlyLM: a test must pass the right model."),
                    hint=tr("use token ids the model knows (below model.vocab_size, 128 here; 1 is <bos>), and "
                            "compare only the rows BEFORE the token you changed."))
    if verdicts["suspect"]:
        raise Wrong(tr("my_test passes the suspect: it does not catch the bug."),
                    hint=tr("change one token t and compare every earlier row of logits, t - 1 included."))
    if my_diagnosis.strip().lower() != "future":
        raise Wrong(tr("your test catches the suspect, but the bug is not {my_diagnosis!r}.",
                       my_diagnosis=my_diagnosis),
                    hint=tr("which rows moved when you changed token t?"))
    return (tr("the suspect's mask lets each position see the next token, the very token it must predict (and, through "
               "each further layer, one more): trained with it, a model learns to copy, and generates nonsense."))


def _gpt_count(V, context, D, N):
    with torch.device("meta"):
        model = lm.DecoderOnlyLM(V, d_model=D, nhead=max(1, D // 64), num_layers=N, max_len=context)
    return tl.count_parameters(model)


def _layer(D):
    return 4 * (D * D + D) + (D * 4 * D + 4 * D) + (4 * D * D + D) + 4 * D


@exercise("14.3", wrong=[
    lambda: (lambda V, c, D, N: 2 * V * D + c * D + N * _layer(D) + 2 * D,),  # untied output
    lambda: (lambda V, c, D, N: V * D + c * D + N * _layer(D),),  # no final LayerNorm
    lambda: (lambda V, c, D, N: V * D + N * _layer(D) + 2 * D,),  # no position table
    lambda: (lambda V, c, D, N: V * D + c * D + N * (12 * D * D) + 2 * D,)])  # the "12 D^2 per layer" shortcut
def exercise_14_3(my_gpt_params):
    for V, context, D, N in [(50257, 1024, 768, 12), (50257, 1024, 1024, 24), (100, 16, 64, 2)]:
        expected = _gpt_count(V, context, D, N)
        got = call(my_gpt_params, V, context, D, N, name=f"my_gpt_params({V}, {context}, {D}, {N})")
        try:
            got = int(got)
        except (TypeError, ValueError):
            raise Wrong(tr("my_gpt_params should return a whole number, got {got_type}.",
                           got_type=type(got).__name__)) from None
        if got != expected:
            diff = got - expected
            if diff == V * D:
                hint = tr("the output layer is tied to the token embedding: count that matrix once.")
            elif diff == -2 * D:
                hint = tr("a Pre-LN stack ends with a final LayerNorm (gain and bias: 2 D).")
            elif diff == -context * D:
                hint = tr("GPT-2 learns one D-vector per position: context x D more parameters.")
            else:
                hint = (tr("per layer: Q, K, V, output projections with biases (4 (D^2 + D)), the FFN D -> 4D -> D "
                           "with "
                           "biases, and two LayerNorms (2 x 2D); 12 D^2 alone drops the biases and norms."))
            raise Wrong(tr("my_gpt_params({V}, {context}, {D}, {N}) is off by {diff:+,}.",
                           V=V, context=context, D=D, N=N, diff=diff), hint=hint)
    return tr("your formula equals the module count of GPT-2 small (124,439,808), GPT-2 medium and a tiny GPT.")
