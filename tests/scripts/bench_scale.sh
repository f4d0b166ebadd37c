#!/usr/bin/env bash
# make bench-scale: how the crawler behaves with a large frontier.
#
# For each target size (known URLs; SIZES="20000 1000000 10000000" by default) the release crawl-engine crawls the
# wide-mode testsite (4 hosts on 127.0.0.40-43, each page linking 1,000 distinct URLs of its host, most of them 404)
# with politeness off, until the crawl_frontier_urls{state="known"} gauge reaches the size, and is then killed with
# SIGKILL. Its data_dir and JSONL are kept as a snapshot; REPEATS times the snapshot is restored and the same command
# restarted, against the site restarted with --wide-siblings (its pages then link only URLs already linked, so the
# frontier keeps its size while the resumed crawl is measured; link extraction and dedup still run). Measured:
#   build_s      wall time of the first run until the frontier held the size, and the pages it fetched for that
#   commits_0.25s  the store's commits in that run that took 0.25 s or more, and max_commit the bucket bound (s) of
#                the slowest (crawl_store_request_duration_seconds{op="commit"})
#   rss_build    peak RSS (VmHWM) of that run; rss_restart: median peak RSS of the restarted runs at the end of the window
#   disk_B/url   bytes the data_dir takes on disk (du --block-size=1) per known URL at the kill; apparent_B/url the
#                same from the files' lengths (du -sb: the store's file grows in doubling steps whose unwritten tail
#                takes no disk); jsonl_MiB: the JSONL beside it
#   first_req_s  median time from starting the restarted process to the first request the testsite receives
#   pages/s      median rate of HTTP answers over WINDOW_S seconds of the restarted run (from /metrics), and its
#                ratio to the first size's rate
# Environment: SIZES, REPEATS (3), WINDOW_S (5), WIDE_LINKS (1000), WIDE_OK_RATIO (0.1), METRICS_PORT (19464), SITE_PORT (18480),
# BUDGET_S (5400: the whole script stops with an error past it), CRAWL_PREFIX (e.g. a profiler), CALLGRIND_PAGES
# (see the end).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
SIZES="${SIZES-20000 1000000 10000000}"   # SIZES= (empty): no size, e.g. with CALLGRIND_PAGES alone
REPEATS="${REPEATS:-3}"
WINDOW_S="${WINDOW_S:-5}"
WIDE_LINKS="${WIDE_LINKS:-1000}"
WIDE_OK_RATIO="${WIDE_OK_RATIO:-0.1}"
METRICS_PORT="${METRICS_PORT:-19464}"
SITE_PORT="${SITE_PORT:-18480}"
BUDGET_S="${BUDGET_S:-5400}"
out=.bench-scale
deadline=$(($(date +%s) + BUDGET_S))

site=""
crawler=""
cleanup() {
  if [ -n "$crawler" ]; then kill -9 "$crawler" 2>/dev/null || true; wait "$crawler" 2>/dev/null || true; fi
  if [ -n "$site" ]; then kill "$site" 2>/dev/null || true; wait "$site" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "bench-scale: $*" >&2; exit 1; }
check_time() { [ "$(date +%s)" -lt "$deadline" ] || die "time budget of ${BUDGET_S}s exceeded ($1)"; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }

for b in crawl-engine testsite; do [ -x "$bin/$b" ] || die "$bin/$b missing: run make release"; done
rm -rf "$out" && mkdir -p "$out"

# The site listens on one fixed port so that it can be restarted in another mode under the same URLs.
start_site() {
  rm -f "$out/seeds"
  "$bin/testsite" --hosts 4 --pages 1 --links 0 --orphans 0 --no-sitemaps --first-octet 40 --port "$SITE_PORT" \
    --wide-links "$WIDE_LINKS" --wide-ok-ratio "$WIDE_OK_RATIO" --all-seeds --seeds-file "$out/seeds" \
    --first-request-file "$out/first" "$@" >> "$out/testsite.log" 2>&1 &
  site=$!
  for _ in $(seq 1 100); do [ -s "$out/seeds" ] && break; sleep 0.1; done
  [ -s "$out/seeds" ] || die "testsite did not start (see $out/testsite.log)"
}
stop_site() {
  kill "$site" 2>/dev/null || true
  wait "$site" 2>/dev/null || true
  site=""
}
start_site
read_seeds "$out/seeds"

{
  bench_config "" warn "follow_sitemaps = false"
  printf 'metrics_listen = "127.0.0.1:%s"\n' "$METRICS_PORT"
} > "$out/config.toml"

# The value of one metric (summed over its label sets) from the crawler's /metrics; empty while unreachable.
metric() {
  curl -s --max-time 1 "http://127.0.0.1:$METRICS_PORT/metrics" 2>/dev/null |
    awk -v m="$1" 'index($0, m) == 1 { s += $NF; n++ } END { if (n) printf "%d\n", s }'
}
known() { metric 'crawl_frontier_urls{state="known"}'; }
# The store's commits so far from the crawler's /metrics: "SLOW MAX", the commits that took 0.25 s or more, and the
# bucket bound of the slowest (the first bucket holding every commit; ">5" past the last).
commits() {
  curl -s --max-time 1 "http://127.0.0.1:$METRICS_PORT/metrics" 2>/dev/null | awk '
    /^crawl_store_request_duration_seconds_bucket/ && /op="commit"/ {
      match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); n++; les[n] = le; counts[n] = $NF
      if (le == "0.25") below = $NF
    }
    /^crawl_store_request_duration_seconds_count/ && /op="commit"/ { total = $NF }
    END {
      if (total == "") { print "? ?"; exit }
      max = ">5"
      for (i = 1; i <= n; i++) if (counts[i] == total && les[i] != "+Inf") { max = les[i]; break }
      printf "%d %s\n", total - below, max
    }'
}
answers() { metric 'crawl_responses_total{'; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

start_crawler() {
  ${CRAWL_PREFIX:-} "$bin/crawl-engine" --config "$out/config.toml" --no-progress "${seeds[@]}" \
    >> "$out/crawler.log" 2>&1 &
  crawler=$!
}
kill_crawler() {
  kill -9 "$crawler" 2>/dev/null || true
  wait "$crawler" 2>/dev/null || true
  crawler=""
}
alive() { [ -n "$crawler" ] && kill -0 "$crawler" 2>/dev/null; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rows=()
base_rate=""
short=""
for size in $SIZES; do
  echo "bench-scale: size $size: building the frontier" >&2
  rm -rf "$out/crawl-data" "$out/crawl.jsonl" "$out/snap"
  t0=$(now)
  start_crawler
  k=0
  while :; do
    check_time "building $size"
    alive || die "crawler exited before the frontier reached $size (see $out/crawler.log)"
    k=$(known); k=${k:-0}
    [ "$k" -ge "$size" ] && break
    sleep 0.05
  done
  build_s=$(calc "$(now) - $t0")
  fetched=$(answers); fetched=${fetched:-0}
  read -r slow_commits max_commit <<< "$(commits)"
  rss_build=$(hwm_kib "$crawler")
  kill_crawler
  known_at_kill=$k
  disk=$(du -s --block-size=1 "$out/crawl-data" | cut -f1)
  apparent=$(du -sb "$out/crawl-data" | cut -f1)
  jsonl=$(stat -c %s "$out/crawl.jsonl" 2>/dev/null || echo 0)
  mkdir -p "$out/snap"
  cp -a "$out/crawl-data" "$out/crawl.jsonl" "$out/snap/"
  # Resumed runs meet pages linking only URLs they know: the frontier keeps its size while they are measured.
  stop_site
  start_site --wide-siblings

  firsts=""; rates=""; rss_restart=""
  for r in $(seq 1 "$REPEATS"); do
    check_time "restart $r of $size"
    rm -rf "$out/crawl-data" "$out/crawl.jsonl"
    cp -a "$out/snap/crawl-data" "$out/snap/crawl.jsonl" "$out/"
    # Requests of the killed crawler still in the server's buffers are counted before arming.
    sleep 0.5
    rm -f "$out/first"
    kill -USR1 "$site"
    for _ in $(seq 1 200); do grep -q armed "$out/first" 2>/dev/null && break; sleep 0.01; done
    grep -q armed "$out/first" 2>/dev/null || die "testsite did not arm its first-request marker"
    t0=$(now)
    start_crawler
    while ! grep -q '^first' "$out/first" 2>/dev/null; do
      check_time "waiting for the first request after restart $r of $size"
      alive || die "restarted crawler exited (see $out/crawler.log)"
      sleep 0.005
    done
    t1=$(awk '/^first/ { print $2 }' "$out/first")
    firsts="$firsts $(calc "$t1 - $t0")"
    a0=""
    while [ -z "$a0" ]; do check_time "metrics of restart $r"; alive || die "restarted crawler exited"; a0=$(answers); [ -n "$a0" ] || sleep 0.05; done
    ta=$(now)
    q0=$(metric 'crawl_frontier_urls{state="queued"}'); q0=${q0:-0}
    # The window ends after WINDOW_S, or early when the queue has run down to a fifth (a small frontier drains).
    while :; do
      sleep 0.25
      a1=$(answers); tb=$(now)
      [ -n "$a1" ] || die "restarted crawler stopped answering /metrics"
      q=$(metric 'crawl_frontier_urls{state="queued"}'); q=${q:-0}
      if [ "$(calc "($tb - $ta) >= $WINDOW_S")" != 0.000000 ]; then break; fi
      if [ "$q" -lt $((q0 / 5)) ]; then
        case " $short " in *" $size "*) ;; *) short="$short $size" ;; esac
        break
      fi
    done
    rates="$rates $(calc "($a1 - $a0) / ($tb - $ta)")"
    rss_restart="$rss_restart $(hwm_kib "$crawler")"
    kill_crawler
  done
  stop_site
  start_site
  first_med=$(echo "$firsts" | median)
  rate_med=$(echo "$rates" | median)
  rss_r_med=$(echo "$rss_restart" | median)
  [ -n "$base_rate" ] || base_rate=$rate_med
  rows+=("$(printf '%10d %10d %8.1f %9d %12s %10s %10.1f %12.1f %10.1f %14.1f %10.1f %12.3f %9.0f %7.2f' \
    "$size" "$known_at_kill" "$build_s" "$fetched" "$slow_commits" "$max_commit" "$(calc "$rss_build / 1024")" \
    "$(calc "$rss_r_med / 1024")" "$(calc "$disk / $known_at_kill")" "$(calc "$apparent / $known_at_kill")" \
    "$(calc "$jsonl / 1048576")" "$first_med" "$rate_med" "$(calc "$rate_med / $base_rate")")")
  echo "bench-scale: size $size: first request after restart (s):$firsts; pages/s:$rates" >&2
done

if [ ${#rows[@]} -gt 0 ]; then
  printf '%10s %10s %8s %9s %12s %10s %10s %12s %10s %14s %10s %12s %9s %7s\n' size known build_s fetched \
    commits_0.25s max_commit rss_build_MiB \
    rss_restart_MiB disk_B/url apparent_B/url jsonl_MiB first_req_s pages/s "vs ${SIZES%% *}"
  for row in "${rows[@]}"; do echo "$row"; done
fi
[ -z "$short" ] || echo "note: the queue ran down before WINDOW_S ended, so windows were shorter, at size(s):$short"

# CALLGRIND_PAGES=N: then a fresh crawl of the wide site until N pages are fetched, under valgrind --tool=callgrind,
# and its instruction count: a figure that does not move with the machine's load (run it once per build, with
# CARGO_TARGET_DIR naming the other build's target folder, to compare two builds).
if [ -n "${CALLGRIND_PAGES:-}" ]; then
  command -v valgrind > /dev/null || die "CALLGRIND_PAGES needs valgrind"
  rm -rf "$out/crawl-data" "$out/crawl.jsonl"
  sed -e "s/^max_depth = 1000\$/max_depth = 1000\nmax_pages = $CALLGRIND_PAGES/" \
    -e "s/127.0.0.1:$METRICS_PORT/127.0.0.1:0/" "$out/config.toml" > "$out/config-cg.toml"
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "$bin/crawl-engine" \
    --config "$out/config-cg.toml" --no-progress "${seeds[@]}" >> "$out/crawler.log" 2>&1
  total=$(sed -n 's/^\(summary\|totals\): \([0-9]*\).*/\2/p' "$out/callgrind.out" | head -1)
  echo "bench-scale: callgrind: $CALLGRIND_PAGES pages of the wide site from a fresh frontier: $total instructions"
fi
