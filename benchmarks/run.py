"""`make bench`: measure transformer_lite against PyTorch on this CPU; write the results the package ships.

The results go to the checkout's ``transformer_lite/book/assets/benchmarks.json`` (package data: chapters 0 and 12
read them with ``transformer_lite.book.pretrained.benchmark_results()``, also in an installed copy or on Colab), not
to the imported package's copy: run as a script, this file imports the copy installed in the venv.

Every timing is a ratio measured in one process, the two sides interleaved, the
median of repeated runs after a warm-up, with the thread count recorded.

    python -m benchmarks.run            # everything (about 5-10 minutes on 2 cores)
    python -m benchmarks.run --quick    # fewer repeats, no capstone (a smoke test)
    python -m benchmarks.run --only notebooks   # each chapter's running time, alone, in a fresh kernel
                                                # (benchmarks/notebooks.json; the line under each chapter's title)
    python -m benchmarks.run --only lighthouse  # the built site on a phone: Lighthouse on the heaviest pages of
                                                # both editions (bookbuild/lighthouse.py -> benchmarks/lighthouse.json)
    python -m benchmarks.run --only translator  # the built site's translator box in Chromium, both models, over http
                                                # and from file://: its first and later translations against their
                                                # budgets (benchmarks/translator_page.py -> benchmarks/translator.json)
    python -m benchmarks.run --only explainer   # the built site's explainer page in Chromium: a 10-word sentence's
                                                # trace once the model is loaded, both models, against its budget
                                                # (benchmarks/explainer_page.py -> benchmarks/explainer.json)

The goals are reported (met or not), never a failure: the command fails only when a measurement breaks.
"""
from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import transformer_lite as tl

warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")  # torch's own fast path
GOALS = {"train_step_vs_torch": ("<=", 1.10), "forward_vs_torch": ("<=", 1.10), "kv_cache_speedup": (">=", 3.0),
         "capstone_exact_match": (">=", 0.97), "capstone_train_seconds": ("<=", 90.0)}


class TorchTranslator(nn.Module):
    """torch.nn.Transformer with *the same* embeddings, positions and output layer as a tl.Transformer."""

    def __init__(self, ours: tl.Transformer, core: nn.Transformer):
        super().__init__()
        self.src_embed, self.tgt_embed = copy.deepcopy(ours.src_embed), copy.deepcopy(ours.tgt_embed)
        self.src_pos, self.tgt_pos = copy.deepcopy(ours.src_pos), copy.deepcopy(ours.tgt_pos)
        self.output_projection, self.core, self.pad_id = copy.deepcopy(ours.output_projection), core, ours.pad_id

    def forward(self, src, tgt):
        src_kpm, tgt_kpm = src == self.pad_id, tgt == self.pad_id
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], dtype=torch.bool)
        h = self.core(self.src_pos(self.src_embed(src)), self.tgt_pos(self.tgt_embed(tgt)), tgt_mask=tgt_mask,
                      src_key_padding_mask=src_kpm, tgt_key_padding_mask=tgt_kpm, memory_key_padding_mask=src_kpm)
        return self.output_projection(h)


def paired_models(cfg: dict, vocab: int):
    """Our Transformer and torch's, with identical weights everywhere."""
    core = nn.Transformer(cfg["d_model"], cfg["nhead"], cfg["layers"], cfg["layers"], cfg["dim_feedforward"],
                          cfg["dropout"], batch_first=True)
    ours = tl.Transformer(vocab, vocab, d_model=cfg["d_model"], nhead=cfg["nhead"], num_encoder_layers=cfg["layers"],
                          num_decoder_layers=cfg["layers"], dim_feedforward=cfg["dim_feedforward"],
                          dropout=cfg["dropout"], final_norm=True, max_len=1024)
    converted = tl.from_torch(core)  # same weights as torch's core
    ours.encoder, ours.decoder = converted.encoder, converted.decoder
    theirs = TorchTranslator(ours, core)
    return ours, theirs


def batch(cfg, vocab, generator):
    B, S, T = cfg["batch"], cfg["src_len"], cfg["tgt_len"]
    src = torch.randint(4, vocab, (B, S), generator=generator)
    tgt = torch.randint(4, vocab, (B, T), generator=generator)
    src[B // 2:, -S // 4:] = 0  # half the batch padded, as in real batches
    return src, tgt


def interleaved_ratio(fn_ours, fn_theirs, repeats: int, warmup: int):
    """Median over repeats of time(ours) / time(theirs), the two run alternately."""
    for _ in range(warmup):
        fn_ours(), fn_theirs()
    ratios, t_ours, t_theirs = [], [], []
    for r in range(repeats):
        order = [(fn_ours, t_ours), (fn_theirs, t_theirs)]
        if r % 2:
            order.reverse()  # neither side always goes first
        for fn, sink in order:
            t0 = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - t0)
        ratios.append(t_ours[-1] / t_theirs[-1])
    return statistics.median(ratios), statistics.median(t_ours), statistics.median(t_theirs)


def bench_train_and_forward(cfg, repeats, warmup):
    vocab = cfg["vocab"]
    torch.manual_seed(0)
    ours, theirs = paired_models(cfg, vocab)
    src, tgt = batch(cfg, vocab, torch.Generator().manual_seed(1))
    dec_in, labels = tgt[:, :-1], tgt[:, 1:]
    ours.eval(), theirs.eval()
    with torch.no_grad():  # same weights -> same logits (checked before timing anything)
        torch.testing.assert_close(ours(src, dec_in), theirs(src, dec_in), rtol=1e-4, atol=1e-4)

    def step(model, opt):
        def run():
            logits = model(src, dec_in)
            loss = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=0)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return run

    ours.train(), theirs.train()
    opt_o = torch.optim.Adam(ours.parameters(), lr=1e-4)
    opt_t = torch.optim.Adam(theirs.parameters(), lr=1e-4)
    train = interleaved_ratio(step(ours, opt_o), step(theirs, opt_t), repeats, warmup)

    ours.eval(), theirs.eval()

    def fwd(model):
        def run():
            with torch.no_grad():
                model(src, dec_in)
        return run

    forward = interleaved_ratio(fwd(ours), fwd(theirs), repeats * 2, warmup)
    return train, forward


def bench_kv_cache(cfg, steps, repeats):
    """Greedy decoding of `steps` tokens: full recomputation each step vs the key/value cache."""
    torch.manual_seed(0)
    model = tl.Transformer(cfg["vocab"], cfg["vocab"], d_model=cfg["d_model"], nhead=cfg["nhead"],
                           num_encoder_layers=cfg["layers"], num_decoder_layers=cfg["layers"],
                           dim_feedforward=cfg["dim_feedforward"], dropout=0.0, max_len=steps + 8).eval()
    src = torch.randint(4, cfg["vocab"], (1, 32), generator=torch.Generator().manual_seed(2))

    @torch.no_grad()
    def decode(use_cache):
        memory = model.encode(src)
        ys = torch.ones(1, 1, dtype=torch.long)  # <bos>
        cache = model.new_cache() if use_cache else None
        for _ in range(steps):
            if use_cache:
                logits = model.decode(ys[:, -1:], memory, src=src, cache=cache)[:, -1]
            else:
                logits = model.decode(ys, memory, src=src)[:, -1]
            ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)
        return ys

    assert torch.equal(decode(True), decode(False)), "cached decoding must give the same tokens"
    ratio, t_full, t_cached = interleaved_ratio(lambda: decode(False), lambda: decode(True), repeats, 1)
    return ratio, t_full, t_cached


def bench_lm_kv_cache(steps, repeats, prompt_len=16):
    """Decoder-only greedy generation (chapter 15): ``generate`` re-reading the prefix vs ``use_cache=True``.

    Two models of about the same size: chapter 14's GPT-style ``LanguageModel`` and chapter 15's Llama-style
    ``modern.ModernLM`` with grouped-query attention (8 query heads, 2 key/value heads).
    """
    from transformer_lite import language_models as lm
    from transformer_lite.modern import ModernLM
    torch.manual_seed(0)
    V, D = 1000, 256
    models = {"gpt": lm.DecoderOnlyLM(V, d_model=D, nhead=8, num_layers=4, max_len=prompt_len + steps),
              "modern_gqa": ModernLM(V, D, 8, 2, 4)}
    prompt = torch.randint(1, V, (1, prompt_len), generator=torch.Generator().manual_seed(3))
    out = {}
    for name, model in models.items():
        model.eval()
        assert torch.equal(lm.generate(model, prompt, steps), lm.generate(model, prompt, steps, use_cache=True)), \
            "cached generation must give the same tokens"
        full = functools.partial(lm.generate, model, prompt, steps)
        cached = functools.partial(lm.generate, model, prompt, steps, use_cache=True)
        ratio, t_full, t_cached = interleaved_ratio(full, cached, repeats, 1)
        out[name] = dict(speedup=ratio, full_seconds=t_full, cached_seconds=t_cached,
                         parameters=tl.count_parameters(model))
    return dict(prompt_len=prompt_len, tokens=steps, d_model=D, layers=4, vocab=V, models=out)


def bench_attention_scaling(lengths, repeats, B=1, H=8, D_h=64):
    rows = []
    for T in lengths:
        g = torch.Generator().manual_seed(T)
        q, k, v = (torch.randn(B, H, T, D_h, generator=g) for _ in range(3))
        mask = tl.causal_mask(T)
        ours = functools.partial(tl.scaled_dot_product_attention, q, k, v, attn_mask=mask)
        sdpa = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=True)
        torch.testing.assert_close(ours()[0], sdpa(), rtol=1e-4, atol=1e-5)
        ratio, t_ours, t_sdpa = interleaved_ratio(ours, sdpa, repeats, 1)
        rows.append(dict(T=T, ours_ms=1e3 * t_ours, sdpa_ms=1e3 * t_sdpa, ratio=ratio,
                         ours_bytes=_allocated_bytes(ours), sdpa_bytes=_allocated_bytes(sdpa)))
    return rows


def _allocated_bytes(fn) -> int:
    """Bytes the call allocates on the CPU (the profiler's memory accounting)."""
    from torch.profiler import ProfilerActivity, profile
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:  # the profiler's C++ side logs its start and stop straight to the terminal
        os.dup2(devnull, 1), os.dup2(devnull, 2)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(devnull), os.close(saved[0]), os.close(saved[1])
    return int(sum(max(e.cpu_memory_usage, 0) for e in prof.events() if e.cpu_parent is None))


def bench_capstone():
    from transformer_lite.book.pretrained import train_tiny_translator
    t0 = time.perf_counter()
    model, data, report = train_tiny_translator(progress=False)
    wall = time.perf_counter() - t0
    return dict(exact_match=float(report["test_accuracy"]), train_seconds=float(report["train_seconds"]),
                wall_seconds=wall, report={k: v for k, v in report.items() if isinstance(v, (int, float, str))})


NOTEBOOK_TIMES = Path(__file__).resolve().parent / "notebooks.json"  # bookbuild/chapters.py header reads it
ROOT = Path(__file__).resolve().parent.parent
# the checkout's copy of what the package ships; the imported package may be the copy installed in the venv
RESULTS = ROOT / "transformer_lite" / "book" / "assets" / "benchmarks.json"


def bench_notebooks(paths=None) -> dict:
    """Each chapter run top to bottom in a fresh kernel, one at a time, as a reader's Jupyter runs it (live
    controls): the running time under each chapter's title (bookbuild/chapters.py header)."""

    root = Path(__file__).resolve().parent.parent
    from bookbuild.run_notebooks import run_notebook

    seconds = {}
    for path in paths or sorted((root / "notebooks").glob("*.ipynb")):
        result = run_notebook(path)
        if not result["ok"]:
            raise RuntimeError(f"{path.name} failed: {result['error']}")
        seconds[path.stem] = round(result["seconds"], 1)
        print(f"{path.stem:34s} {seconds[path.stem]:6.1f} s", flush=True)
    return dict(machine=dict(python=platform.python_version(), torch=torch.__version__, threads=torch.get_num_threads(),
                             cpu_count=os.cpu_count(), processor=platform.processor() or platform.machine()),
                seconds=seconds)


def bench_lighthouse(required: bool) -> dict | None:
    """Lighthouse on the built site (bookbuild/lighthouse.py): written to benchmarks/lighthouse.json. Without a
    built site (make book) it is skipped, unless asked for alone (--only lighthouse)."""
    from bookbuild import lighthouse

    if not (lighthouse.HTML / "index.html").exists():
        if required:
            raise SystemExit(f"{lighthouse.HTML}: no built site; run `make book` first")
        print("lighthouse: skipped, no built site (make book)", flush=True)
        return None
    results = lighthouse.measure(runs=5)  # the median of 5 runs a page: see bookbuild/lighthouse.py (a run in 4 or 5
    # on this machine paints its first frame ~1 s late with the page idle, and Lighthouse counts everything before it)
    lighthouse.OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    met = "all goals met" if results["all_goals_met"] else "some goals NOT met"
    print(f"lighthouse: wrote {lighthouse.OUT}; {met}")
    return results


def bench_translator(required: bool, runs: int = 5) -> dict | None:
    """The translator box's speed (benchmarks/translator_page.py): written to benchmarks/translator.json. The tests
    check that the page translates exactly as Python and bound its time only against a hang; the budgets (3 s to the
    grammar model's first translation, 5 s to the real model's, 100 ms each later one) are measured here. Without a
    built site it is skipped, unless asked for alone (--only translator)."""
    from benchmarks import translator_page

    if not (translator_page.HTML / "index.html").exists():
        if required:
            raise SystemExit(f"{translator_page.HTML}: no built site; run `make book` first")
        print("translator: skipped, no built site (make book)", flush=True)
        return None
    results = translator_page.run(runs)
    translator_page.OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"translator: wrote {translator_page.OUT}; "
          f"{'all budgets met' if results['all_goals_met'] else 'some budgets NOT met (reported, not a failure)'}")
    return results


def bench_explainer(required: bool, runs: int = 5) -> dict | None:
    """The explainer page's speed (benchmarks/explainer_page.py): a 10-word sentence's trace after the model has
    loaded, against its budget (200 ms), written to benchmarks/explainer.json. The tests check what the page shows,
    never its speed. Without a built site it is skipped, unless asked for alone (--only explainer)."""
    from benchmarks import explainer_page

    if not (explainer_page.HTML / explainer_page.PAGE["en"]).exists():
        if required:
            raise SystemExit(f"{explainer_page.HTML}: no built explainer page; run `make book` first")
        print("explainer: skipped, no built site (make book)", flush=True)
        return None
    results = explainer_page.run(runs)
    explainer_page.OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"explainer: wrote {explainer_page.OUT}; "
          f"{'the budget is met' if results['all_goals_met'] else 'the budget is NOT met (reported, not a failure)'}")
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats and no capstone: a smoke test")
    ap.add_argument("--only", choices=["lm_kv_cache", "notebooks", "lighthouse", "translator", "explainer"],
                    default=None,
                    help="measure one part only and update it in the shipped results")
    ap.add_argument("--out", default=None,
                    help=f"where to write the results (default: {RESULTS.relative_to(ROOT)} in this "
                         "checkout; with --quick, nowhere unless given)")
    args = ap.parse_args(argv)
    if args.out is None and not args.quick:  # a smoke test's numbers must not replace the shipped ones
        args.out = str(RESULTS)

    torch.manual_seed(0)
    cfg = dict(vocab=1000, d_model=256, nhead=8, layers=3, dim_feedforward=1024, dropout=0.1,
               batch=32, src_len=32, tgt_len=33)
    repeats, warmup = (5, 2) if args.quick else (21, 3)
    started = time.perf_counter()
    results = dict(machine=dict(python=platform.python_version(), torch=torch.__version__,
                                threads=torch.get_num_threads(), cpu_count=os.cpu_count(),
                                processor=platform.processor() or platform.machine()),
                   config=cfg)

    lm_steps = 32 if args.quick else 128
    if args.only == "notebooks" or not args.quick and args.only is None:
        times = bench_notebooks()
        NOTEBOOK_TIMES.write_text(json.dumps(times, indent=2) + "\n")
        if args.only == "notebooks":
            return 0
    if args.only == "lighthouse" or not args.quick and args.only is None:
        bench_lighthouse(required=args.only == "lighthouse")
        if args.only == "lighthouse":
            return 0
    if args.only == "translator" or not args.quick and args.only is None:
        bench_translator(required=args.only == "translator", runs=2 if args.quick else 5)
        if args.only == "translator":
            return 0
    if args.only == "explainer" or not args.quick and args.only is None:
        bench_explainer(required=args.only == "explainer", runs=2 if args.quick else 5)
        if args.only == "explainer":
            return 0
    if args.only == "lm_kv_cache":
        updated = Path(args.out) if args.out is not None and Path(args.out).exists() else RESULTS
        shipped = json.loads(updated.read_text())
        shipped["lm_kv_cache"] = bench_lm_kv_cache(lm_steps, 3 if args.quick else 7)
        shipped["lm_kv_cache"]["threads"] = torch.get_num_threads()
        if args.out is not None:
            Path(args.out).write_text(json.dumps(shipped, indent=2) + "\n")
        print(json.dumps(shipped["lm_kv_cache"], indent=2))
        return 0

    (train, tr_o, tr_t), (fwd, fw_o, fw_t) = bench_train_and_forward(cfg, repeats, warmup)
    results["train_step_vs_torch"] = train
    results["forward_vs_torch"] = fwd
    results["train_step_ms"] = dict(ours=1e3 * tr_o, torch=1e3 * tr_t)
    results["forward_ms"] = dict(ours=1e3 * fw_o, torch=1e3 * fw_t)

    kv_cfg = dict(vocab=1000, d_model=512, nhead=8, layers=6, dim_feedforward=2048)  # the paper's base model
    kv_steps = 32 if args.quick else 128
    kv, t_full, t_cached = bench_kv_cache(kv_cfg, kv_steps, 3 if args.quick else 7)
    results["kv_cache_speedup"] = kv
    results["kv_cache"] = dict(config=kv_cfg, tokens=kv_steps, src_len=32, full_seconds=t_full,
                               cached_seconds=t_cached)

    results["lm_kv_cache"] = bench_lm_kv_cache(lm_steps, 3 if args.quick else 7)
    results["lm_kv_cache"]["threads"] = torch.get_num_threads()

    lengths = [64, 128, 256] if args.quick else [64, 128, 256, 512, 1024]
    results["attention_scaling"] = dict(batch=1, heads=8, head_dim=64, causal=True,
                                        rows=bench_attention_scaling(lengths, 3 if args.quick else 9))

    if not args.quick:
        cap = bench_capstone()
        results["capstone_exact_match"] = cap["exact_match"]
        results["capstone_train_seconds"] = cap["train_seconds"]
        results["capstone"] = cap["report"]

    results["goals"] = {}
    for key, (op, goal) in GOALS.items():
        if key in results:
            value = results[key]
            met = value <= goal if op == "<=" else value >= goal
            results["goals"][key] = dict(value=value, goal=f"{op} {goal}", met=met)
    results["seconds"] = time.perf_counter() - started
    if args.out is not None:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")

    print(f"{'key':28s} {'value':>10s}  goal      met")
    for key, g in results["goals"].items():
        print(f"{key:28s} {g['value']:10.3f}  {g['goal']:8s}  {'yes' if g['met'] else 'NO'}")
    print(f"attention scaling (ms, ours vs F.scaled_dot_product_attention, threads={torch.get_num_threads()}):")
    for row in results["attention_scaling"]["rows"]:
        print(f"  T={row['T']:5d}  ours {row['ours_ms']:8.2f}  sdpa {row['sdpa_ms']:8.2f}  "
              f"bytes {row['ours_bytes']:>11,d} vs {row['sdpa_bytes']:>11,d}")
    print(f"wrote {args.out} in {results['seconds']:.0f} s" if args.out
          else f"done in {results['seconds']:.0f} s (--quick: not written)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
