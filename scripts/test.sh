#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what the tests need, then runs them.
# Needs only the Rust toolchain and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."

# A build folder outside the work tree survives between checkouts on the same machine.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mycorrhizal-target}"
# Keep the 2-core machine responsive: tests start real servers on loopback.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"

# Pinned Python clients for protocol tests (e.g. a CardDAV client), in a venv.
if [ -f tests/requirements.txt ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
  export MYCORRHIZAL_TEST_PYTHON="$PWD/.venv/bin/python"
fi

# Benches are not run here (they measure, they do not test), but they must keep compiling.
cargo check --locked --quiet -p mycorrhizal-engine --benches
cargo test --locked --workspace
