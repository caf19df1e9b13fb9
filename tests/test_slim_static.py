"""bookbuild/slim_static.py: the site made lighter for a phone (test_budgets.py) without changing what a page shows.

The unit tests feed each cut a small example that it must change and one it must leave; the site tests check the
built site: every icon a page names still has its rule and its glyph, every glyph a formula draws is still in its
font, no highlighted code span that draws a colour was unwrapped, and the theme's patched script is the theme's
own but for its tab-stop loop.
"""
from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from bookbuild import slim_static as ss

ROOT = Path(__file__).resolve().parent.parent

HTML = Path(os.environ.get("SITE_HTML", ROOT / "_build" / "html"))


def cmap(path: Path) -> set[int]:
    from fontTools.ttLib import TTFont

    return set(TTFont(io.BytesIO(path.read_bytes())).getBestCmap())


# ---------------------------------------------------------------- units

def test_css_strings_are_decoded_as_a_browser_reads_them():
    assert ss.css_string(r"\f00c") == "\uf00c"
    assert ss.css_string(r"\221A ") == "\u221a"      # one space ends an escape and is not part of the text
    assert ss.css_string(r"\1D451x") == "\U0001d451x"
    assert ss.css_string(r'a\"b') == 'a"b'
    assert ss.css_string("d") == "d"


def test_the_stylesheet_keeps_the_icons_the_site_names_and_their_characters():
    css = ('@charset "UTF-8";\n:root{--pst-icon-bell:"\uf0f3"}'
           '.fa-a:before,.fa-alias:before{content:"\\f001"}.fa-b:before{content:"\\f002"}'
           '@font-face{font-family:X;src:url(../vendor/fontawesome/webfonts/fa-solid-900.woff2) format("woff2"),'
           'url(../vendor/fontawesome/webfonts/fa-solid-900.ttf) format("truetype")}\n'
           '/*# sourceMappingURL=pydata-sphinx-theme.css.map*/')
    out, chars = ss.slim_stylesheet(css, {"alias"})
    assert out.startswith('@charset "UTF-8";\n' + ss.MARK)  # @charset must stay first
    assert '.fa-alias:before{content:"\\f001"}' in out and ".fa-a:before" not in out and ".fa-b" not in out
    assert chars == {0xF001, 0xF0F3}  # the kept icon's, and the admonitions' variable (never dropped)
    assert "sourceMappingURL" not in out


def test_icon_names_come_from_pages_and_scripts_but_not_from_font_awesomes_own_script(tmp_path):
    (tmp_path / "_static" / "scripts").mkdir(parents=True)
    (tmp_path / "p.html").write_text('<i class="fa-solid fa-sun"></i>')
    (tmp_path / "_static" / "scripts" / "theme.js").write_text('"fa-xmark"')
    (tmp_path / "_static" / "scripts" / "fontawesome.js").write_text('"fa-every-icon"')
    assert ss.icon_names(tmp_path) == {"solid", "sun", "xmark"}


def test_a_font_keeps_exactly_the_characters_asked_for_that_it_has(tmp_path):
    source = ss.theme_static() / ss.FA_FONTS / "fa-solid-900.ttf"
    size = ss.subset_font(source, {0xF002, 0xF185, 0x10FFFD}, tmp_path / "s.woff")
    assert (tmp_path / "s.woff").read_bytes()[:4] == b"wOFF" and size == (tmp_path / "s.woff").stat().st_size
    assert cmap(tmp_path / "s.woff") == {0xF002, 0xF185}  # (U+10FFFD is not in the font)
    assert size < source.stat().st_size / 20


MATH_STYLE = ('<style id="tl-math-css">'
              '.TEX-I{font-family: MJXZERO, MJXTEX-I;}'
              '@font-face /* 1 */{font-family: MJXTEX;src: url("../f/MathJax_Main-Regular.woff") format("woff");}'
              '@font-face /* 3 */{font-family: MJXTEX-I;src: url("../f/MathJax_Math-Italic.woff") format("woff");}'
              '@font-face /* 6 */{font-family: MJXTEX-S1;src: url("../f/MathJax_Size1-Regular.woff") format("woff");}'
              '@font-face /* 9 */{font-family: MJXTEX-S4;src: url("../f/MathJax_Size4-Regular.woff") format("woff");}'
              '@font-face /* 10 */{font-family: MJXTEX-A;src: url("../f/MathJax_AMS-Regular.woff") format("woff");}'
              'mjx-c.mjx-c1D451.TEX-I::before{padding: 0.694em 0.52em 0.01em 0;content: "d";}'
              'mjx-c.mjx-c221A::before{padding: 0.8em 0.853em 0.2em 0;content: "\\221A";}'
              'mjx-stretchy-h.mjx-c2192 mjx-ext mjx-c::before{content: "\\2212";}'
              '</style>')


def test_each_formula_glyph_is_kept_in_the_font_its_rule_names(tmp_path):
    (tmp_path / "a.html").write_text(MATH_STYLE)
    (tmp_path / "b.html").write_text(MATH_STYLE.replace('content: "d"', 'content: "k"'))
    chars = ss.formula_characters(tmp_path)
    assert chars["MathJax_Math-Italic.woff"] == {ord("d"), ord("k")}
    assert chars["MathJax_Main-Regular.woff"] == {0x221A, 0x2212}  # a plain glyph, and a stretchy piece
    for font in ("MathJax_Size1-Regular.woff", "MathJax_Size4-Regular.woff", "MathJax_AMS-Regular.woff"):
        assert chars[font] == {0x2212}  # a stretchy delimiter's piece: in every font of its fallback list


PYGMENTS = '''html[data-theme="light"] .highlight { background: #fefefe; color: #080808 }
html[data-theme="light"] .highlight .n { color: #080808 } /* Name */
html[data-theme="light"] .highlight .k { color: #7928A1 } /* Keyword */
html[data-theme="light"] .highlight .nb { color: #080808; font-weight: bold } /* Name.Builtin */
html[data-theme="light"] .highlight .p { color: #080808 }
html[data-theme="dark"] .highlight { background: #2b2b2b; color: #F8F8F2 }
html[data-theme="dark"] .highlight .n { color: #F8F8F2 }
html[data-theme="dark"] .highlight .k { color: #DCC6E0 }
html[data-theme="dark"] .highlight .nb { color: #F8F8F2 }
html[data-theme="dark"] .highlight .p { color: #FFD700 }
'''


def test_only_spans_that_draw_nothing_but_the_blocks_colour_are_plain():
    # .n: the base colour in both modes; .p: not in dark mode; .nb: bold; .k: its own colour
    assert ss.plain_token_classes(PYGMENTS) == {"n"}
    assert ss.plain_token_classes("") == set()


def test_plain_spans_are_unwrapped_inside_code_blocks_only():
    html = ('<p><span class="n">prose</span></p>'
            '<div class="highlight"><pre><span></span><span class="n">x</span> <span class="o">=</span> '
            '<span class="n">f</span><span class="p">(</span><span class="n">a&lt;b</span><span class="p">)</span>'
            '</pre></div>')
    out, n = ss.unwrap_plain_spans(html, {"n"})
    assert n == 3
    assert '<p><span class="n">prose</span></p>' in out
    assert ('<pre><span></span>x <span class="o">=</span> f<span class="p">(</span>'
            'a&lt;b<span class="p">)</span></pre>') in out
    assert ss.unwrap_plain_spans(html, set()) == (html, 0)


def test_a_head_with_the_themes_preloads_or_its_auto_mode_is_a_problem():
    """Our layout.html writes the head (bookbuild/patches.py); rewrite_pages fails a page whose head it did not
    write."""
    good = "<head>" + ss.SYSTEM_THEME + '<link rel="preload" as="font" href="../_static/x.woff" />'
    assert ss.head_problem(good) is None and ss.head_problem("<p>no head</p>") is None
    preload = good + '<link rel="preload" as="script" href="../_static/scripts/bootstrap.js?digest=1" />'
    assert "preloads" in ss.head_problem(preload)
    assert "colour mode" in ss.head_problem("<head>" + ss.AUTO_THEME)


def test_the_theme_scripts_patches_apply_to_the_installed_theme():
    """Each script's patches (bookbuild/patches.py) apply to pydata-sphinx-theme as installed: a new theme version
    fails the build (patches.PatchError, tests/test_patches.py) rather than ship an unpatched or broken script."""
    for name, names in ss.THEME_SCRIPT_PATCHES.items():
        script = ss.patches.patched_file(*names)
        assert all(script.count(ss.patches.PATCHES[n].after) == 1 for n in names), name
        assert "sourceMappingURL" not in script


# ---------------------------------------------------------------- the built site

def built() -> Path:
    if not (HTML / "index.html").exists():
        pytest.skip("site not built (make book)")
    return HTML


def test_every_icon_a_page_names_has_its_rule_and_its_glyph():
    html = built()
    css = (html / "_static" / ss.FA_CSS).read_text(encoding="utf-8")
    assert ss.MARK in css
    rules = {name: ss.css_string(body) for sel, body in ss._ICON_RULE.findall(css)
             for name in re.findall(r"\.fa-([a-z0-9-]+)", sel)}
    fonts = {p.stem: cmap(p) for p in (html / "_static" / ss.FA_FONTS).glob("*.woff")}
    assert set(fonts) == {"fa-solid-900", "fa-regular-400", "fa-brands-400"}
    fa_fonts = html / "_static" / ss.FA_FONTS
    assert not list(fa_fonts.glob("*.woff2")) and not list(fa_fonts.glob("*.ttf"))
    every_glyph = set().union(*fonts.values())
    for name in ("magnifying-glass", "bars", "list", "sun", "moon", "circle-half-stroke", "download", "xmark"):
        assert name in rules, f"fa-{name}: its rule is gone"
        assert ord(rules[name]) in every_glyph, f"fa-{name}: its glyph is gone"
    # the admonitions' icons and the prev/next arrows (CSS variables, never a page's class)
    for char in ss._private_use(css[css.index(":root"):]):
        assert char in every_glyph, f"U+{char:04X} (a --pst-icon-* character) has no glyph"


def test_every_glyph_a_formula_draws_is_in_its_font():
    html = built()
    fonts = html / ss.SITE_MATHJAX_FONTS
    drawn = set()
    for name, chars in ss.formula_characters(html).items():
        # (a stretchy piece is asked of every font of its fallback list; only those that had it keep it)
        lost = (chars - cmap(fonts / name)) & cmap(ss.MATHJAX_FONTS / name)
        assert not lost, f"{name}: {sorted(map(hex, lost))[:10]} drawn by a formula but cut from the font"
        drawn |= chars & cmap(fonts / name)
    assert len(drawn) > 100 and ord("x") in drawn and 0x221A in drawn  # (x in Math-Italic, the square root)
    main = "MathJax_Main-Regular.woff"
    assert (fonts / main).stat().st_size < (ss.MATHJAX_FONTS / main).stat().st_size


def test_highlighted_code_keeps_every_coloured_span():
    html = built()
    page = (html / "notebooks" / "03_self_attention.html").read_text(encoding="utf-8")
    plain = ss.plain_token_classes((html / "_static" / "pygments.css").read_text(encoding="utf-8"))
    assert {"n", "p"} <= plain
    blocks = "".join(m.group(2) for m in ss._PRE.finditer(page))
    assert not re.search(r'<span class="(?:%s)">' % "|".join(plain), blocks)  # every plain span unwrapped
    assert blocks.count('<span class="k">') > 20 and blocks.count('<span class="o">') > 100  # the coloured ones stay
    assert ss.PRE_COLOUR_MARK in (html / "_static" / "pygments.css").read_text(encoding="utf-8")


def test_the_theme_scripts_are_the_themes_own_but_for_the_patches():
    html = built()
    for name, names in ss.THEME_SCRIPT_PATCHES.items():
        ours = (html / "_static" / name).read_text(encoding="utf-8")
        theirs = (ss.theme_static() / name).read_text(encoding="utf-8")
        for patch in map(ss.patches.PATCHES.get, names):
            assert ours.count(patch.after) == 1
            ours = ours.replace(patch.after, patch.before)
        assert ours.rstrip() == re.sub(r"\n//# sourceMappingURL=\S*\s*$", "", theirs).rstrip()


def test_pages_have_no_script_preload_and_no_auto_theme():
    html = built()
    for page in [html / "notebooks" / "12_inference.html", html / "zh" / "notebooks" / "12_inference.html",
                 html / "search.html"]:
        text = page.read_text(encoding="utf-8")
        assert '<link rel="preload" as="script"' not in text and ss.AUTO_THEME not in text and ss.SYSTEM_THEME in text
