"""The built site made lighter for a phone, after both editions are built (tools/build_book.py).

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
  tools/purge_css.mjs): 45 KB -> 23 KB compressed on the critical path of every page, and fewer rules to match.
* **The head**: no preload of the theme's two deferred scripts (it raised them into the first paint's bytes), and
  the first visit's colour mode decided from the start (rewrite_head).
* **Plain code spans**: Pygments wraps every name, punctuation mark and space of a code cell in a ``<span>``
  (``<span class="n">x</span>``), over 2,000 elements on a chapter; where the book's Pygments style gives such a
  class nothing but the code block's own colour in both colour modes (checked in the site's pygments.css, not
  assumed), the span draws nothing and is unwrapped to its text: every built page is edited in place
  (rewrite_pages), and the site's pygments.css gains a rule giving each code block that colour itself.
* **The theme's tab stops**: on load, pydata-sphinx-theme gives each scrollable code block and output
  ``tabIndex`` 0 (keyboard users can scroll it), alternating a read of its size with a write of its
  ``tabIndex``: each write invalidates the styles (Bootstrap styles ``[tabindex="-1"]``), so each read lays the
  page out again (one 324 ms task on chapter 3). The patched script reads all sizes first, then writes the
  indices that change: the same tab stops, one layout.

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

ROOT = Path(__file__).resolve().parent.parent
MATHJAX_FONTS = ROOT / "node_modules" / "mathjax" / "es5" / "output" / "chtml" / "fonts" / "woff-v2"
SITE_MATHJAX_FONTS = Path("_static/tl/mathjax/output/chtml/fonts/woff-v2")
FA_CSS = Path("styles/pydata-sphinx-theme.css")
FA_FONTS = Path("vendor/fontawesome/webfonts")
MARK = "/* tools/slim_static.py: Font Awesome cut to the icons this site uses */\n"

# one rule of an icon: ".fa-a:before,.fa-b:before{content:"\f00c"}" (the theme's minified stylesheet)
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+::?before,?)+)\{content:"((?:[^"\\]|\\.)*)"\}')
_ICON_NAME = re.compile(r"\bfa-([a-z0-9]+(?:-[a-z0-9]+)*)")
_CSS_CONTENT = re.compile(r'content:\s*"((?:[^"\\]|\\.)*)"')
_FONT_FACE_SRC = re.compile(r'src:url\(\.\./vendor/fontawesome/webfonts/(fa-[a-z]+-\d+)\.woff2\) format\("woff2"\),'
                            r'url\(\.\./vendor/fontawesome/webfonts/\1\.ttf\) format\("truetype"\)')


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
        if path.suffix == ".html" or (path.suffix == ".js" and static in path.parents and path.name != "fontawesome.js"):
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

    out = _ICON_RULE.sub(rule, css)
    out = _FONT_FACE_SRC.sub(r'src:url(../vendor/fontawesome/webfonts/\1.woff) format("woff")', out)
    out = re.sub(r"/\*# sourceMappingURL=[^*]*\*/\s*$", "", out)  # the map describes the whole stylesheet
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
    css, chars = slim_stylesheet((source / FA_CSS).read_text(encoding="utf-8"), icon_names(html_dir))
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
# pydata-sphinx-theme 0.17.1's updateTabStops (src/pydata_sphinx_theme/assets/scripts/pydata-sphinx-theme.js,
# addTabStopsToScrollableElements), minified: a read and a write per element
TAB_STOPS = '.forEach(e=>{e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1})'
# the same decisions, every size read (one layout) when the first element is visited, then the changed writes; an
# element the browser is not rendering (in a closed fold, or a section not yet shown: static/tl-lazy.js) keeps its
# tab stop, since reading its size would lay it out now: it is decided again when it shows
TAB_STOPS_BATCHED = ('.forEach((e,i,l)=>{if(!i)l.tlTabs=Array.from(l,x=>x.checkVisibility&&'
                     '!x.checkVisibility({contentVisibilityAuto:!0})?x.tabIndex:x.scrollWidth>x.clientWidth||'
                     'x.scrollHeight>x.clientHeight?0:-1);if(e.tabIndex!==l.tlTabs[i])e.tabIndex=l.tlTabs[i]})')
# ... and its debounced run, which the theme calls on resizes and on changes of the page, also called by
# static/tl-lazy.js when a fold opens or the last section shows (window.tlTabStops)
TAB_STOPS_DEBOUNCED = 't=_(e,300);window.addEventListener("resize",t)'
TAB_STOPS_EXPOSED = 't=_(e,300);window.tlTabStops=t;window.addEventListener("resize",t)'
BOOTSTRAP_JS = Path("scripts/bootstrap.js")
# the theme's back-to-top button (in its bootstrap.js bundle) reads the header's position as the page loads, which
# lays out the whole page there and then; the header is sticky, so reading it at the first scroll gives the same
BACK_TO_TOP = ('var e=document.getElementsByClassName("bd-header")[0].getBoundingClientRect();'
               'window.addEventListener("scroll",function(){')
BACK_TO_TOP_LAZY = ('var h=document.getElementsByClassName("bd-header")[0],e;'
                    'window.addEventListener("scroll",function(){e=e||h.getBoundingClientRect();')


def _patched(name: Path, script: str, changes: list[tuple[str, str]]) -> str:
    for old, new in changes:
        if script.count(old) != 1:
            raise ValueError(f"{theme_static() / name}: {old[:60]!r}... of pydata-sphinx-theme 0.17.1 is not there "
                             "once: a new version of the theme? (tools/slim_static.py)")
        script = script.replace(old, new)
    return re.sub(r"\n//# sourceMappingURL=[^\n]*\s*$", "\n", script)


def patch_theme_script(html_dir: Path) -> None:
    """The theme's scripts with no layout forced as the page loads (TAB_STOPS_BATCHED, BACK_TO_TOP_LAZY)."""
    for name, changes in ((THEME_JS, [(TAB_STOPS, TAB_STOPS_BATCHED), (TAB_STOPS_DEBOUNCED, TAB_STOPS_EXPOSED)]),
                          (BOOTSTRAP_JS, [(BACK_TO_TOP, BACK_TO_TOP_LAZY)])):
        script = _patched(name, (theme_static() / name).read_text(encoding="utf-8"), changes)
        (html_dir / "_static" / name).write_text(script, encoding="utf-8")
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


PRE_COLOUR_MARK = "/* tools/slim_static.py: a code block's own text in the colour of its plain tokens */"


def purge_stylesheet(html_dir: Path) -> dict:
    """The theme's stylesheet with the rules the site's pages and scripts can match (tools/purge_css.mjs)."""
    proc = subprocess.run(["node", str(ROOT / "tools" / "purge_css.mjs"), str(html_dir), str(html_dir / "_static" / FA_CSS)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"tools/purge_css.mjs failed (exit {proc.returncode}; `npm ci` installs purgecss): "
                         f"{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


# pydata-sphinx-theme writes these into every page's head (its templates): the preloads raise the theme's two
# deferred scripts to high priority, into the bytes before the first paint; the first visit's colour mode script
# writes data-theme="auto", which no rule styles, until the theme's script sets "light" or "dark" at load: one more
# style pass over the whole page (176 ms on chapter 3 in Lighthouse's phone), and a dark reader sees a light page
# first. The mode script here decides the theme as the theme's script will (its setTheme: the system's preference).
_PRELOAD = re.compile(r'<link rel="preload" as="script" href="[^"]*_static/scripts/(?:bootstrap|pydata-sphinx-theme)'
                      r'\.js[^"]*" />\n?')
AUTO_THEME = 'document.documentElement.dataset.theme = localStorage.getItem("theme") || "auto";'
SYSTEM_THEME = ('document.documentElement.dataset.theme = localStorage.getItem("theme") || '
                '(matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");')


def rewrite_head(html: str) -> str:
    return _PRELOAD.sub("", html).replace(AUTO_THEME, SYSTEM_THEME)


def rewrite_pages(html_dir: Path) -> dict:
    """Every page's head (rewrite_head) and code blocks (plain_token_classes); what changed."""
    css = html_dir / "_static" / "pygments.css"
    text = css.read_text(encoding="utf-8") if css.exists() else ""
    classes = plain_token_classes(text)
    if classes and PRE_COLOUR_MARK not in text:
        rules = "".join(f'html[data-theme="{theme}"] .highlight pre {{ color: {colour} }}\n'
                        for theme, colour in _THEME_COLOUR.findall(text))
        css.write_text(text.rstrip("\n") + "\n" + PRE_COLOUR_MARK + "\n" + rules, encoding="utf-8")
    spans = pages = heads = 0
    for page in html_dir.rglob("*.html"):
        if "_static" in page.relative_to(html_dir).parts:
            continue
        old = page.read_text(encoding="utf-8")
        heads += AUTO_THEME in old or bool(_PRELOAD.search(old))
        new, n = unwrap_plain_spans(rewrite_head(old), classes)
        if new != old:
            page.write_text(new, encoding="utf-8")
            pages += 1
            spans += n
    if pages and not heads:  # the theme's templates changed: say so, instead of silently keeping its head
        raise ValueError("no page's head has the preloads or the colour-mode script of pydata-sphinx-theme 0.17.1 "
                         "that rewrite_head replaces: a new version of the theme? (tools/slim_static.py)")
    return dict(pages=pages, spans=spans, heads=heads)


def slim(html_dir: Path) -> dict:
    if not (theme_static() / FA_CSS).exists():
        raise FileNotFoundError(f"{theme_static() / FA_CSS}: pydata-sphinx-theme's stylesheet is not where 0.17 keeps it")
    patch_theme_script(html_dir)
    done = dict(pages=rewrite_pages(html_dir), fontawesome=slim_fontawesome(html_dir), mathjax=slim_mathjax(html_dir))
    done["stylesheet"] = purge_stylesheet(html_dir)
    return done


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(slim(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"), indent=1))
