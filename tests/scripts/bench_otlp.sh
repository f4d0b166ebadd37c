#!/usr/bin/env bash
# make bench-otlp: the crawl of make bench-crawl (8 hosts x 2,600 pages on 127.0.0.30-37, politeness off,
# concurrency 64) without a trace exporter and with one (sample_ratio 1, every URL one trace) sending to otlpsink, a
# loopback OTLP/gRPC receiver that only counts spans (walking the protobuf, decoding no span: it stands for a
# collector on another machine and takes little of the two cores the crawl runs on). Alternates REPEATS runs of
# each (default 3, in ABBA order); prints each run's CPU seconds per 1,000 pages and peak RSS, the medians, the
# ratios (exporter / none), and per run the spans the sink received, the spans the engine counted dropped (its
# "trace exporter shut down" line at exit) and the sink's CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
out=.bench-otlp
rm -rf "$out" && mkdir -p "$out"
"$bin/testsite" --hosts 8 --pages 2600 --first-octet 30 --page-bytes 4000 --seeds-file "$out/seeds" --all-seeds \
  > "$out/testsite.log" 2>&1 &
site=$!
sink=
trap 'kill $site ${sink:-} 2>/dev/null || true' EXIT
wait_for "$out/seeds"
read_seeds "$out/seeds"
config() {
  bench_config "" "warn,crawl_observability::trace=info"
  if [ -n "$1" ]; then
    printf 'otlp_endpoint = "%s"\nsample_ratio = 1.0\n' "$1"
  fi
}
for i in $(seq 1 "$REPEATS"); do
  # ABBA order (none first in odd runs, OTLP first in even ones), so that whatever favours the first or the second
  # crawl of a pair falls on both modes alike.
  order="none otlp"
  if [ $((i % 2)) -eq 0 ]; then order="otlp none"; fi
  for mode in $order; do
    rm -rf "$out/crawl-data" "$out/crawl.jsonl"
    endpoint=
    if [ "$mode" = otlp ]; then
      "$bin/otlpsink" > "$out/sink-$i.log" 2>&1 &
      sink=$!
      for _ in $(seq 1 100); do grep -q ready "$out/sink-$i.log" 2>/dev/null && break; sleep 0.05; done
      endpoint=$(sed -n 's/.*endpoint=\([^ ]*\).*/\1/p' "$out/sink-$i.log")
    fi
    config "$endpoint" > "$out/config.toml"
    OTEL_EXPORTER_OTLP_ENDPOINT= ${CRAWL_PREFIX:-} "$bin/crawl-engine" --config "$out/config.toml" --no-progress \
      --summary-json "$out/summary-$mode-$i.json" "${seeds[@]}" > /dev/null 2> "$out/engine-$mode-$i.log"
    if [ "$mode" = otlp ]; then
      kill -TERM "$sink"; wait "$sink" || true
      sink=
    fi
  done
done
kill $site; wait $site 2>/dev/null || true
trap - EXIT
REPEATS="$REPEATS" OUT="$out" python3 - <<'PY'
import json, os, re, statistics
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
PY
