#!/bin/sh
# Package, on a build machine, what a GPU machine without this project's
# build dependencies (the -dev packages, a C toolchain) needs to run the
# CUDA tests, the tools' GPU tests and bench-cuda: the binaries of $BUILD
# (default build/dev, made here for CUDA_ARCHS, default 90: Hopper),
# stripped, the CUDA library the tools load (libgrpo-cuda.so, at the top,
# where cuda-run/bin/.. and cuda-run/tests/.. find it), with every shared
# library they load except the C library's and CUDA's, and the peer's script. Writes cuda-run/pkg.tar.xz (a few MB; ignore cuda-run/ in git);
# bench/cuda/on-device.sh unpacks it there and uses only the libraries that
# machine lacks.
set -e
BUILD=${BUILD:-build/dev}
top=$(cd "$(dirname "$0")/../.." && pwd)
shared=${GRPO_SHARED:-$top/../shared}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cd "$top"
make -s BUILD="$BUILD" CUDA_ARCHS="${CUDA_ARCHS:-90}" all "$BUILD/tests/test_reflp" \
	$(for t in tests/cuda/test_*.c; do t=${t##*/}; echo "$BUILD/tests/${t%.c}"; done) \
	"$BUILD/bench/cuda/bench_cuda_model" "$BUILD/bench/cuda/bench_cuda_generate"
mkdir -p "$stage/bin" "$stage/tests" "$stage/bench/cuda" "$stage/lib-all" "$stage/shared/bench" cuda-run
for f in "$BUILD"/bin/grpo-*; do strip -o "$stage/bin/${f##*/}" "$f"; done
strip --strip-unneeded -o "$stage/libgrpo-cuda.so" "$BUILD/libgrpo-cuda.so"
for f in "$BUILD"/tests/test_cuda_* "$BUILD"/tests/test_reflp; do
	case $f in *.d|*.o) continue ;; esac
	strip -o "$stage/tests/${f##*/}" "$f"
done
for f in bench_cuda_model bench_cuda_generate; do strip -o "$stage/bench/cuda/$f" "$BUILD/bench/cuda/$f"; done
for f in peer_torch_grpo.py peer_torch_generate.py; do
	[ -f "$shared/bench/$f" ] && cp "$shared/bench/$f" "$stage/shared/bench/"
done
ldd "$stage"/bin/* "$stage"/tests/* "$stage"/bench/cuda/* "$stage"/libgrpo-cuda.so | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
	grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libgcc_s|libstdc\+\+)\.so' |
	while read -r lib; do cp -L "$lib" "$stage/lib-all/"; done
tar -C "$stage" -cJf cuda-run/pkg.tar.xz .
echo "cuda-run/pkg.tar.xz: $(du -h cuda-run/pkg.tar.xz | cut -f1)"
