#!/usr/bin/env bash
# The contract check (checks and exemptions in schemathesis.toml): schemathesis drives every documented operation of a running server and
# fails on a server error, an undocumented status, a schema-valid request refused, a
# schema-violating request accepted, or a response that does not match its schema.
#
#   tests/contract/run.sh BASE_URL CREDENTIAL_HEADER [more schemathesis options]
#
# The operations left out end the caller's own credentials or account mid-run (logout, token
# revoke and rotate, password change and reset, second-factor changes, deleting users), or fetch
# from the internet (the image proxy); tests in tests/it cover each of them.
set -euo pipefail
base="$1"
credential="$2"
shift 2
st="${SCHEMATHESIS:-$(dirname "$0")/../../.venv/bin/st}"
# A fixed seed and no example database: the run on this machine is the run on a clean CI machine
# (a database left in the working folder by an earlier run would replay its examples here only).
# SCHEMATHESIS_CONFIG: the same file with the seeded records' ids bound (tests/it/contract.rs).
exec "$st" --config-file "${SCHEMATHESIS_CONFIG:-$(dirname "$0")/schemathesis.toml}" run "$base/api/v1/openapi.json" --url "$base" \
  -H "$credential" \
  --exclude-path-regex '/(logout|api-tokens/revoke-all|api-tokens/\{id\}|api-tokens/\{id\}/rotate|admin/api-tokens/\{id\}|users/change-password|admin/users/\{id\}|users/2fa/(setup|confirm|disable)|password-reset/.*|proxy/image)$' \
  --seed 1 --generation-database none --no-color \
  "$@"
