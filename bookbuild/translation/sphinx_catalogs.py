"""The prose catalogs: the English book's messages extracted by Sphinx's gettext builder, merged by sphinx-intl."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from .code_cells import code_update
from .paths import LANGUAGE, LOCALES, POT, ROOT

PATHS = ("bibtex_bibfiles", "html_extra_path", "html_favicon", "html_logo", "html_static_path")


def sphinx_conf(dest: Path, **overrides) -> Path:
    """Write the book's Sphinx configuration (Jupyter Book's, from _config.yml and _toc.yml) as dest/conf.py.

    Its relative paths are made absolute (Sphinx reads them relative to the folder of conf.py);
    ``overrides`` replace or add settings (``html_theme_options`` is merged).
    """
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(user_yaml=ROOT / "_config.yml", sourcedir=ROOT,
                                 cli_config={"latex_individualpages": False})
    config["external_toc_path"] = str(ROOT / "_toc.yml")
    for key in PATHS:
        if isinstance(config.get(key), str):
            config[key] = str(ROOT / config[key])
        elif isinstance(config.get(key), list):
            config[key] = [str(ROOT / v) for v in config[key]]
    theme = dict(config.get("html_theme_options") or {}, **overrides.pop("html_theme_options", {}))
    config.update(overrides, html_theme_options=theme)
    dest.mkdir(parents=True, exist_ok=True)
    # the book's own extensions are the package bookbuild at the root: appended, as Jupyter Book appends a
    # local_extensions path, so that the installed transformer_lite still comes first
    lines = ["import sys", f"sys.path.append({str(ROOT)!r})"]
    lines += [f"{key} = {config[key]!r}" for key in sorted(config)]
    (dest / "conf.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def extract(out: Path = POT) -> Path:
    """The English book's messages, one .pot per page, into ``out`` (emptied first: a renamed page's old .pot
    would otherwise make ``update`` create its catalog again)."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="tl-i18n-") as tmp:
        conf = sphinx_conf(Path(tmp) / "conf")
        cmd = [str(Path(sys.executable).parent / "sphinx-build"), "-b", "gettext", "-q", "-c", str(conf),
               "-D", "nb_execution_mode=off", "-D", "gettext_compact=0", "-D", "gettext_location=0",
               "-D", "gettext_uuid=0", "-d", str(Path(tmp) / "doctrees"), str(ROOT), str(out)]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"sphinx-build -b gettext failed:\n{proc.stderr[-3000:]}")
    add_theme_messages(out)
    return out


# The words the theme and Sphinx show on every page that the gettext builder does not extract (it reads the
# templates' _() calls, not Python code or a {% trans %} block with variables), per catalog domain: "sphinx" (Sphinx
# and pydata-sphinx-theme: the footer, the "#" beside a heading) and "booktheme" (sphinx-book-theme's header buttons,
# bookbuild/sphinx_ext/editions.py theme_catalog). extract adds them to the .pot files, so that `update` keeps their
# translations and `check` requires them.
THEME_MESSAGES = {
    "sphinx": ("© Copyright %(copyright)s.", "Copyright %(copyright)s", "Link to this heading",
               "Link to this equation", "Link to this definition", "Link to this term", "Link to this table",
               "Link to this code", "Link to this image", "Link to this toctree"),
    "booktheme": ("Repository", "Open issue", "Source repositories", "Launch interactive content",
                  "Launch on Colab", "Launch on Binder"),
}


def add_theme_messages(pot_dir: Path) -> None:
    import polib

    for domain, msgids in THEME_MESSAGES.items():
        path = pot_dir / f"{domain}.pot"
        pot = polib.pofile(str(path), wrapwidth=0) if path.exists() else polib.POFile(wrapwidth=0)
        if not path.exists():
            pot.metadata = {"Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "8bit"}
        known = {e.msgid for e in pot}
        for msgid in msgids:
            if msgid not in known:
                pot.append(polib.POEntry(msgid=msgid, msgstr=""))
        pot.save(str(path))


def pages(pot_dir: Path = POT) -> dict[str, Path]:
    """{page: .pot} for the extracted messages, e.g. "notebooks/05_add_norm_ffn" -> .../05_add_norm_ffn.pot."""
    return {str(p.relative_to(pot_dir).with_suffix("")): p for p in sorted(pot_dir.rglob("*.pot"))}


def update(pot_dir: Path = POT) -> None:
    """sphinx-intl update: new messages appear untranslated, changed ones fuzzy, vanished ones obsolete; then the
    code catalogs (code_update)."""
    subprocess.run([str(Path(sys.executable).parent / "sphinx-intl"), "update", "-p", str(pot_dir), "-l", LANGUAGE,
                    "-d", str(LOCALES), "-w", "0"], check=True, cwd=ROOT)
    code_update()
