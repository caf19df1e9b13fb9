# Transformer, Step by Step -- every target does its own set-up on a fresh machine.
#   make book   build the site into _build/html (executes every notebook)
#   make test   run every test: the package, the notebooks' claims, the built site in Chromium
#   make bench  run the benchmarks, write transformer_lite/book/assets/benchmarks.json (ships with the package)
#   make translator  train the book's translator (RECIPE) and write the weights the package ships
#   make capstone  measure chapter 13's baselines, systematic split and data-size curve (assets/capstone_baselines.json)
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: install book test test-package bench translator capstone clean

install: $(STAMP) node_modules/.installed

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps -r requirements-nodeps.txt
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

book: install
	$(PY) tools/build_book.py

test: book
	$(PY) -m pytest -q

test-package: $(STAMP)
	$(PY) -m pytest -q tests -m "not browser and not slow"

bench: $(STAMP)
	$(PY) benchmarks/run.py

translator: $(STAMP)
	$(PY) -m transformer_lite.book.pretrained

capstone: $(STAMP)
	$(PY) -m transformer_lite.book.capstone

clean:
	rm -rf _build
