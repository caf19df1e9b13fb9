"""Every transformer_lite module equals its torch.nn counterpart, via from_torch."""
import inspect
import itertools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

import transformer_lite as tl

B, T, S = 3, 5, 7


def _masks(kind, B, T, S, H):
    """(attn_mask, key_padding_mask) of the given kind; never a fully masked row."""
    kpm = torch.zeros(B, S, dtype=torch.bool)
    kpm[1, -2:] = True  # the second sequence has two padding positions
    kpm[2, -4:] = True
    attn = torch.rand(T, S) < 0.3
    attn[:, 0] = False  # every query can see key 0
    if kind == "none":
        return None, None
    if kind == "bool":
        return attn, kpm
    if kind == "float":
        return tl.bool_to_additive(attn), tl.bool_to_additive(kpm)
    if kind == "float_soft":  # arbitrary finite additive mask, 3-D per head
        return torch.randn(B * H, T, S), kpm
    raise AssertionError(kind)


@pytest.mark.parametrize("nhead,kind", itertools.product([1, 3, 4], ["none", "bool", "float", "float_soft"]))
def test_multihead_attention_equals_torch(nhead, kind):
    D = 12
    theirs = nn.MultiheadAttention(D, nhead, batch_first=True)
    ours = tl.from_torch(theirs)
    q, k, v = torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, D)
    attn_mask, kpm = _masks(kind, B, T, S, nhead)
    out, w = ours(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    out_t, w_t = theirs(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask, average_attn_weights=False)
    assert w.shape == (B, nhead, T, S)
    assert_close(out, out_t)
    assert_close(w, w_t)
    # torch's default averages the heads
    _, w_avg = theirs(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    assert_close(w.mean(dim=1), w_avg)


def test_fused_and_readable_paths_agree():
    D, H = 16, 4
    ours = tl.MultiHeadAttention(D, H)
    q, k = torch.randn(B, T, D), torch.randn(B, S, D)
    attn_mask, kpm = _masks("bool", B, T, S, H)
    with tl.use_fused(True):
        fused, w = ours(q, k, k, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    assert w is None
    with tl.use_fused(False):
        readable, _ = ours(q, k, k, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    assert_close(fused, readable)
    x = torch.randn(B, T, D)  # self-attention with a causal mask, on both paths
    causal = tl.causal_mask(T)
    with tl.use_fused(True):
        fused, _ = ours(x, x, x, attn_mask=causal, need_weights=False)
    with tl.use_fused(False):
        readable, _ = ours(x, x, x, attn_mask=causal, need_weights=False)
    assert_close(fused, readable)
    x = torch.randn(B, T, D) * 3 + 1
    ln = tl.LayerNorm(D)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-1, 1)
    with tl.use_fused(True):
        a = ln(x)
    with tl.use_fused(False):
        b = ln(x)
    assert_close(a, b)


@pytest.mark.parametrize("norm_first,activation,kind",
                         itertools.product([False, True], ["relu", "gelu"], ["none", "bool", "float"]))
def test_encoder_layer_and_stack_equal_torch(norm_first, activation, kind):
    D, H = 16, 4
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=24, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first, layer_norm_eps=1e-6)
    theirs = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(D), enable_nested_tensor=False)
    ours = tl.from_torch(theirs)
    src = torch.randn(B, S, D)
    attn_mask, kpm = _masks(kind, B, S, S, H)
    assert_close(ours(src, mask=attn_mask, src_key_padding_mask=kpm),
                 theirs(src, mask=attn_mask, src_key_padding_mask=kpm))
    ours_layer, their_layer = tl.from_torch(theirs.layers[0]), theirs.layers[0]
    assert_close(ours_layer(src, src_mask=attn_mask, src_key_padding_mask=kpm),
                 their_layer(src, src_mask=attn_mask, src_key_padding_mask=kpm))


@pytest.mark.parametrize("norm_first,activation,kind",
                         itertools.product([False, True], ["relu", "gelu"], ["none", "bool", "float"]))
def test_decoder_layer_and_stack_equal_torch(norm_first, activation, kind):
    D, H = 16, 4
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=24, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    theirs = nn.TransformerDecoder(layer, num_layers=2)
    ours = tl.from_torch(theirs)
    tgt, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    mem_mask, mem_kpm = _masks(kind, B, T, S, H)
    tgt_mask = tl.causal_mask(T) if kind != "float" else tl.bool_to_additive(tl.causal_mask(T))
    tgt_kpm = None if kind == "none" else torch.zeros(B, T, dtype=torch.bool)
    if kind == "float":
        tgt_kpm = tl.bool_to_additive(tgt_kpm)
    kw = dict(tgt_mask=tgt_mask, memory_mask=mem_mask, tgt_key_padding_mask=tgt_kpm,
              memory_key_padding_mask=mem_kpm)
    assert_close(ours(tgt, memory, **kw), theirs(tgt, memory, **kw))
    assert_close(tl.from_torch(theirs.layers[1])(tgt, memory, **kw), theirs.layers[1](tgt, memory, **kw))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_equals_torch(norm_first):
    D, H = 16, 2
    theirs = nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=32, dropout=0.0,
                            batch_first=True, norm_first=norm_first)
    ours = tl.from_torch(theirs)
    assert isinstance(ours, tl.EncoderDecoder)
    assert tl.count_parameters(ours) == sum(p.numel() for p in theirs.parameters())
    src, tgt = torch.randn(B, S, D), torch.randn(B, T, D)
    _, kpm = _masks("bool", B, T, S, H)
    kw = dict(tgt_mask=tl.causal_mask(T), src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    assert_close(ours(src, tgt, **kw), theirs(src, tgt, **kw))


def test_from_torch_keeps_mode_and_gradients_match():
    D, H = 8, 2
    theirs = nn.TransformerEncoderLayer(D, H, dim_feedforward=16, dropout=0.0, batch_first=True)
    theirs.eval()
    ours = tl.from_torch(theirs)
    assert not ours.training
    x1 = torch.randn(2, 4, D, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    theirs.train(), ours.train()
    theirs(x1).pow(2).sum().backward()
    ours(x2).pow(2).sum().backward()
    assert_close(x1.grad, x2.grad)
    assert_close(theirs.linear1.weight.grad, ours.ff.linear1.weight.grad)


def test_layernorm_equals_torch():
    x = torch.randn(4, 6, 10) * 5 + 3
    theirs = nn.LayerNorm(10, eps=1e-3)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = tl.from_torch(theirs)
    with tl.use_fused(False):
        assert_close(ours(x), theirs(x))
    assert_close(tl.layer_norm(x, theirs.weight, theirs.bias, 1e-3), theirs(x))




# -- the modules torch users actually have: bias=False, batch_first=False, every representable activation --------
# Each case compares outputs in eval mode with a key padding mask and a causal mask. torch's modules run with
# autograd on (their Python forward, not the inference fast path: see the last tests of this file).

def _padding(B, L):
    kpm = torch.zeros(B, L, dtype=torch.bool)
    kpm[1, -2:] = True  # the second sequence ends in two padding positions
    kpm[2, -3:] = True
    return kpm


def _first(x, batch_first):
    """Our inputs are (B, L, D); torch's batch_first=False modules take (L, B, D)."""
    return x if batch_first else x.transpose(0, 1)


def _randomize(module):
    """Non-trivial LayerNorm weights and biases, so that copying them matters."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm) and m.weight is not None:
                m.weight.uniform_(0.5, 1.5)
                if m.bias is not None:
                    m.bias.uniform_(-0.5, 0.5)
    return module.eval()


@pytest.mark.parametrize("bias,batch_first", list(itertools.product([True, False], [True, False])))
def test_multihead_attention_bias_and_layout(bias, batch_first):
    D, H = 12, 3
    theirs = nn.MultiheadAttention(D, H, bias=bias, batch_first=batch_first).eval()
    ours = tl.from_torch(theirs)
    assert (ours.q_proj.bias is None) == (not bias) and (ours.out_proj.bias is None) == (not bias)
    q, kv = torch.randn(B, T, D), torch.randn(B, T, D)
    kpm, causal = _padding(B, T), tl.causal_mask(T)
    out, w = ours(q, kv, kv, key_padding_mask=kpm, attn_mask=causal)
    out_t, w_t = theirs(_first(q, batch_first), _first(kv, batch_first), _first(kv, batch_first),
                        key_padding_mask=kpm, attn_mask=causal, average_attn_weights=False)
    assert_close(out, _first(out_t, batch_first))
    assert_close(w, w_t)


ACTIVATIONS = [("relu", "relu"), (F.relu, "relu"), (nn.ReLU(), "relu"), ("gelu", "gelu"), (F.gelu, "gelu"),
               (nn.GELU(), "gelu"), (nn.GELU(approximate="tanh"), "gelu_tanh")]


@pytest.mark.parametrize("activation,name", ACTIVATIONS, ids=[n + "-" + type(a).__name__ for a, n in ACTIVATIONS])
def test_every_representable_activation_converts_exactly(activation, name):
    D, H = 16, 4
    kw = dict(dim_feedforward=32, dropout=0.0, activation=activation, batch_first=True)
    enc, dec = nn.TransformerEncoderLayer(D, H, **kw).eval(), nn.TransformerDecoderLayer(D, H, **kw).eval()
    ours_enc, ours_dec = tl.from_torch(enc), tl.from_torch(dec)
    assert ours_enc.ff.activation_name == ours_dec.ff.activation_name == name
    src, tgt = torch.randn(B, S, D) * 3, torch.randn(B, T, D) * 3  # * 3: a wide range for the activation
    kpm, tgt_kpm, causal = _padding(B, S), _padding(B, T), tl.causal_mask(T)
    assert_close(ours_enc(src, src_key_padding_mask=kpm), enc(src, src_key_padding_mask=kpm))
    kw = dict(tgt_mask=causal, tgt_key_padding_mask=tgt_kpm, memory_key_padding_mask=kpm)
    assert_close(ours_dec(tgt, src, **kw), dec(tgt, src, **kw))


def test_gelu_tanh_is_not_exact_gelu():
    """The measured defect: tanh-GELU used to convert to exact GELU, 1e-4 away. Now the two differ as in torch."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, 0.0, activation=nn.GELU(approximate="tanh"), batch_first=True)
    exact = tl.from_torch(layer)
    exact.ff.activation = F.gelu  # what the old conversion did
    x = torch.randn(B, S, 16) * 3
    assert (exact(x) - layer(x)).abs().max() > 1e-5
    assert_close(tl.from_torch(layer)(x), layer(x), rtol=0, atol=1e-6)
    assert tl.EncoderLayer(16, 4, activation=nn.GELU(approximate="tanh")).ff.activation_name == "gelu_tanh"
    assert tl.EncoderLayer(16, 4, activation="gelu_tanh").ff.activation is not F.gelu


@pytest.mark.parametrize("bias,batch_first,norm_first", list(itertools.product([True, False], repeat=3)))
def test_encoder_layer_and_stack_bias_and_layout(bias, batch_first, norm_first):
    D, H = 16, 4
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=24, dropout=0.0, activation=nn.GELU(approximate="tanh"),
                                       layer_norm_eps=1e-6, batch_first=batch_first, norm_first=norm_first, bias=bias)
    norm = nn.LayerNorm(D, eps=1e-4, bias=bias)
    theirs = _randomize(nn.TransformerEncoder(layer, num_layers=2, norm=norm, enable_nested_tensor=False))
    ours = tl.from_torch(theirs)
    n_params = sum(p.numel() for p in theirs.parameters())
    assert tl.count_parameters(ours) == n_params
    if not bias:  # torch's bias=False removes every bias: the projections', the FFN's and the LayerNorms'
        assert not [n for n, _ in ours.named_parameters() if n.endswith("bias")]
    src, kpm, causal = torch.randn(B, S, D), _padding(B, S), tl.causal_mask(S)
    assert_close(ours(src, causal, kpm), _first(theirs(_first(src, batch_first), causal, kpm), batch_first))
    their_layer = theirs.layers[1]
    assert_close(tl.from_torch(their_layer)(src, causal, kpm),
                 _first(their_layer(_first(src, batch_first), causal, kpm), batch_first))
    no_norm = _randomize(nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False))  # no final norm
    assert tl.from_torch(no_norm).norm is None
    assert_close(tl.from_torch(no_norm)(src, causal, kpm),
                 _first(no_norm(_first(src, batch_first), causal, kpm), batch_first))


@pytest.mark.parametrize("bias,batch_first,norm_first", list(itertools.product([True, False], repeat=3)))
def test_decoder_layer_and_stack_bias_and_layout(bias, batch_first, norm_first):
    D, H = 16, 4
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=24, dropout=0.0, activation="gelu", layer_norm_eps=1e-6,
                                       batch_first=batch_first, norm_first=norm_first, bias=bias)
    theirs = _randomize(nn.TransformerDecoder(layer, num_layers=2, norm=nn.LayerNorm(D, bias=bias)))
    ours = tl.from_torch(theirs)
    assert tl.count_parameters(ours) == sum(p.numel() for p in theirs.parameters())
    tgt, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    masks = (tl.causal_mask(T), None, _padding(B, T), _padding(B, S))  # tgt, memory, tgt padding, memory padding
    expected = theirs(_first(tgt, batch_first), _first(memory, batch_first), *masks)
    assert_close(ours(tgt, memory, *masks), _first(expected, batch_first))
    their_layer = theirs.layers[0]
    expected = their_layer(_first(tgt, batch_first), _first(memory, batch_first), *masks)
    assert_close(tl.from_torch(their_layer)(tgt, memory, *masks), _first(expected, batch_first))


@pytest.mark.parametrize("bias,batch_first,norm_first", list(itertools.product([True, False], repeat=3)))
def test_transformer_bias_layout_and_norms(bias, batch_first, norm_first):
    D, H = 16, 2
    theirs = _randomize(nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=32,
                                       dropout=0.0, activation=nn.GELU(approximate="tanh"), layer_norm_eps=1e-3,
                                       batch_first=batch_first, norm_first=norm_first, bias=bias))
    src, tgt = torch.randn(B, S, D), torch.randn(B, T, D)
    kw = dict(tgt_mask=tl.causal_mask(T), src_key_padding_mask=_padding(B, S), tgt_key_padding_mask=_padding(B, T),
              memory_key_padding_mask=_padding(B, S))

    def check():
        ours = tl.from_torch(theirs)
        assert isinstance(ours, tl.EncoderDecoder)
        assert tl.count_parameters(ours) == sum(p.numel() for p in theirs.parameters())
        expected = theirs(_first(src, batch_first), _first(tgt, batch_first), **kw)
        assert_close(ours(src, tgt, **kw), _first(expected, batch_first))
        return ours

    assert check().encoder.norm.eps == 1e-3  # the custom eps reaches every norm, the final ones too
    theirs.decoder.norm = None  # final norms absent (one stack, then both)
    assert check().decoder.norm is None
    theirs.encoder.norm = None
    assert check().encoder.norm is None


def test_transformer_with_a_custom_encoder_of_torch_layers():
    D, H = 16, 4
    layer = nn.TransformerEncoderLayer(D, H, 24, 0.0, activation="relu", layer_norm_eps=1e-4, batch_first=True)
    custom = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(D, eps=1e-3), enable_nested_tensor=False)
    theirs = _randomize(nn.Transformer(D, H, num_decoder_layers=2, dim_feedforward=32, dropout=0.0,
                                       activation="gelu", custom_encoder=custom, batch_first=True))
    ours = tl.from_torch(theirs)
    assert [lyr.ff.activation_name for lyr in ours.encoder.layers] == ["relu"] * 3
    assert [lyr.ff.activation_name for lyr in ours.decoder.layers] == ["gelu"] * 2
    src, tgt = torch.randn(B, S, D), torch.randn(B, T, D)
    kw = dict(tgt_mask=tl.causal_mask(T), src_key_padding_mask=_padding(B, S), memory_key_padding_mask=_padding(B, S))
    assert_close(ours(src, tgt, **kw), theirs(src, tgt, **kw))


@pytest.mark.parametrize("elementwise_affine,bias", [(True, True), (True, False), (False, True)])
def test_layernorm_without_bias_or_affine(elementwise_affine, bias):
    theirs = _randomize(nn.LayerNorm(10, eps=1e-3, elementwise_affine=elementwise_affine, bias=bias))
    ours = tl.from_torch(theirs)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    x = torch.randn(4, 6, 10) * 5 + 3
    for fused in (True, False):
        with tl.use_fused(fused):
            assert_close(ours(x), theirs(x))


class _MyLayer(nn.TransformerEncoderLayer):
    def forward(self, src, *args, **kwargs):
        return 2 * super().forward(src, *args, **kwargs)


def _with(module, **parts):
    for name, part in parts.items():
        setattr(module, name, part)
    return module


REFUSED = [  # (module, error type, words the message must contain)
    (lambda: nn.MultiheadAttention(8, 2, kdim=4, vdim=4), ValueError, ["kdim=4", "vdim=4"]),
    (lambda: nn.MultiheadAttention(8, 2, add_bias_kv=True), ValueError, ["add_bias_kv"]),
    (lambda: nn.MultiheadAttention(8, 2, add_zero_attn=True), ValueError, ["add_zero_attn"]),
    (lambda: nn.LayerNorm((4, 8)), ValueError, ["LayerNorm", "normalized_shape=(4, 8)"]),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation=nn.SiLU()), ValueError, ["activation", "SiLU()", "gelu_tanh"]),
    (lambda: nn.TransformerDecoderLayer(8, 2, activation=lambda x: x), ValueError, ["activation", "<lambda>"]),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation=nn.ReLU6()), ValueError, ["ReLU6()"]),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation=_with(nn.GELU(), approximate="sigmoid")), ValueError,
     ["GELU(approximate='sigmoid')"]),
    (lambda: _with(nn.TransformerEncoderLayer(8, 2), norm2=nn.RMSNorm(8)), ValueError,
     ["TransformerEncoderLayer.norm2", "RMSNorm"]),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 2, norm=nn.RMSNorm(8),
                                   enable_nested_tensor=False), ValueError, ["TransformerEncoder.norm", "RMSNorm"]),
    (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), 2, norm=nn.Identity()), ValueError,
     ["TransformerDecoder.norm", "Identity"]),
    (lambda: nn.Transformer(8, 2, custom_encoder=nn.Identity()), ValueError, ["custom_encoder", "Identity"]),
    (lambda: nn.Transformer(8, 2, num_encoder_layers=1, custom_decoder=nn.Identity()), ValueError,
     ["custom_decoder", "Identity"]),
    (lambda: nn.TransformerEncoder(_MyLayer(8, 2), 2, enable_nested_tensor=False), ValueError,
     ["layers[0]", "_MyLayer"]),
    (lambda: _MyLayer(8, 2), ValueError, ["subclass", "_MyLayer"]),
    (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), 0), ValueError, ["num_layers=0"]),
    (lambda: nn.Linear(3, 3), TypeError, ["module must be one of", "Linear"]),
]


@pytest.mark.parametrize("make,error,words", REFUSED, ids=range(len(REFUSED)))
def test_from_torch_refuses_what_it_cannot_represent(make, error, words):
    with pytest.raises(error) as info:
        tl.from_torch(make())
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_layers_take_torchs_arguments_in_torchs_order():
    """Ours take the arguments torch's layers take, in the same positions; extras are keyword-only."""
    pairs = [(tl.EncoderLayer, nn.TransformerEncoderLayer), (tl.DecoderLayer, nn.TransformerDecoderLayer),
             (tl.Encoder, nn.TransformerEncoder), (tl.Decoder, nn.TransformerDecoder)]
    not_taken = {"device", "dtype", "enable_nested_tensor", "mask_check",  # constructors
                 "is_causal", "tgt_is_causal", "memory_is_causal"}  # forward's hints (pass the mask itself)
    for ours, theirs in pairs:
        for method in ("__init__", "forward"):
            def positional(cls, method=method):
                params = list(inspect.signature(getattr(cls, method)).parameters.values())[1:]
                return [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
            expected = [name for name in positional(theirs) if name not in not_taken]
            assert positional(ours) == expected, (ours.__name__, method)
    params = inspect.signature(tl.DecoderLayer.forward).parameters
    assert params["cache"].kind == inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(tl.Decoder.forward).parameters["cache"].kind == inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(tl.EncoderDecoder).parameters["final_norm"].kind == inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(ValueError, match="batch_first must be True .* got False"):
        tl.EncoderLayer(8, 2, batch_first=False)
    with pytest.raises(ValueError, match="batch_first must be True"):
        tl.EncoderDecoder(8, 2, 1, 1, 16, batch_first=False)
    with pytest.raises(ValueError, match=r"activation must be 'relu', 'gelu' or 'gelu_tanh' .* got 'tanh'"):
        tl.DecoderLayer(8, 2, activation="tanh")


def test_layer_forwards_return_one_type():
    D, H = 16, 4
    enc_layer, dec_layer = tl.EncoderLayer(D, H, 32, 0.0).eval(), tl.DecoderLayer(D, H, 32, 0.0).eval()
    encoder, decoder = tl.Encoder(enc_layer, 2), tl.Decoder(dec_layer, 3)
    src, tgt, kpm, causal = torch.randn(B, S, D), torch.randn(B, T, D), _padding(B, S), tl.causal_mask(T)
    out = enc_layer(src, src_key_padding_mask=kpm)
    assert isinstance(out, torch.Tensor)
    out2, w = enc_layer.forward_with_attention(src, src_key_padding_mask=kpm)
    assert_close(out, out2)
    assert w.shape == (B, H, S, S) and (w[1, :, :, -2:] == 0).all()
    out = encoder(src, src_key_padding_mask=kpm)
    res = encoder.forward_with_attention(src, src_key_padding_mask=kpm)
    assert isinstance(out, torch.Tensor) and len(res.weights) == 2
    assert_close(out, res.output)
    out = dec_layer(tgt, src, causal, memory_key_padding_mask=kpm)
    res = dec_layer.forward_with_attention(tgt, src, causal, memory_key_padding_mask=kpm)
    assert isinstance(out, torch.Tensor)
    assert_close(out, res.output)
    assert res.self_weights.shape == (B, H, T, T) and res.cross_weights.shape == (B, H, T, S)
    assert (res.self_weights[..., causal] == 0).all() and (res.cross_weights[1, ..., -2:] == 0).all()
    out = decoder(tgt, src, causal, memory_key_padding_mask=kpm)
    res = decoder.forward_with_attention(tgt, src, causal, memory_key_padding_mask=kpm)
    assert isinstance(out, torch.Tensor) and len(res.self_weights) == len(res.cross_weights) == 3
    assert_close(out, res.output)


# -- the docstring's claims about torch's own inference fast path (eval mode, autograd off) ---------------------

def test_torch_fast_path_treats_tanh_gelu_as_exact_gelu():
    torch.manual_seed(0)
    tanh = nn.TransformerEncoderLayer(16, 4, 32, 0.0, activation=nn.GELU(approximate="tanh"), batch_first=True)
    exact = nn.TransformerEncoderLayer(16, 4, 32, 0.0, activation="gelu", batch_first=True)
    exact.load_state_dict(tanh.state_dict())
    tanh.eval(), exact.eval()
    x = torch.randn(B, S, 16) * 3
    slow = tanh(x)  # autograd on: the Python forward, with tanh-GELU
    with torch.no_grad():
        fast = tanh(x)
        assert_close(fast, exact(x))
    assert (fast - slow).abs().max() > 1e-5
    assert_close(tl.from_torch(tanh)(x), slow)


def test_torch_fast_path_zeroes_padding_positions_of_nested_tensors():
    torch.manual_seed(0)
    theirs = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, 0.0, batch_first=True), 2).eval()
    src, kpm = torch.randn(B, S, 16), _padding(B, S)
    slow = theirs(src, src_key_padding_mask=kpm)
    with torch.no_grad():
        fast = theirs(src, src_key_padding_mask=kpm)
    assert (fast[kpm] == 0).all() and (slow[kpm] != 0).any()
    assert_close(fast[~kpm], slow[~kpm])
    assert_close(tl.from_torch(theirs)(src, src_key_padding_mask=kpm), slow)
