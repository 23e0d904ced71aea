#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what the tests need, then runs them.
# Needs only the Rust toolchain and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."

# A build folder outside the work tree survives between checkouts on the same machine.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mycorrhizal-target}"
# Keep the 2-core machine responsive: tests start real servers on loopback.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"

# Pinned Python clients for protocol and browser tests, in a venv: every tests/requirements*.txt.
python3 -m venv .venv
for requirements in tests/requirements*.txt; do
  .venv/bin/pip install --quiet --disable-pip-version-check -r "$requirements"
done
export MYCORRHIZAL_TEST_PYTHON="$PWD/.venv/bin/python"
# Source distributions whose own test suites run against the server (tests/sdists.txt): fetched
# from PyPI's files host once, kept only when their hash is the pinned one.
.venv/bin/python - <<'PY'
import hashlib, json, pathlib, re, urllib.request
out = pathlib.Path(".venv/sdists")
out.mkdir(exist_ok=True)
for line in pathlib.Path("tests/sdists.txt").read_text().splitlines():
    m = re.match(r"^([\w.-]+)==([\w.]+) --hash=sha256:([0-9a-f]{64})$", line.strip())
    if not m:
        continue
    name, version, digest = m.groups()
    target = out / f"{name}-{version}.tar.gz"
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
        continue
    index = urllib.request.Request(f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    files = json.load(urllib.request.urlopen(index, timeout=120))["files"]
    url = next(f["url"] for f in files if f["filename"] == target.name)
    data = urllib.request.urlopen(url, timeout=120).read()
    if hashlib.sha256(data).hexdigest() != digest:
        raise SystemExit(f"{url}: not the pinned sha256 {digest}")
    target.write_bytes(data)
PY

# The browser tests drive Debian's Chromium. Installed here when missing and we may (root);
# otherwise say so: the browser tests then fail with the same message.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the browser tests..."
    apt-get install -y -q chromium >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
  else
    echo "MISSING: chromium (Debian package 'chromium') is needed by the browser tests; install it as root: apt-get install chromium" >&2
  fi
fi
if command -v chromium >/dev/null 2>&1; then
  export CHROMIUM="$(command -v chromium)"
fi

# The container test (tests/container.py) builds the Dockerfile with Debian's podman, on base
# images made by mmdebstrap: installed here when missing and we may (root); skipped otherwise.
container_tools=(podman runc mmdebstrap iptables)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  for tool in "${container_tools[@]}"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "Installing Debian's ${container_tools[*]} for the container test..."
      apt-get install -y -q "${container_tools[@]}" >/dev/null \
        || { apt-get update -q >/dev/null && apt-get install -y -q "${container_tools[@]}" >/dev/null; } \
        || echo "MISSING: could not install ${container_tools[*]}; the container test is skipped" >&2
      break
    fi
  done
fi

# Benches are not run here (they measure, they do not test), but they must keep compiling.
cargo check --locked --quiet -p mycorrhizal-engine -p mycorrhizal -p mycorrhizal-search-bench --benches
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
cargo test --locked --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The container, built and run (about 10 minutes on a machine that has not built it before).
.venv/bin/python tests/container.py 2>&1 | tee -a "$log"
container_status=${PIPESTATUS[0]}
set -e
# Each failure's panic (where, and its message's first lines) again at the end: a backtrace
# can push it far above the tail a CI log keeps.
awk '/panicked at / { n = 4; print "failure: " $0; next } n > 0 && !/^stack backtrace:/ { print "  " $0; n-- ; next } { n = 0 }' "$log"
# One closing line over every test binary, so the total is visible at a glance.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
grep '^container: ' "$log" || true
if [ "$status" = 0 ]; then status=$container_status; fi
exit "$status"
