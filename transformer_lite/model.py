"""The whole encoder-decoder Transformer (paper §3, Figure 1).

    logits = Generator(Decoder(Embed(tgt) + PE, Encoder(Embed(src) + PE)))

:class:`EncoderDecoder` is the part ``torch.nn.Transformer`` covers (vectors in,
vectors out); :class:`Transformer` adds what a translator needs around it: token
embeddings scaled by sqrt(d_model), positional encodings, the masks built from
token ids, and the final Linear to the vocabulary (d_model x V).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn as nn

from ._checks import check_instance, check_int, check_number, check_positive_int, check_probability, check_token_ids
from .embeddings import LearnedPositionalEncoding, PositionalEncoding, TokenEmbedding
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, _check_batch_first, activation_name
from .masks import causal_mask, padding_mask
from .normalization import LayerNorm


class AttentionMaps(NamedTuple):
    """Every layer's attention, as bertviz takes it: one (B, H, query, key) tensor per layer."""

    encoder: tuple  # encoder self-attention, (B, H, S, S) per layer
    decoder: tuple  # decoder masked self-attention, (B, H, T, T) per layer
    cross: tuple  # decoder -> encoder cross-attention, (B, H, T, S) per layer


@dataclass(frozen=True)
class TransformerConfig:
    """The shape of a Transformer, in one place.

    :class:`Transformer`, :class:`EncoderDecoder`, the book's training recipe, ``from_torch`` and
    checkpoints all read this one object. Names and defaults are ``torch.nn.Transformer``'s (the
    paper's base model) up to ``bias``; the fields after it are the translator's own.
    """

    src_vocab_size: int | None = None  # source vocabulary (None: no embeddings, as in EncoderDecoder)
    tgt_vocab_size: int | None = None  # V, the target vocabulary: the width of the output layer
    d_model: int = 512  # D, the width of every token's vector
    nhead: int = 8  # H heads, each D_h = D / H wide
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    dim_feedforward: int = 2048  # the FFN's hidden width (the paper's d_ff)
    dropout: float = 0.1
    activation: str = "relu"  # "relu", "gelu" or "gelu_tanh" (torch's relu/gelu modules are accepted)
    layer_norm_eps: float = 1e-5
    norm_first: bool = False  # False: Post-LN (the paper); True: Pre-LN
    bias: bool = True  # False: no bias in any Linear or LayerNorm (torch's bias=False)
    final_norm: bool | None = None  # a LayerNorm after each stack; None: as norm_first (Pre-LN needs it)
    max_len: int = 512  # the position table's size: the longest sequence the model reads or writes
    pad_id: int = 0  # the padding token: masked as a key everywhere
    tie_embeddings: bool = False  # one matrix for the target embedding and the output layer (paper §3.4)
    share_embeddings: bool = False  # one matrix for source and target embeddings (one shared vocabulary)
    positional: str = "sinusoidal"  # "sinusoidal" (the paper) or "learned"

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        for name in ("d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "max_len"):
            check_positive_int(name, getattr(self, name))
        if self.d_model % self.nhead:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by nhead ({self.nhead})")
        check_probability("dropout", self.dropout)
        check_number("layer_norm_eps", self.layer_norm_eps, positive=True)
        object.__setattr__(self, "activation", activation_name(self.activation))  # a name: serialisable
        check_int("pad_id", self.pad_id)
        for name in ("norm_first", "bias", "tie_embeddings", "share_embeddings"):
            check_instance(name, getattr(self, name), bool)
        check_instance("final_norm", self.final_norm, bool, allow_none=True)
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', got {self.positional!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(f"share_embeddings needs src_vocab_size == tgt_vocab_size, "
                             f"got {self.src_vocab_size} and {self.tgt_vocab_size}")

    def replace(self, **changes) -> TransformerConfig:
        """A copy with some fields changed (``config.replace(d_model=128)``)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The fields as a plain dict (what a checkpoint stores)."""
        return dataclasses.asdict(self)


def _build_stacks(c: TransformerConfig, final_norm: bool):
    """The encoder and decoder stacks of ``c``, each ending with a LayerNorm when ``final_norm``."""
    layer = dict(d_model=c.d_model, nhead=c.nhead, dim_feedforward=c.dim_feedforward, dropout=c.dropout,
                 activation=c.activation, layer_norm_eps=c.layer_norm_eps, norm_first=c.norm_first, bias=c.bias)
    enc_norm = LayerNorm(c.d_model, eps=c.layer_norm_eps, bias=c.bias) if final_norm else None
    dec_norm = LayerNorm(c.d_model, eps=c.layer_norm_eps, bias=c.bias) if final_norm else None
    encoder = Encoder(EncoderLayer(**layer), c.num_encoder_layers, enc_norm)
    decoder = Decoder(DecoderLayer(**layer), c.num_decoder_layers, dec_norm)
    return encoder, decoder


def _xavier_init(module: nn.Module) -> None:
    # Glorot/Xavier for every matrix, as torch.nn.Transformer and the Annotated Transformer do.
    for p in module.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)


class EncoderDecoder(nn.Module):
    """The counterpart of ``torch.nn.Transformer(batch_first=True)``: vectors in, vectors out.

    Shape: src (B, S, D), tgt (B, T, D) -> (B, T, D); masks as in ``nn.Transformer.forward``.
    The arguments are ``nn.Transformer``'s, in its order up to ``activation``; the rest are
    keyword-only, because torch's ``custom_encoder``/``custom_decoder`` (and ``device``/``dtype``)
    are not taken. ``batch_first`` accepts only ``True``; ``forward`` takes no ``*_is_causal`` hints.
    ``final_norm=True`` (as in ``nn.Transformer``) ends each stack with a LayerNorm.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = "relu", *,
                 layer_norm_eps: float = 1e-5, batch_first: bool = True, norm_first: bool = False, bias: bool = True,
                 final_norm: bool = True):
        super().__init__()
        _check_batch_first(batch_first)
        self.config = TransformerConfig(d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                        num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                        dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                                        norm_first=norm_first, bias=bias, final_norm=final_norm)
        self.d_model, self.nhead = d_model, nhead
        self.encoder, self.decoder = _build_stacks(self.config, final_norm)
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

    Build it from the fields of :class:`TransformerConfig`, ``Transformer(src_vocab_size, tgt_vocab_size,
    d_model=64, ...)`` (``nn.Transformer``'s names and defaults), or from a config, ``Transformer(config)``;
    ``model.config`` is that config. ``tie_embeddings=True`` shares one matrix between the target
    embedding and the output layer, ``output_projection`` (D -> V); ``share_embeddings=True`` shares the
    source and target embeddings (one vocabulary for both languages). The paper does both (§3.4).
    ``final_norm`` defaults to ``norm_first``: a Pre-LN stack needs a last LayerNorm, a Post-LN stack
    already ends with one. ``positional`` is ``"sinusoidal"`` (the paper) or ``"learned"``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__()
        if len(args) == 1 and not kwargs and isinstance(args[0], TransformerConfig):
            config = args[0]  # Transformer(config)
        else:
            config = TransformerConfig(*args, **kwargs)  # Transformer(src_vocab_size, tgt_vocab_size, d_model=...)
        if config.src_vocab_size is None or config.tgt_vocab_size is None:
            raise TypeError("Transformer needs src_vocab_size and tgt_vocab_size, got "
                            f"{config.src_vocab_size} and {config.tgt_vocab_size}")
        self.config = c = config
        self.src_vocab_size, self.tgt_vocab_size = c.src_vocab_size, c.tgt_vocab_size
        self.d_model, self.nhead, self.max_len, self.pad_id = c.d_model, c.nhead, c.max_len, c.pad_id

        self.src_embed = TokenEmbedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = TokenEmbedding(c.tgt_vocab_size, c.d_model)
        Positions = PositionalEncoding if c.positional == "sinusoidal" else LearnedPositionalEncoding
        self.src_pos = Positions(c.d_model, max_len=c.max_len, dropout=c.dropout)
        self.tgt_pos = Positions(c.d_model, max_len=c.max_len, dropout=c.dropout)
        final_norm = c.norm_first if c.final_norm is None else c.final_norm
        self.encoder, self.decoder = _build_stacks(c, final_norm)
        self.output_projection = nn.Linear(c.d_model, c.tgt_vocab_size, bias=c.bias)  # D -> V: the logits
        _xavier_init(self)
        if c.positional == "learned":
            for pos in (self.src_pos, self.tgt_pos):
                nn.init.normal_(pos.position.weight, std=0.02)
        if c.tie_embeddings:
            self.output_projection.weight = self.tgt_embed.embedding.weight  # (V, D), one matrix for both
        if c.share_embeddings:  # one vocabulary for both languages (the paper's shared BPE)
            self.src_embed.embedding.weight = self.tgt_embed.embedding.weight

    # -- the two halves, kept apart because decoding calls them separately ----------
    def encode(self, src: torch.Tensor, return_attention: bool = False):
        """src (B, S) -> memory (B, S, D); padding positions (``pad_id``) are masked as keys."""
        check_token_ids("src", src, self.src_vocab_size)
        x = self.src_pos(self.src_embed(src))  # (B, S) -> (B, S, D)
        run = self.encoder.forward_with_attention if return_attention else self.encoder
        return run(x, src_key_padding_mask=padding_mask(src, self.pad_id))

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
        run = self.decoder.forward_with_attention if return_attention else self.decoder
        out = run(x, memory, tgt_mask=tgt_mask, tgt_key_padding_mask=tgt_kpm,
                  memory_key_padding_mask=memory_kpm, cache=cache)
        if return_attention:
            h, ws, wc = out
            return self.output_projection(h), ws, wc
        return self.output_projection(out)  # (B, T, D) -> (B, T, V)

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
