# Transformer, Step by Step -- every target does its own set-up on a fresh machine.
#   make book   build the site into _build/html (executes every notebook)
#   make pdf    one PDF per edition (_build/pdf/transformer-step-by-step.en.pdf, .zh.pdf): the built site joined
#               into one document and printed by Chromium (bookbuild/build_pdf.py; 3 min on 2 cores, 13 min when other
#               work loads them; builds the site first if there is none); the next `make book` links them from every
#               page; tests/test_pdf.py checks them when they exist (a separate target: too long for every make test)
#   make release  dist/: the site as a zip that opens from disk, both PDFs, a zip of every notebook of both editions,
#               the wheel and the sdist (bookbuild/release.py); a tag v* makes the workflow attach them to a GitHub release
#   make lock   re-resolve requirements-uv.lock, requirements.lock and requirements-nodeps.lock (exact versions with
#               hashes, uv) to the newest releases requirements*.in allow; `make install` installs only what they pin
#   make repository REPO=owner/name  point the committed files at another repository (bookbuild/repository.py; a build
#               alone takes BOOK_REPOSITORY, and the workflow GitHub's own GITHUB_REPOSITORY)
#   make test   run every test: the package, the notebooks' claims, the built site in Chromium
#   make check  the fast inner loop (no book build): the linter first (ruff, pyproject.toml [tool.ruff]; under a
#               second), then the package, the chapters' claims through it, the exercise checks, the i18n catalogs
#   make test-oldest  the package's fast tests and every chapter on the oldest torch pyproject.toml allows, on
#               Python 3.12 (.venv-oldest; bookbuild/test_oldest.py): the torch a Colab image of the last year keeps
#               (20 min on 2 busy cores: tests 14, chapters 6; making the venv adds 5 min and a 3 GB download)
#   make bench  run the benchmarks, write transformer_lite/book/assets/benchmarks.json (ships with the package),
#               Lighthouse on the built site's heaviest pages (benchmarks/lighthouse.json), and the translator page's
#               speed against its budgets (benchmarks/translator.json; met or not, never a failure; after make book),
#               and a 10-word trace's time on the explainer page (benchmarks/explainer.json; likewise)
#   make translator  train the book's translator (RECIPE) and write the weights the package ships
#   make capstone  measure chapter 13's baselines, every row timed in the same run (assets/capstone_baselines.json)
#   make grammar-lab  chapter 13's laboratory: subject-object swaps, a systematic split, new verb-object pairs, a length
#               split, a data-size curve, each with its intervention; 3 seeds, one thread (assets/grammar_lab.json; 12 min on a free core)
#   make since2017  chapter 15's measurements: decoder-only translation with a masked prompt against chapter 13's
#               encoder-decoder at equal parameters, steps and batches, a tiny scaling sweep (size, tokens), BERT fine-tuned
#               vs from scratch; 3 seeds, one thread per run, two runs at a time (assets/since2017.json; 9.5 min wall on a
#               busy 2-core machine, 14.5 CPU-minutes)
#   make real-translator  train the translator of real sentences (HSK pairs; RealRecipe) and write its shipped weights and report
#   make real-baselines   measure it against IBM-1, the GRU and the no-position Transformer, 3 seeds (assets/real_baselines.json)
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
# The package is installed as pip installs it for a reader (a wheel, not `-e .`): the book's kernels import
# that copy, and bookbuild/build_book.py fails if one imported the checkout. Reinstalled when a file of it changes.
PKG_STAMP := $(VENV)/.package
PKG_FILES := $(shell find transformer_lite -type f \( -name '*.py' -o -name '*.pt' -o -name '*.json' -o -name '*.po' \) 2>/dev/null)

.PHONY: install lock release repository book pdf test check test-package bench translator capstone grammar-lab since2017 real-translator real-baselines clean

# The Python packages and npm's at once (a fresh clone's make test starts here). From a fresh clone, at once against
# one after the other: 37 s against 52 s, then 56 s against 60 s (the machine had slowed meanwhile).
install:
	$(MAKE) --no-print-directory -j2 $(PKG_STAMP) node_modules/.installed

# The toolchain comes from the lock files, every package at an exact version with its hashes (the installer refuses
# any other file). pip installs the installer, uv (requirements-uv.lock), and uv installs the rest: the same files,
# compiled to bytecode on both cores (65 CPU-seconds, 76 s here, where pip took 93 CPU-seconds on one). Compiled
# ahead because these machines set PYTHONDONTWRITEBYTECODE: without it every kernel would compile torch again.
# torch's CPU build is not on PyPI: these machines keep it on disk (PIP_FIND_LINKS, which pip reads itself and uv
# is given); elsewhere set TORCH_INDEX_URL to PyTorch's CPU wheel index (the workflow does), whose torch page
# lists that file.
TORCH_INDEX_URL ?=
TORCH_LINKS := $(if $(TORCH_INDEX_URL),--find-links $(TORCH_INDEX_URL)/torch/,$(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS)))
UV     := $(VENV)/bin/uv
UV_INSTALL := $(UV) pip install --quiet --require-hashes --no-deps --compile-bytecode --python $(PY)

$(STAMP): requirements-uv.lock requirements.lock requirements-nodeps.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --require-hashes --no-deps -r requirements-uv.lock
	$(UV_INSTALL) $(TORCH_LINKS) -r requirements.lock
	$(UV_INSTALL) -r requirements-nodeps.lock
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# Re-resolve the lock files to the newest releases the .in files allow (uv, with hashes), for the Python and
# platform of the project's machines and of the workflow's container. Review the diff, run make test, commit.
LOCK := $(UV) pip compile --quiet --upgrade --generate-hashes --python-version 3.11.7 \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock"
lock: $(STAMP)
	$(LOCK) requirements-uv.in -o requirements-uv.lock
	$(LOCK) $(TORCH_LINKS) --override requirements-overrides.txt requirements.in -o requirements.lock
	$(LOCK) --no-deps requirements-nodeps.in -o requirements-nodeps.lock

$(PKG_STAMP): $(STAMP) pyproject.toml $(PKG_FILES)
	rm -rf build
	# the distribution was named transformer_lite before 0.1.0 went to PyPI: a venv made then holds both names
	$(PIP) uninstall --quiet --yes transformer_lite 2>/dev/null || true
	$(PIP) install --quiet --no-deps --no-build-isolation --force-reinstall .
	rm -rf build
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

book: install
	$(PY) -m bookbuild.build_book

# nice, OMP_WAIT_POLICY=PASSIVE: Chromium lays out ~400 pages per edition and shares the machine.
pdf: install
	test -f _build/html/zh/index.html || $(PY) -m bookbuild.build_book
	OMP_WAIT_POLICY=PASSIVE nice $(PY) -m bookbuild.build_pdf

# dist/: the site as a zip that opens from disk, both PDFs, every notebook of both editions, the wheel and the
# sdist (bookbuild/release.py; the site is built again after the PDFs so that every page links them).
# dist/ is then checked as a reader uses it (tests/test_release.py): the site zip unzipped and opened from disk, the
# wheel installed into an empty venv translating with both shipped models.
release: install
	test -f _build/html/zh/index.html || $(PY) -m bookbuild.build_book
	OMP_WAIT_POLICY=PASSIVE nice $(PY) -m bookbuild.build_pdf
	$(PY) -m bookbuild.build_book
	$(PY) -m bookbuild.release
	$(PY) -m pytest -q -p no:cacheprovider tests/test_release.py

# Point the committed files readers see as they are (README, CITATION.cff, pyproject.toml, CHANGELOG, _config.yml) at a new
# repository: make repository REPO=owner/name [SITE=https://...]. A build alone takes BOOK_REPOSITORY instead.
repository:
	$(PYTHON) -m bookbuild.repository set $(REPO) $(if $(SITE),--site $(SITE))

# Three workers on two cores: the two passes over the site (one worker each, at once) mostly wait on Chromium, page
# loads and timers, and the third worker's tests (the package, the notebook runs) use the core they leave idle. Files
# that share an expensive fixture (the served site, the JupyterLab server, the Colab-like venv) stay on one worker
# (xdist_group marks). The longest groups are handed out first (tests/conftest.py orders them; --no-loadscope-reorder
# keeps that order instead of xdist's, by number of tests). OMP_WAIT_POLICY=PASSIVE: with both cores busy, spinning
# OpenMP threads slowed 2-thread runs up to 8x.
test: book
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest -q -n 3 --dist loadgroup --no-loadscope-reorder --durations=40

# The linter runs first: it takes well under a second, and a problem it finds fails the target before the minutes
# of tests. The tests run on both cores (two xdist workers; the files that share a fixture stay on one, as in
# make test): they were one process, 225 s on 2 cores, most of it one core computing while the other idled.
LINT_SCOPE := transformer_lite bookbuild tests benchmarks
check: $(PKG_STAMP)
	$(PY) -m ruff check $(LINT_SCOPE)
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest -q -n 2 --dist loadgroup tests -m "not browser and not slow"

test-package: check

# Every claim about a model trained live, re-run as other machines would (tests/test_portability.py), with the long
# runs make test leaves out (chapter 13b trains half the real translator's recipe, ~240 CPU-s a configuration, and the
# package's tests marked trains, ~100 CPU-s). By
# default every configuration (15: seeds 0-3, 1 or 2 threads, native or generic CPU code paths; about an hour on
# 2 cores); PORTABILITY=seed2-1thread-other-cpu runs one. The weekly scheduled workflow runs it.
PORTABILITY ?= all
.PHONY: portability
portability: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE TRANSFORMER_LITE_PORTABILITY=$(PORTABILITY) TRANSFORMER_LITE_PORTABILITY_LONG=1 $(PY) -m pytest -q -p no:cacheprovider -p no:xdist tests/test_portability.py

# torch's floor is a tested floor: the package's fast tests and every chapter, run as the build runs them, on
# OLDEST_PYTHON with torch==<the floor in pyproject.toml> in a venv of their own (.venv-oldest, kept while what it
# installs is the same). torch comes from PyPI (the CUDA build, GBs: pip's cache keeps it) or TORCH_INDEX_URL.
OLDEST_PYTHON ?= python3.12
.PHONY: test-oldest
test-oldest:
	$(PYTHON) -m bookbuild.test_oldest --python $(OLDEST_PYTHON)

# The targets below write what the package ships into the checkout, named here: the package's own path to its
# assets may be the copy installed in the venv (benchmarks/run.py, a script, imports that copy), where git never
# sees a file. bench measures the installed copy, so it is reinstalled first when the checkout changed.
ASSETS := $(CURDIR)/transformer_lite/book/assets

bench: $(PKG_STAMP) node_modules/.installed
	$(PY) -m benchmarks.run --out $(ASSETS)/benchmarks.json

translator: $(STAMP)
	$(PY) -m transformer_lite.book.pretrained --out-dir $(ASSETS)

capstone: $(STAMP)
	$(PY) -m transformer_lite.book.capstone --out $(ASSETS)/capstone_baselines.json

# `make grammar-lab swaps` (or since2017 blocks) measures only the experiments named and keeps the others' results;
# the names are goals of their own that do nothing.
GRAMMAR_LAB_EXPERIMENTS := swaps systematic cooccurrence length curve
SINCE2017_EXPERIMENTS := translation scaling bert blocks
.PHONY: $(GRAMMAR_LAB_EXPERIMENTS) $(SINCE2017_EXPERIMENTS)
$(GRAMMAR_LAB_EXPERIMENTS) $(SINCE2017_EXPERIMENTS):
	@:

# nice: it runs for about 12 minutes on one core (longer on a busy machine); the results do not depend on the priority.
grammar-lab: $(STAMP)
	nice $(PY) -m transformer_lite.book.grammar_lab --out $(ASSETS)/grammar_lab.json \
		$(filter $(GRAMMAR_LAB_EXPERIMENTS),$(MAKECMDGOALS))

# nice, OMP_WAIT_POLICY=PASSIVE: it shares the machine; every run is seeded and on one thread, so the numbers do not
# depend on the priority or on the number of workers.
since2017: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE nice $(PY) -m transformer_lite.book.since2017 --out $(ASSETS)/since2017.json \
		$(filter $(SINCE2017_EXPERIMENTS),$(MAKECMDGOALS))

real-translator: $(STAMP)
	$(PY) -m transformer_lite.book.real_translator --out-dir $(ASSETS)

real-baselines: $(STAMP)
	$(PY) -m transformer_lite.book.real_translator baselines --out $(ASSETS)/real_baselines.json

clean:
	rm -rf _build
