"""The whole encoder-decoder Transformer (paper §3, Figure 1).

    logits = Generator(Decoder(Embed(tgt) + PE, Encoder(Embed(src) + PE)))

:class:`EncoderDecoder` is the part ``torch.nn.Transformer`` covers (vectors in,
vectors out); :class:`Transformer` adds what a translator needs around it: token
embeddings scaled by sqrt(d_model), positional encodings, the masks built from
token ids, and the final Linear to the vocabulary (d_model x V).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn

from ._checks import check_positive_int, check_probability, check_token_ids
from .embeddings import LearnedPositionalEncoding, PositionalEncoding, TokenEmbedding
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer
from .masks import causal_mask, padding_mask
from .normalization import LayerNorm


class AttentionMaps(NamedTuple):
    """Every layer's attention, as bertviz takes it: one (B, H, query, key) tensor per layer."""

    encoder: tuple  # encoder self-attention, (B, H, S, S) per layer
    decoder: tuple  # decoder masked self-attention, (B, H, T, T) per layer
    cross: tuple  # decoder -> encoder cross-attention, (B, H, T, S) per layer


def _build_stacks(d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, dropout,
                  activation, layer_norm_eps, norm_first, final_norm):
    check_positive_int("d_model", d_model)
    check_positive_int("nhead", nhead)
    if d_model % nhead:
        raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
    check_probability("dropout", dropout)
    kw = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
              layer_norm_eps=layer_norm_eps, norm_first=norm_first)
    enc_norm = LayerNorm(d_model, eps=layer_norm_eps) if final_norm else None
    dec_norm = LayerNorm(d_model, eps=layer_norm_eps) if final_norm else None
    encoder = Encoder(EncoderLayer(d_model, nhead, **kw), num_encoder_layers, enc_norm)
    decoder = Decoder(DecoderLayer(d_model, nhead, **kw), num_decoder_layers, dec_norm)
    return encoder, decoder


def _xavier_init(module: nn.Module) -> None:
    # Glorot/Xavier for every matrix, as torch.nn.Transformer and the Annotated Transformer do.
    for p in module.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)


class EncoderDecoder(nn.Module):
    """The counterpart of ``torch.nn.Transformer(batch_first=True)``: vectors in, vectors out.

    Shape: src (B, S, D), tgt (B, T, D) -> (B, T, D); masks as in ``nn.Transformer.forward``.
    ``final_norm=True`` (as in ``nn.Transformer``) ends each stack with a LayerNorm.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = "relu",
                 layer_norm_eps: float = 1e-5, norm_first: bool = False, final_norm: bool = True):
        super().__init__()
        self.d_model, self.nhead = d_model, nhead
        self.encoder, self.decoder = _build_stacks(d_model, nhead, num_encoder_layers, num_decoder_layers,
                                                   dim_feedforward, dropout, activation, layer_norm_eps,
                                                   norm_first, final_norm)
        _xavier_init(self)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask)


class Transformer(nn.Module):
    """The paper's translator: token ids in, next-token logits out.

    Shape: src (B, S) long, tgt (B, T) long -> logits (B, T, V) with V = tgt_vocab_size.
    ``forward`` builds the masks itself: source padding (``pad_id``), target
    padding, and the causal mask of the decoder's self-attention.

    ``tie_embeddings=True`` shares one matrix between the target embedding and the
    output Linear; ``share_embeddings=True`` shares the source and target embeddings
    (one vocabulary for both languages). The paper does both (§3.4). ``final_norm`` defaults to ``norm_first``: a
    Pre-LN stack needs a last LayerNorm, a Post-LN stack already ends with one.
    ``positional`` is ``"sinusoidal"`` (the paper) or ``"learned"``.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, nhead: int = 8,
                 num_encoder_layers: int = 6, num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str = "relu", layer_norm_eps: float = 1e-5,
                 norm_first: bool = False, max_len: int = 512, pad_id: int = 0, tie_embeddings: bool = False,
                 share_embeddings: bool = False, final_norm: bool | None = None, positional: str = "sinusoidal"):
        super().__init__()
        check_positive_int("src_vocab_size", src_vocab_size)
        check_positive_int("tgt_vocab_size", tgt_vocab_size)
        check_positive_int("max_len", max_len)
        if positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', got {positional!r}")
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.d_model, self.nhead, self.max_len, self.pad_id = d_model, nhead, max_len, pad_id
        self.config = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, d_model=d_model,
                           nhead=nhead, num_encoder_layers=num_encoder_layers,
                           num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                           dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                           norm_first=norm_first, max_len=max_len, pad_id=pad_id,
                           tie_embeddings=tie_embeddings, share_embeddings=share_embeddings,
                           final_norm=final_norm, positional=positional)
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(f"share_embeddings needs src_vocab_size == tgt_vocab_size, "
                             f"got {src_vocab_size} and {tgt_vocab_size}")
        final_norm = norm_first if final_norm is None else final_norm

        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        Positions = PositionalEncoding if positional == "sinusoidal" else LearnedPositionalEncoding
        self.src_pos = Positions(d_model, max_len=max_len, dropout=dropout)
        self.tgt_pos = Positions(d_model, max_len=max_len, dropout=dropout)
        self.encoder, self.decoder = _build_stacks(d_model, nhead, num_encoder_layers, num_decoder_layers,
                                                   dim_feedforward, dropout, activation, layer_norm_eps,
                                                   norm_first, final_norm)
        self.generator = nn.Linear(d_model, tgt_vocab_size)  # the output projection, d_model x V
        _xavier_init(self)
        if positional == "learned":
            for pos in (self.src_pos, self.tgt_pos):
                nn.init.normal_(pos.position.weight, std=0.02)
        if tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight  # (V, D), one matrix for both
        if share_embeddings:  # one vocabulary for both languages (the paper's shared BPE)
            self.src_embed.embedding.weight = self.tgt_embed.embedding.weight

    # -- the two halves, kept apart because decoding calls them separately ----------
    def encode(self, src: torch.Tensor, return_attention: bool = False):
        """src (B, S) -> memory (B, S, D); padding positions (``pad_id``) are masked as keys."""
        check_token_ids("src", src, self.src_vocab_size)
        x = self.src_pos(self.src_embed(src))  # (B, S) -> (B, S, D)
        return self.encoder(x, src_key_padding_mask=padding_mask(src, self.pad_id), return_attention=return_attention)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor | None = None,
               cache: list | None = None, return_attention: bool = False):
        """tgt (B, T), memory (B, S, D) -> logits (B, T, V).

        ``src`` (B, S) gives the source padding mask for cross-attention.
        With ``cache`` (from :meth:`new_cache`), ``tgt`` holds only the *new*
        tokens; earlier ones are read from the cache, and positions continue
        where the cache ends.
        """
        check_token_ids("tgt", tgt, self.tgt_vocab_size)
        B, T = tgt.shape
        memory_kpm = padding_mask(src, self.pad_id) if src is not None else None
        if memory_kpm is not None and memory_kpm.shape != memory.shape[:2]:
            raise ValueError(f"src must have shape {tuple(memory.shape[:2])} to match memory, got {tuple(src.shape)}")
        past = len(cache[0][0]) if cache is not None else 0
        x = self.tgt_pos(self.tgt_embed(tgt), offset=past)  # (B, T) -> (B, T, D)
        if cache is None:
            tgt_mask, tgt_kpm = causal_mask(T, device=tgt.device), padding_mask(tgt, self.pad_id)
        else:
            # T new queries at positions past..past+T-1 may see keys 0..past+i.
            tgt_mask = None if T == 1 else causal_mask(past + T, device=tgt.device)[past:]
            tgt_kpm = None
        out = self.decoder(x, memory, tgt_mask=tgt_mask, tgt_key_padding_mask=tgt_kpm,
                           memory_key_padding_mask=memory_kpm, cache=cache, return_attention=return_attention)
        if return_attention:
            h, ws, wc = out
            return self.generator(h), ws, wc
        return self.generator(out)  # (B, T, D) -> (B, T, V)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """src (B, S), tgt (B, T) -> logits (B, T, V) for the next token at every target position."""
        return self.decode(tgt, self.encode(src), src=src)

    def new_cache(self) -> list:
        """An empty key/value cache for :meth:`decode` (one per decoded batch)."""
        return self.decoder.new_cache()

    @torch.no_grad()
    def attention_maps(self, src: torch.Tensor, tgt: torch.Tensor) -> AttentionMaps:
        """Every layer's encoder, decoder and cross attention, each (B, H, ·, ·), in eval mode."""
        was_training = self.training
        self.eval()
        try:
            memory, enc = self.encode(src, return_attention=True)
            _, dec, cross = self.decode(tgt, memory, src=src, return_attention=True)
        finally:
            self.train(was_training)
        return AttentionMaps(tuple(enc), tuple(dec), tuple(cross))


def count_parameters(module: nn.Module) -> int:
    """Number of distinct trainable parameters (a tied matrix is counted once)."""
    seen, total = set(), 0
    for p in module.parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total
