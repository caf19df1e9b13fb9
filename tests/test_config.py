"""TransformerConfig: one object for the model, the book's recipe, from_torch and checkpoints."""
import dataclasses

import pytest
import torch
import torch.nn as nn

import transformer_lite as tl
from transformer_lite.book.pretrained import RECIPE, load_shipped_translator


def test_fields_or_config_build_the_same_model():
    cfg = tl.TransformerConfig(11, 13, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                               dim_feedforward=32, dropout=0.0)
    torch.manual_seed(0)
    a = tl.Transformer(11, 13, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=32, dropout=0.0)
    torch.manual_seed(0)
    b = tl.Transformer(cfg)
    assert a.config == b.config == cfg
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and torch.equal(pa, pb)


def test_the_config_names_and_defaults_are_nn_transformers():
    torch_defaults = {k: v.default for k, v in __import__("inspect").signature(nn.Transformer).parameters.items()}
    cfg = tl.TransformerConfig()
    for name in ("d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "dropout",
                 "layer_norm_eps", "norm_first", "bias"):
        assert getattr(cfg, name) == torch_defaults[name], name
    assert torch_defaults["activation"] is torch.nn.functional.relu and cfg.activation == "relu"


def test_a_checkpoint_round_trips_through_the_config():
    model, _, _ = load_shipped_translator()
    saved = model.config.to_dict()
    again = tl.Transformer(tl.TransformerConfig(**saved))
    again.load_state_dict(model.state_dict())
    assert again.config == model.config
    # the book's recipe holds the same config, without the vocabulary sizes the data decide
    assert model.config.replace(src_vocab_size=None, tgt_vocab_size=None) == RECIPE.model


def test_torch_activation_objects_are_stored_by_name():
    cfg = tl.TransformerConfig(5, 5, d_model=8, nhead=2, activation=nn.GELU(approximate="tanh"))
    assert cfg.activation == "gelu_tanh"
    assert dataclasses.asdict(cfg)["activation"] == "gelu_tanh"


def test_the_encoder_decoder_has_a_config_too():
    m = tl.EncoderDecoder(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    assert m.config.d_model == 16 and m.config.src_vocab_size is None and m.config.final_norm is True


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(d_model=10, nhead=3), ValueError, r"d_model \(10\) must be divisible by nhead \(3\)"),
    (dict(d_model=0), ValueError, "d_model must be >= 1, got 0"),
    (dict(dropout=1.0), ValueError, "dropout"),
    (dict(positional="rotary"), ValueError, "positional must be 'sinusoidal' or 'learned', got 'rotary'"),
    (dict(activation="swish"), ValueError, "activation"),
    (dict(norm_first="yes"), TypeError, "norm_first must be a bool"),
    (dict(layer_norm_eps=0), ValueError, "layer_norm_eps must be a positive number"),
    (dict(src_vocab_size=5, tgt_vocab_size=6, share_embeddings=True), ValueError, "share_embeddings"),
    (dict(src_vocab_size=2.5), TypeError, "src_vocab_size must be an int"),
])
def test_bad_fields_name_themselves(kwargs, error, match):
    with pytest.raises(error, match=match):
        tl.TransformerConfig(**kwargs)


def test_a_transformer_needs_vocabulary_sizes():
    with pytest.raises(TypeError, match="src_vocab_size and tgt_vocab_size"):
        tl.Transformer(tl.TransformerConfig())
    with pytest.raises(TypeError, match="unexpected keyword"):
        tl.Transformer(5, 5, d_modle=8)
