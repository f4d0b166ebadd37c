#!/usr/bin/env bash
# make demo-cluster: one crawl shared by three processes through a local Redis. Starts redis-server on a unix
# socket in .demo-cluster/, serves the demo site (8 hosts x 750 pages on 127.0.0.24-31), runs three crawl-engine
# processes with the same [frontier.redis] and their own data_dir and JSONL, waits for all of them to finish, then
# merges their files into .demo-cluster/crawl.jsonl (each URL once) and shows what each process did.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/scripts/lib.sh
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

"$bin/testsite" --hosts 8 --pages 750 --first-octet 24 --all-seeds --seeds-file "$out/seeds" > "$out/testsite.log" 2>&1 &
pids+=($!)
wait_for "$out/seeds"
[ -s "$out/seeds" ] || { echo "testsite did not start:"; cat "$out/testsite.log"; exit 1; }
read_seeds "$out/seeds"
echo "site up: $(head -1 "$out/testsite.log")"

start_demo_crawlers "$out" "urls = [\"redis+unix://$PWD/$out/redis.sock\"]"
status=0
for p in "${crawlers[@]}"; do wait "$p" || status=$?; done
for n in 1 2 3; do
  echo "process $n: $(wc -l < "$out/p$n/crawl.jsonl") records; $(grep -m1 'crawl ' "$out/p$n/summary.txt" || true)"
done
[ "$status" -eq 0 ] || { echo "a process failed (exit $status); see $out/p*/log.txt"; exit 1; }
"$bin/crawl-engine" merge -o "$out/crawl.jsonl" "$out"/p1/crawl.jsonl "$out"/p2/crawl.jsonl "$out"/p3/crawl.jsonl
echo "site: $(tail -1 "$out/testsite.log")"
