import functools
import http.server
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

# Each test process computes on one thread, as the book build's kernels do (runtime.num_threads(1)): make test runs
# three workers on two cores and make check two, so a worker's second thread only waits for a core that another
# worker holds. Measured with make check's command, one run after the other: 308 and 325 CPU-seconds on one thread
# against 318 and 358 on two, the same tests passing. A test about threads sets them itself (runtime.num_threads); the
# kernels and subprocesses the tests start choose their own (tests/test_portability.py runs 1 and 2).
torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`: -n 3 --dist loadgroup) the browser tests of the file:// pass form a
    group of their own, so the two passes over the site (tests/test_site.py: the English pages over http, the Chinese
    ones from disk) run on two workers at once.
    (Runs before xdist's own hook, which turns the xdist_group marks into the groups.)"""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "file" in (params.get("report"), params.get("scheme")):
            item.add_marker(pytest.mark.xdist_group("file"))
    # xdist hands out its work units (a group's tests, or one test) in collection order (`make test` passes
    # --no-loadscope-reorder): the longest groups go first, so that none of them starts late and runs alone at the end
    # while a core idles (the portability run, collected near the end, did: six minutes at one busy core). The order
    # also pairs them: a worker whose first unit has at most 2 tests is handed the next unit at once, so the Colab
    # install waits behind the portability run, and the file:// pass's worker takes JupyterLab when it is done.
    items[:] = sorted(items, key=lambda item: LONG_FIRST.index(_group(item)) if _group(item) in LONG_FIRST
                      else len(LONG_FIRST))


# the groups, longest first (measured in make test: 300-380 s, 300-370, 200-380, 125, 240 s of their workers)
LONG_FIRST = ("site", "file_site", "portability", "colab", "jupyterlab")


def _group(item) -> str:
    """The xdist group a test is sent with: its xdist_group marks' names, sorted and joined by "_", as xdist names it
    (so the file:// pass of tests/test_site.py, marked "site" and "file", is "file_site")."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


# -- the built site and one Chromium, shared by tests/test_site.py, test_translator_web.py and test_jupyterlab.py
# (here, not in a test module: Playwright's sync API allows one instance per process, and a fixture imported
# into a second module would be a second session fixture)

@pytest.fixture(scope="session")
def built() -> Path:
    from test_site import HTML, ROOT

    if not (HTML / "index.html").exists():
        subprocess.run([sys.executable, "-m", "bookbuild.build_book"], cwd=ROOT, check=True)
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site(built):
    """The site served on 127.0.0.1, on a free port: its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    """The one Chromium of this test process (tests/chromium.py), for the site, the translator and JupyterLab."""
    from chromium import ARGS, CHROMIUM, need

    need(Path(CHROMIUM).exists(), f"Chromium not found at {CHROMIUM} (apt-get install chromium-headless-shell)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need(False, "playwright is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


