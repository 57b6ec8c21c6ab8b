# odradek developer entry points. `make run` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DATA   ?= $(CURDIR)/run
BROKERS ?= 3
PYTEST_ARGS ?=
# `make run`'s brokers, for `make demo`.
BOOTSTRAP ?= 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094

.PHONY: install run test test-slow lint typecheck bench demo image chart e2e clean prereqs

prereqs:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "odradek needs Python 3.11+ (found: $$($(PYTHON) --version 2>&1)). Set PYTHON=python3.11 or install it." >&2; exit 1; }
	@command -v java >/dev/null 2>&1 || \
	  { echo "odradek runs Apache ZooKeeper, which needs Java 17+: apt-get install openjdk-17-jre-headless" >&2; exit 1; }
	@java -version 2>&1 | awk -F'"' '/version/ { split($$2, v, "."); if (v[1] < 17) { print "Java 17+ is needed, found " $$2 > "/dev/stderr"; exit 1 } }'

$(STAMP): pyproject.toml | prereqs
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,operator]'
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/odradek cluster --brokers $(BROKERS) --data-dir $(DATA)

test: install lint
	$(PY) -m pytest $(PYTEST_ARGS)

# pytest exits 5 when a selection holds no test: not a failure of the code.
test-slow: install
	$(PY) -m pytest -m slow $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: install
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/mypy src

bench: install
	$(PY) -m bench --output bench/results

# The reference Spark pipeline (examples/pipeline) against the `make run` cluster.
demo: install
	$(PY) -m examples.pipeline.demo --bootstrap-server $(BOOTSTRAP)

image:
	@docker info >/dev/null 2>&1 || { echo "make image needs a running Docker engine (none here)" >&2; exit 1; }
	docker build -f broker-image/Dockerfile -t odradek/broker:dev .

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
