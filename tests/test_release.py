"""What `make release` writes into dist/, checked as a reader would use it (`make release` runs this file last).

- the five kinds of files, named with pyproject.toml's version;
- the site zip, unzipped into an empty folder, passes the file:// pass of tests/test_site.py (every page opened from
  disk in Chromium: no error, nothing loaded from another host, every control alive);
- the wheel, installed with its ``book`` extra into an empty venv (nothing else but the torch the lock pins, given
  as a constraint so pip does not fetch a CUDA build), translates a sentence with each shipped model;
- the notebooks zip holds every chapter of both editions.

Skipped when there is no dist/ (a plain `make test` builds none).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
NAME = "transformer-step-by-step"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("release")]


@pytest.fixture(scope="module")
def dist() -> Path:
    if not DIST.is_dir():
        pytest.skip("no dist/ (make release)")
    return DIST


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, f"dist/ should hold one {pattern}, holds {[p.name for p in found]}"
    return found[0]


def test_dist_holds_the_five_artifacts_of_this_version(dist):
    names = sorted(p.name for p in dist.iterdir() if p.is_file())
    dist_name = NAME.replace("-", "_")  # the wheel's and the sdist's file names normalise it (PEP 625, PEP 427)
    wanted = [f"{NAME}-{VERSION}-notebooks.zip", f"{NAME}-{VERSION}-site.zip", f"{NAME}-{VERSION}.en.pdf",
              f"{NAME}-{VERSION}.zh.pdf", f"{dist_name}-{VERSION}.tar.gz", f"{dist_name}-{VERSION}-py3-none-any.whl"]
    assert names == sorted(wanted), names
    for pdf in dist.glob("*.pdf"):
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1_000_000, pdf.name


def test_the_notebooks_zip_holds_every_chapter_of_both_editions(dist):
    with zipfile.ZipFile(_one(dist, "*-notebooks.zip")) as z:
        names = {Path(n).relative_to(f"{NAME}-{VERSION}-notebooks").as_posix() for n in z.namelist()}
        english = {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
        chinese = {f"notebooks/zh/{p.name}" for p in (ROOT / "notebooks" / "zh").glob("*.ipynb")}
        assert len(english) >= 19 and names == english | chinese
        for n in z.namelist():  # as committed: the reader runs them
            cells = json.loads(z.read(n))["cells"]
            assert not any(c.get("outputs") for c in cells if c["cell_type"] == "code"), n


def test_the_site_zip_opens_from_disk(dist, tmp_path):
    """Unzipped into an empty folder, every page of both editions passes the file:// pass of the site test."""
    with zipfile.ZipFile(_one(dist, "*-site.zip")) as z:
        z.extractall(tmp_path)
    site = tmp_path / f"{NAME}-{VERSION}-site"
    assert (site / "index.html").is_file() and (site / "zh" / "index.html").is_file()
    assert (site / "pdf" / f"{NAME}.en.pdf").is_file() and (site / "zh" / "pdf" / f"{NAME}.zh.pdf").is_file()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(ROOT / "tests" / "test_site.py"), "-k", "file"],
                          cwd=ROOT, env={**os.environ, "SITE_HTML": str(site), "SITE_FILE_PAGES": "all", "CI": "true"},
                          capture_output=True, text=True, timeout=3600)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and " failed" not in proc.stdout, tail


def _torch_pin() -> str:
    for line in (ROOT / "requirements.in").read_text(encoding="utf-8").splitlines():
        if line.startswith("torch=="):
            return line.split("#", 1)[0].strip()
    raise AssertionError("requirements.in pins no torch")


TRANSLATE = """
import json
from transformer_lite.book.translate import shipped_examples, shipped_translator, translation_details
out = {}
for key in ("grammar", "real"):
    model, data = shipped_translator(key)
    text = shipped_examples(key, data)[0]
    out[key] = [text, translation_details(model, data, text)["greedy_text"]]
print(json.dumps(out, ensure_ascii=False))
"""


def test_the_wheel_translates_with_each_shipped_model_in_an_empty_venv(dist, tmp_path):
    wheel = _one(dist, "*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    constraint = tmp_path / "torch.txt"
    constraint.write_text(_torch_pin() + "\n", encoding="utf-8")
    links = os.environ.get("TORCH_INDEX_URL")
    cmd = [py, "-m", "pip", "install", "--quiet", f"{wheel}[book]", "-c", constraint]
    cmd += ["--find-links", f"{links}/torch/"] if links else []
    subprocess.run(list(map(str, cmd)), check=True, timeout=1800)
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([str(py), "-c", TRANSLATE], cwd=tmp_path / "empty", capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for key, (english, chinese) in out.items():
        assert english and chinese and any("\u4e00" <= ch <= "\u9fff" for ch in chinese), (key, english, chinese)
    print(out)
