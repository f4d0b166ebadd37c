#!/usr/bin/env bash
# make bench-cluster: the crawl of make bench-crawl's site (8 hosts x 2,600 pages on 127.0.0.30-37, politeness off,
# concurrency 64 per process) with the embedded frontier, then through a local Redis with 1, 2 and 3 processes.
# Every process of a run gets the same seeds; the run ends when all have exited. Prints per run: wall time, pages/s
# (all processes), CPU milliseconds per page (crawlers together, and Redis's own), store round trips per page (the
# crawlers' store requests: commits, window refills and shard polls, each one pipeline), Redis commands per page
# (INFO total_commands_processed, the calls made inside scripts included) and Redis memory per known URL
# at the end (used_memory after the crawl minus the empty server's, over the records written). The processes share this machine's cores with each other, with
# Redis and with the test site: the figures compare setups on one machine, they do not show scaling.
# Then the store's own Redis memory per URL (engine/store-redis/benches/memory.rs, a redis-server of its own): URLs
# added through the store and then all finished, with MEM_SIZES URLs (default 1000000; "1000000 10000000" for the
# figures in docs/BENCHMARKS.md) over MEM_HOSTS hosts (default "4 1000").
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
out=.bench-cluster
command -v redis-server >/dev/null || { echo "bench-cluster needs redis-server"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
"$bin/testsite" --hosts 8 --pages 2600 --first-octet 30 --page-bytes 4000 --seeds-file "$out/seeds" --all-seeds \
  > "$out/testsite.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$out/seeds" ] && break; sleep 0.1; done
seeds=()
while read -r s; do seeds+=(--seed "$s"); done < "$out/seeds"
rcli() { redis-cli -s "$PWD/$out/redis.sock" "$@"; }
stat_field() { rcli INFO "$1" | awk -F: -v k="$2" '$1 == k { gsub("\r", "", $2); print $2 }'; }
redis_cpu() { rcli INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { gsub("\r", "", $2); s += $2 } END { print s }'; }

run() { # $1: label, $2: processes (0: embedded)
  local label=$1 n=$2 backend=embedded
  rm -rf "$out/run" && mkdir -p "$out/run"
  local redis_pid=""
  if [ "$n" -gt 0 ]; then
    backend=redis
    redis-server --port 0 --unixsocket "$PWD/$out/redis.sock" --unixsocketperm 700 --save "" --appendonly no \
      --dir "$PWD/$out/run" --logfile redis.log --daemonize no > /dev/null 2>&1 &
    redis_pid=$!
    pids+=("$redis_pid")
    for _ in $(seq 1 100); do rcli PING >/dev/null 2>&1 && break; sleep 0.05; done
    rcli CONFIG RESETSTAT > /dev/null
  fi
  local mem0=0 rc0=0
  [ -n "$redis_pid" ] && mem0=$(stat_field memory used_memory) && rc0=$(redis_cpu)
  local procs=$(( n > 0 ? n : 1 )) crawlers=()
  local t0; t0=$(date +%s.%N)
  for i in $(seq 1 "$procs"); do
    cat > "$out/run/p$i.toml" <<TOML
[crawl]
max_depth = 1000
[politeness]
per_host_concurrency = 64
min_delay_ms = 0
[fetch]
concurrency = 64
[frontier]
data_dir = "$PWD/$out/run/data$i"
backend = "$backend"
[frontier.redis]
urls = ["redis+unix://$PWD/$out/redis.sock"]
crawl = "bench"
lease_ms = 5000
[output]
jsonl = "$PWD/$out/run/crawl$i.jsonl"
[security]
allow_private_networks = true
[observability]
log_level = "warn"
metrics_listen = ""
TOML
    "$bin/crawl-engine" --config "$out/run/p$i.toml" --no-progress --summary-json "$out/run/s$i.json" "${seeds[@]}" \
      > "$out/run/out$i.txt" 2> "$out/run/err$i.txt" &
    crawlers+=($!)
  done
  for p in "${crawlers[@]}"; do wait "$p" || { echo "bench-cluster: a crawler failed (see $out/run)"; exit 1; }; done
  local t1; t1=$(date +%s.%N)
  local cmds=0 mem=0 rcpu=0
  if [ -n "$redis_pid" ]; then
    cmds=$(stat_field stats total_commands_processed)
    mem=$(( $(stat_field memory used_memory) - mem0 ))
    rcpu=$(awk -v a="$(redis_cpu)" -v b="$rc0" 'BEGIN { print a - b }')
    kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true
  fi
  python3 - "$label" "$procs" "$t0" "$t1" "$cmds" "$mem" "$rcpu" "$out/run" <<'PY'
import json, sys, glob
label, procs, t0, t1, cmds, mem, rcpu, d = sys.argv[1:]
wall = float(t1) - float(t0)
ss = [json.load(open(f)) for f in sorted(glob.glob(d + "/s*.json"))]
fetched = sum(s["fetched"] for s in ss)
cpu = sum(s["cpu_seconds"] or 0 for s in ss)
requests = sum(s.get("store_requests", 0) for s in ss)
lines = sum(1 for f in glob.glob(d + "/crawl*.jsonl") for _ in open(f))
known = max(lines, 1)
cmds, mem, rcpu = int(cmds), int(mem), float(rcpu)
row = f"{label:10s} {procs:>5s} {wall:8.2f} {fetched:8d} {fetched / wall:9.0f} {cpu * 1000 / max(fetched, 1):10.3f}"
if cmds:
    row += f" {rcpu * 1000 / max(fetched, 1):10.3f} {requests / max(fetched, 1):9.3f} {cmds / max(fetched, 1):9.2f} {mem / known:9.1f}"
print(row, flush=True)
PY
}

printf '%-10s %5s %8s %8s %9s %10s %10s %9s %9s %9s\n' setup procs wall_s fetched pages/s cpu_ms/pg \
  redis_cpu trips/pg cmds/pg redisB/url
run embedded 0
run redis-1 1
run redis-2 2
run redis-3 3
kill "${pids[0]}" 2>/dev/null || true

echo
echo "redis memory per URL of the store (B/pending: added, not done; B/done: every URL finished)"
MEM_SIZES="${MEM_SIZES:-1000000}" MEM_HOSTS="${MEM_HOSTS:-4 1000}" "${CARGO:-cargo}" bench -q -p crawl-store-redis \
  --bench memory
