"""transformer_lite.book.pretrained: the shipped translator, and training/caching with other recipes (small ones
here)."""
import dataclasses
import hashlib
import json
import zipfile

import pytest
import torch

from transformer_lite import Transformer, count_parameters as tl_count
from transformer_lite.book import pretrained
from transformer_lite.book.pretrained import (
    RECIPE,
    SHIPPED_REPORT,
    SHIPPED_WEIGHTS,
    Recipe,
    cache_dir,
    load_shipped_translator,
    shipped_report,
    tiny_translator,
    train_tiny_translator,
)
from transformer_lite.book.runtime import book_seed
from transformer_lite.data import BOS, EOS
from transformer_lite.decoding import exact_match, greedy_decode

SMALL = Recipe(n_train=400, n_test=50, steps=20, batch_size=32, warmup_steps=10,
               model=RECIPE.model.replace(d_model=32, dim_feedforward=64, num_encoder_layers=1, num_decoder_layers=1))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LITE_CACHE", str(tmp_path))
    return tmp_path


def test_cache_dir_from_environment(cache, monkeypatch):
    assert cache_dir() == cache
    monkeypatch.delenv("TRANSFORMER_LITE_CACHE")
    assert str(cache_dir()).endswith(".cache/transformer_lite")


# ---------------------------------------------------------------- the shipped translator

@pytest.fixture(scope="module")
def shipped():
    return load_shipped_translator()


def test_the_shipped_translator_is_package_data_under_1_mb():
    assert SHIPPED_WEIGHTS.parent.name == "assets" and SHIPPED_WEIGHTS.parent.parent.name == "book"
    assert SHIPPED_WEIGHTS.parent.parent.parent.name == "transformer_lite"
    assert SHIPPED_WEIGHTS.stat().st_size < 1_000_000
    assert zipfile.is_zipfile(SHIPPED_WEIGHTS)  # torch.save's format, loadable with weights_only=True
    report = shipped_report()
    assert report["weights_sha256"] == hashlib.sha256(SHIPPED_WEIGHTS.read_bytes()).hexdigest()
    assert report["weights_bytes"] == SHIPPED_WEIGHTS.stat().st_size
    for key in ("train_seconds", "test_accuracy", "train_accuracy", "final_loss", "loss_curve", "parameters",
                "torch", "machine", "processor", "python", "threads", "device", "recipe", "command"):
        assert key in report, key
    assert len(report["loss_curve"]) == report["steps"] == RECIPE.steps


def test_the_shipped_translator_was_made_with_the_books_recipe():
    assert shipped_report()["recipe"] == dataclasses.asdict(RECIPE)


def test_tiny_translator_loads_the_shipped_model_without_training(shipped, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("tiny_translator() must not train")

    monkeypatch.setattr(pretrained, "train_tiny_translator", no_training)
    model, data, report = tiny_translator()
    assert report["source"] == "shipped" and report["from_cache"] is True
    assert isinstance(model, Transformer) and not model.training
    for (name, a), (_, b) in zip(model.state_dict().items(), shipped[0].state_dict().items()):
        assert torch.equal(a, b), name
    assert tl_count(model) == report["parameters"]


def test_the_recorded_held_out_exact_match_is_what_the_model_measures_now(shipped):
    model, data, report = shipped
    assert exact_match(model, data.test_src, data.test_tgt, BOS, EOS) == report["test_accuracy"]
    assert report["test_accuracy"] >= 0.97


def test_a_tampered_or_stale_shipped_file_is_refused(tmp_path, monkeypatch):
    weights, rep = tmp_path / "tiny_translator.pt", tmp_path / "tiny_translator.json"
    weights.write_bytes(SHIPPED_WEIGHTS.read_bytes() + b"x")
    rep.write_text(SHIPPED_REPORT.read_text())
    monkeypatch.setattr(pretrained, "SHIPPED_WEIGHTS", weights)
    monkeypatch.setattr(pretrained, "SHIPPED_REPORT", rep)
    with pytest.raises(RuntimeError, match="sha256"):
        load_shipped_translator()
    report = json.loads(rep.read_text())
    report["recipe"]["steps"] += 1
    rep.write_text(json.dumps(report))
    with pytest.raises(RuntimeError, match="make translator"):
        load_shipped_translator()
    rep.unlink()
    with pytest.raises(FileNotFoundError, match="make translator"):
        load_shipped_translator()


# ---------------------------------------------------------------- other recipes: trained once, then cached

def test_trains_once_then_loads_the_same_model(cache):
    threads = torch.get_num_threads()
    model, data, report = tiny_translator(progress=False, recipe=SMALL)
    assert torch.get_num_threads() == threads  # restored after training on one thread
    assert report["from_cache"] is False and report["steps"] == 20
    for key in ("train_seconds", "test_accuracy", "train_accuracy", "final_loss", "parameters", "recipe"):
        assert key in report
    assert len(report["loss_curve"]) == 20 and report["loss_curve"][-1] < report["loss_curve"][0]
    assert 0.0 <= report["test_accuracy"] <= 1.0 and report["train_seconds"] > 0
    files = list(cache.glob("tiny_translator-*.pt"))
    assert [f.name for f in files] == [f"tiny_translator-{SMALL.key()}.pt"]

    model2, data2, report2 = tiny_translator(progress=False, recipe=SMALL)
    assert report2["from_cache"] is True and report2["source"] == "cache" and report["source"] == "trained"
    assert {k: v for k, v in report2.items() if k not in ("from_cache", "source")} == {
        k: v for k, v in report.items() if k not in ("from_cache", "source")}
    assert isinstance(model2, Transformer) and not model2.training
    for (name, a), (_, b) in zip(model.state_dict().items(), model2.state_dict().items()):
        assert torch.equal(a, b), name
    assert data2.test_pairs == data.test_pairs
    src = data.test_src[:8]
    assert torch.equal(greedy_decode(model, src, 12, BOS, EOS), greedy_decode(model2, src, 12, BOS, EOS))

    _, _, report3 = tiny_translator(force_retrain=True, progress=False, recipe=SMALL)
    assert report3["from_cache"] is False


def test_force_retrain_with_the_books_recipe_leaves_the_shipped_file_alone(monkeypatch):
    before = SHIPPED_WEIGHTS.read_bytes()
    calls = []

    def fake_train(progress=True, recipe=None):
        calls.append(recipe)
        model, data, _ = load_shipped_translator()
        return model, data, {"test_accuracy": 0.5}

    monkeypatch.setattr(pretrained, "train_tiny_translator", fake_train)
    _, _, report = tiny_translator(force_retrain=True)
    assert calls == [RECIPE] and report["source"] == "trained" and report["from_cache"] is False
    assert SHIPPED_WEIGHTS.read_bytes() == before


def test_training_is_deterministic():
    a, _, ra = train_tiny_translator(progress=False, recipe=SMALL)
    b, _, rb = train_tiny_translator(progress=False, recipe=SMALL)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    assert ra["test_accuracy"] == rb["test_accuracy"] and ra["final_loss"] == rb["final_loss"]
    c, _, _ = train_tiny_translator(progress=False, recipe=SMALL, seed=1)
    assert not torch.equal(a.output_projection.weight, c.output_projection.weight)


def test_recipe_key_changes_with_the_recipe():
    assert SMALL.key() != RECIPE.key()
    assert dataclasses.replace(SMALL, steps=21).key() != SMALL.key()
    assert Recipe().key() == RECIPE.key() and len(RECIPE.key()) == 12


@pytest.mark.trains
def test_a_small_recipe_learns_something():
    recipe = dataclasses.replace(SMALL, steps=150, n_train=2000, n_test=100, batch_size=64, warmup_steps=50,
                                 model=RECIPE.model, seed=book_seed())
    _, _, report = train_tiny_translator(progress=False, recipe=recipe)
    assert report["test_accuracy"] > 0.3  # the full recipe reaches >= 0.97 (benchmarked)


@pytest.mark.parametrize("call, exc, name", [
    (lambda: train_tiny_translator(progress=False, recipe=SMALL, stepz=3), TypeError, "stepz"),
    (lambda: train_tiny_translator(progress=False, recipe={"steps": 3}), TypeError, "recipe"),
    (lambda: train_tiny_translator(progress=False, recipe=SMALL, threads=0), ValueError, "threads"),
    (lambda: tiny_translator(recipe="small"), TypeError, "recipe"),
])
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()
