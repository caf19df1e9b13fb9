"""Chromium for the browser tests and the benchmarks: the binary (Debian's package) and its flags, in one place."""
from __future__ import annotations

import os

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# --disable-background-networking & co.: on a closed network Chromium's own connections fail, many at a time;
# --disable-dev-shm-usage: JupyterLab's pages are large and /dev/shm in containers is small
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
