# obs: two commands on a fresh clone, `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-stamp
WANDB_WRITERS := 0.19.11 0.31.0

.PHONY: install dev wheel spark browser demo test test-suite test-spark test-fast lint typecheck exposures bench clean

# What running obs needs (obs, its engines, the serve extra): about 700 MB, and the
# project compiled for obs's executor into the per-user cache. The stamps are rebuilt
# when the project's dependencies change.
install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -e ".[serve]"
	@test -x $(BIN)/obs && test -x $(BIN)/dbt && test -x $(BIN)/duckdb
	# the plan obs's executor runs, compiled now (about 10 s) so the first build does not wait
	$(BIN)/obs build --compile-only
	touch $(STAMP)

# The wheel (dist/obs_warehouse-*.whl), with the plan obs's executor runs compiled into
# it (setup.py; about 10 s): built in this environment, where dbt can be imported, so the
# first build after a `pip install` of it does not wait either.
wheel: $(STAMP)
	rm -rf build
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation -w dist .
	rm -rf build

# The test toolchain on top: pytest, the linters, the tracker writers the tests write
# files with (torch, transformers, W&B, TensorBoard, MLflow), Playwright, kaleido.
dev: $(DEV_STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# W&B writers of two SDK releases, beside the reader: the tests write offline runs with each
	for v in $(WANDB_WRITERS); do \
		$(BIN)/python -m pip install --quiet --no-warn-conflicts --target $(VENV)/writers/wandb-$$v wandb==$$v || exit 1; \
	done
	touch $(DEV_STAMP)

# The spark extra (pyspark, dbt-spark's session method) for `--target spark`
# and its tests: about 450 MB. Spark itself needs a Java runtime (17 or later).
SPARK_STAMP := $(VENV)/.spark-stamp
spark: $(SPARK_STAMP)

$(SPARK_STAMP): $(DEV_STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,spark]"
	touch $(SPARK_STAMP)

# The browser tests and PNG export use Debian's Chromium; install it when missing.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

browser: $(CHROMIUM)

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

demo: install
	$(BIN)/obs demo
	@echo "browse it: $(BIN)/obs serve, then open http://127.0.0.1:8765/"

# The linters and the type checker first (about a minute), then the suite on
# TEST_WORKERS processes (pytest-xdist; a test module's tests stay on one worker,
# so its shared warehouse is built once). TEST_WORKERS=0 runs it in one process.
# Then the Spark parity (test-spark) where a Java runtime is on the PATH. Each
# stage's time is printed at the end, and pytest's slowest tests after each run,
# so a stage that grew is seen.
TEST_WORKERS ?= 2
test: dev browser
	@times=$$(mktemp); status=0; \
	for stage in lint typecheck test-suite test-spark; do \
		if [ $$stage = test-spark ] && ! command -v java >/dev/null 2>&1; then \
			echo "test-spark skipped: no java on the PATH (Spark needs a Java 17 runtime)"; \
			echo "test-spark   skipped" >> $$times; continue; \
		fi; \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$stage || status=$$?; \
		printf '%-12s %4ss%s\n' $$stage $$(( $$(date +%s) - start )) \
			"$$([ $$status -eq 0 ] || echo '  failed')" >> $$times; \
		[ $$status -eq 0 ] || break; \
	done; \
	echo "make test, the time of each stage:"; cat $$times; rm -f $$times; exit $$status

test-suite: dev browser
	$(BIN)/python -m pytest -m "not spark" --durations=15 $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# The dbt project on a local Spark session (one per test module, in one
# process: a session takes a core and a few GB) against the DuckDB build.
test-spark: spark
	$(BIN)/python -m pytest -m spark tests/spark --durations=15

test-fast: dev
	$(BIN)/python -m pytest -m "not integration and not slow"

# sqlfluff (.sqlfluff): its dbt templater compiles each model against a throwaway warehouse
# and lake (some macros query them), so nothing lands in lake/, warehouse/ or target/.
# The macros are linted inside the models dbt compiles them into (the dbt templater
# skips a file that holds only macros, so macros/ is not listed). The queries of
# reports/queries (every query a dashboard, served page, console answer or export runs)
# are plain DuckDB SQL with $name parameters, not models: the same rules through the
# placeholder templater (reports/queries/.sqlfluff, and why it needs --config).
lint: dev
	$(BIN)/ruff check ingest reports cli tests bench monitor runner demo core live serve
	$(BIN)/ruff format --check ingest reports cli tests bench monitor runner demo core live serve
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		OBS_WAREHOUSE=$$tmp/obs.duckdb OBS_LAKE=$$tmp/lake \
		DBT_TARGET_PATH=$$tmp/target DBT_LOG_PATH=$$tmp/logs \
		$(BIN)/sqlfluff lint models --processes 2
	$(BIN)/sqlfluff lint reports/queries --config reports/queries/.sqlfluff

# mypy on the import names (obs.ingest, ...): a folder of links maps them onto the checkout.
TYPECHECK := $(VENV)/typecheck
typecheck: dev
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/obs
	for p in ingest reports cli monitor runner demo core live serve; do ln -s $(CURDIR)/$$p $(TYPECHECK)/obs/$$p; done
	cd $(TYPECHECK) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
		-p obs.ingest -p obs.reports -p obs.cli -p obs.monitor -p obs.runner -p obs.demo -p obs.core -p obs.live -p obs.serve

# The dbt exposures of every consumer of the warehouse (models/reports/_reports__exposures.yml),
# written from the chart registry (reports/charts.py) and reports/exposures.py, each on what
# its queries read; tests/unit/test_exposures.py fails while they are out of date.
exposures: install
	$(BIN)/python -m obs.reports.exposures --write

bench: dev
	$(BIN)/python bench/run.py

clean:
	rm -rf lake warehouse target logs demo_data bench/out reports_out derby.log metastore_db spark-warehouse
