#!/usr/bin/env python3
"""Run chapters top to bottom in fresh kernels, the way a reader's Jupyter does, and report.

    python -m bookbuild.run_notebooks notebooks/04_multi_head_attention.ipynb [...]
        [--cwd DIR]            kernel's working folder (default: a new empty temporary folder per notebook)
        [--env NAME=VALUE]...  extra environment for the kernels (e.g. TRANSFORMER_LITE_SEED=2)
        [--timeout S]          seconds per cell (default 300)
        [--json FILE]          write the results as JSON
        [--save DIR]           write each executed notebook (with its outputs) into DIR
        [--static]             keep TRANSFORMER_LITE_STATIC from the environment (the book build)

Each notebook runs in a new kernel of the Python that runs this script (``sys.executable``),
with its working folder empty unless ``--cwd`` is given: a chapter must not read anything from
the repository checkout. Controls are live (``TRANSFORMER_LITE_STATIC`` is removed from the
environment), as in Jupyter or Colab, unless ``--static`` is given: the book build
(bookbuild/build_book.py) executes every chapter with this script, two at a time, with the build's
environment, and puts the executed notebooks into Jupyter Book's execution cache.
Exit status 1 if any notebook raised.

The tests use :func:`run_notebook` directly (the portability and JupyterLab tests).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def run_notebook(path, cwd=None, env: dict | None = None, timeout: int = 300, static: bool = False) -> dict:
    """Execute one notebook; return ``{"notebook", "seconds", "ok", "error", "outputs"}`` (error: cell,
    name, value; outputs: the executed notebook). ``static=True`` keeps ``TRANSFORMER_LITE_STATIC``."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    workdir = Path(cwd) if cwd is not None else Path(tempfile.mkdtemp(prefix="tl-run-"))
    kernel_env = dict(os.environ)
    if not static:
        kernel_env.pop("TRANSFORMER_LITE_STATIC", None)
    kernel_env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    kernel_env["TRANSFORMER_LITE_STRICT_EXERCISES"] = "1"  # a check that rejects its solution is an error
    kernel_env.update(env or {})
    client = NotebookClient(nb, timeout=timeout, kernel_name=_this_python_kernel(), allow_errors=False,
                            resources={"metadata": {"path": str(workdir)}})
    # No client-side widget models. nbclient mirrors ipywidgets' Output widget by sending comm messages on
    # the shell channel while it waits on that same channel for the cell's execute_reply; here that
    # sometimes lost the reply, and the run sat idle until the cell timeout (300 s, chapter 2 and 10 with
    # live controls). Without the mirror, what a control draws arrives as ordinary outputs of its cell,
    # errors included, which is all this runner reads.
    client.widget_registry = {}
    t0 = time.perf_counter()
    error = None
    try:
        client.execute(cwd=str(workdir), env=kernel_env)
    except CellExecutionError as e:
        error = _first_error(nb) or {"cell": None, "name": type(e).__name__, "value": str(e)[:2000]}
    except Exception as e:  # a dead kernel, a timeout
        error = {"cell": None, "name": type(e).__name__, "value": str(e)[:2000]}
    seconds = time.perf_counter() - t0
    return {"notebook": path.name, "seconds": round(seconds, 2), "ok": error is None, "error": error,
            "outputs": nb}


def _this_python_kernel() -> str:
    """A kernelspec for the interpreter running this script, whatever else the machine has registered."""
    root = Path(tempfile.gettempdir()) / f"tl-kernels-{os.getpid()}"
    spec = root / "kernels" / "tl-this-python"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (this interpreter)", "language": "python"}))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("JUPYTER_PATH")]))
    return "tl-this-python"


def _first_error(nb) -> dict | None:
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return {"cell": i, "name": out.get("ename"), "value": str(out.get("evalue"))[:2000],
                        "source": cell.source[:1500]}
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--cwd")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--json")
    ap.add_argument("--save", metavar="DIR")
    ap.add_argument("--static", action="store_true")
    args = ap.parse_args(argv)
    env = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--env takes NAME=VALUE, got {item!r}")
        env[name] = value
    results = []
    for nb in args.notebooks:
        r = run_notebook(nb, cwd=args.cwd, env=env, timeout=args.timeout, static=args.static)
        executed = r.pop("outputs")
        if args.save and r["ok"]:
            import nbformat

            Path(args.save).mkdir(parents=True, exist_ok=True)
            nbformat.write(executed, str(Path(args.save) / Path(nb).name))
        results.append(r)
        error = r["error"]
        status = "ok" if r["ok"] else f"FAILED in cell {error['cell']}: {error['name']}: {error['value'][:300]}"
        print(f"{r['notebook']:<40} {r['seconds']:7.1f} s  {status}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
