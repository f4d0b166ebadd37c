#!/usr/bin/env bash
# make bench-drain: does resident memory come down once a large queue has drained while the crawl goes on?
#
# One release crawl of two sites at once:
#   wide: the wide-mode testsite (4 hosts on 127.0.0.44-47) whose first page links WIDE_LINKS (50,000) new URLs,
#         all answering 404: 200,000 URLs discovered at once, and host_window = 100000 lets the host windows hold
#         them all, so memory peaks while they are queued;
#   slow: one host on 127.0.0.48 whose answers each take DELAY_MS (500), crawled one request at a time: it keeps the
#         crawl running for about PAGES_SLOW x DELAY_MS after the wide hosts have drained.
# A sampler reads the process's VmRSS and the JSONL's size every 0.2 s; printed: the peak
# RSS, the RSS when the wide hosts' last request was answered, and the RSS SETTLE_S (15) seconds later and at the end.
# Environment: PAGES_SLOW (60), DELAY_MS (500), SETTLE_S (15), WIDE_LINKS (50000), CRAWL_BIN (another build to compare).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
PAGES_SLOW="${PAGES_SLOW:-60}"
DELAY_MS="${DELAY_MS:-500}"
SETTLE_S="${SETTLE_S:-15}"
WIDE_LINKS="${WIDE_LINKS:-50000}"
out=.bench-drain
for b in crawl-engine testsite; do [ -x "$bin/$b" ] || { echo "bench-drain: $bin/$b missing: run make release" >&2; exit 1; }; done
rm -rf "$out" && mkdir -p "$out"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
"$bin/testsite" --hosts 4 --pages 1 --links 0 --orphans 0 --no-sitemaps --first-octet 44 --wide-links "$WIDE_LINKS" \
  --wide-ok-ratio 0 --all-seeds --seeds-file "$out/wide-seeds" > "$out/wide.log" 2>&1 &
pids+=($!)
"$bin/testsite" --hosts 1 --pages "$PAGES_SLOW" --links 2 --orphans 0 --first-octet 48 --delay-ms "$DELAY_MS" \
  --seeds-file "$out/slow-seeds" > "$out/slow.log" 2>&1 &
pids+=($!)
for f in wide-seeds slow-seeds; do
  for _ in $(seq 1 100); do [ -s "$out/$f" ] && break; sleep 0.1; done
  [ -s "$out/$f" ] || { echo "bench-drain: testsite did not start" >&2; exit 1; }
done
seeds=()
while read -r s; do seeds+=(--seed "$s"); done < <(cat "$out/wide-seeds" "$out/slow-seeds")
cat > "$out/config.toml" <<TOML
[politeness]
per_host_concurrency = 1
min_delay_ms = 0
[fetch]
concurrency = 64
[frontier]
data_dir = "crawl-data"
host_window = 100000
[parser]
max_links_per_page = 100000
[output]
jsonl = "crawl.jsonl"
[security]
allow_private_networks = true
[observability]
log_level = "warn"
TOML
"${CRAWL_BIN:-$bin/crawl-engine}" --config "$out/config.toml" --no-progress --summary-json "$out/summary.json" "${seeds[@]}" \
  > "$out/crawl.log" 2>&1 &
crawler=$!
pids+=($crawler)
# t, rss KiB, JSONL bytes: sampled until the crawler exits.
while kill -0 "$crawler" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$crawler/status" 2>/dev/null || true)
  size=$(stat -c %s "$out/crawl.jsonl" 2>/dev/null || echo 0)
  [ -n "$rss" ] && echo "$(date +%s.%N) $rss $size" >> "$out/samples"
  sleep 0.2
done
wait "$crawler" || { echo "bench-drain: the crawl failed (see $out/crawl.log)" >&2; exit 1; }
SETTLE_S="$SETTLE_S" python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = [tuple(float(x) for x in l.split()) for l in open(os.path.join(out, "samples"))]
s = json.load(open(os.path.join(out, "summary.json")))
t0 = rows[0][0]
peak = max(r[1] for r in rows)
# The wide hosts have drained once the JSONL holds all but the slow host's lines (those come one per DELAY_MS).
slow = wide = 0
for line in open(os.path.join(out, "crawl.jsonl"), "rb"):
    if b'"url":"http://127.0.0.48' in line:
        slow += len(line)
    else:
        wide += 1
final = os.path.getsize(os.path.join(out, "crawl.jsonl"))
drained = next(r for r in rows if r[2] >= final - slow)
settle = float(os.environ["SETTLE_S"])
later = [r for r in rows if r[0] >= drained[0] + settle]
mib = lambda k: k / 1024
print(f"wide hosts: {wide} URLs, drained at {drained[0]-t0:.1f} s; crawl ended at {rows[-1][0]-t0:.1f} s; "
      f"fetched {s['fetched']}")
print(f"rss peak {mib(peak):.1f} MiB (summary VmHWM {s['peak_rss_bytes']/1048576:.1f}), at drain {mib(drained[1]):.1f} MiB, "
      + (f"{settle:.0f} s later {mib(later[0][1]):.1f} MiB, " if later else "")
      + f"at the end {mib(rows[-1][1]):.1f} MiB (summary {s['end_rss_bytes']/1048576:.1f})")
PY
