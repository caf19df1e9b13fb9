"""The predictions and exercise checks answer on the page (static/tl-check.js), and an exercise's Colab link names
its cell."""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

_EXERCISE_CELL = re.compile(r'(<div class="tl-ask tl-ask-exercise"[^>]*? data-tl-cell=")[^"]*(")')


def exercise_cells(app, doctree) -> None:
    """An exercise's check that needs Python links to its cell in Colab (static/tl-check.js): the kernel that wrote
    the check's output does not know the cell's id, the notebook does. The link opens the reader's answer cell (the
    one tagged "exercise" just above the check), else the check's own."""
    import json

    docname = app.env.docname
    source = (app.config.tl_notebook_sources or {}).get(docname) or app.env.doc2path(docname)
    if not str(source).endswith(".ipynb"):
        return
    cells = None
    for container in doctree.findall(nodes.container):
        if container.get("nb_element") != "cell_code" or container.get("cell_index") is None:
            continue
        for raw in list(container.findall(nodes.raw)):
            text = raw.astext()
            if 'class="tl-ask tl-ask-exercise"' not in text:
                continue
            if cells is None:
                cells = json.loads(Path(source).read_text(encoding="utf-8"))["cells"]
            i = container["cell_index"]
            above = cells[i - 1] if 0 < i <= len(cells) else {}
            cell = above if "exercise" in (above.get("metadata", {}).get("tags") or []) else \
                (cells[i] if i < len(cells) else {})
            text = _EXERCISE_CELL.sub(lambda m, cell=cell: m.group(1) + str(cell.get("id", "")) + m.group(2), text)
            raw.replace_self(nodes.raw("", text, format="html", classes=raw.get("classes", [])))


def setup(app) -> None:
    """static/tl-check.js reads what transformer_lite/book/check/page.py wrote into the build's outputs: deferred, it
    runs when the page is parsed."""
    app.add_js_file("tl-check.js", loading_method="defer")
    app.connect("doctree-read", exercise_cells)
