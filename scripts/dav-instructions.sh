#!/usr/bin/env bash
# What the CardDAV PUT stream costs per card at the start of a book and at its end, in
# instructions rather than seconds: callgrind counts the same whatever else the machine is doing,
# so a change to the write path can be judged by one run of each side instead of dozens of timed
# ones whose first/last ratio moves by 20 points from run to run on a shared 2-core machine.
#
# Runs the dav bench (one client, so each card is its own batch; BENCH_PUT_ONLY, so only the
# PUTs) under callgrind with 0, 1,000, N-1,000 and N cards (N is BENCH_CARDS, default 10,000),
# two at a time, and prints the instructions per card of the first 1,000 and of the last 1,000:
# in the engine's writer thread (and, of those, its checkpoints), in reading the cards
# (`cards::plan_put`), and in the search indexer's own thread. User space only: what the kernel
# does for a write or a sync is not counted. Under callgrind the server runs about 50 times
# slower while timers keep real time, so what is timed is stretched to match: the search index
# commits every 60 s instead of every 0.5 s (about as many cards per commit as at full speed).
# The writer still checkpoints after 100 ms without a batch, which is more often per card than
# at full speed; that is why its checkpoints are shown apart. About 8 minutes at 10,000 cards.
#
# usage: scripts/dav-instructions.sh [dav bench executable]
#   without one, it is built (cargo bench -p mycorrhizal --bench dav --no-run) in the build folder
#   the test suite uses, ~/.cache/mycorrhizal-target unless CARGO_TARGET_DIR is set
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mycorrhizal-target}"
command -v valgrind >/dev/null || { echo "valgrind is needed (Debian: apt-get install valgrind)" >&2; exit 1; }
exe="${1:-}"
if [ -z "$exe" ]; then
  exe=$(cargo bench --locked -p mycorrhizal --bench dav --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="dav"][-1])')
fi
total="${BENCH_CARDS:-10000}"
[ "$total" -ge 2000 ] || { echo "BENCH_CARDS must be at least 2000 (two windows of 1,000)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {
  (cd server && BENCH_CARDS=$1 BENCH_CLIENTS=1 BENCH_PUT_ONLY=1 BENCH_STREAMS=1 \
    SEARCH_COMMIT_INTERVAL_MS="${SEARCH_COMMIT_INTERVAL_MS:-60000}" \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" "$exe" --bench >"$out/log.$1" 2>"$out/err.$1") ||
    { cat "$out/err.$1" >&2; return 1; }
  callgrind_annotate --inclusive=yes --threshold=100 "$out/cg.$1" >"$out/ann.$1"
}
for pair in "0 1000" "$((total - 1000)) $total"; do
  set -- $pair
  echo "callgrind: $1 and $2 cards ($(date +%T))" >&2
  count "$1" & first=$!
  count "$2" & second=$!
  failed=0
  wait "$first" || failed=1
  wait "$second" || failed=1
  [ "$failed" = 0 ] || exit 1
done
python3 - "$out" "$total" <<'EOF'
import re, sys
out, total = sys.argv[1], int(sys.argv[2])
parts = {
    "writer": "mycorrhizal_engine::writer::Writer::run",
    "  its checkpoints": "mycorrhizal_engine::writer::Writer::checkpoint",
    "reading the cards": "mycorrhizal::crm::cards::plan_put",
    "search indexer": "mycorrhizal_engine::search::indexer::Indexer::run",
}
def counts(n):
    text = open(f"{out}/ann.{n}").read()
    got = {}
    for name, func in parts.items():
        best = 0
        for line in text.splitlines():
            m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
            if m and m.group(2).strip().split(" [")[0].endswith(func):
                best = max(best, int(m.group(1).replace(",", "")))
        got[name] = best
    return got
c = {n: counts(n) for n in (0, 1000, total - 1000, total)}
print(f"instructions per card, one client, a {total}-card book (thousands):")
print(f"  {'':20} {'first 1000':>12} {'last 1000':>12} {'growth':>8}")
for name in parts:
    first = (c[1000][name] - c[0][name]) / 1000 / 1e3
    last = (c[total][name] - c[total - 1000][name]) / 1000 / 1e3
    growth = f"{100 * (last - first) / first:+.0f}%" if first else "-"
    print(f"  {name:20} {first:12.1f} {last:12.1f} {growth:>8}")
EOF
