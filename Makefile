# Set-up and everyday commands. Every target creates the virtual environment .venv when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: train demo test test-slow test-compat bench clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

train: $(STAMP)
	$(BIN)/btgym-aac train

demo: $(STAMP)
	$(BIN)/btgym-aac demo --out out/demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 2 --dist loadgroup

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# the smoke subset on TensorFlow 2.16, 2.21 and 2.22.0rc0 with Pythons 3.11 and 3.13 (pyenv), venvs in .compat/
test-compat: $(STAMP)
	$(BIN)/python scripts/test_compat.py

bench: $(STAMP)
	$(BIN)/python benchmarks/env_throughput.py --out benchmarks/results
	$(BIN)/python benchmarks/train_throughput.py --out benchmarks/results

clean:
	rm -rf out runs build *.egg-info
