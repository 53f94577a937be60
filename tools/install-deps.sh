#!/bin/sh
# Install what grpo-tools needs to build and test on Debian or Ubuntu.
# Run as root (or through sudo). Safe to run again.
set -e
pkgs="build-essential pkg-config libzstd-dev zstd libarchive-dev libcjson-dev libopenblas-dev
      mandoc clang libclang-rt-14-dev perl"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq $missing >/dev/null
