#!/bin/sh
# bench/cuda/on-device.sh's san and race, the plumbing of the GPU machine's
# compute-sanitizer runs, here with a stand-in sanitizer and stand-in tests:
# each test or kernel run once, with the environment it needs, its exit and
# failing lines in the summary, and nothing of one mode leaking into the next.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v xargs > /dev/null || skip_all "no xargs"
plan 10
top=$T/top
mkdir -p "$top/cuda-run/tests" "$top/cuda-run/lib-all" "$top/bench/cuda"
cp "$GRPO_TOP/bench/cuda/on-device.sh" "$top/bench/cuda/"
touch "$top/cuda-run/.unpacked"   # nothing to unpack
# the tests print what they were given; test_cuda_broken fails one case
for t in step paged broken; do
	printf '#!/bin/sh\necho "ok 1 - %s ran with SMALL=${GRPO_TEST_SMALL:-} FP32=${GRPO_TEST_FP32:-}"\n' "$t" \
		> "$top/cuda-run/tests/test_cuda_$t"
done
printf 'echo "not ok 2 - broken: wrong"\nexit 1\n' >> "$top/cuda-run/tests/test_cuda_broken"
# the sanitizer: --tool T [--kernel-name kns=K] --error-exitcode N TEST; a
# kernel named "racy" has a hazard
cat > "$T/sanitizer" <<'SAN'
#!/bin/sh
tool=$2 kernel=
shift 2
[ "$1" = --kernel-name ] && kernel=${2#kns=} && shift 2
code=$2
shift 2
echo "sanitizer $tool kernel=$kernel"
"$@"
rc=$?
if [ "$kernel" = racy ]; then
	echo "========= Error: Race reported between Write access and Read access"
	echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
	exit "$code"
fi
exit $rc
SAN
chmod +x "$T/sanitizer" "$top/cuda-run/tests/"*
export COMPUTE_SANITIZER="$T/sanitizer"
cd "$top" || exit 1

OUT=$T/out1 RACE_PAIRS="step:rmsnorm paged:racy" SAN_TESTS="cuda-run/tests/test_cuda_step cuda-run/tests/test_cuda_broken" \
	sh bench/cuda/on-device.sh race san > "$T/log1" 2>&1
is "$?" 0 "race then san: the script ends (what failed is in its files)"
r=$T/out1/race.txt s=$T/out1/san.txt
is "$(grep -c '^=== racecheck' "$r"):$(grep -c '^=== memcheck' "$s")" "2:2" "one summary per kernel and per test"
is "$(sed -n '/racecheck cuda-run\/tests\/test_cuda_step:rmsnorm/,/^=== exit/p' "$r" | tail -n 1)" \
	"=== exit 0 (3: what the tool reports; 124: out of time)" "a clean kernel: exit 0"
grep -q '^ok 1 - step ran with SMALL=1 FP32=1$' "$r"
ok $? "racecheck runs the test with GRPO_TEST_SMALL=1 and GRPO_TEST_FP32=1"
sed -n '/test_cuda_paged:racy/,$p' "$r" > "$T/racy"
grep -q '^=== exit 3' "$T/racy" && grep -q 'Race reported' "$T/racy"
ok $? "a hazard: exit 3, and the sanitizer's line"
grep -q '^ok 1 - step ran with SMALL=1 FP32=$' "$s"
ok $? "memcheck after race in one call: GRPO_TEST_SMALL=1, GRPO_TEST_FP32 not left set"
sed -n '/memcheck cuda-run\/tests\/test_cuda_broken/,$p' "$s" > "$T/broken"
grep -q '^=== exit 1 ' "$T/broken" && grep -q '^not ok 2 - broken: wrong' "$T/broken"
ok $? "a failing test: its exit and its not-ok line"
grep -q 'sanitizer memcheck kernel=$' "$s" && ! grep -q 'sanitizer memcheck kernel=.' "$s"
ok $? "memcheck instruments whole tests"

OUT=$T/out3 SAN_TESTS=cuda-run/tests/test_cuda_step sh bench/cuda/on-device.sh sync > /dev/null 2>&1
grep -q '^sanitizer synccheck kernel=$' "$T/out3/sync.txt" && grep -q '^=== exit 0 ' "$T/out3/sync.txt"
ok $? "sync: synccheck over whole tests"

OUT=$T/out2 sh bench/cuda/on-device.sh nonsense > /dev/null 2> "$T/err"
is "$?:$(grep -c 'nonsense: unpack, tests' "$T/err")" "2:1" "an unknown mode: exit 2, naming the modes"
