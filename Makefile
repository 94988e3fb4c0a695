# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# torch 2.14.1 / torchvision 0.29.1 install from this machine's disk (see docs/install.md)
TORCH_PINS := torch==2.14.1 torchvision==0.29.1

.PHONY: run test install clean

$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PINS) || $(PY) -m pip install -q torch torchvision
	touch $@

$(VENV)/.installed: $(VENV)/.base pyproject.toml
	$(PY) -m pip install -q -e .
	touch $@

# The tests also run RobustBench's own package (docs/robustbench.md): its extra's dependencies, then its
# release without its pins (timm 1.0.9 is older than robeval needs); its __init__ imports pkg_resources,
# which setuptools 81 dropped.
$(VENV)/.installed-test: $(VENV)/.installed Makefile
	$(PY) -m pip install -q -e '.[test,robustbench]'
	$(PY) -m pip install -q --no-deps robustbench==1.1.1 'setuptools<81'
	touch $@

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/robeval run

# linters, the type checker, then the suite (one pytest worker per core, at most 4; each computes on one thread)
test: $(VENV)/.installed-test
	$(VENV)/bin/ruff check robeval tests
	$(VENV)/bin/ruff format --check robeval
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadscope

clean:
	rm -rf $(VENV) results
