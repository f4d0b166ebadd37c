#!/usr/bin/env bash
# make demo: serve a generated site on 127.0.0.20-23 (4 hosts x 1500 pages, robots.txt with a disallowed prefix,
# redirects, 404s, sitemaps), crawl it with demo/config.toml (copied into .demo/, where the crawl's files land), stop
# the site, show the summary.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${CARGO_TARGET_DIR:-target}/release"
rm -rf .demo && mkdir -p .demo
cp demo/config.toml .demo/config.toml
"$bin/testsite" --hosts 4 --pages 1500 --first-octet 20 --all-seeds --seeds-file .demo/seeds > .demo/testsite.log 2>&1 &
site=$!
trap 'kill $site 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s .demo/seeds ] && break; sleep 0.1; done
[ -s .demo/seeds ] || { echo "testsite did not start:"; cat .demo/testsite.log; exit 1; }
seeds=()
while read -r s; do seeds+=(--seed "$s"); done < .demo/seeds
echo "site up: $(head -1 .demo/testsite.log)"
"$bin/crawl-engine" --config .demo/config.toml "${seeds[@]}"
kill $site; wait $site 2>/dev/null || true
trap - EXIT
echo "site: $(tail -1 .demo/testsite.log)"
echo "records: $(wc -l < .demo/crawl.jsonl) in .demo/crawl.jsonl; e.g."
head -2 .demo/crawl.jsonl
if [ -d .demo/warc ]; then
  echo "warc: $(ls .demo/warc/*.warc.gz | wc -l) file(s), $(du -sh .demo/warc | cut -f1) in .demo/warc (open with warcio, pywb or replayweb.page)"
fi
