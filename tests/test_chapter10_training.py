"""Chapter 10 (training): the chapter's claims, checked through the package.

Teacher forcing shifts <bos> 我 有 一 只 猫 <eos> (the book's direction, English -> Chinese) into input and labels; one
forward pass equals T prefix passes (and without the causal mask it does not); cross-entropy by hand equals
F.cross_entropy and ignores padding; label smoothing's target, its equality with PyTorch and its floor H(q); the paper's
schedule (peak, linear warm-up, 1/sqrt decay) and its scheduler; Adam's settings and its first step of size lr; AdamW's
decay outside the adaptive step; gradient clipping; a short training run (with clipping, as the chapter's) that learns
the reverse task.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import transformer_lite as tl
from transformer_lite.book.runtime import book_seed, num_threads
from transformer_lite.data import PAD, Vocab, pad_batch, reverse_task
from transformer_lite.training import (
    label_smoothed_cross_entropy,
    noam_lr,
    paper_adam,
    smoothed_targets,
    teacher_forcing,
    train,
    warmup_scheduler,
)

EN = Vocab("I have a cat".split())   # the source: the book translates English -> Chinese
ZH = Vocab("我 有 一 只 猫".split())
CLIP = 2.0  # the chapter's training run clips the gradients' norm at this


def _model(**kw):
    torch.manual_seed(0)
    cfg = dict(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, dropout=0.0)
    cfg.update(kw)
    return tl.Transformer(len(EN), len(ZH), **cfg).eval()


def _example():
    src = torch.tensor([EN.encode("I have a cat")])
    tgt = torch.tensor([ZH.encode("我 有 一 只 猫", add_bos_eos=True)])
    return src, tgt


def test_teacher_forcing_on_the_chapters_example():
    _, tgt = _example()
    inp, labels = teacher_forcing(tgt)
    assert [ZH.itos[i] for i in inp[0]] == ["<bos>", "我", "有", "一", "只", "猫"]
    assert [ZH.itos[i] for i in labels[0]] == ["我", "有", "一", "只", "猫", "<eos>"]


@torch.no_grad()
def test_one_forward_pass_equals_a_pass_per_prefix():
    model = _model()
    src, tgt = _example()
    inp, _ = teacher_forcing(tgt)
    logits = model(src, inp)
    memory = model.encode(src)
    for t in range(inp.shape[1]):
        assert_close(logits[:, t], model.decode(inp[:, : t + 1], memory, src=src)[:, -1])


@torch.no_grad()
def test_without_the_causal_mask_rows_read_the_future():
    model = _model()
    src, tgt = _example()
    inp, _ = teacher_forcing(tgt)
    changed = inp.clone()
    changed[0, -1] = ZH.stoi["我"]
    memory = model.encode(src)

    def out(ids, mask):
        return model.output_projection(model.decoder(model.tgt_pos(model.tgt_embed(ids)), memory, tgt_mask=mask))

    T = inp.shape[1]
    masked = (out(inp, tl.causal_mask(T)) - out(changed, tl.causal_mask(T))).abs().amax(-1)[0]
    unmasked = (out(inp, None) - out(changed, None)).abs().amax(-1)[0]
    assert (masked[:-1] == 0).all() and masked[-1] > 0
    assert (unmasked > 0).all()


@torch.no_grad()
def test_cross_entropy_by_hand_ignores_padding():
    model = _model()
    pairs = [("I have a cat", "我 有 一 只 猫"), ("a cat", "一 只 猫")]
    src = pad_batch([EN.encode(s) for s, _ in pairs])
    tgt = pad_batch([ZH.encode(t, add_bos_eos=True) for _, t in pairs])
    inp, labels = teacher_forcing(tgt)
    logits = model(src, inp)
    V = logits.shape[-1]
    log_p = logits.log_softmax(-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    real = labels != PAD
    by_hand = -(log_p * real).sum() / real.sum()
    ref = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=PAD)
    assert_close(by_hand, ref)
    assert_close(label_smoothed_cross_entropy(logits, labels, 0.0), ref)
    more = torch.cat([tgt, torch.full((2, 3), PAD)], dim=1)
    inp_m, lab_m = teacher_forcing(more)
    logits_m = model(src, inp_m)
    assert_close(F.cross_entropy(logits_m.reshape(-1, V), lab_m.reshape(-1), ignore_index=PAD), ref)
    assert not torch.isclose(F.cross_entropy(logits_m.reshape(-1, V), lab_m.reshape(-1)), ref)


def test_uniform_logits_cost_log_v():
    labels = torch.randint(0, 14, (50,))
    assert_close(F.cross_entropy(torch.zeros(50, 14), labels), torch.tensor(math.log(14)))


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.3])
def test_label_smoothing_target_equality_and_floor(eps):
    V, labels = len(ZH), torch.tensor([4, 5, 6, 7, 8, 2])
    q = smoothed_targets(labels, V, eps)
    assert_close(q.gather(-1, labels[:, None]).squeeze(-1), torch.full((6,), 1 - eps + eps / V))
    assert_close(q.sum(-1), torch.ones(6))
    logits = torch.randn(6, V)
    assert_close(label_smoothed_cross_entropy(logits, labels, eps),
                 F.cross_entropy(logits, labels, label_smoothing=eps))
    floor = label_smoothed_cross_entropy(q.log(), labels, eps)
    entropy = -(q * q.log()).sum(-1).mean()
    assert_close(floor, entropy)
    for _ in range(5):
        assert label_smoothed_cross_entropy(q.log() + 0.3 * torch.randn(6, V), labels, eps) > floor
    # the loss against p(right word) has its minimum at 1 - eps + eps / V
    p = torch.linspace(0.001, 0.999, 9_981, dtype=torch.float64)
    top = 1 - eps + eps / V
    curve = -(top * p.log() + (1 - top) * ((1 - p) / (V - 1)).log())
    assert abs(p[curve.argmin()].item() - top) < 2e-4


@pytest.mark.parametrize("warmup", [1000, 4000, 8000])
def test_noam_schedule_peak_warmup_and_decay(warmup):
    d = 512
    lrs = [noam_lr(k, d, warmup) for k in range(1, 3 * warmup)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == warmup
    assert math.isclose(max(lrs), (d * warmup) ** -0.5)
    assert math.isclose(noam_lr(warmup // 2, d, warmup), noam_lr(warmup, d, warmup) / 2)
    assert math.isclose(noam_lr(4 * warmup, d, warmup), noam_lr(warmup, d, warmup) / 2)
    assert math.isclose(noam_lr(3 * warmup, d, warmup), d ** -0.5 * (3 * warmup) ** -0.5)


def test_warmup_scheduler_sets_noam_lr_each_step():
    w = torch.zeros(3, requires_grad=True)
    opt = paper_adam([w])
    sched = warmup_scheduler(opt, d_model=512, warmup_steps=10)
    for k in range(1, 31):
        assert math.isclose(opt.param_groups[0]["lr"], noam_lr(k, 512, 10))
        opt.step()
        sched.step()


@pytest.mark.trains
def test_paper_adam_settings_and_first_step_of_size_lr():
    torch.manual_seed(book_seed())
    model = tl.Transformer(len(EN), len(ZH), d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=32, dropout=0.0)
    lr = 1e-3
    opt = paper_adam(model.parameters(), lr=lr)
    g = opt.param_groups[0]
    assert g["betas"] == (0.9, 0.98) and g["eps"] == 1e-9
    src, tgt = _example()
    inp, labels = teacher_forcing(tgt)
    before = [p.detach().clone() for p in model.parameters()]
    label_smoothed_cross_entropy(model(src, inp), labels).backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    opt.step()
    steps = torch.cat([(p.detach() - b).abs().flatten() for p, b in zip(model.parameters(), before)])
    used = grads.abs() > 1e-5
    assert used.sum() > 100
    assert_close(steps[used], torch.full_like(steps[used], lr), rtol=1e-3, atol=1e-6)
    assert (steps[grads == 0] == 0).all()


def _reverse_run(seed, steps=150):
    "Chapter 10's recipe on a small reverse task: (history, teacher-forced held-out token accuracy)."
    L, V = 4, 10
    src, tgt = reverse_task(1000, L, V, seed=0)
    test_src, test_tgt = reverse_task(200, L, V, seed=1)
    torch.manual_seed(seed)
    model = tl.Transformer(V, V, d_model=32, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=64, dropout=0.0)
    opt = paper_adam(model.parameters())
    sched = warmup_scheduler(opt, d_model=32, warmup_steps=30)
    with num_threads(1):
        hist = train(model, src, tgt, steps=steps, batch_size=64, optimizer=opt, scheduler=sched, smoothing=0.1,
                     progress=False, seed=seed, clip_grad_norm=CLIP)
    model.eval()
    inp, labels = teacher_forcing(test_tgt)
    with torch.no_grad():
        acc = (model(test_src, inp).argmax(-1) == labels).float().mean().item()
    return hist, acc


@pytest.mark.trains
def test_a_short_run_learns_to_reverse():
    # Measured over seeds 0-7 (and 0-3 with ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE): the last 10 losses
    # are 0.23-0.34 of the first 10, the held-out token accuracy 0.94-1.0.
    hist, acc = _reverse_run(book_seed())
    assert len(hist.grad_norm) == len(hist.loss)  # clipping recorded one norm per step
    assert all(math.isclose(a, noam_lr(k, 32, 30)) for k, a in enumerate(hist.lr, start=1))
    assert sum(hist.loss[-10:]) / 10 < 0.6 * sum(hist.loss[:10]) / 10
    assert acc > 0.8


# ---- the paper's details beyond the loss (§5.3-§6.1): residual dropout, perplexity, Adam's later steps, checkpoint
#      averaging, BLEU

def test_dropout_sits_where_the_paper_puts_it_and_scales_survivors():
    model = _model(dropout=0.1)
    names = {n for n, m in model.named_modules() if isinstance(m, torch.nn.Dropout)}
    assert {"src_pos.dropout", "tgt_pos.dropout"} <= names  # on the embedding + PE sums (§5.4)
    residual = {n for n in names if n.split(".")[-1] in ("dropout1", "dropout2", "dropout3")}
    assert residual == {"encoder.layers.0.dropout1", "encoder.layers.0.dropout2", "decoder.layers.0.dropout1",
                        "decoder.layers.0.dropout2", "decoder.layers.0.dropout3"}
    layer = tl.EncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1).train()
    seen = {}
    hook = layer.dropout1.register_forward_hook(lambda m, a, o: seen.update(inp=a[0], out=o))
    with torch.no_grad():
        layer(torch.randn(8, 50, 16))
    hook.remove()
    zeroed = (seen["out"] == 0) & (seen["inp"] != 0)
    assert_close(seen["out"][~zeroed], seen["inp"][~zeroed] / 0.9)
    assert abs(zeroed.float().mean().item() - 0.1) < 0.03


def test_perplexity_is_exp_of_the_mean_cross_entropy():
    p = torch.tensor([0.5, 0.25, 1.0, 0.125], dtype=torch.float64)
    assert math.isclose(math.exp(-p.log().mean().item()), 64 ** 0.25, rel_tol=1e-9)
    labels = torch.randint(0, 14, (20,))
    assert math.isclose(math.exp(F.cross_entropy(torch.zeros(20, 14), labels).item()), 14, rel_tol=1e-5)


def test_adams_steps_equal_lr_only_on_the_first_step():
    lr = 0.1
    c = torch.tensor([0.01, 1.0, 100.0], dtype=torch.float64)
    w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt = paper_adam([w], lr=lr)
    sizes, grads = [], []
    for _ in range(30):
        opt.zero_grad()
        (0.5 * c * (w - 1) ** 2).sum().backward()
        grads.append(w.grad.clone())
        before = w.detach().clone()
        opt.step()
        sizes.append((w.detach() - before).abs() / lr)
    sizes, grads = torch.stack(sizes), torch.stack(grads)
    assert torch.allclose(sizes[0], torch.ones(3, dtype=torch.float64))
    assert torch.allclose(sizes, sizes[:, :1].expand(-1, 3), rtol=1e-5)  # scale-free
    flip = int((grads[:, 0] > 0).nonzero()[0])
    assert sizes[flip:, 0].max() < 0.7 and sizes[:, 0].min() < 0.1
    assert (sizes[1:, 0] < 1).all()


def test_checkpoint_average_is_the_mean_of_each_weight():
    model = _model()
    checkpoints = []
    for k in range(5):
        torch.manual_seed(k)
        checkpoints.append({n: t + 0.01 * torch.randn_like(t) for n, t in model.state_dict().items()})
    averaged = {n: torch.stack([c[n] for c in checkpoints]).mean(0) for n in checkpoints[0]}
    for n in averaged:
        assert_close(averaged[n], sum(c[n] for c in checkpoints) / 5)
    copy_ = _model()
    copy_.load_state_dict(averaged)  # the average is a state_dict of the same model
    src, tgt = _example()
    with torch.no_grad():
        assert torch.isfinite(copy_(src, teacher_forcing(tgt)[0])).all()


def _code_cells():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "10_training.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_the_chapter_scores_with_the_packages_bleu():
    import re

    code = _code_cells()
    # one source of truth: the chapter imports BLEU from transformer_lite.metrics and shows it, defining none itself
    defined = [m for c in code for m in re.findall(r"^def (ngrams|modified_precision|bleu|corpus_bleu)\(", c, re.M)]
    assert defined == [], f"chapter 10 defines {defined} itself instead of importing them from transformer_lite.metrics"
    for names, shown in (("modified_precision, ngrams", "modified_precision"), ("bleu, corpus_bleu", "corpus_bleu")):
        assert any(f"from transformer_lite.metrics import {names}" in c and f"show_source({shown})" in c for c in code)


def test_the_packages_bleu_matches_the_chapters_hand_count():
    from transformer_lite.metrics import bleu, corpus_bleu, modified_precision

    assert modified_precision("the the the the the the the", "the cat is on the mat", 1) == (2, 7)
    score, precisions, brevity, c, r = bleu("the cat sat on the mat", "the cat sat on the red mat")
    assert precisions == [(6, 6), (4, 5), (3, 4), (2, 3)] and (c, r) == (6, 7)
    assert math.isclose(score, math.exp(1 - 7 / 6) * 0.4 ** 0.25)
    assert bleu("a b c d", "a b c d").score == 1.0  # identical: 1
    assert bleu("a b c d", "w x y z a b c d").brevity == pytest.approx(math.exp(1 - 2))  # brevity penalty
    # the corpus cell: no shared four-gram makes a sentence's BLEU 0, but not the corpus's
    pairs = [("the cat sat on the mat", "the cat sat on the red mat"), ("I have a cat", "I have a small cat")]
    corpus = corpus_bleu([cand for cand, _ in pairs], [ref for _, ref in pairs])
    assert bleu(*pairs[1]).score == 0 and corpus.score > 0.5 and corpus.precisions[3] == (2, 4)


# ---- the conventions chapter 10 states: the book's direction, AdamW, gradient clipping, label smoothing ------------

def test_the_chapters_example_goes_english_to_chinese():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "10_training.ipynb").read_text("utf-8"))
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "English → Chinese pair" in text and "Chinese → English" not in text
    assert 'src = torch.tensor([en.encode("I have a cat")])' in text


def test_adamw_decays_outside_the_adaptive_step_and_adam_l2_does_not():
    theta0, g = torch.ones(2), torch.tensor([1e-3, 10.0])

    def first_step(make):
        w = theta0.clone().requires_grad_()
        opt = make([w])
        w.grad = g.clone()
        opt.step()
        return theta0 - w.detach()

    plain = first_step(lambda p: torch.optim.Adam(p, lr=0.1))
    l2 = first_step(lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.5))
    adamw = first_step(lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.5))
    assert_close(l2, plain, rtol=1e-4, atol=0)
    assert_close(adamw, plain + 0.1 * 0.5 * theta0)
    assert not torch.allclose(adamw, l2)


@pytest.mark.parametrize("seed", range(6))
def test_over_many_steps_l2_decay_fades_with_the_gradients_and_adamw_does_not(seed):
    # The chapter's 100-step demonstration, with the margins its asserts use, under several noise draws.
    scales = torch.tensor([0.01, 1.0, 100.0])
    noise = torch.randn(100, 3, generator=torch.Generator().manual_seed(seed)) * scales

    def run(make):
        w = torch.ones(3, requires_grad=True)
        opt = make([w])
        for g in noise:
            w.grad = g.clone()
            opt.step()
        return w.detach()

    plain = run(lambda p: torch.optim.Adam(p, lr=0.01))
    l2 = plain - run(lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.1))
    adamw = plain - run(lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1))
    shrink = 1 - (1 - 0.01 * 0.1) ** 100
    assert ((adamw - shrink).abs() < 0.3 * shrink).all()
    assert l2[0] > l2[1] > l2[2]
    assert l2[2] < 0.1 * adamw[2] and l2[0] > 3 * adamw[0]


def test_the_teaching_loop_takes_the_steps_of_train():
    # Chapter 10 shows train_loop on the core path and runs train: on unpadded data the two agree loss for loss.
    from transformer_lite.training import train, train_loop, warmup_scheduler

    src, tgt = reverse_task(200, 6, 12, seed=0)

    def fresh():
        torch.manual_seed(0)
        model = tl.Transformer(12, 12, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                               dim_feedforward=32, dropout=0.1)
        opt = paper_adam(model.parameters())
        return model, opt, warmup_scheduler(opt, d_model=16, warmup_steps=5)

    with num_threads(1):
        model_a, opt_a, sched_a = fresh()
        history = train(model_a, src, tgt, steps=12, batch_size=16, optimizer=opt_a, scheduler=sched_a,
                        smoothing=0.1, seed=3, progress=False)
        model_b, opt_b, sched_b = fresh()
        losses = train_loop(model_b, src, tgt, steps=12, batch_size=16, optimizer=opt_b, scheduler=sched_b,
                            smoothing=0.1, seed=3)
    assert losses == history.loss
    assert all(torch.equal(a, b) for a, b in zip(model_a.parameters(), model_b.parameters()))
    with pytest.raises(ValueError, match="steps"):
        train_loop(model_b, src, tgt, steps=0, batch_size=16, optimizer=opt_b)
    with pytest.raises(ValueError, match="batch_size"):
        train_loop(model_b, src, tgt, steps=1, batch_size=0, optimizer=opt_b)


def test_clip_grad_norm_scales_all_gradients_by_one_factor():
    model = _model()
    src, tgt = _example()
    inp, labels = teacher_forcing(tgt)
    label_smoothed_cross_entropy(model(src, inp), labels).backward()
    before = [p.grad.clone() for p in model.parameters()]
    norm = torch.cat([g.flatten() for g in before]).norm()
    returned = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5 * norm.item())
    assert_close(returned, norm)
    assert_close(torch.cat([p.grad.flatten() for p in model.parameters()]).norm(), 0.5 * norm)
    assert all(torch.allclose(p.grad, 0.5 * g, rtol=1e-4) for p, g in zip(model.parameters(), before))


def test_train_records_gradient_norms_only_when_clipping():
    src, tgt = reverse_task(64, 4, 10, seed=0)
    for clip, expected in ((None, 0), (1.0, 3)):
        torch.manual_seed(0)
        model = tl.Transformer(10, 10, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                               dim_feedforward=32, dropout=0.0)
        hist = train(model, src, tgt, steps=3, batch_size=8, optimizer=paper_adam(model.parameters()),
                     progress=False, clip_grad_norm=clip)
        assert len(hist.grad_norm) == expected
    assert all(n > 0 for n in hist.grad_norm)
    with pytest.raises(ValueError, match="clip_grad_norm"):
        train(model, src, tgt, steps=1, batch_size=8, optimizer=paper_adam(model.parameters()), progress=False,
              clip_grad_norm=0.0)


def test_three_label_smoothing_conventions_give_three_losses():
    torch.manual_seed(0)
    V, eps = len(ZH), 0.1
    logits, labels = torch.randn(6, V), torch.tensor([4, 5, 6, 7, 8, 2])

    def loss(off, on, skip=()):
        q = torch.full_like(logits, off)
        q[:, list(skip)] = 0.0
        q.scatter_(-1, labels[:, None], on)
        return -(q * logits.log_softmax(-1)).sum(-1).mean()

    ours = loss(eps / V, 1 - eps + eps / V)
    assert_close(ours, F.cross_entropy(logits, labels, label_smoothing=eps))
    values = {round(v.item(), 5) for v in (ours, loss(eps / (V - 1), 1 - eps), loss(eps / (V - 2), 1 - eps, [PAD]))}
    assert len(values) == 3
