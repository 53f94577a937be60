# Shared by the CLI tests: a TAP plan, assertions, and a scratch directory $T
# removed on exit.
T=$(mktemp -d "${TMPDIR:-/tmp}/grpo-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
_n=0
_failed=0
plan() { echo "1..$1"; }
ok() { # ok STATUS DESCRIPTION: passes when STATUS is 0
	_n=$((_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $_n - $2"; else echo "not ok $_n - $2"; _failed=$((_failed + 1)); fi
}
is() { # is GOT WANT DESCRIPTION
	_n=$((_n + 1))
	if [ "$1" = "$2" ]; then echo "ok $_n - $3"
	else echo "not ok $_n - $3"; echo "#   got '$1', want '$2'"; _failed=$((_failed + 1)); fi
}
# wait_for SECONDS COMMAND...: poll until the command succeeds, 1 if it never does.
# The bound only stops a hang: a loaded machine may take far longer than an idle one.
wait_for() {
	_wlimit=$(( $1 * 20 )); shift; _wi=0
	while ! "$@" > /dev/null 2>&1; do
		_wi=$((_wi + 1)); [ $_wi -ge $_wlimit ] && return 1; sleep 0.05
	done
}
watches_dir() { # watches_dir PID DIR: 0 once PID has an inotify watch on DIR (Linux /proc),
	# so a change made in DIR now is an event it sees
	_ino=$(stat -c %i "$2" 2> /dev/null) &&
		cat "/proc/$1/fdinfo/"* 2> /dev/null | grep -q "^inotify wd:[0-9]* ino:$(printf %x "$_ino") "
}
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
servers=
fake_server() { # fake_server DIR: tests/cli/fake-server.py on a free port, scripted by DIR/script.json
	# (none: {}) and logging to DIR/log; its URL in $URL, its pid in $server, stopped at exit
	mkdir -p "$1"
	python3 "$GRPO_TOP/tests/cli/fake-server.py" "$1/port" "$1/log" "$1/script.json" &
	server=$!
	servers="$servers $server"
	trap 'kill $servers 2> /dev/null; rm -rf "$T"' EXIT
	_i=0
	while [ ! -s "$1/port" ] && [ $_i -lt 300 ] && kill -0 $server 2> /dev/null; do sleep 0.1; _i=$((_i + 1)); done
	[ -s "$1/port" ] || { echo "Bail out! the fake server did not start"; exit 1; }
	URL=http://127.0.0.1:$(cat "$1/port")
}
skip() { # skip REASON: one test not run, counted as skipped (TAP), never as a pass
	_n=$((_n + 1))
	echo "ok $_n # SKIP $1"
}
fake_cuda_driver() { # fake_cuda_driver DIR: tests/cli/fake-libcuda.c built as DIR/libcuda.so.1, a stand-in
	# CUDA driver for LD_LIBRARY_PATH=DIR (FAKE_CUDA_DEVICES, FAKE_CUDA_INIT); fails where there is no cc
	mkdir -p "$1" && command -v cc > /dev/null &&
		cc -shared -fPIC -o "$1/libcuda.so.1" "$GRPO_TOP/tests/cli/fake-libcuda.c"
}
rollout_group() { # rollout_group ID RESPONSE...: one group's JSON line for grpo-cat --from-json, each RESPONSE
	# a JSON array of token ids: sequence ids ID*100+0, +1, ..., the prompt [1,2], the answer "#### 18", and
	# a logprob of -1 per token
	_g=$1
	shift
	printf '{"group_id":%s,"trajectories":[' "$_g"
	_i=0
	for _r in "$@"; do
		[ $_i -gt 0 ] && printf ','
		printf '{"prompt_tokens":[1,2],"response_tokens":%s,"logprobs":%s,"answer":"#### 18","sequence_id":%s,"group_id":%s,"policy_version":3,"finish_reason":"stop"}' \
			"$_r" "$(printf '%s' "$_r" | sed 's/[0-9][0-9]*/-1/g')" $((_g * 100 + _i)) "$_g"
		_i=$((_i + 1))
	done
	printf ']}\n'
}
fail_malloc_lib() { # fail_malloc_lib: tests/cli/fail-malloc.c built as $T/lib/fail-malloc.so, or the
	# whole file skipped where it cannot be (ASan owns malloc; no cc)
	[ -n "${GRPO_SANITIZED:-}" ] && skip_all "ASan owns malloc: no LD_PRELOAD stand-in under it"
	mkdir -p "$T/lib" && command -v cc > /dev/null &&
		cc -shared -fPIC -o "$T/lib/fail-malloc.so" "$GRPO_TOP/tests/cli/fail-malloc.c" -ldl ||
		skip_all "no cc to build tests/cli/fail-malloc.c"
}
cublas_loaded() { # cublas_loaded LOG: 0 where a run logged with LD_DEBUG=files LD_DEBUG_OUTPUT=LOG loaded cuBLAS
	cat "$1".* 2> /dev/null | grep -q 'file=libcublasLt'
}
use_locale() { # use_locale NAME (de_DE.UTF-8): 0 once LC_ALL=NAME works, compiled into $T/loc
	# (LOCPATH, exported) where the system lacks it; 1 where it cannot be had
	if [ -n "$(LC_ALL=$1 locale 2>&1 > /dev/null)" ]; then
		mkdir -p "$T/loc" && localedef -i "${1%%.*}" -f "${1#*.}" "$T/loc/$1" > /dev/null 2>&1
		LOCPATH=$T/loc
		export LOCPATH
		# libp11-kit (under libcurl) calls newlocale(3) from its constructor,
		# which with LOCPATH set leaks glibc's copy of it: not ours, and not
		# for LeakSanitizer to fail these runs on
		[ -z "${GRPO_SANITIZED:-}" ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	fi
	[ -z "$(LC_ALL=$1 locale 2>&1 > /dev/null)" ]
}
