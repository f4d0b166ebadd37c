#!/usr/bin/env bash
# make bench-crawl: 8 hosts x 2,600 pages (>= 20,000 pages) on 127.0.0.30-37, politeness off, concurrency 64,
# durable embedded frontier; prints pages/s, CPU seconds per 1,000 pages and peak RSS of the crawler.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
rm -rf .bench && mkdir -p .bench
"$bin/testsite" --hosts 8 --pages 2600 --first-octet 30 --page-bytes 4000 --seeds-file .bench/seeds --all-seeds \
  > .bench/testsite.log 2>&1 &
site=$!
trap 'kill $site 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s .bench/seeds ] && break; sleep 0.1; done
seeds=()
while read -r s; do seeds+=(--seed "$s"); done < .bench/seeds
cat > .bench/config.toml <<TOML
[crawl]
max_depth = 1000
[politeness]
per_host_concurrency = 64
min_delay_ms = 0
[fetch]
concurrency = 64
[frontier]
data_dir = "crawl-data"
[output]
jsonl = "crawl.jsonl"
[security]
allow_private_networks = true
[observability]
log_level = "warn"
TOML
${CRAWL_PREFIX:-} "$bin/crawl-engine" --config .bench/config.toml --no-progress --summary-json .bench/summary.json "${seeds[@]}"
kill $site; wait $site 2>/dev/null || true
trap - EXIT
python3 - <<'PY'
import json
s = json.load(open(".bench/summary.json"))
pages = s["fetched"]
cpu = s["cpu_seconds"] or 0
print(f"bench: {pages} pages fetched in {s['elapsed_s']:.2f}s = {s['pages_per_sec']:.0f} pages/s, "
      f"{cpu*1000/max(pages,1):.3f} CPU s per 1000 pages, peak RSS {s['peak_rss_bytes']/1048576:.1f} MiB")
PY
