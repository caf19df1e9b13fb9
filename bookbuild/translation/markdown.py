"""MyST's markdown parser as Sphinx reads the notebooks, and a cell's source as Jupyter stores it."""
from __future__ import annotations

from .paths import ROOT


def markdown_parser():
    """MyST's own markdown-it parser with the book's extensions: the same blocks Sphinx made messages of."""
    import yaml
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set(config["parse"]["myst_enable_extensions"])
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


def cell_lines(text: str) -> list[str]:
    """A cell's source as Jupyter stores it: a list of lines, each but the last ending in a line break."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
