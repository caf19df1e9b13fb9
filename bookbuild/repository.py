#!/usr/bin/env python3
"""Where the book is published: one address, chosen by whoever publishes it.

The repository (``owner/name`` on GitHub) is the first of:

1. ``BOOK_REPOSITORY`` (``owner/name`` or ``https://github.com/owner/name``): build a fork, or a test site,
   without editing a file;
2. ``GITHUB_REPOSITORY``: GitHub Actions sets it to the repository the workflow runs in, so a fork's workflow
   builds a site whose every link (Colab, Binder, repository, issues, sitemap, OpenGraph, the PDF cover) points
   at the fork;
3. ``_config.yml``'s ``repository.url``: the one place the book's own address is written.

The site's address is ``BOOK_SITE_URL`` when set (the workflow takes it from GitHub Pages' own answer, which
knows custom domains), else ``html.baseurl`` when the repository is the configured one, else GitHub Pages'
address for the repository (``https://owner.github.io/name/``).

A few committed files are read as they are by GitHub, PyPI and Colab's readers, never by the build: README.md
(also the PyPI page), CITATION.cff, pyproject.toml's project URLs and CHANGELOG.md's links. They must hold the address
literally, so ``set`` writes the new one into them and into ``_config.yml``, and ``check`` fails when one names
another.

The chapters link to a step of the explainer's page with its published address (``<site>book/explainer.html?s=...``,
and ``<site>zh/book/explainer.html?...`` in the Chinese notebooks): a relative link would not reach the page from
Jupyter or Colab. Those links, and no other form of the address, are in EXPLAINER_LINK_FILES (the notebooks, the
Chinese notebooks and the prose catalogs that translate them); ``set`` moves them too, and ``check`` fails when one
names another site or when the address shows there in another form, which ``set`` would not move. The built site
makes them relative, and writes the build's own address into its copies of the notebooks
(bookbuild/sphinx_ext/tl_explainer.py)::

    python -m bookbuild.repository                          # the address in force, and where it comes from
    python -m bookbuild.repository set OWNER/NAME [--site URL]
    python -m bookbuild.repository check
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "_config.yml"
# committed files that hold the address for readers who never run the build (see the module's docstring)
LITERAL_FILES = ("_config.yml", "README.md", "CITATION.cff", "pyproject.toml", "CHANGELOG.md")
# committed files that hold the site's address in one form only, a chapter's link to the explainer's page (Jupyter and
# Colab open the notebooks where they are, so the link cannot be relative): patterns, relative to the root
EXPLAINER_LINK_FILES = ("notebooks/*.ipynb", "notebooks/zh/*.ipynb", "locales/zh_CN/LC_MESSAGES/notebooks/*.po")
# the page a chapter links to, in either edition, after the site's address
EXPLAINER_PAGE = r"(?:zh/)?book/explainer\.html"

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_SLUG = re.compile(rf"^(?:https?://github\.com/)?(?P<owner>{_OWNER})/(?P<name>{_NAME}?)(?:\.git)?/?$")


@dataclass(frozen=True)
class Address:
    """A published book: its GitHub repository and its site."""

    owner: str
    name: str
    site: str     # ends in "/"
    source: str   # where the repository came from: BOOK_REPOSITORY, GITHUB_REPOSITORY or _config.yml

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.slug}"


def parse_slug(value: str, what: str = "repository") -> tuple[str, str]:
    """``owner/name`` from ``owner/name`` or a GitHub URL; ValueError naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string like 'owner/name', got {type(value).__name__}")
    m = _SLUG.match(value.strip())
    if not m:
        raise ValueError(f"{what} must be 'owner/name' or 'https://github.com/owner/name', got {value!r}")
    return m["owner"], m["name"]


def pages_site(owner: str, name: str) -> str:
    """GitHub Pages' address of a repository: a user's or organisation's own site is the root of its domain."""
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"


def _site(value: str, what: str) -> str:
    value = value.strip()
    if not re.match(r"^https?://[^\s/\"'<>]+(/[^\s\"'<>]*)?$", value):
        raise ValueError(f"{what} must be an http(s) address like 'https://owner.github.io/name/', got {value!r}")
    return value.rstrip("/") + "/"


def _config(root: Path) -> dict:
    import yaml

    return yaml.safe_load((Path(root) / CONFIG).read_text(encoding="utf-8")) or {}


def configured(root: Path = ROOT) -> Address:
    """The address _config.yml gives: ``repository.url`` and ``html.baseurl``."""
    config = _config(root)
    url = (config.get("repository") or {}).get("url")
    owner, name = parse_slug(url or "", f"{CONFIG}'s repository.url")
    base = (config.get("html") or {}).get("baseurl")
    site = _site(base, f"{CONFIG}'s html.baseurl") if base else pages_site(owner, name)
    return Address(owner, name, site, CONFIG)


def address(env=None, root: Path = ROOT) -> Address:
    """The address in force: the environment's (BOOK_REPOSITORY, GITHUB_REPOSITORY, BOOK_SITE_URL), else
    _config.yml's."""
    env = os.environ if env is None else env
    default = configured(root)
    for var in ("BOOK_REPOSITORY", "GITHUB_REPOSITORY"):
        if env.get(var, "").strip():
            owner, name = parse_slug(env[var], var)
            break
    else:
        owner, name, var = default.owner, default.name, CONFIG
    if env.get("BOOK_SITE_URL", "").strip():
        site = _site(env["BOOK_SITE_URL"], "BOOK_SITE_URL")
    elif (owner, name) == (default.owner, default.name):
        site = default.site
    else:
        site = pages_site(owner, name)
    return Address(owner, name, site, var)


def rewrite(text: str, old: Address, new: Address) -> str:
    """``text`` with every mention of ``old`` (its site, its ``owner/name`` after a ``/``) made ``new``."""
    text = text.replace(old.site, new.site).replace(old.site.rstrip("/"), new.site.rstrip("/"))
    return re.sub(rf"(?<=/){re.escape(old.slug)}(?=[/\"')\s#.]|$)", new.slug, text, flags=re.M)


def rewrite_explainer_links(text: str, old: Address, new: Address) -> str:
    """``text`` with every link to ``old``'s explainer page (either edition's) on ``new``'s site; nothing else."""
    return re.sub(rf"{re.escape(old.site)}(?={EXPLAINER_PAGE})", lambda _: new.site, text)


def explainer_link_files(root: Path = ROOT) -> list[Path]:
    """The files of EXPLAINER_LINK_FILES, sorted."""
    return sorted(p for pattern in EXPLAINER_LINK_FILES for p in Path(root).glob(pattern) if p.is_file())


def set_address(new: Address, root: Path = ROOT) -> list[Path]:
    """Write ``new`` into every file of LITERAL_FILES that names the configured address, and into the explainer's
    links of EXPLAINER_LINK_FILES; the files changed."""
    root = Path(root)
    old = configured(root)
    changed = []
    edits = [(root / rel, rewrite) for rel in LITERAL_FILES]
    edits += [(path, rewrite_explainer_links) for path in explainer_link_files(root)]
    for path, edit in edits:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        new_text = edit(text, old, new)
        if new_text != text:
            path.write_text(new_text, encoding="utf-8")
            changed.append(path)
    return changed


_GITHUB_REPO = re.compile(rf"github\.com/(?P<slug>{_OWNER}/{_NAME})")
_GITHUB_IO = re.compile(r"https?://[A-Za-z0-9-]+\.github\.io/[^\s\"'<>)]*")


def stray_addresses(text: str, addr: Address) -> list[str]:
    """Addresses in ``text`` that look like the book's own (its owner's repositories and Pages sites) but are not
    ``addr``: what ``check`` reports."""
    found = []
    for m in _GITHUB_REPO.finditer(text):
        owner, name = m["slug"].split("/")
        name = re.sub(r"\.git$", "", name.rstrip("."))
        if owner.lower() == addr.owner.lower() and name != addr.name:
            found.append(m.group(0))
    own = f"https://{addr.owner.lower()}.github.io/"
    for m in _GITHUB_IO.finditer(text):
        if m.group(0).startswith(own) and not m.group(0).startswith(addr.site.rstrip("/")):
            found.append(m.group(0))
    return found


# a link to an explainer page of any site: its site (ending in "/") and the page
_EXPLAINER_LINK = re.compile(r"(?P<site>https?://[^\s\"'<>()\[\]?#\\/]+/(?:[^\s\"'<>()\[\]?#\\]*?/)??)"
                             rf"(?P<page>{EXPLAINER_PAGE})")


def explainer_link_problems(text: str, addr: Address) -> list[str]:
    """What is wrong with a file of EXPLAINER_LINK_FILES: an explainer link to another site than ``addr``'s, or
    ``addr`` named in another form (which ``set`` would not move)."""
    problems = [f"links the explainer at {m['site']}, not {addr.site}"
                for m in _EXPLAINER_LINK.finditer(text) if m["site"] != addr.site]
    rest = _EXPLAINER_LINK.sub("", text)
    site = addr.site.split("://", 1)[1].rstrip("/")
    problems += [f"names {found} outside a link to the explainer, where `set` would not move it"
                 for found in sorted(set(re.findall(rf"{re.escape(addr.slug)}|{re.escape(site)}", rest)))]
    return problems


def check(root: Path = ROOT) -> list[str]:
    """Problems: a file of LITERAL_FILES that names another address than _config.yml's, or a file of
    EXPLAINER_LINK_FILES whose explainer links do (or that names the address otherwise)."""
    addr = configured(root)
    problems = []
    for rel in LITERAL_FILES:
        path = Path(root) / rel
        if path.exists():
            for stray in stray_addresses(path.read_text(encoding="utf-8"), addr):
                problems.append(f"{rel} names {stray}, not {addr.url} / {addr.site}")
    for path in explainer_link_files(root):
        for problem in explainer_link_problems(path.read_text(encoding="utf-8"), addr):
            problems.append(f"{path.relative_to(root)} {problem}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command")
    s = sub.add_parser("set", help="write a new address into _config.yml, the files readers see as committed and "
                                   "the chapters' links to the explainer")
    s.add_argument("repository", help="owner/name or https://github.com/owner/name")
    s.add_argument("--site", help="the site's address (default: GitHub Pages' for the repository)")
    sub.add_parser("check", help="fail if a committed file names another address than _config.yml's")
    ap.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    root = Path(args.root)
    if args.command == "set":
        owner, name = parse_slug(args.repository)
        site = _site(args.site, "--site") if args.site else pages_site(owner, name)
        changed = set_address(Address(owner, name, site, "set"), root)
        for path in changed:
            print(f"{path.relative_to(root)}: now {owner}/{name}, {site}")
        return 0
    if args.command == "check":
        problems = check(root)
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    a = address(root=root)
    print(f"{a.url}  {a.site}  (from {a.source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
