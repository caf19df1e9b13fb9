"""transformer_lite.data: vocabularies, padding, the copy/reverse tasks, the generated translation task."""
import pytest
import torch

from transformer_lite.data import (
    BOS,
    EOS,
    PAD,
    UNK,
    TranslationData,
    Vocab,
    all_translation_pairs,
    copy_task,
    pad_batch,
    reverse_task,
    translation_task,
)


@pytest.fixture(scope="module")
def data():
    return translation_task(3000, 400, seed=0)


def test_special_ids():
    assert (PAD, BOS, EOS, UNK) == (0, 1, 2, 3)
    v = Vocab(["i", "have", "a", "cat", "a"])
    assert v.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert len(v) == 8  # 4 specials + 4 distinct words (the repeated "a" once)
    assert v.stoi["i"] == 4 and v.itos[7] == "cat"


def test_vocab_encode_decode_round_trip():
    v = Vocab("i have a cat".split())
    assert v.encode("i have a cat") == [4, 5, 6, 7]
    assert v.encode(["i", "have"], add_bos_eos=True) == [BOS, 4, 5, EOS]
    assert v.encode("i have a dog") == [4, 5, 6, UNK]
    assert v.decode([BOS, 4, 5, 6, 7, EOS, PAD, PAD]) == "i have a cat"
    assert v.decode(torch.tensor([BOS, 4, EOS, 7, 7])) == "i"  # stops at EOS
    assert v.decode([PAD, 4, BOS, 5], join=False) == ["i", "have"]  # skips PAD and BOS
    assert "cat" in v and "dog" not in v


@pytest.mark.parametrize("bad, exc, name", [
    (lambda v: Vocab("a b c"), TypeError, "tokens"),
    (lambda v: Vocab(["a", 1]), TypeError, "tokens"),
    (lambda v: v.encode(5), TypeError, "tokens"),
    (lambda v: v.encode(["a", None]), TypeError, "tokens"),
    (lambda v: v.decode("1 2"), TypeError, "ids"),
    (lambda v: v.decode([1, 2.0]), TypeError, "ids"),
    (lambda v: v.decode([99]), ValueError, "ids"),
    (lambda v: v.decode([-1]), ValueError, "ids"),
    (lambda v: v.decode(torch.zeros(2, 2, dtype=torch.long)), ValueError, "ids"),
])
def test_vocab_bad_input(bad, exc, name):
    v = Vocab(["a"])
    with pytest.raises(exc, match=name):
        bad(v)


def test_pad_batch():
    out = pad_batch([[5, 6, 7], [8], torch.tensor([9, 10])])
    assert out.dtype == torch.long
    assert out.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert pad_batch([[1], [2, 3]], pad_id=-1).tolist() == [[1, -1], [2, 3]]


@pytest.mark.parametrize("seqs, pad_id, exc, name", [
    ([], 0, ValueError, "seqs"),
    ("abc", 0, TypeError, "seqs"),
    (torch.ones(2, 2), 0, TypeError, "seqs"),
    ([[1]], 0.5, TypeError, "pad_id"),
])
def test_pad_batch_bad_input(seqs, pad_id, exc, name):
    with pytest.raises(exc, match=name):
        pad_batch(seqs, pad_id)


@pytest.mark.parametrize("task", [copy_task, reverse_task])
def test_copy_and_reverse_tasks(task):
    src, tgt = task(50, 7, 13, seed=3)
    assert src.shape == (50, 7) and tgt.shape == (50, 9)
    assert src.dtype == tgt.dtype == torch.long
    assert int(src.min()) >= 4 and int(src.max()) < 13  # never a special token
    assert (tgt[:, 0] == BOS).all() and (tgt[:, -1] == EOS).all()
    body = tgt[:, 1:-1]
    assert torch.equal(body, src if task is copy_task else src.flip(1))
    src2, _ = task(50, 7, 13, seed=3)
    assert torch.equal(src, src2)  # same seed, same data
    assert not torch.equal(src, task(50, 7, 13, seed=4)[0])


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(num_examples=0, seq_len=3, vocab_size=10), ValueError, "num_examples"),
    (dict(num_examples=5, seq_len=0, vocab_size=10), ValueError, "seq_len"),
    (dict(num_examples=5, seq_len=3, vocab_size=4), ValueError, "vocab_size"),
    (dict(num_examples=5, seq_len=3, vocab_size=10, seed=1.5), TypeError, "seed"),
    (dict(num_examples=5.0, seq_len=3, vocab_size=10), TypeError, "num_examples"),
])
def test_copy_task_bad_input(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        copy_task(**kwargs)


def test_translation_task_shapes_and_round_trip(data):
    assert isinstance(data, TranslationData)
    assert len(data.train_pairs) == 3000 and len(data.test_pairs) == 400
    assert data.train_src.shape[0] == data.train_tgt.shape[0] == 3000
    assert data.test_src.shape[0] == data.test_tgt.shape[0] == 400
    assert (data.train_tgt[:, 0] == BOS).all()
    for (en, zh), s, t in zip(data.train_pairs[:50], data.train_src, data.train_tgt):
        assert data.src_vocab.decode(s) == en
        assert data.tgt_vocab.decode(t) == zh
        assert EOS in t.tolist() and UNK not in s.tolist() and UNK not in t.tolist()


def test_translation_held_out_is_disjoint_and_deduplicated(data):
    train_en = [en for en, _ in data.train_pairs]
    test_en = [en for en, _ in data.test_pairs]
    assert len(set(train_en)) == len(train_en) and len(set(test_en)) == len(test_en)
    assert not set(train_en) & set(test_en)


def test_translation_task_is_small_and_short(data):
    assert 50 <= len(data.src_vocab) <= 100 and 50 <= len(data.tgt_vocab) <= 100
    pairs = all_translation_pairs()
    assert max(len(en.split()) for en, _ in pairs) <= 10
    assert max(len(zh.split()) for _, zh in pairs) <= 10
    assert data.train_src.shape[1] <= 10 and data.train_tgt.shape[1] <= 11  # + BOS and EOS


@pytest.mark.parametrize("en, zh", [
    ("i have a cat", "我 有 一 只 猫"),
    ("i read books today", "我 今天 看 书"),  # the time word moves to the front
    ("she eats rice at school", "她 在 学校 吃 饭"),  # the place phrase moves before the verb
    ("i have two big dogs", "我 有 两 只 大 狗"),  # number + measure word + adjective
    ("he has an old car", "他 有 一 辆 旧 车"),
    ("we do not drink tea at home", "我们 不 在 家 喝 茶"),  # negation before the place phrase
    ("they ate noodles yesterday", "他们 昨天 吃 了 面条"),  # past tense: 了
    ("she did not eat rice yesterday", "她 昨天 没 吃 饭"),
    ("will you play football tomorrow ?", "你 明天 踢 足球 吗 ?"),  # a yes/no question
    ("does he watch tv in the park ?", "他 在 公园 看 电视 吗 ?"),
    ("i do not have a cat", "我 没有 猫"),
    ("the dog is not big", "狗 不 大"),
])
def test_translation_grammar(en, zh):
    assert dict(all_translation_pairs())[en] == zh


def test_translation_task_deterministic_and_seeded():
    a, b, c = translation_task(100, 20, seed=1), translation_task(100, 20, seed=1), translation_task(100, 20, seed=2)
    assert a.train_pairs == b.train_pairs and torch.equal(a.train_src, b.train_src)
    assert a.train_pairs != c.train_pairs
    assert a.src_vocab.itos == c.src_vocab.itos  # the vocabulary does not depend on the split


def test_encode_source(data):
    ids = data.encode_source(["i have a cat", "she eats rice at school today"])
    assert ids.shape == (2, 6) and ids[0, 4:].tolist() == [PAD] * 2


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(n_train=0, n_test=10), ValueError, "n_train"),
    (dict(n_train=10, n_test=0), ValueError, "n_test"),
    (dict(n_train=10**6, n_test=10), ValueError, "n_train"),
    (dict(n_train=10, n_test=10, seed="0"), TypeError, "seed"),
])
def test_translation_task_bad_input(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        translation_task(**kwargs)
