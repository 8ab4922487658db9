#!/usr/bin/env bash
# Make sure an etcd server binary is on this machine (Debian package etcd-server).
set -euo pipefail
if command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing etcd-server with apt-get ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
  # The package may start a system etcd on :2379; drover never relies on it.
  exit 0
fi
echo "etcd is not installed: install Debian's package 'etcd-server' (sudo apt-get install etcd-server)," >&2
echo "or run the tests against an external etcd with: make test PYTEST_ARGS='--etcd-endpoint host:port'" >&2
exit 1
