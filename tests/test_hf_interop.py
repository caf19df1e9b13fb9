"""from_hf_gpt2 / from_hf_qwen2: Hugging Face checkpoints in DecoderOnlyLM and ModernLM give Hugging Face's logits.

Always: the tiny random checkpoints of transformer_lite.book.hf_reference against the logits transformers recorded
for them (assets/hf_reference.json), with and without a KV cache, and every refusal. Where transformers is installed
(not in the book's own environment: bertviz is installed without it), the same against transformers run live, on
its own random initialisation of the configurations chapters 14 and 15 name.
"""
import math

import pytest
import torch

import transformer_lite as tl
from transformer_lite.book import hf_reference
from transformer_lite.interop import _rotate_half_to_pairs, from_hf_gpt2, from_hf_qwen2
from transformer_lite.language_models import rotary

CONVERT = {"gpt2": from_hf_gpt2, "qwen2": from_hf_qwen2, "qwen2_untied": from_hf_qwen2}
TOL = 1e-5


def _max_diff(a, b) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_ours_gives_the_logits_transformers_recorded(kind):
    ref = hf_reference.reference(kind)
    ours = CONVERT[kind](hf_reference.tiny_state_dict(kind), ref["config"])
    assert not ours.training
    with torch.no_grad():
        logits = ours(ref["ids"])
    assert logits.shape == ref["logits"].shape == (*hf_reference.IDS_SHAPE, 100)
    assert _max_diff(logits, ref["logits"]) < TOL
    assert ref["logits"].std() > 0.5  # logits of a few units: a wrong piece would move them far beyond TOL


@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_decoding_with_a_kv_cache_gives_the_recorded_logits(kind):
    """A prompt of 5 tokens at once, then one token at a time at positions 5, 6, ...: the positions (learned, or
    RoPE's angles) continue after the cached ones."""
    ref = hf_reference.reference(kind)
    ours, ids = CONVERT[kind](hf_reference.tiny_state_dict(kind), ref["config"]), ref["ids"]
    caches, steps = ours.new_caches(), []
    with torch.no_grad():
        steps.append(ours.forward_with_cache(ids[:, :5], ids[:, :5], caches))
        for t in range(5, ids.shape[1]):
            steps.append(ours.forward_with_cache(ids[:, t:t + 1], ids[:, :t + 1], caches))
    assert _max_diff(torch.cat(steps, dim=1), ref["logits"]) < TOL


def test_the_tied_output_layer_is_the_embedding():
    gpt2 = from_hf_gpt2(hf_reference.tiny_state_dict("gpt2"), hf_reference.reference("gpt2")["config"])
    qwen = from_hf_qwen2(hf_reference.tiny_state_dict("qwen2"), hf_reference.reference("qwen2")["config"])
    untied = from_hf_qwen2(hf_reference.tiny_state_dict("qwen2_untied"),
                           hf_reference.reference("qwen2_untied")["config"])
    assert gpt2.output.weight is gpt2.token_embedding.weight and qwen.output.weight is qwen.token_embedding.weight
    assert untied.output.weight is not untied.token_embedding.weight
    assert tl.count_parameters(untied) == tl.count_parameters(qwen) + 100 * 32


def test_the_converted_gpt2_is_decoder_only_lm_with_gpt2s_choices():
    ours = from_hf_gpt2(hf_reference.tiny_state_dict("gpt2"), hf_reference.reference("gpt2")["config"])
    layer = ours.layers.layers[0]
    assert ours.causal and ours.norm_first and ours.max_len == 64 and ours.pad_id == -1
    assert layer.ff.activation_name == "gelu_tanh" and layer.norm1.eps == 1e-5
    sd = hf_reference.tiny_state_dict("gpt2")
    # Conv1D's (in, out) matrix, transposed, in three: W^K is the middle third of c_attn's columns
    torch.testing.assert_close(layer.self_attn.k_proj.weight, sd["transformer.h.0.attn.c_attn.weight"][:, 32:64].T)


def test_an_untied_gpt2_reads_its_own_output_layer():
    """tie_word_embeddings=False: lm_head.weight is read (here a copy of wte, so the logits stay the recorded ones),
    and the output layer's bias, which DecoderOnlyLM has when untied and GPT-2 has not, is 0."""
    ref, sd = hf_reference.reference("gpt2"), hf_reference.tiny_state_dict("gpt2")
    sd["lm_head.weight"] = sd["transformer.wte.weight"].clone()
    ours = from_hf_gpt2(sd, dict(ref["config"], tie_word_embeddings=False))
    assert ours.output.weight is not ours.token_embedding.weight and not ours.output.bias.any()
    with torch.no_grad():
        assert _max_diff(ours(ref["ids"]), ref["logits"]) < TOL
    del sd["lm_head.weight"]
    with pytest.raises(ValueError, match="state_dict is missing 'lm_head.weight'"):
        from_hf_gpt2(sd, dict(ref["config"], tie_word_embeddings=False))


def test_the_keys_may_come_without_their_prefix():
    """A safetensors file of GPT2Model saves "h.0...." where GPT2LMHeadModel.state_dict() has "transformer.h.0....";
    older checkpoints also hold the causal mask as "attn.bias" / "attn.masked_bias" buffers."""
    ref = hf_reference.reference("gpt2")
    sd = {k.removeprefix("transformer."): v for k, v in hf_reference.tiny_state_dict("gpt2").items()}
    del sd["lm_head.weight"]
    sd["h.0.attn.bias"], sd["h.0.attn.masked_bias"] = torch.ones(1, 1, 64, 64), torch.tensor(-1e4)
    with torch.no_grad():
        assert _max_diff(from_hf_gpt2(sd, ref["config"])(ref["ids"]), ref["logits"]) < TOL


def test_a_transformers_4_config_with_rope_theta_at_the_top_level():
    ref = hf_reference.reference("qwen2")
    config = {k: v for k, v in ref["config"].items() if k != "rope_parameters"}
    config.update(rope_theta=1e6, rope_scaling=None)  # Qwen2.5-0.5B's config.json as transformers 4 wrote it
    with torch.no_grad():
        ours = from_hf_qwen2(hf_reference.tiny_state_dict("qwen2"), config)
        assert _max_diff(ours(ref["ids"]), ref["logits"]) < TOL
    assert ours.layers[0].attention.rope_base == 1e6


def test_reordering_w_q_and_w_k_turns_rotate_half_into_adjacent_pairs():
    """Hugging Face's RoPE (feature j turns with j + D_h/2) on HF's rows = ours (2i with 2i + 1) on the reordered rows:
    the same scores, computed here from the two formulas without transformers."""
    torch.manual_seed(0)
    H, D_h, L, D = 2, 8, 6, 16
    Wq, Wk, x = torch.randn(H * D_h, D), torch.randn(H * D_h, D), torch.randn(L, D)
    pos = torch.arange(L, dtype=torch.float64)
    inv_freq = 1e4 ** (-torch.arange(0, D_h, 2, dtype=torch.float64) / D_h)
    angle = torch.cat([pos[:, None] * inv_freq] * 2, dim=-1).float()  # (L, D_h): HF's cat(freqs, freqs)

    def hf_rope(t):  # (H, L, D_h)
        half = torch.cat([-t[..., D_h // 2:], t[..., :D_h // 2]], dim=-1)  # rotate_half
        return t * angle.cos() + half * angle.sin()

    def heads(W):
        return (x @ W.T).view(L, H, D_h).transpose(0, 1)  # (H, L, D_h)

    hf_scores = hf_rope(heads(Wq)) @ hf_rope(heads(Wk)).transpose(-1, -2)
    q, k = heads(_rotate_half_to_pairs(Wq, H)), heads(_rotate_half_to_pairs(Wk, H))
    ours = rotary(q, base=1e4) @ rotary(k, base=1e4).transpose(-1, -2)
    torch.testing.assert_close(ours, hf_scores, rtol=1e-5, atol=1e-5)
    naive = rotary(heads(Wq), base=1e4) @ rotary(heads(Wk), base=1e4).transpose(-1, -2)
    assert _max_diff(naive, hf_scores) > 0.1  # without the reordering the two layouts disagree


def _sd_and_config(kind):
    return hf_reference.tiny_state_dict(kind), dict(hf_reference.reference(kind)["config"])


@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_a_missing_tensor_a_wrong_shape_or_an_extra_tensor_is_named(kind):
    convert = CONVERT[kind]
    sd, config = _sd_and_config(kind)
    name = next(k for k in sd if "layers.1." in k or ".h.1." in k)
    with pytest.raises(ValueError, match=f"state_dict is missing '{name}'"):
        convert({k: v for k, v in sd.items() if k != name}, config)
    wrong = dict(sd, **{name: sd[name][..., :-1]})
    with pytest.raises(ValueError, match=rf"state_dict\['{name}'\] has shape .* need"):
        convert(wrong, config)
    with pytest.raises(ValueError, match="tensors this architecture does not have: 'encoder.weight'"):
        convert(dict(sd, **{"encoder.weight": torch.zeros(2)}), config)
    with pytest.raises(ValueError, match="config's sizes need|has shape"):
        convert(sd, dict(config, vocab_size=101))


@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_bad_arguments_are_named(kind):
    convert = CONVERT[kind]
    sd, config = _sd_and_config(kind)
    with pytest.raises(TypeError, match="state_dict must be a mapping"):
        convert(list(sd.items()), config)
    with pytest.raises(TypeError, match="state_dict must map names"):
        convert(dict(sd, extra=[1.0]), config)
    with pytest.raises(TypeError, match="config must be a mapping"):
        convert(sd, "gpt2")
    key = "n_embd" if kind == "gpt2" else "rms_norm_eps"
    with pytest.raises(ValueError, match=f"config is missing '{key}'"):
        convert(sd, {k: v for k, v in config.items() if k != key})
    with pytest.raises((TypeError, ValueError), match=f"config\\['{'n_head' if kind == 'gpt2' else 'hidden_size'}'\\]"):
        convert(sd, dict(config, **{"n_head" if kind == "gpt2" else "hidden_size": 0}))
    sd["lm_head.weight"] = sd["lm_head.weight"] + 1  # a tied checkpoint whose saved output layer is another matrix
    with pytest.raises(ValueError, match=r"tie_word_embeddings'\] is True but state_dict\['lm_head.weight'\] differs"):
        convert(sd, config)


def test_what_the_models_cannot_reproduce_is_refused():
    sd, config = _sd_and_config("gpt2")
    with pytest.raises(ValueError, match="activation_function.*'swish'"):
        from_hf_gpt2(sd, dict(config, activation_function="swish"))
    with pytest.raises(ValueError, match="scale_attn_by_inverse_layer_idx"):
        from_hf_gpt2(sd, dict(config, scale_attn_by_inverse_layer_idx=True))
    sd, config = _sd_and_config("qwen2")
    with pytest.raises(ValueError, match="sliding-window"):
        from_hf_qwen2(sd, dict(config, use_sliding_window=True))
    with pytest.raises(ValueError, match="RoPE type 'yarn'"):
        from_hf_qwen2(sd, dict(config, rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0}))
    with pytest.raises(ValueError, match="hidden_act"):
        from_hf_qwen2(sd, dict(config, hidden_act="gelu"))
    with pytest.raises(ValueError, match="head_dim"):
        from_hf_qwen2(sd, dict(config, head_dim=16))
    with pytest.raises(ValueError, match="kind must be one of"):
        hf_reference.tiny_state_dict("llama")


def test_the_tiny_weights_are_the_same_on_every_call_and_of_order_one():
    a, b = hf_reference.tiny_state_dict("qwen2"), hf_reference.tiny_state_dict("qwen2")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert a["lm_head.weight"] is a["model.embed_tokens.weight"]
    w = a["model.layers.0.mlp.down_proj.weight"]  # (D, d_ff): scaled by sqrt(3 / d_ff), unit variance out
    assert math.isclose(w.std().item() * math.sqrt(64), 1.0, rel_tol=0.1)


# --- against transformers itself, where it is installed --------------------------------------------------------

def _live_models():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    yield "gpt2", from_hf_gpt2, transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=100, n_positions=64))
    for tie in (True, False):
        yield f"qwen2 tie={tie}", from_hf_qwen2, transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
            hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, num_hidden_layers=2,
            vocab_size=100, tie_word_embeddings=tie, rms_norm_eps=1e-6, rope_theta=1e6))


def test_transformers_own_random_models_give_the_same_logits_live():
    ids = torch.randint(0, 100, (3, 20), generator=torch.Generator().manual_seed(1))
    for name, convert, hf in _live_models():
        hf.eval()
        ours = convert(hf.state_dict(), hf.config)
        with torch.no_grad():
            theirs = hf(ids).logits
            assert _max_diff(ours(ids), theirs) < TOL, name
            caches = ours.new_caches()  # and decoding with a cache: positions 12.. after a prompt of 12
            first = ours.forward_with_cache(ids[:, :12], ids[:, :12], caches)
            rest = [ours.forward_with_cache(ids[:, t:t + 1], ids[:, :t + 1], caches) for t in range(12, 20)]
            assert _max_diff(torch.cat([first, *rest], dim=1), theirs) < TOL, name


@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_the_recording_is_what_transformers_computes_here(kind):
    pytest.importorskip("transformers")
    ref = hf_reference.reference(kind)
    assert _max_diff(hf_reference.hf_logits(kind), ref["logits"]) < TOL  # tiny_state_dict loads strictly, too


# --- the chapters ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chapter", ["14_bert_and_gpt", "15_since_2017"])
def test_the_chapters_download_nothing_unless_the_reader_asks(chapter):
    """The book's rule: nothing downloaded at run time. The real checkpoint loads only in the cell whose switch the
    reader turns on; the build runs it with LOAD_REAL = False."""
    from notebook_code import code_cell, code_cells

    real = code_cell(chapter, "LOAD_REAL = False")
    assert "\nif LOAD_REAL:\n" in real and "\nelse:\n" in real
    branch = real.split("\nif LOAD_REAL:\n")[1].split("\nelse:\n")[0]
    assert "from_pretrained(" in branch and "from transformers import" in branch
    others = [c for c in code_cells(chapter) if c != real]
    assert not any("from_pretrained" in c or "import transformers" in c or "from transformers" in c for c in others)
