# crawl-engine: targets a newcomer can guess.
CARGO ?= cargo

.PHONY: all build release demo demo-cluster demo-ha test fuzz-check test-it bench bench-crawl bench-peer bench-small bench-micro bench-scale bench-drain bench-polite bench-cluster bench-ha bench-otlp bench-fresh bench-api bench-sinks promtool-test fuzz fmt lint doc ci clean

all: build

# The table of targets, as README.md's "Make targets" gives it: make help-check compares the two, and checks that
# the table names every target of this Makefile.
.PHONY: help help-check
help:
	@printf '%-20s %s\n' \
		'make all' 'the default target: make build' \
		'make build' 'debug build of the workspace' \
		'make release' 'release build of crawl-engine and the test site' \
		'make demo' 'a real crawl of a generated 4-host site on 127.0.0.20-23 with demo/config.toml, no internet' \
		'make demo-cluster' 'three processes crawl the demo site through a local Redis, then their files are merged' \
		'make demo-ha' 'the same through a master, two replicas and three sentinels, the master killed half-way' \
		'make test' 'the whole test suite: alert rules, unit and integration tests, doc tests, fuzz targets compiled' \
		'make test-it' 'the integration tests alone (the real binary against loopback servers)' \
		'make fuzz-check' 'the fuzz targets type-checked on the stable toolchain (part of make test)' \
		'make promtool-test' 'the alert rules checked and unit-tested with promtool, the alertmanager config with amtool (part of make test)' \
		'make bench' 'bench-crawl, bench-peer, bench-small, bench-polite, bench-sinks and bench-micro' \
		'make bench-crawl' 'the crawl benchmark: 8 hosts x 2,600 pages, WARC output off and on' \
		'make bench-peer' 'crawl-engine against wget2 on the same plain and realistic sites' \
		'make bench-small' 'CPU per response of tiny pages, parsed inline and on parser threads, by IP and by name' \
		'make bench-polite' 'a polite crawl of 200 hosts against its politeness bound' \
		'make bench-scale' 'large frontiers (20k, 1M, 10M known URLs): memory, disk, restart time, pages/s' \
		'make bench-drain' 'resident memory before and after a queue of 200,000 URLs drains' \
		'make bench-otlp' 'the bench crawl without a trace exporter and with one, over OTLP/HTTP and OTLP/gRPC' \
		'make bench-cluster' 'the bench crawl on the embedded frontier and through Redis with 1, 2 and 3 processes; Redis memory per URL' \
		'make bench-ha' 'three processes through Redis Sentinel: replicas_ack 0 and 1, and a master killed half-way' \
		'make bench-fresh' 'continuous crawling on a changing site: freshness of the adaptive schedule, a fixed interval and wget2' \
		'make bench-api' 'the control API under a crawl at full speed: latency of status and hosts, what asking costs the crawl' \
		'make bench-sinks' 'the bench-crawl crawl (WARC on) with the JSONL alone and with Kafka, PostgreSQL and object-store sinks' \
		'make bench-micro' 'the criterion benches (link extraction, canonicalisation, frontier, spans, ...)' \
		'make fuzz' 'every fuzz target for FUZZ_SECONDS each (nightly toolchain and cargo-fuzz)' \
		'make fmt' 'format the code' \
		'make lint' 'rustfmt check and clippy with warnings as errors' \
		'make doc' 'the API documentation' \
		'make ci' 'lint, then test' \
		'make clean' 'cargo clean and every demo, bench and tool folder (never a crawl'"'"'s own files)' \
		'make help' 'this table' \
		'make help-check' 'make help against README.md'"'"'s table, and the table against the targets of the Makefile'

help-check: SHELL := /bin/bash
help-check:
	@diff -u <(sed -n 's/^| `\(make [a-z-]*\)` | \(.*\) |$$/\1\t\2/p' README.md | awk -F'\t' '{ printf "%-20s %s\n", $$1, $$2 }') \
		<($(MAKE) -s --no-print-directory help) && echo "make help and README.md agree"
	@diff -u <(sed -n 's/^\([a-z][a-z-]*\):.*/make \1/p' $(firstword $(MAKEFILE_LIST)) | sort -u) \
		<($(MAKE) -s --no-print-directory help | sed 's/  .*//; s/ *$$//' | sort -u) && echo "make help names every target"

build:
	$(CARGO) build --workspace

release:
	$(CARGO) build --release -p crawl-engine -p crawl-tests --bin crawl-engine --bin testsite

# A real crawl of a generated multi-host site on 127.0.0.x with demo/config.toml (run from .demo/); no internet needed.
demo: release
	bash tests/scripts/demo.sh

# One crawl shared by three processes through a local Redis (needs redis-server), then their files merged.
demo-cluster: release
	bash tests/scripts/demo_cluster.sh

# The same through a Redis master, two replicas and three sentinels (needs redis-server), the master killed (-9)
# half-way; the merged output is checked against the site's expected crawl.
demo-ha: release
	bash tests/scripts/demo_ha.sh

# warcio from the venv .ci/run makes, when there is one and WARCIO is not set.
export WARCIO ?= $(if $(wildcard .tools/warcio/bin/warcio),$(CURDIR)/.tools/warcio/bin/warcio,)

# Everything CI runs: the README's table of targets against make help, alert-rule tests (promtool), unit tests,
# integration tests (engine/tests/it: the binary cargo builds for them, loopback servers), and a check that the fuzz
# targets (outside the workspace) still compile.
test: help-check promtool-test fuzz-check
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

# The fuzz targets type-checked on the stable toolchain, without libFuzzer (their runs need cargo-fuzz: make fuzz).
# Not --locked: a dependency the workspace gained is added to fuzz/Cargo.lock, the versions there stay.
fuzz-check:
	$(CARGO) check --manifest-path fuzz/Cargo.toml --bins --no-default-features

# The integration tests alone.
test-it:
	$(CARGO) test -p crawl-engine --test it

# The crawl benchmark (>= 20,000 pages over >= 8 hosts, politeness off, concurrency 64), the same crawl against
# wget2 on the plain and the realistic site, and the criterion benches.
bench: bench-crawl bench-peer bench-small bench-polite bench-sinks bench-micro

bench-crawl: release
	bash tests/scripts/bench.sh

# crawl-engine and wget2 alternating on the same generated sites (installs wget2 with apt-get when missing);
# BASE_BIN=<another crawl-engine binary> runs that build too.
bench-peer: release
	bash tests/scripts/bench_peer.sh

# What a small page costs: the bench-crawl crawl on ~600-byte pages, with small pages parsed on the fetcher's thread
# (the default) and on the parser threads, alternating; CALLGRIND=1 also counts instructions per response,
# PERF_STAT=1 context switches and page faults, BASE_BIN=<another crawl-engine binary> runs that build too.
bench-small: release
	bash tests/scripts/bench_small.sh

# Large frontiers (20k, 1M, 10M known URLs on the wide-mode test site): peak RSS, disk per known URL, time to the
# first request after kill -9, pages/s at that size. SIZES="20000 1000000" skips 10M.
bench-scale: release
	bash tests/scripts/bench_scale.sh

# A polite crawl (200 hosts x 25 pages, 200 ms per host) against its politeness bound, and gaps below the delay.
bench-polite: release
	bash tests/scripts/bench_polite.sh

# Resident memory before and after a queue of 200,000 URLs drains while the crawl goes on.
bench-drain: release
	bash tests/scripts/bench_drain.sh

# The crawl of bench-crawl without a trace exporter and with one (sample_ratio 1) sending to a loopback OTLP sink
# (CALLGRIND=1: also the instructions a response of both, under callgrind).
bench-otlp: release
	$(CARGO) build --release -p crawl-tests --bin otlpsink
	bash tests/scripts/bench_otlp.sh

# The same crawl on the embedded frontier and through a local Redis with 1, 2 and 3 processes (needs redis-server),
# then the Redis store's memory per pending and per done URL (MEM_SIZES, MEM_HOSTS: see the script).
bench-cluster: release
	CARGO="$(CARGO)" bash tests/scripts/bench_cluster.sh

# Replica-acknowledged writes and failover through Redis Sentinel: pages/s, CPU and Redis commands per page with
# replicas_ack 0 and 1, and the time from the master's death to the first record after it (docs/BENCHMARKS.md).
bench-ha: release
	bash tests/scripts/bench_ha.sh

# Continuous crawling on a changing site (time scale 60: 1 min, 10 min, 1 h periods in 1, 10, 60 real seconds):
# crawl-engine with the adaptive revisit schedule for WINDOW_S, then with a fixed interval at the same request budget,
# then wget2 -r -N at that interval; freshness, age, requests per page and 304s from the site's truth (REPEATS).
bench-fresh: release
	$(CARGO) build --release -p crawl-tests --bin freshness
	bash tests/scripts/bench_fresh.sh

# The control API while the bench-crawl crawl runs at full speed: latency of GET /v1/status and /v1/hosts, and the
# crawl's pages/s with and without a client asking (REPEATS, alternating).
bench-api: release
	bash tests/scripts/bench_api.sh

# What the sinks cost: the bench-crawl crawl with WARC on, with the JSONL alone and with a Kafka topic (tansu), a
# PostgreSQL table (its own initdb cluster) and an S3 bucket (moto) as sinks, alternating (REPEATS); needs the
# servers .ci/run installs.
bench-sinks: release
	$(CARGO) build --release -p crawl-tests --bin kafkabroker
	bash tests/scripts/bench_sinks.sh

bench-micro:
	$(CARGO) bench -p crawl-core -p crawl-store-embedded -p crawl-actors -p crawl-observability

# Alert rules of the observability stack: syntax check plus promtool unit tests (observability/deploy).
PROMTOOL ?= promtool
AMTOOL ?= amtool
promtool-test:
	@if ! command -v $(PROMTOOL) >/dev/null 2>&1; then \
		if [ "$$CI" = true ]; then echo "promtool not found: apt-get install prometheus (CI=true requires it)" >&2; exit 1; fi; \
		echo "note: skipping the alert-rule tests: promtool not found (apt-get install prometheus)" >&2; \
	else \
		$(PROMTOOL) check rules observability/deploy/alerts.yml && \
		$(PROMTOOL) test rules observability/deploy/alerts_test.yml; \
	fi
	@if ! command -v $(AMTOOL) >/dev/null 2>&1; then \
		if [ "$$CI" = true ]; then echo "amtool not found: apt-get install prometheus-alertmanager (CI=true requires it)" >&2; exit 1; fi; \
		echo "note: skipping the alertmanager config check: amtool not found (apt-get install prometheus-alertmanager)" >&2; \
	else \
		$(AMTOOL) check-config observability/deploy/alertmanager.yml; \
	fi

# Every fuzz target in fuzz/ (cargo fuzz, nightly toolchain) for FUZZ_SECONDS each, one after the other, one process,
# starting from the seeds in fuzz/corpus/<target>/; a crash stops the run and leaves its input in fuzz/artifacts/.
# Not part of `make test`. FUZZ_TARGETS="robots canon" runs some of them.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= $(notdir $(basename $(wildcard fuzz/fuzz_targets/*.rs)))
fuzz:
	@command -v cargo-fuzz >/dev/null 2>&1 || { echo "cargo-fuzz not found: cargo install cargo-fuzz (needs the nightly toolchain)" >&2; exit 1; }
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		$(CARGO) +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 || exit 1; \
	done

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

doc:
	$(CARGO) doc --workspace --no-deps

ci: lint test

# What the repository's scripts make, never the files of a crawl run with ./config.toml (crawl-data/, crawl.jsonl,
# warc/): those are a user's.
clean:
	$(CARGO) clean
	rm -rf .demo .demo-cluster .bench .bench-peer .bench-scale .bench-drain .bench-polite .bench-cluster .bench-otlp .demo-ha .bench-ha .bench-fresh .bench-api .bench-sinks .tools
