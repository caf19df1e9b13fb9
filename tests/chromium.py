"""Debian's Chromium for the browser tests: what happens without it (the binary and its flags are
bookbuild/chromium.py's, which the benchmarks share).

``conftest.py`` starts ONE browser per test process from these (Playwright's sync API allows one instance per
process); tests/test_site.py, tests/test_translator_web.py and tests/test_jupyterlab.py use that fixture.
"""
from __future__ import annotations

import os

import pytest

from bookbuild.chromium import ARGS, CHROMIUM  # the binary and its flags, shared with the benchmarks

__all__ = ["ARGS", "CHROMIUM", "IN_CI", "need"]
IN_CI = os.environ.get("CI", "").lower() == "true"


def need(condition: bool, why: str):
    """Skip when ``condition`` is false, except under CI=true, where the browser tests must run: fail there."""
    if not condition:
        if IN_CI:
            pytest.fail(f"{why} (CI=true: the browser tests must run)")
        pytest.skip(why)
