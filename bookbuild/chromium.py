"""Chromium for the browser tests and the benchmarks: the binary (Debian's package) and its flags, in one place."""
from __future__ import annotations

import os

# Debian's chromium-headless-shell: the same Chromium build as the package `chromium` (one source package, one version),
# without the browser's own user interface, as Playwright runs headless Chromium when it installs its own. The full
# browser in headless mode starts a renderer for its interface with every new context and keeps its main process
# busy: over the English pages of the site the shell used 99 CPU-seconds where `chromium` used 126 (page loads 26
# against 59), and the test phase of `make test` took 485 s instead of 636 on 2 cores, every test passing in both.
# The PDFs (bookbuild/build_pdf.py) and Lighthouse (bookbuild/lighthouse.py) keep the full browser.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium-headless-shell")
# --disable-background-networking & co.: on a closed network Chromium's own connections fail, many at a time;
# --disable-dev-shm-usage: JupyterLab's pages are large and /dev/shm in containers is small
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
