# Set-up for a fresh machine: `make demo` or `make test` creates .venv and installs everything.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser office demo test lint bench fuzz fuzz-long screenshots clean

# The dev extra includes lore-kb[server] (the engine); the base alone is the client.
$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade "pip==26.3"
	$(BIN)/pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: install office
	LORE_HOME=$(CURDIR)/.lore/demo $(BIN)/lore demo  # README: export LORE_HOME=$$PWD/.lore/demo to use it

# The browser tests drive Debian's chromium through Playwright (no browser download); CJK fonts so
# Chinese renders in screenshots.
browser:
	@{ command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi wenquanyi; } || { \
	  echo "installing Debian's chromium and CJK fonts for the browser tests"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-wqy-zenhei; }

# .doc, .ppt, .rtf and .odt are converted by headless LibreOffice (Debian's -nogui packages, ~15 MB download).
office:
	@command -v soffice >/dev/null 2>&1 || { echo "installing Debian's LibreOffice (no GUI) for .doc/.ppt/.rtf/.odt"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    --no-install-recommends libreoffice-writer-nogui libreoffice-impress-nogui; }

test: install browser office lint
	$(BIN)/pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25

# Format and lint (ruff), the import layers (import-linter) and types (mypy, strict); settings in pyproject.toml.
lint: install
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/retrieval.py --dataset ../shared/datasets/scifact

# A bounded schemathesis run against a real `lore serve` (authenticated): fails on any 5xx.
fuzz: install
	$(BIN)/python benchmarks/fuzz.py --max-examples 30

# The stateful test with random (not the suite's fixed) sequences, ten times as many: two tenants, shares,
# keys, uploads, builds, deletes and revocations against a live service; prints steps and sequences run.
fuzz-long: install
	STATEFUL_RANDOM=1 STATEFUL_SEQUENCES=2000 $(BIN)/pytest -q -s tests/api/test_stateful.py

# A PNG of every console panel into docs/ (the browser test of the console, with screenshots on).
screenshots: install browser
	LORE_SCREENSHOTS=docs $(BIN)/pytest -q tests/api/test_console_ui.py tests/api/test_console_admin_ui.py

clean:
	rm -rf $(VENV) .lore
