# Shared by the bench scripts (sourced): the test site's seeds and the config of the make bench-crawl crawl.

# wait_for FILE: returns once FILE exists and is not empty, or after 10 s.
wait_for() {
  for _ in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 0
}

# read_seeds FILE: the array `seeds` gets `--seed URL` for each line of FILE.
read_seeds() {
  seeds=()
  local s
  while read -r s; do seeds+=(--seed "$s"); done < "$1"
}

# bench_config [WARC_DIR] [LOG_LEVEL] [CRAWL_KEYS]: the make bench-crawl config (politeness off, concurrency 64,
# durable frontier, JSONL; a WARC archive when WARC_DIR is given; CRAWL_KEYS, lines added to its [crawl] section),
# ending in its [observability] section so that a caller may append keys to it.
bench_config() {
  cat <<TOML
[crawl]
max_depth = 1000
TOML
  if [ -n "${3:-}" ]; then printf '%s\n' "$3"; fi
  cat <<TOML
[politeness]
per_host_concurrency = 64
min_delay_ms = 0
[fetch]
concurrency = 64
[frontier]
data_dir = "crawl-data"
[output]
jsonl = "crawl.jsonl"
TOML
  if [ -n "${1:-}" ]; then printf 'warc_dir = "%s"\n' "$1"; fi
  cat <<TOML
[security]
allow_private_networks = true
[observability]
log_level = "${2:-warn}"
TOML
}

# crawler MODE: the crawl-engine binary a bench mode runs: BASE_BIN (another build, which must be given) for
# "base", this build's ($bin) for any other.
crawler() {
  if [ "$1" = base ]; then echo "${BASE_BIN:?mode base needs BASE_BIN}"; else echo "$bin/crawl-engine"; fi
}

# resolver_hosts HOSTS FIRST_OCTET: the `[resolver]` table naming testsite --host-names' hosts (h0.test on
# 127.0.0.FIRST_OCTET, h1.test on the next, ...), for a crawl of them by name.
resolver_hosts() {
  local entries
  entries=$(for h in $(seq 0 $(($1 - 1))); do printf '"h%s.test" = ["127.0.0.%s"], ' "$h" $(($2 + h)); done)
  printf '[resolver]\nhosts = { %s }\n' "${entries%, }"
}

# abba I MODE...: the order of the modes in round I of an ABBA series (as given in odd rounds, reversed in even
# ones), so that whatever favours the first or the last crawl of a round falls on every mode alike.
abba() {
  local i=$1
  shift
  if [ $((i % 2)) -eq 0 ]; then
    local out=() m
    for m in "$@"; do out=("$m" "${out[@]}"); done
    echo "${out[@]}"
  else
    echo "$@"
  fi
}

# callgrind_crawls BENCH HOSTS PAGES TAG_FORMAT MODE...: one crawl of each MODE under valgrind --tool=callgrind
# (its counts in $out/callgrind-MODE.out), on a site of HOSTS x PAGES; uses the caller's start_site, crawl (given
# MODE, the tag TAG_FORMAT makes of MODE, and the command to run the engine under) and $site.
callgrind_crawls() {
  local bench=$1 hosts=$2 pages=$3 format=$4 mode
  shift 4
  command -v valgrind > /dev/null || { echo "$bench: CALLGRIND=1 needs valgrind" >&2; exit 1; }
  start_site "$hosts" "$pages"
  for mode in "$@"; do
    # shellcheck disable=SC2059 # the format is the caller's
    crawl "$mode" "$(printf "$format" "$mode")" \
      valgrind --tool=callgrind --callgrind-out-file="$out/callgrind-$mode.out"
  done
  kill "$site"; wait "$site" 2>/dev/null || true
  site=
}

# free_port: a loopback port the system hands out (bound on 127.0.0.1:0, then released).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# redis_up PORT: the Redis server or sentinel on PORT answers PING.
redis_up() { [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; }

# start_ha OUT: a Redis master with two replicas and three sentinels on free loopback ports, their files in OUT/r*
# and OUT/s*. Sets `ports` (master first), `master_pid`, `sentinels` (quoted URLs for a TOML array) and appends
# every process to `pids` (which the caller kills on exit). Returns once both replicas are in sync (a crawl started
# before would wait for the first full synchronisation).
start_ha() {
  local out=$1 n port replica
  ports=()
  for n in 0 1 2; do
    port=$(free_port)
    mkdir -p "$out/r$n"
    replica=()
    if [ "$n" -gt 0 ]; then replica=(--replicaof 127.0.0.1 "${ports[0]}"); fi
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$PWD/$out/r$n" \
      --repl-diskless-sync-delay 0 --logfile redis.log --daemonize no "${replica[@]}" > /dev/null 2>&1 &
    pids+=($!)
    if [ "$n" -eq 0 ]; then master_pid=$!; fi
    ports+=("$port")
    for _ in $(seq 1 100); do redis_up "$port" && break; sleep 0.1; done
  done
  sentinels=()
  for n in 1 2 3; do
    port=$(free_port)
    mkdir -p "$out/s$n"
    printf '%s\n' "port $port" "bind 127.0.0.1" "dir $PWD/$out/s$n" "logfile sentinel.log" \
      "sentinel monitor crawl 127.0.0.1 ${ports[0]} 2" "sentinel down-after-milliseconds crawl 1000" \
      "sentinel failover-timeout crawl 10000" > "$out/s$n/sentinel.conf"
    redis-server "$out/s$n/sentinel.conf" --sentinel > /dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do redis_up "$port" && break; sleep 0.1; done
    sentinels+=("\"redis://127.0.0.1:$port\"")
  done
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "${ports[0]}" INFO replication 2>/dev/null | grep -c 'state=online')" -eq 2 ] && return 0
    sleep 0.1
  done
  echo "start_ha: the replicas did not reach the master within 10 s" >&2
  return 1
}

# start_demo_crawlers OUT REDIS_TOML [AGENT_SUFFIX]: three crawl-engine processes (p1..p3 under OUT, each its own
# data_dir and JSONL) on the demo site's `seeds`, sharing one crawl through the Redis that REDIS_TOML (lines of
# [frontier.redis]) names. Sets `crawlers` and appends each process to `pids`.
start_demo_crawlers() {
  local out=$1 redis_toml=$2 n agent
  crawlers=()
  for n in 1 2 3; do
    mkdir -p "$out/p$n"
    agent="crawl-engine-demo/0.1 (+https://example.invalid/bot)"
    [ -n "${3:-}" ] && agent="$agent p$n"
    cat > "$out/p$n/config.toml" <<TOML
[crawl]
user_agent = "$agent"
[politeness]
per_host_concurrency = 4
min_delay_ms = 5
[frontier]
data_dir = "$PWD/$out/p$n/crawl-data"
backend = "redis"
[frontier.redis]
$redis_toml
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
    "$bin/crawl-engine" --config "$out/p$n/config.toml" --no-progress "${seeds[@]}" > "$out/p$n/summary.txt" \
      2> "$out/p$n/log.txt" &
    crawlers+=($!)
    pids+=($!)
  done
}
