#!/usr/bin/env bash
# make bench-fresh: freshness of continuous crawling, the adaptive revisit schedule against a fixed interval (and
# wget2 mirroring at that interval), at the same request budget.
#
# The site: testsite --changing, HOSTS (4) hosts of PAGES (40) pages (4 links each, plus 3 sitemap-only orphans) on
# 127.0.0.50-..., no redirects or missing pages, every listed page on a schedule drawn from the seed (4 in 10
# periodic, every 1 min, 10 min or 1 h; 3 never change; 2 bursty, 5 changes 10 s apart every hour; 1 Poisson, mean
# 15 min), with a strong ETag, a Last-Modified and 304s to conditional requests, and NEW_PAGES (4) pages per host
# born one every 30 site seconds from the start, listed only in the sitemap. The site clock runs TIME_SCALE (60) site
# seconds per real second, so 1 min, 10 min and 1 h are 1, 10 and 60 real seconds; its epoch is a day back, so its
# dates stay behind the real clock (a crawler drops a Last-Modified or <lastmod> in its future). Its <lastmod> are
# thus never after a fetch on the crawler's clock: sitemap hints bring no visit forward, and what is measured is the
# revisit schedule alone. Every run gets a freshly started site with the same seed: the same schedules from its start.
#
# Per round, each for WINDOW_S (150) real seconds, then SIGTERM (crawl-engine) or the end of the loop (wget2):
#   adaptive  crawl-engine, [recrawl] enabled, adaptive, interval_s = FIRST_INTERVAL_S (10) before a URL's first
#             revisit, min_interval_s = MIN_INTERVAL_S (1), max_interval_s = 3600, inc_rate = INC_RATE and
#             dec_rate = DEC_RATE (0.2 and 0.3, the defaults), robots_cache_s = ROBOTS_CACHE_S
#             (10: robots.txt and the sitemaps it names are read again that often, so the new pages are found),
#             4 requests per host at a time, no delay;
#   fixed     the same with adaptive = false and the interval_s at which every page gets at least as many
#             requests as the adaptive run made per page (fixed_interval below; FIXED_INTERVAL_S sets it);
#   wget2     (WGET2=0 skips it) `wget2 -r -N` (If-Modified-Since from its copies' times) over the same site into
#             one directory, started every fixed interval_s (when the previous mirror has ended).
# The figures come from the site's truth file (every page's change instants) against crawl-engine's JSONL, or the
# site's request log for wget2, through the `freshness` binary (tests/src/bin/freshness.rs): mean share of time a
# page's copy was current, mean age of the copies (site seconds), requests per page, and the share of 304s among
# revisits of unchanged pages (crawl-engine's `changed: false`, and by the truth). REPEATS (1) rounds, then medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
HOSTS="${HOSTS:-4}"
PAGES="${PAGES:-40}"
NEW_PAGES="${NEW_PAGES:-4}"
TIME_SCALE="${TIME_SCALE:-60}"
WINDOW_S="${WINDOW_S:-150}"
FIRST_INTERVAL_S="${FIRST_INTERVAL_S:-10}"
MIN_INTERVAL_S="${MIN_INTERVAL_S:-1}"
ROBOTS_CACHE_S="${ROBOTS_CACHE_S:-10}"
FIXED_INTERVAL_S="${FIXED_INTERVAL_S:-}"
INC_RATE="${INC_RATE:-0.2}"
DEC_RATE="${DEC_RATE:-0.3}"
REPEATS="${REPEATS:-1}"
WGET2="${WGET2:-1}"
FIRST_OCTET=50
out=.bench-fresh
for b in crawl-engine testsite freshness; do
  [ -x "$bin/$b" ] || { echo "bench-fresh: $bin/$b missing: run make release" >&2; exit 1; }
done
if [ "$WGET2" = 1 ] && ! command -v wget2 > /dev/null 2>&1; then
  echo "bench-fresh: wget2 not found, installing it: apt-get install -y wget2"
  apt-get install -y wget2 > /dev/null
fi
rm -rf "$out" && mkdir -p "$out"
site=""
crawl=""
cleanup() {
  if [ -n "$crawl" ]; then kill "$crawl" 2>/dev/null || true; fi
  if [ -n "$site" ]; then kill "$site" 2>/dev/null || true; fi
}
trap cleanup EXIT
now_ms() { date +%s%3N; }
domains=$(seq -s, -f "127.0.0.%g" "$FIRST_OCTET" $((FIRST_OCTET + HOSTS - 1)))
echo "bench-fresh: $HOSTS hosts x $PAGES pages (+ orphans, $NEW_PAGES new pages per host), time scale $TIME_SCALE," \
  "window ${WINDOW_S}s, REPEATS=$REPEATS, adaptive first interval ${FIRST_INTERVAL_S}s, floor ${MIN_INTERVAL_S}s"

# start_site RUN: a fresh changing site for RUN; its seeds in $out/RUN/seeds. Returns once some new pages exist.
start_site() {
  local run=$1 epoch
  epoch=$(($(date +%s) - 86400))
  mkdir -p "$out/$run"
  "$bin/testsite" --hosts "$HOSTS" --pages "$PAGES" --links 4 --first-octet "$FIRST_OCTET" --page-bytes 2000 \
    --no-redirects --no-missing --all-seeds --seeds-file "$out/$run/seeds" --changing --time-scale "$TIME_SCALE" --epoch "$epoch" \
    --new-pages "$NEW_PAGES" --new-every 30 --truth-file "$out/$run/truth.json" \
    --request-log-file "$out/$run/requests.log" --request-log-unix > "$out/$run/site.log" 2>&1 &
  site=$!
  wait_for "$out/$run/seeds"
  [ -s "$out/$run/seeds" ] || { echo "bench-fresh: the test site did not start" >&2; cat "$out/$run/site.log" >&2; exit 1; }
  # one real second: the first new pages (born 30 site seconds apart) are in the sitemap when it is read
  sleep 1
}

# stop_site RUN: stops the site (it writes its truth file and request log); the requests it served go to
# $out/RUN/served.
stop_site() {
  kill "$site"
  wait "$site" 2>/dev/null || true
  site=""
  sed -n 's/.*served requests=\([0-9]*\).*/\1/p' "$out/$1/site.log" > "$out/$1/served"
}

# crawl RUN ADAPTIVE INTERVAL_S: crawl-engine on a fresh site for WINDOW_S, then SIGTERM.
crawl() {
  local run=$1 adaptive=$2 interval=$3 dir="$PWD/$out/$1" start stop code
  start_site "$run"
  read_seeds "$dir/seeds"
  cat > "$dir/config.toml" <<TOML
[crawl]
max_depth = 1000
robots_cache_s = $ROBOTS_CACHE_S
[politeness]
per_host_concurrency = 4
min_delay_ms = 0
[fetch]
concurrency = 16
[frontier]
data_dir = "$dir/crawl-data"
[output]
jsonl = "$dir/crawl.jsonl"
[recrawl]
enabled = true
adaptive = $adaptive
interval_s = $interval
min_interval_s = $MIN_INTERVAL_S
max_interval_s = 3600
inc_rate = $INC_RATE
dec_rate = $DEC_RATE
[security]
allow_private_networks = true
[observability]
log_level = "warn"
metrics_listen = ""
TOML
  start=$(now_ms)
  "$bin/crawl-engine" --config "$dir/config.toml" --no-progress "${seeds[@]}" > "$dir/summary.txt" 2> "$dir/log.txt" &
  crawl=$!
  sleep "$WINDOW_S"
  stop=$(now_ms)
  kill -TERM "$crawl"
  code=0
  wait "$crawl" || code=$?
  crawl=""
  if [ "$code" != 0 ]; then
    echo "bench-fresh: crawl-engine exited $code in $run" >&2
    tail -n 20 "$dir/log.txt" >&2
    exit 1
  fi
  stop_site "$run"
  "$bin/freshness" --truth "$dir/truth.json" --jsonl "$dir/crawl.jsonl" --from-ms "$start" --to-ms "$stop" \
    --json "$dir/report.json" --label "$run" > "$dir/report.txt"
}

# mirror RUN INTERVAL_S: wget2 -r -N into one directory every INTERVAL_S for WINDOW_S.
mirror() {
  local run=$1 interval=$2 dir="$PWD/$out/$1" start stop next left
  start_site "$run"
  mapfile -t urls < "$dir/seeds"
  start=$(now_ms)
  stop=$((start + WINDOW_S * 1000))
  next=$start
  while [ "$(now_ms)" -lt "$stop" ]; do
    left=$(((stop - $(now_ms) + 999) / 1000))
    timeout "$left" wget2 -r -l inf -N --span-hosts --domains="$domains" --max-threads=8 --robots=on --wait=0 \
      --compression=gzip --filter-urls --reject-regex=/nofollow/ -q -P "$dir/mirror" "${urls[@]}" \
      >> "$dir/wget2.log" 2>&1 || true
    next=$((next + interval * 1000))
    while [ "$(now_ms)" -lt "$next" ] && [ "$(now_ms)" -lt "$stop" ]; do sleep 0.05; done
  done
  stop=$(now_ms)
  stop_site "$run"
  "$bin/freshness" --truth "$dir/truth.json" --request-log "$dir/requests.log" --from-ms "$start" --to-ms "$stop" \
    --json "$dir/report.json" --label "$run" > "$dir/report.txt"
  rm -rf "$dir/mirror"
}

# fixed_interval PER_PAGE COVERED: the interval at which every page gets at least PER_PAGE requests in WINDOW_S,
# counted the way the adaptive run was: its pages had a copy for COVERED of the window, so their first fetch came
# (1 - COVERED) x WINDOW_S in on average, and WINDOW_S less that must hold PER_PAGE - 1 revisits (rounded up). A
# revisit starts about a second after its interval (due times are whole seconds, promoted every second): one second
# less.
fixed_interval() {
  python3 -c "import math, sys
w, r, c = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
revisits = max(1, math.ceil(r - 1 - 1e-9))
print(max(1, int((w - (1 - c) * w) / revisits) - 1))" "$WINDOW_S" "$1" "$2"
}

# field RUN EXPR: a figure of RUN's report (a Python expression over `r`, the report's JSON).
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$out/$1/report.json"; }

for i in $(seq 1 "$REPEATS"); do
  crawl "adaptive-$i" true "$FIRST_INTERVAL_S"
  per_page=$(field "adaptive-$i" 'r["all"]["requests_per_page"]')
  covered=$(field "adaptive-$i" 'r["all"]["covered_share"]')
  interval=${FIXED_INTERVAL_S:-$(fixed_interval "$per_page" "$covered")}
  echo "$interval" > "$out/interval-$i"
  echo "bench-fresh: round $i: adaptive made $per_page requests per page in ${WINDOW_S}s: fixed interval ${interval}s"
  crawl "fixed-$i" false "$interval"
  if [ "$WGET2" = 1 ]; then mirror "wget2-$i" "$interval"; fi
  cat "$out/adaptive-$i/report.txt" "$out/fixed-$i/report.txt"
  if [ "$WGET2" = 1 ]; then cat "$out/wget2-$i/report.txt"; fi
done
trap - EXIT

REPEATS="$REPEATS" WGET2="$WGET2" python3 - "$out" <<'PY'
import json, os, statistics, sys
out, repeats = sys.argv[1], int(os.environ["REPEATS"])
runs = ["adaptive", "fixed"] + (["wget2"] if os.environ["WGET2"] == "1" else [])
rep = {r: [json.load(open(f"{out}/{r}-{i}/report.json")) for i in range(1, repeats + 1)] for r in runs}
served = {r: [int(open(f"{out}/{r}-{i}/served").read() or 0) for i in range(1, repeats + 1)] for r in runs}
intervals = [int(open(f"{out}/interval-{i}").read()) for i in range(1, repeats + 1)]
med = statistics.median

def share(a, b):
    return a / b if b else 0.0

print(f"bench-fresh: medians of {repeats}; fixed interval {med(intervals):.0f} s (per round: "
      f"{', '.join(map(str, intervals))})")
print(f"{'run':10} {'fresh':>7} {'age (site s)':>12} {'req/page':>9} {'site requests':>13} "
      f"{'unchanged revisits':>18} {'304 share':>9} {'truth-unchanged':>15} {'304 share':>9}")
m = {}
for r in runs:
    a = [x["all"] for x in rep[r]]
    m[r] = dict(
        fresh=med(x["fresh_share"] for x in a),
        age=med(x["mean_age_s"] for x in a),
        rpp=med(x["requests_per_page"] for x in a),
        served=med(served[r]),
        unchanged=med(x["unchanged_revisits"] for x in a),
        u304=med(share(x["unchanged_304"], x["unchanged_revisits"]) for x in a),
        still=med(x["still_revisits"] for x in a),
        s304=med(share(x["still_304"], x["still_revisits"]) for x in a),
    )
    v = m[r]
    u = f"{v['unchanged']:18.0f} {v['u304'] * 100:8.1f}%" if r != "wget2" else f"{'-':>18} {'-':>9}"
    print(f"{r:10} {v['fresh']:7.3f} {v['age']:12.0f} {v['rpp']:9.2f} {v['served']:13.0f} {u} "
          f"{v['still']:15.0f} {v['s304'] * 100:8.1f}%")
print("per class (median fresh share / requests per page):")
classes = sorted({g["class"] for r in runs for x in rep[r] for g in x["classes"]})
for c in classes:
    cells = []
    for r in runs:
        gs = [g for x in rep[r] for g in x["classes"] if g["class"] == c]
        pages = med(g["pages"] for g in gs) if gs else 0
        cells.append(f"{r} {med(g['fresh_share'] for g in gs) if gs else 0:.3f} / "
                     f"{med(g['requests_per_page'] for g in gs) if gs else 0:.1f}")
    print(f"  {c:16} {pages:4.0f} pages: " + ", ".join(cells))
a, f = m["adaptive"], m["fixed"]
print(f"bench-fresh: adaptive / fixed: fresh share {share(a['fresh'], f['fresh']):.2f}, "
      f"age {share(a['age'], f['age']):.2f}, requests per page {share(a['rpp'], f['rpp']):.2f}, "
      f"site requests {share(a['served'], f['served']):.2f}")
if "wget2" in m:
    w = m["wget2"]
    print(f"bench-fresh: wget2 / fixed: fresh share {share(w['fresh'], f['fresh']):.2f}, "
          f"age {share(w['age'], f['age']):.2f}, requests per page {share(w['rpp'], f['rpp']):.2f}")
budget = "yes" if f["rpp"] >= a["rpp"] else "NO: compare with care"
print(f"bench-fresh: same budget: fixed {f['rpp']:.2f} requests per page, adaptive {a['rpp']:.2f} "
      f"(fixed at least as many: {budget})")
for r in ("adaptive", "fixed"):
    ok = "yes" if m[r]["unchanged"] and m[r]["u304"] >= 0.9 else "no"
    print(f"bench-fresh: {r}: {m[r]['u304'] * 100:.1f} % of {m[r]['unchanged']:.0f} revisits of unchanged pages "
          f"were 304s (>= 90 %: {ok})")
PY
