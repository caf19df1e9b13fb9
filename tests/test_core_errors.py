"""Bad input raises ValueError/TypeError naming the argument, what was expected and what was received."""
import pytest
import torch
import torch.nn as nn

import transformer_lite as tl


def model(**kw):
    return tl.Transformer(10, 12, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                          dim_feedforward=32, max_len=8, **kw)


def test_d_model_not_divisible_by_nhead():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by nhead \(4\)"):
        tl.MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match="divisible by nhead"):
        tl.Transformer(5, 5, d_model=10, nhead=4)
    with pytest.raises(ValueError, match="divisible by nhead"):
        tl.split_heads(torch.randn(1, 2, 10), 4)


@pytest.mark.parametrize("bad,match", [
    (torch.randn(4, 16), r"query must be 3-D, got a 2-D tensor of shape \(4, 16\)"),
    (torch.randn(1, 4, 15), r"query must have last dimension 16, got shape \(1, 4, 15\)"),
    ([[1.0]], "query must be a torch.Tensor, got list"),
])
def test_attention_rejects_wrong_rank_or_width(bad, match):
    mha = tl.MultiHeadAttention(16, 2)
    x = torch.randn(1, 4, 16)
    with pytest.raises((ValueError, TypeError), match=match):
        mha(bad, x, x)


def test_key_value_mismatch():
    mha = tl.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match="key and value must have shape"):
        mha(torch.randn(1, 4, 16), torch.randn(1, 5, 16), torch.randn(1, 6, 16))


def test_masks_of_wrong_shape_or_dtype():
    mha = tl.MultiHeadAttention(16, 2)
    x = torch.randn(2, 4, 16)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(2, 4\), got \(4, 2\)"):
        mha(x, x, x, key_padding_mask=torch.zeros(4, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(4, 4\) or \(4, 4, 4\), got \(3, 3\)"):
        mha(x, x, x, attn_mask=torch.zeros(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="attn_mask must be a bool tensor .* got dtype torch.int64"):
        mha(x, x, x, attn_mask=torch.zeros(4, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="attn_mask must broadcast"):
        tl.scaled_dot_product_attention(x, x, x, attn_mask=torch.zeros(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        tl.bool_to_additive(torch.zeros(3))
    with pytest.raises(TypeError, match="keep must be an integer or bool tensor"):
        tl.keep_to_bool(torch.zeros(3))


def test_token_ids_not_integers_or_out_of_range():
    m = model()
    good_src, good_tgt = torch.randint(0, 10, (1, 5)), torch.randint(0, 12, (1, 5))
    with pytest.raises(TypeError, match="src must hold integer token ids .* got dtype torch.float32"):
        m(good_src.float(), good_tgt)
    with pytest.raises(ValueError, match=r"src must lie in \[0, 10\) .* got a token id 10"):
        m(torch.full((1, 5), 10), good_tgt)
    with pytest.raises(ValueError, match=r"tgt must lie in \[0, 12\) .* got a token id -1"):
        m(good_src, torch.full((1, 5), -1))
    with pytest.raises(ValueError, match=r"src must be 2-D \(batch, length\), got shape \(5,\)"):
        m(good_src[0], good_tgt)


class _CountingIds(torch.Tensor):
    """Token ids that count how often their values are read (min/max: a device-to-host copy on a GPU)."""

    reads = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.min, torch.Tensor.max, torch.Tensor.item, torch.Tensor.tolist):
            _CountingIds.reads += 1
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def test_token_id_range_is_read_once_per_call_at_the_models_entrance():
    m = model().eval()
    src, tgt = torch.randint(1, 10, (2, 5)), torch.randint(1, 12, (2, 4))
    _CountingIds.reads = 0
    logits = m(src.as_subclass(_CountingIds), tgt.as_subclass(_CountingIds))
    assert _CountingIds.reads == 4  # min and max of src (in encode) and of tgt (in decode); no layer reads them
    torch.testing.assert_close(logits, m(src, tgt))
    _CountingIds.reads = 0
    tl.TokenEmbedding(10, 16)(src.as_subclass(_CountingIds))  # alone: dtype and shape only
    assert _CountingIds.reads == 0


def test_sequence_longer_than_max_len():
    m = model()
    with pytest.raises(ValueError, match=r"sequence length 9 exceeds the positional encoding's max_len \(8\)"):
        m(torch.randint(0, 10, (1, 9)), torch.randint(0, 12, (1, 3)))
    m = model(positional="learned")
    with pytest.raises(ValueError, match="exceeds the learned positions' max_len"):
        m(torch.randint(0, 10, (1, 3)), torch.randint(0, 12, (1, 9)))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match=r"activation must be 'relu', 'gelu' or 'gelu_tanh' .*got 'tanh'"):
        tl.EncoderLayer(8, 2, activation="tanh")
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.5"):
        tl.MultiHeadAttention(8, 2, dropout=1.5)
    with pytest.raises(TypeError, match="nhead must be an int, got float"):
        tl.MultiHeadAttention(8, 2.0)
    with pytest.raises(ValueError, match="num_layers must be >= 1, got 0"):
        tl.Encoder(tl.EncoderLayer(8, 2), 0)
    with pytest.raises(TypeError, match="encoder_layer must be an EncoderLayer, got TransformerEncoderLayer"):
        tl.Encoder(nn.TransformerEncoderLayer(8, 2), 2)
    with pytest.raises(ValueError, match="share_embeddings needs src_vocab_size == tgt_vocab_size"):
        tl.Transformer(5, 6, d_model=8, nhead=2, share_embeddings=True)
    with pytest.raises(ValueError, match="positional must be 'sinusoidal' or 'learned'"):
        tl.Transformer(5, 6, d_model=8, nhead=2, positional="rotary")
    with pytest.raises(ValueError, match="d_model must be even"):
        tl.sinusoidal_positional_encoding(4, 7)
    with pytest.raises(ValueError, match="T must be >= 1, got 0"):
        tl.causal_mask(0)
    with pytest.raises(ValueError, match="offset must be >= 0, got -1"):
        tl.causal_mask(3, offset=-1)
    with pytest.raises(TypeError, match="offset must be an int, got float"):
        tl.causal_mask(3, offset=2.0)
    with pytest.raises(TypeError, match="offset must be an int, got bool"):
        tl.causal_mask(3, offset=True)
    with pytest.raises(ValueError, match="eps must be a positive float"):
        tl.LayerNorm(8, eps=0)
    with pytest.raises(ValueError, match="x must have last dimension 8"):
        tl.LayerNorm(8)(torch.randn(2, 7))
