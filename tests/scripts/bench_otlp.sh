#!/usr/bin/env bash
# make bench-otlp: the crawl of make bench-crawl (8 hosts x 2,600 pages on 127.0.0.30-37, politeness off,
# concurrency 64) without a trace exporter and with one (sample_ratio 1, every URL one trace) sending to otlpsink, a
# loopback OTLP/gRPC receiver that only counts spans (walking the protobuf, decoding no span: it stands for a
# collector on another machine and takes little of the two cores the crawl runs on). Alternates REPEATS runs of
# each (default 3, in ABBA order); prints each run's CPU seconds per 1,000 pages and peak RSS, the medians, the
# ratios (exporter / none), and per run the spans the sink received, the spans the engine counted dropped (its
# "trace exporter shut down" line at exit) and the sink's CPU, and the median of the per-pair CPU ratios. With
# CALLGRIND=1 it then counts instructions per response under valgrind --tool=callgrind for both modes on a smaller
# site (2 hosts x 1,500 pages), whole and outside redb's commit (whose cost follows the size of the group commits,
# and so the timing): a count that does not move with the load of the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
out=.bench-otlp
rm -rf "$out" && mkdir -p "$out"
site=
sink=
trap 'kill ${site:-} ${sink:-} 2>/dev/null || true' EXIT
start_site() { # HOSTS PAGES
  rm -f "$out/seeds"
  "$bin/testsite" --hosts "$1" --pages "$2" --first-octet 30 --page-bytes 4000 --seeds-file "$out/seeds" \
    --all-seeds > "$out/testsite.log" 2>&1 &
  site=$!
  wait_for "$out/seeds"
  read_seeds "$out/seeds"
}
config() {
  bench_config "" "warn,crawl_observability::trace=info"
  if [ -n "$1" ]; then
    printf 'otlp_endpoint = "%s"\nsample_ratio = 1.0\n' "$1"
  fi
}
# crawl MODE TAG [PREFIX...]: one crawl from a fresh data_dir, with a fresh sink in mode otlp.
crawl() {
  local mode=$1 tag=$2 endpoint=
  shift 2
  rm -rf "$out/crawl-data" "$out/crawl.jsonl"
  if [ "$mode" = otlp ]; then
    "$bin/otlpsink" > "$out/sink-$tag.log" 2>&1 &
    sink=$!
    for _ in $(seq 1 100); do grep -q ready "$out/sink-$tag.log" 2>/dev/null && break; sleep 0.05; done
    endpoint=$(sed -n 's/.*endpoint=\([^ ]*\).*/\1/p' "$out/sink-$tag.log")
  fi
  config "$endpoint" > "$out/config.toml"
  OTEL_EXPORTER_OTLP_ENDPOINT= "$@" "$bin/crawl-engine" --config "$out/config.toml" --no-progress \
    --summary-json "$out/summary-$mode-$tag.json" "${seeds[@]}" > /dev/null 2> "$out/engine-$mode-$tag.log"
  if [ "$mode" = otlp ]; then
    kill -TERM "$sink"; wait "$sink" || true
    sink=
  fi
}
start_site 8 2600
for i in $(seq 1 "$REPEATS"); do
  # shellcheck disable=SC2086 # CRAWL_PREFIX is a command line (perf stat ..., say), split on purpose.
  for mode in $(abba "$i" none otlp); do crawl "$mode" "$i" ${CRAWL_PREFIX:-}; done
done
kill "$site"; wait "$site" 2>/dev/null || true
site=
if [ "${CALLGRIND:-0}" = 1 ]; then callgrind_crawls bench-otlp 2 1500 cg none otlp; fi
trap - EXIT
REPEATS="$REPEATS" OUT="$out" CALLGRIND="${CALLGRIND:-0}" python3 - <<'PY'
import json, os, re, statistics, subprocess
n, out = int(os.environ["REPEATS"]), os.environ["OUT"]
rows = {"none": [], "otlp": []}
for i in range(1, n + 1):
    for mode in ("none", "otlp"):
        s = json.load(open(f"{out}/summary-{mode}-{i}.json"))
        pages = max(s["fetched"], 1)
        cpu = (s["cpu_seconds"] or 0) * 1000 / pages
        rss = s["peak_rss_bytes"] / 1048576
        rows[mode].append((cpu, rss, s["pages_per_sec"]))
        extra = ""
        if mode == "otlp":
            sink_log = open(f"{out}/sink-{i}.log").read()
            got = re.search(r"received spans=(\d+)", sink_log)
            sink_cpu = re.search(r"cpu_s=([\d.]+)", sink_log)
            ends = [json.loads(l) for l in open(f"{out}/engine-{mode}-{i}.log")
                    if "trace exporter shut down" in l]
            extra = (f", spans received {got.group(1) if got else '?'} "
                     f"({int(got.group(1)) / pages:.1f} per page)" if got else ", spans received ?")
            extra += f", dropped {ends[-1]['dropped'] if ends else '?'}"
            extra += f", sink CPU {sink_cpu.group(1) if sink_cpu else '?'} s"
        print(f"bench-otlp: {mode:4} run {i}: {s['fetched']} pages in {s['elapsed_s']:.2f}s, "
              f"{cpu:.3f} CPU s per 1000 pages, peak RSS {rss:.1f} MiB{extra}")
med = {m: [statistics.median(r[k] for r in rows[m]) for k in range(3)] for m in rows}
for m in ("none", "otlp"):
    print(f"bench-otlp: median {m:4}: {med[m][0]:.3f} CPU s per 1000 pages, peak RSS {med[m][1]:.1f} MiB, "
          f"{med[m][2]:.0f} pages/s")
print(f"bench-otlp: otlp / none: CPU per page {med['otlp'][0] / med['none'][0]:.3f}, "
      f"peak RSS +{med['otlp'][1] - med['none'][1]:.1f} MiB, pages/s {med['otlp'][2] / med['none'][2]:.2f}")
pairs = [o[0] / x[0] for x, o in zip(rows["none"], rows["otlp"]) if x[0] > 0]
if pairs:
    print(f"bench-otlp: CPU per page, median of the {len(pairs)} pairs' ratios: {statistics.median(pairs):.3f} "
          f"(from {min(pairs):.3f} to {max(pairs):.3f})")
if os.environ["CALLGRIND"] == "1":
    counts = {}
    for mode in ("none", "otlp"):
        s = json.load(open(f"{out}/summary-{mode}-cg.json"))
        resp = max(s["fetched"], 1)
        path = f"{out}/callgrind-{mode}.out"
        total = commit = 0
        for line in open(path):
            m = re.match(r"^(summary|totals): (\d+)", line)
            if m:
                total = int(m.group(2))
                break
        # redb's commit, inclusive: what the group commits cost (their number follows the timing).
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", path],
                             capture_output=True, text=True).stdout
        for line in ann.splitlines():
            if "WriteTransaction::commit " in line:
                commit = int(line.split()[0].replace(",", ""))
                break
        counts[mode] = (total / resp, (total - commit) / resp)
        print(f"bench-otlp: callgrind {mode}: {total / resp:,.0f} instructions a response, "
              f"{(total - commit) / resp:,.0f} outside redb's commit ({resp} responses)")
    for k, what in ((0, "whole"), (1, "outside redb's commit")):
        added = counts["otlp"][k] - counts["none"][k]
        print(f"bench-otlp: callgrind, the exporter adds ({what}): {added:,.0f} instructions a response, "
              f"{100 * added / counts['none'][k]:+.1f} %")
PY
