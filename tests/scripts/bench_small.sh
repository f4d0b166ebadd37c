#!/usr/bin/env bash
# make bench-small: what a small page costs end to end. The crawl of make bench-crawl (8 hosts x 2,600 pages on
# 127.0.0.30-37, politeness off, concurrency 64, durable frontier and JSONL) on pages of ~600 bytes (testsite
# --page-bytes 190 --links 3 --no-gzip), REPEATS times (default 4) with the default config and with
# `parser.inline_max_bytes = 0` (every page handed to a parser thread), and with the default config on the same
# site with named hosts (testsite --host-names on 127.0.0.40-47, `h{i}.test` in the crawler's `[resolver] hosts`:
# every URL's host is looked up, as in a crawl of the web), alternating in ABBA order. Prints each run's CPU
# microseconds per response (user + system of the crawler), wall time and peak RSS, the medians and the ratios.
# With BASE_BIN (another crawl-engine binary, e.g. an earlier release) a fourth mode, "base", crawls the IP-host site
# with that build and the default config, and the ratio of this build to it is printed.
# With PERF_STAT=1 every crawl runs under `perf stat` (software events), and the medians of its context switches,
# CPU migrations and page faults a response are printed beside the CPU.
# With CALLGRIND=1 it then counts instructions per response under valgrind --tool=callgrind for both modes on a
# smaller site (4 hosts x 1,500 pages): a count that does not move with the load of the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-4}"
out=.bench-small
rm -rf "$out" && mkdir -p "$out"
site=
named=
trap 'kill ${site:-} ${named:-} 2>/dev/null || true' EXIT

# serve NAME OCTET HOSTS PAGES [ARGS...]: a tiny-page test site on 127.0.0.OCTET onwards (testsite ARGS added), its
# pid in $served and its seeds in $seeds.
serve() {
  local name=$1 octet=$2 hosts=$3 pages=$4
  shift 4
  rm -f "$out/seeds-$name"
  "$bin/testsite" --hosts "$hosts" --pages "$pages" --first-octet "$octet" --page-bytes 190 --links 3 --no-gzip \
    "$@" --seeds-file "$out/seeds-$name" --all-seeds > "$out/testsite-$name.log" 2>&1 &
  served=$!
  wait_for "$out/seeds-$name"
  read_seeds "$out/seeds-$name"
}

start_site() { # HOSTS PAGES
  serve ip 30 "$1" "$2"
  site=$served
  ip_seeds=("${seeds[@]}")
}

# The same site with named hosts, h0.test ... on 127.0.0.40 ...
start_named() { # HOSTS PAGES
  serve named 40 "$1" "$2" --host-names
  named=$served
  named_seeds=("${seeds[@]}")
  named_hosts=$(resolver_hosts "$1" 40)
}

config() { # MODE
  bench_config
  if [ "$1" = threads ]; then printf '[parser]\ninline_max_bytes = 0\n'; fi
  if [ "$1" = names ]; then printf '%s\n' "$named_hosts"; fi
}

# crawl MODE TAG [PREFIX...]: one crawl from a fresh data_dir.
crawl() {
  local mode=$1 tag=$2
  shift 2
  rm -rf "$out/crawl-data" "$out/crawl.jsonl"
  config "$mode" > "$out/config.toml"
  if [ "$mode" = names ]; then seeds=("${named_seeds[@]}"); else seeds=("${ip_seeds[@]}"); fi
  "$@" "$(crawler "$mode")" --config "$out/config.toml" --no-progress --summary-json "$out/summary-$tag.json" \
    "${seeds[@]}" > /dev/null 2> "$out/engine-$tag.log"
}

start_site 8 2600
start_named 8 2600
for i in $(seq 1 "$REPEATS"); do
  for mode in $(abba "$i" inline threads names ${BASE_BIN:+base}); do
    prefix=()
    if [ "${PERF_STAT:-0}" = 1 ]; then
      prefix=(perf stat -x, -o "$out/perf-$mode-$i.csv" -e task-clock,context-switches,cpu-migrations,page-faults)
    fi
    crawl "$mode" "$mode-$i" "${prefix[@]}"
  done
done
kill "$site" "$named"; wait "$site" "$named" 2>/dev/null || true
site=
named=

if [ "${CALLGRIND:-0}" = 1 ]; then callgrind_crawls bench-small 4 1500 cg-%s inline threads; fi
trap - EXIT

REPEATS="$REPEATS" OUT="$out" PERF_STAT="${PERF_STAT:-0}" BASE="${BASE_BIN:+1}" CALLGRIND="${CALLGRIND:-0}" python3 - <<'PY'
import json, os, re, statistics
n, out = int(os.environ["REPEATS"]), os.environ["OUT"]
modes = ("inline", "threads", "names") + (("base",) if os.environ["BASE"] else ())
rows = {m: [] for m in modes}
names = {"inline": "default (small pages parsed on the fetcher's thread)",
         "threads": "inline_max_bytes = 0 (every page to a parser thread)",
         "names": "default, hosts by name (a lookup for every URL)",
         "base": "BASE_BIN, default config"}
for i in range(1, n + 1):
    for mode in modes:
        s = json.load(open(f"{out}/summary-{mode}-{i}.json"))
        resp = max(s["fetched"], 1)
        us = (s["cpu_seconds"] or 0) * 1e6 / resp
        rows[mode].append((us, s["elapsed_s"], s["peak_rss_bytes"] / 1048576, resp))
        print(f"bench-small: {mode:7} run {i}: {resp} responses in {s['elapsed_s']:.2f}s, "
              f"{us:.1f} us of CPU a response, peak RSS {rows[mode][-1][2]:.1f} MiB")
med = {m: [statistics.median(r[k] for r in rows[m]) for k in range(3)] for m in rows}
for m in modes:
    print(f"bench-small: median {names[m]}: {med[m][0]:.1f} us of CPU a response, wall {med[m][1]:.2f}s, "
          f"peak RSS {med[m][2]:.1f} MiB")
print(f"bench-small: default / inline_max_bytes = 0: CPU a response {med['inline'][0] / med['threads'][0]:.2f}, "
      f"wall {med['inline'][1] / med['threads'][1]:.2f}")
print(f"bench-small: hosts by name / by IP: CPU a response {med['names'][0] / med['inline'][0]:.2f}, "
      f"wall {med['names'][1] / med['inline'][1]:.2f}")
if os.environ["PERF_STAT"] == "1":
    events = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
    for m in modes:
        per = {e: [] for e in events}
        for i in range(1, n + 1):
            resp = rows[m][i - 1][3]
            for line in open(f"{out}/perf-{m}-{i}.csv"):
                f = line.strip().split(",")
                if len(f) > 2 and f[2] in per and f[0] not in ("<not counted>", "<not supported>"):
                    # task-clock is in ms: us a response
                    per[f[2]].append(float(f[0]) * (1000 if f[2] == "task-clock" else 1) / resp)
        got = ", ".join(f"{e} {statistics.median(v):.3f}" for e, v in per.items() if v)
        print(f"bench-small: perf stat median a response, {names[m]}: {got} (task-clock in us)")
if "base" in med:
    print(f"bench-small: this build / BASE_BIN: CPU a response {med['inline'][0] / med['base'][0]:.2f}, "
          f"wall {med['inline'][1] / med['base'][1]:.2f}, peak RSS {med['inline'][2] / med['base'][2]:.2f}")
if os.environ["CALLGRIND"] == "1":
    for mode in ("inline", "threads"):
        s = json.load(open(f"{out}/summary-cg-{mode}.json"))
        total = None
        for line in open(f"{out}/callgrind-{mode}.out"):
            m = re.match(r"^(summary|totals): (\d+)", line)
            if m:
                total = int(m.group(2))
                break
        resp = max(s["fetched"], 1)
        print(f"bench-small: callgrind {names[mode]}: {total / resp:,.0f} instructions a response "
              f"({resp} responses)")
PY
