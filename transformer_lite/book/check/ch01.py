"""Checks of chapter 1's exercises (transformer_lite.book.check)."""
import math
import re
from collections import Counter

import torch

import transformer_lite as tl

from ..i18n import tr
from . import Wrong, call, exercise, number

# ---- 1.1: a tokenizer that cuts Chinese into characters -------------------------------------------

_TOKENIZER_CASES = [
    ("我爱你。", ["我", "爱", "你", "。"]),
    ("The cat sat.", ["the", "cat", "sat", "."]),  # i18n: data
    ("I love 北京!", ["i", "love", "北", "京", "!"]),  # i18n: data
    ("abc123 你好", ["abc123", "你", "好"]),
    ("他们在公园", ["他", "们", "在", "公", "园"]),
]


def _toy_tokenize(text):
    return re.findall(r"\w+|[^\w\s]", text.lower())


@exercise("1.1", wrong=[lambda: (_toy_tokenize,),                      # the chapter's toy: 我爱你 is one token
                        lambda: (lambda text: list(text.lower().replace(" ", "")),),  # English cut into letters too
                        lambda: (lambda text: text.lower().split(),),])              # whitespace only
def exercise_1_1(my_tokenize):
    for text, expected in _TOKENIZER_CASES:
        got = call(my_tokenize, text, name=f"my_tokenize({text!r})")
        if not isinstance(got, (list, tuple)) or not all(isinstance(t, str) for t in got):
            raise Wrong(tr("my_tokenize({text!r}) should return a list of strings, got {got_type}.",
                           text=text, got_type=type(got).__name__))
        if list(got) != expected:
            hint = (tr("Each Chinese character (\\u4e00-\\u9fff) should be a token of its own, while English words "
                       "stay whole: put a character class for Chinese characters BEFORE the \\w+ alternative, and "
                       "keep Chinese characters out of the word runs, e.g. [^\\W\\u4e00-\\u9fff]+."))
            raise Wrong(tr("my_tokenize({text!r}) is not right: it gives {n_got} token(s) where "
                           "{n_expected} are expected.", text=text, n_got=len(got), n_expected=len(expected)), hint)
    return tr("Chinese characters are single tokens, English words stay whole, punctuation is cut off.")


# ---- 1.2: apply learned BPE merges to a new word -----------------------------------------------------

BPE_CORPUS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}   # Sennrich et al. (2016), Algorithm 1
END = "</w>"


def learn_bpe(corpus=BPE_CORPUS, num_merges=10):
    """The merges byte-pair encoding learns from ``{word: count}`` (ties: the pair counted first)."""
    words = {tuple(w) + (END,): n for w, n in corpus.items()}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for symbols, n in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += n
        best = max(pairs, key=pairs.get)
        merges.append(best)
        words = {_merge(symbols, best): n for symbols, n in words.items()}
    return merges


def _merge(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if tuple(symbols[i:i + 2]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def bpe_segment(word, merges):
    """Cut a word into BPE symbols: its characters plus END, then every merge in the order learned."""
    symbols = tuple(word) + (END,)
    for pair in merges:
        symbols = _merge(symbols, pair)
    return symbols


def _no_end_marker(word, merges):        # forgets "</w>": "est</w>" can then never form
    symbols = tuple(word)
    for pair in merges:
        symbols = _merge(symbols, pair)
    return symbols


def _first_occurrence_only(word, merges):  # merges only the first place a pair occurs
    symbols = list(word) + [END]
    for a, b in merges:
        for i in range(len(symbols) - 1):
            if (symbols[i], symbols[i + 1]) == (a, b):
                symbols[i:i + 2] = [a + b]
                break
    return tuple(symbols)


def _longest_match(word, merges):          # greedy longest match against the vocabulary (WordPiece-style)
    vocab = {a + b for a, b in merges} | set(word) | {END}
    text, out = word + END, []
    while text:
        piece = next(text[:n] for n in range(len(text), 0, -1) if text[:n] in vocab or n == 1)
        out.append(piece)
        text = text[len(piece):]
    return tuple(out)


_BPE_WORDS = ["lowest", "newer", "wider", "slow", "lolo", "eses", "news", "nest", "low"]


@exercise("1.2", wrong=[lambda: (_no_end_marker,), lambda: (_first_occurrence_only,),
                        lambda: (lambda word, merges: tuple(word) + (END,),), lambda: (_longest_match,)])
def exercise_1_2(my_bpe_segment):
    merges = learn_bpe()
    for word in _BPE_WORDS:
        got = call(my_bpe_segment, word, merges, name=f"my_bpe_segment({word!r}, merges)")
        try:
            got = tuple(got)
        except TypeError:
            raise Wrong(tr("my_bpe_segment({word!r}, merges) should return a tuple of symbols, "
                           "got {got_type}.", word=word, got_type=type(got).__name__)) from None
        expected = bpe_segment(word, merges)
        if got != expected:
            if "".join(map(str, got)) != word + END:
                hint = (tr("The symbols, joined, must spell the word followed by the end marker {end!r}: start "
                           "from tuple(word) + ({end!r},).", end=END))
            else:
                hint = (tr("Apply the merges one after another in the order they were learned, and each merge "
                           "to EVERY place its pair occurs (left to right) before moving to the next merge."))
            raise Wrong(tr("my_bpe_segment({word!r}, merges) is not BPE's cut of {word!r} (yours has {n_got} "
                           "symbol(s), BPE's has {n_expected}).",
                           word=word, n_got=len(got), n_expected=len(expected)), hint)
    return tr("new words are cut into learned pieces (e.g. 'lowest' into 'low' + 'est</w>'): nothing is unknown.")


# ---- 1.3: bug hunt: a pipeline that turns known words into <unk> ----------------------------------

# i18n: data (the strings below are what the model or the reader reads, not messages)
_CORPUS = ["The cat sat on the mat.", "The dog sat on the log.", "A cat saw a dog!"]   # the chapter's corpus
_ENCODE_CASES = _CORPUS + ["The bird sat on the cat.", "A DOG, a cat.", "the mat"]  # i18n: data


def _vocab():
    from transformer_lite.data import Vocab

    return Vocab(t for s in _CORPUS for t in _toy_tokenize(s))


def suspect_encode(vocab, text):
    """The colleague's encoder of exercise 1.3: the token ids of ``text`` with ``vocab``."""
    from transformer_lite import pitfalls

    return pitfalls.encode_with_vocab(vocab, text)


def _buggy_share():
    from transformer_lite.data import UNK

    vocab = _vocab()
    ids = [i for s in _CORPUS for i in suspect_encode(vocab, s)]
    return ids.count(UNK) / len(ids)


def _lower_split(text):
    return _vocab().encode(text.lower().split())


def _buggy(text):
    return suspect_encode(_vocab(), text)


@exercise("1.3", wrong=[lambda: (0.0, _buggy),                       # "nothing is unknown": the bug not found
                        lambda: (6 / 17, _buggy),                    # found, not fixed
                        lambda: (6 / 17, _lower_split),              # half a fix: "mat." is still unknown
                        lambda: (2 / 17, lambda text: _vocab().encode(_toy_tokenize(text)))])  # the share of one kind
def exercise_1_3(my_unknown_share, my_encode):
    try:
        share = float(my_unknown_share)
    except (TypeError, ValueError):
        raise Wrong(tr("my_unknown_share should be a number, got {my_unknown_share_type}.",
                       my_unknown_share_type=type(my_unknown_share).__name__)) from None
    expected = _buggy_share()
    if abs(share - expected) > 1e-6:
        raise Wrong(tr("my_unknown_share = {share:.3g} is not the share of <unk> among the ids encode_sentence "
                       "gives for the chapter's corpus.", share=share),
                    hint=tr("Encode the three sentences of `corpus` with encode_sentence, put all the ids together, "
                            "and divide the number of UNK ids by the number of ids. Words the vocabulary was built "
                            "from should never be <unk>: which ones are?"))
    vocab = _vocab()
    for text in _ENCODE_CASES:
        got = call(my_encode, text, name=f"my_encode({text!r})")
        right = vocab.encode(_toy_tokenize(text))
        if not isinstance(got, (list, tuple)) or [int(i) for i in got] != right:
            raise Wrong(tr("my_encode({text!r}) gives {got!r}, but the vocabulary's own tokenizer gives ids {right}.",
                           text=text, got=got, right=right),
                        hint=tr("Encode the tokens of `tokenize`, the tokenizer that built the vocabulary: it "
                                "lower-cases AND cuts punctuation off."))
    return (tr("{expected:.0%} of the ids were <unk> for words the vocabulary knows (\"The\", \"mat.\", \"dog!\"): "
               "encode with the tokenizer that built the vocabulary, and test that its own corpus has no <unk>.",
               expected=expected))


# ---- 1.4: what sharing one matrix saves -------------------------------------------------------------

def _saved_by_sharing(V, D):
    kw = dict(d_model=D, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=2 * D)
    with torch.random.fork_rng():
        separate = tl.Transformer(V, V, **kw)
        shared = tl.Transformer(V, V, share_embeddings=True, tie_embeddings=True, **kw)
    return tl.count_parameters(separate) - tl.count_parameters(shared)


@exercise("1.4", wrong=[lambda: (lambda V, D: V * D,), lambda: (lambda V, D: 3 * V * D,),
                        lambda: (lambda V, D: 2 * V * D + V,)])     # the output layer's bias is NOT shared
def exercise_1_4(my_saved):
    for V, D in ((50, 8), (120, 16)):
        got = call(my_saved, V, D, name=f"my_saved({V}, {D})")
        number(got, _saved_by_sharing(V, D), f"my_saved({V}, {D})", rel=0.0, abs_=1e-9,
               hint=tr("Three (V, D) matrices (source embedding, target embedding, output layer) become one. "
                       "The output layer's bias (V numbers) is not part of the shared matrix: it stays."))
    return tr("one shared matrix instead of three saves 2 · V · D parameters (the output bias stays).")


# ---- 1.5: the factor with nn.Embedding's own initialisation ----------------------------------------

def _length_ratio(D=256, rows=1000, pos=10):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        table = torch.nn.Embedding(rows, D).weight.detach() * math.sqrt(D)   # N(0, 1) entries, scaled
    pe = tl.sinusoidal_positional_encoding(pos + 1, D)[pos]
    return (table.norm(dim=1).mean() / pe.norm()).item()


@exercise("1.5", wrong=[lambda: (math.sqrt(2),),           # unscaled N(0, 1), or scaled N(0, 1/D)
                        lambda: (1 / math.sqrt(512),),     # inverted: |PE| / |token|
                        lambda: (1 / math.sqrt(128),)])    # N(0, 1/D) without the factor
def exercise_1_5(my_ratio):
    expected = _length_ratio()
    number(my_ratio, expected, "my_ratio", rel=0.03,
           hint=tr("nn.Embedding draws N(0, 1) entries, so a row has length about sqrt(D); times sqrt(D) that is "
                   "about D. PE(pos) has length sqrt(D / 2). Divide the token's length by PE's."))
    return tr("scaled N(0, 1) rows are about √(2D) ≈ 23 times longer than PE at D = 256: the token drowns the "
              "position.")
