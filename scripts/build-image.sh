#!/usr/bin/env bash
# `make image`: build deploy/Dockerfile into an OCI image with buildah (vfs
# storage, chroot isolation: no Docker engine, no daemon, no fuse).
#
# The Dockerfile's base stays a build argument (PYTHON_IMAGE). Where a
# registry is reachable, set it (PYTHON_IMAGE=python:3.11-slim make image).
# Unset, the base is built here from Debian packages with debootstrap
# (bookworm minbase + python3) and kept as localhost/drover-base:bookworm in
# buildah's storage; its root filesystem tarball is cached outside the clone
# ($DROVER_IMAGE_CACHE, default /var/cache/drover-image), so later builds on
# the machine skip debootstrap.
#
# Env: DROVER_IMAGE (tag, default localhost/drover:<version>), PYTHON_IMAGE,
# DROVER_IMAGE_CACHE, DEBIAN_MIRROR (default: the first deb URI apt uses).
# Prints the image's size and build time; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || {
    echo "image: $tool is required (apt-get install buildah debootstrap)" >&2; exit 2; }
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
TAG=${DROVER_IMAGE:-localhost/drover:$version}
CACHE=${DROVER_IMAGE_CACHE:-/var/cache/drover-image}
BUILDAH=(buildah --storage-driver vfs)
export BUILDAH_ISOLATION=chroot
started=$(date +%s)

mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  local uri
  uri=$(grep -hs -m1 -E '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
        | grep -v security | head -1 | awk '{print ($1 == "deb") ? $2 : $2}')
  echo "${uri:-http://deb.debian.org/debian}"
}

base_from_debootstrap() {
  local base=localhost/drover-base:bookworm tarball="$CACHE/bookworm-python3-rootfs.tar"
  if "${BUILDAH[@]}" inspect --type image "$base" >/dev/null 2>&1; then
    echo "$base"; return
  fi
  mkdir -p "$CACHE"
  if [ ! -s "$tarball" ]; then
    local rootfs
    rootfs=$(mktemp -d)
    echo "image: debootstrap bookworm (minbase + python3) from $(mirror)" >&2
    debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3 \
      bookworm "$rootfs" "$(mirror)" >&2
    # What a container never needs: package caches, docs, man pages.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
      "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
    tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
  fi
  local ctr
  ctr=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" add "$ctr" "$tarball" / >/dev/null
  "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/sh "$ctr"
  "${BUILDAH[@]}" commit --rm "$ctr" "$base" >&2
  echo "$base"
}

BASE=${PYTHON_IMAGE:-$(base_from_debootstrap)}
echo "image: building $TAG on $BASE" >&2

# The machine's CA bundle reaches pip inside the build as a secret (egress
# proxies with their own CA); it is never written into a layer.
secret=()
ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
if [ -s "$ca" ]; then secret=(--secret "id=ca,src=$ca"); fi

"${BUILDAH[@]}" bud --isolation chroot --pull=false --layers=false \
  --ignorefile deploy/Dockerfile.dockerignore -f deploy/Dockerfile \
  --build-arg PYTHON_IMAGE="$BASE" "${secret[@]}" -t "$TAG" . >&2

size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$TAG" | head -1)
echo "image: $TAG built in $(( $(date +%s) - started ))s; size $size (base $BASE)"
