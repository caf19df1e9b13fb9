"""Baselines for the translation task: what does the Transformer do that simpler models cannot?

Three models to put next to the book's translator (chapter 13), each learned from the same
training pairs:

* :class:`DictionaryTranslator` -- word by word. A dictionary learned from the training pairs with
  IBM Model 1 (Brown et al. 1993: EM over all word alignments), each English word replaced by the
  Chinese words it is aligned with. ``reorder=True`` then sorts the words by where each Chinese
  word usually stands in a training sentence (a learned, context-free word order).
* :func:`transformer_without_positions` -- the same Transformer with the positional encodings
  removed: the encoder sees a *bag* of words, the decoder only its causal mask.
* :class:`GRUTranslator` -- a recurrent encoder-decoder with attention (Bahdanau et al. 2015;
  Luong et al. 2015's bilinear score), the architecture the Transformer replaced. It has the
  ``encode`` / ``decode`` / ``new_cache`` methods of :class:`~transformer_lite.Transformer`, so
  :func:`~transformer_lite.training.train`, :func:`~transformer_lite.decoding.greedy_decode` and
  :func:`~transformer_lite.decoding.exact_match` work on it unchanged (not ``beam_search``, which
  reorders the Transformer's key/value caches).
"""
from __future__ import annotations

import collections
import functools
from collections.abc import Sequence

import torch
import torch.nn as nn

from ._checks import check_int, check_number, check_positive_int, check_token_ids
from .data import PAD
from .model import Transformer, TransformerConfig

NULL = "<null>"  # IBM Model 1's empty English word: Chinese words aligned to it come from nowhere


# -- word by word ----------------------------------------------------------------------------

def _check_pairs(pairs) -> list[tuple[list[str], list[str]]]:
    if isinstance(pairs, str) or not isinstance(pairs, (list, tuple)):
        raise TypeError(f"pairs must be a list of (English, Chinese) str pairs, got {type(pairs).__name__}")
    if not pairs:
        raise ValueError("pairs must hold at least one (English, Chinese) pair, got an empty list")
    out = []
    for p in pairs:
        if not (isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(s, str) for s in p)):
            raise TypeError(f"pairs must contain (English, Chinese) pairs of str, got {p!r}")
        out.append((p[0].split(), p[1].split()))
    return out


def ibm1(pairs: Sequence[tuple[str, str]], iterations: int = 10) -> dict[str, dict[str, float]]:
    """Word-translation probabilities t(zh | en) by IBM Model 1's EM, from (English, Chinese) pairs.

    Every Chinese word of a pair is explained by one English word of the pair or by :data:`NULL`;
    EM shares each Chinese word among them in proportion to the current t. Returns
    ``{en: {zh: t(zh | en)}}`` (each inner dict sums to 1), ``en`` including ``NULL``.
    """
    split = _check_pairs(pairs)
    check_positive_int("iterations", iterations)
    t: dict[str, dict[str, float]] = collections.defaultdict(dict)
    zh_words = {z for _, zs in split for z in zs}
    for es, zs in split:  # uniform start over the Chinese words that co-occur
        for e in [NULL, *es]:
            for z in zs:
                t[e][z] = 1.0 / len(zh_words)
    for _ in range(iterations):
        counts: dict[str, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
        for es, zs in split:
            src = [NULL, *es]
            for z in zs:
                norm = sum(t[e][z] for e in src)
                for e in src:
                    counts[e][z] += t[e][z] / norm
        t = collections.defaultdict(dict)
        for e, row in counts.items():
            total = sum(row.values())
            t[e] = {z: c / total for z, c in row.items()}
    return dict(t)


class DictionaryTranslator:
    """Word-by-word translation with a dictionary learned from training pairs (IBM Model 1).

    Each English word becomes the Chinese words ``z`` with t(z | en) >= ``threshold`` (most probable
    first), or nothing if it is most often aligned to nothing (articles, "do", "will"); a Chinese word
    is written once per sentence (the grammar never repeats one). The output keeps the English word order, unless
    ``reorder=True``: then the words are sorted so that each pair stands in the order it stood in most often in the
    training translations (ties: by the words' average relative position, 0 = first, 1 = last). Both are learned, and
    neither looks at the context.
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], threshold: float = 0.3, reorder: bool = False,
                 iterations: int = 10):
        threshold = check_number("threshold", threshold)
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
        self.threshold, self.reorder = threshold, bool(reorder)
        self.t = ibm1(pairs, iterations)
        self.table: dict[str, list[str]] = {}
        for e, row in self.t.items():
            if e == NULL:
                continue
            best = sorted(row.items(), key=lambda kv: -kv[1])
            self.table[e] = [z for z, p in best if p >= threshold]
        positions, self.before = collections.defaultdict(list), collections.Counter()
        for _, zs in _check_pairs(pairs):
            for j, z in enumerate(zs):
                positions[z].append(j / max(len(zs) - 1, 1))
                self.before.update((z, later) for later in zs[j + 1:])  # z came before `later`
        self.position = {z: sum(v) / len(v) for z, v in positions.items()}

    def translate(self, sentence: str) -> str:
        """An English sentence -> its word-by-word Chinese translation (words joined by spaces)."""
        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        out = list(dict.fromkeys(z for e in sentence.split() for z in self.table.get(e, [])))  # each word once
        if self.reorder:
            out = sorted(out, key=functools.cmp_to_key(self._order))
        return " ".join(out)

    def _order(self, a: str, b: str) -> int:
        """-1 if a usually comes before b in the training translations, 1 if after; else by average position."""
        ab, ba = self.before[a, b], self.before[b, a]
        if ab != ba:
            return -1 if ab > ba else 1
        pa, pb = self.position.get(a, 0.5), self.position.get(b, 0.5)
        return (pa > pb) - (pa < pb)

    def exact_match(self, pairs: Sequence[tuple[str, str]]) -> float:
        """Fraction of (English, Chinese) pairs translated exactly."""
        split = _check_pairs(pairs)
        return sum(self.translate(" ".join(es)).split() == zs for es, zs in split) / len(split)


# -- the Transformer without positions ---------------------------------------------------------

class NoPositions(nn.Module):
    """Stands in for a positional encoding and adds nothing: x -> dropout(x). Shape: (B, L, D) -> (B, L, D)."""

    def __init__(self, max_len: int, dropout: float = 0.0):
        super().__init__()
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        if offset + x.shape[1] > self.max_len:
            raise ValueError(f"sequence length {offset + x.shape[1]} exceeds max_len ({self.max_len})")
        return self.dropout(x)


def transformer_without_positions(config: TransformerConfig) -> Transformer:
    """A :class:`~transformer_lite.Transformer` whose positional encodings are removed (same parameters otherwise).

    Without positions self-attention is permutation-equivariant: the encoder reads the source as a
    bag of words. The decoder still has its causal mask, from which it can infer where it is.
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    model = Transformer(config)
    model.src_pos = NoPositions(config.max_len, config.dropout)
    model.tgt_pos = NoPositions(config.max_len, config.dropout)
    return model


# -- a recurrent encoder-decoder with attention ------------------------------------------------

class GRUTranslator(nn.Module):
    """A GRU encoder-decoder with attention, with the Transformer's ``encode`` / ``decode`` interface.

    Encoder: embeddings (E) -> a bidirectional GRU, ``hidden // 2`` units each way -> memory (B, S, hidden).
    Decoder: embeddings -> a GRU of ``hidden`` units, started from tanh(W · mean of the memory); at each
    step a bilinear attention score h_t^T W_a m_s over the source words (padding masked), the context
    c_t = sum_s a_ts m_s, and logits = W_o tanh(W_c [h_t; c_t]).

    Shape: src (B, S), tgt (B, T) -> logits (B, T, V). ``max_len`` only bounds decoding lengths
    (a GRU has no position table), so that the decoders' checks apply unchanged.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed: int = 64, hidden: int = 128,
                 dropout: float = 0.1, max_len: int = 64, pad_id: int = PAD):
        super().__init__()
        for name, value in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size),
                            ("embed", embed), ("max_len", max_len)):
            check_positive_int(name, value)
        check_positive_int("hidden", hidden, minimum=2)
        if hidden % 2:
            raise ValueError(f"hidden must be even (half of it runs each way in the encoder), got {hidden}")
        check_int("pad_id", pad_id)
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.max_len, self.pad_id, self.hidden = max_len, pad_id, hidden
        self.src_embed = nn.Embedding(src_vocab_size, embed, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, embed, padding_idx=pad_id)
        self.encoder = nn.GRU(embed, hidden // 2, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(hidden, hidden)  # mean of the memory -> the decoder's first state
        self.decoder = nn.GRU(embed, hidden, batch_first=True)
        self.score = nn.Linear(hidden, hidden, bias=False)  # W_a
        self.combine = nn.Linear(2 * hidden, hidden)  # W_c
        self.output_projection = nn.Linear(hidden, tgt_vocab_size)  # W_o
        self.dropout = nn.Dropout(dropout)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """src (B, S) -> memory (B, S, hidden); padding positions are zero."""
        check_token_ids("src", src, self.src_vocab_size)
        keep = (src != self.pad_id).unsqueeze(-1)  # (B, S, 1)
        lengths = keep.squeeze(-1).sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.src_embed(src)), lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, _ = self.encoder(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return out * keep

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor | None = None,
               cache: list | None = None) -> torch.Tensor:
        """tgt (B, T), memory (B, S, hidden) -> logits (B, T, V).

        ``src`` (B, S) masks padding in the attention. With ``cache`` (from :meth:`new_cache`), ``tgt`` holds
        only the new tokens and the GRU continues from the state kept in the cache.
        """
        check_token_ids("tgt", tgt, self.tgt_vocab_size)
        pad = (src == self.pad_id) if src is not None else torch.zeros(memory.shape[:2], dtype=torch.bool,
                                                                         device=memory.device)  # (B, S)
        if cache:
            h0 = cache[0]
        else:
            keep = (~pad).unsqueeze(-1).to(memory.dtype)
            h0 = torch.tanh(self.bridge((memory * keep).sum(1) / keep.sum(1).clamp(min=1)))[None]  # (1, B, hidden)
        out, h = self.decoder(self.dropout(self.tgt_embed(tgt)), h0)  # (B, T, hidden)
        if cache is not None:
            cache[:] = [h]
        scores = self.score(out) @ memory.transpose(1, 2)  # (B, T, S)
        weights = scores.masked_fill(pad[:, None, :], float("-inf")).softmax(-1)
        context = weights @ memory  # (B, T, hidden)
        return self.output_projection(self.dropout(torch.tanh(self.combine(torch.cat([out, context], -1)))))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """src (B, S), tgt (B, T) -> logits (B, T, V) for the next token at every target position."""
        return self.decode(tgt, self.encode(src), src=src)

    def new_cache(self) -> list:
        """An empty state for incremental decoding (filled by :meth:`decode`)."""
        return []
