# Two commands do all setup on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=
# Most of the suite's time is waiting (pairing delays, staged faults, browsers), so three workers
# overlap it even on two cores; a file's tests stay on one worker, in order (module fixtures are
# shared by them). PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 3

.PHONY: lab test lint tour bench mutate sandbox clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Re-install whenever pyproject.toml changes.
$(VENV)/.lab-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[lab]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1 || true
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[lab,test]'
	touch $@

# Jupyter refuses to run as root without --allow-root (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# The tracked notebooks are saved without outputs (scripts/lab_config.py); run copies go to build/.
lab: $(VENV)/.lab-installed
	$(BIN)/jupyter lab $(ROOT_FLAG) --config=scripts/lab_config.py $(LAB_ARGS) notebooks/01-tour.ipynb

# Lint, format and type checks first: they take seconds and catch what the tests would not.
lint: $(VENV)/.test-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: $(VENV)/.test-installed lint
	bash scripts/ensure-chromium.sh
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# build/tour.html loads its widget scripts from build/vendor/: keep the two together.
tour: $(VENV)/.test-installed
	PYTHON=$(BIN)/python bash scripts/vendor-widgets.sh build/vendor
	$(BIN)/jupyter nbconvert --config scripts/tour_nbconvert_config.py --to html --execute \
	  notebooks/01-tour.ipynb --output-dir build --output tour

bench: $(VENV)/.test-installed
	$(BIN)/python -m bench

# Mutation testing (mutmut, one worker) of the modules that guard keys, secrets and writes, each
# set with the tests that cover it (mutate/sets.toml): prints the share of mutants killed and the
# survivors (build/mutate/report.txt). Not part of `make test`: about 3 hours for every set on two
# busy cores; SETS="masking guard" runs only those (minutes each); mutate/equivalent.txt lists the
# mutants that change nothing.
SETS ?=
mutate: $(VENV)/.test-installed
	$(BIN)/python scripts/mutate.py $(SETS)

sandbox: $(VENV)/.lab-installed
	$(BIN)/decoy-lab sandbox

clean:
	rm -rf build .pytest_cache
