# The two commands: `make run` and `make test`. Both create .venv and install what they need.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: install run test test-suite test-fast lint typecheck migrate clean

$(STAMP): requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "evalsite needs Python 3.11, got " + sys.version' 
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

# The checkout's own secret key (evalsite/settings.py reads it when SECRET_KEY is unset), so every
# manage.py command works here with no variable set. Made once, readable by its owner only.
VAR_DIR := $(or $(EVALSITE_VAR_DIR),var)
install: $(STAMP)
	@mkdir -p "$(VAR_DIR)"
	@test -s "$(VAR_DIR)/secret_key" || (umask 077 && $(BIN)/python -c \
	    'import secrets; print(secrets.token_urlsafe(50))' >"$(VAR_DIR)/secret_key")

migrate: install
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py migrate --noinput

# gunicorn on 127.0.0.1:8001 and a Celery worker (with beat) on the embedded broker; Ctrl-C stops both.
run: install
	DEBUG=$${DEBUG:-1} bin/run-local

# The layer contract (.importlinter) first: an import against the layers fails the run before any test.
# .ci/run runs ruff and mypy itself, then `make test`: lint-imports runs once per CI run.
test: install
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory test-suite

test-suite: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# What ruff, import-linter and mypy check (their settings: pyproject.toml, .importlinter). The same hooks run
# from .pre-commit-config.yaml.
LINT_PATHS := apps evalsite tests bench
lint: install
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory typecheck

# mypy with django-stubs over the checked set in pyproject.toml [tool.mypy] files (apps/core, apps/scores, apps/rag so far).
typecheck: install
	$(BIN)/mypy

# The quick local loop: everything but the slow tiers (markers in pyproject.toml). `make test` and
# .ci/run still run them all.
FAST_MARKERS := not browser and not celery_integration and not prometheus and not subprocess
test-fast: install
	$(BIN)/python -m pytest -m "$(FAST_MARKERS)" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var
