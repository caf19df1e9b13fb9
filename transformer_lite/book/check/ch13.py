"""Checks of chapter 13's exercises (the capstone translator).

Every check about a model uses the SHIPPED translator (``load_shipped_translator``): the same weights
on every machine, so its answers can be checked exactly. The checks decode and score with it
themselves; they never read the notebook's variables.
"""
from __future__ import annotations

import collections
import functools
import math

import torch

from transformer_lite.book.runtime import num_threads
from transformer_lite.data import BOS, EOS, PAD

from ..i18n import tr
from . import Wrong, as_number, call, exercise, number, one_of

# ---- 13.1: exact match -----------------------------------------------------------------------------


def _until_eos(row: list[int]) -> list[int]:
    return row[: row.index(EOS) + 1] if EOS in row else row


def _exact_match(pred: torch.Tensor, ref: torch.Tensor) -> float:
    return sum(_until_eos(p) == _until_eos(r) for p, r in zip(pred.tolist(), ref.tolist())) / len(ref)


def _batches():
    """(pred, ref) pairs: outputs as greedy_decode returns them (<bos> ... <eos>, then <pad>), references padded."""
    ref = torch.tensor([[BOS, 5, 6, 7, EOS], [BOS, 5, 6, EOS, PAD], [BOS, 8, 9, EOS, PAD],
                        [BOS, 5, EOS, PAD, PAD], [BOS, 5, 6, 7, EOS], [BOS, 9, 9, 9, EOS]])
    pred = torch.tensor([[BOS, 5, 6, 7],          # ran out of length before <eos>: wrong
                         [BOS, 5, 6, EOS],        # right
                         [BOS, 8, 9, 9],          # wrong
                         [BOS, 5, EOS, PAD],      # right
                         [BOS, 5, 6, EOS],        # stopped one word early: wrong
                         [BOS, 9, 9, 9]])         # the right words, but no <eos>: wrong
    ref2 = torch.tensor([[BOS, 5, EOS, PAD], [BOS, 6, 7, EOS], [BOS, 8, EOS, PAD]])
    pred2 = torch.tensor([[BOS, 5, EOS, 7, 7, PAD],       # what follows <eos> does not count: right
                          [BOS, 6, 7, EOS, PAD, PAD],     # right
                          [BOS, 8, 8, EOS, PAD, PAD]])    # wrong
    return [(pred, ref), (pred2, ref2)]


def _token_accuracy(pred, ref):
    L = max(pred.shape[1], ref.shape[1])
    p = torch.nn.functional.pad(pred, (0, L - pred.shape[1]), value=PAD)
    r = torch.nn.functional.pad(ref, (0, L - ref.shape[1]), value=PAD)
    return (p == r).float().mean().item()


def _prefix_match(pred, ref):
    n = min(pred.shape[1], ref.shape[1])
    return (pred[:, :n] == ref[:, :n]).all(1).float().mean().item()


def _words_only(pred, ref):
    def words(row):
        return [t for t in row if t not in (BOS, EOS, PAD)]
    return sum(words(p) == words(r) for p, r in zip(pred.tolist(), ref.tolist())) / len(ref)


def _whole_rows(pred, ref):
    L = max(pred.shape[1], ref.shape[1])
    p = torch.nn.functional.pad(pred, (0, L - pred.shape[1]), value=PAD)
    r = torch.nn.functional.pad(ref, (0, L - ref.shape[1]), value=PAD)
    return (p == r).all(1).float().mean().item()


@exercise("13.1", wrong=[lambda: (_token_accuracy,), lambda: (_prefix_match,), lambda: (_words_only,),
                         lambda: (_whole_rows,)])
def exercise_13_1(my_exact_match):
    for k, (pred, ref) in enumerate(_batches(), start=1):
        got = call(my_exact_match, pred.clone(), ref.clone(), name="my_exact_match(pred, ref)")
        number(got, _exact_match(pred, ref), tr("my_exact_match on test batch {k} ({n_ref} rows)",
                                                k=k, n_ref=len(ref)), abs_=1e-6,
               hint=tr("a row counts only if the output equals the reference token for token up to and including the "
                       "first <eos>, and then the row scores 1, else 0 (not a share of its tokens). An output that "
                       "never reached <eos> is wrong even if its words are right; what follows <eos> does not count; "
                       "the two tensors may have different widths."))
    return tr("your exact match agrees on two test batches (outputs cut at the length limit, and junk after <eos>).")


# ---- the shipped translator, loaded once ----------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _shipped():
    from transformer_lite.book.pretrained import load_shipped_translator

    model, data, _ = load_shipped_translator()
    return model, data


@functools.lru_cache(maxsize=1)
def _first_100_log_probs() -> torch.Tensor:
    from transformer_lite.decoding import greedy_decode, sequence_log_prob

    model, data = _shipped()
    src = data.test_src[:100]
    with torch.no_grad(), num_threads(1):  # a tiny model: one thread is fastest, many times so on a busy machine
        out = greedy_decode(model, src, 20, BOS, EOS)
        return sequence_log_prob(model, src, out, EOS)  # (100,)


# ---- 13.2: the least confident held-out sentence --------------------------------------------------

@exercise("13.2", wrong=[lambda: (int(_first_100_log_probs().argmax()),),      # the MOST confident one
                         lambda: (int(_first_100_log_probs().argmin()) + 1,)])  # counted from 1
def exercise_13_2(my_index):
    if isinstance(my_index, str):
        raise Wrong(tr("my_index should be the sentence's index in data.test_pairs (an int), got a string."))
    try:
        index = int(my_index)
    except (TypeError, ValueError):
        raise Wrong(tr("my_index should be an int, got {my_index_type}.",
                       my_index_type=type(my_index).__name__)) from None
    log_p = _first_100_log_probs()
    expected = int(log_p.argmin())
    if index != expected:
        hint = (tr("that is the sentence the model is MOST sure of: you want the smallest log P.")
                if index == int(log_p.argmax())
                else tr("indices count from 0, as in data.test_pairs[i].") if index == expected + 1
                else tr("decode the first 100 held-out sentences greedily, score the outputs with sequence_log_prob "
                        "(log P of the whole output, <eos> included) and take the argmin."))
        raise Wrong(tr("held-out sentence {index} is not the one whose greedy translation is least probable.",
                       index=index), hint)
    return (tr("sentence {expected}: the model gives its own translation probability {exp:.1e}; "
               "the next least sure sentence has {exp2:.2f}.",
               expected=expected, exp=log_p[expected].exp(), exp2=log_p.sort().values[1].exp()))


# ---- 13.3: where the decoder looks while writing 明天 -----------------------------------------------

@functools.lru_cache(maxsize=2)
def _looks_for_tomorrow(shift: int = 0) -> dict:
    model, data = _shipped()
    rows = [n for n, (_, zh) in enumerate(data.test_pairs) if "明天" in zh.split()]
    with torch.no_grad(), num_threads(1):
        cross = model.attention_maps(data.test_src[rows], data.test_tgt[rows, :-1]).cross[-1].mean(1)  # (n, T, S)
    looks = collections.Counter()
    for k, n in enumerate(rows):
        en, zh = data.test_pairs[n]
        t = zh.split().index("明天") + shift  # row t of the decoder input (<bos> + words) predicts word t
        looks[en.split()[int(cross[k, t, : len(en.split())].argmax())]] += 1
    return dict(looks)


@exercise("13.3", wrong=[lambda: ({"tomorrow": sum(_looks_for_tomorrow().values())},),
                         lambda: (_looks_for_tomorrow(1),)])                 # the row that READS 明天
def exercise_13_3(my_counts):
    try:
        given = {str(k): int(v) for k, v in dict(my_counts).items() if int(v) != 0}
    except (TypeError, ValueError):
        raise Wrong(tr("my_counts should be a dict (or Counter) English word -> count, got {my_counts_type}.",
                       my_counts_type=type(my_counts).__name__)) \
            from None
    expected = _looks_for_tomorrow()
    n = sum(expected.values())
    if sum(given.values()) != n:
        raise Wrong(tr("your counts add up to {total}; there is one peak per held-out sentence whose "
                       "translation contains 明天 ({n} sentences).", total=sum(given.values()), n=n),
                    hint=tr("loop over data.test_pairs, keep the pairs with 明天 among the Chinese words, one count "
                            "each."))
    if given != expected:
        raise Wrong(tr("the counts are not right."),
                    hint=tr("use the LAST layer's cross-attention, averaged over the heads, "
                            "with the teacher-forced decoder "
                            "input data.test_tgt[:, :-1] = <bos> + words. Row t of it PREDICTS word t (row 0, <bos>, "
                            "predicts the first word), so the row for 明天 is zh.split().index('明天'), not one more. "
                            "Take the argmax over the real English words only."))
    top = max(expected, key=expected.get)
    return tr("while predicting 明天 the last layer peaks on {top!r} in {expected} of {n} sentences.",
              top=top, expected=expected[top], n=n)


# ---- 13.4: bug hunt, a translator that reads the padding -----------------------------------------
# The suspect is pitfalls.TransformerEncoderPaddingNotMasked with the shipped weights: its causal mask is right (the
# leak test of chapter 7 passes: changing later target words leaves earlier logits unchanged), but its encoder lets
# the words attend to <pad>, so appending padding changes the real words' memory (by about 0.1 to 1 on the shipped
# model; the right model: below 1e-5).

_PARTS = ("encoder padding mask", "causal mask", "cross-attention padding mask", "positional encoding")  # i18n: data


@exercise("13.4", wrong=[lambda: ("causal mask", 0.0),                  # the leak test passes: not the causal mask
                        lambda: ("encoder padding mask", 0.0),          # no change seen: the test did not append pads
                        lambda: ("cross-attention padding mask", 0.4),
                        lambda: ("positional encoding", 0.4)])
def exercise_13_4(my_broken, my_largest_change):
    one_of(my_broken, _PARTS, "my_broken")
    change = as_number(my_largest_change, "my_largest_change")
    if change < 1e-3:
        raise Wrong(tr("a largest change of {change:.1e}: your test saw nothing wrong.", change=change),
                    hint=tr("chapter 7's two tests: change a later target word (do earlier logits move?), and append "
                            "<pad> tokens to a source sentence (does suspect.encode change for its real words?)."))
    if my_broken.strip().lower() != "encoder padding mask":
        raise Wrong(tr("{my_broken!r} would not make the real words' memory depend on padding appended to the source.",
                       my_broken=my_broken),
                    hint=tr("the memory is the encoder's output; the decoder and its masks come after it."))
    return (tr("the suspect's encoder lets the words attend to <pad>: a sentence's memory, and sometimes its "
               "translation, depends on how long the other sentences of its batch are."))


# ---- 13.5: why not 看 足球? ------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _football() -> tuple[float, float, float, float]:
    from transformer_lite.decoding import greedy_decode, sequence_log_prob

    model, data = _shipped()
    src = data.encode_source("she watches football")  # i18n: data
    with torch.no_grad(), num_threads(1):
        out = greedy_decode(model, src, 20, BOS, EOS)
        ref = torch.tensor([data.tgt_vocab.encode("她 看 足球", add_bos_eos=True)])
        lp_out, lp_ref = sequence_log_prob(model, src, out, EOS).item(), sequence_log_prob(model, src, ref, EOS).item()
        # the classic slip: leaving out the probability of <eos>
        no_eos = [sequence_log_prob(model, src, y, EOS).item()
                  - torch.log_softmax(model(src, y[:, :-1])[0, -1], -1)[EOS].item() for y in (out, ref)]
    return lp_out, lp_ref, no_eos[0], no_eos[1]


@exercise("13.5", wrong=[lambda: _football()[2:4],                                        # without <eos>
                         lambda: tuple(math.exp(v) for v in _football()[:2]),                   # probabilities
                         lambda: (_football()[1], _football()[0])])                         # swapped
def exercise_13_5(my_logp_model, my_logp_reference):
    lp_out, lp_ref, _, _ = _football()
    hint = (tr("score each output with sequence_log_prob(model, src, ys, EOS): ys is (1, L) token ids starting with "
               "<bos> "
               "and ending with <eos> (tgt_vocab.encode(..., add_bos_eos=True)); the result is a natural log, "
               "<eos> included, and it is negative."))
    number(my_logp_model, lp_out, tr("my_logp_model (log P of the model's greedy "
                                     "output)"), rel=1e-3, abs_=2e-3, hint=hint)
    number(my_logp_reference, lp_ref, "my_logp_reference (log P of 她 看 足球)", rel=1e-3, abs_=2e-3, hint=hint)
    return (tr("the model's own output is e^{log_ratio:.1f} ≈ {exp:,.0f} times "
               "more probable than 她 看 足球.", log_ratio=lp_out - lp_ref, exp=math.exp(lp_out - lp_ref)))
