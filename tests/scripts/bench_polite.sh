#!/usr/bin/env bash
# make bench-polite: how close a polite crawl comes to its politeness bound.
#
# HOSTS (200) hosts of PAGES (25) pages on 127.0.0.20-219, crawled with one request at a time per host and
# DELAY_MS (200) between a response and the host's next request. The bound is one request per host per DELAY_MS:
# a crawl that keeps every host busy makes HOSTS / DELAY_MS requests per second. The site logs every request; printed
# per run: requests, the time from the first request to the last, the share of the bound each host achieved while it
# was active (DELAY_MS per gap plus its response times, over its first-to-last request span), the same for the whole
# crawl (the busiest host's bound over the first-to-last request span of the crawl: startup and stragglers count),
# and the gaps between a host's requests shorter than DELAY_MS (must be 0). REPEATS (3) runs, then the medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
HOSTS="${HOSTS:-200}"
PAGES="${PAGES:-25}"
DELAY_MS="${DELAY_MS:-200}"
REPEATS="${REPEATS:-3}"
out=.bench-polite
for b in crawl-engine testsite; do [ -x "$bin/$b" ] || { echo "bench-polite: $bin/$b missing: run make release" >&2; exit 1; }; done
rm -rf "$out" && mkdir -p "$out"
site=""
trap '[ -n "$site" ] && kill "$site" 2>/dev/null || true' EXIT
for i in $(seq 1 "$REPEATS"); do
  rm -rf "$out/data" "$out/crawl.jsonl" "$out/seeds"
  "$bin/testsite" --hosts "$HOSTS" --pages "$PAGES" --links 4 --first-octet 20 --all-seeds --seeds-file "$out/seeds" \
    --page-bytes 2000 --request-log-file "$out/requests-$i" > "$out/testsite.log" 2>&1 &
  site=$!
  for _ in $(seq 1 100); do [ -s "$out/seeds" ] && break; sleep 0.1; done
  seeds=()
  while read -r s; do seeds+=(--seed "$s"); done < "$out/seeds"
  cat > "$out/config.toml" <<TOML
[politeness]
per_host_concurrency = 1
min_delay_ms = $DELAY_MS
[fetch]
concurrency = 256
[frontier]
data_dir = "data"
[output]
jsonl = "crawl.jsonl"
[security]
allow_private_networks = true
[observability]
log_level = "warn"
TOML
  "$bin/crawl-engine" --config "$out/config.toml" --no-progress --summary-json "$out/summary-$i.json" "${seeds[@]}" \
    > /dev/null
  kill "$site"; wait "$site" 2>/dev/null || true; site=""
done
DELAY_MS="$DELAY_MS" REPEATS="$REPEATS" python3 - "$out" <<'PY'
import os, statistics, sys
from collections import defaultdict
out, delay = sys.argv[1], float(os.environ["DELAY_MS"])
shares, wholes = [], []
for i in range(1, int(os.environ["REPEATS"]) + 1):
    by_host = defaultdict(list)
    for line in open(os.path.join(out, f"requests-{i}")):
        host, start, end, status, path = line.split(" ", 4)
        by_host[int(host)].append((float(start), float(end)))
    short, busy, gaps = 0, 0.0, 0
    for reqs in by_host.values():
        reqs.sort()
        for (s0, e0), (s1, _) in zip(reqs, reqs[1:]):
            # The crawler waits DELAY_MS after a response ends before the host's next request starts.
            if s1 - e0 < delay - 1.0:
                short += 1
            gaps += 1
        # Time a host needs at the bound: one DELAY_MS per gap, plus the responses themselves.
        busy += reqs[-1][0] - reqs[0][0]
    bound = sum((len(r) - 1) * delay + sum(e - s for s, e in r[:-1]) for r in by_host.values())
    share = bound / busy if busy else 0.0
    shares.append(share)
    n = sum(len(r) for r in by_host.values())
    span = max(r[-1][0] for r in by_host.values()) / 1000
    # The whole crawl against the busiest host's bound: startup and stragglers count too.
    whole = max((len(r) - 1) * delay for r in by_host.values()) / 1000 / span
    wholes.append(whole)
    print(f"bench-polite run {i}: {n} requests on {len(by_host)} hosts in {span:.2f} s; hosts busy {share*100:.1f} % "
          f"of their bound, whole crawl {whole*100:.1f} %; gaps shorter than {delay:.0f} ms: {short} of {gaps}")
print(f"bench-polite: median {statistics.median(shares)*100:.1f} % of the bound per host, "
      f"{statistics.median(wholes)*100:.1f} % for the whole crawl")
PY
