"""The book's helpers, apart from the Transformer itself.

``transformer_lite`` (the core: attention, masks, normalization, embeddings, layers, model,
interop, decoding, training, data) needs only torch, numpy and tqdm. This subpackage holds what
the chapters need around it, and it needs matplotlib, ipywidgets, IPython and bertviz
(``pip install "transformer-step-by-step[book]"``):

* :mod:`.notebook`: a chapter's set-up cell (seeds, versions, plot style) and ``show_source``;
* :mod:`.runtime`: the book's seed and thread count (``TRANSFORMER_LITE_SEED`` / ``_THREADS``);
* :mod:`.interactive`: controls that work live in Jupyter and on the static page;
* :mod:`.plotting` and :mod:`.viz`: figures and bertviz attention views;
* :mod:`.pretrained`: the trained translator that ships in ``assets/``;
* :mod:`.translate`: the translator box (type English, see the translation);
* :mod:`.explain`: ``trace(key, text)``, a shipped translator's every intermediate for one sentence,
  as JSON-ready lists (the source of truth for the explainer).

``N_`` (:mod:`.i18n`, gettext's no-op marker: it returns its argument) is here for the chapters, which mark with it a
string they show the reader, ``print(N_(f"..."))``: bookbuild/i18n.py takes it into the chapter's code catalog, and the
Chinese notebook has its translation in its place.
"""
from .i18n import N_

__all__ = ["N_"]
