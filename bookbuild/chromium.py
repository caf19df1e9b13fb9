"""Chromium for the browser tests and the benchmarks: the binary (Debian's package) and its flags, in one place."""
from __future__ import annotations

import os

# Debian's chromium-headless-shell: the same Chromium build as the package `chromium` (one source package, one version),
# without the browser's own user interface, as Playwright runs headless Chromium when it installs its own. The full
# browser in headless mode starts a renderer for its interface with every new context and keeps its main process
# busy. Measured over the English pages as tests/test_site.py opens them, each browser right after the other: the
# page loads took 35 CPU-seconds in the shell against 68 in `chromium`, the whole pass 116 against 139 (an hour
# earlier, 99 against 126); axe's share is the same in both. The test phase of `make test` took 485 s after 636 s
# in the run before it, every test passing in both (this machine's speed drifts by as much as a third within an hour,
# so the pass's CPU-seconds are the firmer figure). The PDFs (bookbuild/build_pdf.py) and Lighthouse
# (bookbuild/lighthouse.py) keep the full browser.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium-headless-shell")
# --disable-background-networking & co.: on a closed network Chromium's own connections fail, many at a time;
# --disable-dev-shm-usage: JupyterLab's pages are large and /dev/shm in containers is small
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
