# The two commands of the quickstart. Each creates (or reuses) .venv and
# installs what it needs; nothing has to be installed beforehand.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.layoutgen-installed
# torch for the torch operators' tests (tests/test_torch_ops.py): this release is the CPU build that lies on
# disk on these machines and CI's for Python 3.11 (a range, or another Python, would fetch a CUDA build of GBs).
TORCH  ?= torch==2.13.0
# A second environment with CUDA 12's CuPy and NVRTC (layoutgen[cuda12]), made once and reused:
# `make test` compiles every kernel with NVRTC 12 in it too. One process loads one NVRTC, hence a venv.
VENV12 ?= .venv-cu12
PY12    = $(VENV12)/bin/python
STAMP12 = $(VENV12)/.layoutgen-installed

.PHONY: demo test venv venv-cu12 check-cuda12 wheel test-install clean

venv: $(STAMP)

# setup.py and the C source: the compiled launch path is built in place by the editable install.
$(STAMP): pyproject.toml setup.py $(wildcard layoutgen/runtime/fastlaunch/*.c layoutgen/runtime/fastlaunch/*.h)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,cuda13]'
	$(PY) -m pip install --quiet '$(TORCH)'
	touch $(STAMP)

venv-cu12: $(STAMP12)

$(STAMP12): pyproject.toml
	test -x $(PY12) || $(PYTHON) -m venv $(VENV12)
	$(PY12) -m pip install --quiet -e '.[cuda12]'
	touch $(STAMP12)

# Every kernel of the examples compiled offline with NVRTC 12 (and CUDA 12's headers).
check-cuda12: $(STAMP12)
	$(PY12) -m layoutgen check --compile

# $(DIST)/layoutgen-<version>-<python>-<platform>.whl (it carries the compiled launch path), as
# `python -m build --wheel` makes it, without the `build` package
# (pip builds it in an isolated environment of its own; no .venv needed).
DIST ?= dist
wheel:
	rm -rf $(DIST)
	$(PYTHON) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .

# Fresh environments install the wheel and the clone with each CUDA extra and compile the examples (minutes).
test-install: $(STAMP)
	LAYOUTGEN_INSTALL_TESTS=1 $(PY) -m pytest -q -m install tests/test_install.py

# The story in about 40 lines; `make demo ARGS=--verbose` for every detail.
demo: $(STAMP)
	$(PY) -m examples.vsn.demo $(ARGS)

test: $(STAMP) $(STAMP12)
	$(PY) -m pytest -q
	$(PY) -m mypy --strict layoutgen
	$(PY) -m layoutgen generate --check
	$(PY) -m layoutgen check --compile
	$(PY) -m layoutgen check --execute
	$(PY12) -m layoutgen check --compile

clean:
	rm -rf $(VENV) $(VENV12) dist .mypy_cache .pytest_cache .hypothesis .layoutgen-cache
