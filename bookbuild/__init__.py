"""The code that publishes the book: build, translation, PDF, slimming, the Sphinx extension, the site's own
scripts and the Lighthouse benchmark.

Each module is a command of its own, run from the repository's root: ``python -m bookbuild.build_book`` (what
``make book`` runs), ``python -m bookbuild.i18n update``, ``python -m bookbuild.chapters header`` … The package
``transformer_lite`` never imports it, and the chapters never see it.
"""
