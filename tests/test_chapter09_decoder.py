"""Chapter 9 (the decoder): the chapter's claims, checked through the package.

A decoder layer is masked self-attention -> cross-attention (Q from the decoder, K and V from the
encoder's output) -> FFN, each with Add & Norm; cross-attention weights are (B, H, T, S); every target
position sees every source word but no later target position; source padding is masked out; the
output layer is a (V, D) Linear whose logits are h W^T + b; weight tying shares one tensor, saves V x D
parameters per shared use, and sums the gradients of both uses. Cross-attention's query is the
output of the same layer's first sub-layer (hooked), not the previous block's output; the output
weight is D x V whatever the length. The translator shipped with the package translates the
chapter's held-out sentence, and its last cross-attention layer aligns each Chinese word with the
English word it translates; over all held-out sentences every head of that layer points at the
source of the next word far more often than at the source of the current one (a Dice dictionary).
"""
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import transformer_lite as tl

B, S, T, D, H = 2, 4, 6, 8, 2


def _layer():
    torch.manual_seed(0)
    return tl.DecoderLayer(d_model=D, nhead=H, dim_feedforward=32, dropout=0.0).eval()


def _model(V_src=11, V_tgt=13, **kw):
    torch.manual_seed(0)
    cfg = dict(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32, dropout=0.0)
    cfg.update(kw)
    return tl.Transformer(V_src, V_tgt, **cfg).eval()


@torch.no_grad()
def test_decoder_layer_is_self_attention_then_cross_attention_then_ffn():
    layer = _layer()
    y, memory, mask = torch.randn(B, T, D), torch.randn(B, S, D), tl.causal_mask(T)
    sa, w_self = layer.self_attn(y, y, y, attn_mask=mask)
    x1 = layer.norm1(y + sa)
    mha = layer.multihead_attn
    q = tl.split_heads(mha.q_proj(x1), H)          # queries from the decoder
    k = tl.split_heads(mha.k_proj(memory), H)      # keys and values from the memory
    v = tl.split_heads(mha.v_proj(memory), H)
    out, w_cross = tl.scaled_dot_product_attention(q, k, v)
    ca = mha.out_proj(tl.merge_heads(out))
    x2 = layer.norm2(x1 + ca)
    x3 = layer.norm3(x2 + layer.ff(x2))
    full, ws, wc = layer.forward_with_attention(y, memory, tgt_mask=mask)
    assert_close(x3, full)
    assert_close(wc, w_cross)
    assert wc.shape == (B, H, T, S) and ws.shape == (B, H, T, T)
    assert_close(wc.sum(-1), torch.ones(B, H, T))
    assert (wc > 0).all()                              # no mask on the source
    assert (ws[..., mask] == 0).all() and (ws[..., ~mask] > 0).all()


@torch.no_grad()
def test_every_target_position_sees_every_source_word_but_no_later_target():
    layer = _layer()
    y, memory, mask = torch.randn(B, T, D), torch.randn(B, S, D), tl.causal_mask(T)
    base = layer(y, memory, tgt_mask=mask)
    for s in range(S):
        m2 = memory.clone()
        m2[:, s] += 1.0
        moved = (layer(y, m2, tgt_mask=mask) - base).abs().amax(-1)   # (B, T)
        assert (moved > 1e-4).all(), f"changing source word {s} must move every target position"
    for t in range(T):
        y2 = y.clone()
        y2[:, t] += 1.0
        moved = (layer(y2, memory, tgt_mask=mask) - base).abs().amax(-1)
        assert (moved[:, :t] == 0).all() and (moved[:, t:] > 1e-4).all()


@torch.no_grad()
def test_without_the_causal_mask_earlier_positions_see_later_ones():
    layer = _layer()
    y, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    y2 = y.clone()
    y2[:, -1] += 1.0
    moved = (layer(y2, memory) - layer(y, memory)).abs().amax(-1)
    assert (moved[:, 0] > 1e-4).all()


@torch.no_grad()
def test_source_padding_is_invisible_to_cross_attention():
    layer = _layer()
    y, memory, mask = torch.randn(B, T, D), torch.randn(B, S, D), tl.causal_mask(T)
    padded = torch.cat([memory, torch.randn(B, 3, D)], dim=1)
    kpm = torch.tensor([[False] * S + [True] * 3] * B)
    assert_close(layer(y, padded, tgt_mask=mask, memory_key_padding_mask=kpm), layer(y, memory, tgt_mask=mask))
    # and through the whole model: padding ids (0) appended to the source change no logit
    model = _model()
    src, tgt = torch.tensor([[4, 5, 6, 7]]), torch.tensor([[1, 4, 5, 6, 7, 8]])
    src_padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    assert_close(model(src_padded, tgt), model(src, tgt))


@torch.no_grad()
def test_cross_attention_ignores_the_order_of_memory_rows():
    layer = _layer()
    y, memory, mask = torch.randn(B, T, D), torch.randn(B, S, D), tl.causal_mask(T)
    perm = torch.tensor([2, 0, 3, 1])
    assert_close(layer(y, memory[:, perm], tgt_mask=mask), layer(y, memory, tgt_mask=mask))


@torch.no_grad()
def test_output_layer_is_a_d_by_v_linear_and_softmax():
    model = _model()
    src, tgt = torch.tensor([[4, 5, 6, 7]]), torch.tensor([[1, 4, 5, 6, 7, 8]])
    memory = model.encode(src)
    x = model.tgt_pos(model.tgt_embed(tgt))
    h = model.decoder(x, memory, tgt_mask=tl.causal_mask(tgt.shape[1]))
    logits = model.decode(tgt, memory, src=src)
    W, b = model.output_projection.weight, model.output_projection.bias
    assert W.shape == (model.tgt_vocab_size, model.d_model)     # stored (V, D); the math's W is D x V
    assert logits.shape == (1, tgt.shape[1], model.tgt_vocab_size)
    assert_close(logits, h @ W.T + b)
    assert_close(logits.softmax(-1).sum(-1), torch.ones(1, tgt.shape[1]))


def test_cross_attention_is_a_tenth_of_the_base_model():
    # the one component the decoder adds to chapter 8's count: cross-attention + its LayerNorm, per layer
    with torch.device("meta"):
        base = tl.Transformer(37_000, 37_000, tie_embeddings=True, share_embeddings=True)
    cross = sum(tl.count_parameters(layer.multihead_attn) + tl.count_parameters(layer.norm2)
                for layer in base.decoder.layers)
    assert cross == 6 * (4 * (512 * 512 + 512) + 2 * 512)
    assert 0.09 < cross / tl.count_parameters(base) < 0.11


def test_the_chapter_switches_gradients_off_locally_only():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "09_decoder.ipynb").read_text("utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "set_grad_enabled" not in code and "torch.no_grad()" in code


def test_exercise_10_5_suspect_fails_only_the_padding_experiment():
    from transformer_lite.book.check.ch09 import suspect_decoder_layer

    layer = _layer()
    suspect = suspect_decoder_layer(layer)
    torch.manual_seed(1)
    y, memory, mask = torch.randn(1, T, D), torch.randn(1, S, D), tl.causal_mask(T)
    with torch.no_grad():
        base = suspect(y, memory, tgt_mask=mask)
        assert_close(base, layer(y, memory, tgt_mask=mask))  # right without padding: a silent bug
        memory2 = memory.clone()
        memory2[:, -1] = torch.randn(D)
        assert ((suspect(y, memory2, tgt_mask=mask) - base).abs().amax(-1) > 1e-3).all()  # sees every source word
        y2 = y.clone()
        y2[:, 3] = torch.randn(D)
        moved = (suspect(y2, memory, tgt_mask=mask) - base).abs().amax(-1)[0]
        assert (moved[:3] == 0).all()  # no later target word
        padded = torch.cat([memory, torch.randn(1, 3, D)], dim=1)
        pad = torch.tensor([[False] * S + [True] * 3])
        assert not torch.allclose(suspect(y, padded, tgt_mask=mask, memory_key_padding_mask=pad), base, atol=1e-3)


def test_weight_tying_shares_one_tensor_and_saves_v_times_d():
    V = 13
    tied, untied = _model(V_tgt=V, tie_embeddings=True), _model(V_tgt=V)
    E = tied.tgt_embed.embedding.weight
    assert tied.output_projection.weight is E and tied.output_projection.weight.data_ptr() == E.data_ptr()
    assert untied.output_projection.weight is not untied.tgt_embed.embedding.weight
    assert tl.count_parameters(untied) - tl.count_parameters(tied) == V * tied.d_model
    ids = torch.tensor([[1, 4, 5]])
    assert_close(tied.tgt_embed(ids), E[ids] * tied.d_model ** 0.5)   # the embedding scales by sqrt(D)


def test_tied_gradient_is_the_sum_of_both_uses_and_stays_tied_after_a_step():
    V = 13
    tied, untied = _model(V_tgt=V, tie_embeddings=True), _model(V_tgt=V)
    untied.load_state_dict(tied.state_dict())
    src, tgt = torch.tensor([[4, 5, 6, 7]]), torch.tensor([[1, 4, 5, 6, 7, 8, 2]])
    inp, labels = tgt[:, :-1], tgt[:, 1:]

    def loss(m):
        return F.cross_entropy(m(src, inp).reshape(-1, V), labels.reshape(-1))

    loss(tied).backward()
    loss(untied).backward()
    E = tied.tgt_embed.embedding.weight
    assert_close(E.grad, untied.tgt_embed.embedding.weight.grad + untied.output_projection.weight.grad)
    assert not torch.allclose(E.grad, untied.output_projection.weight.grad)     # both uses contribute
    before = E.detach().clone()
    torch.optim.Adam(tied.parameters(), lr=1e-2).step()
    assert not torch.equal(before, E)
    assert tied.output_projection.weight is tied.tgt_embed.embedding.weight


@pytest.mark.parametrize("d_model, nhead, d_ff", [(512, 8, 2048), (1024, 16, 4096)])
def test_sharing_all_three_saves_two_v_by_d_blocks(d_model, nhead, d_ff):
    V = 37_000
    with torch.device("meta"):
        kw = dict(d_model=d_model, nhead=nhead, dim_feedforward=d_ff)
        untied = tl.count_parameters(tl.Transformer(V, V, **kw))
        tied = tl.count_parameters(tl.Transformer(V, V, tie_embeddings=True, **kw))
        shared = tl.count_parameters(tl.Transformer(V, V, tie_embeddings=True, share_embeddings=True, **kw))
    assert untied - tied == V * d_model
    assert untied - shared == 2 * V * d_model


def test_decoder_layer_parameter_formula():
    D_, H_, d_ff = 512, 8, 2048
    attention = 4 * (D_ * D_ + D_)
    formula = 2 * attention + (2 * D_ * d_ff + d_ff + D_) + 3 * 2 * D_
    dec = tl.count_parameters(tl.DecoderLayer(D_, H_, dim_feedforward=d_ff))
    enc = tl.count_parameters(tl.EncoderLayer(D_, H_, dim_feedforward=d_ff))
    assert dec == formula
    assert dec - enc == attention + 2 * D_


@torch.no_grad()
def test_shipped_translator_cross_attention_aligns_words():
    from transformer_lite.book.pretrained import tiny_translator
    from transformer_lite.data import BOS, EOS, all_translation_pairs
    from transformer_lite.decoding import greedy_decode

    model, data, report = tiny_translator(progress=False)
    assert report["source"] == "shipped"
    sentence = "she eats rice at school today"
    assert sentence not in {en for en, _ in data.train_pairs}
    src = data.encode_source(sentence)
    ys = greedy_decode(model, src, max_new_tokens=12, bos_id=BOS, eos_id=EOS)
    assert data.tgt_vocab.decode(ys[0]) == dict(all_translation_pairs())[sentence] == "她 今天 在 学校 吃 饭"
    maps = model.attention_maps(src, ys[:, :-1])
    last = maps.cross[-1][0].mean(0)  # (T, S): last layer, averaged over the heads
    english = sentence.split()
    written = [data.tgt_vocab.itos[i] for i in ys[0, 1:]]
    alignment = {"她": "she", "今天": "today", "在": "at", "学校": "school", "吃": "eats", "饭": "rice"}
    for t, word in enumerate(written):
        if word in alignment:
            assert english[int(last[t].argmax())] == alignment[word], word
    for word in ("吃", "饭"):  # these two rows share their weight between 'eats' and 'rice'
        row = last[written.index(word)]
        eats, rice = float(row[english.index("eats")]), float(row[english.index("rice")])
        assert eats + rice > 0.9 and min(eats, rice) > 0.1
    torch.manual_seed(0)
    untrained = tl.Transformer(model.config).eval()
    entropy = lambda w: -(w * w.clamp_min(1e-12).log()).sum(-1).mean().item()  # noqa: E731
    trained_h, untrained_h = entropy(maps.cross[-1]), entropy(untrained.attention_maps(src, ys[:, :-1]).cross[-1])
    assert trained_h < 0.5 * untrained_h  # measured: 0.23 against 1.62 nats


@torch.no_grad()
def test_cross_attention_query_is_this_layers_first_sublayer_not_the_previous_block():
    torch.manual_seed(0)
    stack = tl.Decoder(tl.DecoderLayer(D, H, dim_feedforward=32, dropout=0.0), num_layers=2).eval()
    y, memory, mask = torch.randn(B, T, D), torch.randn(B, S, D), tl.causal_mask(T)
    second, seen = stack.layers[1], {}
    hooks = [stack.layers[0].register_forward_hook(lambda m, a, out: seen.update(previous=out)),
             second.norm1.register_forward_hook(lambda m, a, out: seen.update(first=out)),
             second.multihead_attn.register_forward_pre_hook(lambda m, a: seen.update(q=a[0], k=a[1], v=a[2]))]
    out = stack(y, memory, tgt_mask=mask)
    for h in hooks:
        h.remove()
    assert_close(out, stack(y, memory, tgt_mask=mask))  # the hooks changed nothing
    assert torch.equal(seen["q"], seen["first"]) and torch.equal(seen["k"], memory) and torch.equal(seen["v"], memory)
    assert (seen["q"] - seen["previous"]).abs().max() > 0.1


def test_output_weight_is_d_by_v_for_every_length():
    model = _model()
    W = model.output_projection.weight
    for T_ in (1, 3, 11):
        logits = model.output_projection(torch.randn(2, T_, model.d_model))
        assert logits.shape == (2, T_, model.tgt_vocab_size)
    assert W.T.shape == (model.d_model, model.tgt_vocab_size)
    assert tl.count_parameters(model.output_projection) == model.d_model * model.tgt_vocab_size + model.tgt_vocab_size


@torch.no_grad()
def test_shipped_translator_heads_point_at_the_source_of_the_next_word():
    # Moved from chapter 4: a Dice dictionary from the training pairs scores every head of the last
    # cross-attention layer over all held-out sentences.
    from collections import Counter

    from transformer_lite.book.pretrained import tiny_translator
    from transformer_lite.data import EOS, PAD

    model, data, report = tiny_translator(progress=False)
    assert report["source"] == "shipped"
    c_en, c_zh, c_both = Counter(), Counter(), Counter()
    for en, zh in data.train_pairs:
        E, Z = list(dict.fromkeys(en.split())), list(dict.fromkeys(zh.split()))
        c_en.update(E)
        c_zh.update(Z)
        c_both.update((z, e) for z in Z for e in E)
    source_of = {z: max(c_en, key=lambda e: 2 * c_both[z, e] / (c_zh[z] + c_en[e])) for z in c_zh}
    assert source_of["明天"] == "will" and source_of["今天"] == "today"
    # the slips the chapter names: 在 comes with "at the"/"in the", and 吃 gets one English form, "eat"
    assert source_of["在"] == "the" and source_of["吃"] == "eat"
    src, tgt = data.test_src, data.test_tgt
    cross = model.attention_maps(src, tgt[:, :-1]).cross[-1]  # (N, H, T, S)
    pairs = ((tgt[:, 1:] != PAD) & (tgt[:, 1:] != EOS)).nonzero().tolist()
    lookup = lambda ids: [[source_of.get(data.tgt_vocab.itos[i], "") for i in row] for row in ids.tolist()]  # noqa: E731
    src_next, src_here = lookup(tgt[:, 1:]), lookup(tgt[:, :-1])
    for h in range(model.config.nhead):
        top = cross[:, h].argmax(-1).tolist()
        picked = [[data.src_vocab.itos[src[n, j]] for j in row] for n, row in enumerate(top)]
        nxt = sum(picked[n][t] == src_next[n][t] for n, t in pairs) / len(pairs)
        cur = sum(picked[n][t] == src_here[n][t] for n, t in pairs) / len(pairs)
        assert nxt > 3 * cur and nxt > 0.5, (h, nxt, cur)  # measured: 0.62-0.76 against 0.05-0.09


def test_shipped_translator_does_not_tie_and_its_vocabularies_differ():
    # the chapter says so right after the section on tying, where the model prints "tied output layer: False"
    from transformer_lite.book.pretrained import tiny_translator

    model, _, _ = tiny_translator(progress=False)
    assert model.config.tie_embeddings is False and not model.config.share_embeddings
    assert model.config.src_vocab_size != model.config.tgt_vocab_size
