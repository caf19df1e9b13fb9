"""Vocabularies, padding, and the toy tasks the book trains on.

Token ids 0-3 are reserved in every vocabulary:

    PAD = 0   fills a short sequence up to the batch's length (masked out everywhere)
    BOS = 1   "beginning of sentence": the decoder's first input
    EOS = 2   "end of sentence": the decoder's last output
    UNK = 3   any word the vocabulary does not know

Three tasks, all generated on the spot (nothing is downloaded):

* :func:`copy_task` and :func:`reverse_task` -- the target is the source, or the source
  backwards. A model must learn to attend to the right source position.
* :func:`translation_task` -- short English sentences and their Chinese translations
  (words separated by spaces), from a small grammar with real word-order differences:
  time words move to the front ("i read books today" -> "我 今天 看 书"), place phrases
  move before the verb ("she eats rice at school" -> "她 在 学校 吃 饭"), numbers need a
  measure word ("i have two big dogs" -> "我 有 两 只 大 狗"), and negation, tense and
  yes/no questions change the words around the verb.
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from ._checks import check_int, check_positive_int

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")  # the words of ids 0..3


class Vocab:
    """A word <-> id table with the four special tokens at ids 0..3.

    ``Vocab(["i", "have", "a", "cat"])`` gives ids 4, 5, 6, 7 to the words, in the
    order first seen (repeats and the special words themselves are skipped).

    Attributes: ``itos`` (list: id -> word) and ``stoi`` (dict: word -> id).
    """

    def __init__(self, tokens: Iterable[str]):
        if isinstance(tokens, str):
            raise TypeError("tokens must be an iterable of words (e.g. a list of str), got a single str")
        self.itos: list[str] = list(SPECIALS)
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}
        for w in tokens:
            if not isinstance(w, str):
                raise TypeError(f"tokens must contain only str, got {type(w).__name__} ({w!r})")
            if w not in self.stoi:
                self.stoi[w] = len(self.itos)
                self.itos.append(w)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def __repr__(self) -> str:
        return f"Vocab({len(self)} words: {' '.join(self.itos[4:12])}{' ...' if len(self) > 12 else ''})"

    def encode(self, tokens: str | Sequence[str], add_bos_eos: bool = False) -> list[int]:
        """Words -> ids. A str is split on whitespace; unknown words become ``UNK``.

        ``add_bos_eos=True`` wraps the result as ``[BOS, ..., EOS]`` (a decoder's target).
        """
        if isinstance(tokens, str):
            tokens = tokens.split()
        elif not isinstance(tokens, (list, tuple)):
            raise TypeError(f"tokens must be a str or a list of str, got {type(tokens).__name__}")
        ids = []
        for w in tokens:
            if not isinstance(w, str):
                raise TypeError(f"tokens must contain only str, got {type(w).__name__} ({w!r})")
            ids.append(self.stoi.get(w, UNK))
        return [BOS, *ids, EOS] if add_bos_eos else ids

    def decode(self, ids, join: bool = True) -> str | list[str]:
        """Ids -> words: stops at the first ``EOS``, skips ``PAD`` and ``BOS``.

        ``ids`` is a list of ints or a 1-D tensor. Returns the words joined by spaces,
        or the list of words when ``join=False``.
        """
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"ids must be 1-D (one sequence), got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        elif not isinstance(ids, (list, tuple)):
            raise TypeError(f"ids must be a list of ints or a 1-D tensor, got {type(ids).__name__}")
        words = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"ids must contain only ints, got {type(i).__name__} ({i!r})")
            if not 0 <= i < len(self):
                raise ValueError(f"ids must lie in [0, {len(self)}) (the vocabulary size), got {i}")
            if i == EOS:
                break
            if i in (PAD, BOS):
                continue
            words.append(self.itos[i])
        return " ".join(words) if join else words


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = PAD) -> torch.Tensor:
    """A list of N id sequences of unequal length -> one LongTensor (N, L), padded on the right.

    Shape: L = the longest sequence's length.
    """
    if isinstance(seqs, (str, torch.Tensor)) or not isinstance(seqs, (list, tuple)):
        raise TypeError(f"seqs must be a list of id sequences, got {type(seqs).__name__}")
    if len(seqs) == 0:
        raise ValueError("seqs must hold at least one sequence, got an empty list")
    check_int("pad_id", pad_id)
    rows = [s.tolist() if isinstance(s, torch.Tensor) else list(s) for s in seqs]
    L = max(len(r) for r in rows)
    out = torch.full((len(rows), L), pad_id, dtype=torch.long)
    for n, r in enumerate(rows):
        if r:
            out[n, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def trim_padding(ids: torch.Tensor, pad_id: int = PAD, min_len: int = 1) -> torch.Tensor:
    """Drop the trailing columns that are padding in every row, keeping at least ``min_len`` columns.

    Shape: (N, L) -> (N, L') with L' <= L. A batch drawn from a padded dataset is often much shorter
    than the dataset's longest row: trimming makes training faster and decoded outputs tidier.
    """
    used = (ids != pad_id).any(dim=0).nonzero()  # indices of the columns that hold a real token
    last = int(used.max()) + 1 if used.numel() else 0
    return ids[:, : max(last, min_len)]


# -- copy and reverse ------------------------------------------------------------------------

def _symbol_task(num_examples, seq_len, vocab_size, seed, reverse):
    check_positive_int("num_examples", num_examples)
    check_positive_int("seq_len", seq_len)
    check_positive_int("vocab_size", vocab_size, minimum=5)
    check_int("seed", seed)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab_size, (num_examples, seq_len), generator=g)  # (N, L), ids >= 4
    body = src.flip(1) if reverse else src
    bos = torch.full((num_examples, 1), BOS, dtype=torch.long)
    eos = torch.full((num_examples, 1), EOS, dtype=torch.long)
    tgt = torch.cat([bos, body, eos], dim=1)  # (N, L + 2)
    return src, tgt


def copy_task(num_examples: int, seq_len: int, vocab_size: int, seed: int = 0):
    """Random sequences and themselves: src (N, L), tgt (N, L + 2) = BOS + src + EOS.

    Token ids are drawn uniformly from [4, vocab_size) (0..3 are the special tokens).
    """
    return _symbol_task(num_examples, seq_len, vocab_size, seed, reverse=False)


def reverse_task(num_examples: int, seq_len: int, vocab_size: int, seed: int = 0):
    """Random sequences and their reversal: src (N, L), tgt (N, L + 2) = BOS + src[::-1] + EOS."""
    return _symbol_task(num_examples, seq_len, vocab_size, seed, reverse=True)


# -- a tiny English -> Chinese translation task ----------------------------------------------
# Subjects: (English, Chinese, third person singular?)
_SUBJECTS = [("i", "我", False), ("you", "你", False), ("he", "他", True), ("she", "她", True),
             ("we", "我们", False), ("they", "他们", False), ("the teacher", "老师", True)]
# Nouns for "have": (singular, plural, Chinese, measure word)
_NOUNS = [("cat", "cats", "猫", "只"), ("dog", "dogs", "狗", "只"), ("bird", "birds", "鸟", "只"),
          ("book", "books", "书", "本"), ("car", "cars", "车", "辆"), ("apple", "apples", "苹果", "个")]
_NUMBERS = [("a", "一"), ("two", "两"), ("three", "三"), ("four", "四"), ("five", "五")]
_ADJECTIVES = [("big", "大"), ("small", "小"), ("new", "新"), ("old", "旧"), ("red", "红")]
# Verb phrases: (base, 3rd person, past, object, Chinese verb, Chinese object)
_ACTIONS = [("eat", "eats", "ate", "rice", "吃", "饭"), ("eat", "eats", "ate", "noodles", "吃", "面条"),
            ("drink", "drinks", "drank", "tea", "喝", "茶"), ("drink", "drinks", "drank", "water", "喝", "水"),
            ("read", "reads", "read", "books", "看", "书"), ("watch", "watches", "watched", "tv", "看", "电视"),
            ("play", "plays", "played", "football", "踢", "足球"),
            ("learn", "learns", "learned", "chinese", "学", "中文"),
            ("write", "writes", "wrote", "letters", "写", "信"),
            ("buy", "buys", "bought", "fruit", "买", "水果")]
_PLACES = [("at school", "学校"), ("at home", "家"), ("in the park", "公园"), ("in the library", "图书馆")]
# Time words and the tense they bring: "present" / "future" (will) / "past"
_TIMES = [(None, None, "present"), ("today", "今天", "present"), ("every day", "每 天", "present"),
          ("tomorrow", "明天", "future"), ("yesterday", "昨天", "past")]
# "X is ADJ": (English subject, Chinese subject)
_THINGS = [("the cat", "猫"), ("the dog", "狗"), ("the book", "书"), ("the car", "车"),
           ("the park", "公园"), ("the school", "学校")]


def _have_sentences():
    """"S have/has [a|NUM] [ADJ] N" and "S do/does not have N"."""
    for (s_en, s_zh, third), (sg, pl, n_zh, mw) in itertools.product(_SUBJECTS, _NOUNS):
        have = "has" if third else "have"
        for (num_en, num_zh), adj in itertools.product(_NUMBERS, [None, *_ADJECTIVES]):
            noun = sg if num_en == "a" else pl
            a_en, a_zh = (adj[0] + " ", adj[1] + " ") if adj else ("", "")
            if num_en == "a" and (a_en or noun)[0] in "aeiou":
                num_en = "an"  # an old car, an apple
            # Chinese puts a measure word between the number and the noun: 两 只 大 狗
            yield f"{s_en} {have} {num_en} {a_en}{noun}", f"{s_zh} 有 {num_zh} {mw} {a_zh}{n_zh}"
        do = "does" if third else "do"
        # Negation drops the number: "i do not have a cat" -> 我 没有 猫
        article = "an" if sg[0] in "aeiou" else "a"
        yield f"{s_en} {do} not have {article} {sg}", f"{s_zh} 没有 {n_zh}"
        yield f"{s_en} {do} not have {pl}", f"{s_zh} 没有 {n_zh}"


def _action_sentences():
    """"S V O [PLACE] [TIME]", with negation, tense and yes/no questions."""
    for (s_en, s_zh, third), act, place, (t_en, t_zh, tense), negate, ask in itertools.product(
            _SUBJECTS, _ACTIONS, [None, *_PLACES], _TIMES, (False, True), (False, True)):
        base, third_form, past, obj, v_zh, o_zh = act
        if ask and (negate or s_en == "i"):
            continue  # keep questions simple: "do you eat rice ?"
        if ask and tense == "past":
            continue
        p_en = f" {place[0]}" if place else ""
        t_en_ = f" {t_en}" if t_en else ""
        # English verb group: tense, person, negation and question all change it.
        if tense == "future":
            if ask:
                en = f"will {s_en} {base} {obj}{p_en}{t_en_} ?"
            else:
                en = f"{s_en} will{' not' if negate else ''} {base} {obj}{p_en}{t_en_}"
        elif tense == "past":
            en = f"{s_en} did not {base} {obj}{p_en}{t_en_}" if negate else f"{s_en} {past} {obj}{p_en}{t_en_}"
        else:
            do = "does" if third else "do"
            if ask:
                en = f"{do} {s_en} {base} {obj}{p_en}{t_en_} ?"
            elif negate:
                en = f"{s_en} {do} not {base} {obj}{p_en}{t_en_}"
            else:
                en = f"{s_en} {third_form if third else base} {obj}{p_en}{t_en_}"
        # Chinese order: subject, time, negation, place ("在 学校"), verb (+ 了 in the past), object, 吗.
        zh = [s_zh]
        if t_zh:
            zh.append(t_zh)
        if negate:
            zh.append("没" if tense == "past" else "不")
        if place:
            zh += ["在", place[1]]
        zh.append(v_zh)
        if tense == "past" and not negate:
            zh.append("了")
        zh.append(o_zh)
        if ask:
            zh += ["吗", "?"]
        yield en, " ".join(zh)


def _adjective_sentences():
    """"the N is [not] ADJ" -> "N 很 ADJ" / "N 不 ADJ"."""
    for (n_en, n_zh), (a_en, a_zh) in itertools.product(_THINGS, _ADJECTIVES):
        yield f"{n_en} is {a_en}", f"{n_zh} 很 {a_zh}"
        yield f"{n_en} is not {a_en}", f"{n_zh} 不 {a_zh}"


# -- the laboratory's extension: subject-object swaps (chapter 13) ------------------------------
# Not part of translation_task (the shipped translator's data): only all_translation_pairs(swaps=True) has them.
# Animate nouns: (English, Chinese)
_ACTORS = [("the cat", "猫"), ("the dog", "狗"), ("the bird", "鸟"), ("the teacher", "老师"),
           ("the child", "孩子"), ("the student", "学生")]
# Transitive verbs: (base, 3rd person, past, Chinese, Chinese past). A completed action takes 了 (猫 追 了 狗); a
# state does not (猫 喜欢 狗 "the cat liked the dog": 喜欢 了 reads as "came to like"), nor does 跟着 "follow", which
# describes the ongoing manner (bare 跟 reads as "with").
_TRANSITIVE = [("see", "sees", "saw", "看见", "看见 了"), ("like", "likes", "liked", "喜欢", "喜欢"),
               ("chase", "chases", "chased", "追", "追 了"), ("bite", "bites", "bit", "咬", "咬 了"),
               ("help", "helps", "helped", "帮", "帮 了"), ("follow", "follows", "followed", "跟着", "跟着")]


def _swap_sentences():
    """"the A V the B [TIME]" -> "A [TIME] V [了] B": who does what to whom is only in the word order.

    Yields the sentences of each (A, B) noun pair next to those of (B, A): the same words, another meaning.
    """
    forms = [("{a} {v3} {b}", "{a} {v} {b}"), ("{a} {v3} {b} every day", "{a} 每 天 {v} {b}"),
             ("{a} {past} {b}", "{a} {v_past} {b}"), ("{a} {past} {b} yesterday", "{a} 昨天 {v_past} {b}"),
             ("{a} will {base} {b} tomorrow", "{a} 明天 {v} {b}")]
    for i, j in itertools.combinations(range(len(_ACTORS)), 2):
        for (base, v3, past, v, v_past), (f_en, f_zh) in itertools.product(_TRANSITIVE, forms):
            for (a_en, a_zh), (b_en, b_zh) in ((_ACTORS[i], _ACTORS[j]), (_ACTORS[j], _ACTORS[i])):
                yield (f_en.format(a=a_en, b=b_en, base=base, v3=v3, past=past),
                       f_zh.format(a=a_zh, b=b_zh, v=v, v_past=v_past))


def subject_object_swaps() -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The laboratory's swap pairs: ``[((en, zh), (en_swapped, zh_swapped)), ...]``.

    The two English sentences of a pair hold the same words (the same bag of words, e.g. "the cat sees
    the dog" and "the dog sees the cat") and their translations differ (猫 看见 狗 / 狗 看见 猫).
    """
    sentences = list(_swap_sentences())
    return [(sentences[k], sentences[k + 1]) for k in range(0, len(sentences), 2)]


MAX_WORDS = 10  # longer English sentences are left out, to keep the task small


def all_translation_pairs(swaps: bool = False) -> list[tuple[str, str]]:
    """Every (English, Chinese) sentence pair the grammar can make, each English sentence once.

    ``swaps=True`` appends the laboratory's subject-object swaps (:func:`subject_object_swaps`); the book's
    translator (:func:`translation_task`) is trained on the grammar without them.
    """
    if not isinstance(swaps, bool):
        raise TypeError(f"swaps must be a bool, got {type(swaps).__name__} ({swaps!r})")
    seen, pairs = set(), []
    parts = [_have_sentences(), _action_sentences(), _adjective_sentences()] + ([_swap_sentences()] if swaps else [])
    for en, zh in itertools.chain(*parts):
        if en not in seen and len(en.split()) <= MAX_WORDS:
            seen.add(en)
            pairs.append((en, zh))
    return pairs


@dataclass
class TranslationData:
    """The translation task: vocabularies, sentence pairs, and the same pairs as padded id tensors.

    Shape: train_src (N, S) source ids (no BOS/EOS), train_tgt (N, T) = BOS + ids + EOS,
    both padded with PAD; test_src / test_tgt likewise for the held-out pairs.
    """

    src_vocab: Vocab
    tgt_vocab: Vocab
    train_pairs: list  # [(English, Chinese), ...]
    test_pairs: list  # held out: no English sentence here occurs in train_pairs
    train_src: torch.Tensor
    train_tgt: torch.Tensor
    test_src: torch.Tensor
    test_tgt: torch.Tensor

    def encode_source(self, sentences: str | Sequence[str]) -> torch.Tensor:
        """English sentence(s) -> padded source ids (B, S), ready for ``model.encode``."""
        if isinstance(sentences, str):
            sentences = [sentences]
        return pad_batch([self.src_vocab.encode(s) for s in sentences])


def translation_task(n_train: int = 4000, n_test: int = 500, seed: int = 0) -> TranslationData:
    """A generated English -> Chinese translation task with word reordering (see the module docstring).

    All distinct sentences of the grammar are shuffled with ``seed``; the first ``n_test``
    are held out for testing and the next ``n_train`` are for training, so no test
    sentence is ever seen in training. Sentences have at most 10 English and 9 Chinese words.
    """
    check_positive_int("n_train", n_train)
    check_positive_int("n_test", n_test)
    check_int("seed", seed)
    pairs = all_translation_pairs()
    if n_train + n_test > len(pairs):
        raise ValueError(f"n_train + n_test must be at most {len(pairs)} (the distinct sentences of the grammar), "
                         f"got {n_train} + {n_test} = {n_train + n_test}")
    # Vocabularies from the whole grammar, in a fixed order, so they do not depend on the split.
    src_vocab = Vocab(w for en, _ in pairs for w in en.split())
    tgt_vocab = Vocab(w for _, zh in pairs for w in zh.split())
    rng = random.Random(seed)
    rng.shuffle(pairs)
    test_pairs, train_pairs = pairs[:n_test], pairs[n_test:n_test + n_train]

    def tensors(ps):
        src = pad_batch([src_vocab.encode(en) for en, _ in ps])  # (N, S)
        tgt = pad_batch([tgt_vocab.encode(zh, add_bos_eos=True) for _, zh in ps])  # (N, T)
        return src, tgt

    train_src, train_tgt = tensors(train_pairs)
    test_src, test_tgt = tensors(test_pairs)
    return TranslationData(src_vocab, tgt_vocab, train_pairs, test_pairs, train_src, train_tgt, test_src, test_tgt)


def translation_split(train_pairs: Sequence[tuple[str, str]], test_pairs: Sequence[tuple[str, str]],
                      swaps: bool = False) -> TranslationData:
    """A :class:`TranslationData` from pairs split by hand; the vocabularies are the whole grammar's, as in
    :func:`translation_task` (so ids mean the same words in every split), with the words of the subject-object
    swaps too when ``swaps=True`` (chapter 13's laboratory).

    Raises ``ValueError`` if an English sentence is in both lists.
    """
    for name, ps in (("train_pairs", train_pairs), ("test_pairs", test_pairs)):
        if isinstance(ps, str) or not isinstance(ps, (list, tuple)) or not ps:
            raise TypeError(f"{name} must be a non-empty list of (English, Chinese) pairs, got {ps!r:.60}")
    shared = {en for en, _ in train_pairs} & {en for en, _ in test_pairs}
    if shared:
        raise ValueError(f"test_pairs must share no English sentence with train_pairs, got {len(shared)} shared, "
                         f"e.g. {sorted(shared)[0]!r}")
    pairs = all_translation_pairs(swaps)
    src_vocab = Vocab(w for en, _ in pairs for w in en.split())
    tgt_vocab = Vocab(w for _, zh in pairs for w in zh.split())

    def tensors(ps):
        return (pad_batch([src_vocab.encode(en) for en, _ in ps]),
                pad_batch([tgt_vocab.encode(zh, add_bos_eos=True) for _, zh in ps]))

    train_src, train_tgt = tensors(train_pairs)
    test_src, test_tgt = tensors(test_pairs)
    return TranslationData(src_vocab, tgt_vocab, list(train_pairs), list(test_pairs), train_src, train_tgt,
                           test_src, test_tgt)


def combination_split(is_test, n_train: int = 4000, seed: int = 0) -> TranslationData:
    """A systematic split: every sentence pair with ``is_test(en, zh)`` true is held out, so the combination
    it describes (say, "three" with the measure word 本) never occurs in training.

    The test set is all of those pairs (in the grammar's order); the training set is ``n_train`` of the other
    pairs, shuffled with ``seed``.
    """
    if not callable(is_test):
        raise TypeError(f"is_test must be callable (en, zh) -> bool, got {type(is_test).__name__}")
    check_positive_int("n_train", n_train)
    check_int("seed", seed)
    pairs = all_translation_pairs()
    test = [p for p in pairs if is_test(*p)]
    rest = [p for p in pairs if not is_test(*p)]
    if not test:
        raise ValueError("is_test must hold for at least one pair of the grammar, got none")
    if n_train > len(rest):
        raise ValueError(f"n_train must be at most {len(rest)} (the pairs left after holding out), got {n_train}")
    random.Random(seed).shuffle(rest)
    return translation_split(rest[:n_train], test)
