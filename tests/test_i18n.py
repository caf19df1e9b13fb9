"""The Chinese edition's sources: every English message translated, well formed, in the glossary's terms;
the Chinese notebooks generated from them and up to date (bookbuild/i18n.py).

A change to an English paragraph makes its message missing from the catalog (or fuzzy after
`python -m bookbuild.i18n update`), and these tests fail, naming the page and the paragraph, until the
Chinese is updated in the same commit. The built editions are tested in a browser by tests/test_site.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import polib
import pytest

from bookbuild.translation import checks
from bookbuild.translation.anchors import (
    anchor_ids,
    cross_chapter_links,
    heading_anchors,
    heading_cells,
    heading_slugs,
    link_targets,
)
from bookbuild.translation.code_cells import (
    _offsets,
    _python_source,
    code_catalog_path,
    code_check,
    code_message_problems,
    code_messages,
    code_style_problems,
    code_translated,
    code_translations,
    code_update,
    display_width,
    figure_literals,
)
from bookbuild.translation.messages import message_problems
from bookbuild.translation.notebooks import CODE_PROMPTS, chinese_notebooks, chinese_toggles, translate_markdown
from bookbuild.translation.paths import TERMINOLOGY, ZH_NOTEBOOKS
from bookbuild.translation.search import search_words
from bookbuild.translation.sphinx_catalogs import extract, pages
from bookbuild.translation.style import (
    RULE_NAMES,
    exercise_instructions,
    figure_number_problems,
    fix_catalogs,
    fix_style,
    report_only,
    style_problems,
    unit_problems,
)
from bookbuild.translation.terminology import (
    first_use_problems,
    forbidden_problems,
    glossary_terms,
    load_rules,
    terminology_problems,
)

ROOT = Path(__file__).resolve().parent.parent

GLOSSARY = ROOT / "book" / "glossary.md"


# one xdist worker runs this file: the extraction below (about 20 s) is made once, not once per worker
pytestmark = pytest.mark.xdist_group("i18n")


@pytest.fixture(scope="module")
def pot(tmp_path_factory):
    return extract(tmp_path_factory.mktemp("gettext"))


def test_every_english_message_has_a_chinese_translation(pot):
    problems = checks.check(pot)
    assert not problems, f"{len(problems)} message(s) to translate or fix (python -m bookbuild.i18n update, then " \
                         f"edit locales/zh_CN/LC_MESSAGES/):\n" + "\n".join(problems[:40])


def test_the_extraction_covers_every_page_of_the_book(pot):
    from bookbuild.build_book import toc_entries

    assert set(pages(pot)) >= set(toc_entries(ROOT / "_toc.yml"))


def test_a_changed_or_untranslated_paragraph_is_reported_with_its_page(tmp_path):
    pot_dir, cat_dir = tmp_path / "pot", tmp_path / "cat"
    for d in (pot_dir / "notebooks", cat_dir / "notebooks"):
        d.mkdir(parents=True)
    pot = polib.POFile()
    for msgid in ("A new paragraph about **attention**.", "Kept.", "Changed since.", "Never translated."):
        pot.append(polib.POEntry(msgid=msgid))
    pot.save(str(pot_dir / "notebooks" / "x.pot"))
    po = polib.POFile()
    po.append(polib.POEntry(msgid="Kept.", msgstr="保留。"))
    po.append(polib.POEntry(msgid="Changed since.", msgstr="改了。", flags=["fuzzy"]))
    po.append(polib.POEntry(msgid="Never translated.", msgstr=""))
    po.save(str(cat_dir / "notebooks" / "x.po"))
    problems = checks.check(pot_dir, catalogs=cat_dir)
    assert len(problems) == 3 and all(p.startswith("notebooks/x: ") for p in problems)
    assert any("missing" in p and "A new paragraph" in p for p in problems)
    assert any("fuzzy" in p and "Changed since" in p for p in problems)
    assert any("untranslated" in p and "Never translated" in p for p in problems)


@pytest.mark.parametrize("msgid, msgstr, problem", [
    ("Call `f(x)` now, please.", "现在调用 `g(x)`。", "code spans"),
    ("See [chapter 3](03_self_attention.ipynb) for more.", "见[第 3 章](03.ipynb)。", "link targets"),
    ("The value $x_1$ is small here.", "这里的值 $x_2$ 很小。", "math"),
    ("**Misconception.** The words of it.", "**常见误解。**后面没有空格。", "renders differently"),
    ("Three English words here.", "Three English words here.", "no Chinese"),
    ("Three English words here.", "", "untranslated"),
])
def test_a_malformed_translation_is_caught(msgid, msgstr, problem):
    assert any(problem in p for p in message_problems(msgid, msgstr))


def test_a_well_formed_translation_passes():
    assert message_problems("**Misconception.** Call `f(x)` with $x$ ([ch. 3](03.ipynb)).",
                                 "**常见误解**。用 $x$ 调用 `f(x)`（[第 3 章](03.ipynb)）。") == []
    assert message_problems("\n\\mathrm{out} = x\n", "\n\\mathrm{out} = x\n") == []  # a formula is its own


def test_the_glossarys_chinese_terms_are_used_wherever_the_english_ones_are():
    problems = terminology_problems()
    assert not problems, f"{len(problems)} message(s) not in the glossary's terms (fix the Chinese, or list an " \
                         f"alias or an exception with its reason in {TERMINOLOGY.relative_to(ROOT)}):\n" + \
                         "\n".join(problems[:30])


def test_a_message_without_the_glossarys_term_is_caught(tmp_path):
    cat = tmp_path / "cat" / "notebooks"
    cat.mkdir(parents=True)
    po = polib.POFile()
    po.append(polib.POEntry(msgid="Beam search keeps the best hypotheses.", msgstr="柱搜索保留最好的假设。"))
    po.append(polib.POEntry(msgid="Beam search, once more.", msgstr="束搜索，再一次。"))
    po.append(polib.POEntry(msgid="The paper \"Layer Normalization\" (2016).",
                            msgstr="论文“Layer Normalization”（2016）。"))
    po.save(str(cat / "x.po"))
    rules = tmp_path / "rules.yml"
    rules.write_text("aliases: {}\nexceptions: []\n", encoding="utf-8")
    problems = terminology_problems(tmp_path / "cat", rules)
    assert len(problems) == 1 and "'beam search' should be 束搜索" in problems[0] and "柱搜索" in problems[0]
    assert "beam search" in {t for t, _, _ in glossary_terms()}


# -- locales/zh_CN/STYLE.md: punctuation, units, forbidden terms -------------------------------------------------

NO_RULES: dict = {"exceptions": []}


@pytest.mark.parametrize("rule, bad, good", [
    ("percent", "BERT 选出 15 % 的词元。", "BERT 选出 15% 的词元。"),
    ("percent", "BERT 选出 15％ 的词元。", "BERT 选出 15% 的词元。"),
    ("space after punctuation", "**常见误解。** 后面的话。", "**常见误解**。后面的话。"),
    ("space after punctuation", "*图：左图为损失。* 最初几步。", "*图：左图为损失*。最初几步。"),
    ("space after punctuation", "见“Attention Is All You Need” {cite}`vaswani2017`。",
     "见“Attention Is All You Need”{cite}`vaswani2017`。"),
    ("space after punctuation", "第一句。 第二句，接着。", "第一句。第二句，接着。"),
    ("space before punctuation", "一台 Mac ，好。", "一台 Mac，好。"),
    ("ASCII quotes", '写下 "yes" 或 "no"。', "写下“yes”或“no”。"),
    ("ASCII quotes", '所谓 "掩码" 就是张量。', "所谓“掩码”就是张量。"),
    ("ASCII punctuation", "均值,标准差", "均值，标准差"),
    ("ASCII punctuation", "层归一化(layer normalization)的作用", "层归一化（layer normalization）的作用"),
    ("ASCII punctuation", "形状为(B, S, D)的张量", "形状为 (B, S, D) 的张量"),
    ("exercise title", "**练习 3.1 — 完成演算**。写出 `x`。", "**练习 3.1：完成演算**。写出 `x`。"),
    ("exercise title", "**练习 A.2 - 手写 patchify**。", "**练习 A.2：手写 patchify**。"),
])
def test_a_style_rule_catches_a_bad_example_and_passes_a_good_one(rule, bad, good):
    found = style_problems("notebooks/x", "English.", bad, NO_RULES)
    assert any(p.startswith(rule + ":") for p in found), found
    assert "write" in found[0] and "found" in found[0]  # what to write instead, and where
    assert style_problems("notebooks/x", "English.", good, NO_RULES) == []


def test_the_exercise_instructions_have_one_wording():
    english = "Each exercise has a cell for your answer (replace the `...`), a one-line check to run after it, " \
              "and a worked solution folded under \"Show solution\". The checks use the shipped model."
    good = "每道练习有三部分：一个供你作答的单元格（把其中的 `...` 换成你的答案），一行作答后运行的检查，" \
           "以及一份折叠在“显示答案”下的完整解答。检查使用随包发布的模型。"
    assert style_problems("notebooks/x", english, good, NO_RULES) == []
    bad = "每道练习都有一个供你作答的单元格（替换其中的 `...`）、一行检查代码，以及折叠起来的详细解答。"
    found = style_problems("notebooks/x", english, bad, NO_RULES)
    assert len(found) == 1 and found[0].startswith("exercise instructions:") and "write" in found[0]
    plain = "Each exercise has a cell for your answer, a one-line check, and a solution, folded away."
    assert style_problems("notebooks/x", plain, good, NO_RULES)  # no `...` in the English: no parenthesis
    assert style_problems("notebooks/x", plain, exercise_instructions(plain), NO_RULES) == []


def test_a_formulas_english_words_are_caught_and_its_labels_pass():
    english = "\nx_1 = \\mathrm{MultiHead}(y, y, y;\\ \\text{causal mask}),\\ d_\\text{model} = 512\n"
    found = style_problems("notebooks/x", english, english, NO_RULES)
    assert len(found) == 1 and found[0].startswith("formula text:") and "causal mask" in found[0]
    chinese = english.replace("causal mask", "因果掩码")
    assert style_problems("notebooks/x", english, chinese, NO_RULES) == []
    label = "\nP(\\text{next} = w \\mid \\text{source})\n"  # one-word labels stay: not reported
    assert style_problems("notebooks/x", label, label, NO_RULES) == []


def test_an_inline_formulas_english_words_are_caught_and_may_differ_from_the_english():
    english = "The noise shrinks like $1/\\sqrt{\\text{batch size}}$ with $\\mu_{\\text{batch}}$."
    english_left = "噪声按 $1/\\sqrt{\\text{batch size}}$ 缩小，$\\mu_{\\text{batch}}$ 不变。"
    found = style_problems("notebooks/x", english, english_left, NO_RULES)
    assert len(found) == 1 and found[0].startswith("formula text:") and "batch size" in found[0]
    chinese = english_left.replace("batch size", "批大小")
    assert style_problems("notebooks/x", english, chinese, NO_RULES) == []
    assert message_problems(english, chinese) == []  # \text{…} words may differ, the symbols may not
    wrong_symbol = chinese.replace("\\sqrt", "\\log")
    assert any(p.startswith("math differ") for p in message_problems(english, wrong_symbol))


def test_the_style_rules_skip_code_math_link_targets_and_formulas():
    text = ('调用 `f(a, b)` 或 `"s"`：$p(x, y) = 15 \\%$，见[第 3 章](03_x.ipynb#a,b)和 <a href="x">链接</a>，'
            "https://example.org/a,b 也是。")
    assert style_problems("notebooks/x", "Call f.", text, NO_RULES) == []
    assert style_problems("notebooks/x", "\n\\text{a} , b\n", "\n\\text{遮蔽} ， b\n", NO_RULES) == []


def test_a_style_rule_is_excused_only_for_the_listed_message():
    rules = {"exceptions": [{"page": "notebooks/x", "rule": "ASCII quotes", "english": "Write the string",
                             "why": "the quotes are part of the Python string the reader types"}]}
    bad = '写下 "yes"。'
    assert style_problems("notebooks/x", "Write the string \"yes\".", bad, rules) == []
    assert style_problems("notebooks/y", "Write the string \"yes\".", bad, rules)
    assert style_problems("notebooks/x", "Another message.", bad, rules)


def test_a_page_that_mixes_unit_styles_is_reported():
    mixed = [("BERT-base has 110M parameters.", "BERT-base 有 110M 个参数。"),
             ("GPT-2 has 124 million.", "GPT-2 有 1.24 亿个参数。")]
    found = unit_problems("notebooks/14_x", mixed, NO_RULES)
    assert len(found) == 1 and "110M" in found[0] and "1.24 亿" in found[0] and "亿/万" in found[0]
    same = [("BERT-base has 110M parameters.", "BERT-base 有 1.1 亿个参数。"), mixed[1],
            ("Llama 2 7B and Qwen2.5-0.5B.", "Llama 2 7B 和 Qwen2.5-0.5B 的参数量。")]  # model names keep their size
    assert unit_problems("notebooks/14_x", same, NO_RULES) == []
    assert unit_problems("notebooks/14_x", [mixed[0]], NO_RULES) == []  # one style alone is consistent



@pytest.mark.parametrize("rule, bad, good", [
    ("ellipsis", "正在加载模型…", "正在加载模型……"),
    ("ellipsis", "复制进来（`w`，…）再比较。", "复制进来（`w`，……）再比较。"),
    ("dash", "{cite}`rush2018` — 逐行讲解论文。", "{cite}`rush2018`——逐行讲解论文。"),
    ("dash", "在“指令—答案”对上微调。", "在“指令——答案”对上微调。"),
])
def test_a_lone_ellipsis_or_dash_is_enforced_or_reported_as_report_only_says(rule, bad, good):
    found = style_problems("transformer_lite", "English.", bad, NO_RULES)  # the package's catalog: enforced
    assert any(p.startswith(rule + ":") for p in found) and "write" in found[0], found
    assert style_problems("transformer_lite", "English.", good, NO_RULES) == []
    on_chapter = style_problems("notebooks/x", "English.", bad, NO_RULES)
    reported = style_problems("notebooks/x", "English.", bad, NO_RULES, report=True)
    if report_only(rule, "notebooks/x"):  # reported while the chapters are corrected, not failing
        assert not any(p.startswith(rule) for p in on_chapter) and any(p.startswith(rule + ":") for p in reported)
    else:
        assert any(p.startswith(rule + ":") for p in on_chapter) and reported == []
    assert style_problems("notebooks/x", "1, 2, ..., 5", "依次为 1, 2, …, 5。", NO_RULES, report=True) == []


def test_a_chinese_figure_strings_thousands_separator_and_latin_units_are_caught():
    assert figure_number_problems("(b) 词元数，{n:,} 个参数")
    assert figure_number_problems("(a) 规模，每次约 {t / 1e3:.0f}k 个词元")
    assert figure_number_problems("基础模型的 {total / 1e6:.1f} M 个参数")
    assert figure_number_problems("(b) 词元数，{n} 个参数") == []
    assert figure_number_problems("(a) 规模，每次约 {t / 1e4:.0f} 万个词元") == []
    assert figure_number_problems("Llama 2 7B 的 KV 缓存，{d[0]:.2f} GiB，{x:.0%}") == []
    assert figure_number_problems("(b) tokens, {n:,} parameters") == []  # the English keeps its own style


def test_a_term_a_chapter_introduces_without_its_english_is_reported():
    messages = [("Label smoothing", "标签平滑"),
                ("**Label smoothing** softens the target.", "**标签平滑**使目标变软。"),
                ("A **near miss** is almost right.", "**近似正确**的译文几乎是对的。"),
                ("It is **very good**.", "它**非常好**。")]  # emphasis, not a term
    found = first_use_problems("notebooks/10_training", messages, NO_RULES)  # the glossary's chapter for it
    assert len(found) == 2 and "'label smoothing'" in found[0] and "'near miss'" in found[1], found
    glossed = [(m, z.replace("使", "（label smoothing）使").replace("**近似正确**", "**近似正确**（near miss）"))
               for m, z in messages]
    assert first_use_problems("notebooks/10_training", glossed, NO_RULES) == []
    assert first_use_problems("notebooks/03_self_attention", messages[:2], NO_RULES) == []  # taught elsewhere

FORBIDDEN = {"forbidden": [
    {"term": "stack", "never": ["栈"], "use": "堆叠", "unless_english": ["data structure"]},
    {"term": "mask (the verb)", "never": ["屏蔽", "遮挡", "掩蔽"], "use": "遮蔽"},
    {"term": "package", "never": ["软件包", "代码包", "本包"], "use": "包", "not_in": ["基本包", "笔记本包"]}],
    "exceptions": [{"page": "notebooks/x", "term": "mask (the verb)", "english": "Occlusion",
                    "why": "an object hidden behind another in an image (遮挡), not a mask"}]}


@pytest.mark.parametrize("english, bad, good", [
    ("The encoder stack.", "编码器栈。", "编码器堆叠。"),
    ("A mask blocks the future.", "掩码屏蔽了未来。", "掩码遮蔽了未来。"),
    ("A mask hides it.", "掩码遮挡了它。", "掩码遮蔽了它。"),
    ("The package's encoder.", "本包的编码器。", "本书的包的编码器。"),
    ("The package ships it.", "随软件包发布。", "随包发布。"),
    ("The package ships it.", "随代码包发布。", "随 `transformer_lite` 包发布。"),
])
def test_a_forbidden_term_is_caught_and_the_styles_term_passes(english, bad, good):
    found = forbidden_problems("notebooks/y", english, bad, FORBIDDEN)
    assert len(found) == 1 and "never" in found[0] and bad[:60] in found[0]
    assert forbidden_problems("notebooks/y", english, good, FORBIDDEN) == []


def test_a_forbidden_form_is_allowed_where_the_english_or_an_exception_says_so():
    assert forbidden_problems("notebooks/y", "A stack, the data structure.", "栈这种数据结构。", FORBIDDEN) == []
    assert forbidden_problems("notebooks/y", "It basically includes.", "它基本包括两部分，笔记本包含代码。",
                                   FORBIDDEN) == []
    assert forbidden_problems("notebooks/x", "Occlusion in images.", "图像中的遮挡。", FORBIDDEN) == []
    assert forbidden_problems("notebooks/y", "Occlusion in images.", "图像中的遮挡。", FORBIDDEN)


def test_the_terminology_file_forbids_the_styles_rejected_forms():
    rules = load_rules()
    never = {r["term"]: set(r["never"]) for r in rules["forbidden"]}
    assert never["stack"] == {"栈"} and never["mask (the verb)"] >= {"屏蔽", "遮挡", "掩蔽"}
    assert never["package"] >= {"软件包", "代码包", "本包"}
    assert all(x.get("why") and ("term" in x or "rule" in x) for x in rules["exceptions"])
    assert {x["rule"] for x in rules["exceptions"] if "rule" in x} <= set(RULE_NAMES)


def test_check_reports_style_problems_with_page_and_paragraph(tmp_path):
    pot_dir, cat_dir = tmp_path / "pot", tmp_path / "cat"
    for d in (pot_dir / "notebooks", cat_dir / "notebooks"):
        d.mkdir(parents=True)
    pot, po = polib.POFile(), polib.POFile()
    for msgid, msgstr in (("BERT masks 15 % of tokens.", "BERT 遮蔽 15 % 的词元。"), ("Fine.", "很好。"),
                          ("It has 110M.", "它有 110M 个。"), ("It has 124 million.", "它有 1.24 亿个。")):
        pot.append(polib.POEntry(msgid=msgid))
        po.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    pot.save(str(pot_dir / "notebooks" / "x.pot"))
    po.save(str(cat_dir / "notebooks" / "x.po"))
    rules = tmp_path / "rules.yml"
    rules.write_text("exceptions: []\n", encoding="utf-8")
    problems = checks.check(pot_dir, catalogs=cat_dir, rules=rules)
    assert len(problems) == 2 and all(p.startswith("notebooks/x: ") for p in problems)
    assert any("percent" in p and "15%" in p and "BERT masks" in p for p in problems)
    assert any("units" in p and "110M" in p for p in problems)


@pytest.mark.parametrize("english, before, after", [
    ("**Misconception.** It is so.", "**常见误解。** 是这样。", "**常见误解**。是这样。"),
    ("*Figure: the loss.* Then it drops.", "*图：损失。* 然后下降。", "*图：损失*。然后下降。"),
    ("BERT masks 15 % of them.", "BERT 遮蔽其中 15 % 的词元，而不是 15％。", "BERT 遮蔽其中 15% 的词元，而不是 15%。"),
    ("See \"Attention Is All You Need\" {cite}`vaswani2017`.", "见“Attention Is All You Need” {cite}`vaswani2017`。",
     "见“Attention Is All You Need”{cite}`vaswani2017`。"),
    ("Write \"yes\" or \"no\", not `\"maybe\"`.", '写下 "yes" 或 "no"，而不是 `"maybe"`。',
     "写下“yes”或“no”，而不是 `\"maybe\"`。"),
    ("*\"It is tired.\"* (the animal)", "*“它累了。”* （那只动物）", "*“它累了。”*（那只动物）"),
    ("A Mac.", "一台 Mac ，好。", "一台 Mac，好。"),
    ("**Exercise 3.1 — Finish the sum.** Write `x`.", "**练习 3.1 — 完成演算。** 写出 `x`。",
     "**练习 3.1：完成演算**。写出 `x`。"),
    ("**Exercise 7.3 — Bug hunt: the decoder that peeks.** Find it.", "**练习 7.3 — 排错：偷看的解码器。** 找出它。",
     "**练习 7.3：找 bug——偷看的解码器**。找出它。"),
    ("Each exercise has a cell for your answer (replace the `...`), a one-line check to run after it, and a "
     "worked solution folded under \"Show solution\". The checks know the answer.",
     "每道练习都有一个供你作答的单元格（替换 `...`）、一行检查代码，以及折叠起来的详细解答。检查知道答案。",
     "每道练习有三部分：一个供你作答的单元格（把其中的 `...` 换成你的答案），一行作答后运行的检查，"
     "以及一份折叠在“显示答案”下的完整解答。检查知道答案。"),
])
def test_fix_style_makes_the_mechanical_fixes(english, before, after):
    assert style_problems("notebooks/x", english, before, NO_RULES)
    assert fix_style(english, before) == after
    assert style_problems("notebooks/x", english, after, NO_RULES) == []
    assert message_problems(english, after) == []
    assert fix_style(english, after) == after  # nothing left to fix


def test_fix_style_leaves_what_needs_a_translator():
    assert fix_style("Shapes.", "形状(B, S)，掩码屏蔽了它。") == "形状(B, S)，掩码屏蔽了它。"
    code = '写下 `"vit"`、`f(a, b)`、$15 %$，见[第 3 章](03.ipynb#a "b")。'
    assert fix_style("Write `\"vit\"`, `f(a, b)`, $15 %$.", code) == code
    # the one wording would drop the English's `None`: the code spans would differ, so that fix is not made
    english = "Each exercise has a cell for your answer (`...` or `None`), a one-line check to run after it."
    before = "每道练习都有一个供你作答的单元格（`...` 或 `None`）和一行检查。"
    assert fix_style(english, before) == before


def test_fix_catalogs_rewrites_only_what_it_fixes(tmp_path):
    cat = tmp_path / "cat" / "notebooks"
    cat.mkdir(parents=True)
    po = polib.POFile()
    po.append(polib.POEntry(msgid="**Misconception.** It is so.", msgstr="**常见误解。** 是这样。"))
    po.append(polib.POEntry(msgid="Fine.", msgstr="很好。"))
    po.append(polib.POEntry(msgid="\n\\text{a} = 15 \\%\n", msgstr="\n\\text{甲} = 15 \\%\n"))
    po.save(str(cat / "x.po"))
    assert fix_catalogs(tmp_path / "cat") == {"notebooks/x": 1}
    assert [e.msgstr for e in polib.pofile(str(cat / "x.po"))] == ["**常见误解**。是这样。", "很好。",
                                                                    "\n\\text{甲} = 15 \\%\n"]
    assert fix_catalogs(tmp_path / "cat") == {}


def test_translate_markdown_keeps_every_block_in_place():
    source = ("# A title\n\nA paragraph that\nruns over two lines.\n\n> **Misconception.** A quoted\n> claim.\n\n"
              "- an item\n- another item\n\n| a | b |\n|---|---|\n| one | two |\n\n$$\n\\text{out} = 1\n$$\n"
              "\n![a figure](../book/x.svg)")
    t = {"A title": "标题", "A paragraph that runs over two lines.": "跨两行的段落。",
         "**Misconception.** A quoted claim.": "**常见误解。** 一个引用的说法。", "an item": "一项",
         "another item": "另一项", "a": "甲", "b": "乙", "one": "一", "two": "二",
         "\n\\text{out} = 1\n": "\n\\text{输出} = 1\n", "![a figure](../book/x.svg)": "![一幅图](../book/x.svg)"}
    text, missing = translate_markdown(source, t)
    assert missing == []
    assert text == ("# 标题\n\n跨两行的段落。\n\n> **常见误解。** 一个引用的说法。\n\n"
                    "- 一项\n- 另一项\n\n| 甲 | 乙 |\n|---|---|\n"
                    "| 一 | 二 |\n\n$$\n\\text{输出} = 1\n$$\n\n![一幅图](../../book/x.svg)")
    assert translate_markdown("Not in the catalog.", {})[1] == ["Not in the catalog."]


def test_translate_markdown_fails_loudly_where_a_paragraph_is_not_where_its_token_says():
    """A paragraph over several lines is replaced from its first line's prefix ("> ", "- ") on: when the parser's
    first line is not on the line its map names, the prefix cannot be found, and slicing at -1 would keep all but
    the line's last character before the translation. It raises instead, naming the line."""
    from types import SimpleNamespace

    class Parser:  # a parser whose paragraph token disagrees with the source (none of MyST's does today)
        @staticmethod
        def parse(source):
            return [SimpleNamespace(type="inline", content="elsewhere\nand on", map=(0, 2))]

    source = "> A paragraph that\n> runs over two lines."
    with pytest.raises(ValueError, match=r"first line 'elsewhere' is not on line 1 of its cell, '> A paragraph that'"):
        translate_markdown(source, {"elsewhere and on": "别处"}, Parser())
    found = SimpleNamespace(type="inline", content="A paragraph that\nruns over two lines.", map=(0, 2))
    text, missing = translate_markdown(source, {"A paragraph that runs over two lines.": "跨两行的段落。"},
                                       SimpleNamespace(parse=lambda source: [found]))
    assert (text, missing) == ("> 跨两行的段落。", [])


def test_the_chinese_notebooks_are_generated_and_up_to_date():
    expected = chinese_notebooks()
    on_disk = {p: p.read_text(encoding="utf-8") for p in sorted(ZH_NOTEBOOKS.glob("*.ipynb"))}
    assert set(on_disk) == set(expected), "run `python -m bookbuild.i18n notebooks`"
    stale = [p.name for p in expected if on_disk[p] != expected[p]]
    assert not stale, f"stale Chinese notebooks: {stale}; run `python -m bookbuild.i18n notebooks` and commit them"


def _code_tokens(source: str) -> list[tuple[int, str]]:
    """A code cell's tokens without its comments and line breaks inside statements, its figure strings as one
    placeholder each and the set-up's `language="zh"` left out: what must be equal between the editions."""
    import io
    import tokenize

    python = _python_source(source)
    starts = _offsets(python)
    figures = [(p.start, p.end) for _, pieces in figure_literals(source) for p in pieces]
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(python).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        at = starts[tok.start[0]] + tok.start[1]
        end = starts[tok.end[0]] + tok.end[1]
        if tok.type == tokenize.STRING and any(at <= s <= e <= end for s, e in figures):
            out.append((tok.type, "<figure string>"))
        else:
            out.append((tok.type, tok.string))
    for n in range(len(out) - 3):
        if [s for _, s in out[n:n + 4]] == [",", "language", "=", '"zh"']:
            return out[:n] + out[n + 4:]
    return out


def test_the_chinese_notebooks_run_the_same_code():
    """The same code and cell metadata as the English notebook, but for the folds' titles (chinese_toggles),
    the comments, the strings a figure shows (code_translated) and the set-up's `language="zh"`."""
    for zh in sorted(ZH_NOTEBOOKS.glob("*.ipynb")):
        en = json.loads((ROOT / "notebooks" / zh.name).read_text(encoding="utf-8"))
        cn = json.loads(zh.read_text(encoding="utf-8"))
        en_code = ["".join(chinese_toggles(c)["source"]) for c in en["cells"] if c["cell_type"] == "code"]
        cn_code = ["".join(c["source"]) for c in cn["cells"] if c["cell_type"] == "code"]
        assert len(en_code) == len(cn_code), zh.name
        for n, (a, b) in enumerate(zip(en_code, cn_code)):
            assert _code_tokens(a) == _code_tokens(b), f"{zh.name}, code cell {n}: more than comments and figures"
        assert sum('setup(seed=0, language="zh")' in c for c in cn_code) == 1, zh.name
        assert [c.get("metadata") for c in en["cells"]] == [c.get("metadata") for c in cn["cells"]], zh.name
        prose = "".join("".join(c["source"]) for c in cn["cells"] if c["cell_type"] == "markdown")
        assert len(re.findall(r"[\u3400-\u9fff]", prose)) > 1000, zh.name


def test_the_token_comparison_sees_a_changed_name_or_data_string():
    code = 'x = f(1, "data")  # a comment\nax.set_title("A title")\n'
    assert _code_tokens(code) == _code_tokens(code.replace("a comment", "注释").replace("A title", "标题"))
    assert _code_tokens(code) != _code_tokens(code.replace('"data"', '"数据"'))
    assert _code_tokens(code) != _code_tokens(code.replace("x =", "y ="))


# -- code cells: comments and figure strings (locales/zh_CN/code/) -------------------------------------------

CELL = """# Set-up: the first line
%pip install -q "x # not a comment"
x = "a # b"  # a trailing comment here
# A sentence cut over
# two lines of comments.
#@title Solution
y = 1  # noqa: E731
z = 2  # (B, T, D)
# print(x, y)
ax.set_title(f"Loss at step {step:>3}\\n"
             f"lr = {lr}", fontsize=9)
ax.plot(xs, ys, label="the loss" if ok else "no loss")
explore(draw, mode=["train", "test"], alt="Curves for {mode}")
plt.legend(["one line"], loc="upper left")
ax.text(0, 1, "$x_t$")
print("printed words stay")
label = f"{n} words" if n else "none"
device = setup(seed=0)
"""


def test_code_messages_are_prose_comments_and_the_strings_a_figure_shows():
    found = [(m["context"], m["msgid"]) for m in code_messages(CELL)]
    assert found == [("comment", "Set-up: the first line"), ("comment", "a trailing comment here"),
                     ("comment", "A sentence cut over two lines of comments."),
                     ("figure", "Loss at step {step:>3}\\nlr = {lr}"), ("figure", "the loss"), ("figure", "no loss"),
                     ("figure", "Curves for {mode}"), ("figure", "one line"), ("figure", "{n} words"),
                     ("figure", "none")]


def test_code_translated_changes_only_comments_figure_strings_and_the_language():
    t = {("comment", "Set-up: the first line"): "设置：第一行", ("comment", "a trailing comment here"): "行尾注释",
         ("comment", "A sentence cut over two lines of comments."): "一个被拆成两行注释的句子。",
         ("figure", "Loss at step {step:>3}\\nlr = {lr}"): "第 {step:>3} 步的损失\\n学习率 = {lr}",
         ("figure", "the loss"): "损失", ("figure", "Curves for {mode}"): "{mode} 的曲线"}
    out, missing = code_translated(CELL, t)
    assert missing == [("figure", "no loss"), ("figure", "one line"), ("figure", "{n} words"), ("figure", "none")]
    assert out == CELL.replace("Set-up: the first line", "设置：第一行").replace(
        "a trailing comment here", "行尾注释").replace(
        "A sentence cut over\n# two lines of comments.", "一个被拆成两行注释的句子。").replace(
        'f"Loss at step {step:>3}\\n"', 'f"第 {step:>3} 步的损失\\n"').replace(
        'f"lr = {lr}"', 'f"学习率 = {lr}"').replace(
        '"the loss"', '"损失"').replace('"Curves for {mode}"', '"{mode} 的曲线"').replace(
        "setup(seed=0)", 'setup(seed=0, language="zh")')
    assert _code_tokens(out) == _code_tokens(CELL)


MARKED = """from transformer_lite.book.i18n import N_
print(N_(f"accuracy on {n} held-out sentences: {acc:.1%}"), "(data)")
rows = {N_("greedy"): 0.9, "beam": 1.0}
print(f"{T} steps", N_("printed words marked for the reader"))
draw(ax, N_("a helper's label"))
"""


def test_a_string_marked_for_display_is_a_message_and_goes_back_token_for_token():
    """N_("...") marks what a reader sees that no call shape reveals (a print's template, a helper's label, a dict
    key): it is a message of msgctxt "display"; an unmarked print stays English and data stays as it is."""
    found = [(m["context"], m["msgid"]) for m in code_messages(MARKED)]
    assert found == [("display", "accuracy on {n} held-out sentences: {acc:.1%}"), ("display", "greedy"),
                     ("display", "printed words marked for the reader"), ("display", "a helper's label")]
    t = {("display", "accuracy on {n} held-out sentences: {acc:.1%}"): "{n} 个留出句子上的准确率：{acc:.1%}",
         ("display", "greedy"): "贪心", ("display", "a helper's label"): "辅助函数的标签"}
    out, missing = code_translated(MARKED, t, language=False)
    assert missing == [("display", "printed words marked for the reader")]
    assert out == MARKED.replace("accuracy on {n} held-out sentences: {acc:.1%}",
                                 "{n} 个留出句子上的准确率：{acc:.1%}").replace(
        'N_("greedy")', 'N_("贪心")').replace("a helper's label", "辅助函数的标签")
    assert _code_tokens(out) == _code_tokens(MARKED)
    assert _code_tokens(MARKED) != _code_tokens(MARKED.replace('"beam"', '"束"'))  # data stays data
    assert code_message_problems("display", "accuracy {acc:.1%}", "准确率 {acc}") != []  # fields kept


ESCAPED = r"""box(N_("(B, T, D)\nweights (B, H, T, T)"))
ax.set_title("(B, T)\n{n}")
ax.set_xlabel(r"$\nabla$ \nabla_x")
ax.set_ylabel("\\nabla \\tau")
ax.text(0, 0, "line one\n" "\tTotal")
x = 1  # \tanh \nabla
"""


def test_a_word_right_after_an_escape_is_a_word():
    """\\n, \\r, \\t in a string literal end the word before them: the "weights" of "(B, T, D)\\nweights" is a
    word, so the marked string is a message; a raw literal's or an escaped backslash's \\nabla is LaTeX, and so is a
    comment's, not a word."""
    found = [(m["context"], m["msgid"]) for m in code_messages(ESCAPED)]
    assert found == [("display", "(B, T, D)\\nweights (B, H, T, T)"), ("figure", "line one\\n\\tTotal")]
    assert code_messages('ax.set_title("(B, T)\\nTotal")') != []  # a word after the escape alone
    assert any("no Chinese" in p for p in code_message_problems("display", "(B, T)\\nweights of heads",
                                                                 "(B, T)\\nweights of heads"))
    assert not any("no Chinese" in p for p in code_message_problems("comment", "\\nabla \\tanh \\theta", "x"))


def test_chapter_0_prints_its_marked_lines_in_chinese():
    """The marker end to end on chapter 0: each marked string of the English notebook is a message of its code
    catalog, and notebooks/zh/ prints it in Chinese, while the unmarked prints and the code stay the English."""
    english = (ROOT / "notebooks" / "00_why_transformers.ipynb").read_text(encoding="utf-8")
    chinese = (ZH_NOTEBOOKS / "00_why_transformers.ipynb").read_text(encoding="utf-8")
    cells = [("".join(c["source"]), "".join(z["source"])) for c, z in
             zip(json.loads(english)["cells"], json.loads(chinese)["cells"]) if c["cell_type"] == "code"]
    marked = [(m["msgid"], zh) for en, zh in cells for m in code_messages(en) if m["context"] == "display"]
    assert len(marked) >= 15
    for msgid, zh in marked:
        assert msgid not in zh, msgid
    assert any('print(N_("RNN 层输出改变了的位置：")' in zh for _, zh in cells)
    assert any('print(f"{T:>5}" + "".join(' in zh for _, zh in cells)  # an unmarked print: the English's


def test_a_long_comment_block_is_wrapped_to_its_width():
    block = "    # " + "word " * 30 + "end\n    # of it\nx = 1\n"
    msgid = code_messages(block)[0]["msgid"]
    out, _ = code_translated(block, {("comment", msgid): "一" * 80 + "，`a_b` 结束。"}, language=False)
    lines = out.split("\n")
    assert all(line.startswith("    # ") for line in lines[:-2]) and lines[-2:] == ["x = 1", ""]
    assert all(display_width(line) <= 160 for line in lines) and len(lines) >= 3
    assert "".join(line[6:] for line in lines[:-2]) == "一" * 80 + "，`a_b` 结束。"


@pytest.mark.parametrize("context, msgid, msgstr, problem", [
    ("figure", "Loss at step {step}", "第 {t} 步的损失", "fields differ"),
    ("figure", "loss of {name!r}", "{name} 的损失", "fields differ"),
    ("figure", "the loss in a plot", '图中的"损失', "not a valid string literal"),
    ("figure", "the $x_t$ axis here", "横轴", "math differ"),
    ("comment", "call `f(x)` on each row", "对每一行调用 f(x)", "code spans differ"),
    ("comment", "call it on each row", "", "untranslated"),
    ("comment", "call it on each row", "call it on each row", "no Chinese"),
    ("comment", "two\nlines", "两\n行", "line break"),
])
def test_a_malformed_code_translation_is_caught(context, msgid, msgstr, problem):
    assert any(problem in p for p in code_message_problems(context, msgid, msgstr))


def test_a_well_formed_code_translation_passes():
    assert code_message_problems("figure", "'{token}' at position {p:>2}, $x_t$",
                                      "“{token}”在位置 {p:>2}，$x_t$") == []
    assert code_message_problems("comment", "call `f(x)` here", "在这里调用 `f(x)`") == []
    assert "fuzzy" in code_message_problems("comment", "call it", "调用它", fuzzy=True)[0]


def test_code_update_keeps_translations_marks_changed_ones_fuzzy_and_drops_stale_ones(tmp_path):
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": ["x = 1  # the first comment here\n", "y = 2  # a brand new remark\n",
                                'ax.set_xlabel("position in the sentence")\n']}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "07_x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    po = polib.POFile()
    for ctx, msgid, msgstr in [("comment", "the first comment here", "这里的第一条注释"),
                               ("figure", "position in a sentence", "句中位置"),
                               ("comment", "a comment that is gone", "已删除的注释")]:
        po.append(polib.POEntry(msgctxt=ctx, msgid=msgid, msgstr=msgstr))
    (tmp_path / "notebooks").mkdir()
    po.save(str(tmp_path / "notebooks" / "07_x.po"))
    code_update([path], catalogs=tmp_path)
    entries = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(tmp_path / "notebooks" / "07_x.po"))}
    assert set(entries) == {("comment", "the first comment here"), ("comment", "a brand new remark"),
                            ("figure", "position in the sentence")}
    assert entries["comment", "the first comment here"].msgstr == "这里的第一条注释"
    assert entries["comment", "a brand new remark"].msgstr == ""
    changed = entries["figure", "position in the sentence"]
    assert changed.msgstr == "句中位置" and "fuzzy" in changed.flags
    assert changed.previous_msgid == "position in a sentence"
    problems = code_check([path], catalogs=tmp_path)
    assert len(problems) == 2 and all(p.startswith("code/07_x [") for p in problems)
    assert any("untranslated" in p and "brand new" in p for p in problems)
    assert any("fuzzy" in p and "position in the sentence" in p for p in problems)
    assert code_translated("".join(nb["cells"][0]["source"]), code_translations(path, tmp_path))[0] == \
        "x = 1  # 这里的第一条注释\ny = 2  # a brand new remark\nax.set_xlabel(\"position in the sentence\")\n"
    po = polib.pofile(str(tmp_path / "notebooks" / "07_x.po"))
    po.find("a brand new remark", msgctxt="comment").msgstr = '一条新的。 "注释"(软件包)'
    po.save()
    styled = [p for p in code_check([path], catalogs=tmp_path) if "brand new" in p]
    assert any("ASCII quotes" in p for p in styled) and any("space after" in p for p in styled) \
        and any("软件包" in p for p in styled), styled
    # code notation keeps its ASCII: a literal quoted as in the English, a tuple's commas and parentheses
    assert code_style_problems("code/x", 'answer "a", "b" or "c"; (layer, head) -> x',
                                    '答案为 "a"、"b" 或 "c"；(层, 头) -> x', {}) == []


@pytest.mark.parametrize("notebook", [
    pytest.param(p, id=p.stem)
    for p in sorted((ROOT / "notebooks").glob("*.ipynb"))])
def test_every_comment_and_figure_string_has_a_chinese_translation(notebook):
    problems = code_check([notebook])
    assert not problems, (f"{len(problems)} code message(s) to translate or fix (python -m bookbuild.i18n update, "
                          f"then edit {code_catalog_path(notebook).relative_to(ROOT)}):\n"
                          + "\n".join(problems[:40]))


def _solutions(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if "solution" in c.get("metadata", {}).get("tags", [])]


def test_the_chinese_notebooks_solutions_fold_under_chinese_toggles():
    """Every solution of notebooks/zh/ reads 显示答案 / 隐藏答案 on its toggle (myst-nb's mystnb.code_prompt_show/hide,
    as the prose says) and 答案 as its Colab title; the strings come from one table, CODE_PROMPTS."""
    assert (CODE_PROMPTS["Show solution"], CODE_PROMPTS["Hide solution"]) == ("显示答案", "隐藏答案")
    found, bad = 0, []
    for zh in sorted(ZH_NOTEBOOKS.glob("*.ipynb")):
        nb = json.loads(zh.read_text(encoding="utf-8"))
        english = _solutions(json.loads((ROOT / "notebooks" / zh.name).read_text(encoding="utf-8")))
        solutions = _solutions(nb)
        assert len(solutions) == len(english) >= 3, f"{zh.name}: {len(solutions)} solutions, English {len(english)}"
        for i, cell in enumerate(solutions):
            prompts = cell["metadata"].get("mystnb", {})
            if (prompts.get("code_prompt_show"), prompts.get("code_prompt_hide")) != ("显示答案", "隐藏答案") \
                    or not cell["source"][0].startswith("#@title 答案"):
                bad.append(f"{zh.name} solution {i + 1}: {prompts}, {cell['source'][0].strip()!r}")
            found += 1
        text = zh.read_text(encoding="utf-8")
        assert "Show solution" not in text and "Hide solution" not in text, zh.name
    assert not bad, "solutions of notebooks/zh/ whose toggles are not Chinese (python -m bookbuild.i18n notebooks):" \
        "\n" + \
        "\n".join(bad[:20])
    assert found >= 60


def test_chinese_toggles_change_only_the_folds_titles():
    cell = {"cell_type": "code", "source": ["#@title Solution\n", "x = 1  # Show solution\n"], "outputs": [],
            "metadata": {"tags": ["hide-cell", "solution"], "cellView": "form",
                         "mystnb": {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}}}
    assert chinese_toggles(cell) == {
        "cell_type": "code", "source": ["#@title 答案\n", "x = 1  # Show solution\n"], "outputs": [],
        "metadata": {"tags": ["hide-cell", "solution"], "cellView": "form",
                     "mystnb": {"code_prompt_show": "显示答案", "code_prompt_hide": "隐藏答案"}}}
    plain = {"cell_type": "code", "source": "print(1)", "metadata": {}, "outputs": []}
    assert chinese_toggles(json.loads(json.dumps(plain))) == plain


def test_the_glossarys_terms_are_words_for_the_chinese_search():
    """jieba alone cuts 位置编码 into 位置 + 编码: the glossary's terms go into its dictionary (html_search_options)."""
    words = search_words()
    assert {"位置编码", "束搜索", "教师强制", "标签平滑", "残差连接", "多头注意力"} <= set(words)
    assert all(re.fullmatch(r"[\u3400-\u9fff]+", w) for w in words) and len(words) == len(set(words)) > 80


@pytest.mark.parametrize("folder", ["notebooks", "notebooks/zh"])
def test_every_section_link_has_its_anchor_and_no_anchor_is_stale(folder):
    """A link [..](#slug) or [..](NN_x.ipynb#slug) names the English heading's MyST slug, which JupyterLab does not
    know (it names a heading by its text): the line `<div id="slug"></div>` right before the heading, in both
    editions, is what it finds (heading_anchors, written by `bookbuild/i18n.py anchors`), with the percent-encoded
    id beside it when that differs. Each heading a link targets has exactly one such line, and no line names a
    section no link targets (a renamed heading or a dropped link leaves none behind)."""
    targets = link_targets()
    assert sum(len(f) for f in targets.values()) >= 60
    for path in sorted((ROOT / folder).glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        english = json.loads((ROOT / "notebooks" / path.name).read_text(encoding="utf-8"))["cells"]
        slugs = {s for cell in heading_slugs(english) for s in cell}
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        fragments = targets.get(path.name, set())
        anchored = re.findall(r'^((?:<div id="[^"]+"></div>)+)\n\n#{1,3} ', text, re.M)
        every = re.findall(r'<div id="[^"]*"></div>', text)
        assert len(every) == sum(len(re.findall("<div", line)) for line in anchored), \
            f"{folder}/{path.name}: an anchor line that is not right before a heading"
        ids = [re.findall(r'id="([^"]+)"', line) for line in anchored]
        for fragment in fragments:
            assert fragment in slugs, f"{path.name}#{fragment}: no English heading has this slug"
            assert [anchor_ids(fragment)] == [i for i in ids if i[0] == fragment], \
                f"{folder}/{path.name}: the heading {fragment!r} is not anchored once"
        stale = {i[0] for i in ids} - fragments
        assert not stale and {i[0] for i in ids} == fragments, f"{folder}/{path.name}: stale anchors {stale}"


def test_the_chinese_notebooks_name_another_chapters_section_by_its_cell():
    """[..](07_masking.ipynb#slug) becomes [..](07_masking.ipynb#cell-id=<the heading's cell>) in notebooks/zh/: the
    same heading (JupyterLab finds that cell in the notebook's model, cross_chapter_links)."""
    cells = heading_cells()
    found = 0
    for zh in sorted(ZH_NOTEBOOKS.glob("*.ipynb")):
        text = "\n".join("".join(c["source"]) for c in json.loads(zh.read_text(encoding="utf-8"))["cells"])
        assert not re.search(r"\]\([\w.-]+\.ipynb#(?!cell-id=)", text), f"{zh.name}: a section link by slug"
        for target, cell_id in re.findall(r"\]\(([\w.-]+\.ipynb)#cell-id=([^)\s]+)\)", text):
            assert cell_id in cells[target].values(), f"{zh.name}: {target} has no heading cell {cell_id}"
            found += 1
    assert found >= 25
    assert cross_chapter_links("[a](07_masking.ipynb#the-future-does-not-leak-into-the-past) [b](x.ipynb#y)",
                                    cells) == f"[a](07_masking.ipynb#cell-id=" \
        f"{cells['07_masking.ipynb']['the-future-does-not-leak-into-the-past']}) [b](x.ipynb#y)"


def test_heading_slugs_follow_myst():
    cells = [{"cell_type": "markdown", "source": ["# The `d_k` scale\n", "\n", "## The math\n", "text\n",
                                                   "#### Too deep\n"]},
             {"cell_type": "code", "source": ["# a comment\n"]},
             {"cell_type": "markdown", "source": ["## The math\n"]}]
    assert heading_slugs(cells) == [["the-d_k-scale", "the-math", None], [], ["the-math-1"]]
    text = heading_anchors("# The title\n\n## The math\ntext", ["the-title", "the-math"], {"the-math"})
    assert text == '# The title\n\n<div id="the-math"></div>\n\n## The math\ntext'
    assert heading_anchors(text, ["the-title", "the-math"], {"the-math"}) == text  # written once
    assert heading_anchors(text, ["the-title", "the-math"], set()) == "# The title\n\n## The math\ntext"
    # a link's fragment reaches JupyterLab percent-encoded: a slug with "ε" is named both ways
    assert heading_anchors("## LayerNorm, ε", ["ε-inside"], {"ε-inside"}) == \
        '<div id="ε-inside"></div><div id="%CE%B5-inside"></div>\n\n## LayerNorm, ε'
    with pytest.raises(ValueError, match="2 headings in the cell, 1 slugs"):
        heading_anchors("## a\n## b", ["a"], {"a"})
