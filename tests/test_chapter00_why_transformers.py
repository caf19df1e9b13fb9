"""Chapter 0 (why Transformers): the chapter's claims, checked through the package.

The RNN loop, the operation counter and the path-length search are teaching code that lives only
in the notebook; they are read from the notebook here (not pasted twice). Timings are not tested:
they depend on the machine and its load.
"""
import json
import re
from collections import deque
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

import transformer_lite as tl
from notebook_code import code_cell
from transformer_lite.book import N_

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "00_why_transformers.ipynb"
D = 64


def _cell(startswith):
    return code_cell(NOTEBOOK, startswith)


@pytest.fixture(scope="module")
def teaching():
    """rnn_loop (with its cell and nn.RNN), CountOps, path_length and the two graphs, from the notebook."""
    ns = {"torch": torch, "nn": nn, "tl": tl, "deque": deque, "TorchFunctionMode": TorchFunctionMode, "N_": N_}
    exec(_cell("torch.manual_seed(0)\nD = 64"), ns)
    exec(_cell("class CountOps").split("\nlengths =")[0], ns)
    exec(_cell("def rnn_graph").split("\nfor T in")[0], ns)
    exec(_cell("def path_length"), ns)
    return ns


def test_rnn_loop_equals_nn_rnn(teaching):
    x = torch.randn(3, 12, D)
    with torch.no_grad():
        torch.testing.assert_close(teaching["rnn_loop"](x), teaching["rnn"](x)[0])


def test_attention_positions_are_independent():
    attn = tl.MultiHeadAttention(D, 4).eval()
    x = torch.randn(2, 9, D)
    with torch.no_grad():
        y, _ = attn(x, x, x)
        for t in reversed(range(9)):
            torch.testing.assert_close(attn(x[:, t:t + 1], x, x)[0], y[:, t:t + 1])


def test_call_counts_see_the_python_loop_not_the_dependencies(teaching):
    # The deep dive's point: the Python loop's calls grow with T, nn.RNN's do not (yet it runs T steps inside).
    attn = tl.MultiHeadAttention(D, 4).eval()
    rnn_counts, c_rnn_counts, attn_counts = [], [], []
    for T in (3, 10, 40):
        x = torch.randn(1, T, D)
        with torch.no_grad():
            for layer, counts in ((teaching["rnn_loop"], rnn_counts), (lambda x: teaching["rnn"](x), c_rnn_counts),
                                  (lambda x: attn(x, x, x, need_weights=False), attn_counts)):
                with teaching["CountOps"]() as c:
                    layer(x)
                counts.append(c.count)
    assert len(set(attn_counts)) == 1 and len(set(c_rnn_counts)) == 1
    per_token = (rnn_counts[1] - rnn_counts[0]) / 7
    assert per_token >= 1 and rnn_counts[2] - rnn_counts[1] == per_token * 30


@pytest.mark.parametrize("T", [1, 2, 7, 50])
def test_sequential_steps_are_the_longest_chain_of_the_dependency_graph(teaching, T):
    assert teaching["longest_chain"](teaching["rnn_graph"](T)) == T
    assert teaching["longest_chain"](teaching["attention_graph"](T)) == 1
    # a graph whose longest chain is not its shortest path: 0 -> 1 -> 2 -> 3 and 0 -> 3
    assert teaching["longest_chain"]({0: [1, 3], 1: [2], 2: [3]}) == 3


def test_the_stacked_rnn_takes_T_plus_L_minus_1_steps():
    from transformer_lite.book.check import ch00
    assert [ch00._stacked_rnn_steps(T, L) for T, L in ((1, 1), (10, 1), (10, 3), (64, 6))] == [1, 10, 12, 69]


def test_path_lengths(teaching):
    T = 20
    for d in (0, 5, 19):
        assert teaching["path_length"](teaching["rnn_graph"](T), ("x", 0), ("h", d)) == d + 1
        assert teaching["path_length"](teaching["attention_graph"](T), ("x", 0), ("y", d)) == 1


def test_gradient_from_far_tokens_vanishes_for_the_rnn_not_for_attention():
    torch.manual_seed(0)
    T = 64
    rnn = nn.RNN(D, D, batch_first=True)
    attn = tl.MultiHeadAttention(D, 4).eval()
    grads = []
    for layer in (lambda x: rnn(x)[0], lambda x: attn(x, x, x)[0]):
        x = torch.randn(1, T, D, requires_grad=True)
        layer(x)[0, -1].sum().backward()
        grads.append(x.grad[0].norm(dim=1))
    g_rnn, g_attn = grads
    assert g_rnn[0] < 1e-10 * g_rnn[-1]
    assert g_attn.min() > 1e-2 * g_attn.max()


def _toc_chapters_and_appendices() -> dict[str, str]:
    """{number or letter: file} of every chapter and appendix in _toc.yml: the notebooks (03, 13b, A, C) and the
    pages whose title names an appendix (the glossary, B); the references and notices are neither."""
    import yaml

    toc = yaml.safe_load((NOTEBOOK.parents[1] / "_toc.yml").read_text(encoding="utf-8"))
    out = {}
    for part in toc["parts"]:
        for entry in part["chapters"]:
            file = entry["file"]
            name = file.split("/")[-1]
            if m := re.fullmatch(r"(\d\d)([a-z]?)_\w+", name):
                out[str(int(m.group(1))) + m.group(2)] = file
            elif m := re.fullmatch(r"appendix_([a-z])_\w+", name):
                out[m.group(1).upper()] = file
            else:
                title = (NOTEBOOK.parents[1] / f"{file}.md").read_text(encoding="utf-8").splitlines()[0]
                if m := re.match(r"# Appendix ([A-Z])\b", title):
                    out[m.group(1)] = file
    return out


def test_the_toc_has_the_chapters_and_appendices_the_maps_must_show():
    parts = _toc_chapters_and_appendices()
    assert set(parts) == {str(n) for n in range(16)} | {"13b", "A", "B", "C"}
    assert parts["B"] == "book/glossary" and parts["13b"] == "notebooks/13b_real_sentences"


def test_architecture_map_links_every_chapter():
    """Chapter 0's map links every other chapter and appendix of _toc.yml: its boxes, its stacks' labels and its
    "Also in the book" list."""
    shown = []
    cell = {"HTML": str, "display": shown.append}
    exec(_cell("# The architecture map"), cell)  # the notebook's own cell, which asserts too
    targets = {box[1] for box in cell["ENCODER"] + cell["DECODER"] + cell["ALSO"] + cell["STACKS"]}
    linked = {"notebooks/" + t if "/" not in t else t.removeprefix("../").removesuffix(".md") for t in targets}
    assert all(f'href="{t if t.endswith(".md") else t + ".ipynb"}"' in shown[0] for t in targets)
    expected = {file for key, file in _toc_chapters_and_appendices().items() if key != "0"}
    assert linked == expected, (sorted(expected - linked), sorted(linked - expected))


@pytest.mark.parametrize("name, appendix", [("architecture_map.svg", "Appendix"),
                                            ("architecture_map.zh_CN.svg", "附录")])
def test_the_intros_map_names_every_chapter_and_appendix(name, appendix):
    """The landing page's map in each edition (book/architecture_map.svg, .zh_CN.svg) names every chapter and
    appendix of _toc.yml but chapter 0 (whose own map the page points to): a chapter by its number after a "·", an
    appendix by its title ("Appendix A: ...")."""
    svg = (NOTEBOOK.parents[1] / "book" / name).read_text(encoding="utf-8")
    named = set(re.findall(r"· (\d+[a-z]?)</t", svg)) | set(re.findall(rf">{appendix} ([A-Z])[:：]", svg))
    assert named == set(_toc_chapters_and_appendices()) - {"0"}


def test_no_recurrent_scale_keeps_the_rnn_gradient_balanced_over_256_tokens():
    D_, T = 64, 256
    attn = tl.MultiHeadAttention(D_, 4).eval()
    for scale in (0.5, 1.0, 2.0, 2.5, 3.0, 3.5, 4.0):
        torch.manual_seed(0)
        rnn = nn.RNN(D_, D_, batch_first=True)
        with torch.no_grad():
            rnn.weight_hh_l0.mul_(scale)
        x = torch.randn(1, T, D_, requires_grad=True)
        rnn(x)[0][0, -1].sum().backward()
        g = x.grad[0].norm(dim=1)
        assert g.max() / g.min().clamp(min=1e-38) > 100, scale
    x = torch.randn(1, T, D_, requires_grad=True)
    attn(x, x, x)[0][0, -1].sum().backward()
    g = x.grad[0].norm(dim=1)
    assert g.max() / g.min() < 100


def test_chapter_0_leaves_the_benchmarks_to_chapter_12_and_says_how_to_use_the_book_first():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    text = "".join("".join(c["source"]) for c in cells)
    assert "benchmark_results()" not in text and "[chapter 12](12_inference.ipynb)" in text
    headings = [line for c in cells if c["cell_type"] == "markdown" for line in c["source"] if line.startswith("## ")]
    assert headings[0].strip() == "## How to use this book"


@pytest.fixture(scope="module")
def bottleneck():
    """The linear RNN with a rotation as its recurrent matrix, and the least-squares read-out, from the notebook."""
    ns = {"torch": torch, "math": __import__("math")}
    exec(_cell("torch.manual_seed(0)\nD_state, d_in"), ns)
    return ns


@pytest.mark.parametrize("T", [2, 4, 12, 24])
def test_the_last_state_holds_at_most_D_numbers_worth_of_the_sentence(bottleneck, T):
    ns = bottleneck
    D, d = ns["D_state"], ns["d_in"]
    torch.testing.assert_close(ns["W"] @ ns["W"].T, torch.eye(D), atol=1e-5, rtol=1e-5)  # a rotation
    g = torch.Generator().manual_seed(T)
    sentences = torch.randn(3000, T, d, generator=g)
    states = ns["linear_rnn"](sentences)
    assert abs(ns["readable_fraction"](states[:, -1], sentences.flatten(1)) - min(1.0, D / (T * d))) < 0.05
    assert ns["readable_fraction"](states.flatten(1), sentences.flatten(1)) > 0.999  # all the states: everything


def test_the_base_configuration_is_the_papers():
    base = tl.TransformerConfig()
    assert (base.num_encoder_layers, base.num_decoder_layers, base.d_model, base.nhead, base.dim_feedforward,
            base.dropout, base.norm_first) == (6, 6, 512, 8, 2048, 0.1, False)
    model = nn.Transformer()
    layer = model.encoder.layers[0]
    assert (len(model.encoder.layers), len(model.decoder.layers), model.d_model, layer.self_attn.num_heads,
            layer.linear1.out_features) == (6, 6, 512, 8, 2048)
