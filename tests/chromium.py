"""Debian's Chromium for the browser tests, in one place: the binary, its flags, and what happens without it.

``conftest.py`` starts ONE browser per test process from these (Playwright's sync API allows one instance per
process); tests/test_site.py, tests/test_translator_web.py and tests/test_jupyterlab.py use that fixture.
"""
from __future__ import annotations

import os

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# --disable-background-networking & co.: on a closed network Chromium's own connections fail, many at a time;
# --disable-dev-shm-usage: JupyterLab's pages are large and /dev/shm in containers is small
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
IN_CI = os.environ.get("CI", "").lower() == "true"


def need(condition: bool, why: str):
    """Skip when ``condition`` is false, except under CI=true, where the browser tests must run: fail there."""
    if not condition:
        if IN_CI:
            pytest.fail(f"{why} (CI=true: the browser tests must run)")
        pytest.skip(why)
