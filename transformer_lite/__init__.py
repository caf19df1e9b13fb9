"""transformer_lite: the Transformer of "Attention Is All You Need", small, readable and exact.

Batch-first tensors; the names and defaults of ``torch.nn.Transformer``; masks
where bool ``True`` means "may not attend" and a float mask is added to the scores.
Shape letters: B batch, S source length, T target length, D model width,
H heads, D_h head width, V vocabulary.
"""
from ._fused import fused_enabled, use_fused
from .attention import (
    AttentionSteps,
    KVCache,
    MultiHeadAttention,
    apply_mask,
    merge_heads,
    scaled_dot_product_attention,
    softmax_over_keys,
    split_heads,
)
from .embeddings import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    TokenEmbedding,
    sinusoidal_positional_encoding,
    wavelengths,
)
from .interop import from_hf_gpt2, from_hf_qwen2, from_torch
from .layers import Decoder, DecoderLayer, DecoderOutput, Encoder, EncoderLayer, EncoderOutput, FeedForward
from .masks import (
    additive_to_bool,
    bool_to_additive,
    bool_to_keep,
    causal_mask,
    keep_to_bool,
    merge_masks,
    padding_mask,
)
from .model import AttentionMaps, EncoderDecoder, Transformer, TransformerConfig, count_parameters
from .normalization import LayerNorm, layer_norm

__version__ = "0.1.0"
from .data import BOS, EOS, PAD, UNK, Vocab, translation_task
from .decoding import beam_search, exact_match, greedy_decode, sample
from .training import History, train
