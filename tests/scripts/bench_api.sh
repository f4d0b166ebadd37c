#!/usr/bin/env bash
# make bench-api: how fast the control API answers while a crawl runs at full speed, and what asking costs the
# crawl. The bench-crawl site (8 hosts, PAGES pages each, default 10,000) and config (politeness off, concurrency
# 64) with [api] on 127.0.0.1 (a random port, read from the log) and a token; per round (REPEATS, default 3),
# alternating:
#   quiet   the crawl alone;
#   probed  the same crawl with one client (a Python process, one connection per request) asking GET /v1/status
#           and GET /v1/hosts?limit=50 in turn every EVERY_MS (default 20) from the crawl's start to its end.
# Prints each run's pages/s, the medians, the probed/quiet ratio of pages/s, and the latency of each endpoint under
# the running crawl (median, p90, p99, max over every probed run's requests).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
PAGES="${PAGES:-10000}"
EVERY_MS="${EVERY_MS:-20}"
out=.bench-api
rm -rf "$out" && mkdir -p "$out"
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" > "$out/api.token"
"$bin/testsite" --hosts 8 --pages "$PAGES" --first-octet 30 --page-bytes 4000 --seeds-file "$out/seeds" --all-seeds \
  > "$out/testsite.log" 2>&1 &
site=$!
crawl=""
trap 'kill $site 2>/dev/null || true; if [ -n "$crawl" ]; then kill $crawl 2>/dev/null || true; fi' EXIT
wait_for "$out/seeds"
read_seeds "$out/seeds"

# run MODE I: one crawl; with MODE probed, the probe loop runs beside it.
run() {
  local mode=$1 i=$2 addr="" dir="$PWD/$out"
  rm -rf "$out/crawl-data" "$out/crawl.jsonl"
  { bench_config "" info; printf 'metrics_listen = ""\n[api]\nlisten = "127.0.0.1:0"\ntoken_file = "%s"\n' \
    "$dir/api.token"; } \
    > "$out/config.toml"
  "$bin/crawl-engine" --config "$out/config.toml" --no-progress --summary-json "$out/summary-$mode-$i.json" \
    "${seeds[@]}" > /dev/null 2> "$out/log-$mode-$i.txt" &
  crawl=$!
  for _ in $(seq 1 100); do
    # JSON lines when stderr is not a terminal: {"message":"api listening","addr":"127.0.0.1:PORT",...}
    addr=$(sed -n 's/.*"api listening","addr":"\([0-9.:]*\)".*/\1/p' "$out/log-$mode-$i.txt" | head -1)
    [ -n "$addr" ] && break
    sleep 0.05
  done
  [ -n "$addr" ] || { echo "bench-api: no api address in the log" >&2; cat "$out/log-$mode-$i.txt" >&2; exit 1; }
  if [ "$mode" = probed ]; then
    python3 - "$addr" "$token" "$EVERY_MS" "$crawl" >> "$out/latency-$i.txt" <<'PY' &
import http.client, os, sys, time
addr, token, every, pid = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1000, int(sys.argv[4])
host, port = addr.rsplit(":", 1)
paths = ["/v1/status", "/v1/hosts?limit=50"]
k = 0
while True:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    path = paths[k % 2]
    k += 1
    t = time.perf_counter()
    try:
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        c.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        r = c.getresponse()
        r.read()
        code = r.status
        c.close()
    except OSError:
        continue
    print(path, code, time.perf_counter() - t, flush=True)
    time.sleep(max(0.0, every - (time.perf_counter() - t)))
PY
  fi
  wait "$crawl"
  crawl=""
}

for i in $(seq 1 "$REPEATS"); do
  for mode in $(abba "$i" quiet probed); do run "$mode" "$i"; done
done
kill $site; wait $site 2>/dev/null || true
trap - EXIT
REPEATS="$REPEATS" python3 - "$out" <<'PY'
import json, os, statistics, sys
out, n = sys.argv[1], int(os.environ["REPEATS"])
pps = {"quiet": [], "probed": []}
for i in range(1, n + 1):
    for mode in pps:
        s = json.load(open(f"{out}/summary-{mode}-{i}.json"))
        pps[mode].append(s["pages_per_sec"])
        print(f"bench-api: {mode:6} run {i}: {s['fetched']} pages, {s['pages_per_sec']:.0f} pages/s")
q, p = statistics.median(pps["quiet"]), statistics.median(pps["probed"])
print(f"bench-api: median pages/s quiet {q:.0f}, probed {p:.0f}: probed / quiet {p / q:.2f}")
lat = {}
for i in range(1, n + 1):
    for line in open(f"{out}/latency-{i}.txt"):
        path, code, t = line.split()
        if code == "200":
            lat.setdefault(path, []).append(float(t) * 1000)
for path, xs in lat.items():
    xs.sort()
    q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]
    print(f"bench-api: {path}: {len(xs)} answers, median {statistics.median(xs):.2f} ms, p90 {q(0.9):.2f} ms, "
          f"p99 {q(0.99):.2f} ms, max {xs[-1]:.2f} ms")
PY
