"""Where the `make` targets that measure or train write: into the path the Makefile names in the checkout, never
into the imported package's own folder (under `make` that may be the copy installed in the venv's site-packages,
where git never sees a file). Nothing is trained here: each writer runs with its measurement replaced by a fake
result, or with a model of a few parameters, and the test looks where the files land."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from transformer_lite import Transformer, TransformerConfig
from transformer_lite.book import capstone, grammar_lab, pretrained, real_translator, since2017

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "transformer_lite" / "book" / "assets"


@pytest.fixture
def shipped_untouched():
    """The package's shipped files are byte for byte what they were before the test."""
    before = {p.name: p.read_bytes() for p in ASSETS.iterdir() if p.is_file()}
    yield
    after = {p.name: p.read_bytes() for p in ASSETS.iterdir() if p.is_file()}
    assert after == before, "a writer changed the package's own assets instead of the path it was given"


def test_output_path_refuses_an_installed_package_and_bad_values(tmp_path):
    assert pretrained.output_path("out", tmp_path / "x.json") == tmp_path / "x.json"
    assert pretrained.output_path("out", str(tmp_path)) == tmp_path
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "transformer_lite" / "book" / "assets"
    with pytest.raises(ValueError, match=r"out_dir is inside an installed package"):
        pretrained.output_path("out_dir", site)
    with pytest.raises(ValueError, match="out.*dist-packages|inside an installed package"):
        pretrained.output_path("out", tmp_path / "dist-packages" / "x.json")
    with pytest.raises(TypeError, match="out must be a str or a path, got int"):
        pretrained.output_path("out", 3)
    with pytest.raises(ValueError, match="out must name a file"):
        pretrained.output_path("out", "")


def test_writers_need_their_path(tmp_path):
    """No writer falls back on the package's folder: the path is a required keyword argument."""
    with pytest.raises(TypeError, match="out"):
        capstone.write_results()
    with pytest.raises(TypeError, match="out"):
        grammar_lab.write_results()
    with pytest.raises(TypeError, match="out"):
        since2017.write_results()
    with pytest.raises(TypeError, match="out_dir"):
        pretrained.write_shipped_translator()
    with pytest.raises(TypeError, match="out_dir"):
        real_translator.write_shipped_real_translator()
    with pytest.raises(TypeError, match="out"):
        real_translator.write_baselines()


def test_capstone_writes_where_it_is_told(tmp_path, monkeypatch, shipped_untouched, capsys):
    monkeypatch.setattr(capstone, "measure", lambda log: {"best_baseline": "fake", "baselines": []})
    out = tmp_path / "nested" / "capstone.json"
    out.parent.mkdir()
    assert capstone.main(["--out", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["best_baseline"] == "fake" and written["total_seconds"] >= 0
    assert f"wrote {out}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:  # the command line names its output too
        capstone.main([])
    assert e.value.code == 2


@pytest.mark.parametrize("module", [grammar_lab, since2017], ids=["grammar_lab", "since2017"])
def test_experiments_keep_the_others_from_the_file_they_update(module, tmp_path, monkeypatch, shipped_untouched):
    """Re-running one experiment keeps the others' results from ``out``, the file being updated, not from the
    package's shipped copy (which may be another file than the checkout's)."""
    first, second = module.EXPERIMENTS[:2]

    def fake_measure(*args, only=None, done=None):
        names = only or module.EXPERIMENTS
        results = {name: {"seconds": 2.0, "cpu_seconds": 2.0, "run": "new"} for name in names}
        done(results)  # the writer saves after every experiment, so a cut run keeps what it finished
        return results

    monkeypatch.setattr(module, "measure", lambda *a, **k: fake_measure(only=a[-1] if a else k.get("only"),
                                                                        done=k["done"]))
    out = tmp_path / f"{module.__name__.rsplit('.', 1)[1]}.json"
    out.write_text(json.dumps({first: {"seconds": 5.0, "run": "old"}, second: {"seconds": 7.0, "run": "old"}}))
    written = module.write_results(log=lambda s: None, only=[second], out=out)
    assert written[first] == {"seconds": 5.0, "run": "old"}  # kept from out
    assert written[second]["run"] == "new"
    assert written["total_seconds"] == 7.0  # 5 + 2
    assert json.loads(out.read_text(encoding="utf-8")) == written
    with pytest.raises(SystemExit) as e:
        module.main(["not-an-experiment", "--out", str(out)])
    assert e.value.code == 2
    assert module.main([first, "--out", str(out)]) == 0  # the command line make runs, through the same writer
    assert json.loads(out.read_text(encoding="utf-8"))[first]["run"] == "new"


def _tiny_model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(src_vocab_size=7, tgt_vocab_size=9, d_model=8, nhead=2,
                                         num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                                         max_len=8)).eval()


def test_the_grammar_translator_lands_in_out_dir(tmp_path, monkeypatch, shipped_untouched):
    model = _tiny_model()
    monkeypatch.setattr(pretrained, "train_tiny_translator",
                        lambda **kwargs: (model, None, {"test_accuracy": 1.0, "train_seconds": 0.0,
                                                        "processor": "fake", "torch": torch.__version__}))
    assert pretrained.main(["--out-dir", str(tmp_path / "assets")]) == 0
    weights, report = tmp_path / "assets" / "tiny_translator.pt", tmp_path / "assets" / "tiny_translator.json"
    report = json.loads(report.read_text(encoding="utf-8"))
    assert report["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert report["weights_bytes"] == weights.stat().st_size and report["command"] == "make translator"
    loaded = pretrained._load(weights)
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), model.state_dict().values()))
    assert sorted(p.name for p in (tmp_path / "assets").iterdir()) == ["tiny_translator.json", "tiny_translator.pt"]


def test_the_real_translator_lands_in_out_dir(tmp_path, monkeypatch, shipped_untouched):
    model = _tiny_model()
    data = SimpleNamespace(src_vocab=SimpleNamespace(itos=["<pad>", "a"]),
                           tgt_vocab=SimpleNamespace(itos=["<pad>", "甲"]))
    monkeypatch.setattr(real_translator, "train_real_translator",
                        lambda *args, **kwargs: (model, data, {"scores": {"bleu": 1.0, "chrf": 2.0},
                                                               "train_seconds": 0.0, "processor": "fake"}))
    assert real_translator.main(["--out-dir", str(tmp_path)]) == 0
    saved = torch.load(tmp_path / "real_translator.pt", map_location="cpu", weights_only=True)
    assert saved["src_vocab"] == ["<pad>", "a"] and saved["tgt_vocab"] == ["<pad>", "甲"]
    report = json.loads((tmp_path / "real_translator.json").read_text(encoding="utf-8"))
    assert report["weights_sha256"] == hashlib.sha256((tmp_path / "real_translator.pt").read_bytes()).hexdigest()
    assert report["command"] == "make real-translator"
    with pytest.raises(SystemExit):  # the model is two files: a folder, not a file
        real_translator.main(["--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):  # the baselines are one file
        real_translator.main(["baselines", "--out-dir", str(tmp_path)])


WRITERS = {  # make target -> the file or folder its command line must name, in the checkout
    "bench": "--out {assets}/benchmarks.json",
    "translator": "--out-dir {assets}",
    "capstone": "--out {assets}/capstone_baselines.json",
    "grammar-lab": "--out {assets}/grammar_lab.json",
    "since2017": "--out {assets}/since2017.json",
    "real-translator": "--out-dir {assets}",
    "real-baselines": "--out {assets}/real_baselines.json",
}


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", sorted(WRITERS))
def test_the_makefile_names_each_output_in_the_checkout(target):
    """`make -n` prints the commands without running them (nothing is trained): each writer's names its output."""
    done = subprocess.run(["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = WRITERS[target].format(assets=ASSETS)
    assert expected in done.stdout, f"make {target} does not pass {expected}:\n{done.stdout}"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_passes_the_experiments_named_as_goals():
    done = subprocess.run(["make", "-n", "-C", str(ROOT), "since2017", "blocks"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.search(r"since2017\.json \\?\s*blocks", done.stdout), done.stdout


def test_the_benchmarks_default_to_the_checkout():
    """`python -m benchmarks.run` (make bench) names its default output from its own place in the checkout, never
    from the imported package's path to its assets (which may be the copy installed in the venv)."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.run", "--help"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "transformer_lite/book/assets/benchmarks.json in this checkout" in " ".join(done.stdout.split())
    source = (ROOT / "benchmarks" / "run.py").read_text(encoding="utf-8")
    assert "SHIPPED_BENCHMARKS" not in source  # the installed package's path to its assets
