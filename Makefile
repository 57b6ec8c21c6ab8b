# odradek developer entry points. `make run` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DATA   ?= $(CURDIR)/run
BROKERS ?= 3
PYTEST_ARGS ?=

.PHONY: install run test test-slow lint typecheck bench image chart e2e clean prereqs \
        prometheus generate-monitoring dashboards

prereqs:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "odradek needs Python 3.11+ (found: $$($(PYTHON) --version 2>&1)). Set PYTHON=python3.11 or install it." >&2; exit 1; }
	@command -v java >/dev/null 2>&1 || \
	  { echo "odradek runs Apache ZooKeeper, which needs Java 17+: apt-get install openjdk-17-jre-headless" >&2; exit 1; }
	@java -version 2>&1 | awk -F'"' '/version/ { split($$2, v, "."); if (v[1] < 17) { print "Java 17+ is needed, found " $$2 > "/dev/stderr"; exit 1 } }'

$(STAMP): pyproject.toml operator/pyproject.toml | prereqs
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,operator]'
	$(PY) -m pip install --quiet -e ./operator
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/odradek cluster --brokers $(BROKERS) --data-dir $(DATA)

test: install lint prometheus
	$(PY) -m pytest $(PYTEST_ARGS)

# pytest exits 5 when a selection holds no test: not a failure of the code.
test-slow: install prometheus
	$(PY) -m pytest -m slow $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: install
	$(VENV)/bin/ruff check src operator/src tests bench
	$(VENV)/bin/mypy src operator/src

# Debian's prometheus package (server + promtool) for the metrics tests, `make dashboards`
# and the dev cluster's local Prometheus; installed only when missing.
prometheus:
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { \
	  echo "installing Debian's prometheus package (prometheus, promtool)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq prometheus >/dev/null; }

# Dashboards JSON and the alert rules file are generated from src/odradek/metrics.
generate-monitoring: install
	$(PY) -m odradek.metrics.generate

# Every dashboard drawn to build/dashboards/*.png from a real Prometheus (see
# tests/harness/render_demo.py for what it scrapes).
dashboards: install prometheus
	$(PY) -m tests.harness.render_demo --output build/dashboards

bench: install
	$(PY) -m bench --output bench/results

image:
	@docker info >/dev/null 2>&1 || { echo "make image needs a running Docker engine (none here)" >&2; exit 1; }
	docker build -f broker-image/Dockerfile -t odradek/broker:dev .

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
