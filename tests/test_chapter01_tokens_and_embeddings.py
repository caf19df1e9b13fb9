"""Chapter 1 (tokens and embeddings): the chapter's claims, checked through the package.

The toy tokenizer is teaching code that lives only in the notebook; it is read from the notebook
here (not pasted twice).
"""
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import transformer_lite as tl
from notebook_code import code_cell, exec_cell
from transformer_lite.data import PAD, UNK, Vocab, pad_batch

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_tokens_and_embeddings.ipynb"


@pytest.fixture(scope="module")
def tokenize():
    return exec_cell(NOTEBOOK, "def tokenize(", {"re": re}, until="corpus")["tokenize"]


def test_tokenizer_and_vocab(tokenize):
    assert tokenize("The cat sat on the mat.") == ["the", "cat", "sat", "on", "the", "mat", "."]
    assert tokenize("A dog!  Yes") == ["a", "dog", "!", "yes"]
    vocab = Vocab(tokenize("the cat sat on the mat ."))
    ids = vocab.encode(tokenize("The bird sat."))
    assert ids[1] == UNK and ids[0] == vocab.stoi["the"] and min(vocab.stoi[w] for w in ("the", "cat")) == 4
    assert vocab.decode(vocab.encode(tokenize("the cat sat ."))) == "the cat sat ."


def test_lookup_is_one_hot_times_table():
    V, D = 23, 12
    tok = tl.TokenEmbedding(V, D)
    ids = torch.randint(0, V, (3, 7))
    one_hot = F.one_hot(ids, V).float()  # (B, T, V)
    torch.testing.assert_close(tok(ids), one_hot @ tok.weight * math.sqrt(D))
    torch.testing.assert_close(tok(ids), torch.eye(V)[ids] @ tok.weight * math.sqrt(D))
    assert tok(ids).shape == (3, 7, D)


def test_only_rows_of_tokens_in_the_batch_get_a_gradient():
    emb = nn.Embedding(20, 4)
    batch = pad_batch([[5, 6, 7], [9, 5]])
    emb(batch).sum().backward()
    rows = emb.weight.grad.abs().sum(1).nonzero().flatten().tolist()
    assert rows == [PAD, 5, 6, 7, 9]


def test_scale_balances_a_small_initialisation_against_the_positional_encoding():
    torch.manual_seed(0)
    for D in (16, 128, 512):
        pe = tl.sinusoidal_positional_encoding(11, D)[10]
        assert math.isclose(pe.norm().item(), math.sqrt(D / 2), rel_tol=1e-5)
        table = torch.randn(1000, D) / math.sqrt(D)  # N(0, 1/D): rows of length ~1
        unscaled = F.cosine_similarity(table + pe, table, dim=1).mean()
        scaled = F.cosine_similarity(table * math.sqrt(D) + pe, table * math.sqrt(D), dim=1).mean()
        assert scaled > 0.7 and scaled > unscaled
    assert unscaled < 0.1  # at D = 512 the unscaled token is drowned by the position


def test_encoder_input_is_scaled_embedding_plus_pe():
    model = tl.Transformer(30, 30, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=32, dropout=0.0)
    ids = torch.randint(4, 30, (2, 9))
    x = model.src_pos(model.src_embed(ids))
    torch.testing.assert_close(x, model.src_embed.weight[ids] * 4.0 + tl.sinusoidal_positional_encoding(9, 16))


def test_sharing_saves_two_tables():
    kw = dict(d_model=32, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64)
    separate = tl.Transformer(500, 500, **kw)
    shared = tl.Transformer(500, 500, share_embeddings=True, tie_embeddings=True, **kw)
    assert tl.count_parameters(separate) - tl.count_parameters(shared) == 2 * 500 * 32


def _code_cell(startswith):
    return code_cell(NOTEBOOK, startswith)


def test_the_toy_tokenizer_makes_one_token_of_a_chinese_clause(tokenize):
    assert tokenize("我爱你。") == ["我爱你", "。"]
    assert tokenize("我们明天在公园看电视") == ["我们明天在公园看电视"]
    assert len(tokenize("我 爱 你")) == 3


def test_bpe_learns_the_merges_of_sennrich_et_al():
    from collections import Counter

    ns = {"Counter": Counter}
    exec(_code_cell("def most_frequent_pair("), ns)
    words = {tuple(w) + ("</w>",): n for w, n in {"low": 5, "lower": 2, "newest": 6, "widest": 3}.items()}
    merges = []
    for _ in range(10):
        pair = ns["most_frequent_pair"](words)
        merges.append(pair)
        words = ns["merge"](words, pair)
    # The merges of Sennrich et al. (2016), Algorithm 1, on the same corpus; the checks' copy agrees.
    assert merges == [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w"), ("n", "e"), ("ne", "w"),
                      ("new", "est</w>"), ("low", "</w>"), ("w", "i")]
    from transformer_lite.book.check import ch01

    assert ch01.learn_bpe() == merges
    assert ch01.bpe_segment("lowest", merges) == ("low", "est</w>")


def test_the_translators_chinese_side_is_segmented_into_words_by_the_grammar():
    from transformer_lite.book.pretrained import RECIPE
    from transformer_lite.data import all_translation_pairs, translation_task

    task = translation_task(RECIPE.n_train, RECIPE.n_test, seed=RECIPE.data_seed)
    vocab = task.tgt_vocab
    assert {"我们", "图书馆", "苹果", "没有"} <= set(vocab.itos) and "每 天" not in vocab.itos
    for _, zh in all_translation_pairs():
        ids = vocab.encode(zh)
        assert UNK not in ids and len(ids) == len(zh.split())
    assert vocab.encode("我们明天在公园看电视") == [UNK]


def test_the_embedding_factor_gives_unit_entries_only_from_tensor2tensors_init():
    D, V = 512, 1000
    torch.manual_seed(0)
    t2t = torch.randn(V, D) / math.sqrt(D)
    assert abs((t2t * math.sqrt(D)).std().item() - 1) < 0.01
    assert abs((nn.Embedding(V, D).weight.detach() * math.sqrt(D)).std().item() - math.sqrt(D)) < 0.5
    # tl.Transformer's tables are Xavier-uniform: std sqrt(2 / (V + D)), as the chapter's check assumes
    model = tl.Transformer(V, V, d_model=D, nhead=8, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64)
    assert abs(model.src_embed.weight.std().item() - math.sqrt(2 / (V + D))) < 0.001


def test_adam_moves_a_row_whose_token_left_the_batch_sgd_does_not():
    # Prediction 1.1: no gradient for row 0 in step 2; SGD leaves it, Adam's momentum moves it.
    for optimizer_class, moves in ((torch.optim.SGD, False), (torch.optim.Adam, True)):
        torch.manual_seed(0)
        table = nn.Embedding(6, 4)
        optimizer = optimizer_class(table.parameters(), lr=0.1)
        for ids in (torch.tensor([[0, 1]]), torch.tensor([[2, 3]])):
            before = table.weight.detach().clone()
            optimizer.zero_grad()
            table(ids).pow(2).sum().backward()
            optimizer.step()
        assert table.weight.grad[0].abs().sum() == 0
        assert bool((table.weight.detach()[0] != before[0]).any()) == moves


def test_the_trained_translator_gives_a_noun_and_its_plural_the_nearest_rows():
    import torch.nn.functional as F

    from transformer_lite.book.pretrained import tiny_translator

    model, task, _ = tiny_translator()
    vocab = task.src_vocab
    unit = F.normalize(model.src_embed.weight.detach(), dim=1)
    sim = unit @ unit.T
    sim.fill_diagonal_(-2)
    sim[:, :4] = -2                                   # the special tokens are not words
    for singular, plural in [("cat", "cats"), ("dog", "dogs"), ("bird", "birds"), ("book", "books"),
                             ("car", "cars"), ("apple", "apples")]:
        a, b = vocab.stoi[singular], vocab.stoi[plural]
        assert sim[a].argmax() == b and sim[b].argmax() == a
        # the reason: both forms are translated to one Chinese word
        shared = set.intersection(*(set(zh.split()) for en, zh in task.train_pairs
                                    if {singular, plural} & set(en.split())))
        assert len(shared) == 1


def test_encoding_split_on_spaces_makes_a_third_of_the_corpus_unknown():
    from transformer_lite.book.check import ch01

    assert abs(ch01._buggy_share() - 6 / 17) < 1e-9
