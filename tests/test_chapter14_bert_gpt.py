"""Chapter 14 (from the Transformer to BERT and GPT): the chapter's claims, checked through the package.

A GPT layer is an encoder layer under a causal mask = a decoder layer without cross-attention; BERT's
corruption masks 12 % of the tokens, not 15 %; the package's modules on the meta device count
BERT-base, GPT-2 small and T5-small exactly; GELU's tanh form is close to, not equal to, the exact one;
a short-trained decoder-only LM beats the best interpolated bigram on the chapter's held-out split.
"""
import json
import random
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import transformer_lite as tl
from transformer_lite import language_models as lm
from transformer_lite.book.runtime import num_threads
from transformer_lite.data import PAD, Vocab, all_translation_pairs, pad_batch

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "14_bert_and_gpt.ipynb"


def _layer(D, F_):
    return 4 * (D * D + D) + (D * F_ + F_) + (F_ * D + D) + 4 * D


def test_gpt_layer_equals_decoder_layer_without_cross_attention():
    torch.manual_seed(0)
    enc = tl.EncoderLayer(32, 4, 64, dropout=0.0, norm_first=True).eval()
    dec = tl.DecoderLayer(32, 4, 64, dropout=0.0, norm_first=True).eval()
    for a, b in [("self_attn", "self_attn"), ("ff", "ff"), ("norm1", "norm1"), ("norm2", "norm3")]:
        getattr(dec, b).load_state_dict(getattr(enc, a).state_dict())
    nn.init.zeros_(dec.multihead_attn.out_proj.weight), nn.init.zeros_(dec.multihead_attn.out_proj.bias)
    x, memory = torch.randn(2, 6, 32), torch.randn(2, 3, 32)
    with torch.no_grad():
        assert torch.allclose(enc(x, src_mask=tl.causal_mask(6)), dec(x, memory, tgt_mask=tl.causal_mask(6)),
                              atol=1e-6)
    assert tl.count_parameters(dec) - tl.count_parameters(enc) == 4 * (32 * 32 + 32) + 2 * 32


def test_bert_base_count():
    with torch.device("meta"):
        bert = nn.ModuleDict(dict(
            tokens=nn.Embedding(30522, 768), positions=nn.Embedding(512, 768), segments=nn.Embedding(2, 768),
            norm=nn.LayerNorm(768), pooler=nn.Linear(768, 768),
            layers=tl.Encoder(tl.EncoderLayer(768, 12, 3072, activation="gelu"), 12)))
    formula = (30522 + 514) * 768 + 2 * 768 + 12 * _layer(768, 3072) + 768 * 769
    assert tl.count_parameters(bert) == 109_482_240 == formula
    assert abs(109_482_240 / 110e6 - 1) < 0.01


def test_gpt2_small_count():
    with torch.device("meta"):
        gpt2 = lm.DecoderOnlyLM(50257, d_model=768, nhead=12, num_layers=12, max_len=1024, activation="gelu_tanh")
    assert tl.count_parameters(gpt2) == 124_439_808 == 50257 * 768 + 1024 * 768 + 12 * _layer(768, 3072) + 2 * 768


def test_t5_small_count():
    config = tl.TransformerConfig(32128, 32128, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                                  dim_feedforward=2048, bias=False, norm_first=True, tie_embeddings=True,
                                  share_embeddings=True)
    with torch.device("meta"):
        t5 = tl.Transformer(config)
    assert tl.count_parameters(t5) + 2 * 32 * 8 == 60_506_624  # + the two relative-position bias tables


def test_bert_masks_twelve_percent_not_fifteen():
    ids = torch.randint(4, 90, (2000, 12), generator=torch.Generator().manual_seed(0))
    inputs, labels = lm.mask_tokens(ids, mask_id=90, vocab_size=91, special_ids=[0, 1, 2, 3],
                                    generator=torch.Generator().manual_seed(1))
    masked, scored = (inputs == 90).float().mean().item(), (labels != -100).float().mean().item()
    assert abs(masked - 0.12) < 0.005 and abs(scored - 0.15) < 0.005


def test_gelu_forms():
    x = torch.linspace(-6, 6, 10001)
    exact, approx = F.gelu(x), F.gelu(x, approximate="tanh")
    assert 1e-5 < (exact - approx).abs().max() < 1e-3
    ffn = tl.FeedForward(4, 8, activation="gelu")
    assert torch.equal(ffn.activation(x), exact)


def test_short_trained_lm_beats_bigram():
    sentences = [en for en, _ in all_translation_pairs()]
    vocab = Vocab(w for s in sentences for w in s.split())
    V = len(vocab) + 1
    random.Random(0).shuffle(sentences)
    test = pad_batch([vocab.encode(s, add_bos_eos=True) for s in sentences[:1000]])
    train = pad_batch([vocab.encode(s, add_bos_eos=True) for s in sentences[1000:]])
    torch.manual_seed(0)
    model = lm.DecoderOnlyLM(V, d_model=64, nhead=4, num_layers=2, max_len=16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    g = torch.Generator().manual_seed(0)
    with num_threads(1):  # a tiny model: one thread is fastest, above all on a busy machine
        for _ in range(120):
            b = train[torch.randint(len(train), (64,), generator=g)]
            loss = F.cross_entropy(model(b[:, :-1]).reshape(-1, V), b[:, 1:].reshape(-1), ignore_index=PAD)
            opt.zero_grad(), loss.backward(), opt.step()
    bigram = min(lm.bigram_perplexity(lm.bigram_log_probs(train, V, lam), test) for lam in (0.5, 0.9, 0.99))
    assert lm.lm_perplexity(model, test) < bigram - 0.3


def test_notebook_has_its_checks():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    # clean (no outputs, no execution counts): tests/test_notebooks_clean.py, for every notebook of both editions
    text = "".join("".join(c["source"]) for c in nb["cells"])
    for needle in ("book_seed()", 'torch.device("meta")', "lm.mask_tokens", "lm.generate",
                   "12_inference.ipynb#sampling-temperature-and-top-k",  # chapter 12's control, not a copy
                   "check.exercise_14_1", "check.exercise_14_3", "**Misconception.**"):
        assert needle in text, needle
    assert "explore(family_frame" in text  # its own control: what each family reads (temperature: chapter 12 only)
    assert "explore(sampling" not in text and "check.exercise_14_4" not in text  # RoPE by hand: chapter 15's
    assert "first layer of each stack" not in text  # T5's bias is stored there but added in every layer
    headings = [h for c in nb["cells"] if c["cell_type"] == "markdown"
                for h in ["".join(c["source"]).split("\n", 1)[0]] if h.startswith("## ")]
    assert headings[-3:] == ["## Summary", "## Exercises", "## References"], headings[-3:]


def test_gpt2_token_matrix_is_almost_a_third_and_outweighs_five_layers():
    # prediction 14.1: the token embedding's share of GPT-2 small, and how many layers it outweighs
    D = 768
    layer = 4 * (D * D + D) + (D * 4 * D + 4 * D) + (4 * D * D + D) + 4 * D
    with torch.device("meta"):
        gpt2 = lm.DecoderOnlyLM(50257, d_model=D, nhead=12, num_layers=12, max_len=1024)
    share = 50257 * D / tl.count_parameters(gpt2)
    assert 0.30 < share < 0.32 and 5 < 50257 * D / layer < 6


def test_exercise_14_2_suspect_sees_the_next_token():
    from transformer_lite.book.check.ch14 import suspect_gpt

    torch.manual_seed(0)
    gpt = lm.DecoderOnlyLM(20, d_model=32, nhead=4, num_layers=2, max_len=16).eval()
    suspect = suspect_gpt(gpt)
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    changed = ids.clone()
    changed[0, 4] = 12
    with torch.no_grad():
        assert torch.equal(gpt(ids)[0, :4], gpt(changed)[0, :4])           # the right model: no leak
        moved = (suspect(ids)[0] - suspect(changed)[0]).abs().amax(-1)
    assert (moved[:2] == 0).all() and (moved[2:4] > 0).all()  # position 3 reads token 4; through 2 layers, 2 does
