#!/bin/sh
# Install what grpo-tools needs to build and test on Debian or Ubuntu.
# Run as root (or through sudo). Safe to run again: installs only what is
# missing, and touches the network only then. CUDA is optional and never
# installed here: `make` builds the kernels where it finds nvcc and cuBLAS.
set -e
pkgs="build-essential pkg-config libzstd-dev zstd libarchive-dev zlib1g-dev libcjson-dev libopenblas-dev
      libcurl4-openssl-dev libonig-dev mandoc clang perl gnuplot-nox locales jq xz-utils bzip2 lz4"
updated=
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
update_once() {
	[ -n "$updated" ] && return 0
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	updated=1
}
need() { # need PACKAGE...: those of them not installed yet
	missing=
	for p; do installed "$p" || missing="$missing $p"; done
	[ -z "$missing" ] && return 0
	echo "install-deps: installing:$missing" >&2
	update_once
	apt-get install -y -qq $missing >/dev/null
}
need $pkgs

# libFuzzer for `make fuzz` is in compiler-rt, which must match the clang
# installed: libclang-rt-dev follows the distribution's default clang
# (Debian 12, Ubuntu 24.04); else libclang-rt-N-dev for clang N (N from
# clang itself); releases before the split ship it in libclang-common-N-dev,
# which clang already pulls in.
major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -1)
if ! installed libclang-rt-dev && ! installed "libclang-rt-$major-dev"; then
	update_once
	if apt-cache show libclang-rt-dev > /dev/null 2>&1; then
		need libclang-rt-dev
	elif [ -n "$major" ] && apt-cache show "libclang-rt-$major-dev" > /dev/null 2>&1; then
		need "libclang-rt-$major-dev"
	fi
fi

# make check-tsan builds with clang -fopenmp: LLVM's OpenMP runtime (libomp,
# with libarcher, which tells ThreadSanitizer about its barriers), matching
# the clang installed where the distribution has one per version.
if ! installed "libomp-$major-dev" && ! installed libomp-dev; then
	update_once
	if [ -n "$major" ] && apt-cache show "libomp-$major-dev" > /dev/null 2>&1; then
		need "libomp-$major-dev"
	else
		need libomp-dev
	fi
fi

cuda=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$cuda" ]; then
	echo "install-deps: CUDA: $cuda found; make builds the kernels where cuBLAS is beside it" >&2
else
	echo "install-deps: no nvcc: CUDA kernels will not be built (optional; nothing installed for it)" >&2
fi
