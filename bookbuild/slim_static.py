"""The built site made lighter for a phone, after both editions are built (bookbuild/build_book.py).

Lighthouse's mobile emulation (a mid-range phone on slow 4G: 1.6 Mbit/s, a CPU 4x slower than a desktop's)
counts, before the first paint, the page, its stylesheets and every request of high priority that starts before
it, web fonts included; and, after it, every task of the main thread over 50 ms. Measured on chapter 3 before
this step: performance 78, the fonts 386 KB of the page's 639 KB, the theme's stylesheet 66 KB compressed, four
tasks of 150-360 ms forcing style and layout. Each cut below keeps what the page shows (tests/test_slim_static.py):

* **Fonts** cut to the glyphs the site draws, as WOFF (zlib: fontTools needs no other library for it):
  Font Awesome (pydata-sphinx-theme's copy: 300 KB of fonts for the ~30 icons of the header, the admonitions'
  ``--pst-icon-*`` characters and the prev/next arrows) keeps the rules of the icons some page or script names
  (``fa-magnifying-glass``...) and their glyphs; MathJax's CommonHTML fonts keep, each, the characters some
  page's formula stylesheet (tl_math.py: ``content: "..."`` of every glyph it typeset) draws in it.
* **The theme's stylesheet** keeps the rules the site's pages and scripts can match (PurgeCSS,
  bookbuild/purge_css.mjs): 45 KB -> 23 KB compressed on the critical path of every page, and fewer rules to match.
* **The head**: no preload of the theme's two deferred scripts (it raised them into the first paint's bytes), and
  the first visit's colour mode decided from the start: written so by our own layout.html (bookbuild/patches.py
  lists why); rewrite_pages fails a page whose head is not.
* **Plain code spans**: Pygments wraps every name, punctuation mark and space of a code cell in a ``<span>``
  (``<span class="n">x</span>``), over 2,000 elements on a chapter; where the book's Pygments style gives such a
  class nothing but the code block's own colour in both colour modes (checked in the site's pygments.css, not
  assumed), the span draws nothing and is unwrapped to its text: every built page is edited in place
  (rewrite_pages), and the site's pygments.css gains a rule giving each code block that colour itself.
* **The theme's tab stops**: on load, pydata-sphinx-theme gives each scrollable code block and output
  ``tabIndex`` 0 (keyboard users can scroll it), alternating a read of its size with a write of its
  ``tabIndex``: each write invalidates the styles (Bootstrap styles ``[tabindex="-1"]``), so each read lays the
  page out again (one 324 ms task on chapter 3). The patched script reads all sizes first, then writes the
  indices that change: the same tab stops, one layout (bookbuild/patches.py, like every change to the theme's files).

The fonts, the theme's stylesheet and its scripts are read from where they are installed (the theme's package,
node_modules), never from the site, so running this twice, or after a build that copied only some files again, gives
the same files; Sphinx copies the theme's files into the site on every build (overwriting these), and this runs after
it. The pages and pygments.css are the site's own, changed in place; a second run changes nothing (an unwrapped span
is gone, and pygments.css carries PRE_COLOUR_MARK once it has the rule). Tried and left out:
``content-visibility: auto`` on the chapters' sections (the theme's tab stops and axe then measure every skipped
section one by one: the load task grew from 50 to 430 ms).
"""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

from bookbuild import patches

ROOT = Path(__file__).resolve().parent.parent
MATHJAX_FONTS = ROOT / "node_modules" / "mathjax" / "es5" / "output" / "chtml" / "fonts" / "woff-v2"
SITE_MATHJAX_FONTS = Path("_static/tl/mathjax/output/chtml/fonts/woff-v2")
FA_CSS = Path("styles/pydata-sphinx-theme.css")
FA_FONTS = Path("vendor/fontawesome/webfonts")
MARK = "/* bookbuild/slim_static.py: Font Awesome cut to the icons this site uses */\n"

# one rule of an icon: ".fa-a:before,.fa-b:before{content:"\f00c"}" (the theme's minified stylesheet)
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+::?before,?)+)\{content:"((?:[^"\\]|\\.)*)"\}')
_ICON_NAME = re.compile(r"\bfa-([a-z0-9]+(?:-[a-z0-9]+)*)")
_CSS_CONTENT = re.compile(r'content:\s*"((?:[^"\\]|\\.)*)"')
# the theme's @font-face rules name the WOFF files slim_fontawesome writes (bookbuild/patches.py)
FONT_PATCHES = ("font-awesome-fa-brands-400-as-woff", "font-awesome-fa-regular-400-as-woff",
                "font-awesome-fa-solid-900-as-woff")


def theme_static() -> Path:
    import pydata_sphinx_theme

    return Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"


def css_string(text: str) -> str:
    """The characters of a CSS string's body: ``\\f00c`` (1-6 hex digits, one optional space after) and ``\\"``."""
    return re.sub(r"\\([0-9a-fA-F]{1,6}) ?|\\(.)",
                  lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text)


def _private_use(text: str) -> set[int]:
    """Icon characters (Unicode's private use areas) written in a stylesheet, literally or escaped."""
    chars = {ord(c) for c in text} | {int(h, 16) for h in re.findall(r"\\([0-9a-fA-F]{4,6})", text)}
    return {c for c in chars if 0xE000 <= c <= 0xF8FF or c >= 0xF0000}


def icon_names(html_dir: Path) -> set[str]:
    """Every ``fa-...`` name the site's pages and scripts write (the theme's script adds ``fa-xmark``)."""
    names: set[str] = set()
    static = html_dir / "_static"
    for path in html_dir.rglob("*"):
        if path.suffix == ".html" or (path.suffix == ".js" and static in path.parents
                                     and path.name != "fontawesome.js"):
            names |= set(_ICON_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


def slim_stylesheet(css: str, names: set[str]) -> tuple[str, set[int]]:
    """The theme's stylesheet with the rules of the icons in ``names`` only, and the icon characters it keeps."""
    kept: set[int] = set()

    def rule(m: re.Match) -> str:
        selectors = [s for s in m.group(1).split(",") if s and s[len(".fa-"):s.index(":")] in names]
        if not selectors:
            return ""
        kept.update(ord(c) for c in css_string(m.group(2)))
        return ",".join(selectors) + '{content:"' + m.group(2) + '"}'

    out = patches.without_source_map(_ICON_RULE.sub(rule, css))  # the map describes the whole stylesheet
    if out.startswith("@charset"):  # it must stay the first thing in the file
        first, _, rest = out.partition("\n")
        return first + "\n" + MARK + rest, kept | _private_use(_ICON_RULE.sub("", css))
    return MARK + out, kept | _private_use(_ICON_RULE.sub("", css))


def subset_font(source: Path, unicodes: set[int], dest: Path) -> int:
    """``source`` with the glyphs of ``unicodes`` only (those it has), written to ``dest`` as WOFF; its size."""
    import logging

    from fontTools import subset

    logging.getLogger("fontTools.subset").setLevel(logging.ERROR)  # "FFTM NOT subset": FontForge's timestamps, dropped
    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(unicodes))
    subsetter.subset(font)
    buf = io.BytesIO()
    subset.save_font(font, buf, options)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def slim_fontawesome(html_dir: Path) -> dict:
    """Font Awesome cut to this site's icons: the stylesheet and the three fonts in html_dir/_static."""
    source = theme_static()
    static = html_dir / "_static"
    css, chars = slim_stylesheet(patches.patched_file(*FONT_PATCHES), icon_names(html_dir))
    for path in static.rglob("*.css"):
        if path != static / FA_CSS:
            chars |= _private_use(path.read_text(encoding="utf-8", errors="replace"))
    (static / FA_CSS).write_text(css, encoding="utf-8")
    (static / FA_CSS).with_suffix(".css.map").unlink(missing_ok=True)
    fonts = static / FA_FONTS
    before = sum(f.stat().st_size for f in (source / FA_FONTS).glob("*.woff2"))
    after = 0
    for ttf in sorted((source / FA_FONTS).glob("*.ttf")):
        after += subset_font(ttf, chars, fonts / f"{ttf.stem}.woff")
        for old in (fonts / ttf.name, fonts / f"{ttf.stem}.woff2"):
            old.unlink(missing_ok=True)
    return dict(icons=len(chars), fonts_before=before, fonts_after=after)


_GLYPH_RULE = re.compile(r'([^{}]*)\{[^}]*content:\s*"((?:[^"\\]|\\.)*)"')
_FONT_FACE = re.compile(r'font-family:\s*([A-Z0-9-]+);\s*src:\s*url\("[^"]*/([^"/]+\.woff)"\)')
_VARIANT = re.compile(r'\.(TEX-[A-Z0-9]+)\{font-family:\s*MJXZERO,\s*([A-Z0-9-]+);')
# a stretchy delimiter's pieces are drawn in the first of these that has them (the stylesheet's own fallback list)
_STRETCHY_FAMILIES = ("MJXTEX-S1", "MJXTEX-S4", "MJXTEX", "MJXTEX-A")


def page_formula_characters(text: str) -> dict[str, set[int]]:
    """For each MathJax font file, the characters one page's formulas draw in it (tl_math.py writes each page's
    ``<style id="tl-math-css">``: a rule per glyph, ``mjx-c.mjx-c1D451.TEX-I::before{content: "d"}``, whose class
    names the font; a glyph without one is in the main font, a stretchy delimiter's in its fallback list)."""
    by_file: dict[str, set[int]] = {}
    for style in re.findall(r'<style id="tl-math-css">(.*?)</style>', text, re.S):
        files = dict(_FONT_FACE.findall(style))
        variants = dict(_VARIANT.findall(style))
        for selector, body in _GLYPH_RULE.findall(style):
            variant = re.search(r"\.(TEX-[A-Z0-9]+)\b", selector)
            if variant:
                families = [variants[variant.group(1)]]
            elif selector.lstrip().startswith("mjx-stretchy"):
                families = list(_STRETCHY_FAMILIES)
            else:
                families = ["MJXTEX"]
            for family in families:
                by_file.setdefault(files[family], set()).update(ord(c) for c in css_string(body))
    return by_file


def formula_characters(html_dir: Path) -> dict[str, set[int]]:
    """page_formula_characters of every page of the site, together."""
    by_file: dict[str, set[int]] = {}
    for page in html_dir.rglob("*.html"):
        for name, chars in page_formula_characters(page.read_text(encoding="utf-8", errors="replace")).items():
            by_file.setdefault(name, set()).update(chars)
    return by_file


def slim_mathjax(html_dir: Path, source: Path = MATHJAX_FONTS) -> dict:
    """Each MathJax font in the site with the characters the site's formulas draw in it (none: a font no page
    loads, cut to nothing but its .notdef; MathJax_Zero, 1.5 KB, whole)."""
    dest = html_dir / SITE_MATHJAX_FONTS
    chars = formula_characters(html_dir)
    before = after = 0
    for font in sorted(source.glob("*.woff")):
        before += font.stat().st_size
        if font.name == "MathJax_Zero.woff":
            shutil.copyfile(font, dest / font.name)
            after += font.stat().st_size
        else:
            after += subset_font(font, chars.get(font.name, set()), dest / font.name)
    return dict(characters=sum(map(len, chars.values())), fonts_used=len(chars), fonts_before=before, fonts_after=after)


THEME_JS = Path("scripts/pydata-sphinx-theme.js")
BOOTSTRAP_JS = Path("scripts/bootstrap.js")
# each of the theme's scripts and its patches (bookbuild/patches.py: why, and the version they were written for)
THEME_SCRIPT_PATCHES = {THEME_JS: ("theme-tab-stops-one-layout", "theme-tab-stops-callable"),
                        BOOTSTRAP_JS: ("back-to-top-reads-the-header-at-the-first-scroll",)}


def patch_theme_scripts(html_dir: Path) -> None:
    """The theme's scripts with no layout forced as the page loads (THEME_SCRIPT_PATCHES)."""
    for name, names in THEME_SCRIPT_PATCHES.items():
        (html_dir / "_static" / name).write_text(patches.patched_file(*names), encoding="utf-8")
        (html_dir / "_static" / name).with_suffix(".js.map").unlink(missing_ok=True)


_THEME_COLOUR = re.compile(r'html\[data-theme="(\w+)"\] \.highlight \{[^}]*?(?<![-\w])color: ([^;}\s]+)')
_TOKEN_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight \.([\w-]+) \{([^}]*)\}')
_PRE = re.compile(r'(<div class="highlight[^"]*"><pre>)(.*?)(</pre>)', re.S)


def plain_token_classes(pygments_css: str) -> set[str]:
    """The Pygments token classes whose every rule, in every colour mode, is only the code block's own colour."""
    base = dict(_THEME_COLOUR.findall(pygments_css))
    if not base:
        return set()
    plain: dict[str, bool] = {}
    for theme, cls, body in _TOKEN_RULE.findall(pygments_css):
        decls = [d.strip() for d in body.split(";") if d.strip()]
        same = theme in base and decls == [f"color: {base[theme]}"]
        plain[cls] = plain.get(cls, True) and same
    return {cls for cls, ok in plain.items() if ok}


def unwrap_plain_spans(html: str, classes: set[str]) -> tuple[str, int]:
    """``html`` with ``<span class="C">text</span>`` inside code blocks replaced by ``text`` for C in ``classes``."""
    if not classes:
        return html, 0
    span = re.compile(r'<span class="(?:' + "|".join(map(re.escape, sorted(classes))) + r')">([^<]*)</span>')
    count = 0

    def block(m: re.Match) -> str:
        nonlocal count
        body, n = span.subn(r"\1", m.group(2))
        count += n
        return m.group(1) + body + m.group(3)

    return _PRE.sub(block, html), count


PRE_COLOUR_MARK = "/* bookbuild/slim_static.py: a code block's own text in the colour of its plain tokens */"


def purge_stylesheet(html_dir: Path) -> dict:
    """The theme's stylesheet with the rules the site's pages and scripts can match (bookbuild/purge_css.mjs)."""
    proc = subprocess.run(["node", str(ROOT / "bookbuild" / "purge_css.mjs"), str(html_dir),
                           str(html_dir / "_static" / FA_CSS)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"bookbuild/purge_css.mjs failed (exit {proc.returncode}; `npm ci` installs purgecss): "
                         f"{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


# What our layout.html writes into every page's head instead of the theme's (bookbuild/patches.py,
# head-without-script-preloads-colour-mode-at-once): no preload of the theme's scripts, and the first visit's
# colour mode decided at once; the theme's own line would write data-theme="auto".
PRELOAD = re.compile(r'<link rel="preload" as="script" href="[^"]*_static/scripts/(?:bootstrap|pydata-sphinx-theme)'
                     r'\.js[^"]*" />')
AUTO_THEME = 'document.documentElement.dataset.theme = localStorage.getItem("theme") || "auto";'
SYSTEM_THEME = ('document.documentElement.dataset.theme = localStorage.getItem("theme") || '
                '(matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");')


def head_problem(html: str) -> str | None:
    """What is wrong with a page's head as our layout.html should have written it (None: nothing)."""
    if "<head" not in html:
        return None
    if PRELOAD.search(html):
        return "preloads the theme's deferred scripts"
    if AUTO_THEME in html or SYSTEM_THEME not in html:
        return "does not decide the colour mode at once"
    return None


def rewrite_pages(html_dir: Path) -> dict:
    """Every page's code blocks (plain_token_classes), its head checked (head_problem); what changed."""
    css = html_dir / "_static" / "pygments.css"
    text = css.read_text(encoding="utf-8") if css.exists() else ""
    classes = plain_token_classes(text)
    if classes and PRE_COLOUR_MARK not in text:
        rules = "".join(f'html[data-theme="{theme}"] .highlight pre {{ color: {colour} }}\n'
                        for theme, colour in _THEME_COLOUR.findall(text))
        css.write_text(text.rstrip("\n") + "\n" + PRE_COLOUR_MARK + "\n" + rules, encoding="utf-8")
    spans = pages = 0
    for page in html_dir.rglob("*.html"):
        if "_static" in page.relative_to(html_dir).parts:
            continue
        old = page.read_text(encoding="utf-8")
        problem = head_problem(old)
        if problem:
            raise ValueError(f"{page}: the page's head {problem}: bookbuild/sphinx_ext/templates/layout.html writes it "
                             "(its block css; bookbuild/patches.py head-without-script-preloads-colour-mode-at-once)")
        new, n = unwrap_plain_spans(old, classes)
        if new != old:
            page.write_text(new, encoding="utf-8")
            pages += 1
            spans += n
    return dict(pages=pages, spans=spans)


def slim(html_dir: Path) -> dict:
    if not (theme_static() / FA_CSS).exists():
        raise FileNotFoundError(f"{theme_static() / FA_CSS}: "
                                "pydata-sphinx-theme's stylesheet is not where 0.17 keeps it")
    patch_theme_scripts(html_dir)
    done = dict(pages=rewrite_pages(html_dir), fontawesome=slim_fontawesome(html_dir), mathjax=slim_mathjax(html_dir))
    done["stylesheet"] = purge_stylesheet(html_dir)
    return done


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(slim(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"), indent=1))
