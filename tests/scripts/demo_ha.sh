#!/usr/bin/env bash
# make demo-ha: one crawl shared by three processes through a Redis master with two replicas and three sentinels
# (redis-server and redis-server --sentinel, on free loopback ports), the master killed (-9) half-way. Serves the
# demo site (8 hosts x 750 pages on 127.0.0.24-31: hosts are shared out by shard, so fewer could leave a process
# none), runs three crawl-engine processes with `sentinels` in their [frontier.redis], kills the master once half
# the site's pages are recorded, waits for every process, merges their files into .demo-ha/crawl.jsonl and checks it
# against the site's expected crawl: every URL once, none missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
out=.demo-ha
command -v redis-server >/dev/null || { echo "demo-ha needs redis-server (apt-get install redis-server: its --sentinel mode serves as the sentinels)"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

source tests/scripts/lib.sh
start_ha "$out"
echo "redis: master 127.0.0.1:${ports[0]}, replicas ${ports[1]} ${ports[2]}, sentinels ${sentinels[*]}"

"$bin/testsite" --hosts 8 --pages 750 --first-octet 24 --all-seeds --seeds-file "$out/seeds" \
  --expected-file "$out/expected.json" > "$out/testsite.log" 2>&1 &
pids+=($!)
wait_for "$out/seeds"
[ -s "$out/seeds" ] || { echo "testsite did not start:"; cat "$out/testsite.log"; exit 1; }
read_seeds "$out/seeds"
echo "site up: $(head -1 "$out/testsite.log")"

redis_toml=$(printf 'sentinels = [%s]\nmaster = "crawl"' "$(IFS=,; echo "${sentinels[*]}")")
start_demo_crawlers "$out" "$redis_toml" per-process
half=$(python3 -c "import json; e=json.load(open('$out/expected.json')); print(len(e['fetched_ok']) // 2)")
for _ in $(seq 1 600); do
  got=$( (cat "$out"/p*/crawl.jsonl 2>/dev/null || true) | wc -l)
  [ "$got" -ge "$half" ] && break
  sleep 0.1
done
kill -9 "$master_pid"
echo "master killed after $got records"
status=0
for p in "${crawlers[@]}"; do wait "$p" || status=$?; done
for n in 1 2 3; do
  echo "process $n: $(wc -l < "$out/p$n/crawl.jsonl") records; $(grep -m1 'crawl ' "$out/p$n/summary.txt" || true)"
  grep -h '"redis master switched"' "$out/p$n/log.txt" | head -1 || true
done
[ "$status" -eq 0 ] || { echo "a process failed (exit $status); see $out/p*/log.txt"; exit 1; }
"$bin/crawl-engine" merge -o "$out/crawl.jsonl" "$out"/p1/crawl.jsonl "$out"/p2/crawl.jsonl "$out"/p3/crawl.jsonl
python3 - "$out" <<'PY'
import json, sys, collections
out = sys.argv[1]
e = json.load(open(f"{out}/expected.json"))
want = set(e["fetched_ok"]) | set(e["redirects"]) | set(e["not_found"]) | set(e["robots_excluded"])
seen = collections.Counter(json.loads(l)["url"] for l in open(f"{out}/crawl.jsonl"))
twice = [u for u, n in seen.items() if n > 1]
missing = want - set(seen)
extra = set(seen) - want
print(f"merged: {len(seen)} URLs; expected {len(want)}; missing {len(missing)}; twice {len(twice)}; unexpected {len(extra)}")
sys.exit(1 if missing or twice or extra else 0)
PY
