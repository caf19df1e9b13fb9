"""Chapter 12 (inference): the chapter's claims, checked through the package.

Generic claims run on a small random model; claims about the book's trained translator run on the
translator shipped with the package (identical on every machine; these tests never train it).
"""
import math

import pytest
import torch

import transformer_lite as tl
from transformer_lite.book.pretrained import tiny_translator
from transformer_lite.data import BOS, EOS, PAD
from transformer_lite.decoding import (
    beam_search,
    beam_search_keep_finished,
    exact_match,
    greedy_decode,
    length_penalty_gnmt,
    sample,
    sequence_log_prob,
)

V = 13


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return tl.Transformer(V, V, d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                          dim_feedforward=64, dropout=0.0, max_len=40).eval()


@pytest.fixture(scope="module")
def src():
    return torch.tensor([[5, 6, 7, 8, 9], [4, 10, 11, 0, 0]])  # the second row is padded


def test_teacher_forced_logits_equal_step_by_step_logits(model, src):
    tgt = torch.tensor([[BOS, 4, 7, 9, 12, 5], [BOS, 6, 6, 8, 4, 11]])
    with torch.no_grad():
        one_pass = model(src, tgt)  # (B, T, V)
        memory = model.encode(src)
        steps = torch.stack([model.decode(tgt[:, :t], memory, src=src)[:, -1] for t in range(1, tgt.shape[1] + 1)], 1)
        cache = model.new_cache()
        cached = torch.cat([model.decode(tgt[:, t:t + 1], memory, src=src, cache=cache)
                            for t in range(tgt.shape[1])], 1)
    torch.testing.assert_close(steps, one_pass, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(cached, one_pass, rtol=1e-4, atol=1e-5)


def test_without_the_causal_mask_the_two_would_differ(model, src):
    # The equality above depends on the mask: a later token changes earlier outputs only if it can be seen.
    tgt = torch.tensor([[BOS, 4, 7, 9], [BOS, 6, 6, 8]])
    changed = tgt.clone()
    changed[:, -1] = 12
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])  # masked: earlier positions unchanged
    assert not torch.allclose(a[:, -1], b[:, -1])


def _decode_fixed(model, src, steps, use_cache):
    with torch.no_grad():
        memory = model.encode(src)
        ys = torch.full((src.shape[0], 1), BOS)
        cache = model.new_cache() if use_cache else None
        for _ in range(steps):
            new = ys[:, -1:] if use_cache else ys
            logits = model.decode(new, memory, src=src, cache=cache)[:, -1]
            ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], 1)
    return ys


@pytest.mark.parametrize("L", [1, 5, 12])
def test_cache_processes_L_positions_instead_of_L_L_plus_1_over_2(model, src, L):
    queries = []
    hook = model.decoder.layers[0].self_attn.register_forward_hook(lambda m, a, o: queries.append(a[0].shape[1]))
    calls = []
    hook2 = model.decoder.layers[1].multihead_attn.k_proj.register_forward_hook(lambda *a: calls.append(1))
    try:
        full = _decode_fixed(model, src, L, use_cache=False)
        n_full, queries[:], n_k_full, calls[:] = sum(queries), [], len(calls), []
        cached = _decode_fixed(model, src, L, use_cache=True)
        n_cached, n_k_cached = sum(queries), len(calls)
    finally:
        hook.remove()
        hook2.remove()
    assert torch.equal(full, cached)
    assert n_full == L * (L + 1) // 2 and n_cached == L
    assert n_k_full == L and n_k_cached == 1  # cross-attention keys projected once with the cache


@pytest.mark.parametrize("L", [1, 5, 12])
def test_with_the_cache_attention_scores_stay_quadratic(model, src, L):
    # The projections become linear; the query-key scores drop from sum t^2 to sum t = L(L+1)/2, not to L.
    scores = []

    def hook(module, args, kwargs, out):
        cache = kwargs.get("cache")
        scores.append(args[0].shape[1] * (len(cache) if cache is not None else args[1].shape[1]))

    handle = model.decoder.layers[0].self_attn.register_forward_hook(hook, with_kwargs=True)
    try:
        _decode_fixed(model, src, L, use_cache=False)
        without, scores[:] = sum(scores), []
        _decode_fixed(model, src, L, use_cache=True)
        with_cache = sum(scores)
    finally:
        handle.remove()
    assert without == sum(t * t for t in range(1, L + 1))
    assert with_cache == L * (L + 1) // 2


def test_greedy_decode_equals_a_hand_written_loop_and_beam_of_one(model, src):
    greedy = greedy_decode(model, src, 10, BOS, EOS)
    loop = _decode_fixed(model, src, greedy.shape[1] - 1, use_cache=False)
    for g, step in zip(greedy.tolist(), loop.tolist()):
        upto = g.index(EOS) + 1 if EOS in g else len(g)
        assert g[:upto] == step[:upto]
    beam1 = beam_search(model, src, beam_size=1, max_new_tokens=10, bos_id=BOS, eos_id=EOS)
    assert torch.equal(beam1, greedy)


def test_beam_search_returns_the_best_finished_hypothesis_by_length_normalised_log_probability(model, src):
    # The returned hypothesis is the finished one with the best log P / lp among those set aside in the trace.
    out, trace = beam_search(model, src[:1], beam_size=4, max_new_tokens=12, bos_id=BOS, eos_id=EOS, length_penalty=0.6,
                             return_trace=True)
    finished = trace.finished(0)
    assert len(finished) <= 4 and all(tokens[-1] == EOS for tokens, _ in finished)
    if finished:
        best = max(finished, key=lambda h: h[1] / length_penalty_gnmt(len(h[0]), 0.6))
        assert out[0, 1:1 + len(best[0])].tolist() == best[0]
        assert math.isclose(float(sequence_log_prob(model, src[:1], out, EOS)), best[1], rel_tol=1e-4, abs_tol=1e-4)


def test_length_penalty_formula():
    assert length_penalty_gnmt(1, 0.6) == 1.0
    assert length_penalty_gnmt(10, 0.0) == 1.0
    assert math.isclose(length_penalty_gnmt(7, 0.6), ((5 + 7) / 6) ** 0.6)
    assert length_penalty_gnmt(10, 1.0) > length_penalty_gnmt(5, 1.0) > 1


def test_sampling_limits_are_greedy_and_frequencies_follow_the_softmax(model, src):
    greedy = greedy_decode(model, src, 8, BOS, EOS)
    for kw in (dict(top_k=1), dict(temperature=1e-4)):
        s = sample(model, src, 8, BOS, EOS, generator=torch.Generator().manual_seed(1), **kw)
        assert torch.equal(s, greedy)
    n = 3000
    draws = sample(model, src[:1].repeat(n, 1), 1, BOS, EOS, temperature=1.5,
                   generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        p = torch.softmax(model(src[:1], torch.tensor([[BOS]]))[0, -1] / 1.5, -1)
    freq = torch.bincount(draws[:, 1], minlength=V).float() / n
    assert (freq - p).abs().max() < 0.04
    top3 = sample(model, src[:1].repeat(500, 1), 1, BOS, EOS, top_k=3, generator=torch.Generator().manual_seed(0))
    assert set(top3[:, 1].tolist()) <= set(p.topk(3).indices.tolist())


def _edit_distance(a, b):
    a, b = a.split(), b.split()
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[:], i
        for j, wb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (wa != wb))
    return row[-1]


@pytest.fixture(scope="module")
def translator():
    model, data, report = tiny_translator(progress=False)
    assert report["source"] == "shipped"
    return model, data


def test_shipped_translator_beam_beats_greedy_and_greedy_loops_on_cat(translator):
    model, data = translator
    words = lambda r: data.tgt_vocab.decode(r.tolist())  # noqa: E731
    # the chapter's showcase: beam search finds a far more probable and better translation
    src = data.encode_source(["the teacher", "cat"])
    g = greedy_decode(model, src, 20, BOS, EOS)
    b = beam_search(model, src, 4, 20, BOS, EOS, length_penalty=0.6)
    gain = sequence_log_prob(model, src, b, EOS) - sequence_log_prob(model, src, g, EOS)
    assert (gain > 1.0).all()  # more than e times more probable (measured: about 5.3 and 10.4)
    assert _edit_distance(words(b[0]), "老师") < _edit_distance(words(g[0]), "老师")
    cat = words(g[1]).split()
    assert len(cat) == 20 and set(cat) == {"猫"}  # greedy decoding loops on the fragment
    assert len(words(b[1]).split()) < 20


def test_shipped_translator_beam_of_four_is_never_less_probable_here_and_exact_on_held_out(translator):
    # the stopping rule keeps searching while a live hypothesis could still beat the finished ones: on "he writes
    # books" it runs until greedy's more probable output has finished (stopping at k finished lost it)
    model, data = translator
    src = data.encode_source("he writes books")
    g = greedy_decode(model, src, 20, BOS, EOS)
    b = beam_search(model, src, 4, 20, BOS, EOS)
    assert float(sequence_log_prob(model, src, b, EOS)) >= float(sequence_log_prob(model, src, g, EOS)) - 1e-4
    n = 200
    acc_g = exact_match(model, data.test_src[:n], data.test_tgt[:n], BOS, EOS)
    acc_b = exact_match(model, data.test_src[:n], data.test_tgt[:n], BOS, EOS, beam_size=4)
    assert acc_b >= acc_g - 0.01 and acc_b >= 0.97


def test_shipped_translator_length_penalty_chooses_a_longer_hypothesis(translator):
    # the chapter's table: among the finished hypotheses of "does the cat eat rice ?" (alpha = 0.6), alpha = 0
    # prefers a shorter one, alpha = 2 a longer one closer to the reference; whole searches agree
    model, data = translator
    src = data.encode_source("does the cat eat rice ?")
    _, trace = beam_search(model, src, 4, 20, BOS, EOS, return_trace=True)
    best = {}
    for a in (0.0, 0.6, 1.0, 2.0):
        best[a] = max(trace.finished(0), key=lambda h: h[1] / length_penalty_gnmt(len(h[0]), a))[0]
        out = beam_search(model, src, 4, 20, BOS, EOS, length_penalty=a)
        assert out[0, 1:1 + len(best[a])].tolist() == best[a]
    ref = "猫 吃 饭 吗 ?"
    words = lambda t: data.tgt_vocab.decode([BOS] + t)  # noqa: E731
    assert len(best[2.0]) > len(best[0.0])
    assert _edit_distance(words(best[2.0]), ref) < _edit_distance(words(best[0.0]), ref)
    from transformer_lite.book import check
    assert check.exercise_12_2(lambda finished, alpha: max(
        finished, key=lambda h: h[1] / length_penalty_gnmt(len(h[0]), alpha))[0]).status == "right"


def test_shipped_translator_exposure_bias(translator):
    # one wrong word in the true prefix lowers the accuracy after it
    model, data = translator
    tgt_in, labels = data.test_tgt[:200, :-1].clone(), data.test_tgt[:200, 1:]
    corrupted = tgt_in.clone()
    corrupted[:, 1] = 4 + (tgt_in[:, 1] - 3) % (len(data.tgt_vocab) - 4)  # a different real word
    with torch.no_grad():
        clean = model(data.test_src[:200], tgt_in).argmax(-1)
        bad = model(data.test_src[:200], corrupted).argmax(-1)
    after = (torch.arange(labels.shape[1])[None] >= 1) & (labels != PAD)
    acc_clean, acc_bad = ((p == labels)[after].float().mean().item() for p in (clean, bad))
    assert acc_bad < acc_clean - 0.02  # measured: 0.956 against 0.999


def test_shipped_translator_sets_finished_hypotheses_apart_on_cat(translator):
    model, data = translator
    out, trace = beam_search(model, data.encode_source("cat"), 4, 20, BOS, EOS, length_penalty=0.6, return_trace=True)
    assert all(bool(lp.isfinite().all()) for lp in trace.log_probs)  # 4 live hypotheses at every step
    assert not (torch.stack(trace.tokens) == EOS).any()
    assert len(trace.finished(0)) >= 4 and len(trace.tokens) < 20
    assert data.tgt_vocab.decode(out[0].tolist()) == "猫 买 猫"


# ---- the deep dive: the older design, beam_search_keep_finished ------------------------------------------------------

def _lost_slots(trace, b=0):
    lost = 0
    for t in range(len(trace.tokens) - 1):
        done = trace.finished[t][b] | (trace.tokens[t][b] == EOS)
        continued = {int(p) for p, f in zip(trace.parents[t + 1][b], trace.finished[t + 1][b]) if f}
        lost += sum(1 for k in range(len(done)) if done[k] and k not in continued)
    return lost


def test_older_design_finished_hypotheses_narrow_the_beam(translator):
    model, data = translator
    out, trace = beam_search_keep_finished(model, data.encode_source("cat"), 4, 20, BOS, EOS, length_penalty=0.6,
                                           return_trace=True)
    finished_after = [int((trace.finished[t][0] | (trace.tokens[t][0] == EOS)).sum()) for t in range(len(trace.tokens))]
    assert len(trace.tokens) == 20 and finished_after[-1] == 3 and 3 in finished_after[:6]
    assert data.tgt_vocab.decode(out[0].tolist()) == "猫 买 猫"
    assert _lost_slots(trace) == 0
    frozen = 0
    for t in range(1, len(trace.tokens)):
        for k in range(4):
            if trace.finished[t][0, k]:  # finished before step t: extended by <pad> at no cost
                assert int(trace.tokens[t][0, k]) == PAD
                assert trace.log_probs[t][0, k] == trace.log_probs[t - 1][0, int(trace.parents[t][0, k])]
                frozen += 1
    assert frozen > 0


def test_older_design_length_penalty_prunes_during_the_search(translator):
    # alpha = 2 on "cat": the older search returns the repetition; the usual design cannot (it never finished)
    model, data = translator
    src = data.encode_source("cat")
    during, trace2 = beam_search_keep_finished(model, src, 4, 20, BOS, EOS, length_penalty=2.0, return_trace=True)
    got = data.tgt_vocab.decode(during[0].tolist())
    assert len(got.split()) > 10 and _lost_slots(trace2) > 0


# ---- the attention benchmark (moved here from chapter 0) -------------------------------------------------------------

def test_shipped_benchmark_results_hold_what_chapter_12_shows():
    from transformer_lite.book.pretrained import benchmark_results

    bench = benchmark_results()
    assert bench is not None, "transformer_lite/book/assets/benchmarks.json is missing: run `make bench`"
    assert {"torch", "threads", "processor"} <= set(bench["machine"])
    for g in bench["goals"].values():
        assert {"value", "goal", "met"} <= set(g)
    rows = bench["attention_scaling"]["rows"]
    assert len(rows) >= 2 and all({"T", "ours_ms", "sdpa_ms", "ours_bytes", "sdpa_bytes"} <= set(r) for r in rows)
    assert rows[-1]["ours_bytes"] / rows[-2]["ours_bytes"] > 3 and rows[-1]["sdpa_bytes"] / rows[-2]["sdpa_bytes"] < 2.5
    assert bench["kv_cache_speedup"] > 0 and {"tokens", "config"} <= set(bench["kv_cache"])


def test_benchmark_results_is_none_when_the_file_is_absent(monkeypatch, tmp_path):
    from transformer_lite.book import pretrained

    monkeypatch.setattr(pretrained, "SHIPPED_BENCHMARKS", tmp_path / "absent.json")
    assert pretrained.benchmark_results() is None


def test_chapter_12_reads_the_benchmarks_from_the_package_not_the_checkout():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "notebooks" / "12_inference.ipynb").read_text(encoding="utf-8")
    assert "benchmark_results()" in text and "attention_scaling" in text
    assert "../" not in text and "results.json" not in text
