# Two commands do all the set-up on a fresh machine:
#   make run    install into .venv if needed, then start the app on the embedded offline Hub
#   make test   install into .venv if needed, then lint, type-check and run the whole test suite
# `make check` is the fast loop: lint, type check and the unit tests (no browser, no Ray,
# nothing slow). Everything else here is what those need.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test check lint install chromium venv310 bench clean-venv

run: install
	$(PY) app.py

# Tests run two at a time (pytest-xdist): most of them wait on processes and servers. Ray's
# tests share one worker (`xdist_group("ray")`), so that two clusters never start at once.
PYTEST := $(PY) -m pytest -n 2 --dist loadgroup

# ruff first (a second); then mypy checks while the tests run, the target failing if either
# does. A cold check (a fresh clone) takes mypy 14 s of one core, as long as the suite's
# warm-up of numba's cache (conftest.py) takes of the other: side by side, not one after
# the other.
define tests_beside_mypy
	$(PY) -m ruff check .
	@$(PY) -m mypy & types=$$!; $(1); tests=$$?; wait $$types; types=$$?; \
	  test $$tests -eq 0 -a $$types -eq 0 || { echo "make $@: tests exit $$tests, mypy exit $$types"; exit 1; }
endef

test: venv310 install chromium
	$(call tests_beside_mypy,$(PYTEST))

check: install
	$(call tests_beside_mypy,$(PYTEST) -m "not browser and not cluster and not slow")

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

install: $(STAMP)

# nmmo==2.1.2 declares Requires-Python <3.11 but runs on 3.11 (see requirements.txt), so
# pip needs --ignore-requires-python; a requirements file cannot carry that flag.
# nmmo pins numpy==1.23.3, which has wheels for Python 3.8-3.11 only.
# pip byte-compiles the ~18,000 installed modules on one core (a minute here); compileall
# does the same on every core. They must be compiled up front: where PYTHONDONTWRITEBYTECODE
# is set, or on a Ray node (the environment mounted read-only), every process would compile
# each module it imports again. Like pip, compileall's failures are ignored: a package may
# ship files that are not Python 3.10/3.11 (torch's tests of Python 3.12 syntax).
$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 10) <= v <= (3, 11) else "NMMO Arena needs Python 3.10 or 3.11 (nmmo 2.x pins numpy 1.23.3); found %d.%d. Run: make PYTHON=python3.11 ..." % v)'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --no-compile --ignore-requires-python -r requirements-dev.txt
	$(PY) -m compileall -qq -j 0 $(VENV)/lib || true
	touch $@

# test_python310.py's environment (tests/python310_env.py) builds in the background beside
# the install, whose pip unpacks on one core: the test waits for the build (a lock) instead
# of running it in the middle of the suite. Current already: it returns at once.
venv310:
	@$(PYTHON) tests/python310_env.py >/dev/null 2>&1 &

# Browser tests drive Debian's Chromium through Playwright (never a downloaded browser).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests (needs root: apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

bench: install
	$(PY) -m bench.match_speed

clean-venv:
	rm -rf $(VENV)
