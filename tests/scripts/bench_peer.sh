#!/usr/bin/env bash
# make bench-peer (part of make bench): crawl-engine against wget2 on the same generated sites in the same run.
#
# Two sites, each 8 hosts x 2,600 pages on 127.0.0.30-37 with gzip: the plain one of make bench-crawl (~4 KB pages)
# and the realistic corpus (testsite --realistic: documentation-like pages of 5-60 KB). On each, crawl-engine and
# wget2 alternate, REPEATS runs each (default 3). Every run gets a freshly started test site, so its request counter
# (printed by the site at exit) is that run's; every run starts from nothing (crawl-engine's data_dir and JSONL, and
# wget2's download directory, are deleted after it).
#
# Both crawl all hosts from page 0 of each, robots.txt respected, no politeness delay, gzip:
#   crawl-engine: politeness off, concurrency 64 (64 per host), durable frontier, JSONL output, no WARC;
#   wget2 -r -l inf --span-hosts --domains=<the 8 hosts> --max-threads=$WGET2_THREADS (64: crawl-engine's
#   concurrency) --robots=on --wait=0 --compression=gzip -q, and --filter-urls --reject-regex=/nofollow/
#   because wget2 does not honour rel=nofollow (the only links the site marks so).
# wget2 also reads the sitemaps robots.txt names, so both fetch the same URLs; the site writes the expected set.
#
# Per run: wall time, CPU seconds (user + sys of the crawler process, from getrusage of the child), peak RSS, the
# requests the site answered, and the 200 pages (crawl-engine: its summary; wget2: files it saved, less robots.txt
# and sitemaps). Then the medians and the ratios crawl-engine / wget2 of responses per second and CPU per response.
# Environment: REPEATS, WGET2_THREADS (64), SITES ("plain realistic"), HOSTS (8), PAGES (2600), RUN_TIMEOUT_S (900),
# BASE_BIN (another crawl-engine binary, e.g. an earlier release: it runs third in every round, as "base", with the
# same config, and the ratios of both builds to wget2 and to each other are printed).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
WGET2_THREADS="${WGET2_THREADS:-64}"
SITES="${SITES:-plain realistic}"
HOSTS="${HOSTS:-8}"
PAGES="${PAGES:-2600}"
RUN_TIMEOUT_S="${RUN_TIMEOUT_S:-900}"
FIRST_OCTET=30
out=.bench-peer

if ! command -v wget2 > /dev/null 2>&1; then
  echo "bench-peer: wget2 not found, installing it: apt-get install -y wget2"
  apt-get install -y wget2 > /dev/null
fi
echo "bench-peer: $(wget2 --version 2>/dev/null | head -n 1), crawl-engine $bin/crawl-engine, REPEATS=$REPEATS," \
  "wget2 --max-threads=$WGET2_THREADS, $HOSTS hosts x $PAGES pages${BASE_BIN:+, base build $BASE_BIN}"

rm -rf "$out" && mkdir -p "$out"
domains=$(seq -s, -f "127.0.0.%g" "$FIRST_OCTET" $((FIRST_OCTET + HOSTS - 1)))
site_pid=""
tmp=""
cleanup() {
  if [ -n "$site_pid" ]; then kill "$site_pid" 2>/dev/null || true; fi
  if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT

bench_config > "$out/config.toml"

# measure FILE CMD...: runs CMD, writes "wall user sys maxrss_kib exit" of it (and only it) to FILE.
measure() {
  python3 - "$@" <<'PY'
import os, resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
start = time.monotonic()
child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(child.pid, 0)
wall = time.monotonic() - start
with open(out, "w") as f:
    f.write(f"{wall:.3f} {ru.ru_utime:.3f} {ru.ru_stime:.3f} {ru.ru_maxrss} {os.waitstatus_to_exitcode(status)}\n")
PY
}

# start_site NAME: a fresh test site; its seeds in $out/seeds, its expected crawl in $out/expected-NAME.json.
start_site() {
  local extra=()
  if [ "$1" = realistic ]; then extra=(--realistic); else extra=(--page-bytes 4000); fi
  rm -f "$out/seeds"
  "$bin/testsite" --hosts "$HOSTS" --pages "$PAGES" --first-octet "$FIRST_OCTET" "${extra[@]}" \
    --seeds-file "$out/seeds" --all-seeds --expected-file "$out/expected-$1.json" > "$out/site.log" 2>&1 &
  site_pid=$!
  for _ in $(seq 1 300); do [ -s "$out/seeds" ] && break; sleep 0.1; done
  [ -s "$out/seeds" ] || { echo "bench-peer: the test site did not start" >&2; cat "$out/site.log" >&2; exit 1; }
}

# stop_site: stops the site and sets $requests to the requests it answered.
stop_site() {
  kill "$site_pid"
  wait "$site_pid" 2>/dev/null || true
  site_pid=""
  requests=$(sed -n 's/.*served requests=\([0-9]*\).*/\1/p' "$out/site.log")
  [ -n "$requests" ] || { echo "bench-peer: the test site did not report its requests" >&2; exit 1; }
}

for site in $SITES; do
  for i in $(seq 1 "$REPEATS"); do
    for tool in crawl-engine wget2 ${BASE_BIN:+base}; do
      start_site "$site"
      mapfile -t seeds < "$out/seeds"
      tag="$site-$tool-$i"
      if [ "$tool" != wget2 ]; then
        rm -rf "$out/crawl-data" "$out/crawl.jsonl"
        args=()
        for s in "${seeds[@]}"; do args+=(--seed "$s"); done
        measure "$out/time-$tag" timeout "$RUN_TIMEOUT_S" "$(crawler "$tool")" --config "$out/config.toml" \
          --no-progress --summary-json "$out/summary-$tag.json" "${args[@]}"
        pages=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["by_status"].get("2xx", 0))' \
          "$out/summary-$tag.json")
        rm -rf "$out/crawl-data" "$out/crawl.jsonl"
      else
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-peer-wget2.XXXXXX")
        measure "$out/time-$tag" timeout "$RUN_TIMEOUT_S" wget2 -r -l inf --span-hosts --domains="$domains" \
          --max-threads="$WGET2_THREADS" --robots=on --wait=0 --compression=gzip --filter-urls \
          --reject-regex=/nofollow/ -q -P "$tmp" "${seeds[@]}"
        pages=$(find "$tmp" -type f ! -name robots.txt ! -name 'sitemap*.xml' | wc -l)
        rm -rf "$tmp"
        tmp=""
      fi
      stop_site
      read -r wall user sys rss code < "$out/time-$tag"
      # wget2 exits 8 when some answers were errors (the site's 404s)
      if [ "$code" != 0 ] && ! { [ "$tool" = wget2 ] && [ "$code" = 8 ]; }; then
        echo "bench-peer: $tool exited $code on the $site site (run $i)" >&2
        exit 1
      fi
      echo "$site $tool $i $wall $user $sys $rss $requests $pages" >> "$out/runs.txt"
      echo "bench-peer: $site $tool run $i: $requests requests, $pages pages 200 in ${wall}s," \
        "cpu ${user}+${sys}s, peak rss $((rss / 1024)) MiB"
    done
  done
done
trap - EXIT

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
runs = {}
for line in open(f"{out}/runs.txt"):
    site, tool, i, wall, user, sys_, rss, req, pages = line.split()
    runs.setdefault(site, {}).setdefault(tool, []).append(
        dict(wall=float(wall), cpu=float(user) + float(sys_), rss=int(rss) / 1024, req=int(req), pages=int(pages)))
for site, tools in runs.items():
    e = json.load(open(f"{out}/expected-{site}.json"))
    want_pages = len(e["fetched_ok"])
    want_req = want_pages + len(e["redirects"]) + len(e["not_found"])
    print(f"bench-peer: {site} site: expected {want_pages} pages 200, {want_req} page requests "
          f"(+ robots.txt and sitemaps)")
    med = {}
    for tool, rs in tools.items():
        m = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "rss", "req", "pages")}
        m["rate"] = statistics.median(r["req"] / r["wall"] for r in rs)
        m["cpu_per_k"] = statistics.median(r["cpu"] * 1000 / r["req"] for r in rs)
        med[tool] = m
        print(f"bench-peer: {site} median {tool:12}: {m['req']:.0f} requests ({m['pages']:.0f} pages 200) in "
              f"{m['wall']:.2f}s = {m['rate']:.0f} responses/s, {m['cpu']:.2f} CPU s = {m['cpu_per_k']:.3f} per 1000, "
              f"peak RSS {m['rss']:.1f} MiB")
    for a, b in (("crawl-engine", "wget2"), ("base", "wget2"), ("crawl-engine", "base")):
        if a in med and b in med:
            c, w = med[a], med[b]
            print(f"bench-peer: {site} {a} / {b}: responses/s {c['rate'] / w['rate']:.2f}, "
                  f"CPU per response {c['cpu_per_k'] / w['cpu_per_k']:.2f}, peak RSS {c['rss'] / w['rss']:.2f}")
PY
