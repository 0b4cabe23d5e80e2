# Thin entry points over scripts/: the scripts are what CI runs; these only name them.
#   make setup            .venv with the package (kernels built) and its test tools; Debian packages when missing
#   make test             the whole suite as CI runs it (scripts/test.sh); make test ARGS="tests/core -x" for a part
#   make lint             ruff, mypy (strict, on the package) and codespell, as scripts/test.sh runs them
#   make bench            one benchmark: make bench BENCH=mysql ARGS="--rows 100000" (benchmarks/README.md)
#   make docs             the notebooks' .ipynb from their .py, then a check that the docs' links and cited files exist
PYTHON := .venv/bin/python
BENCH ?= kernel
ARGS ?=

.PHONY: setup test lint bench docs

setup:
	bash scripts/setup.sh --system

test:
	bash scripts/test.sh $(ARGS)

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy
	.venv/bin/codespell

bench:
	$(PYTHON) benchmarks/bench_$(BENCH).py $(ARGS)

docs:
	$(PYTHON) -m tests.support.notebooks
	$(PYTHON) scripts/check_docs.py
