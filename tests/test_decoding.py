"""transformer_lite.decoding: greedy, beam search, sampling, the KV cache, exact match."""
import pytest
import torch

from transformer_lite import Transformer
from transformer_lite.data import BOS, EOS, PAD
from transformer_lite.decoding import (
    BeamTrace,
    beam_search,
    exact_match,
    greedy_decode,
    length_penalty_gnmt,
    sample,
    sequence_log_prob,
)

V = 11


def random_model(seed=0, norm_first=False, V=V, d_model=32, dropout=0.1):
    torch.manual_seed(seed)
    return Transformer(V, V, d_model=d_model, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                       dim_feedforward=64, dropout=dropout, norm_first=norm_first)


def random_src(B=4, S=6, seed=0, V=V):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (B, S), generator=g)
    src[1, 4:] = PAD  # one padded row
    return src


def ends_properly(ys):
    """Column 0 is BOS; after a row's first EOS there is only PAD."""
    assert (ys[:, 0] == BOS).all()
    for row in ys.tolist():
        if EOS in row:
            assert all(t == PAD for t in row[row.index(EOS) + 1:])


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_decoding_equals_full_recomputation(norm_first):
    model = random_model(norm_first=norm_first).eval()
    src = random_src()
    # tokens: greedy with and without the cache
    with_cache = greedy_decode(model, src, 12, BOS, EOS, use_cache=True)
    without = greedy_decode(model, src, 12, BOS, EOS, use_cache=False)
    assert torch.equal(with_cache, without)
    # logits: feed a fixed prefix one token at a time through the cache
    ys = torch.randint(4, V, (4, 7), generator=torch.Generator().manual_seed(3))
    ys[:, 0] = BOS
    with torch.no_grad():
        memory = model.encode(src)
        full = model.decode(ys, memory, src=src)  # (B, T, V), teacher-forced: all positions at once
        cache = model.new_cache()
        steps = torch.cat([model.decode(ys[:, t:t + 1], memory, src=src, cache=cache) for t in range(7)], dim=1)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


def test_teacher_forced_logits_equal_step_by_step_logits():
    model = random_model(seed=1).eval()
    src = random_src(seed=1)
    ys = greedy_decode(model, src, 8, BOS, EOS, use_cache=False)
    with torch.no_grad():
        memory = model.encode(src)
        full = model(src, ys)  # (B, L, V)
        for t in range(1, ys.shape[1] + 1):  # the loop of inference: a growing prefix, no cache
            step = model.decode(ys[:, :t], memory, src=src)[:, -1]
            # Rows already padded after EOS see PAD keys masked out in the full pass but not here;
            # compare the rows still generating at step t.
            live = ~(ys[:, :t] == EOS).any(dim=1) | (ys[:, t - 1] == EOS)
            torch.testing.assert_close(step[live], full[live, t - 1], atol=1e-5, rtol=1e-5)


def test_greedy_decode_output_format_and_early_stop():
    model = random_model(seed=2)
    model.train()
    ys = greedy_decode(model, random_src(), 20, BOS, EOS)
    assert model.training  # the mode is restored
    assert ys.dtype == torch.long and ys.shape[0] == 4 and ys.shape[1] <= 21
    ends_properly(ys)
    # Stop early: with EOS as the most likely first token everything ends after one step.
    with torch.no_grad():
        model.output_projection.bias.fill_(-1e4)
        model.output_projection.bias[EOS] = 1e4
    ys = greedy_decode(model, random_src(), 20, BOS, EOS)
    assert ys.tolist() == [[BOS, EOS]] * 4


def test_greedy_decode_is_deterministic_under_dropout():
    model = random_model(seed=3, dropout=0.5).train()
    a = greedy_decode(model, random_src(), 10, BOS, EOS)
    b = greedy_decode(model, random_src(), 10, BOS, EOS)
    assert torch.equal(a, b)  # eval mode inside: dropout is off


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_beam_width_one_equals_greedy(seed):
    model = random_model(seed=seed)
    src = random_src(B=6, seed=seed)
    assert torch.equal(beam_search(model, src, 1, 10, BOS, EOS), greedy_decode(model, src, 10, BOS, EOS))


def test_beam_search_output_format_and_trace():
    model = random_model(seed=4)
    src = random_src()
    ys, trace = beam_search(model, src, 3, 10, BOS, EOS, return_trace=True)
    ends_properly(ys)
    assert torch.equal(ys, beam_search(model, src, 3, 10, BOS, EOS))
    assert isinstance(trace, BeamTrace) and len(trace.tokens) == len(trace.parents) == len(trace.log_probs)
    assert len(trace.ended) == len(trace.tokens) and trace.tokens[0].shape == (4, 3) and len(trace.best) == 4
    assert (trace.parents[0] == 0).all()  # all first tokens extend <bos>
    for t in range(len(trace.log_probs)):
        assert not (trace.tokens[t] == EOS).any()  # live hypotheses never end with <eos>: finished ones are apart
        if t > 0:  # cumulative log-probabilities never increase along a path
            parent_score = trace.log_probs[t - 1].gather(1, trace.parents[t])
            assert (trace.log_probs[t] <= parent_score + 1e-6).all()
            assert (trace.ended[t] <= trace.log_probs[t - 1] + 1e-6).all()
    for b in range(4):  # following the best path back reproduces the returned tokens
        tokens = [tok for _, _, tok in trace.path(b)]
        row = [tok for tok in ys[b, 1:].tolist() if tok != PAD]
        assert tokens == row


def _reference_beam_search(model, src_row, K, max_new_tokens, alpha):
    """The usual design written plainly for one sentence, with lists: the package must agree with it."""
    memory = model.encode(src_row)
    live, finished = [([BOS], 0.0)], []
    for t in range(max_new_tokens):
        cands = []
        for ys, score in live:
            cache = model.new_cache()  # token by token through the cache, as the package decodes
            for tok in ys:
                logits = model.decode(torch.tensor([[tok]]), memory, src=src_row, cache=cache)[0, -1].double()
            log_p = torch.log_softmax(logits, dim=-1)
            cands += [(score + float(log_p[v]), ys + [v]) for v in range(len(log_p))]
        cands.sort(key=lambda c: -c[0])
        lp_now = float(length_penalty_gnmt(t + 1, alpha))
        for r, (score, ys) in enumerate(cands[:2 * K]):
            if ys[-1] == EOS and r < K and (len(finished) < K or score / lp_now > min(f[0] for f in finished)):
                finished.append((score / lp_now, ys))
                if len(finished) > K:
                    finished.pop(min(range(len(finished)), key=lambda j: finished[j][0]))
        live = [(ys, score) for score, ys in cands[:2 * K] if ys[-1] != EOS][:K]
        if len(finished) == K and min(f[0] for f in finished) >= live[0][1] / lp_now:
            break
    if not finished:
        return live[0][0]
    return max(finished, key=lambda f: f[0])[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_search_equals_a_plain_reference_and_decodes_rows_independently(seed):
    model = random_model(seed=seed, V=8, d_model=16)
    src = random_src(B=5, seed=seed, V=8)
    with torch.no_grad():
        model.eval()
        for K, alpha in ((2, 0.6), (3, 0.0), (4, 2.0)):
            batch = beam_search(model, src, K, 8, BOS, EOS, length_penalty=alpha)
            for b in range(src.shape[0]):
                ref = _reference_beam_search(model, src[b:b + 1], K, 8, alpha)
                assert batch[b, :len(ref)].tolist() == ref and (batch[b, len(ref):] == model.pad_id).all()


def test_beam_search_keeps_k_live_hypotheses_while_the_old_design_narrows():
    from transformer_lite.decoding import SlotTrace, beam_search_keep_finished
    model = random_model(seed=7, V=8, d_model=16)
    src = random_src(B=6, seed=7, V=8)
    _, new = beam_search(model, src, 3, 8, BOS, EOS, return_trace=True)
    assert all(bool(lp.isfinite().all()) for lp in new.log_probs[1:])  # K live, finite hypotheses at every step
    _, old = beam_search_keep_finished(model, src, 3, 8, BOS, EOS, return_trace=True)
    assert isinstance(old, SlotTrace) and any(bool(f.any()) for f in old.finished)  # old: finished ones hold slots
    assert torch.equal(beam_search_keep_finished(model, src, 1, 8, BOS, EOS), greedy_decode(model, src, 8, BOS, EOS))


def test_beam_search_scores_match_sequence_log_prob():
    model = random_model(seed=5)
    src = random_src()
    ys, trace = beam_search(model, src, 4, 10, BOS, EOS, length_penalty=0.0, return_trace=True)
    for b in range(4):
        step, k, ended = trace.best[b]
        score = trace.ended[step][b, k] if ended else trace.log_probs[step][b, k]
        torch.testing.assert_close(sequence_log_prob(model, src[b:b + 1], ys[b:b + 1], EOS)[0], score.float(),
                                   atol=1e-4, rtol=1e-4)


def test_beam_beats_greedy_in_sequence_log_prob():
    """Greedy commits to the best *first* token; beam search can find a more probable *whole* sentence."""
    wins = 0
    for seed in range(6):
        model = random_model(seed=seed, V=8, d_model=16)
        src = random_src(B=8, seed=seed, V=8)
        greedy = greedy_decode(model, src, 6, BOS, EOS)
        beam = beam_search(model, src, 4, 6, BOS, EOS, length_penalty=0.0)
        lp_g, lp_b = sequence_log_prob(model, src, greedy, EOS), sequence_log_prob(model, src, beam, EOS)
        finished = (greedy == EOS).any(1) & (beam == EOS).any(1)
        wins += int((lp_b > lp_g + 1e-4)[finished].sum())
        assert (lp_b[finished] >= lp_g[finished] - 1e-4).all()  # never worse here
    assert wins >= 1


def test_length_penalty():
    assert length_penalty_gnmt(1, 0.6) == pytest.approx(1.0)
    assert length_penalty_gnmt(7, 0.6) == pytest.approx(2.0 ** 0.6)
    assert length_penalty_gnmt(9, 0.0) == 1.0


def test_sample():
    model = random_model(seed=6)
    src = random_src()
    a = sample(model, src, 10, BOS, EOS, generator=torch.Generator().manual_seed(0))
    b = sample(model, src, 10, BOS, EOS, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    ends_properly(a)
    # top_k=1 and a tiny temperature are both greedy
    greedy = greedy_decode(model, src, 10, BOS, EOS)
    assert torch.equal(sample(model, src, 10, BOS, EOS, top_k=1), greedy)
    assert torch.equal(sample(model, src, 10, BOS, EOS, temperature=1e-4), greedy)
    draws = {tuple(sample(model, src[:1], 10, BOS, EOS, temperature=2.0,
                          generator=torch.Generator().manual_seed(s))[0].tolist()) for s in range(10)}
    assert len(draws) > 1  # a hot temperature gives different sentences


def test_exact_match():
    model = random_model(seed=7)
    src = random_src()
    pred = greedy_decode(model, src, 10, BOS, EOS)
    tgt = pred.clone()
    if not (tgt == EOS).any(1).all():  # make every target end with EOS
        tgt = torch.cat([tgt, torch.full((4, 1), EOS)], 1)
    got = exact_match(model, src, tgt, BOS, EOS, batch_size=3)
    expect = sum(EOS in row for row in pred.tolist()) / 4
    assert got == expect
    wrong = tgt.clone()
    wrong[:, 1] = (wrong[:, 1] + 1 - 4) % (V - 4) + 4
    wrong[:, 1] = torch.where(tgt[:, 1] == EOS, torch.tensor(5), wrong[:, 1])
    assert exact_match(model, src, wrong, BOS, EOS) == 0.0
    assert exact_match(model, src, tgt, BOS, EOS, beam_size=1) == got


def bad_calls():
    m = random_model()
    s = random_src()
    return [
        (lambda: greedy_decode(m, s, 0, BOS, EOS), ValueError, "max_new_tokens"),
        (lambda: greedy_decode(m, s, 10_000, BOS, EOS), ValueError, "max_new_tokens"),
        (lambda: greedy_decode(m, s, 5.0, BOS, EOS), TypeError, "max_new_tokens"),
        (lambda: greedy_decode(m, s.float(), 5, BOS, EOS), TypeError, "src"),
        (lambda: greedy_decode(m, s[0], 5, BOS, EOS), ValueError, "src"),
        (lambda: greedy_decode(m, s + 100, 5, BOS, EOS), ValueError, "src"),
        (lambda: greedy_decode(m, s[:, :0], 5, BOS, EOS), ValueError, "src"),
        (lambda: greedy_decode(m, s, 5, 99, EOS), ValueError, "bos_id"),
        (lambda: greedy_decode(m, s, 5, BOS, "2"), TypeError, "eos_id"),
        (lambda: greedy_decode("model", s, 5, BOS, EOS), TypeError, "model"),
        (lambda: beam_search(m, s, 0, 5, BOS, EOS), ValueError, "beam_size"),
        (lambda: beam_search(m, s, 2, 0, BOS, EOS), ValueError, "max_new_tokens"),
        (lambda: beam_search(m, s, 2.5, 5, BOS, EOS), TypeError, "beam_size"),
        (lambda: beam_search(m, s, 2, 5, BOS, EOS, length_penalty=-1), ValueError, "length_penalty"),
        (lambda: sample(m, s, 5, BOS, EOS, temperature=0), ValueError, "temperature"),
        (lambda: sample(m, s, 5, BOS, EOS, top_k=0), ValueError, "top_k"),
        (lambda: sample(m, s, 5, BOS, EOS, generator=0), TypeError, "generator"),
        (lambda: exact_match(m, s, s[:2], BOS, EOS), ValueError, "src and tgt"),
        (lambda: exact_match(m, s, s.float(), BOS, EOS), TypeError, "tgt"),
        (lambda: exact_match(m, s, s, BOS, EOS, beam_size=0), ValueError, "beam_size"),
        (lambda: exact_match(m, s, s, BOS, EOS, batch_size=0), ValueError, "batch_size"),
        (lambda: sequence_log_prob(m, s, s[:2], EOS), ValueError, "ys"),
    ]


@pytest.mark.parametrize("i", range(len(bad_calls())))
def test_bad_input(i):
    call, exc, name = bad_calls()[i]
    with pytest.raises(exc, match=name):
        call()
