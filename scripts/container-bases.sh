#!/usr/bin/env bash
# The Dockerfile's two base images, made here from Debian's packages, for a machine that reaches
# Debian's archive but no container registry. Imported into podman under the names the
# Dockerfile's FROM lines use, so `podman build .` then needs nothing else:
#
#   debian:bookworm-slim     mmdebstrap --variant=minbase with Debian-slim's dpkg excludes
#   rust:1-slim-bookworm     the same, plus what the official image adds (ca-certificates, gcc,
#                            libc6-dev) and this machine's Rust toolchain (rustup's, without its
#                            docs): no other toolchain can be fetched here, and Debian's bookworm
#                            rustc (1.63) is older than the workspace's rust-version
#
# Usage (as root, with Debian's podman and mmdebstrap): scripts/container-bases.sh
# Set CONTAINERS_CONF and friends as scripts/container-test.sh does, when podman needs them.
set -euo pipefail

suite=bookworm
mirrors=(
  "deb http://deb.debian.org/debian $suite main"
  "deb http://deb.debian.org/debian $suite-updates main"
  "deb http://deb.debian.org/debian-security $suite-security main"
)
# What debuerreotype's slimify drops from Debian's -slim images: documentation, manuals and
# translations (the copyright files stay).
slim=(
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/groff/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
  --dpkgopt='path-exclude=/usr/share/linda/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/locale/locale.alias'
)
# An image is not a machine: no apt caches or lists, and a fixed machine-id that systemd-less
# containers leave empty.
tidy=(
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'
  # As Debian's images do: apt in a later RUN keeps no downloaded packages, no package caches
  # and no translations, so `apt-get install` adds only what it installs.
  --customize-hook='printf "%s\n" "DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" "APT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" "Dir::Cache::pkgcache \"\";" "Dir::Cache::srcpkgcache \"\";" >"$1"/etc/apt/apt.conf.d/docker-clean'
  --customize-hook='echo "Acquire::Languages \"none\";" >"$1"/etc/apt/apt.conf.d/docker-no-languages'
  --customize-hook='truncate -s 0 "$1"/etc/machine-id'
)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

image() { # name, then mmdebstrap's extra options
  local name="$1"
  shift
  if podman image exists "$name"; then
    echo "container-bases: $name is already here"
    return
  fi
  echo "container-bases: making $name from Debian's $suite packages..."
  # merged-usr: the /usr merge made by mmdebstrap's hook, not by the usrmerge package (and perl).
  mmdebstrap --quiet --variant=minbase --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${slim[@]}" "${tidy[@]}" "$@" \
    "$suite" "$work/rootfs.tar" "${mirrors[@]}" >"$work/mmdebstrap.log" 2>&1 \
    || { tail -n 40 "$work/mmdebstrap.log" >&2; echo "container-bases: mmdebstrap failed for $name" >&2; exit 1; }
  podman import --quiet "${changes[@]}" --change 'CMD ["bash"]' "$work/rootfs.tar" "$name" >/dev/null
  rm -f "$work/rootfs.tar"
  podman image inspect --format "container-bases: $name {{.Size}} bytes" "$name"
}

changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
image docker.io/library/debian:bookworm-slim

sysroot="$(rustc --print sysroot)"
changes=(
  --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'ENV CARGO_HOME=/usr/local/cargo'
)
image docker.io/library/rust:1-slim-bookworm \
  --include=ca-certificates,gcc,libc6-dev \
  --customize-hook="mkdir -p \"\$1/usr/local/rust\" \"\$1/usr/local/cargo\"" \
  --customize-hook="tar -C '$sysroot' -c bin lib libexec etc | tar -C \"\$1/usr/local/rust\" -x" \
  --customize-hook='chroot "$1" /usr/local/rust/bin/rustc --version' \
  --customize-hook='chroot "$1" /usr/local/rust/bin/cargo --version'
