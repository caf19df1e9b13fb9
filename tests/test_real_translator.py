"""The translator trained on real HSK sentences: the shipped files, the scores they record, the baselines."""
import dataclasses
import hashlib

import pytest
import torch

from transformer_lite.book import real_translator as rt
from transformer_lite.book.runtime import book_seed, num_threads

LIMIT = 5 * 1024 * 1024  # bytes: what the package may ship per model


@pytest.fixture(scope="module")
def shipped():
    return rt.real_translator()


# ---------------------------------------------------------------- the shipped model

def test_shipped_files_are_small_and_match_their_sha256(shipped):
    _, _, report = shipped
    assert rt.SHIPPED_WEIGHTS.stat().st_size < LIMIT and rt.SHIPPED_REPORT.stat().st_size < LIMIT
    assert report["weights_bytes"] == rt.SHIPPED_WEIGHTS.stat().st_size
    assert hashlib.sha256(rt.SHIPPED_WEIGHTS.read_bytes()).hexdigest() == report["weights_sha256"]


def test_shipped_model_is_the_recipe(shipped):
    model, data, report = shipped
    assert report["recipe"] == dataclasses.asdict(rt.REAL_RECIPE)
    assert model.config.tie_embeddings and not model.config.norm_first  # Post-LN, tied output layer
    assert model.config.src_vocab_size == len(data.src_vocab) == 1703
    assert model.config.tgt_vocab_size == len(data.tgt_vocab) == 1337
    assert report["parameters"] == sum(p.numel() for p in model.parameters())
    assert 4 * report["parameters"] < LIMIT  # float32


def test_recorded_scores_are_what_the_shipped_model_scores(shipped):
    model, data, report = shipped
    measured = rt.evaluate(model, data)
    recorded = report["scores"]
    for key in ("bleu", "chrf", "exact_match"):
        assert measured[key] == pytest.approx(recorded[key], abs=1e-9)
    for group in ("by_level", "by_length"):
        assert measured[group].keys() == recorded[group].keys()
        for name, row in measured[group].items():
            assert row["n"] == recorded[group][name]["n"]
            assert row["bleu"] == pytest.approx(recorded[group][name]["bleu"], abs=1e-9)
            assert row["chrf"] == pytest.approx(recorded[group][name]["chrf"], abs=1e-9)
    assert measured["failures"] == recorded["failures"]
    assert measured["failure_counts"] == recorded["failure_counts"]
    assert sum(r["n"] for r in measured["by_level"].values()) == measured["n"] == len(data.test_pairs) == 425
    assert sum(r["n"] for r in measured["by_length"].values()) == 425


def test_the_shipped_model_translates_better_than_nothing(shipped):
    _, _, report = shipped
    assert report["scores"]["chrf"] > 10 and report["scores"]["bleu"] > 1  # an empty output scores 0


def test_report_names_the_data_and_its_licence(shipped):
    _, _, report = shipped
    assert report["data"]["name"] == "hsk-sentences-audio" and report["data"]["version"] == "1.0.0"
    assert report["data"]["license"] == report["weights_license"] == "CC-BY-SA-4.0"
    assert "derived from CC BY-SA" in report["data"]["note"]


def test_failures_are_labelled_by_what_can_be_seen():
    src_vocab = rt.data_for().src_vocab
    assert "unknown source word" in rt.failure_kinds("the zyzzyva", src_vocab, list("我"), list("我"))
    assert rt.failure_kinds("i", src_vocab, list("我"), list("我是中国人")) == ["omission"]
    assert "repetition" in rt.failure_kinds("i", src_vocab, list("我我我"), list("我是人"))
    assert "too long" in rt.failure_kinds("i", src_vocab, list("我是中国人你是中国人"), list("我是"))


def test_a_tampered_weights_file_is_refused(monkeypatch, tmp_path):
    copy = tmp_path / "real_translator.pt"
    copy.write_bytes(rt.SHIPPED_WEIGHTS.read_bytes() + b"x")
    monkeypatch.setattr(rt, "SHIPPED_WEIGHTS", copy)
    with pytest.raises(RuntimeError, match="sha256"):
        rt.real_translator()


# ---------------------------------------------------------------- training

TINY = dataclasses.replace(rt.REAL_RECIPE, held_out="dev", steps=60, warmup_steps=20, batch_size=32,
                           model=rt.REAL_RECIPE.model.replace(d_model=32, dim_feedforward=64, num_encoder_layers=1,
                                                              num_decoder_layers=1))


@pytest.mark.trains
def test_the_recipe_lowers_the_loss():
    _, _, report = rt.train_real_translator(TINY, seed=book_seed(), progress=False)
    loss = report["loss"]
    assert loss["last50"] < loss["first"] - 1.0  # ln(1337) ~ 7.2 at the start; measured ~2 lower after 60 steps
    with num_threads(1) as threads:  # 1, unless $TRANSFORMER_LITE_THREADS says otherwise (tests/test_portability.py)
        pass
    assert report["steps"] == 60 and report["threads"] == threads
    assert report["scores"]["n"] == 425  # the dev split


def test_subset_keeps_vocabularies_and_test_split():
    data = rt.data_for()
    small = rt.subset(data, 400)
    assert len(small.train_pairs) == small.train_src.shape[0] == 400
    assert small.src_vocab is data.src_vocab and small.test_pairs == data.test_pairs
    assert set(small.train_pairs) <= set(data.train_pairs)


@pytest.mark.parametrize("call, exc, name", [
    (lambda: rt.train_real_translator(recipe={"steps": 3}), TypeError, "recipe"),
    (lambda: rt.train_real_translator(TINY, seed="0"), TypeError, "seed"),
    (lambda: rt.train_real_translator(TINY, threads=0), ValueError, "threads"),
    (lambda: rt.new_model("lstm", rt.data_for()), ValueError, "kind"),
    (lambda: rt.new_model(3, rt.data_for()), TypeError, "kind"),
    (lambda: rt.evaluate(torch.nn.Linear(2, 2), "data"), TypeError, "data"),
    (lambda: rt.evaluate("model", rt.data_for()), TypeError, "model"),
    (lambda: rt.evaluate(torch.nn.Linear(2, 2), rt.data_for(), held_out="train"), ValueError, "held_out"),
    (lambda: rt.evaluate(torch.nn.Linear(2, 2), rt.data_for(), held_out="dev"), ValueError, "data"),
    (lambda: rt.subset(rt.data_for(), 10_000), ValueError, "n_train"),
    (lambda: rt.subset(rt.data_for(), 0), ValueError, "n_train"),
    (lambda: rt.measure_baselines(seeds=()), TypeError, "seeds"),
])
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ---------------------------------------------------------------- the baselines

@pytest.fixture(scope="module")
def baselines():
    return rt.baseline_results()


def test_baselines_use_the_same_split_and_recipe(baselines):
    assert baselines["held_out"] == "test"
    assert baselines["recipe"] == dataclasses.asdict(rt.REAL_RECIPE)
    assert 0 <= baselines["dictionary"]["bleu"] <= 100 and 0 <= baselines["dictionary"]["chrf"] <= 100


@pytest.mark.parametrize("kind", rt.KINDS)
def test_each_neural_model_has_three_seeds_and_a_consistent_summary(baselines, kind):
    rows = baselines[kind]["runs"]
    assert sorted(r["seed"] for r in rows) == [0, 1, 2]
    # the GRU trains for the steps its dev BLEU chose (gru_tuning), the Transformers for the recipe's
    steps = baselines["gru_tuning"]["chosen_steps"] if kind == "gru" else rt.REAL_RECIPE.steps
    for r in rows:
        assert r["kind"] == kind and r["steps"] == steps and r["train_seconds"] > 0
    for key in ("bleu", "chrf", "train_seconds"):
        values = [r[key] for r in rows]
        summary = baselines[kind][key]
        assert summary["mean"] == pytest.approx(sum(values) / len(values), abs=1e-9)
        assert summary["min"] == min(values) and summary["max"] == max(values)


def test_every_run_ships_the_translations_it_was_scored_on(baselines):
    # what a paired bootstrap between any two runs needs: one translation per test sentence, scoring to the row's BLEU
    from transformer_lite.metrics import characters, corpus_bleu, corpus_chrf

    refs = [characters(zh) for _, zh in rt.data_for().test_pairs]
    rows = [baselines["dictionary"], baselines["shipped_beam"]]
    for kind in ("transformer", "no_positions", "gru", "gru_equal_time", "bpe_source"):
        rows += baselines[kind]["runs"]
    for row in rows:
        hyps = [characters(h) for h in row["hypotheses"]]
        assert len(hyps) == len(refs)
        assert abs(100 * corpus_bleu(hyps, refs).score - row["bleu"]) < 1e-9
        assert abs(100 * corpus_chrf(hyps, refs).score - row["chrf"]) < 1e-9


def test_the_grus_steps_were_chosen_on_dev_as_the_transformers_were(baselines):
    tune = baselines["gru_tuning"]
    assert [s for s, _ in tune["dev_bleu"]] == list(range(rt.TUNE_EVERY, rt.TUNE_STEPS + 1, rt.TUNE_EVERY))
    assert tune["chosen_steps"] == max(tune["dev_bleu"], key=lambda p: (p[1], -p[0]))[0]  # best dev BLEU, then fewer
    assert all(r["steps"] == tune["equal_time_steps"] for r in baselines["gru_equal_time"]["runs"])
    assert tune["gru_lr"] == rt.GRU_LR


def test_the_bpe_source_runs_read_english_as_pieces_with_almost_no_unknown_token(baselines):
    runs = baselines["bpe_source"]["runs"]
    assert sorted(r["seed"] for r in runs) == [0, 1, 2]
    words = baselines["transformer"]["runs"][0]["unknown"]
    for r in runs:
        assert r["kind"] == "transformer" and r["source"] == "bpe" and r["steps"] == rt.REAL_RECIPE.steps
        assert r["unknown"]["tokens"] < words["tokens"] / 10 and r["unknown"]["mean_length"] > words["mean_length"]


def test_the_transformer_seed_0_is_the_shipped_model(baselines):
    row = next(r for r in baselines["transformer"]["runs"] if r["seed"] == 0)
    recorded = rt.shipped_report()["scores"]
    assert row["bleu"] == recorded["bleu"] and row["chrf"] == recorded["chrf"]


def test_the_data_size_curve_records_every_planned_size(baselines):
    curve = baselines["data_size_curve"]
    ran = [r["n_train"] for r in curve["runs"]]
    assert ran == [*rt.CURVE_SIZES, 3415]
    full = next(r for r in baselines["transformer"]["runs"] if r["seed"] == 0)
    # the curve leaves out the per-sentence translations (and the source's unknown rates) of its full-size run
    assert curve["runs"][-1] == {k: v for k, v in full.items() if k not in ("hypotheses", "unknown", "source")}
    for r in curve["runs"]:
        assert r["kind"] == "transformer" and r["seed"] == 0 and r["steps"] == rt.REAL_RECIPE.steps
