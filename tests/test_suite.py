"""The test suite's own machinery: what `make test` relies on to run each piece of work once."""
from __future__ import annotations

import subprocess
import sys

TEST = '''
import os, pathlib, pytest
pytestmark = pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    pathlib.Path(os.environ["OUT"], f"{i}.txt").write_text(os.environ.get("PYTEST_XDIST_WORKER", "none"))
'''


def test_xdist_keeps_a_group_on_one_worker(tmp_path):
    """`make test` runs `pytest -n 3 --dist loadgroup`: the tests that share the served site, the JupyterLab
    server or the Colab-like venv must stay on one worker, or each worker builds its own (twice the work).
    pytest 9.2 + pytest-xdist 3.8.0 drop the groups without a word; this fails instead."""
    (tmp_path / "test_g.py").write_text(TEST)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                           "loadgroup", "test_g.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**__import__("os").environ, "OUT": str(out)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    workers = {f.read_text() for f in out.glob("*.txt")}
    assert len(list(out.glob("*.txt"))) == 6 and len(workers) == 1, workers
