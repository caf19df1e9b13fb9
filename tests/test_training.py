"""transformer_lite.training: teacher forcing, label smoothing by hand = F.cross_entropy, the Noam schedule, train()."""
import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lite import Transformer
from transformer_lite.book.runtime import book_seed, num_threads
from transformer_lite.data import BOS, EOS, PAD, copy_task
from transformer_lite.decoding import exact_match
from transformer_lite.training import (
    History,
    label_smoothed_cross_entropy,
    noam_lr,
    paper_adam,
    smoothed_targets,
    teacher_forcing,
    train,
    warmup_scheduler,
)


def tiny_model(V=12, seed=0, **kw):
    torch.manual_seed(seed)
    cfg = dict(d_model=32, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64, dropout=0.0)
    cfg.update(kw)
    return Transformer(V, V, **cfg)


def test_teacher_forcing_shifts():
    tgt = torch.tensor([[BOS, 7, 8, 9, EOS], [BOS, 5, EOS, PAD, PAD]])
    dec_in, labels = teacher_forcing(tgt)
    assert dec_in.tolist() == [[BOS, 7, 8, 9], [BOS, 5, EOS, PAD]]
    assert labels.tolist() == [[7, 8, 9, EOS], [5, EOS, PAD, PAD]]


@pytest.mark.parametrize("bad, exc", [(torch.ones(3, 1, dtype=torch.long), ValueError),
                                      (torch.ones(2, 3), TypeError), (torch.ones(4, dtype=torch.long), ValueError)])
def test_teacher_forcing_bad_input(bad, exc):
    with pytest.raises(exc, match="tgt"):
        teacher_forcing(bad)


def test_smoothed_targets_sum_to_one():
    q = smoothed_targets(torch.tensor([[0, 3], [2, 1]]), V=5, smoothing=0.1)
    assert q.shape == (2, 2, 5)
    torch.testing.assert_close(q.sum(-1), torch.ones(2, 2))
    assert q[0, 1, 3].item() == pytest.approx(0.9 + 0.1 / 5)
    assert q[0, 1, 0].item() == pytest.approx(0.1 / 5)
    assert torch.equal(smoothed_targets(torch.tensor([1]), 3, 0.0), torch.tensor([[0.0, 1.0, 0.0]]))


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.1, 0.3, 0.9])
def test_label_smoothed_cross_entropy_equals_torch(eps):
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 5, 11, generator=g) * 3
    labels = torch.randint(0, 11, (3, 5), generator=g)
    labels[0, 3:] = PAD  # ignored positions
    labels[2, 4] = PAD
    ours = label_smoothed_cross_entropy(logits, labels, smoothing=eps)
    ref = F.cross_entropy(logits.view(-1, 11), labels.view(-1), label_smoothing=eps, ignore_index=PAD)
    torch.testing.assert_close(ours, ref)
    # 2-D input, another ignore_index, and the gradient agree too
    lg = logits.view(-1, 11).clone().requires_grad_()
    lg2 = lg.detach().clone().requires_grad_()
    label_smoothed_cross_entropy(lg, labels.view(-1), eps, ignore_index=-100).backward()
    F.cross_entropy(lg2, labels.view(-1), label_smoothing=eps).backward()
    torch.testing.assert_close(lg.grad, lg2.grad)


def test_label_smoothing_raises_the_minimum_loss():
    # A perfectly confident correct prediction has loss ~0 without smoothing but not with it.
    logits = torch.full((1, 1, 4), -30.0)
    logits[0, 0, 2] = 30.0
    labels = torch.tensor([[2]])
    assert label_smoothed_cross_entropy(logits, labels, 0.0).item() < 1e-6
    assert label_smoothed_cross_entropy(logits, labels, 0.1).item() > 1.0


def test_label_smoothed_cross_entropy_all_ignored_is_zero():
    assert label_smoothed_cross_entropy(torch.randn(1, 2, 3), torch.zeros(1, 2, dtype=torch.long)).item() == 0.0


@pytest.mark.parametrize("logits, labels, kw, exc, name", [
    ("x", torch.zeros(1, 2, dtype=torch.long), {}, TypeError, "logits"),
    (torch.randn(1, 2, 3), [0, 1], {}, TypeError, "labels"),
    (torch.zeros(1, 2, 3, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long), {}, TypeError, "logits"),
    (torch.randn(1, 2, 3), torch.zeros(1, 2), {}, TypeError, "labels"),
    (torch.randn(1, 2, 3), torch.zeros(1, 3, dtype=torch.long), {}, ValueError, "logits"),
    (torch.randn(1, 2, 3), torch.full((1, 2), 7, dtype=torch.long), {}, ValueError, "labels"),
    (torch.randn(1, 2, 3), torch.ones(1, 2, dtype=torch.long), dict(smoothing=1.0), ValueError, "smoothing"),
    (torch.randn(1, 2, 3), torch.ones(1, 2, dtype=torch.long), dict(smoothing=-0.1), ValueError, "smoothing"),
])
def test_label_smoothed_cross_entropy_bad_input(logits, labels, kw, exc, name):
    with pytest.raises(exc, match=name):
        label_smoothed_cross_entropy(logits, labels, **kw)


def test_smoothed_targets_bad_input():
    with pytest.raises(ValueError, match="labels"):
        smoothed_targets(torch.tensor([5]), V=3)
    with pytest.raises(ValueError, match="smoothing"):
        smoothed_targets(torch.tensor([1]), V=3, smoothing=2.0)


def test_noam_lr_formula_and_peak():
    d, w = 512, 4000
    assert noam_lr(1, d, w) == pytest.approx(d ** -0.5 * w ** -1.5)
    assert noam_lr(w, d, w) == pytest.approx(1 / math.sqrt(d * w))  # the peak
    assert noam_lr(4 * w, d, w) == pytest.approx(noam_lr(w, d, w) / 2)  # 1/sqrt(step) decay
    rates = [noam_lr(s, d, w) for s in range(1, 3 * w)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == w
    assert noam_lr(100, d, w, factor=2.0) == pytest.approx(2 * noam_lr(100, d, w))


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(step=0, d_model=8, warmup_steps=4), ValueError, "step"),
    (dict(step=1, d_model=0, warmup_steps=4), ValueError, "d_model"),
    (dict(step=1, d_model=8, warmup_steps=0), ValueError, "warmup_steps"),
    (dict(step=1.5, d_model=8, warmup_steps=4), TypeError, "step"),
    (dict(step=1, d_model=8, warmup_steps=4, factor=0), ValueError, "factor"),
])
def test_noam_lr_bad_input(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        noam_lr(**kwargs)


def test_warmup_scheduler_sets_noam_lr_whatever_the_base_lr():
    p = torch.nn.Parameter(torch.zeros(2))
    opt = paper_adam([p], lr=0.123)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = warmup_scheduler(opt, d_model=64, warmup_steps=10, factor=2.0)
    for k in range(1, 30):
        assert opt.param_groups[0]["lr"] == pytest.approx(noam_lr(k, 64, 10, 2.0))
        p.grad = torch.ones(2)
        opt.step()
        sched.step()


def test_warmup_scheduler_and_adam_bad_input():
    with pytest.raises(TypeError, match="optimizer"):
        warmup_scheduler("adam", 64, 10)
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_scheduler(paper_adam([torch.nn.Parameter(torch.zeros(1))]), 64, 0)
    with pytest.raises(ValueError, match="lr"):
        paper_adam([torch.nn.Parameter(torch.zeros(1))], lr=0)


def _copy_run(seed, steps=300):
    "A one-layer model trained on the copy task: (history, held-out exact match)."
    src, tgt = copy_task(2000, 5, 10, seed=0)
    model = tiny_model(V=10, seed=seed)
    opt = paper_adam(model.parameters())
    with num_threads(1):  # tiny matrices: one thread is several times faster than two (no contention)
        hist = train(model, src, tgt, steps=steps, batch_size=64, optimizer=opt,
                     scheduler=warmup_scheduler(opt, 32, 50), progress=False, seed=seed)
        test_src, test_tgt = copy_task(200, 5, 10, seed=1)
        return hist, exact_match(model, test_src, test_tgt, BOS, EOS)


@pytest.mark.trains
def test_tiny_model_learns_the_copy_task_within_seconds():
    # 150 steps left the model mid-way through learning: held-out exact match 0.60-1.0 depending on the seed,
    # the thread count and the CPU's code path. After 300 steps (about 3 s on one thread), measured over seeds
    # 0-15 and 0-11 with ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE: exact match 0.96-1.0, the mean
    # loss of the last 10 steps 0.0001-0.04 (first step: 2.5-3.0; chance: log 10 = 2.3).
    hist, exact = _copy_run(book_seed())
    assert isinstance(hist, History) and len(hist.loss) == len(hist.lr) == 300
    assert hist.loss[0] > 2.0 and sum(hist.loss[-10:]) / 10 < 0.2
    assert exact >= 0.8  # chance: 6 ** -5 (five symbols of six, all right)
    assert hist.seconds > 0


@pytest.mark.trains
def test_train_is_deterministic_and_leaves_global_rng_alone():
    seed = book_seed()
    src, tgt = copy_task(200, 4, 9, seed=0)
    runs = []
    for _ in range(2):
        model = tiny_model(V=9, seed=seed, dropout=0.1)  # dropout draws random numbers too
        torch.manual_seed(123)
        before = torch.rand(1)
        torch.manual_seed(123)
        hist = train(model, src, tgt, steps=8, batch_size=16, optimizer=paper_adam(model.parameters()),
                     progress=False, seed=seed + 5, smoothing=0.1)
        assert torch.equal(torch.rand(1), before)  # the caller's random state is untouched
        runs.append((hist.loss, model.output_projection.weight.detach().clone()))
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1])
    model = tiny_model(V=9, seed=seed, dropout=0.1)
    other = train(model, src, tgt, steps=8, batch_size=16, optimizer=paper_adam(model.parameters()),
                  progress=False, seed=seed + 6)
    assert other.loss != runs[0][0]


@pytest.mark.trains
def test_train_eval_fn_and_lr_history():
    src, tgt = copy_task(100, 4, 9, seed=0)
    model = tiny_model(V=9, seed=book_seed())
    opt = paper_adam(model.parameters())
    modes = []

    def eval_fn(m):
        modes.append(m.training)
        return 0.5

    hist = train(model, src, tgt, steps=10, batch_size=8, optimizer=opt, scheduler=warmup_scheduler(opt, 32, 4),
                 progress=False, eval_fn=eval_fn, eval_every=4, seed=book_seed())
    assert [s for s, _ in hist.evals] == [4, 8, 10]
    assert modes == [False] * 3 and model.training
    assert hist.lr == pytest.approx([noam_lr(k, 32, 4) for k in range(1, 11)])


@pytest.mark.parametrize("kw, exc, name", [
    (dict(model="m"), TypeError, "model"),
    (dict(src=torch.ones(4, 3)), TypeError, "src"),
    (dict(tgt=torch.ones(5, 4, dtype=torch.long)), ValueError, "src and tgt"),
    (dict(steps=0), ValueError, "steps"),
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(optimizer=None), TypeError, "optimizer"),
    (dict(smoothing=1.5), ValueError, "smoothing"),
    (dict(seed=0.5), TypeError, "seed"),
    (dict(eval_every=3), ValueError, "eval_every"),
    (dict(eval_fn=3), TypeError, "eval_fn"),
])
def test_train_bad_input(kw, exc, name):
    model = tiny_model(V=9)
    args = dict(model=model, src=torch.full((4, 3), 5), tgt=torch.full((4, 4), 5), steps=1, batch_size=2,
                optimizer=paper_adam(model.parameters()), progress=False)
    args.update(kw)
    with pytest.raises(exc, match=name):
        train(args.pop("model"), args.pop("src"), args.pop("tgt"), **args)
