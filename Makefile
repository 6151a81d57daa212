# OpenGSE: everything installs into .venv from PyPI; nothing else is needed but
# Python >= 3.10, g++ and make.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: all install run test test-slow clean

all: run

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

install: $(BIN)/.installed

# The main job: export every block to Verilog and print its benchmark.
run: install
	$(BIN)/gse run -o build/export

# The whole regression (the same command CI runs).
test: install
	$(BIN)/python -m pytest -n auto

test-slow: install
	$(BIN)/python -m pytest -n auto -m slow

clean:
	rm -rf build
