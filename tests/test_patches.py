"""bookbuild/patches.py: every change to a third-party package is in one list, and each fails loudly when it no longer
applies, naming itself and the installed version of its package.

Each registered entry is given a package that no longer matches it (its file replaced by text it does not hold,
its module emptied) and must fail with its own name and the installed version; and the code outside the registry
is searched for what a patch needs (the exact text of a third-party file, an attribute of an imported module or
class set), so a new patch written elsewhere fails here.
"""
from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import pytest

from bookbuild import patches

ROOT = Path(__file__).resolve().parent.parent

NO_LONGER = "/* a release of the package in which nothing we patch or copy is left */\n"


def test_every_entry_applies_to_what_is_installed():
    assert patches.check_all() == []


@pytest.fixture
def changed_packages(tmp_path, monkeypatch):
    """Every installed file an entry reads holds NO_LONGER, and every module it imports is empty."""
    gone = tmp_path / "installed"
    gone.mkdir()

    def installed_file(package, file):
        path = gone / package.replace(":", "-") / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(NO_LONGER, encoding="utf-8")
        return path

    monkeypatch.setattr(patches, "installed_file", installed_file)
    monkeypatch.setattr(patches.importlib, "import_module", lambda name: types.ModuleType(name))
    return installed_file


@pytest.mark.parametrize("name", list(patches.PATCHES))
def test_an_entry_that_no_longer_applies_fails_with_its_name_and_the_installed_version(name, changed_packages,
                                                                                        monkeypatch):
    entry = patches.PATCHES[name]
    if entry.package == "bertviz":  # applied by the package (transformer_lite/book/viz.py), from bertviz's files
        from transformer_lite.book import viz

        folder = changed_packages("bertviz", "bertviz/head_view.js").parent
        changed_packages("bertviz", "bertviz/model_view.js")
        monkeypatch.setattr(viz.resources, "files", lambda package: folder)
        viz._bertviz_js.cache_clear()
    with pytest.raises(patches.PatchError) as failed:
        patches.check(name)
    message = str(failed.value)
    assert f"patch {name!r}" in message
    assert f"{entry.package} {patches.installed_version(entry.package)} " in message
    assert f"written for {entry.written_for}" in message
    if entry.package == "bertviz":
        viz._bertviz_js.cache_clear()


@pytest.mark.parametrize("name", [n for n, e in patches.PATCHES.items() if isinstance(e, patches.Patch)])
def test_a_text_patch_applies_exactly_its_count(name):
    """apply() refuses text with ``before`` once too often or once too few, and else writes ``after``."""
    patch = patches.PATCHES[name]
    text = "a" + "\n".join([patch.before] * patch.count) + "z"
    assert patches.apply(text, name) == "a" + "\n".join([patch.after] * patch.count) + "z"
    for wrong in (patch.count - 1, patch.count + 1):
        with pytest.raises(patches.PatchError, match=f"patch {name!r}.*occurs {wrong} time"):
            patches.apply("\n".join([patch.before] * wrong), name)


def test_a_monkeypatch_is_made_once_and_refused_when_the_attribute_is_gone(monkeypatch):
    name = "myst-nb-image-alt-from-output-metadata"

    class Renderer:
        def render_image(self, data):
            return [data]

    module = types.ModuleType("myst_nb.core.render")
    module.NbElementRenderer = Renderer
    monkeypatch.setattr(patches.importlib, "import_module", lambda _: module)
    wrap = lambda f: (lambda self, data: f(self, data) + ["alt"])  # noqa: E731
    patches.monkeypatch(name, Renderer, "render_image", wrap)
    patches.monkeypatch(name, Renderer, "render_image", wrap)  # wrapped once
    assert Renderer().render_image("x") == ["x", "alt"]
    del Renderer.render_image
    with pytest.raises(patches.PatchError, match=f"patch {name!r}.*myst-nb"):
        patches.monkeypatch(name, Renderer, "render_image", wrap)


# ---------------------------------------------------------------- nothing patched outside the registry

def _third_party_texts() -> list[tuple[str, str]]:
    """(name, text) of the third-party files the build edits, copies or reads exactly."""
    import pydata_sphinx_theme
    import sphinx_book_theme

    files = [patches.installed_file(e.package, e.file) for e in patches.PATCHES.values()
             if isinstance(e, patches.Patch)]
    for package in (pydata_sphinx_theme, sphinx_book_theme):
        theme = Path(package.__file__).parent / "theme"
        files += [p for p in theme.rglob("*") if p.suffix in (".html", ".js", ".css") and p.is_file()]
    try:
        from importlib import resources

        files += [Path(str(resources.files("bertviz") / n)) for n in ("head_view.js", "model_view.js")]
    except ModuleNotFoundError:
        pass
    return [(str(f), f.read_text(encoding="utf-8", errors="replace")) for f in sorted(set(files)) if f.is_file()]


# our code: the build's modules but the registry, and the package's book helpers but viz.py (bertviz's patches,
# applied in the reader's Jupyter: listed in the registry, which runs them)
OUR_CODE = sorted({*ROOT.glob("bookbuild/*.py"), *ROOT.glob("bookbuild/sphinx_ext/*.py"),
                   *ROOT.glob("transformer_lite/book/*.py")}
                  - {ROOT / "bookbuild" / "patches.py", ROOT / "transformer_lite" / "book" / "viz.py"})
MIN_CHARS = 20  # shorter strings ("defer", a class name) are the vocabulary of any HTML, not a piece of a file


def third_party_text_in(source: str, texts: list[tuple[str, str]]) -> list[str]:
    """The string constants of ``source`` (at least MIN_CHARS long) that occur verbatim in one of ``texts``: what a
    patch by exact text needs, written outside the registry."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value.strip()) >= MIN_CHARS \
                and not re.fullmatch(r"[\w./-]+", node.value):  # a file's name is not a piece of its text
            where = next((name for name, text in texts if node.value in text), None)
            if where:
                found.append(f"line {node.lineno}: {node.value[:60]!r} (in {where})")
    return found


OURS = "transformer_lite"


def attributes_set_on_imports(source: str) -> list[str]:
    """Assignments (``X.attr = ...``, ``setattr(X, ...)``) to a module or class the code imported from a third party:
    monkeypatches, which bookbuild/patches.py's monkeypatch() makes for a registered entry. The book's own package is
    not third-party code (bookbuild/web_export.py swaps one of its checks while it captures the explainer's graphs)."""
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] != OURS}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] != OURS:
            imported |= {a.asname or a.name for a in node.names}

    def base(expr):
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        return expr.id if isinstance(expr, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for t in targets:
            if isinstance(t, ast.Attribute) and base(t) in imported:
                found.append(f"line {node.lineno}: {ast.unparse(t)} = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args \
                and base(node.args[0]) in imported:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_outside_the_registry_holds_third_party_text():
    texts = _third_party_texts()
    assert len(texts) > 10
    problems = {str(p.relative_to(ROOT)): third_party_text_in(p.read_text(encoding="utf-8"), texts) for p in OUR_CODE}
    assert not {k: v for k, v in problems.items() if v}, "exact third-party text outside bookbuild/patches.py"


def test_no_code_outside_the_registry_sets_an_attribute_of_an_imported_module():
    problems = {str(p.relative_to(ROOT)): attributes_set_on_imports(p.read_text(encoding="utf-8")) for p in OUR_CODE}
    assert not {k: v for k, v in problems.items() if v}, "a monkeypatch outside bookbuild/patches.py"


def test_the_checks_find_what_the_build_used_to_patch_outside_the_registry():
    """The two checks above find the patches as they were written before the registry: the theme's tab-stop loop by
    exact text, and myst-nb's render_image replaced by assignment."""
    texts = _third_party_texts()
    before = ('TAB_STOPS = \'.forEach(e=>{e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight'
              '?0:-1})\'\nscript = script.replace(TAB_STOPS, "")\n')
    assert third_party_text_in(before, texts) and "pydata-sphinx-theme.js" in third_party_text_in(before, texts)[0]
    assert attributes_set_on_imports("from myst_nb.core.render import NbElementRenderer\n"
                                     "NbElementRenderer.render_image = lambda self, data: []\n")
    assert attributes_set_on_imports("import myst_nb\nsetattr(myst_nb.core, 'x', 1)\n")
    assert not attributes_set_on_imports("def f(app):\n    app.config.x = 1\n")
    assert not attributes_set_on_imports("from transformer_lite import masks\nmasks.check = None\n")
    assert attributes_set_on_imports("from torch import nn\nnn.Linear = None\n")


# ---------------------------------------------------------------- CONTRIBUTING.md

def test_contributing_lists_the_registry_as_generated():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert patches.contributing_section(text) == patches.markdown(), \
        "CONTRIBUTING.md's list of patches is not the registry's: python -m bookbuild.patches --markdown"
    assert all(f"`{name}`" in text for name in patches.PATCHES)
