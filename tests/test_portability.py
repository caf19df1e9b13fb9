"""Claims hold on any machine: every claim about a model trained live, re-run as other machines would.

Training is reproducible on one machine only. Another CPU takes other code paths in PyTorch's and
MKL's kernels, rounds differently, and after a few hundred optimiser steps holds another model. So a
chapter may assert exact behaviour only of the shipped translator or of computations without
training; what it asserts about a model it trains live must be an aggregate with a margin.

This file checks that, without a second machine. Each configuration below re-runs

* every chapter that trains a model live (top to bottom, fresh kernel, empty folder, live controls;
  chapter 13 with ``TRAIN_NOW = True``), so every ``assert`` the reader sees is checked again, and
* every package test marked ``trains``,

with another seed (``TRANSFORMER_LITE_SEED``, read by ``book_seed()``), 1 or 2 threads
(``TRANSFORMER_LITE_THREADS``, read by ``num_threads``), and PyTorch's and MKL's generic CPU code paths
(``ATEN_CPU_CAPABILITY=default``, ``MKL_CBWR=COMPATIBLE``) -- the settings under which the old claims
failed. The seed-0, one-thread, native run is the book build itself.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
RUNNER = ROOT / "tools" / "run_notebooks.py"

OTHER_CPU = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
CONFIGS = {
    "seed1-1thread": {"TRANSFORMER_LITE_SEED": "1", "TRANSFORMER_LITE_THREADS": "1"},
    "seed2-2threads": {"TRANSFORMER_LITE_SEED": "2", "TRANSFORMER_LITE_THREADS": "2"},
    "seed3-1thread-other-cpu": {"TRANSFORMER_LITE_SEED": "3", "TRANSFORMER_LITE_THREADS": "1", **OTHER_CPU},
    "seed0-2threads-other-cpu": {"TRANSFORMER_LITE_SEED": "0", "TRANSFORMER_LITE_THREADS": "2", **OTHER_CPU},
}

# The chapters that train a model live. test_every_live_training_chapter_is_listed keeps this complete.
LIVE_TRAINING = ["04_multi_head_attention", "07_pre_ln_vs_post_ln", "11_training", "13_capstone_translator",
                 "14_bert_and_gpt", "appendix_a_vision", "appendix_c_pitfalls"]
# Chapter 13 trains only when the reader asks; here it must.
SWITCHES = {"13_capstone_translator": ("TRAIN_NOW = False", "TRAIN_NOW = True")}

# Chapters that take an optimiser step without training a model whose behaviour they then claim.
NOT_TRAINING = {"10_decoder": "one Adam step, to check that tied weights stay one matrix (exact for any rounding)"}

_TRAINING_CALL = re.compile(r"\b(?:opt|optimizer|optim)\w*\.step\(\)|(?<![.\w])train(?:_\w+)?\(")


def _code(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_every_live_training_chapter_is_listed_and_seeds_from_book_seed():
    trains = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if _TRAINING_CALL.search(_code(p)))
    missing = sorted(set(trains) - set(LIVE_TRAINING) - set(NOT_TRAINING))
    assert not missing, f"these chapters train a model but are not re-run by this file: {missing}"
    for name in LIVE_TRAINING:
        code = _code(NOTEBOOKS / f"{name}.ipynb")
        assert "book_seed()" in code, f"{name} trains live but does not take its seed from book_seed()"
    for name, (off, on) in SWITCHES.items():
        assert _code(NOTEBOOKS / f"{name}.ipynb").count(off) == 1, f"{name}: expected exactly one {off!r}"


def _prepared(name: str, folder: Path) -> Path:
    """The notebook as this test runs it (chapter 13 with its training switched on)."""
    src = NOTEBOOKS / f"{name}.ipynb"
    if name not in SWITCHES:
        return src
    off, on = SWITCHES[name]
    dst = folder / src.name
    dst.write_text(src.read_text(encoding="utf-8").replace(off, on), encoding="utf-8")
    return dst


def _run(nb: Path, env: dict, workdir: Path) -> dict:
    """One notebook in a subprocess (its own kernel and environment, so several can run at once)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "result.json"
    # No progress bars: nobody watches them here, and their stream of widget messages is the one thing
    # these runs add to a kernel's traffic (a run once hung with kernel and client both idle).
    env = {**env, "TQDM_DISABLE": "1"}
    full_env = {**os.environ, **env}
    full_env.pop("TRANSFORMER_LITE_STATIC", None)
    full_env["TRANSFORMER_LITE_CACHE"] = str(workdir / "cache")
    args = [sys.executable, str(RUNNER), str(nb), "--cwd", str(workdir), "--json", str(out), "--timeout", "420"]
    args += [f"--env={k}={v}" for k, v in env.items()]
    result = None
    for attempt in (1, 2):  # a lost kernel message shows up as a timeout: one retry, and the retry is reported
        out.unlink(missing_ok=True)
        try:
            proc = subprocess.run(args, env=full_env, capture_output=True, text=True, timeout=1800)
            text = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            text = f"runner killed after {e.timeout} s"
        if out.exists():
            result = json.loads(out.read_text())[0]
        else:
            result = {"notebook": nb.name, "ok": False, "seconds": None,
                      "error": {"cell": None, "name": "runner failed or timed out", "value": text[-3000:]}}
        result["attempt"] = attempt
        if result["ok"] or "imeout" not in (result["error"]["name"] or "") + (result["error"]["value"] or ""):
            break
    return result


@pytest.mark.slow
@pytest.mark.trains
@pytest.mark.parametrize("config", list(CONFIGS))
def test_live_training_chapters_hold_on_another_machine(config, tmp_path):
    env = CONFIGS[config]
    notebooks = [_prepared(name, tmp_path) for name in LIVE_TRAINING]
    # one-thread runs share the two cores; two-thread runs go one at a time
    workers = 2 if env["TRANSFORMER_LITE_THREADS"] == "1" else 1
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda nb: _run(nb, env, tmp_path / nb.stem), notebooks))
    for r in results:
        print(f"[{config}] {r['notebook']:<36} {r['seconds']} s  {'ok' if r['ok'] else 'FAILED'}"
              f"{' (second attempt, after a timeout)' if r.get('attempt') == 2 else ''}")
    failed = [f"{r['notebook']} cell {r['error']['cell']}: {r['error']['name']}: {r['error']['value'][:500]}\n"
              f"{(r['error'].get('source') or '')[-800:]}" for r in results if not r["ok"]]
    assert not failed, f"claims that do not survive {config} ({env}):\n" + "\n\n".join(failed)


@pytest.mark.slow
@pytest.mark.trains
@pytest.mark.parametrize("config", list(CONFIGS))
def test_package_tests_that_train_hold_on_another_machine(config):
    env = {**os.environ, **CONFIGS[config]}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "trains and not slow",
                           str(ROOT / "tests")], cwd=ROOT, env=env, capture_output=True, text=True)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = re.search(r"(\d+) passed", proc.stdout)
    assert proc.returncode == 0, f"package tests that train failed under {config}:\n{tail}"
    assert summary and int(summary.group(1)) >= 5, f"too few tests marked 'trains' ran:\n{tail}"
