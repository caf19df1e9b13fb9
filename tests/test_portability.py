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

**One configuration a run, all of them in turn.** The configurations are every combination of seed 0-3,
1 or 2 threads and the native or the other CPU code path, except the build's own (15). A run of
``make test`` takes the next one in a fixed rotation, by the number of commits in the history under test
(``git rev-list --count HEAD``), so 15 consecutive commits cover them all; the configuration is printed and
named in every failure. A run of ``make test`` re-runs half of the chapters, the two halves in turn (so, the
rotation's length being odd, 30 consecutive commits re-run every chapter in every configuration).
``TRANSFORMER_LITE_PORTABILITY`` overrides it: a configuration's name (``seed2-2threads-other-cpu``), or ``all``
for every one of them; either re-runs every chapter (about 30 times as long as a run of ``make test``).

**The long runs in ``make portability``.** ``make test`` re-runs the chapters, the claims a reader sees, and leaves
two runs out so that it fits its time; ``make portability`` (``TRANSFORMER_LITE_PORTABILITY_LONG=1``) runs them with
the rest, for every configuration by default, and the weekly scheduled workflow runs that:

* chapter 13b with ``TRAIN_NOW = True``: it trains half the real translator's recipe, about 240 CPU-seconds, as much
  as the other chapters together, for one claim (its BLEU lands between the dictionary's + 2 and the shipped
  model's + 1); 13b trains nothing with the switch off;
* the package tests marked ``trains`` (about 100 CPU-seconds), which every ``make test`` runs in the build's own
  configuration.
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

from notebook_code import code_cells

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
RUNNER = ROOT / "bookbuild" / "run_notebooks.py"

OTHER_CPU = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
CHOICE_ENV = "TRANSFORMER_LITE_PORTABILITY"


def _configurations() -> dict[str, dict[str, str]]:
    """Seed 0-3 x 1 or 2 threads x native or other CPU code path, without the build's own (seed 0, 1 thread,
    native): 15 configurations, in a fixed order that alternates the CPU path and the thread count."""
    configs = {}
    for seed in range(4):
        for other_cpu in (True, False):
            for threads in (1, 2):
                if (seed, threads, other_cpu) == (0, 1, False):
                    continue
                name = f"seed{seed}-{threads}thread{'s' if threads > 1 else ''}{'-other-cpu' if other_cpu else ''}"
                configs[name] = {"TRANSFORMER_LITE_SEED": str(seed), "TRANSFORMER_LITE_THREADS": str(threads),
                                 **(OTHER_CPU if other_cpu else {})}
    return configs


CONFIGS = _configurations()


def _commits() -> int:
    """The number of commits in HEAD's history (0 outside a git checkout)."""
    proc = subprocess.run(["git", "-c", "safe.directory=*", "rev-list", "--count", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True)
    return int(proc.stdout) if proc.returncode == 0 and proc.stdout.strip().isdigit() else 0


def chosen(choice: str | None = None, commits: int | None = None) -> list[str]:
    """The configurations this run checks (module docstring): ``choice`` (default ``$TRANSFORMER_LITE_PORTABILITY``)
    names one or says ``all``; otherwise the rotation picks one by ``commits`` (default: the commits in HEAD's
    history)."""
    choice = os.environ.get(CHOICE_ENV, "").strip() if choice is None else choice
    if choice == "all":
        return list(CONFIGS)
    if choice:
        if choice not in CONFIGS:
            raise ValueError(f"${CHOICE_ENV} must be 'all' or one of {sorted(CONFIGS)}, got {choice!r}")
        return [choice]
    return [list(CONFIGS)[(_commits() if commits is None else commits) % len(CONFIGS)]]


RUN = chosen()

# The chapters that train a model live. test_every_live_training_chapter_is_listed keeps this complete.
# Longest first (measured: 13b 236 s with its training switched on, 13 59 s, A 52 s, the others 7-28 s), so that
# the two workers finish together instead of 13b running alone at the end (282 s -> about 240 s on a quiet machine).
LIVE_TRAINING = ["13b_real_sentences", "13_capstone_translator", "appendix_a_vision", "14_bert_and_gpt", "10_training",
                 "11_pre_ln_vs_post_ln", "04_multi_head_attention", "02_positional_encoding", "appendix_c_pitfalls"]
# The rotation's two halves (module docstring), of about equal running time (the same measurements: 117 s and 119 s)
HALVES = (("13_capstone_translator", "10_training", "04_multi_head_attention", "appendix_c_pitfalls"),
          ("appendix_a_vision", "14_bert_and_gpt", "11_pre_ln_vs_post_ln", "02_positional_encoding"))
# Chapters 13 and 13b train only when the reader asks; here they must.
SWITCHES = {"13_capstone_translator": ("TRAIN_NOW = False", "TRAIN_NOW = True"),
            "13b_real_sentences": ("TRAIN_NOW = False", "TRAIN_NOW = True")}
# The chapters only `make portability` runs (module docstring): what each costs with its training switched on.
LONG_RUNS = {"13b_real_sentences": "about 240 CPU-s, half the real translator's recipe"}
LONG_ENV = "TRANSFORMER_LITE_PORTABILITY_LONG"


def long_runs(long: bool | None = None) -> bool:
    """Whether this run includes the long runs: ``long``, by default ``$TRANSFORMER_LITE_PORTABILITY_LONG`` is 1."""
    return os.environ.get(LONG_ENV, "").strip() == "1" if long is None else long


def live_training_run(long: bool | None = None, choice: str | None = None, commits: int | None = None) -> list[str]:
    """The chapters this run re-runs: all of LIVE_TRAINING with the long runs (:func:`long_runs`) or a configuration
    named by ``choice`` (default ``$TRANSFORMER_LITE_PORTABILITY``); else the rotation's half for ``commits`` (default:
    the commits in HEAD's history), in LIVE_TRAINING's order."""
    choice = os.environ.get(CHOICE_ENV, "").strip() if choice is None else choice
    if long_runs(long) or choice:
        return [name for name in LIVE_TRAINING if long_runs(long) or name not in LONG_RUNS]
    half = HALVES[(_commits() if commits is None else commits) % 2]
    return [name for name in LIVE_TRAINING if name in half]

# Chapters that take an optimiser step without training a model whose behaviour they then claim.
NOT_TRAINING = {
    "09_decoder": "one Adam step, to check that tied weights stay one matrix (exact for any rounding)",
    "01_tokens_and_embeddings": "two optimiser steps on an embedding table, to show which rows move (exact)"}

_TRAINING_CALL = re.compile(r"\b(?:opt|optimizer|optim)\w*\.step\(\)|(?<![.\w])train(?:_\w+)?\(")


def _code(nb_path: Path) -> str:
    return "\n".join(code_cells(nb_path))


def test_every_live_training_chapter_is_listed_and_seeds_from_book_seed():
    trains = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if _TRAINING_CALL.search(_code(p)))
    missing = sorted(set(trains) - set(LIVE_TRAINING) - set(NOT_TRAINING))
    assert not missing, f"these chapters train a model but are not re-run by this file: {missing}"
    for name in LIVE_TRAINING:
        code = _code(NOTEBOOKS / f"{name}.ipynb")
        assert "book_seed()" in code, f"{name} trains live but does not take its seed from book_seed()"
    for name, (off, _on) in SWITCHES.items():
        assert _code(NOTEBOOKS / f"{name}.ipynb").count(off) == 1, f"{name}: expected exactly one {off!r}"
    # a chapter left to `make portability` trains nothing unless its switch is on (so make test loses no claim but
    # the switched one): its only training call is in the cell that tests the switch
    for name in LONG_RUNS:
        cells = [c for c in code_cells(NOTEBOOKS / f"{name}.ipynb") if _TRAINING_CALL.search(c)]
        assert name in SWITCHES and len(cells) == 1 and "if TRAIN_NOW:" in cells[0], name


def test_make_test_leaves_only_the_long_runs_to_make_portability():
    assert live_training_run(long=True, choice="") == live_training_run(long=True, choice="all") == LIVE_TRAINING
    assert live_training_run(long=False, choice="all") == [n for n in LIVE_TRAINING if n not in LONG_RUNS]
    assert set(LONG_RUNS) < set(LIVE_TRAINING)
    # the rotation: two halves that together are every chapter but the long runs, and 30 consecutive commits re-run
    # every chapter in every configuration
    assert sorted(HALVES[0] + HALVES[1]) == sorted(n for n in LIVE_TRAINING if n not in LONG_RUNS)
    assert not set(HALVES[0]) & set(HALVES[1])
    for start in (0, 7, 1000):
        covered = {(chosen("", n)[0], name) for n in range(start, start + 30)
                   for name in live_training_run(long=False, choice="", commits=n)}
        assert covered == {(c, name) for c in CONFIGS for name in HALVES[0] + HALVES[1]}
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(rf"^portability:.*\n(\t.*\n)*\t.*{LONG_ENV}=1 .*tests/test_portability\.py", makefile, re.M)


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
    # OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep instead of spinning. With 2 threads on a machine whose other
    # core is busy (make test runs two workers), chapter 11 took 265 s instead of 34 s; it changes no result.
    env = {**env, "TQDM_DISABLE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
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


def test_the_rotation_covers_every_configuration_and_differs_from_the_build():
    assert len(CONFIGS) == 15 and len({tuple(sorted(c.items())) for c in CONFIGS.values()}) == 15
    assert {chosen("", n)[0] for n in range(100, 115)} == set(CONFIGS)  # any 15 consecutive commits
    assert chosen("", 7) != chosen("", 8)
    assert chosen("all") == list(CONFIGS) and chosen("seed2-2threads-other-cpu") == ["seed2-2threads-other-cpu"]
    with pytest.raises(ValueError, match=CHOICE_ENV):
        chosen("seed9")
    assert all(c != {"TRANSFORMER_LITE_SEED": "0", "TRANSFORMER_LITE_THREADS": "1"} for c in CONFIGS.values())


@pytest.mark.slow
@pytest.mark.trains
@pytest.mark.xdist_group("portability")  # one after the other (each may use both cores), and first (conftest.py)
@pytest.mark.parametrize("config", RUN)
def test_live_training_chapters_hold_on_another_machine(config, tmp_path, capsys):
    env = CONFIGS[config]
    notebooks = [_prepared(name, tmp_path) for name in live_training_run()]
    # one-thread runs share the two cores; two-thread runs go one at a time
    workers = 2 if env["TRANSFORMER_LITE_THREADS"] == "1" else 1
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda nb: _run(nb, env, tmp_path / nb.stem), notebooks))
    with capsys.disabled():
        print(f"\nportability: configuration {config} ({env}); ${CHOICE_ENV}=all runs all {len(CONFIGS)}")
        left = [n for n in LIVE_TRAINING if n not in live_training_run()]
        if left:
            print(f"not in this run: {', '.join(left)} (the other half runs on the next commit; make portability, "
                  f"${LONG_ENV}=1, runs every chapter, {', '.join(f'{n}: {w}' for n, w in LONG_RUNS.items())})")
        for r in results:
            print(f"[{config}] {r['notebook']:<36} {r['seconds']} s  {'ok' if r['ok'] else 'FAILED'}"
                  f"{' (second attempt, after a timeout)' if r.get('attempt') == 2 else ''}")
    failed = [f"{r['notebook']} cell {r['error']['cell']}: {r['error']['name']}: {r['error']['value'][:500]}\n"
              f"{(r['error'].get('source') or '')[-800:]}" for r in results if not r["ok"]]
    assert not failed, f"claims that do not survive {config} ({env}):\n" + "\n\n".join(failed)


def _files_with_tests_that_train() -> list[str]:
    """The test files that mark a test ``trains`` (collecting only these is what makes the subprocess quick)."""
    return sorted(str(f) for f in (ROOT / "tests").glob("test_*.py")
                  if f.name != Path(__file__).name and "pytest.mark.trains" in f.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.trains
@pytest.mark.xdist_group("portability")
@pytest.mark.parametrize("config", RUN)
def test_package_tests_that_train_hold_on_another_machine(config):
    if not long_runs():
        pytest.skip(f"a long run: make portability runs it (${LONG_ENV}=1); make test runs these tests as built")
    env = {**os.environ, **CONFIGS[config], "OMP_WAIT_POLICY": "PASSIVE"}  # (see _run)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-m", "trains and not slow", *_files_with_tests_that_train()],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = re.search(r"(\d+) passed", proc.stdout)
    assert proc.returncode == 0, f"package tests that train failed under {config}:\n{tail}"
    assert summary and int(summary.group(1)) >= 5, f"too few tests marked 'trains' ran:\n{tail}"
