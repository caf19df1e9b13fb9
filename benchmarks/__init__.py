"""What `make bench` measures (run.py) and the pages it drives in Chromium (translator_page.py, explainer_page.py)."""
