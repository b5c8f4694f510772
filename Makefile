# The two commands: `make demo` (the main job) and `make test` (the tests). Both set up first; only
# `make test` sets up the compose stack too (setup.sh --stack: its tools, its images, the project's
# Docker engine), for the stack's test: no other command touches Docker.
.PHONY: setup demo test lint bench histories proto airflow ui
PY := .venv/bin/python
WWW := plugins/lakefs_gc_airflow/gc_page/www

setup:
	@bash scripts/setup.sh

# LAKEFS=real: against lakeFS 1.84 itself (the server the set-up builds) instead of the emulator.
# ARGS=--keep: leave lakeFS running after the run, with lakefs-gc commands to try on it (Ctrl-C stops it).
demo: setup
	@bash scripts/demo.sh $(if $(LAKEFS),--lakefs $(LAKEFS)) $(ARGS)

# ruff and mypy (scripts/lint.sh): the gates make test runs first, and pre-commit (.pre-commit-config.yaml)
lint: setup
	@bash scripts/lint.sh

# The GC page's UI tests (vitest in jsdom: www/test/) after the gates: setup has installed www's
# node_modules (npm ci, when its package-lock.json is newer). Then pytest: four workers on two cores,
# one test file each at a time: the end-to-end files mostly wait (Airflow, clocks, servers), so they
# overlap with the Spark-bound ones; the longest files first (tests/conftest.py). Module-scoped
# servers stay per file.
test:
	@bash scripts/setup.sh --stack
	@bash scripts/lint.sh
	@cd $(WWW) && npm test
	@$(PY) -m pytest -q -n 4 --dist loadfile --no-loadscope-reorder --durations=25

# Airflow 3 of our own with the GC DAGs, on 127.0.0.1, until Ctrl-C (settings: config/airflow.env).
# LAKEFS=real: lakeFS 1.84 itself too, run in var/airflow/lakefs and seeded with sample-repo (--lakefs real).
airflow: setup
	@.venv/bin/python -m lakefs_sandbox.local_airflow $(if $(LAKEFS),--lakefs $(LAKEFS)) $(ARGS)

bench: setup
	@$(PY) -m bench

# Many random histories in one command (issue 28: at least 1,000): HISTORIES on the emulator (a
# quarter on s3://, CLOUD more each on Azure and GCS), REAL per blockstore on lakeFS itself; on
# every one, the full staged check judges the fast one.
HISTORIES ?= 1000
CLOUD ?= 50
REAL ?= 40
histories: setup
	@LAKEFS_GC_HISTORIES=$(HISTORIES) LAKEFS_GC_CLOUD_HISTORIES=$(CLOUD) LAKEFS_GC_REAL_HISTORIES=$(REAL) \
		$(PY) -m pytest -q -s -p no:randomly tests/runs/test_random_histories.py tests/real_lakefs/test_histories.py \
		-k "lose_nothing_live or lose_nothing_and_leave_nothing"

# Regenerate include/lakefs_gc/lakefs/proto/*_pb2.py (needs grpcio-tools; not part of setup).
proto:
	cd include/lakefs_gc/lakefs/proto && python -m grpc_tools.protoc -I. --python_out=. catalog.proto committed.proto

# Rebuild the GC page's bundle (plugins/lakefs_gc_airflow/gc_page/www/dist, committed; needs Node 20.19+
# and npm; not part of setup): after a change to www/src, package.json or the build's configuration.
# The build type-checks src/ and the UI tests (www/test/); `npm test` in www runs those tests.
ui:
	cd $(WWW) && npm ci --no-audit --no-fund && npm run build
