"""Checks of chapter 11's exercises (transformer_lite.book.check): teacher forcing, label smoothing, the warm-up
schedule, perplexity and Adam's update."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_lite.data import BOS, EOS, PAD
from transformer_lite.training import noam_lr, teacher_forcing

from . import Wrong, call, close, exercise, number, tensor


def _pair(out, name):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise Wrong(f"{name} should return two tensors, (decoder_input, labels); got {type(out).__name__}.",
                    hint="return decoder_input, labels")
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


@exercise("11.1", wrong=[lambda: (lambda tgt: (tgt, tgt),),
                         lambda: (lambda tgt: (tgt[:, 1:], tgt[:, :-1]),),
                         lambda: (lambda tgt: (tgt[:, :-1], tgt[:, :-1]),)])
def exercise_11_1(my_teacher_forcing):
    tgt = _targets()
    expected_in, expected_labels = teacher_forcing(tgt)
    out = _pair(call(my_teacher_forcing, tgt, name="my_teacher_forcing"), "my_teacher_forcing(tgt)")
    got_in = tensor(out[0], "decoder_input", tuple(expected_in.shape))
    got_labels = tensor(out[1], "labels", tuple(expected_labels.shape))
    if torch.equal(got_in.long(), expected_labels) and torch.equal(got_labels.long(), expected_in):
        raise Wrong("decoder_input and labels are swapped.",
                    hint="the decoder READS <bos> y_1 ... (the target without its last token) and must PREDICT "
                         "y_1 ... <eos> (the target without its first token).")
    if torch.equal(got_in.long(), got_labels.long()):
        raise Wrong("decoder_input equals labels: the model would be asked to copy the token it reads.",
                    hint="shift by one position: labels[:, t] must be the token AFTER decoder_input[:, t].")
    if not torch.equal(got_in.long(), expected_in):
        raise Wrong("decoder_input is not right.", hint="the decoder reads the target without its LAST token: tgt[:, :-1].")
    if not torch.equal(got_labels.long(), expected_labels):
        raise Wrong("labels are not right.", hint="the labels are the target without its FIRST token (<bos>): tgt[:, 1:].")
    return "decoder_input = tgt[:, :-1] and labels = tgt[:, 1:], as transformer_lite.training.teacher_forcing."


# ---- 11.2: label-smoothed cross-entropy by hand -----------------------------------------------------------------

def _smoothed(logits, labels, eps, spread, right, drop_pad_column=False, ignore_pad=True):
    # a loss with the smoothing mass eps / spread on every other word and `right` on the label
    V = logits.shape[-1]
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
    (_over_v_minus_1, "you spread eps over the V - 1 other words and left exactly 1 - eps on the label (fairseq's "
                      "convention). This chapter's loss, like PyTorch's label_smoothing and Szegedy et al.'s "
                      "formula, spreads eps over ALL V words: the label gets 1 - eps + eps / V."),
    (_annotated, "you used the Annotated Transformer's convention (eps / (V - 2), nothing on <pad>). This "
                 "chapter's loss spreads eps over all V words: q = (1 - eps) one_hot + eps / V."),
    (_counts_padding, "padding positions must not count: average over the positions whose label is not PAD."),
    (_no_smoothing, "that is the plain cross-entropy: the target must be the smoothed q, not the one-hot label."),
]


@exercise("11.2", wrong=[m for m, _ in _SMOOTHING_MISTAKES] + [lambda: (lambda logits, labels, eps: logits.sum(),)])
def exercise_11_2(my_smoothed_loss):
    g = torch.Generator().manual_seed(1)
    V = 9
    logits = 2 * torch.randn(2, 5, V, generator=g)
    labels = torch.randint(4, V, (2, 5), generator=g)
    labels[1, 3:] = PAD  # the second sentence is shorter
    for eps in (0.1, 0.3):
        expected = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), label_smoothing=eps, ignore_index=PAD)
        out = call(my_smoothed_loss, logits, labels, eps, name="my_smoothed_loss")
        out = tensor(out, f"my_smoothed_loss(logits, labels, {eps})").reshape(())
        hint = ("q(w) = (1 - eps) [w = label] + eps / V; loss = -sum_w q(w) log_softmax(logits)(w), averaged over "
                "the positions whose label is not PAD.")
        for mistake, text in _SMOOTHING_MISTAKES:
            if torch.allclose(out, mistake()[0](logits, labels, eps).reshape(()), atol=1e-5):
                hint = text
                break
        close(out, expected, f"my_smoothed_loss(logits, labels, eps={eps})", hint=hint, atol=1e-5)
    return "your loss equals F.cross_entropy(..., label_smoothing=eps, ignore_index=PAD) for eps = 0.1 and 0.3."


# ---- 11.3: the warm-up schedule --------------------------------------------------------------------------------

@exercise("11.3", wrong=[lambda: (4001, (512 * 4000) ** -0.5, 16000), lambda: (4000, 4000 ** -0.5, 16000),
                         lambda: (4000, (512 * 4000) ** -0.5, 8000)])
def exercise_11_3(my_peak_step, my_peak_lr, my_half_step):
    d_model, warmup = 512, 4000
    lrs = [noam_lr(k, d_model, warmup) for k in range(1, 6 * warmup)]
    peak_step = max(range(len(lrs)), key=lrs.__getitem__) + 1
    half_step = min(range(peak_step, len(lrs) + 1), key=lambda k: abs(lrs[k - 1] - lrs[peak_step - 1] / 2))
    number(my_peak_step, peak_step, "my_peak_step", rel=0, abs_=0.5,
           hint="the two branches of min(k^-0.5, k w^-1.5) meet where k^-0.5 = k w^-1.5; steps count from 1.")
    number(my_peak_lr, lrs[peak_step - 1], "my_peak_lr", rel=1e-4,
           hint="put k = warmup_steps into d_model^-0.5 min(k^-0.5, k w^-1.5): do not forget the d_model^-0.5.")
    number(my_half_step, half_step, "my_half_step", rel=0, abs_=0.5,
           hint="after the peak the rate falls as 1/sqrt(k): to halve it, k must grow four-fold, not two-fold.")
    return f"the rate peaks at step {peak_step} with (512 x 4000)^-0.5 and is half of that at step {half_step}."


# ---- 11.4: perplexity --------------------------------------------------------------------------------------------

_P_RIGHT = (0.5, 0.25, 1.0, 0.125)
_V_PAPER = 37_000


@exercise("11.4", wrong=[lambda: (1.0397, 3.75, _V_PAPER), lambda: (1.5, 2 ** 1.5, _V_PAPER),
                         lambda: (1.0397, 2.8284, math.log(_V_PAPER)), lambda: (4.1589, 64.0, _V_PAPER)])
def exercise_11_4(my_loss, my_perplexity, my_uniform_perplexity):
    p = torch.tensor(_P_RIGHT, dtype=torch.float64)
    loss = float(-p.log().mean())
    number(my_loss, loss, "my_loss", rel=1e-3,
           hint="the mean over the four positions of -ln p (natural log: the loss is in nats per token).")
    number(my_perplexity, math.exp(loss), "my_perplexity", rel=1e-3,
           hint="perplexity = exp(mean cross-entropy) = the geometric mean of 1/p, not the arithmetic mean.")
    logits = torch.zeros(5, _V_PAPER)
    uniform = math.exp(float(F.cross_entropy(logits, torch.tensor([0, 7, 99, 1234, 36_999]))))
    number(my_uniform_perplexity, uniform, "my_uniform_perplexity", rel=1e-3,
           hint="equal logits give p = 1/V to every word: the loss is ln V, and the perplexity exp(ln V).")
    return (f"loss {loss:.4f} nats per token, perplexity {math.exp(loss):.4f} (as unsure as a fair choice among "
            f"{math.exp(loss):.2f} words); knowing nothing, the perplexity is V = {_V_PAPER}.")


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
     "every step is lr * sign(g) only on the FIRST step (m_hat = g, v_hat = g^2). Later steps are "
     "lr * m_hat / (sqrt(v_hat) + eps), with m and v running averages: keep them from step to step."),
    (_no_bias_correction, "divide m by (1 - beta1^k) and v by (1 - beta2^k) before using them (the bias correction; "
                          "k counts the steps from 1): both averages start at zero."),
    (lambda grads, lr: _adam_reference(grads, lr, betas=(0.9, 0.999)),
     "that is PyTorch's default beta2 = 0.999; the paper (and paper_adam) uses beta2 = 0.98."),
    (lambda grads, lr: -_adam_reference(grads, lr), "the step goes AGAINST the gradient: theta - lr * ..."),
]


@exercise("11.5", wrong=[lambda m=m: (m,) for m, _ in _ADAM_MISTAKES] + [lambda: (lambda grads, lr: grads * 0,)])
def exercise_11_5(my_adam_updates):
    g = torch.Generator().manual_seed(2)
    scales = torch.tensor([1e-3, 1.0, 1e3, 1.0], dtype=torch.float64)
    grads = torch.randn(6, 4, generator=g, dtype=torch.float64) * scales  # 6 steps, 4 weights of different scales
    grads[:, 3] = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])       # one gradient that flips sign every step
    lr = 1e-3
    expected = _adam_reference(grads, lr)
    out = call(my_adam_updates, grads.clone(), lr, name="my_adam_updates")
    out = tensor(out, "my_adam_updates(grads, lr)", tuple(expected.shape)).double()
    hint = ("m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, m_hat = m / (1 - b1^k), v_hat = v / (1 - b2^k), "
            "update = -lr m_hat / (sqrt(v_hat) + eps), with b1 = 0.9, b2 = 0.98, eps = 1e-9.")
    for mistake, text in _ADAM_MISTAKES:
        if torch.allclose(out, mistake(grads, lr).double(), rtol=1e-5, atol=1e-10):
            hint = text
            break
    close(out, expected, "my_adam_updates(grads, lr)", hint=hint, atol=1e-9, rtol=1e-4)
    return "your updates equal torch.optim.Adam's with the paper's betas and eps, step by step, for all 4 weights."
