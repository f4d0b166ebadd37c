#!/usr/bin/env bash
# make demo-cluster: one crawl shared by three processes through a local Redis. Starts redis-server on a unix
# socket in .demo-cluster/, serves the demo site (4 hosts x 1500 pages on 127.0.0.24-27), runs three crawl-engine
# processes with the same [frontier.redis] and their own data_dir and JSONL, waits for all of them to finish, then
# merges their files into .demo-cluster/crawl.jsonl (each URL once) and shows what each process did.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
out=.demo-cluster
command -v redis-server >/dev/null || { echo "demo-cluster needs redis-server (apt-get install redis-server)"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

redis-server --port 0 --unixsocket "$PWD/$out/redis.sock" --unixsocketperm 700 --save "" --appendonly yes \
  --dir "$PWD/$out" --logfile redis.log --daemonize no > /dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -S "$out/redis.sock" ] && break; sleep 0.1; done
[ -S "$out/redis.sock" ] || { echo "redis-server did not start:"; cat "$out/redis.log"; exit 1; }

"$bin/testsite" --hosts 4 --pages 1500 --first-octet 24 --all-seeds --seeds-file "$out/seeds" > "$out/testsite.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$out/seeds" ] && break; sleep 0.1; done
[ -s "$out/seeds" ] || { echo "testsite did not start:"; cat "$out/testsite.log"; exit 1; }
seeds=()
while read -r s; do seeds+=(--seed "$s"); done < "$out/seeds"
echo "site up: $(head -1 "$out/testsite.log")"

crawlers=()
for n in 1 2 3; do
  mkdir -p "$out/p$n"
  cat > "$out/p$n/config.toml" <<TOML
[crawl]
user_agent = "crawl-engine-demo/0.1 (+https://example.invalid/bot)"
[politeness]
per_host_concurrency = 4
min_delay_ms = 5
[frontier]
data_dir = "$PWD/$out/p$n/crawl-data"
backend = "redis"
[frontier.redis]
urls = ["redis+unix://$PWD/$out/redis.sock"]
crawl = "demo"
shards = 16
lease_ms = 3000
[output]
jsonl = "$PWD/$out/p$n/crawl.jsonl"
[security]
allow_private_networks = true
[observability]
metrics_listen = ""
TOML
  "$bin/crawl-engine" --config "$out/p$n/config.toml" --no-progress "${seeds[@]}" > "$out/p$n/summary.txt" 2> "$out/p$n/log.txt" &
  crawlers+=($!)
  pids+=($!)
done
status=0
for p in "${crawlers[@]}"; do wait "$p" || status=$?; done
for n in 1 2 3; do
  echo "process $n: $(wc -l < "$out/p$n/crawl.jsonl") records; $(grep -m1 'crawl ' "$out/p$n/summary.txt" || true)"
done
[ "$status" -eq 0 ] || { echo "a process failed (exit $status); see $out/p*/log.txt"; exit 1; }
"$bin/crawl-engine" merge -o "$out/crawl.jsonl" "$out"/p1/crawl.jsonl "$out"/p2/crawl.jsonl "$out"/p3/crawl.jsonl
echo "site: $(tail -1 "$out/testsite.log")"
