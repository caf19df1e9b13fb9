"""The package's language switch (transformer_lite/book/i18n.py) and its one catalog (locale/zh_CN.po).

* ``set_language`` / ``$TRANSFORMER_LITE_LANGUAGE`` / ``setup(language=...)`` accept "en" and "zh" only;
* every message a reader sees is wrapped in ``tr``/``N_`` where it is written (package_catalog.unwrapped);
* the catalog holds every wrapped message, as Babel extracts them, none stale, every one translated (no fuzzy),
  with the same {fields} (package_catalog.problems; ``bookbuild/i18n.py package`` fixes the list);
* in Chinese, every registered wrong answer of every exercise, every skeleton, every message of a check (filled
  with data), predict/reveal give Chinese with no English sentence left; in English they read as before;
* the figures' default labels, the controls, the translator box (its HTML and the texts its script writes) follow
  the language, and matplotlib draws the Chinese labels with a CJK font (no missing glyph).
"""
from __future__ import annotations

import inspect
import json
import re
import warnings
from pathlib import Path

import pytest

from bookbuild.translation import package_catalog
from transformer_lite.book import check, i18n
from transformer_lite.book.i18n import set_language, tr

ROOT = Path(__file__).resolve().parent.parent

HAN = re.compile(r"[\u3400-\u9fff]")
# quoted data ('…', "…", “…”, `…`) and <tokens> are not prose
QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|“[^”]*”|`[^`]*`|<[^>\s]*>")
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef“”]+")  # Chinese and its punctuation end a run
WORD = re.compile(r"[A-Za-z][a-z]+[,.;:!?]?")
CODE_WORDS = {"sin", "cos", "exp", "log", "max", "min", "sqrt", "softmax", "argmax", "argmin", "ids", "mask", "pad"}


def english_runs(text: str, n: int = 3) -> list[str]:
    """Runs of at least ``n`` plain English words (code, numbers, quoted data and Chinese break a run)."""
    runs, run = [], []
    for token in CJK.sub(" | ", QUOTED.sub(" | ", text)).split() + [""]:
        if WORD.fullmatch(token) and token.rstrip(",.;:!?") not in CODE_WORDS:
            run.append(token)
            continue
        if len(run) >= n:
            runs.append(" ".join(run))
        run = []
    return runs


def assert_chinese(text: str, what: str):
    assert HAN.search(text), f"{what}: no Chinese in {text!r}"
    assert not english_runs(text), f"{what}: English left in {text!r}: {english_runs(text)}"


@pytest.fixture(autouse=True)
def english_afterwards():
    before = i18n._current
    yield
    i18n._current = before


def test_the_detector_sees_english_and_not_code():
    assert english_runs("✗ 练习 3.1：my_test accepts the suspect, which is wrong.") == \
        ["accepts the suspect, which is wrong."]
    assert english_runs("✗ 练习 3.1：my_diagnosis 应为 'no scale'、'softmax over the queries' 之一") == []
    assert english_runs("softmax(Q Kᵀ / √d_k) V，K.transpose(-2, -1)") == []


# ---- the switch ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["fr", "EN", "zh_CN", ""])
def test_set_language_names_what_it_accepts(bad):
    with pytest.raises(ValueError, match=r"language must be one of 'en', 'zh', got " + re.escape(repr(bad))):
        set_language(bad)


@pytest.mark.parametrize("bad", [None, 1, ["zh"]])
def test_set_language_wants_a_str(bad):
    with pytest.raises(TypeError, match=r"language must be a str.*got " + type(bad).__name__):
        set_language(bad)


def test_the_environment_chooses_the_default(monkeypatch):
    for value, expected in ((None, "en"), ("en", "en"), ("zh", "zh")):
        i18n._current = None
        if value is None:
            monkeypatch.delenv(i18n.ENV, raising=False)
        else:
            monkeypatch.setenv(i18n.ENV, value)
        assert i18n.language() == expected
    i18n._current = None
    monkeypatch.setenv(i18n.ENV, "chinese")
    with pytest.raises(ValueError, match=r"got 'chinese' from \$TRANSFORMER_LITE_LANGUAGE"):
        i18n.language()


def test_the_set_up_line_speaks_the_language(capsys):
    import platform

    import torch

    import transformer_lite
    from transformer_lite.book.notebook import setup

    device = setup(seed=3, language="en")
    english = (f"python {platform.python_version()} | torch {torch.__version__} | transformer_lite "
               f"{transformer_lite.__version__} | device {device} | threads {torch.get_num_threads()} | seed 3")
    assert capsys.readouterr().out.splitlines()[0] == english  # as the f-string printed it before
    setup(seed=3, language="zh")
    chinese = capsys.readouterr().out.splitlines()[0]
    assert chinese == english.replace("device", "设备").replace("threads", "线程数").replace("seed", "随机种子")
    assert_chinese(chinese, "the set-up line")


def test_setup_sets_the_language_and_leaves_it_by_default(capsys):
    from transformer_lite.book.notebook import setup

    set_language("en")
    setup(seed=0, language="zh")
    assert i18n.language() == "zh"
    setup(seed=0)
    assert i18n.language() == "zh"
    with pytest.raises(ValueError, match="language must be one of"):
        setup(seed=0, language="de")
    setup(seed=0, language="en")
    assert i18n.language() == "en"


def test_tr_translates_formats_and_falls_back_to_english():
    set_language("zh")
    assert tr("training step") == "训练步数"
    assert tr("head {h}", h=3) == "头 3"
    assert tr("a string the catalog does not have") == "a string the catalog does not have"
    assert tr("a string the catalog does not have {x}", x=1) == "a string the catalog does not have 1"
    assert tr("a template without fields keeps its {braces}") == "a template without fields keeps its {braces}"
    assert tr("you predicted {guess}; the cell measured {measured}.") == \
        "你预测的是 {guess}；单元格测得的是 {measured}。"  # a template the page fills: its fields kept
    set_language("en")
    assert tr("training step") == "training step" and tr("head {h}", h=3) == "head 3"
    with pytest.raises(TypeError, match="english must be a str"):
        tr(None)



def test_numbers_and_columns_follow_the_language():
    """English groups thousands with commas, Chinese writes none (STYLE.md §5); a Han character is two columns."""
    assert (i18n.grouped(181377), i18n.grouped(60611.62, ".1f"), i18n.grouped(2e4, ".0f")) == \
        ("181,377", "60,611.6", "20,000")
    assert f"{i18n.grouped(1234.5, '.2f'):>10}|" == "  1,234.50|"
    assert i18n.ljust("init", 8) == "init    " and i18n.ljust("初始化", 8) == "初始化  "
    set_language("zh")
    assert (i18n.grouped(181377), i18n.grouped(60611.62, ".1f"), i18n.grouped(2e4, ".0f")) == \
        ("181377", "60611.6", "20000")
    assert f"{i18n.grouped(1234.5, '.2f'):>10}|" == "   1234.50|"
    with pytest.raises(ValueError, match="a width goes outside"):
        i18n.grouped(1.5, ">10.1f")

# ---- the catalog -----------------------------------------------------------------------------------------------

def test_the_catalog_has_every_message_translated_and_nothing_stale():
    assert package_catalog.problems() == []


def test_the_catalog_reader_reads_what_polib_reads():
    import polib

    po = polib.pofile(str(package_catalog.CATALOG), wrapwidth=0)
    assert i18n.catalog() == {(e.msgctxt + "\x04" if e.msgctxt else "") + e.msgid: e.msgstr
                              for e in po if e.msgstr and "fuzzy" not in e.flags}
    assert len(i18n.catalog()) > 450
    # an entry with a context is apart from one without: the control named depth, and translate.py's "layer"
    assert i18n.catalog()["control\x04depth"] == "深度" and "depth" not in i18n.catalog()
    assert i18n.catalog()["control\x04layer"] == i18n.catalog()["layer"] == "层"


def test_the_reader_reads_a_context_right_after_an_entry():
    text = 'msgid "a"\nmsgstr "甲"\nmsgctxt "control"\nmsgid "a"\nmsgstr "乙"\n'
    assert [(e.get("msgctxt"), e["msgid"], e["msgstr"]) for e in i18n.parse_po(text)] == \
        [(None, "a", "甲"), ("control", "a", "乙")]


def test_chinese_punctuation_in_the_catalog():
    for msgstr in i18n.catalog().values():
        assert not re.search(r"[\u3400-\u9fff][,;:?!](\s|$)", msgstr), \
            f"half-width punctuation after Chinese: {msgstr!r}"
        assert not re.search(r"[，。：；！？]\s", msgstr.replace("\n  ", "")), f"space after full-width: {msgstr!r}"
        assert not re.search(r"[\u3400-\u9fff]\"|\"[\u3400-\u9fff]", QUOTED.sub("", msgstr)), \
            f"ASCII quotes around Chinese: {msgstr!r}"
        assert "栈" not in msgstr and "软件包" not in msgstr, msgstr


def test_the_catalog_follows_the_books_punctuation_rules():
    """STYLE.md's rules (bookbuild/i18n.py style_problems), as for the book's catalogs: no ASCII quotes around words in
    Chinese (a Python string the reader types is written as its repr, 'batch'), no space after full-width
    punctuation, no ASCII punctuation between Chinese characters."""
    from bookbuild.translation.style import style_problems

    problems = {msgid: style_problems("transformer_lite", msgid, msgstr, rules={})
                for msgid, msgstr in i18n.catalog().items()}
    assert {m: p for m, p in problems.items() if p} == {}


def test_fields_are_found_and_kept():
    assert package_catalog.fields("{name} should be a number, got {answer_type}.") == ["answer_type", "name"]
    assert package_catalog.fields("h_{{t-1}} and {name}, {v!r}, {diff:.3g}") == ["diff", "name", "v"]


def test_babel_extracts_what_tr_and_n_wrap():
    found = package_catalog.messages()
    assert "{name} should be a number, got {answer_type}." in found  # tr("...", name=..., answer_type=...)
    assert "the suspect" in found and "Grammar translator (chapter 13)" in found  # tr() in a check, N_() constant
    assert any(w.startswith("transformer_lite/book/check/__init__.py:") for w in found["your function"])
    assert "softmax over the queries" not in found  # data (# i18n: data), not a message
    assert not any(m.startswith("number should be a non-empty str") for m in found)  # a programmer's error


def test_every_message_a_reader_sees_is_wrapped():
    assert package_catalog.unwrapped() == []


def test_the_unwrapped_check_finds_what_it_must(tmp_path):
    module = tmp_path / "chXX.py"
    module.write_text(
        '"""A docstring is not a message."""\n'
        'from ..i18n import N_, tr\n'
        'LABEL = N_("a constant label")\n'
        'def check(x):\n'
        '    if x is None:\n'
        '        raise ValueError(f"x must not be None, got {x!r}")  # a programmer\'s error\n'
        '    if x == "the right answer":  # a comparison\n'
        '        return tr("well done, {x} is right.", x=x)\n'
        '    say = "softmax over the queries"  # i18n: data\n'
        '    hint = tr(LABEL)\n'
        '    return f"{x} is not right at all."\n'
        'def broken(x):\n'
        '    return tr(f"{x} is an f-string in tr"), N_(x), f"<b>{tr(\'hidden from Babel\')}</b>"\n',
        encoding="utf-8")
    found = [line.split(": ", 1)[1] for line in package_catalog.unwrapped([module])]
    assert sorted(found) == sorted(["'{} is not right at all.'",
                                    "tr() of f'{x} is an f-string in tr', not of a plain literal",
                                    "N_() of x, not of a plain literal",
                                    "tr('hidden from Babel') inside an f-string, which the extractor does not read"]), \
        found


def test_every_tr_call_fills_exactly_its_templates_fields():
    """tr("... {name} ...", name=...) formats the template after the lookup: a keyword it lacks raises KeyError in
    the reader's language only if the translation has that field too, so each call is held to its template here.
    A template given without fields is returned unfilled, for the page's script to fill (check/page.py texts)."""
    import ast

    bad, unfilled = [], []
    for path in sorted((ROOT / "transformer_lite").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tr" and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                given, wanted = {k.arg for k in node.keywords}, set(package_catalog.fields(node.args[0].value))
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if given and given != wanted:
                    bad.append(f"{where}: fields {sorted(wanted)}, keywords {sorted(given)}")
                elif not given and wanted:
                    unfilled.append(path.name)
    assert bad == []
    assert set(unfilled) == {"page.py"}, unfilled


def test_every_wrapped_message_has_its_chinese():
    catalog = i18n.catalog()
    for message, where in package_catalog.messages().items():
        assert message in catalog, f"{message!r} ({where[0]}) has no entry in {package_catalog.CATALOG.name}"
        words = package_catalog.FIELD.sub("", message)
        assert HAN.search(catalog[message]) or not re.search("[A-Za-z]", words), (message, catalog[message])


# ---- the exercise checks ---------------------------------------------------------------------------------------

def _english(verdict) -> str:
    """What Verdict._text said before the switch existed."""
    mark = {"right": "✓", "wrong": "✗", "todo": "…"}[verdict.status]
    text = f"{mark} {verdict.kind} {verdict.exercise}: {verdict.message}"
    return text + (f"\n  Hint: {verdict.hint}" if verdict.hint else "")


def _both(make, what):
    """``make()``'s verdict in English and in Chinese: a check writes its messages in the language of the moment it
    runs, as gettext does."""
    set_language("en")
    verdict = make()
    assert repr(verdict) == _english(verdict), what
    set_language("zh")
    verdict = make()
    text = repr(verdict)
    assert_chinese(text, what)
    assert text.startswith({"right": "✓", "wrong": "✗", "todo": "…"}[verdict.status] + " "), text
    assert ("练习 " if verdict.kind == "Exercise" else "预测 ") + verdict.exercise + "：" in text, text
    if verdict.hint:
        assert "\n  提示：" in text, text
    html = verdict._repr_html_()
    assert 'lang="zh-CN"' in html and HAN.search(html)
    set_language("en")
    assert "lang=" not in verdict._repr_html_()
    return text


@pytest.mark.parametrize("number,ex", sorted(check.registry().items()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_wrong_answer_and_skeleton_reads_in_chinese(number, ex, monkeypatch):
    monkeypatch.delenv(check.STRICT_ENV, raising=False)
    for k, make in enumerate(ex.wrong):
        text = _both(lambda make=make: ex.function(*make()), f"exercise {number}, wrong answer {k}")
        assert text.startswith("✗ "), text
    n_args = len(inspect.signature(ex.function).parameters)
    _both(lambda: ex.function(*([...] * max(n_args, 1))), f"exercise {number}, skeleton")


def _filled(template: str, value):
    """The template with every field set to ``value``, as tr() fills it (a template without fields stays as it is)."""
    names = package_catalog.fields(template)
    return template.format(**dict.fromkeys(names, value)) if names else template


def test_every_message_of_the_checks_reads_in_chinese_when_filled_with_data():
    """Right answers' messages too: each message of a check, its fields filled with data, comes back as its
    Chinese, the data unchanged."""
    set_language("zh")
    catalog = i18n.catalog()
    po = package_catalog.CATALOG.read_text(encoding="utf-8")
    messages = {e["msgid"] for e in i18n.parse_po(po)  # where each is written: its "#:" comments
                if any(c.startswith("#:") and "transformer_lite/book/check/" in c for c in e["comments"])}
    assert len(messages) > 450
    for msgid in messages:
        for value in (0.25, 7, "x.shape"):  # a field may be formatted as a float, an integer or text
            try:
                english = _filled(msgid, value)
            except (ValueError, TypeError):
                continue
            break
        chinese = tr(msgid, **dict.fromkeys(package_catalog.fields(msgid), value))
        assert chinese != english, f"not translated: {english!r}"
        assert chinese == _filled(catalog[msgid], value), (msgid, chinese)
        if package_catalog.FIELD.sub("", msgid).strip(" {}"):
            assert_chinese(chinese, msgid)


def test_a_message_joined_from_two_is_translated_piece_by_piece():
    set_language("zh")
    joined = tr("table C is the paper's own table.") + tr(" Run your test on each of the three.")
    assert joined == "表 C 就是论文自己的表。在这三个表上分别运行你的测试。"
    assert tr("{message} {rule}", message=tr("the suspect"), rule=tr("the suspect")) == "可疑实现可疑实现"
    set_language("en")
    assert tr("{message} {rule}", message="One.", rule="Two.") == "One. Two."


def test_a_translated_field_joins_the_chinese_around_it_and_data_keeps_its_spaces():
    set_language("zh")
    assert tr("my_test should return True or False, got {v!r} for {name}.", v=3, name=tr("the suspect")) == \
        "my_test 应返回 True 或 False，但对可疑实现返回了 3。"
    assert tr("my_test should return True or False, got {v!r} for {name}.", v=3, name="the suspect") == \
        "my_test 应返回 True 或 False，但对 the suspect 返回了 3。"  # a str that is not tr()'s: data
    assert tr("your test is right, but the bug is not {diagnoses}.", diagnoses=tr("the unbiased variance")) == \
        "你的测试是对的，但 bug 不是无偏方差。"
    assert tr("my_test rejects {name}, which is a valid sinusoidal encoding.",
              name="tl.sinusoidal_positional_encoding") == \
        "my_test 拒绝了 tl.sinusoidal_positional_encoding，而它是一个有效的正弦编码。"


def test_predict_and_reveal_in_chinese():
    for make in (lambda: check.predict("5.1", ...), lambda: check.reveal("6.1", 3), lambda: check.predict("5.1", 0.5),
                 lambda: check.reveal("5.1", 0.5), lambda: check.reveal("5.1", 2.0)):
        text = _both(make, "prediction")
        assert text.split("：")[0].endswith("预测 " + make().exercise)


# ---- figures, controls, the translator box ---------------------------------------------------------------------

def test_figures_label_in_chinese_with_a_cjk_font():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from transformer_lite.book import plotting

    plotting.use_book_style()
    set_language("zh")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ax = plotting.pe_heatmap(np.zeros((4, 6)))
        ax2 = plotting.loss_curves({"a": [3, 2, 1], "b": [3, 1, 0.5]})
        fig = plotting.attention_grid(np.full((2, 3, 3), 1 / 3))
        for f in (ax.figure, ax2.figure, fig):
            f.canvas.draw()
    missing = [str(w.message) for w in caught if "missing from" in str(w.message) or "Glyph" in str(w.message)]
    assert missing == []
    assert ax.get_title() == "正弦位置编码" and ax.get_xlabel() == "维度 i（0 … D-1）"
    assert ax2.get_xlabel() == "训练步数" and ax2.get_ylabel() == "损失（每个词元的奈特数）"
    assert [a.get_title() for a in fig.axes[:2]] == ["头 0", "头 1"]
    family = matplotlib.rcParams["font.family"]
    assert plotting._cjk_font() in family
    set_language("en")
    ax3 = plotting.loss_curves({"a": [1, 2]})
    assert ax3.get_xlabel() == "training step"
    assert plotting.pe_heatmap(np.zeros((2, 2)), title="my own").get_title() == "my own"
    plt.close("all")


def test_chinese_labels_get_the_cjk_font_without_setup():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from transformer_lite.book import plotting

    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # as in a kernel that never called setup() / use_book_style()
        set_language("zh")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plotting.loss_curves({"a": [1, 2]}).figure.canvas.draw()
        assert [str(w.message) for w in caught if "missing from" in str(w.message)] == []
        set_language("en")
        matplotlib.rcdefaults()
        plotting.loss_curves({"a": [1, 2]})
        assert plotting._cjk_font() not in matplotlib.rcParams["font.family"]  # English: left as it is
    plt.close("all")


def test_controls_speak_the_language():
    from transformer_lite.book.interactive import explore_html, live_text_html

    set_language("zh")
    html = explore_html(lambda n: f"n = {n}", n=[1, 2])
    live = live_text_html(lambda text: text.upper(), ["a b"])
    assert "在 Jupyter 或 Colab 中运行笔记本时" in live and ">输入 <select" in live
    set_language("en")
    assert "Type your own input" in live_text_html(lambda text: text.upper(), ["a b"])
    assert html  # text frames carry no alt; the figure's alt default is checked through tr below
    set_language("zh")
    assert tr("Figure for {label}", label="n = 1") == "n = 1 时的图"


def test_a_controls_name_shows_its_chinese_and_a_symbol_stays():
    """explore labels each control with its keyword's name: in Chinese, the name's translation (msgctxt "control"),
    on the static page (label, aria-label, the figures' default alt) and live (the widget's description)."""
    import ipywidgets as widgets
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from transformer_lite.book import interactive

    def draw(depth, d_k, kind):
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.set_title(f"{depth} {d_k} {kind}")
        return fig

    controls = dict(depth=[4, 8], d_k=[1, 2], kind=["a", "b"])
    set_language("zh")
    html = interactive.explore_html(draw, **controls)
    assert '<label>深度 <input type="range"' in html and 'aria-label="深度"' in html
    assert '<label>d_k <input type="range"' in html and '<label>类型 <select' in html
    assert 'alt="深度 = 4，d_k = 1，类型 = a 时的图"' in html
    shown = []
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(interactive.STATIC_ENV, raising=False)
        mp.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
        interactive.explore(draw, **controls)
    live = [w.description for o in shown if isinstance(o, widgets.VBox) for w in o.children[0].children]
    assert live == ["深度", "d_k", "类型"]
    set_language("en")
    html = interactive.explore_html(draw, **controls)
    assert '<label>depth <input type="range"' in html and 'aria-label="depth"' in html and '<label>kind <select' in html
    assert 'alt="Figure for depth = 4, d_k = 1, kind = a"' in html
    assert [interactive.control_label(n) for n in controls] == list(controls)
    plt.close("all")


def test_every_control_name_a_chapter_uses_has_its_chinese():
    names = package_catalog.control_names()
    assert {"depth", "layer", "temperature", "kind"} <= set(names)  # explore's own keywords and symbols are not
    assert not set(names) & (package_catalog.EXPLORE_OPTIONS | package_catalog.SYMBOLS)
    from transformer_lite.book import interactive

    assert interactive.CONTROL == package_catalog.CONTROL
    set_language("zh")
    for name, where in names.items():
        assert HAN.search(interactive.control_label(name)), f"control {name!r} ({where[0]}) has no Chinese"
    for symbol in package_catalog.SYMBOLS:
        assert interactive.control_label(symbol) == symbol


def test_a_new_control_name_without_chinese_fails_the_catalog(tmp_path, monkeypatch):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["%matplotlib inline\n", "explore(draw, depth=[1, 2], knob_count=[1, 2], d_k=[4, 8],\n",
                       "        initial={'depth': 2}, alt='{depth}')\n"]}
    (tmp_path / "99_new.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                       "nbformat_minor": 5}), encoding="utf-8")
    where = [f"{tmp_path / '99_new.ipynb'}:0"]  # the notebook and its cell
    assert package_catalog.control_names(tmp_path) == {"depth": where, "knob_count": where}
    monkeypatch.setattr(package_catalog, "NOTEBOOKS", tmp_path)
    found = package_catalog.problems()
    assert any(p.startswith("missing from the catalog: control name 'knob_count'") for p in found), found
    assert not any("'depth'" in p for p in found)


def test_bertviz_controls_in_chinese():
    import torch

    from transformer_lite.book.viz import head_view_html

    maps = (torch.full((1, 2, 3, 3), 1 / 3),)
    set_language("zh")
    assert "<label>层： <select" in head_view_html(maps, ["a", "b", "c"])
    set_language("en")
    assert "<label>Layer: <select" in head_view_html(maps, ["a", "b", "c"])


@pytest.fixture(scope="module")
def shipped():
    from transformer_lite.book.translate import shipped_translator

    return shipped_translator("grammar")


def _visible_text(html: str) -> str:
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    html = re.sub(r"<details.*?</details>", lambda m: re.sub(r"<p>.*?</p>", " ", m.group(0), flags=re.S), html,
                  flags=re.S)  # the word list is data
    html = re.sub(r'<button type="button" class="tl-tr-example">.*?</button>', " ", html)  # example sentences: data
    html = re.sub(r'value="[^"]*"', " ", html)
    return re.sub(r"<[^>]+>", " ", html)


def test_the_translator_box_speaks_chinese_and_hands_its_script_the_chinese(shipped):
    from transformer_lite.book.translate import JS_TEXTS, translator_box_html

    model, data = shipped
    set_language("zh")
    html = translator_box_html(model, data, ["i have a cat"])
    visible = _visible_text(html)
    assert_chinese(visible, "translator box")
    for english in ("Translator", "Translate", "Examples:", "beam size", "cross-attention layer", "head",
                    "English words it knows", "needs JavaScript", "Type an English sentence"):
        assert english not in visible, english
    settings = json.loads(re.search(r'class="tl-tr-settings">(.*?)</script>', html).group(1))
    assert set(settings["text"]) == set(JS_TEXTS)
    for english, chinese in settings["text"].items():
        assert_chinese(chinese, english)
    assert all(HAN.search(m["label"]) for m in settings["models"].values())
    # the classes the script and the browser tests rely on are unchanged
    for cls in ("tl-tr-model", "tl-tr-input", "tl-tr-go", "tl-tr-beam", "tl-tr-layer", "tl-tr-head", "tl-tr-status"):
        assert f'class="{cls}' in html
    set_language("en")
    english_html = translator_box_html(model, data, ["i have a cat"])
    assert ">Translate</button>" in english_html and "<label>English <input" in english_html
    assert json.loads(re.search(r'class="tl-tr-settings">(.*?)</script>', english_html).group(1))["text"] == \
        {e: e for e in JS_TEXTS}


def test_every_text_the_script_writes_is_in_the_catalog():
    from transformer_lite.book.translate import JS_TEXTS

    js = (ROOT / "bookbuild" / "site_assets" / "tl-translator.js").read_text(encoding="utf-8")
    said = set()
    for m in re.finditer(r'say\(box, ((?:"(?:[^"\\]|\\.)*"\s*\+?\s*)+)', js):
        said.add("".join(json.loads(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', m.group(1))))
    said |= {json.loads(s) for s in re.findall(r'said\(new RangeError\(.*?\),\s*("(?:[^"\\]|\\.)*")', js, flags=re.S)}
    assert said and said <= set(JS_TEXTS), sorted(said - set(JS_TEXTS))
    assert set(JS_TEXTS) - said == set(), sorted(set(JS_TEXTS) - said)
    assert set(JS_TEXTS) <= set(i18n.catalog())


def test_reading_errors_follow_the_language(shipped):
    from transformer_lite.book.translate import read_english

    _, data = shipped
    set_language("zh")
    with pytest.raises(ValueError, match="输入中没有单词"):
        read_english("", data.src_vocab, 10)
    set_language("en")
    with pytest.raises(ValueError, match="text holds no words"):
        read_english("", data.src_vocab, 10)


def test_a_chinese_label_with_math_in_it_draws_every_character(caplog):
    """mathtext sets the text around the math in the first font of font.family alone: in Chinese that is the CJK
    font, so no character of "从 $x_0$ 到 $h_5$ 的路径" becomes an empty box (matplotlib logs each one it replaces);
    in English DejaVu Sans stays first, as before."""
    import logging

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from transformer_lite.book import plotting

    try:
        for lang, first in (("zh", plotting._cjk_font()), ("en", "DejaVu Sans")):
            set_language(lang)
            plotting.use_book_style()
            assert matplotlib.rcParams["font.family"][0] == first
            fig, ax = plt.subplots()
            ax.set_title("从 $x_0$ 到 $h_{5}$ 的路径：6 个箭头" if lang == "zh" else "from $x_0$ to $h_{5}$: 6 arrows")
            with caplog.at_level(logging.WARNING, logger="matplotlib"):
                fig.canvas.draw()
            plt.close(fig)
            assert [r.getMessage() for r in caplog.records if "does not have a glyph" in r.getMessage()] == []
        set_language("zh")
        with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):  # a kernel that styled its figures in English
            plotting._chinese_ready()
            assert matplotlib.rcParams["font.family"] == [plotting._cjk_font(), "DejaVu Sans"]
    finally:
        set_language("en")
        plotting.use_book_style()
