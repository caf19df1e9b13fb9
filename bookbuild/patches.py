"""Every place the build changes, replaces or leans on a private part of a third-party package: one list.

Three kinds of entry, each naming the package, the version it was written for, why, and the upstream issue when
one is known:

* :class:`Patch`: exact text of an installed file (a theme's minified script, ONNX Runtime Web's module) and what
  it becomes. :func:`apply` is the one function that edits such text: it checks that ``before`` occurs exactly
  ``count`` times and fails otherwise, with an error naming the patch and the installed version of its package.
* :class:`Reliance`: our code replaces a function of a package (a monkeypatch, made by :func:`monkeypatch`), uses a
  private name, or keeps a copy of one of its templates. Its ``probe`` says what is missing; :func:`check` fails
  the same way when a probe finds something.
* Patches applied elsewhere: bertviz's view scripts are edited at run time, in the reader's Jupyter, by
  ``transformer_lite/book/viz.py`` (the package cannot import the build's code); that module fails loudly on its
  own, and its entry here runs it against the installed bertviz.

``python -m bookbuild.patches`` checks every entry against what is installed (exit 1 and the errors when one no
longer applies); ``--markdown`` prints the list that CONTRIBUTING.md holds ("Patches to third-party code").
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "node_modules"


class PatchError(RuntimeError):
    """A registered patch no longer applies to the installed package."""


def installed_version(package: str) -> str:
    """The installed version of a PyPI distribution, or of an npm package (``npm:<name>``, from node_modules)."""
    if package.startswith("npm:"):
        try:
            return json.loads((NODE / package[4:] / "package.json").read_text(encoding="utf-8"))["version"]
        except (OSError, ValueError, KeyError):
            return "not installed (npm ci)"
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def installed_file(package: str, file: str) -> Path:
    """Where ``file`` (a path inside the package as installed) is on this machine."""
    if package.startswith("npm:"):
        return NODE / package[4:] / file
    return Path(importlib.metadata.distribution(package).locate_file(file))


@dataclass(frozen=True)
class Patch:
    name: str
    package: str       # a PyPI distribution, or "npm:<name>"
    written_for: str   # the version whose file holds ``before`` exactly ``count`` times
    file: str          # the file inside the installed package
    before: str
    after: str
    why: str
    count: int = 1
    upstream: str = ""
    applied_by: str = ""

    def fail(self, problem: str) -> PatchError:
        return PatchError(f"patch {self.name!r} no longer applies: {problem} in {self.package} "
                          f"{installed_version(self.package)} (it was written for {self.written_for}; "
                          f"file {self.file}). Update it in bookbuild/patches.py, or pin {self.package} back.")


@dataclass(frozen=True)
class Reliance:
    name: str
    package: str
    written_for: str
    uses: str          # what of the package our code replaces, calls or copies
    why: str
    probe: Callable[[], str | None] = field(compare=False, repr=False)  # what is missing, or None
    upstream: str = ""
    applied_by: str = ""

    def fail(self, problem: str) -> PatchError:
        return PatchError(f"patch {self.name!r} no longer applies: {problem} in {self.package} "
                          f"{installed_version(self.package)} (it was written for {self.written_for}; it uses "
                          f"{self.uses}). Update it in bookbuild/patches.py and {self.applied_by}, or pin "
                          f"{self.package} back.")


def apply(text: str, *names: str) -> str:
    """``text`` with the registered patches ``names`` applied in order, each checked to match exactly."""
    for name in names:
        patch = PATCHES[name]
        if not isinstance(patch, Patch):
            raise TypeError(f"{name!r} is not a text patch")
        found = text.count(patch.before)
        if found != patch.count:
            raise patch.fail(f"its text occurs {found} time(s), not {patch.count},")
        text = text.replace(patch.before, patch.after)
    return text


_SOURCE_MAP = re.compile(r"\n?(?://# sourceMappingURL=[^\n]*|/\*# sourceMappingURL=[^*]*\*/)\s*$")


def without_source_map(text: str) -> str:
    """A patched or cut file without its last line's source map reference: the map describes the original."""
    return _SOURCE_MAP.sub("\n", text) if _SOURCE_MAP.search(text) else text


def patched_file(*names: str) -> str:
    """The installed file of the patches ``names`` (one file), patched, without its source map reference."""
    files = {(PATCHES[n].package, PATCHES[n].file) for n in names}
    if len(files) != 1:
        raise ValueError(f"{names} patch {len(files)} files; give the patches of one file")
    (package, file), = files
    path = installed_file(package, file)
    if not path.is_file():
        raise PATCHES[names[0]].fail(f"{path} is missing")
    return without_source_map(apply(path.read_text(encoding="utf-8"), *names))


def check(name: str) -> None:
    """Fail (PatchError) when the registered entry ``name`` no longer applies to what is installed."""
    entry = PATCHES[name]
    if isinstance(entry, Patch):
        path = installed_file(entry.package, entry.file)
        if not path.is_file():
            raise entry.fail(f"{path} is missing")
        apply(path.read_text(encoding="utf-8"), name)
        return
    try:
        problem = entry.probe()
    except Exception as e:  # noqa: BLE001 - an import or attribute error is the answer
        problem = f"{type(e).__name__}: {e}"
    if problem:
        raise entry.fail(problem)


def check_all() -> list[str]:
    """The error of every entry that no longer applies (none: an empty list)."""
    errors = []
    for name in PATCHES:
        try:
            check(name)
        except PatchError as e:
            errors.append(str(e))
    return errors


def monkeypatch(name: str, owner: type, attribute: str, wrap: Callable[[Callable], Callable]) -> None:
    """``owner.attribute`` replaced by ``wrap(original)``, once, for the registered Reliance ``name``; fails when
    the package no longer has it."""
    check(name)
    original = getattr(owner, attribute)
    if getattr(original, "tl_patch", None) == name:
        return
    replacement = wrap(original)
    replacement.tl_patch = name
    setattr(owner, attribute, replacement)


# ---------------------------------------------------------------- probes of the Reliance entries

def _attribute(dotted: str, *attributes: str) -> Callable[[], str | None]:
    """A probe: the module ``dotted`` (``module:Class`` for a class) has each of ``attributes``."""
    def probe() -> str | None:
        module, _, qual = dotted.partition(":")
        obj = importlib.import_module(module)
        for part in filter(None, qual.split(".")):
            obj = getattr(obj, part)
        missing = [a for a in attributes if not hasattr(obj, a)]
        return f"{dotted} has no {', '.join(missing)}" if missing else None
    return probe


def _source_has(dotted: str, *words: str) -> Callable[[], str | None]:
    """A probe: the source of ``module:Class.function`` still names each of ``words``."""
    def probe() -> str | None:
        import inspect

        module, _, qual = dotted.partition(":")
        obj = importlib.import_module(module)
        for part in filter(None, qual.split(".")):
            obj = getattr(obj, part)
        source = inspect.getsource(obj)
        missing = [w for w in words if w not in source]
        return f"{dotted} no longer uses {', '.join(missing)}" if missing else None
    return probe


def _file_has(package: str, file: str, text: str) -> Callable[[], str | None]:
    """A probe: the package's installed ``file`` holds ``text`` exactly once (the part our copy was made from, or
    what our code reads in it)."""
    def probe() -> str | None:
        path = installed_file(package, file)
        if not path.is_file():
            return f"{path} is missing"
        n = path.read_text(encoding="utf-8").count(text)
        return None if n == 1 else f"{file} holds the copied text {n} time(s), not once"
    return probe


THEME = "pydata_sphinx_theme/theme/pydata_sphinx_theme/"
OURS = ROOT / "bookbuild" / "sphinx_ext" / "templates"


def _webpack_macros_copy() -> str | None:
    """Our static/webpack-macros.html is the theme's without the two lines that load fontawesome.js."""
    theme = installed_file("pydata-sphinx-theme", THEME + "static/webpack-macros.html").read_text(encoding="utf-8")
    theirs = [line for line in theme.splitlines()
              if "scripts/fontawesome.js" not in line and "So that users can add custom icons" not in line]
    if len(theirs) != len(theme.splitlines()) - 2:
        return "static/webpack-macros.html no longer loads fontawesome.js in the two lines ours leaves out"
    ours = (OURS / "static" / "webpack-macros.html").read_text(encoding="utf-8").split("-#}\n", 1)[1].splitlines()
    return None if ours == theirs else "static/webpack-macros.html differs from ours beyond fontawesome.js"


def _bertviz_views() -> str | None:
    from transformer_lite.book import viz

    viz._bertviz_js.cache_clear()
    for name in ("head_view.js", "model_view.js"):
        viz._bertviz_js(name)  # raises, naming the pattern, when bertviz's script no longer has it
    return None


def _icon_rules() -> str | None:
    css_file = installed_file("pydata-sphinx-theme", THEME + "static/styles/pydata-sphinx-theme.css")
    css = css_file.read_text(encoding="utf-8")
    rule = re.compile(r'((?:\.fa-[a-z0-9-]+::?before,?)+)\{content:"((?:[^"\\]|\\.)*)"\}')  # slim_static._ICON_RULE
    n = len(rule.findall(css))
    if n > 1000:
        return None
    return f"styles/pydata-sphinx-theme.css has {n} icon rules of the form .fa-x:before{{content:\"...\"}}"


# ---------------------------------------------------------------- the registry

THEME_CSS_BLOCK = """{%- block css %}
  {# The data-cfasync attribute disables CloudFlare's Rocket loader so that #}
  {# mode/theme are correctly set before the browser renders the page. #}
  {# https://github.com/pydata/pydata-sphinx-theme/pull/1045 #}
  <script data-cfasync="false">
    document.documentElement.dataset.mode = localStorage.getItem("mode") || "{{ default_mode }}";
    document.documentElement.dataset.theme = localStorage.getItem("theme") || "{{ default_mode }}";
  </script>
  <!--
    this give us a css class that will be invisible only if js is disabled
  -->
  <noscript>
    <style>
      .pst-js-only { display: none !important; }

    </style>
  </noscript>
  {{ _webpack.head_pre_assets() }}
  {{- css() }}
  {{ _webpack.head_js_preload() }}
{%- endblock css %}"""

THEME_EXTRAHEAD_BLOCK = """  {% if pagename == 'search' %}
    {# Search tools are already loaded on search page. Don't load them twice. #}
  {% else %}
    {# Load Sphinx's built-in search tools so that our custom inline search
       experience can work on any page. #}
    <script src="{{ pathto('_static/searchtools.js', 1) | e }}"></script>
    <script src="{{ pathto('_static/language_data.js', 1) | e }}"></script>
    <script src="{{ pathto('searchindex.js', 1) | e }}"></script>
  {% endif %}
{%- endblock extrahead %}"""

_ENTRIES: list[Patch | Reliance] = [
    Patch(
        name="theme-tab-stops-one-layout",
        package="pydata-sphinx-theme", written_for="0.17.1", file=THEME + "static/scripts/pydata-sphinx-theme.js",
        # updateTabStops (addTabStopsToScrollableElements in src/pydata_sphinx_theme/assets/scripts/), minified
        before='.forEach(e=>{e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1})',
        after=('.forEach((e,i,l)=>{if(!i)l.tlTabs=Array.from(l,x=>x.checkVisibility&&'
               '!x.checkVisibility({contentVisibilityAuto:!0})?x.tabIndex:x.scrollWidth>x.clientWidth||'
               'x.scrollHeight>x.clientHeight?0:-1);if(e.tabIndex!==l.tlTabs[i])e.tabIndex=l.tlTabs[i]})'),
        why=("On load the theme gives each scrollable code block and output tabIndex 0, alternating a read of its "
             "size with a write of its tabIndex; each write invalidates the styles (Bootstrap styles "
             "[tabindex=\"-1\"]), so each read lays the page out again (one 324 ms task on chapter 3). Patched: "
             "every size is read first (one layout), then the indices that change are written; an element the "
             "browser is not rendering (a closed fold, a section not yet shown: static/tl-lazy.js) keeps its tab "
             "stop until it shows."),
        applied_by="bookbuild/slim_static.py patch_theme_scripts"),
    Patch(
        name="theme-tab-stops-callable",
        package="pydata-sphinx-theme", written_for="0.17.1", file=THEME + "static/scripts/pydata-sphinx-theme.js",
        before='t=_(e,300);window.addEventListener("resize",t)',
        after='t=_(e,300);window.tlTabStops=t;window.addEventListener("resize",t)',
        why=("The tab stops' debounced run, which the theme calls on resizes and changes of the page, exposed as "
             "window.tlTabStops: static/tl-lazy.js calls it when a fold opens or the last section shows (their "
             "code blocks were skipped by theme-tab-stops-one-layout)."),
        applied_by="bookbuild/slim_static.py patch_theme_scripts"),
    Patch(
        name="back-to-top-reads-the-header-at-the-first-scroll",
        package="pydata-sphinx-theme", written_for="0.17.1", file=THEME + "static/scripts/bootstrap.js",
        before=('var e=document.getElementsByClassName("bd-header")[0].getBoundingClientRect();'
                'window.addEventListener("scroll",function(){'),
        after=('var h=document.getElementsByClassName("bd-header")[0],e;'
               'window.addEventListener("scroll",function(){e=e||h.getBoundingClientRect();'),
        why=("The back-to-top button (in the theme's bootstrap.js bundle) reads the header's position as the page "
             "loads, which lays out the whole page there and then; the header is sticky, so reading it at the "
             "first scroll gives the same value."),
        applied_by="bookbuild/slim_static.py patch_theme_scripts"),
    *[Patch(
        name=f"font-awesome-{font}-as-woff",
        package="pydata-sphinx-theme", written_for="0.17.1", file=THEME + "static/styles/pydata-sphinx-theme.css",
        before=(f'src:url(../vendor/fontawesome/webfonts/{font}.woff2) format("woff2"),'
                f'url(../vendor/fontawesome/webfonts/{font}.ttf) format("truetype")'),
        after=f'src:url(../vendor/fontawesome/webfonts/{font}.woff) format("woff")',
        why=("Font Awesome's fonts are cut to the icons the site draws and written as WOFF (fontTools writes WOFF "
             "with zlib alone; WOFF2 needs brotli); the @font-face names the cut file and nothing else."),
        applied_by="bookbuild/slim_static.py slim_fontawesome")
        for font in ("fa-brands-400", "fa-regular-400", "fa-solid-900")],
    Reliance(
        name="font-awesome-icon-rules",
        package="pydata-sphinx-theme", written_for="0.17.1",
        uses="the minified form of the icon rules in styles/pydata-sphinx-theme.css: "
             ".fa-a:before,.fa-b:before{content:\"\\f00c\"}",
        why=("slim_static keeps the rules of the icons some page or script names, and their glyphs; it reads the "
             "rules in this form."),
        probe=_icon_rules, applied_by="bookbuild/slim_static.py slim_stylesheet"),
    Reliance(
        name="head-without-script-preloads-colour-mode-at-once",
        package="pydata-sphinx-theme", written_for="0.17.1",
        uses="layout.html's block css, copied into bookbuild/sphinx_ext/templates/layout.html",
        why=("Our layout.html writes the head's css block itself: without the theme's preloads of its two deferred "
             "scripts (they raised them into the bytes before the first paint), and with the first visit's colour "
             "mode decided at once from the system's preference (the theme's writes data-theme=\"auto\", which no "
             "rule styles, until its script sets light or dark at load: one more style pass over the whole page, "
             "176 ms on chapter 3 on Lighthouse's phone, and a dark reader sees a light page first). The copy was "
             "made from this block of the theme's layout.html."),
        probe=_file_has("pydata-sphinx-theme", THEME + "layout.html", THEME_CSS_BLOCK),
        applied_by="bookbuild/sphinx_ext/templates/layout.html"),
    Reliance(
        name="head-without-search-scripts",
        package="pydata-sphinx-theme", written_for="0.17.1",
        uses="layout.html's block extrahead, copied into bookbuild/sphinx_ext/templates/layout.html",
        why=("Our layout.html writes the extrahead block without searchtools.js, language_data.js and "
             "searchindex.js (167 KB, render-blocking), which serve only search-as-you-type (off); search.html "
             "loads them itself. The copy was made from this block of the theme's layout.html."),
        probe=_file_has("pydata-sphinx-theme", THEME + "layout.html", THEME_EXTRAHEAD_BLOCK),
        applied_by="bookbuild/sphinx_ext/templates/layout.html"),
    Reliance(
        name="no-fontawesome-js",
        package="pydata-sphinx-theme", written_for="0.17.1",
        uses="static/webpack-macros.html, copied into bookbuild/sphinx_ext/templates/static/ less fontawesome.js",
        why=("fontawesome.js (1.5 MB on every page) only turns the icons into SVG; the theme's CSS already draws "
             "them with Font Awesome's web fonts."),
        probe=_webpack_macros_copy, applied_by="bookbuild/sphinx_ext/templates/static/webpack-macros.html"),
    Patch(
        name="onnxruntime-web-as-a-classic-script-exports",
        package="npm:onnxruntime-web", written_for="1.30.0", file="dist/ort.wasm.bundle.min.mjs",
        before=("export{rs as InferenceSession,Cr as TRACE,Pe as TRACE_EVENT_BEGIN,Ue as TRACE_EVENT_END,"
                "_e as TRACE_FUNC_BEGIN,De as TRACE_FUNC_END,de as Tensor,iu as default,Y as env,"
                "Je as registerBackend};"),
        after=("\nself.ort={InferenceSession:rs,TRACE:Cr,TRACE_EVENT_BEGIN:Pe,TRACE_EVENT_END:Ue,"
               "TRACE_FUNC_BEGIN:_e,TRACE_FUNC_END:De,Tensor:de,env:Y,registerBackend:Je};"),
        why=("A page opened from disk (file://) may run classic scripts but not import modules: the bundle's one "
             "export statement becomes window.ort (the explainer and the translator box use InferenceSession, "
             "Tensor and env)."),
        applied_by="bookbuild/web_export.py classic_ort_script"),
    Patch(
        name="onnxruntime-web-as-a-classic-script-own-url",
        package="npm:onnxruntime-web", written_for="1.30.0", file="dist/ort.wasm.bundle.min.mjs",
        before="import.meta.url", after="self.__tlOrtScript", count=11,
        why=("import.meta is a module's; the bundle uses only import.meta.url, to find the files the site hands "
             "over in memory instead (bookbuild/site_assets/tl-translator.js sets self.__tlOrtScript)."),
        applied_by="bookbuild/web_export.py classic_ort_script"),
    Reliance(
        name="myst-nb-image-alt-from-output-metadata",
        package="myst-nb", written_for="1.4.0",
        uses="myst_nb.core.render.NbElementRenderer.render_image (wrapped)",
        why=("A notebook's image takes its <img alt> from the output's own metadata ({\"image/png\": {\"alt\": "
             "...}}), which transformer_lite.book.plotting writes for every figure in the notebook's language; "
             "myst-nb reads only width and height there (alt only from the cell's mystnb.image metadata), and "
             "Sphinx then writes the file's path as the alt."),
        probe=_attribute("myst_nb.core.render:NbElementRenderer", "render_image"),
        applied_by="bookbuild/sphinx_ext/accessibility.py alt_text_from_outputs"),
    Reliance(
        name="myst-nb-folded-cell-markup",
        package="myst-nb", written_for="1.4.0",
        uses="myst_nb.sphinx_.HideCodeCellNode and its prompt_show/prompt_hide attributes (HTML visitor replaced)",
        why=("The folded cell without aria-label=\"Toggle hidden content\" (its summary's visible text is its "
             "name: WCAG 2.5.3), its prompts translated in the Chinese edition, and its content in a <template> "
             "until the reader opens it."),
        probe=lambda: (_attribute("myst_nb.sphinx_:HideCodeCellNode", "__init__")()
                       or _source_has("myst_nb.sphinx_", 'node["prompt_show"]', 'node["prompt_hide"]')()),
        applied_by="bookbuild/sphinx_ext/accessibility.py visit_hidden_cell"),
    Reliance(
        name="myst-nb-output-folder-per-edition",
        package="myst-nb", written_for="1.4.0",
        uses="app.env.mystnb_config (an NbParserConfig) and its copy(output_folder=...)",
        why=("myst-nb writes a page's figures into jupyter_execute/ beside the output folder; for the Chinese "
             "edition, built into _build/html/zh, that is inside the English site."),
        probe=_attribute("myst_nb.core.config:NbParserConfig", "copy", "output_folder"),
        applied_by="bookbuild/sphinx_ext/editions.py notebook_output_folder"),
    Reliance(
        name="sphinx-script-tags",
        package="sphinx", written_for="7.4.7",
        uses="sphinx.builders.html._assets._JavaScript (private) and its filename, priority and attributes",
        why=("Every script of the page's head is rewritten as deferred, delayed past the first frame, or inline "
             "(documentation_options.js, tl-require.js): no script blocks rendering. Sphinx offers no public way "
             "to change the scripts another extension or the theme added."),
        probe=_source_has("sphinx.builders.html._assets:_JavaScript.__init__", "filename", "priority", "attributes"),
        applied_by="bookbuild/sphinx_ext/page_speed.py unblocked_scripts"),
    Reliance(
        name="sphinx-documentation-options-template",
        package="sphinx", written_for="7.4.7",
        uses="sphinx/themes/basic/static/documentation_options.js.jinja",
        why=("documentation_options.js (DOCUMENTATION_OPTIONS, which the page's inline scripts use while it is "
             "parsed) is written into each page, rendered from Sphinx's own template, instead of a blocking script."),
        probe=_file_has("sphinx", "sphinx/themes/basic/static/documentation_options.js.jinja",
                        "const DOCUMENTATION_OPTIONS = {"),
        applied_by="bookbuild/sphinx_ext/page_speed.py _documentation_options"),
    Reliance(
        name="sphinx-chinese-search-latin-terms-as-a-set",
        package="sphinx", written_for="7.4.7",
        uses="sphinx.search.zh.SearchChinese's latin1_letters and latin_terms (subclassed)",
        why=("Sphinx's Chinese splitter keeps every Latin word it met in a list that its stem() scans once per "
             "distinct word of each page: a set instead (the index is byte for byte the same; a full Chinese build "
             "65 s of CPU with the list, 34 s with the set)."),
        probe=_source_has("sphinx.search.zh:SearchChinese", "latin1_letters", "latin_terms"),
        applied_by="bookbuild/sphinx_ext/editions.py chinese_search"),
    Reliance(
        name="bertviz-views-offline-compact-per-view",
        package="bertviz", written_for="1.4.1",
        uses="head_view.js and model_view.js, edited by exact text (ids scoped per view, parameters read from one "
             "JSON script, a viewBox, require.config apart, console.log calls dropped)",
        why=("Several views on one page (bertviz reuses element ids), weights written once and rounded, the "
             "site's own require.js/d3/jquery instead of CDNs, the model view fitted to the column. Applied in the "
             "reader's Jupyter by the package, which cannot import bookbuild/; it fails loudly on its own, naming "
             "BERTVIZ_WRITTEN_FOR."),
        probe=_bertviz_views, applied_by="transformer_lite/book/viz.py _bertviz_js"),
]

PATCHES: dict[str, Patch | Reliance] = {}
for _entry in _ENTRIES:
    if _entry.name in PATCHES:
        raise ValueError(f"two patches are named {_entry.name!r}")
    PATCHES[_entry.name] = _entry


# ---------------------------------------------------------------- CONTRIBUTING.md

MARKDOWN_START = "<!-- patches: generated by `python -m bookbuild.patches --markdown`; do not edit by hand -->"
MARKDOWN_END = "<!-- /patches -->"


def markdown() -> str:
    """The list CONTRIBUTING.md holds, between MARKDOWN_START and MARKDOWN_END."""
    lines = [MARKDOWN_START, "",
             "| patch | package (written for) | what | applied by |", "|---|---|---|---|"]
    for entry in PATCHES.values():
        package = entry.package[4:] + " (npm)" if entry.package.startswith("npm:") else entry.package
        what = (f"`{entry.file}`: exact text, {entry.count}×" if isinstance(entry, Patch) else entry.uses)
        what = what.replace("|", "\\|")
        upstream = f" Upstream: {entry.upstream}." if entry.upstream else ""
        lines.append(f"| `{entry.name}` | {package} {entry.written_for} | {what}. {entry.why.replace('|', '/')}"
                     f"{upstream} | `{entry.applied_by}` |")
    lines += ["", MARKDOWN_END]
    return "\n".join(lines)


def contributing_section(text: str) -> str:
    """The generated part of CONTRIBUTING.md (``text``), markers included."""
    start, end = text.find(MARKDOWN_START), text.find(MARKDOWN_END)
    if start < 0 or end < start:
        raise ValueError("CONTRIBUTING.md has no generated list of patches (python -m bookbuild.patches --markdown)")
    return text[start:end + len(MARKDOWN_END)]


if __name__ == "__main__":
    import sys

    if "--markdown" in sys.argv[1:]:
        print(markdown())
        sys.exit(0)
    problems = check_all()
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(PATCHES) - len(problems)} of {len(PATCHES)} patches apply to what is installed")
    sys.exit(1 if problems else 0)
