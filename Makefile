# Set-up for a fresh machine: `make demo` or `make test` creates .venv and installs everything.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser demo test lint bench screenshots clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade "pip==26.3"
	$(BIN)/pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: install
	LORE_HOME=.lore/demo $(BIN)/lore demo

# The browser tests drive Debian's chromium through Playwright (no browser download); CJK fonts so
# Chinese renders in screenshots.
browser:
	@{ command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi wenquanyi; } || { \
	  echo "installing Debian's chromium and CJK fonts for the browser tests"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-wqy-zenhei; }

test: install browser
	$(BIN)/pytest -q -n 2 --dist loadfile

lint: install
	$(BIN)/ruff check src tests benchmarks

bench: install
	$(BIN)/python benchmarks/retrieval.py --dataset ../shared/datasets/scifact

# A PNG of every console panel into docs/ (the browser test of the console, with screenshots on).
screenshots: install browser
	LORE_SCREENSHOTS=docs $(BIN)/pytest -q tests/api/test_console_ui.py

clean:
	rm -rf $(VENV) .lore
