"""The book's logo and favicon, and the test-only JavaScript (no browser, no build).

book/make_logo.py draws both from one geometry; _config.yml points the theme at them. axe-core
(tests/test_site.py's accessibility check) is a devDependency that the build never copies to the site.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"


def _make_logo():
    spec = importlib.util.spec_from_file_location("make_logo", BOOK / "make_logo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_points_at_the_logo_and_the_favicon():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["logo"] == "book/logo.svg"
    assert config["html"]["favicon"] == "book/favicon.ico"
    assert (ROOT / config["logo"]).is_file() and (ROOT / config["html"]["favicon"]).is_file()


def test_logo_is_what_make_logo_draws():
    assert (BOOK / "logo.svg").read_text(encoding="utf-8") == _make_logo().svg(), \
        "book/logo.svg is stale: run `python book/make_logo.py`"


def test_logo_is_a_causal_attention_map():
    ml = _make_logo()
    for q, row in enumerate(ml.WEIGHTS):  # row q attends to keys 0..q and its weights sum to 1
        assert len(row) == q + 1 and sum(row) == pytest.approx(1.0)
    cells = ml.cells()
    assert len(cells) == len(ml.WEIGHTS) ** 2
    assert all(0 <= x and x + ml.CELL <= ml.SIZE and 0 <= y and y + ml.CELL <= ml.SIZE for x, y, _ in cells)
    n = len(ml.WEIGHTS)
    masked = [o for i, (_, _, o) in enumerate(cells) if i % n > i // n]
    kept = [o for i, (_, _, o) in enumerate(cells) if i % n <= i // n]
    assert max(masked) < min(kept)  # the future is fainter than any attended key


def test_favicon_holds_the_usual_sizes():
    from PIL import Image

    with Image.open(BOOK / "favicon.ico") as im:
        assert im.format == "ICO"
        assert {(16, 16), (32, 32), (48, 48)} <= set(im.info["sizes"])
        im.size = (32, 32)
        im.load()
        rgba = im.convert("RGBA")
        assert rgba.getpixel((16, 1))[3] == 255 and rgba.getpixel((0, 0))[3] < 128  # a badge with round corners
    # drawn from the same geometry as the logo: the same badge colour in the middle of the top edge
    assert rgba.getpixel((16, 1))[:3] == pytest.approx(_make_logo().BADGE, abs=8)


def test_axe_core_is_for_the_tests_only():
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert "axe-core" in package.get("devDependencies", {})
    assert "axe-core" not in package.get("dependencies", {})
    from bookbuild import build_book

    assert not [src for src, _ in build_book.COPIES if src.startswith("axe-core")], "axe-core must not reach the site"
