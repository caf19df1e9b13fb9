"""transformer_lite.book.interactive / viz / plotting: the HTML the static site gets, and the live widgets."""
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import transformer_lite as tl  # noqa: E402
from transformer_lite.book import interactive, plotting, viz  # noqa: E402


def draw(n, kind):
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot(range(n), label=kind)
    ax.set_title(f"{kind} {n}")
    return fig


def data_of(html):
    m = re.search(r'<script type="application/json" class="tl-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def ids(html):
    return re.findall(r'\bid="([^"]+)"', html)


# ------------------------------------------------------------------ explore, static

def test_explore_html_precomputes_every_combination():
    html = interactive.explore_html(draw, n=[2, 3, 5], kind=["a", "b"])
    d = data_of(html)
    assert d["sizes"] == [3, 2]
    assert len(d["index"]) == 6 and len(set(d["index"])) == 6  # six different figures
    assert d["frames"].count(None) == 1  # the initial frame is in the page once, not in the data too
    assert html.count("data:image/png;base64,") == 6
    assert 'type="range"' in html and "<select" in html  # numbers -> slider, strings -> drop-down
    assert d["labels"] == [["2", "3", "5"], ["a", "b"]]
    assert plt.get_fignums() == []  # every figure closed


def test_explore_html_shares_identical_frames():
    html = interactive.explore_html(lambda n, unused: f"<b>{n}</b>", n=[1, 2], unused=["x", "y", "z"])
    d = data_of(html)
    assert len(d["index"]) == 6 and len(d["frames"]) == 2


def test_explore_html_has_no_widgets_and_unique_ids():
    a = interactive.explore_html(draw, n=[2, 3], kind=["a"])
    b = interactive.explore_html(draw, n=[2, 3], kind=["a"])
    all_ids = ids(a) + ids(b)
    assert len(all_ids) == len(set(all_ids))
    assert "widget" not in a


def test_explore_initial_value_and_printing():
    def noisy(k):
        print(f"k is {k}")
        return f"<i>{k}</i>"

    html = interactive.explore_html(noisy, initial={"k": "b"}, k=["a", "b", "c"])
    frame = re.search(r'<div class="tl-frame">(.*?)</div>', html, re.S).group(1)
    assert "k is b" in frame and "<i>b</i>" in frame
    assert '<option value="1" selected>' in html


@pytest.mark.parametrize("controls, match", [
    ({"n": list(range(10)), "kind": list("abcde")}, "'n'"),  # 50 frames
    ({"n": []}, "'n'"),
    ({}, "at least one control"),
])
def test_explore_rejects_bad_controls(controls, match):
    with pytest.raises(ValueError, match=match):
        interactive.explore_html(draw, **controls)


def test_explore_rejects_non_lists():
    with pytest.raises(TypeError, match="'n'"):
        interactive.explore_html(draw, n=3)
    with pytest.raises(ValueError, match="initial"):
        interactive.explore_html(draw, initial={"m": 1}, n=[1])


def test_static_mode_displays_one_html_output(monkeypatch):
    shown = []
    monkeypatch.setenv("TRANSFORMER_LITE_STATIC", "1")
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    interactive.explore(draw, n=[2, 3], kind=["a"])
    interactive.live_text(lambda t: t.upper(), ["one", "two"])
    assert len(shown) == 2
    assert all(type(o).__name__ == "HTML" for o in shown)


def test_live_mode_builds_widgets(monkeypatch):
    import ipywidgets as widgets

    calls, shown = [], []
    monkeypatch.delenv("TRANSFORMER_LITE_STATIC", raising=False)
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))

    def f(n, kind):
        calls.append((n, kind))
        return f"<b>{n}{kind}</b>"

    interactive.explore(f, n=[2, 3], kind=["a", "b"])
    boxes = [o for o in shown if isinstance(o, widgets.VBox)]
    assert len(boxes) == 1
    box = boxes[0]
    controls = box.children[0].children
    assert isinstance(controls[0], widgets.SelectionSlider) and isinstance(controls[1], widgets.Dropdown)
    controls[1].value = 1  # pick "b": draw runs live
    assert calls[-1] == (2, "b")


def test_live_text_static_html():
    html = interactive.live_text_html(lambda t: t[::-1], ["abc", "xyz"])
    d = data_of(html)
    assert d["frames"][0] is None and "zyx" in d["frames"][1]
    assert "cba" in html and "Jupyter or Colab" in html
    assert html.count("<option") == 2
    with pytest.raises(ValueError, match="examples"):
        interactive.live_text_html(str, [])


# ------------------------------------------------------------------ viz (bertviz)

@pytest.fixture(scope="module")
def maps():
    torch.manual_seed(0)
    model = tl.Transformer(40, 40, d_model=64, nhead=8, num_encoder_layers=6, num_decoder_layers=6)
    src = torch.randint(4, 40, (2, 20))
    tgt = torch.randint(4, 40, (2, 20))
    return model.attention_maps(src, tgt)


TOK = [f"w{i}" for i in range(20)]


def params_of(html):
    m = re.search(r'<script type="application/json" id="[^"]+-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_head_view_rounds_to_3_decimals_and_writes_data_once(maps):
    html = viz.head_view_html(maps.encoder, TOK)
    p = params_of(html)
    attn = np.array(p["attention"][0]["attn"])
    assert attn.shape == (6, 8, 20, 20)
    want = maps.encoder[0][0].numpy()
    np.testing.assert_allclose(attn[0], want, atol=5e-4)  # 3 decimals
    assert not re.search(r"\d\.\d{4,}", html.split("-data\">", 1)[1].split("</script>", 1)[0])
    assert html.count('"attention":') == 1 and html.count("PYTHON_PARAMS") == 0
    size = len(html.encode())
    assert size < 150 * 1024, size  # bertviz itself writes ~820 KiB for this


def test_head_view_batch_index_and_all_three_kinds(maps):
    html = viz.head_view_html(maps, TOK, TOK[:20], batch_index=1)
    p = params_of(html)
    assert [a["name"] for a in p["attention"]] == ["Encoder", "Decoder", "Cross"]
    np.testing.assert_allclose(np.array(p["attention"][2]["attn"])[5], maps.cross[5][1].numpy(), atol=5e-4)
    assert html.count("<option value=") == 3


def test_views_have_unique_ids(maps):
    a = viz.head_view_html(maps, TOK, TOK)
    b = viz.model_view_html(maps, TOK, TOK)
    c = viz.head_view_html(maps.encoder, TOK)
    all_ids = ids(a) + ids(b) + ids(c)
    assert len(all_ids) == len(set(all_ids))
    for h in (a, b):  # bertviz's shared ids rewritten per view
        assert "#layer" not in h and "#vis`" not in h and 'select("#attention")' not in h
    assert "window.tlRequire" in a  # the site's own require.js/d3/jquery when served by the book


def test_model_view_scales_to_the_column(maps):
    html = viz.model_view_html(maps.encoder, TOK)
    assert '"viewBox"' in html and '.attr("width", "100%")' in html


def unnamed_controls(html):
    """Form controls without an accessible name: neither inside a <label> with text, nor aria-label(ledby)."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.labels, self.bad = [], []  # open <label>s: [text seen so far], the controls inside each

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "label":
                self.labels.append(["", []])
            elif tag in ("select", "input") and not (a.get("aria-label") or a.get("aria-labelledby")):
                (self.labels[-1][1] if self.labels else self.bad).append(a.get("id", tag))

        def handle_data(self, data):
            for label in self.labels:
                label[0] += data

        def handle_endtag(self, tag):
            if tag == "label" and self.labels:
                text, controls = self.labels.pop()
                if not text.strip():
                    self.bad += controls

    p = P()
    p.feed(html)
    return p.bad


def test_every_control_has_an_accessible_name(maps):
    """axe-core's select-name on the site: each drop-down (and slider) is named by its <label>."""
    pages = [interactive.explore_html(draw, n=[2, 3], kind=["a", "b"]),
             interactive.live_text_html(str.upper, ["ab", "cd"]),
             viz.head_view_html(maps, TOK, TOK), viz.model_view_html(maps, TOK, TOK),
             viz.head_view_html(maps.encoder, TOK)]
    for html in pages:
        assert "<select" in html or 'type="range"' in html
        assert unnamed_controls(html) == []
    assert unnamed_controls('<select id="x"></select>') == ["x"]  # the helper does catch one
    assert unnamed_controls('<label> <select id="y"></select></label>') == ["y"]
    head = pages[2]
    assert re.search(r'<label>Layer: <select id="tl-bertviz-\d+-layer"></select></label>', head)
    assert re.search(r'<label>Attention: <select id="tl-bertviz-\d+-filter">', head)


def test_viz_rejects_bad_input(maps):
    with pytest.raises(ValueError, match="tokens"):
        viz.head_view_html(maps.encoder, TOK[:5])
    with pytest.raises(ValueError, match="tgt_tokens"):
        viz.head_view_html(maps, TOK)
    with pytest.raises(ValueError, match="batch_index"):
        viz.head_view_html(maps.encoder, TOK, batch_index=5)
    with pytest.raises(TypeError, match="maps"):
        viz.head_view_html(torch.zeros(1, 2, 3, 3), TOK[:3])


# ------------------------------------------------------------------ plotting

def test_plotting_returns_figures_and_checks_shapes():
    plotting.use_book_style()
    assert matplotlib.rcParams["figure.facecolor"] == "white"
    w = torch.softmax(torch.randn(3, 4), -1)
    ax = plotting.attention_heatmap(w, list("abc"), list("wxyz"), title="t")
    assert ax.get_title() == "t" and ax.get_xlabel()
    fig = plotting.attention_grid(torch.softmax(torch.randn(3, 2, 4), -1))
    assert len([a for a in fig.axes if a.get_title().startswith("head")]) == 3
    ax = plotting.pe_heatmap(tl.sinusoidal_positional_encoding(10, 8))
    assert ax.get_ylabel() == "position pos"
    ax = plotting.loss_curves({"a": [3, 2, 1], "b": [3, 1, 0.5]}, logy=True)
    assert ax.get_yscale() == "log" and len(ax.lines) == 2
    with pytest.raises(ValueError, match="key_tokens"):
        plotting.attention_heatmap(w, list("abc"), list("xy"))
    with pytest.raises(ValueError, match="weights"):
        plotting.attention_grid(w)
    plt.close("all")


def test_a_draw_function_that_returns_nothing_is_refused_on_the_static_page():
    # plt.show() inside draw() leaves nothing to store: the static control would switch between empty frames
    def draw(x):
        pass

    with pytest.raises(TypeError, match="returned None and printed nothing"):
        interactive.explore_html(draw, x=[1, 2])
