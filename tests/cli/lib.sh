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
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
skip() { # skip REASON: one test not run, counted as skipped (TAP), never as a pass
	_n=$((_n + 1))
	echo "ok $_n # SKIP $1"
}
