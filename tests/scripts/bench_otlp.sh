#!/usr/bin/env bash
# make bench-otlp: the crawl of make bench-crawl (8 hosts x 2,600 pages on 127.0.0.30-37, politeness off,
# concurrency 64) without a trace exporter (none) and with one (sample_ratio 1, every URL one trace) sending over
# OTLP/gRPC (grpc, otlp_protocol = "grpc") and over OTLP/HTTP (http, otlp_protocol = "http/protobuf") to otlpsink, a loopback OTLP receiver
# of both that only counts spans (walking the protobuf, decoding no span: it stands for a collector on another
# machine and takes little of the two cores the crawl runs on). Alternates REPEATS runs of each (default 3, in ABBA
# order); prints each run's CPU seconds per 1,000 pages and peak RSS, the medians, the ratios (exporter / none),
# and per run the spans the sink received, the spans the engine counted dropped (its "trace exporter shut down"
# line at exit) and the sink's CPU, the median of the per-pair CPU ratios, and the ratio of the pairs' CPU summed
# with a 95 % interval from resampling the pairs. With CALLGRIND=1 it then counts
# instructions per response under valgrind --tool=callgrind for every mode on a smaller site (2 hosts x 1,500
# pages), whole, outside redb's commit (whose cost follows the size of the group commits, and so the timing), and
# outside both the commit and the records' SHA-1 digests (valgrind has no SHA extensions: the sha1 crate's software
# rounds count some 34,000 instructions a page there, which the hardware does in a small fraction; with them in the
# denominator the exporter's share looks smaller than it is): counts that do not move with the load of the machine.
# A mode may name its sample ratio after a dash (default RATIO, else 1.0): MODES="none http-0.1 http-1.0" crawls
# without an exporter, with OTLP/HTTP sampling a tenth of the URLs and with it sampling every URL, alternated.
# MODES="none grpc http gzip" adds gzip: OTLP/HTTP with otlp_compression = "gzip" (the sink inflates it; its bytes
# are the compressed ones). SITE=realistic crawls the realistic corpus of make bench-peer (documentation-like pages
# of 5-60 KB) instead of the ~4 KB pages: the exporter's work is the same a page, the crawl's grows with the page.
# BASE_BIN (another crawl-engine binary, e.g. an earlier release) with MODES="none http base" adds base: OTLP/HTTP
# from that build, and the pairs summed of this build's OTLP/HTTP against it (the same rounds, so the same state of
# the machine): an A/B of two builds' exporters.
# NAMES=1 names the hosts (testsite --host-names: h0.test ... in the crawler's `[resolver] hosts`), as crawls of
# the web do: every fetch then looks up its host's name. PAGE_BYTES sizes the plain site's pages (default 4000;
# 20000 is the middle of the 10-30 KB pages of the crawls that first measured the exporter's cost).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/scripts/lib.sh
bin="${CARGO_TARGET_DIR:-target}/release"
REPEATS="${REPEATS:-3}"
MODES="${MODES:-none grpc http}"
case "${SITE:-plain}" in
  plain) site_args=(--page-bytes "${PAGE_BYTES:-4000}") ;;
  realistic) site_args=(--realistic) ;;
  *) echo "bench-otlp: SITE is plain or realistic, not ${SITE}" >&2; exit 2 ;;
esac
out=.bench-otlp
rm -rf "$out" && mkdir -p "$out"
site=
sink=
trap 'kill ${site:-} ${sink:-} 2>/dev/null || true' EXIT
names=()
hosts_table=
start_site() { # HOSTS PAGES
  rm -f "$out/seeds"
  if [ "${NAMES:-0}" = 1 ]; then
    names=(--host-names)
    hosts_table=$(resolver_hosts "$1" 30)
  fi
  "$bin/testsite" --hosts "$1" --pages "$2" --first-octet 30 "${site_args[@]}" "${names[@]}" \
    --seeds-file "$out/seeds" --all-seeds > "$out/testsite.log" 2>&1 &
  site=$!
  wait_for "$out/seeds"
  read_seeds "$out/seeds"
}
# config ENDPOINT PROTOCOL COMPRESSION RATIO: the crawl's config, exporting to ENDPOINT over PROTOCOL when
# ENDPOINT is given.
config() {
  bench_config "" "warn,crawl_observability::trace=info"
  if [ -n "$1" ]; then
    printf 'otlp_endpoint = "%s"\notlp_protocol = "%s"\notlp_compression = "%s"\nsample_ratio = %s\n' \
      "$1" "$2" "$3" "$4"
  fi
  if [ -n "$hosts_table" ]; then printf '%s\n' "$hosts_table"; fi
}
# crawl MODE TAG [PREFIX...]: one crawl from a fresh data_dir, with a fresh sink in the modes that export.
crawl() {
  local mode=$1 tag=$2 endpoint=
  shift 2
  rm -rf "$out/crawl-data" "$out/crawl.jsonl"
  if [ "$mode" != none ]; then
    "$bin/otlpsink" > "$out/sink-$mode-$tag.log" 2>&1 &
    sink=$!
    for _ in $(seq 1 100); do grep -q ready "$out/sink-$mode-$tag.log" 2>/dev/null && break; sleep 0.05; done
    endpoint=$(sed -n 's/.*endpoint=\([^ ]*\).*/\1/p' "$out/sink-$mode-$tag.log")
  fi
  local kind=${mode%%-*} ratio=${RATIO:-1.0}
  if [ "$kind" != "$mode" ]; then ratio=${mode#*-}; fi
  local protocol=$kind compression=none
  case "$kind" in
    http | base) protocol=http/protobuf ;;
    gzip) protocol=http/protobuf compression=gzip ;;
  esac
  config "$endpoint" "$protocol" "$compression" "$ratio" > "$out/config.toml"
  OTEL_EXPORTER_OTLP_ENDPOINT= "$@" "$(crawler "$kind")" --config "$out/config.toml" --no-progress \
    --summary-json "$out/summary-$mode-$tag.json" "${seeds[@]}" > /dev/null 2> "$out/engine-$mode-$tag.log"
  if [ "$mode" != none ]; then
    kill -TERM "$sink"; wait "$sink" || true
    sink=
  fi
}
start_site 8 2600
for i in $(seq 1 "$REPEATS"); do
  # shellcheck disable=SC2086 # CRAWL_PREFIX is a command line (perf stat ..., say), split on purpose.
  # shellcheck disable=SC2086 # MODES is a list of words.
  for mode in $(abba "$i" $MODES); do crawl "$mode" "$i" ${CRAWL_PREFIX:-}; done
done
kill "$site"; wait "$site" 2>/dev/null || true
site=
# shellcheck disable=SC2086 # MODES is a list of words.
if [ "${CALLGRIND:-0}" = 1 ]; then callgrind_crawls bench-otlp 2 1500 cg-%s $MODES; fi
trap - EXIT
MODES="$MODES" REPEATS="$REPEATS" OUT="$out" CALLGRIND="${CALLGRIND:-0}" python3 - <<'PY'
import json, os, random, re, statistics, subprocess
n, out = int(os.environ["REPEATS"]), os.environ["OUT"]
modes = tuple(os.environ["MODES"].split())
kinds = {"none": "none", "grpc": "OTLP/gRPC", "http": "OTLP/HTTP", "gzip": "OTLP/HTTP gzip",
         "base": "OTLP/HTTP of BASE_BIN"}
# A mode is a kind, with its sample ratio after a dash when it names one.
names = {m: kinds[m.split("-")[0]] + (f" at {m.split('-', 1)[1]}" if "-" in m else "") for m in modes}
exporting = [m for m in modes if m != "none"]
rows = {m: [] for m in modes}
for i in range(1, n + 1):
    for mode in modes:
        s = json.load(open(f"{out}/summary-{mode}-{i}.json"))
        pages = max(s["fetched"], 1)
        cpu = (s["cpu_seconds"] or 0) * 1000 / pages
        rss = s["peak_rss_bytes"] / 1048576
        rows[mode].append((cpu, rss, s["pages_per_sec"]))
        extra = ""
        if mode != "none":
            sink_log = open(f"{out}/sink-{mode}-{i}.log").read()
            got = re.search(r"received spans=(\d+)", sink_log)
            sink_cpu = re.search(r"cpu_s=([\d.]+)", sink_log)
            sink_bytes = re.search(r"bytes=(\d+)", sink_log)
            ends = [json.loads(l) for l in open(f"{out}/engine-{mode}-{i}.log")
                    if "trace exporter shut down" in l]
            extra = (f", spans received {got.group(1)} ({int(got.group(1)) / pages:.1f} per page)"
                     if got else ", spans received ?")
            extra += f", dropped {ends[-1]['dropped'] if ends else '?'}"
            extra += f", sink CPU {sink_cpu.group(1) if sink_cpu else '?'} s"
            if sink_bytes:
                extra += f", {int(sink_bytes.group(1)) / pages:.0f} bytes sent per page"
        print(f"bench-otlp: {mode:4} run {i}: {s['fetched']} pages in {s['elapsed_s']:.2f}s, "
              f"{cpu:.3f} CPU s per 1000 pages, peak RSS {rss:.1f} MiB{extra}")
def summed_pairs(what, base, other):
    # The pairs' CPU summed (the ratio of the mean CPU a page), with a 95 % interval from resampling the pairs (a
    # fixed seed: the same runs give the same interval). One pair moves by +-10 % on a shared machine; the interval
    # says whether a series of them can tell the exporter's few per cent from noise.
    both = [(x[0], o[0]) for x, o in zip(base, other) if x[0] > 0]
    summed = lambda ps: sum(o for _, o in ps) / sum(x for x, _ in ps)
    rng = random.Random(1)
    resampled = sorted(summed(rng.choices(both, k=len(both))) for _ in range(4000))
    print(f"bench-otlp: {what}, the pairs summed: {summed(both):.3f} "
          f"(95 % interval {resampled[99]:.3f} to {resampled[3899]:.3f}); "
          f"{1000 * statistics.mean(x for x, _ in both):.1f} -> {1000 * statistics.mean(o for _, o in both):.1f} "
          f"CPU us a page")
med = {m: [statistics.median(r[k] for r in rows[m]) for k in range(3)] for m in rows}
for m in modes:
    print(f"bench-otlp: median {m:4}: {med[m][0]:.3f} CPU s per 1000 pages, peak RSS {med[m][1]:.1f} MiB, "
          f"{med[m][2]:.0f} pages/s")
for m in exporting:
    print(f"bench-otlp: {names[m]} / none: CPU per page {med[m][0] / med['none'][0]:.3f}, "
          f"peak RSS +{med[m][1] - med['none'][1]:.1f} MiB, pages/s {med[m][2] / med['none'][2]:.2f}")
    pairs = [o[0] / x[0] for x, o in zip(rows["none"], rows[m]) if x[0] > 0]
    if pairs:
        print(f"bench-otlp: {names[m]}: CPU per page, median of the {len(pairs)} pairs' ratios: "
              f"{statistics.median(pairs):.3f} (from {min(pairs):.3f} to {max(pairs):.3f})")
        summed_pairs(f"{names[m]}: CPU per page", rows["none"], rows[m])
if "http" in modes and "base" in modes:
    summed_pairs("OTLP/HTTP, this build / BASE_BIN: CPU per page", rows["base"], rows["http"])
if os.environ["CALLGRIND"] == "1":
    counts = {}
    for mode in modes:
        s = json.load(open(f"{out}/summary-{mode}-cg-{mode}.json"))
        resp = max(s["fetched"], 1)
        path = f"{out}/callgrind-{mode}.out"
        total = commit = sha1 = 0
        for line in open(path):
            m = re.match(r"^(summary|totals): (\d+)", line)
            if m:
                total = int(m.group(2))
                break
        # redb's commit, inclusive: what the group commits cost (their number follows the timing).
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", path],
                             capture_output=True, text=True).stdout
        # The records' SHA-1 digests, inclusive: valgrind has no SHA extensions, so the sha1 crate runs its software
        # rounds under callgrind (tens of thousands of instructions a page) where the hardware's take a fraction.
        for line in ann.splitlines():
            if "WriteTransaction::commit " in line and not commit:
                commit = int(line.split()[0].replace(",", ""))
            if "warc::digest::Sha1::of" in line and not sha1:
                sha1 = int(line.split()[0].replace(",", ""))
        counts[mode] = (total / resp, (total - commit) / resp, (total - commit - sha1) / resp)
        print(f"bench-otlp: callgrind {mode}: {total / resp:,.0f} instructions a response, "
              f"{(total - commit) / resp:,.0f} outside redb's commit, "
              f"{(total - commit - sha1) / resp:,.0f} outside it and SHA-1 ({resp} responses)")
    for m in exporting:
        for k, what in ((0, "whole"), (1, "outside redb's commit"), (2, "outside it and SHA-1")):
            added = counts[m][k] - counts["none"][k]
            print(f"bench-otlp: callgrind, {names[m]} adds ({what}): {added:,.0f} instructions a response, "
                  f"{100 * added / counts['none'][k]:+.1f} %")
PY
