#!/usr/bin/env bash
# For working on the contract by hand: starts the debug binary on PORT (default 7399) with a
# fresh data folder and rate limits out of the way, signs up an admin, and prints the
# credential header to pass to run.sh. Stops the server when you press Ctrl-C.
set -euo pipefail
port="${1:-7399}"
data="$(mktemp -d)"
target="${CARGO_TARGET_DIR:-$HOME/.cache/mycorrhizal-target}"
DATA_DIR="$data" BIND_ADDR="127.0.0.1:$port" LOG_LEVEL=warn \
  RATE_LIMIT_API_BURST=1000000 RATE_LIMIT_API_INTERVAL_MS=1 RATE_LIMIT_AUTH_BURST=1000000 RATE_LIMIT_AUTH_INTERVAL_MS=1 \
  "$target/debug/mycorrhizal" &
server=$!
trap 'kill $server; rm -rf "$data"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 50); do curl -sf "$base/health/live" >/dev/null && break; sleep 0.2; done
curl -sf -X POST "$base/api/v1/register" -H 'content-type: application/json' \
  -d '{"username":"ada","password":"lichen-moss-fern-42","email":"ada@example.org"}' >/dev/null
jar="$data/jar"
curl -sf -c "$jar" -X POST "$base/api/v1/login" -H 'content-type: application/json' \
  -d '{"identifier":"ada","password":"lichen-moss-fern-42"}' >/dev/null
token=$(curl -sf -b "$jar" -X POST "$base/api/v1/api-tokens" -H 'content-type: application/json' -d '{"name":"contract"}' \
  | python3 -c 'import sys, json; print(json.load(sys.stdin)["token"])')
echo "tests/contract/run.sh $base 'Authorization: Bearer $token'"
wait $server
