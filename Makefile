# spark_calib — the two commands of the README, plus lint.
#   make demo   set up .venv, generate the seeded demo logs, run the three jobs (the binary one as
#               one backfill of the 14 days, then its week rollup), draw the diagrams and trends, and
#               write the HTML report demo_output/report.html (the daily binary run: it has the
#               ROC curves and the 14-day trend of the MX alert, which a rollup has not)
#   make test   set up .venv and run the whole test suite (what CI runs), in two pytest-xdist
#               workers that take whole modules (--dist loadscope: a module's fixtures are built
#               once); PYTEST_ARGS="-n 0" runs it in one process
#   make test-fast  the developer loop: the unit, engine and oracle tiers and the input zoo
#               without the tests marked slow, in two pytest-xdist workers that take whole
#               modules, as make test (tiers in tests/conftest.py; no subprocess, server or
#               simulation test; 4 to 5 minutes)
#   make lint   ruff (lint and format) and mypy
#   make bench  time spark_calib against its scan floor, MLlib and pandas on BENCH_ROWS seeded rows
#               (long: logs are generated into bench/data/ once; results go to bench/results/ and
#               docs/benchmarks.md)
# Needs Python >= 3.10 and a Java 17 runtime; everything else is installed into .venv/.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
PYTEST_ARGS ?=
BENCH_ROWS ?= 20000000

DEMO_DIR := demo_output
DEMO_LOGS := $(DEMO_DIR)/logs
DEMO_RUN_DATE := 2024-06-30
# The demo's jobs, one spark-calib command a line (its paths and dates are the ones above).
DEMO_BATCH := conf/demo_batch.txt
# Exit code 8: the run finished and wrote its tables, and an alert rule with fail: true fired
# (the demo's degradation is meant to fire one).
ALERT_EXIT := 8
JAVA := $(or $(if $(JAVA_HOME),$(wildcard $(JAVA_HOME)/bin/java)),$(shell command -v java 2>/dev/null))

.PHONY: demo test lint bench venv java clean-demo

venv: $(INSTALLED)

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps 'mcgrad==0.1.5'
	touch $@

java:
	$(if $(JAVA),,$(error java not found: install a Java 17 runtime (for example apt-get install openjdk-17-jre-headless) or set JAVA_HOME))

# The batch's first line writes the seeded logs, in the same process (one JVM start for the
# whole demo), unless they are already complete (demo-data --if-missing). Logs older than
# their generator are removed first, so they are written again.
demo: java $(INSTALLED)
	@if [ -n "$$(find $(DEMO_LOGS) -maxdepth 2 -name _SUCCESS ! -newer spark_calib_cli/demo/logs.py 2>/dev/null)" ]; then rm -rf $(DEMO_LOGS); fi
	$(BIN)/spark-calib batch $(DEMO_BATCH) || [ $$? -eq $(ALERT_EXIT) ]
	@echo
	@echo "HTML report: $(DEMO_DIR)/report.html (the binary run of $(DEMO_RUN_DATE));"
	@echo "             $(DEMO_DIR)/report_week.html (its week rollup)"
	@echo "Diagrams: $(DEMO_DIR)/reports/{binary,binary_week,multiclass}/reliability_v*.png,"
	@echo "          $(DEMO_DIR)/reports/{binary,binary_week}/trend_*.png (metrics by day and week),"
	@echo "          $(DEMO_DIR)/reports/binary/roc_v*.png,"
	@echo "          $(DEMO_DIR)/reports/{binary,binary_week,multiclass}/recalibration_v*.png (before/after the maps),"
	@echo "          $(DEMO_DIR)/reports/regression/regression_calibration_v*.png,"
	@echo "          $(DEMO_DIR)/reports/ctr/reliability_v*.png (equal-mass bins, low base rate)"
	@echo "Tables: databases calib_demo, calib_demo_multiclass, calib_demo_regression and"
	@echo "        calib_demo_ctr"
	@echo "        (./spark-warehouse, ./metastore_db)"
	@echo "Slice search (not run here): $(BIN)/spark-calib evaluate --config conf/demo_search.yaml --run-date $(DEMO_RUN_DATE)"

# make clean-demo starts over, the logs included.
clean-demo:
	rm -rf $(DEMO_DIR) spark-warehouse metastore_db derby.log

test: java $(INSTALLED)
	$(BIN)/pytest -n 2 --dist loadscope $(PYTEST_ARGS)

test-fast: java $(INSTALLED)
	$(BIN)/pytest tests/unit tests/engine tests/oracle tests/jobs/test_input_zoo.py -m 'not slow' -n 2 --dist loadscope $(PYTEST_ARGS)

bench: java $(INSTALLED)
	$(BIN)/python -m bench.run --rows $(BENCH_ROWS) --task binary

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy spark_calib spark_calib_cli
