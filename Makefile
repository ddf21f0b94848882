# The two commands: `make run` and `make test`. Both create .venv and install what they need.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: install run test migrate clean

$(STAMP): requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "evalsite needs Python 3.11, got " + sys.version' 
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

migrate: install
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py migrate --noinput

# gunicorn on 127.0.0.1:8001 and a Celery worker (with beat) on the embedded broker; Ctrl-C stops both.
run: install
	DEBUG=$${DEBUG:-1} bin/run-local

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var
