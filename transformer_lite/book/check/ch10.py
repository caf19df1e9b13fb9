"""Checks of chapter 10's exercises (transformer_lite.book.check): teacher forcing, label smoothing, gradient
clipping, a bug hunt (a loss that counts padding) and Adam's update."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from transformer_lite.data import BOS, EOS, PAD
from transformer_lite.training import teacher_forcing

from ..i18n import N_, tr
from . import Wrong, call, close, exercise, tensor


def _pair(out, name):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise Wrong(tr("{name} should return two tensors, (decoder_input, labels); got {out_type}.",
                       name=name, out_type=type(out).__name__),
                    hint="return decoder_input, labels")  # i18n: data (code)
    return out


# ---- 11.1: teacher forcing ---------------------------------------------------------------------------------

def _targets():
    g = torch.Generator().manual_seed(0)
    tgt = torch.randint(4, 20, (3, 7), generator=g)  # (B, T + 1) = BOS + words + EOS + padding
    tgt[:, 0] = BOS
    for row, length in enumerate((7, 5, 4)):  # tokens in the row, <bos> and <eos> included
        tgt[row, length - 1] = EOS
        tgt[row, length:] = PAD
    return tgt


@exercise("10.1", wrong=[lambda: (lambda tgt: (tgt, tgt),),
                         lambda: (lambda tgt: (tgt[:, 1:], tgt[:, :-1]),),
                         lambda: (lambda tgt: (tgt[:, :-1], tgt[:, :-1]),)])
def exercise_10_1(my_teacher_forcing):
    tgt = _targets()
    expected_in, expected_labels = teacher_forcing(tgt)
    out = _pair(call(my_teacher_forcing, tgt, name="my_teacher_forcing"), "my_teacher_forcing(tgt)")
    got_in = tensor(out[0], "decoder_input", tuple(expected_in.shape))
    got_labels = tensor(out[1], "labels", tuple(expected_labels.shape))
    if torch.equal(got_in.long(), expected_labels) and torch.equal(got_labels.long(), expected_in):
        raise Wrong(tr("decoder_input and labels are swapped."),
                    hint=tr("the decoder READS <bos> y_1 ... (the target without its last token) and must PREDICT "
                            "y_1 ... <eos> (the target without its first token)."))
    if torch.equal(got_in.long(), got_labels.long()):
        raise Wrong(tr("decoder_input equals labels: the model would be asked to copy the token it reads."),
                    hint=tr("shift by one position: labels[:, t] must be the token AFTER decoder_input[:, t]."))
    if not torch.equal(got_in.long(), expected_in):
        raise Wrong(tr("decoder_input is not right."),
                    hint=tr("the decoder reads the target without its LAST token: tgt[:, :-1]."))
    if not torch.equal(got_labels.long(), expected_labels):
        raise Wrong(tr("labels are not right."),
                    hint=tr("the labels are the target without its FIRST token (<bos>): tgt[:, 1:]."))
    return tr("decoder_input = tgt[:, :-1] and labels = tgt[:, 1:], as transformer_lite.training.teacher_forcing.")


# ---- 11.2: label-smoothed cross-entropy by hand -----------------------------------------------------------------

def _smoothed(logits, labels, eps, spread, right, drop_pad_column=False, ignore_pad=True):
    # a loss with the smoothing mass eps / spread on every other word and `right` on the label
    q = torch.full(logits.shape, eps / spread)
    q.scatter_(-1, labels.clamp_min(0).unsqueeze(-1), right)
    if drop_pad_column:
        q[..., PAD] = 0.0
    per_position = -(q * logits.log_softmax(-1)).sum(-1)
    keep = labels != PAD if ignore_pad else torch.ones_like(labels, dtype=torch.bool)
    return (per_position * keep).sum() / keep.sum()


def _over_v_minus_1():  # fairseq's convention: 1 - eps on the label, eps / (V - 1) on each other word
    return (lambda logits, labels, eps: _smoothed(logits, labels, eps, logits.shape[-1] - 1, 1 - eps),)


def _annotated():  # the Annotated Transformer's: 1 - eps on the label, eps / (V - 2), none on <pad>
    return (lambda logits, labels, eps: _smoothed(logits, labels, eps, logits.shape[-1] - 2, 1 - eps, True),)


def _counts_padding():
    return (lambda logits, labels, eps: _smoothed(logits, labels, eps, logits.shape[-1],
                                                  1 - eps + eps / logits.shape[-1], ignore_pad=False),)


def _no_smoothing():
    return (lambda logits, labels, eps: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                                        ignore_index=PAD),)


_SMOOTHING_MISTAKES = [
    (_over_v_minus_1, N_("you spread eps over the V - 1 other words and left exactly 1 - eps on the label (fairseq's "
                         "convention). This chapter's loss, like PyTorch's label_smoothing and Szegedy et al.'s "
                         "formula, spreads eps over ALL V words: the label gets 1 - eps + eps / V.")),
    (_annotated, N_("you used the Annotated Transformer's convention (eps / (V - 2), nothing on <pad>). This "
                    "chapter's loss spreads eps over all V words: q = (1 - eps) one_hot + eps / V.")),
    (_counts_padding, N_("padding positions must not count: average over the positions whose label is not PAD.")),
    (_no_smoothing, N_("that is the plain cross-entropy: the target must be the smoothed q, not the one-hot label.")),
]


@exercise("10.2", wrong=[m for m, _ in _SMOOTHING_MISTAKES] + [lambda: (lambda logits, labels, eps: logits.sum(),)])
def exercise_10_2(my_smoothed_loss):
    g = torch.Generator().manual_seed(1)
    V = 9
    logits = 2 * torch.randn(2, 5, V, generator=g)
    labels = torch.randint(4, V, (2, 5), generator=g)
    labels[1, 3:] = PAD  # the second sentence is shorter
    for eps in (0.1, 0.3):
        expected = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), label_smoothing=eps, ignore_index=PAD)
        out = call(my_smoothed_loss, logits, labels, eps, name="my_smoothed_loss")
        out = tensor(out, f"my_smoothed_loss(logits, labels, {eps})").reshape(())
        hint = (tr("q(w) = (1 - eps) [w = label] + eps / V; loss = -sum_w q(w) log_softmax(logits)(w), averaged over "
                   "the positions whose label is not PAD."))
        for mistake, text in _SMOOTHING_MISTAKES:
            if torch.allclose(out, mistake()[0](logits, labels, eps).reshape(()), atol=1e-5):
                hint = tr(text)
                break
        close(out, expected, f"my_smoothed_loss(logits, labels, eps={eps})", hint=hint, atol=1e-5)
    return tr("your loss equals F.cross_entropy(..., label_smoothing=eps, ignore_index=PAD) for eps = 0.1 and 0.3.")


# ---- 11.3: the warm-up schedule --------------------------------------------------------------------------------

def _clip_reference(grads, max_norm):
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad for p in params]


def _clip_each(grads, max_norm):  # each tensor by its own norm
    return [g * min(1.0, max_norm / float(g.norm())) for g in grads]


def _clip_values(grads, max_norm):  # clip_grad_value_: every entry into [-max_norm, max_norm]
    return [g.clamp(-max_norm, max_norm) for g in grads]


def _always_rescale(grads, max_norm):  # scales up small gradients too
    total = float(torch.cat([g.flatten() for g in grads]).norm())
    return [g * max_norm / total for g in grads]


@exercise("10.3", wrong=[lambda: (_clip_each,), lambda: (_clip_values,), lambda: (_always_rescale,)])
def exercise_10_3(my_clip):
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(4, 3, generator=gen), 5 * torch.randn(7, generator=gen),
             0.1 * torch.randn(2, 2, generator=gen)]
    total = float(torch.cat([g.flatten() for g in grads]).norm())
    for max_norm, case in ((0.5 * total, tr("a joint norm above "
                                            "max_norm")), (2 * total, tr("a joint norm below max_norm"))):
        got = call(my_clip, [g.clone() for g in grads], max_norm, name="my_clip(grads, max_norm)")
        if not isinstance(got, (list, tuple)) or len(got) != len(grads):
            raise Wrong(tr("my_clip should return a list of {n_grads} tensors, one per gradient, "
                           "got {got_type}.", n_grads=len(grads), got_type=type(got).__name__))
        for i, (mine, ref) in enumerate(zip(got, _clip_reference(grads, max_norm))):
            close(tensor(mine, f"my_clip(...)[{i}]", tuple(ref.shape)), ref, tr("my_clip(...)[{i}] for {case}",
                                                                                i=i, case=case),
                  atol=1e-5, rtol=1e-4,
                  hint=tr("the norm is that of ALL the gradients together, as one vector; below max_norm nothing "
                          "changes; above it every gradient is multiplied by the same max_norm / norm."))
    return tr("your clipping equals torch.nn.utils.clip_grad_norm_: one factor for all gradients, only above max_norm.")


# ---- 11.4: bug hunt, a loss that counts padding ------------------------------------------------------------------

def suspect_loss(logits, labels):
    """Exercise 10.4's suspect: meant to be the cross-entropy over the real positions; it has one silent bug."""
    from transformer_lite import pitfalls

    return pitfalls.cross_entropy_counting_padding(logits, labels)


def _padding_experiment(loss_fn):
    gen = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(2, 5, 9, generator=gen), torch.tensor([[4, 5, 6, 2, PAD], [4, 2, PAD, PAD, PAD]])
    more_logits = torch.cat([logits, torch.randn(2, 3, 9, generator=gen)], dim=1)
    more_labels = torch.cat([labels, torch.full((2, 3), PAD)], dim=1)
    return torch.allclose(loss_fn(logits, labels), loss_fn(more_logits, more_labels))


_DIAGNOSES = ("padding", "shift", "smoothing")


@exercise("10.4", wrong=[lambda: ("shift", _padding_experiment), lambda: ("smoothing", _padding_experiment),
                         lambda: ("padding", lambda loss_fn: True), lambda: ("padding", lambda loss_fn: False)])
def exercise_10_4(my_diagnosis, my_test):
    from transformer_lite.training import label_smoothed_cross_entropy

    if not isinstance(my_diagnosis, str) or my_diagnosis.strip().lower() not in _DIAGNOSES:
        raise Wrong(tr("my_diagnosis should be one of {diagnoses}, got {my_diagnosis!r}.",
                       diagnoses=list(_DIAGNOSES), my_diagnosis=my_diagnosis))
    right = lambda logits, labels: label_smoothed_cross_entropy(logits, labels)  # noqa: E731
    verdicts = {}
    for key, fn in (("right", right), ("suspect_loss", suspect_loss)):
        name = tr("the right loss") if key == "right" else key
        with torch.no_grad():
            v = call(my_test, fn, name="my_test(loss_fn)")
        if not isinstance(v, (bool, torch.Tensor)) or (isinstance(v, torch.Tensor) and v.numel() != 1):
            raise Wrong(tr("my_test should return True or False, got {v!r} for {name}.", v=v, name=name))
        verdicts[key] = bool(v)
    if not verdicts["right"]:
        raise Wrong(tr("my_test fails the right loss (label_smoothed_cross_entropy): a test must pass it."),
                    hint=tr("compare the two losses with torch.allclose, not ==."))
    if verdicts["suspect_loss"]:
        raise Wrong(tr("my_test passes suspect_loss: it does not catch the bug."),
                    hint=tr("the suspect is right on a batch without padding: append columns of <pad> to the targets."))
    if my_diagnosis.strip().lower() != "padding":
        raise Wrong(tr("your test catches the suspect, but the bug is not {my_diagnosis!r}.",
                       my_diagnosis=my_diagnosis),
                    hint=tr("which experiment of the chapter did your test run?"))
    return (tr("suspect_loss averages over every position, padding included (no ignore_index): it trains the model to "
               "predict <pad>, and its value changes when more padding is appended."))


# ---- 11.5: Adam by hand --------------------------------------------------------------------------------------------

def _adam_reference(grads, lr, betas=(0.9, 0.98), eps=1e-9):
    w = torch.zeros(grads.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr, betas=betas, eps=eps)
    updates = []
    for g in grads.double():
        before = w.detach().clone()
        w.grad = g.clone()
        opt.step()
        updates.append(w.detach() - before)
    return torch.stack(updates)


def _no_bias_correction(grads, lr):
    m = v = torch.zeros(grads.shape[1], dtype=torch.float64)
    out = []
    for g in grads.double():
        m, v = 0.9 * m + 0.1 * g, 0.98 * v + 0.02 * g ** 2
        out.append(-lr * m / (v.sqrt() + 1e-9))
    return torch.stack(out)


_ADAM_MISTAKES = [
    (lambda grads, lr: -lr * grads.sign(),
     N_("every step is lr * sign(g) only on the FIRST step (m_hat = g, v_hat = g^2). Later steps are "
        "lr * m_hat / (sqrt(v_hat) + eps), with m and v running averages: keep them from step to step.")),
    (_no_bias_correction, N_("divide m by (1 - beta1^k) and v by (1 - beta2^k) before using them (the bias correction; "
                             "k counts the steps from 1): both averages start at zero.")),
    (lambda grads, lr: _adam_reference(grads, lr, betas=(0.9, 0.999)),
     N_("that is PyTorch's default beta2 = 0.999; the paper (and paper_adam) uses beta2 = 0.98.")),
    (lambda grads, lr: -_adam_reference(grads, lr), N_("the step goes AGAINST the gradient: theta - lr * ...")),
]


@exercise("10.5", wrong=[lambda m=m: (m,) for m, _ in _ADAM_MISTAKES] + [lambda: (lambda grads, lr: grads * 0,)])
def exercise_10_5(my_adam_updates):
    g = torch.Generator().manual_seed(2)
    scales = torch.tensor([1e-3, 1.0, 1e3, 1.0], dtype=torch.float64)
    grads = torch.randn(6, 4, generator=g, dtype=torch.float64) * scales  # 6 steps, 4 weights of different scales
    grads[:, 3] = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])       # one gradient that flips sign every step
    lr = 1e-3
    expected = _adam_reference(grads, lr)
    out = call(my_adam_updates, grads.clone(), lr, name="my_adam_updates")
    out = tensor(out, "my_adam_updates(grads, lr)", tuple(expected.shape)).double()
    hint = (tr("m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, m_hat = m / (1 - b1^k), v_hat = v / (1 - b2^k), "
               "update = -lr m_hat / (sqrt(v_hat) + eps), with b1 = 0.9, b2 = 0.98, eps = 1e-9."))
    for mistake, text in _ADAM_MISTAKES:
        if torch.allclose(out, mistake(grads, lr).double(), rtol=1e-5, atol=1e-10):
            hint = tr(text)
            break
    close(out, expected, "my_adam_updates(grads, lr)", hint=hint, atol=1e-9, rtol=1e-4)
    return tr("your updates equal torch.optim.Adam's with the paper's betas and eps, step by step, for all 4 weights.")
