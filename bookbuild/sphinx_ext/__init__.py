"""The book's own Sphinx extensions (tl_book, tl_math, tl_explainer), loaded by _config.yml's local_extensions."""
