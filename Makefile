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

.PHONY: install run test test-slow lint bench bench-quick demo image image-local e2e e2e-local \
        k8s-build k8s-up k8s-down k8s-load clean prereqs prometheus generate-monitoring dashboards \
        helm chart docs

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

test: install lint prometheus helm
	$(PY) -m pytest $(PYTEST_ARGS)

# The long suites (tests/longrun: soak, chaos); ODRADEK_SOAK_SECONDS / ODRADEK_CHAOS_SECONDS
# set their durations (defaults 1800 / 600). A selection with no test (pytest's exit 5) is a
# failure: the suites exist, so finding none means the marker or the paths broke.
test-slow: install prometheus
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

# broker, replication, protocol and storage are held to mypy --strict as well (the
# per-module overrides in pyproject.toml still apply).
STRICT_PACKAGES := src/odradek/broker src/odradek/replication src/odradek/protocol src/odradek/storage

lint: install
	$(VENV)/bin/ruff check src operator/src tests bench examples e2e charts
	$(VENV)/bin/mypy src operator/src tests
	$(VENV)/bin/mypy --strict $(STRICT_PACKAGES)

# Debian's prometheus package (server + promtool) for the metrics tests, `make dashboards`
# and the dev cluster's local Prometheus; installed only when missing.
prometheus:
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { \
	  echo "installing Debian's prometheus package (prometheus, promtool)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq prometheus >/dev/null; }

# Helm v3.22.0 (the chart tests and `make chart`): from PATH, else built once from the Go
# module proxy into the local stack's cache (e2e/local/build.sh; Go >= 1.21 needed). When it
# cannot be built the chart tests skip, saying so; `make chart` fails.
K8S_CACHE ?= $(or $(ODRADEK_K8S_CACHE),/var/cache/odradek-k8s)
HELM ?= $(or $(shell command -v helm 2>/dev/null),$(K8S_CACHE)/bin/helm)
helm:
	@command -v helm >/dev/null 2>&1 || e2e/local/build.sh helm || \
	  echo "helm could not be built (e2e/local/build.sh helm); the chart tests will skip" >&2

# Lint the chart (default and full values) and package it into build/charts/.
chart: helm
	$(HELM) lint --strict charts/odradek
	$(HELM) lint --strict charts/odradek -f charts/odradek/ci/full-values.yaml
	@mkdir -p build/charts
	$(HELM) package charts/odradek --destination build/charts

# Dashboards JSON and the alert rules file are generated from src/odradek/metrics.
generate-monitoring: install
	$(PY) -m odradek.metrics.generate

# The reference tables of docs/configuration.md and docs/compatibility.md are generated from
# the config definitions and the advertised API versions (tests/test_reference_docs.py
# fails while they are out of date); the values table of charts/odradek/README.md from the
# chart's values.yaml and schema (tests/charts/test_values_doc.py).
docs: install
	$(PY) -m odradek.reference_docs docs
	$(PY) charts/values_doc.py

# Every dashboard drawn to build/dashboards/*.png from a real Prometheus scraping three live
# brokers under a workload (DASHBOARDS_SOURCE=demo: simulated brokers and operator; see
# tests/harness/render_demo.py).
DASHBOARDS_SOURCE ?= live
dashboards: install prometheus
	$(PY) -m tests.harness.render_demo --output build/dashboards --source $(DASHBOARDS_SOURCE)

# Benchmarks (docs/benchmarks.md): JSON lines, summary.md and PNGs in bench/results.
# BENCH_ARGS e.g. "--quick", "--only bench_perf_tools bench_latency", "--skip bench_cluster".
# odradek's brokers run on the bench's own interpreter, so it must be an optimized CPython:
# a plain ./configure build (pyenv's default) costs them 14-23% more CPU per request than
# Debian's PGO+LTO python3, which the broker image runs. BENCH_PYTHON picks it (default:
# Debian's /usr/bin/python3 when it is 3.11+ with venv, else $(PYTHON)), in its own virtualenv;
# every row and summary.md record which interpreter ran (bench/interpreter.py).
BENCH_PYTHON ?= $(shell /usr/bin/python3 -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && echo /usr/bin/python3 || echo $(PYTHON))
BENCH_VENV ?= .venv-bench
BENCH_PY := $(BENCH_VENV)/bin/python
$(BENCH_VENV)/.installed: pyproject.toml | prereqs
	$(BENCH_PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install --quiet --upgrade pip
	$(BENCH_PY) -m pip install --quiet -e '.[dev,spark]'
	@touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_PY) -m bench --output bench/results $(BENCH_ARGS)

bench-quick: $(BENCH_VENV)/.installed
	$(BENCH_PY) -m bench --quick --output bench/results $(BENCH_ARGS)

# The reference Spark pipeline (examples/pipeline) against the `make run` cluster.
demo: install
	$(PY) -m examples.pipeline.demo --bootstrap-server $(BOOTSTRAP)

# Images: broker, ZooKeeper and operator, with any Docker engine and the official base images.
# `make image-local` needs no container registry: our own dockerd (e2e/local/dockerd.sh) and a
# debootstrap base (e2e/local/base-image.sh). Names: odradek/<image>:$(IMAGE_TAG), the tag
# being the chart's appVersion (charts/odradek/Chart.yaml, the one version source), which is
# what `helm install ... charts/odradek` deploys: the README's command finds the images built here.
CHART_APP_VERSION := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/odradek/Chart.yaml)
IMAGE_TAG ?= $(CHART_APP_VERSION)
BROKER_IMAGE ?= odradek/broker:$(IMAGE_TAG)
ZOOKEEPER_IMAGE ?= odradek/zookeeper:$(IMAGE_TAG)
OPERATOR_IMAGE ?= odradek/operator:$(IMAGE_TAG)
export IMAGE_TAG BROKER_IMAGE ZOOKEEPER_IMAGE OPERATOR_IMAGE

image:
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine answers at $${DOCKER_HOST:-the default socket} (make image-local starts one)" >&2; exit 1; }
	docker build -f broker-image/Dockerfile -t $(BROKER_IMAGE) .
	docker build -f zookeeper-image/Dockerfile -t $(ZOOKEEPER_IMAGE) zookeeper-image
	@if [ -f operator/pyproject.toml ]; then docker build -f operator/Dockerfile -t $(OPERATOR_IMAGE) .; \
	  else echo "operator image skipped: operator/pyproject.toml is not in this tree"; fi

image-local:
	e2e/local/images.sh

# The local Kubernetes stack (e2e/local/README.md), cached in $${ODRADEK_K8S_CACHE:-/var/cache/odradek-k8s}.
k8s-build:
	e2e/local/deps.sh
	e2e/local/build.sh all

# Only what the local stack runs (no kind: that is `make e2e`'s), as e2e/local/e2e.sh builds.
k8s-up:
	e2e/local/deps.sh
	e2e/local/build.sh etcd kube coredns helm
	e2e/local/up.sh

k8s-down:
	e2e/local/down.sh

# Copy images from the local dockerd into the stack's containerd: make k8s-load LOAD_IMAGES="a b".
# All three by default: the chart's operator (and its uninstall hook) run the operator image.
LOAD_IMAGES ?= $(BROKER_IMAGE) $(ZOOKEEPER_IMAGE) $(OPERATOR_IMAGE)
k8s-load:
	e2e/local/load-image.sh $(LOAD_IMAGES)

# End-to-end suite: on the local stack (built, started, torn down by the script), or on kind.
e2e-local: install
	PYTHON_BIN=$(CURDIR)/$(PY) e2e/local/e2e.sh $(PYTEST_ARGS)

e2e: install
	PYTHON_BIN=$(CURDIR)/$(PY) e2e/kind/e2e.sh $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
