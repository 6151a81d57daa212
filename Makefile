# OpenGSE: everything installs into .venv from PyPI; nothing else is needed but
# Python >= 3.10, g++ and make.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: all install icarus run test test-slow coverage clean

all: run

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@$(MAKE) --no-print-directory icarus
	touch $@

# Icarus Verilog, the second simulator the exports are checked with, is a Debian
# package, not a PyPI one: installed where this runs as root with apt, otherwise its
# tests are skipped and say so.
icarus:
	@command -v iverilog >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -q iverilog >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q iverilog >/dev/null 2>&1)) \
	    && echo "installed iverilog" || echo "could not install iverilog: Icarus tests will be skipped"; \
	  else echo "iverilog not found (needs root and apt): Icarus tests will be skipped"; fi; }

install: $(BIN)/.installed

# The main job: export every block to Verilog and print its benchmark, then the
# leaf-spine fabric comparison (GSE against the ECMP baseline, docs/fabric.md).
run: install
	$(BIN)/gse run -o build/export
	$(BIN)/gse fabric

# The whole regression (the same command CI runs).
test: install
	$(BIN)/python -m pytest -n auto

test-slow: install
	$(BIN)/python -m pytest -n auto -m slow

# Verilator line and toggle coverage of the default soaks, per block: models built with
# coverage under build/coverage/sim, a table printed, annotated Verilog in build/coverage
# (docs/development.md, "Coverage"). OPENGSE_SOAK_N sets the inputs per soak.
coverage: install
	$(BIN)/python -m opengse.sim.coverage --clean

clean:
	rm -rf build
