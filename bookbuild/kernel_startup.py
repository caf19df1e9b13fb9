"""Run at start-up by every notebook kernel of the book build (IPYTHONDIR set by bookbuild/build_book.py).

A static page has no kernel, so an ipywidgets progress bar (what ``tqdm.auto`` draws in Jupyter) would be
a dead widget there, and it would make the page load the widget manager from a CDN. In the build, every
tqdm is therefore the plain one, disabled; readers running the notebook see the usual live bar.

Why not tqdm's own switch, ``TQDM_DISABLE=1``? tqdm reads it as the *default* of ``disable``, and an
explicit argument wins. In a kernel ``tqdm.auto`` is ``tqdm.notebook.tqdm``, whose ``__init__`` passes
``disable=bool(kwargs.get("disable", False))`` to tqdm's, so the variable never takes effect there (nor
for a caller's own ``disable=False``, e.g. ``train(..., progress=True)``); the widget is drawn anyway.
tests/test_build_book.py checks both: that ``TQDM_DISABLE`` alone still leaves a widget (when that test
fails, tqdm honours it and this file can go) and that this file leaves no progress output at all.
"""


def _transformer_lite_static_tqdm():
    import tqdm.auto
    import tqdm.autonotebook
    import tqdm.notebook
    import tqdm.std

    class tqdm_static(tqdm.std.tqdm):  # noqa: N801 - named like tqdm's own classes
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    def trange(*args, **kwargs):
        return tqdm_static(range(*args), **kwargs)

    for m in (tqdm.auto, tqdm.autonotebook, tqdm.notebook):
        m.tqdm, m.trange = tqdm_static, trange
    tqdm.notebook.tqdm_notebook, tqdm.notebook.tnrange = tqdm_static, trange


_transformer_lite_static_tqdm()
del _transformer_lite_static_tqdm


def _record_where_transformer_lite_comes_from():
    """After the first cell that imported transformer_lite, write the file it came from into
    ``$TRANSFORMER_LITE_IMPORT_LOG/<pid>.txt``: bookbuild/build_book.py fails the build if a chapter imported
    the package from the checkout instead of the venv, where pip installed it."""
    import os
    import sys

    folder = os.environ.get("TRANSFORMER_LITE_IMPORT_LOG")
    ip = get_ipython()  # noqa: F821 - defined in a kernel's start-up files
    if not folder or ip is None:
        return

    def record(result=None):
        module = sys.modules.get("transformer_lite")
        if module is not None:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"{os.getpid()}.txt"), "w", encoding="utf-8") as f:
                f.write(module.__file__)
            ip.events.unregister("post_run_cell", record)

    ip.events.register("post_run_cell", record)


_record_where_transformer_lite_comes_from()
del _record_where_transformer_lite_comes_from
