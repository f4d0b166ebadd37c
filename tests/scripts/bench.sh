#!/usr/bin/env bash
# make bench-crawl: 8 hosts x 2,600 pages (>= 20,000 pages) on 127.0.0.30-37, politeness off, concurrency 64,
# durable embedded frontier. The same crawl runs with WARC output off and on, alternating, REPEATS times each
# (default 3); prints each run's pages/s, CPU seconds per 1,000 pages and peak RSS, then the medians, the ratios
# (WARC on / off) and the archive's bytes per page.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
rm -rf .bench && mkdir -p .bench
"$bin/testsite" --hosts 8 --pages 2600 --first-octet 30 --page-bytes 4000 --seeds-file .bench/seeds --all-seeds \
  > .bench/testsite.log 2>&1 &
site=$!
trap 'kill $site 2>/dev/null || true' EXIT
wait_for .bench/seeds
read_seeds .bench/seeds
for i in $(seq 1 "$REPEATS"); do
  for mode in off on; do
    rm -rf .bench/crawl-data .bench/crawl.jsonl .bench/warc
    if [ "$mode" = on ]; then bench_config warc > .bench/config.toml; else bench_config > .bench/config.toml; fi
    ${CRAWL_PREFIX:-} "$bin/crawl-engine" --config .bench/config.toml --no-progress \
      --summary-json ".bench/summary-$mode-$i.json" "${seeds[@]}" > /dev/null
    if [ "$mode" = on ]; then du -sb .bench/warc | cut -f1 > ".bench/warc-bytes-$i"; fi
  done
done
kill $site; wait $site 2>/dev/null || true
trap - EXIT
REPEATS="$REPEATS" python3 - <<'PY'
import json, os, statistics
n = int(os.environ["REPEATS"])
rows = {"off": [], "on": []}
for i in range(1, n + 1):
    for mode in ("off", "on"):
        s = json.load(open(f".bench/summary-{mode}-{i}.json"))
        pages = max(s["fetched"], 1)
        cpu = (s["cpu_seconds"] or 0) * 1000 / pages
        rows[mode].append((s["pages_per_sec"], cpu, s["peak_rss_bytes"] / 1048576, s["fetched"]))
        print(f"bench: warc {mode:3} run {i}: {s['fetched']} pages in {s['elapsed_s']:.2f}s = "
              f"{s['pages_per_sec']:.0f} pages/s, {cpu:.3f} CPU s per 1000 pages, peak RSS {rows[mode][-1][2]:.1f} MiB")
med = {m: [statistics.median(r[k] for r in rows[m]) for k in range(4)] for m in rows}
warc = statistics.median(int(open(f".bench/warc-bytes-{i}").read()) for i in range(1, n + 1))
for m in ("off", "on"):
    print(f"bench: median warc {m:3}: {med[m][0]:.0f} pages/s, {med[m][1]:.3f} CPU s per 1000 pages, "
          f"peak RSS {med[m][2]:.1f} MiB")
print(f"bench: warc on / off: pages/s {med['on'][0] / med['off'][0]:.2f}, CPU per page {med['on'][1] / med['off'][1]:.2f}; "
      f"archive {warc / med['on'][3]:.0f} bytes per page")
PY
