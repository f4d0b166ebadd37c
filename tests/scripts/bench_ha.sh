#!/usr/bin/env bash
# make bench-ha: the cost of replica-acknowledged writes and the time a failover takes. On a Redis master with two
# replicas and three sentinels (free loopback ports), three crawl-engine processes crawl HOSTS x PAGES pages
# (politeness off) with `replicas_ack = 0` and with `replicas_ack = 1`; then, with `replicas_ack = 1`, the master is
# killed (-9) half-way. Per run: wall time, pages/s, CPU (user + sys of the three processes) per page, Redis
# commands per page (the master's total_commands_processed over the crawl; the failover run counts the new master's
# too), and for the failover run the time from the master's death to the first record written after it.
# Environment: HOSTS (4), PAGES (2500), REPEATS (1).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
out=.bench-ha
HOSTS=${HOSTS:-4}
PAGES=${PAGES:-2500}
REPEATS=${REPEATS:-1}
command -v redis-server >/dev/null || { echo "bench-ha needs redis-server (apt-get install redis-server: its --sentinel mode serves as the sentinels)"; exit 1; }
source tests/scripts/lib.sh
rm -rf "$out" && mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# commands PORT: the server's total_commands_processed (0 when it does not answer).
commands() { redis-cli -p "$1" INFO stats 2>/dev/null | tr -d '\r' | sed -n 's/^total_commands_processed://p' | grep . || echo 0; }
# lines: records written so far by every process of the run in $run.
lines() { (cat "$run"/p*/crawl.jsonl 2>/dev/null || true) | wc -l; }

# one_run NAME ACK KILL: a run; prints one result line (name, ack, wall s, pages, CPU s, commands, failover ms).
one_run() {
  local name=$1 ack=$2 kill=$3 n start end cmd0 failover_ms=- killed_at got
  run="$out/$name"
  mkdir -p "$run"
  pids=()
  start_ha "$run"
  "$bin/testsite" --hosts "$HOSTS" --pages "$PAGES" --first-octet 24 --page-bytes 4000 --all-seeds \
    --seeds-file "$run/seeds" --expected-file "$run/expected.json" > "$run/site.log" 2>&1 &
  pids+=($!)
  wait_for "$run/seeds"
  read_seeds "$run/seeds"
  cmd0=$(commands "${ports[0]}")
  local crawlers=()
  start=$(date +%s.%N)
  for n in 1 2 3; do
    mkdir -p "$run/p$n"
    cat > "$run/p$n/config.toml" <<TOML
[crawl]
max_depth = 1000
user_agent = "crawl-engine-bench p$n"
[politeness]
per_host_concurrency = 16
min_delay_ms = 0
[fetch]
concurrency = 32
[frontier]
data_dir = "$PWD/$run/p$n/crawl-data"
backend = "redis"
[frontier.redis]
sentinels = [$(IFS=,; echo "${sentinels[*]}")]
master = "crawl"
crawl = "bench"
shards = 16
lease_ms = 3000
replicas_ack = $ack
[output]
jsonl = "$PWD/$run/p$n/crawl.jsonl"
[security]
allow_private_networks = true
[observability]
log_level = "warn"
metrics_listen = ""
TOML
    bash -c '"$@"; rc=$?; times >&3; exit $rc' _ "$bin/crawl-engine" --config "$run/p$n/config.toml" --no-progress \
      "${seeds[@]}" > "$run/p$n/summary.txt" 2> "$run/p$n/log.txt" 3> "$run/p$n/times" &
    crawlers+=($!)
    pids+=($!)
  done
  if [ "$kill" = yes ]; then
    local half
    half=$(python3 -c "import json; print(len(json.load(open('$run/expected.json'))['fetched_ok']) // 2)")
    until [ "$(lines)" -ge "$half" ]; do sleep 0.05; done
    got=$(lines)
    kill -9 "$master_pid"
    killed_at=$(date +%s%N)
    until [ "$(lines)" -gt "$got" ]; do sleep 0.01; done
    failover_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
  fi
  for p in "${crawlers[@]}"; do wait "$p" || { echo "bench-ha: a crawl process failed; see $run/p*/log.txt" >&2; exit 1; }; done
  end=$(date +%s.%N)
  local cmds=0 port
  if [ "$kill" = yes ]; then
    for port in "${ports[@]:1}"; do cmds=$((cmds + $(commands "$port"))); done
  else
    cmds=$(( $(commands "${ports[0]}") - cmd0 ))
  fi
  "$bin/crawl-engine" merge -o "$run/crawl.jsonl" "$run"/p1/crawl.jsonl "$run"/p2/crawl.jsonl "$run"/p3/crawl.jsonl >&2
  python3 - "$run" "$name" "$ack" "$start" "$end" "$cmds" "$failover_ms" <<'PY'
import json, re, sys
run, name, ack, start, end, cmds, failover = sys.argv[1:]
pages = sum(1 for l in open(f"{run}/crawl.jsonl") if json.loads(l).get("status") == 200)
want = len(json.load(open(f"{run}/expected.json"))["fetched_ok"])
cpu = 0.0
for n in (1, 2, 3):
    t = open(f"{run}/p{n}/times").read().split("\n")[1].split()
    for v in t:
        m, s = re.match(r"(\d+)m([\d.]+)s", v).groups()
        cpu += int(m) * 60 + float(s)
wall = float(end) - float(start)
print(f"{name}\t{ack}\t{wall:.2f}\t{pages}\t{want}\t{cpu:.2f}\t{cmds}\t{failover}")
PY
  cleanup
  pids=()
  sleep 0.5
}

echo "bench-ha: ${HOSTS} hosts x ${PAGES} pages, three processes, master + 2 replicas + 3 sentinels, REPEATS=$REPEATS"
results="$out/results.tsv"
: > "$results"
for i in $(seq 1 "$REPEATS"); do
  one_run "ack0-$i" 0 no >> "$results"
  one_run "ack1-$i" 1 no >> "$results"
  one_run "failover-$i" 1 yes >> "$results"
done
python3 - "$results" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, ack, wall, pages, want, cpu, cmds, fo = line.split("\t")
    rows[name.rsplit("-", 1)[0]].append((float(wall), int(pages), int(want), float(cpu), int(cmds), fo.strip()))
rate = {}
for kind, rs in rows.items():
    wall = statistics.median(r[0] for r in rs)
    pages = rs[0][1]
    r = statistics.median(r[1] / r[0] for r in rs)
    rate[kind] = r
    cpu = statistics.median(r[3] * 1000 / r[1] for r in rs)
    cmds = statistics.median(r[4] / r[1] for r in rs)
    fo = ", ".join(r[5] for r in rs)
    print(f"{kind:9} pages {pages}/{rs[0][2]}  wall {wall:.2f} s  {r:.0f} pages/s  CPU {cpu:.2f} ms/page  "
          f"redis commands {cmds:.2f}/page" + (f"  master death -> first record after it: {fo} ms" if kind == "failover" else ""))
if "ack0" in rate and "ack1" in rate:
    print(f"replicas_ack 1 / replicas_ack 0 pages/s: {rate['ack1'] / rate['ack0']:.2f}")
PY
