"""transformer_lite.baselines, the data-split helpers, and the shipped capstone measurements (chapter 13)."""
import pytest
import torch

from transformer_lite.baselines import NULL, DictionaryTranslator, GRUTranslator, ibm1, transformer_without_positions
from transformer_lite.data import (
    BOS,
    EOS,
    PAD,
    all_translation_pairs,
    combination_split,
    translation_split,
    translation_task,
)
from transformer_lite.decoding import exact_match, greedy_decode
from transformer_lite.model import Transformer, TransformerConfig, count_parameters
from transformer_lite.training import train

PAIRS = [("i have a cat", "我 有 一 只 猫"), ("i have a dog", "我 有 一 只 狗"), ("you have a cat", "你 有 一 只 猫"),
         ("you eat rice today", "你 今天 吃 饭"), ("i eat rice today", "我 今天 吃 饭"), ("i eat rice", "我 吃 饭")]


# -- IBM Model 1 and the dictionary ----------------------------------------------------------

def test_ibm1_rows_are_distributions_and_find_the_obvious_words():
    t = ibm1(PAIRS, iterations=20)
    for e, row in t.items():
        assert abs(sum(row.values()) - 1) < 1e-9, e
    assert NULL in t
    assert max(t["cat"], key=t["cat"].get) == "猫" and max(t["today"], key=t["today"].get) == "今天"


def test_dictionary_keeps_the_english_order_unless_told_to_reorder():
    word_by_word = DictionaryTranslator(PAIRS, threshold=0.3)
    assert word_by_word.translate("you eat rice today").split()[-1] == "今天"  # English order: today last
    ordered = DictionaryTranslator(PAIRS, threshold=0.3, reorder=True)
    assert ordered.translate("you eat rice today") == "你 今天 吃 饭"       # learned: 今天 before 吃
    assert ordered.exact_match(PAIRS[3:5]) == 1.0


def test_dictionary_on_the_real_task_learns_words_but_not_context():
    data = translation_task(1000, 200, seed=0)
    d = DictionaryTranslator(data.train_pairs, threshold=0.4, reorder=True)
    assert "猫" in d.table["cat"] and "两" in d.table["two"]
    assert 0.3 < d.exact_match(data.test_pairs) < 0.95  # a strong baseline, but not the grammar


def test_dictionary_rejects_bad_input():
    with pytest.raises(TypeError, match="pairs"):
        DictionaryTranslator("i have a cat")
    with pytest.raises(ValueError, match="pairs"):
        ibm1([])
    with pytest.raises(ValueError, match="threshold"):
        DictionaryTranslator(PAIRS, threshold=1.5)
    with pytest.raises(TypeError, match="sentence"):
        DictionaryTranslator(PAIRS).translate(["i"])


# -- the Transformer without positions --------------------------------------------------------

def _config():
    return TransformerConfig(src_vocab_size=12, tgt_vocab_size=11, d_model=16, nhead=2, num_encoder_layers=1,
                             num_decoder_layers=1, dim_feedforward=32, dropout=0.0, max_len=16)


def test_without_positions_the_encoder_reads_a_bag_of_words():
    torch.manual_seed(0)
    model = transformer_without_positions(_config()).eval()
    src = torch.tensor([[4, 5, 6, 7]])
    memory, memory_permuted = model.encode(src), model.encode(src[:, [2, 0, 3, 1]])
    assert torch.allclose(memory[:, [2, 0, 3, 1]], memory_permuted, atol=1e-5)  # permutation-equivariant
    torch.manual_seed(0)
    with_positions = Transformer(_config()).eval()
    assert not torch.allclose(with_positions.encode(src)[:, [2, 0, 3, 1]], with_positions.encode(src[:, [2, 0, 3, 1]]),
                              atol=1e-3)
    assert count_parameters(model) == count_parameters(with_positions)


def test_without_positions_decodes_with_and_without_cache():
    torch.manual_seed(0)
    model = transformer_without_positions(_config())
    src = torch.tensor([[4, 5, 6, PAD], [7, 8, 4, 5]])
    assert torch.equal(greedy_decode(model, src, 8, BOS, EOS), greedy_decode(model, src, 8, BOS, EOS, use_cache=False))
    with pytest.raises(TypeError, match="config"):
        transformer_without_positions({"d_model": 16})


# -- the GRU encoder-decoder -----------------------------------------------------------------

def test_gru_shapes_cache_and_padding():
    torch.manual_seed(0)
    model = GRUTranslator(12, 11, embed=8, hidden=16, dropout=0.0).eval()
    src = torch.tensor([[4, 5, 6, PAD], [7, 8, 4, 5]])
    tgt = torch.tensor([[BOS, 4, 5], [BOS, 6, 7]])
    assert model(src, tgt).shape == (2, 3, 11)
    assert torch.equal(greedy_decode(model, src, 8, BOS, EOS), greedy_decode(model, src, 8, BOS, EOS, use_cache=False))
    # a padded row translates as the same sentence without its padding
    alone = model(src[:1, :3], tgt[:1])
    assert torch.allclose(model(src, tgt)[:1], alone, atol=1e-5)


def test_gru_learns_to_copy_with_the_books_training_loop():
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, 10, (256, 4), generator=g)
    tgt = torch.cat([torch.full((256, 1), BOS), src, torch.full((256, 1), EOS)], 1)
    torch.manual_seed(0)
    model = GRUTranslator(10, 10, embed=16, hidden=32, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    history = train(model, src, tgt, steps=150, batch_size=32, optimizer=opt, progress=False, clip_grad_norm=1.0)
    assert history.loss[-1] < 0.3 * history.loss[0]
    assert exact_match(model, src[:64], tgt[:64], BOS, EOS) > 0.5


def test_gru_rejects_bad_arguments():
    with pytest.raises(ValueError, match="hidden"):
        GRUTranslator(10, 10, hidden=15)
    with pytest.raises(TypeError, match="embed"):
        GRUTranslator(10, 10, embed=1.5)


# -- the data-split helpers ------------------------------------------------------------------

def test_translation_split_keeps_the_grammars_vocabularies_and_refuses_overlap():
    data = translation_task(100, 50, seed=0)
    again = translation_split(data.train_pairs, data.test_pairs)
    assert again.src_vocab.itos == data.src_vocab.itos and again.tgt_vocab.itos == data.tgt_vocab.itos
    assert torch.equal(again.test_tgt, data.test_tgt)
    with pytest.raises(ValueError, match="share no English sentence"):
        translation_split(data.train_pairs, data.train_pairs[:3])


def test_combination_split_holds_out_every_pair_with_the_combination():
    def is_test(en, zh):
        return "三" in zh.split() and "本" in zh.split()

    data = combination_split(is_test, n_train=500, seed=1)
    assert len(data.train_pairs) == 500 and not any(is_test(*p) for p in data.train_pairs)
    assert data.test_pairs == [p for p in all_translation_pairs() if is_test(*p)]
    with pytest.raises(ValueError, match="at least one"):
        combination_split(lambda en, zh: False)
    with pytest.raises(TypeError, match="is_test"):
        combination_split("three")


def test_capstone_builds_each_kind_of_model_with_the_translators_vocabularies():
    from transformer_lite.book.capstone import new_model, train_model
    data = translation_task(200, 50, seed=0)
    for kind in ("transformer", "no_positions", "gru"):
        m = new_model(kind, data)
        assert m.tgt_vocab_size == len(data.tgt_vocab) and m.src_vocab_size == len(data.src_vocab)
    with pytest.raises(ValueError, match="kind"):
        new_model("lstm", data)
    seen = []
    model, history = train_model("gru", data, steps=4, eval_fn=lambda m: seen.append(1) or 0.0, eval_every=2)
    assert len(history.loss) == 4 and [s for s, _ in history.evals] == [2, 4] and len(seen) == 2
    assert not model.training
