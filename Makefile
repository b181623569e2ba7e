# The two commands of the quickstart. Each creates (or reuses) .venv and
# installs what it needs; nothing has to be installed beforehand.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.layoutgen-installed

.PHONY: demo test venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,compile]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/vsn/demo.py

test: $(STAMP)
	$(PY) -m pytest -q
	$(PY) -m mypy --strict layoutgen
	$(PY) -m layoutgen generate --check
	$(PY) -m layoutgen check --compile

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .hypothesis .layoutgen-cache
