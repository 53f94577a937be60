#!/bin/sh
# The CUDA library, libgrpo-cuda.so, is loaded only by a run that goes to the
# GPU: the tools link nothing of CUDA, so a run on the CPU (grpo-collect
# importing, grpo-score without a reference model, --device cpu) loads no
# cuBLAS; --device cuda and auto ask the driver (libcuda.so.1) for a device
# before loading the library, and cuda says why it cannot run: no driver,
# no device, the library not found (naming where it looked) or not
# loadable; auto runs on the CPU, silently without a GPU and with a warning
# beside one it cannot use. A stand-in driver (fake-libcuda.c) claims a
# device or none.
. "$GRPO_TOP/tests/cli/lib.sh"
so="$GRPO_TOP/$GRPO_BUILD/libgrpo-cuda.so"
[ -f "$so" ] || skip_all "this build has no CUDA path (no $GRPO_BUILD/libgrpo-cuda.so)"
fake_cuda_driver "$T/driver" || skip_all "no cc to build the stand-in CUDA driver"
plan 19

bin=$(dirname "$(command -v grpo-collect)")
needed=$(for t in grpo-collect grpo-score grpo-step; do readelf -d "$bin/$t" 2> /dev/null; done |
	grep -c 'NEEDED.*libcu\(da\|blas\)')
is "$(readelf -d "$bin/grpo-collect" > /dev/null 2>&1 && echo "$needed")" 0 \
	"grpo-collect, grpo-score and grpo-step need no CUDA library to start"

grpo-init --preset tiny --seed 5 -o "$T/m" > /dev/null || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3]}' '{"prompt_tokens":[7]}' > "$T/p.jsonl"
collect() { grpo-collect --model "$T/m" --prompts "$T/p.jsonl" -n 2 --max-tokens 8 -t 0.8 --seed 3 "$@"; }
# every run below has the stand-in driver, claiming one device unless told otherwise
with() {
	LD_LIBRARY_PATH="$T/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_DEVICES=${FAKE_CUDA_DEVICES-1} "$@"
}
traced() { log=$1; shift; LD_DEBUG=files LD_DEBUG_OUTPUT="$T/$log" with "$@"; }

traced import grpo-collect --step 3 "$GRPO_TOP/tests/data/collect/native.jsonl" > "$T/in.zst" 2> /dev/null
st=$?
cublas_loaded "$T/import"
is "$st:$?" 0:1 "grpo-collect importing JSON lines, a GPU present: cuBLAS not loaded"
traced score grpo-score --device auto -r length -m 3 "$T/in.zst" > /dev/null 2>&1
st=$?
cublas_loaded "$T/score"
is "$st:$?" 0:1 "grpo-score --device auto without a reference model, a GPU present: cuBLAS not loaded"
traced cpu collect --device cpu > "$T/cpu.zst" 2> "$T/err"
st=$?
cublas_loaded "$T/cpu"
is "$st:$?:$(cat "$T/err")" "0:1:" "grpo-collect --model --device cpu, a GPU present: cuBLAS not loaded"

# The runtime loaded, where this machine's GPU is a stand-in's: the check above can see it
traced cuda grpo-score --device cuda -r length -m 3 "$T/in.zst" > /dev/null 2> "$T/err"
st=$?
cublas_loaded "$T/cuda"
is "$st:$?" 69:0 "--device cuda with a device: the CUDA library and cuBLAS loaded (and the stand-in fails: 69)"
grep -q '^grpo-score: --device cuda: no GPU to run on (.' "$T/err"
ok $? "saying why, from the CUDA runtime: $(cat "$T/err")"

# No driver, no device, a failing driver: nothing loaded, 69 with the reason
if ldconfig -p 2> /dev/null | grep -q 'libcuda\.so\.1 '; then
	skip "a CUDA driver is installed here: the run without one not made"
	skip "a CUDA driver is installed here: the run without one not made"
else
	LD_DEBUG=files LD_DEBUG_OUTPUT="$T/nodriver" grpo-step --model "$T/m" --batches "$T/none" -o "$T/px" \
		--device cuda 2> "$T/err"
	st=$?
	cublas_loaded "$T/nodriver"
	is "$st:$?" 69:1 "grpo-step --device cuda without a driver: 69, nothing loaded"
	is "$(cat "$T/err")" "grpo-step: --device cuda: no GPU to run on (no CUDA driver: libcuda.so.1: cannot open \
shared object file: No such file or directory)" "saying that there is no driver"
fi
FAKE_CUDA_DEVICES=0 traced none collect --device cuda -o "$T/s/rollouts" 2> "$T/err"
st=$?
cublas_loaded "$T/none"
is "$st:$?:$(cat "$T/err")" "69:1:grpo-collect: --device cuda: no GPU to run on (the CUDA driver sees no device)" \
	"--device cuda, a driver without a device: 69, saying so, nothing loaded"
[ ! -d "$T/s/rollouts" ]; ok $? "and nothing published"
FAKE_CUDA_INIT=100 with collect --device cuda > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "69:grpo-collect: --device cuda: no GPU to run on (the CUDA driver: cuInit: \
CUDA_ERROR_NO_DEVICE (100))" "a driver that fails: 69, naming the call and its error"
FAKE_CUDA_DEVICES=0 traced auto collect --device auto > "$T/auto.zst" 2> "$T/err"
st=$?
cublas_loaded "$T/auto"
cmp -s "$T/auto.zst" "$T/cpu.zst"
is "$st:$?:$(cat "$T/err")" "0:0:" "--device auto without a device: the CPU's samples, silently"
with collect --device auto > "$T/auto2.zst" 2> "$T/err"
cmp -s "$T/auto2.zst" "$T/cpu.zst"
is "$?:$(sed 's/(.*)/(...)/' "$T/err")" "0:grpo-collect: --device auto: the CUDA driver sees a GPU, but this run \
cannot use it: no GPU to run on (...); running on the CPU" \
	"--device auto where the driver sees a GPU the CUDA runtime cannot use: the CPU's samples, with a warning"
GRPO_CUDA_LIB=/nonexistent/libgrpo-cuda.so with grpo-step --model "$T/m" --batches "$T/none" -o "$T/py" \
	--device auto 2> "$T/err"
grep -q "^grpo-step: --device auto: the CUDA driver sees a GPU, but this run cannot use it: GRPO_CUDA_LIB: \
/nonexistent/libgrpo-cuda.so: cannot open shared object file: No such file or directory; running on the CPU$" "$T/err"
ok $? "grpo-step --device auto, a GPU present but no CUDA library: a warning naming what is missing"

# Where the library is looked for: GRPO_CUDA_LIB, else beside the program
GRPO_CUDA_LIB=/nonexistent/libgrpo-cuda.so with grpo-score --device cuda -r length -m 3 "$T/in.zst" \
	> /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "69:grpo-score: --device cuda: GRPO_CUDA_LIB: /nonexistent/libgrpo-cuda.so: cannot open \
shared object file: No such file or directory" "GRPO_CUDA_LIB names a file that is not there: 69, saying so"
GRPO_CUDA_LIB="$T/driver/libcuda.so.1" with grpo-score --device cuda -r length -m 3 "$T/in.zst" > /dev/null 2> "$T/err"
grep -q "^grpo-score: --device cuda: GRPO_CUDA_LIB: $T/driver/libcuda.so.1 is not grpo-tools' CUDA library" "$T/err"
ok $? "GRPO_CUDA_LIB names another library: saying so"
mkdir -p "$T/inst/bin" && cp "$bin/grpo-score" "$T/inst/bin/"
with "$T/inst/bin/grpo-score" --device cuda -r length -m 3 "$T/in.zst" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "69:grpo-score: --device cuda: libgrpo-cuda.so, this build's CUDA path, is not at \
$T/inst/bin/../libgrpo-cuda.so nor at $T/inst/bin/../lib/grpo-tools/libgrpo-cuda.so (GRPO_CUDA_LIB names it)" \
	"a program with no library beside it: 69, naming where it looked"
mkdir -p "$T/inst/lib/grpo-tools" && cp "$so" "$T/inst/lib/grpo-tools/"
traced inst "$T/inst/bin/grpo-score" --device cuda -r length -m 3 "$T/in.zst" > /dev/null 2> "$T/err"
grep -q "file=$T/inst/bin/../lib/grpo-tools/libgrpo-cuda.so .*dynamically loaded" "$T"/inst.*
ok $? "installed as make install lays it out (PREFIX/bin, PREFIX/lib/grpo-tools): the library is found"
GRPO_CUDA_LIB="$so" traced named "$T/inst/bin/grpo-score" --device cuda -r length -m 3 "$T/in.zst" > /dev/null 2>&1
grep -q "file=$so .*dynamically loaded" "$T"/named.*
ok $? "GRPO_CUDA_LIB names the library: it is the one loaded"
