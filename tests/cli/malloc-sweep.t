#!/bin/sh
# Memory running out at every allocation, in every tool, as SQLite's malloc
# tests do: each run below fails its N-th allocation (malloc, calloc,
# realloc, the aligned ones; strdup and stdio through malloc) with ENOMEM,
# counting from main (tests/cli/fail-malloc.c), for N spread over the calls
# a normal run makes (GRPO_OOM_FULL=1: every N). The runs: grpo-init, each
# stage of the demo's loop (collect --model, score with a reference model,
# pack, step) as chaos.t runs it, grpo-collect importing JSON lines,
# grpo-cat printing, writing JSON lines back and checking a model's
# logprobs, and grpo-spool status, consume, recover and gc. Each must
# either fail, exit 1, its last word on standard error the tool's and
# naming memory, or succeed having done all it does without the fault; it
# must not die of a signal or hang; it leaves no temporary, no claim, no
# step of micro-batches without DONE; and run again without the fault it
# ends as a run that never failed, byte for byte (chaos.t's digest).
. "$GRPO_TOP/tests/cli/lib.sh"
fail_malloc_lib
plan 15
. "$GRPO_TOP/tests/cli/loop.sh"
# in $T, whose path LD_PRELOAD could not take if it held a space: it splits at spaces
cd "$T"
hooked() { # hooked HOOK CMD...: CMD with its allocation HOOK failing, its calls counted into $T/count
	# (HOOK count) or as it is (HOOK empty); standard error to $T/err
	_h=$1
	shift
	case $_h in
	'') "$@" ;;
	count) env LD_PRELOAD=./lib/fail-malloc.so FAIL_MALLOC_COUNT="$T/count" "$@" ;;
	*) timeout 120 env LD_PRELOAD=./lib/fail-malloc.so FAIL_MALLOC_NTH="$_h" "$@" ;;
	esac 2>> "$T/err"
}
stage() { # loop.sh's stage, under hooked
	_st=$1
	shift
	if [ "$_st" = "$_cs" ]; then hooked "$_cn" "$@"; else "$@" 2>> "$T/err"; fi
}
said() { # said RC: what is wrong with how a run ended whose memory ran out: nothing when it
	# succeeded, or failed, exit 1, its last line the tool's, naming memory
	_last=$(tail -n 1 "$T/err")
	case $1 in
	0) ;;
	# gc's read-back of an archive that libarchive damaged when its memory ran out sees the
	# damage, not its cause
	1) case $_last in grpo-*:*memory* | "grpo-spool: the archive written is not what was meant"*) ;;
	   *) echo "message '$_last'" ;; esac ;;
	124) echo "hung" ;;
	*) echo "exit $1" ;;
	esac
}
# What each sweep below defines: runs DIR HOOK (the run on DIR, under hooked HOOK), result (what the
# run in $T/w leaves that must be as without the fault), left RC (what must not be there after the run
# ended with RC; nothing when all is well)
result() { digest "$T/w"; }
left() { unfinished "$T/w"; }
judged() { # judged RC: what is wrong after runs ended with RC; nothing when all is well
	said "$1"
	left "$1"
	if [ "$1" = 0 ]; then
		grpo-spool recover --tmp-age 0 "$T/w" 2> /dev/null
		# grpo-step that published its step but could not retire the step's micro-batches
		# says so and succeeds (grpo-step(1) FILES): the run again retires them
		result | cmp -s - "$T/ref.d" || grep -q "was trained, but its files stay waiting" "$T/err" ||
			echo "succeeded, its work not done"
	fi
	: > "$T/err"
	# grpo-init that succeeded refuses to write its model again, rightly
	[ "$1" = 0 ] && [ "$WHAT" = grpo-init ] && return
	runs "$T/w" "" || echo "the run again failed: $(cat "$T/err")"
	grpo-spool recover --tmp-age 0 "$T/w" 2> /dev/null
	result | cmp -s - "$T/ref.d" || echo "not as never failed"
}
sweep() { # sweep BASE K [N...]: runs on copies of BASE in $T/w, K of its allocations failing in turn
	# (every one with GRPO_OOM_FULL=1), spread from the first to the last, and the N-th ones, points
	# that once went wrong; sets calls, tried, bad
	# and gomp: the runs that libgomp (OpenMP, for its threads' team, or a thread's creation) or
	# libarchive (registering its filters) ended, which exit, status 1, when an allocation fails,
	# leaving claims to recover as a kill does: not ours to judge
	rm -rf "$T/w" && cp -R "$1" "$T/w" && runs "$T/w" "" && grpo-spool recover --tmp-age 0 "$T/w" 2> /dev/null
	result > "$T/ref.d"
	rm -rf "$T/w" && cp -R "$1" "$T/w"
	: > "$T/err"
	runs "$T/w" count
	calls=$(cat "$T/count")
	: > "$T/err"
	_by=1
	[ -n "${GRPO_OOM_FULL:-}" ] || _by=$((calls / $2 + 1))
	bad= tried=0 gomp=0 _at=1 _base=$1
	while [ "$_at" -le "$calls" ]; do
		fail_at "$_at"
		[ "$_at" -lt "$calls" ] && [ $((_at + _by)) -gt "$calls" ] && _at=$((calls - _by))
		_at=$((_at + _by))
	done
	shift 2
	for _at in "$@"; do
		fail_at "$_at"
	done
}
fail_at() { # fail_at N: one run of sweep's, its N-th allocation failing
	rm -rf "$T/w" && cp -R "$_base" "$T/w"
	runs "$T/w" "$1"
	rc=$?
	if [ $rc = 1 ] && grep -q "^libgomp: Out of memory\|^libgomp: Thread creation failed\|^Fatal Internal Error in libarchive: \(Out of\|No\) memory" "$T/err"; then
		wrong= gomp=$((gomp + 1))
		: > "$T/err"
	else
		wrong=$(judged $rc)
	fi
	[ -z "$wrong" ] || bad="$bad $1($(echo $wrong))"
	[ -z "${GRPO_OOM_LOG:-}" ] || echo "$WHAT $1${wrong:+ $(echo $wrong)}" >> "$GRPO_OOM_LOG"
	tried=$((tried + 1))
}
verdict() { # verdict WHAT: the test line of a sweep
	is "${bad:- none}" " none" "$WHAT: $tried of its $calls allocations failing in turn: said, nothing half done\
$([ $gomp = 0 ] || echo " ($gomp in libgomp or libarchive, which exit)")"
}

mkdir "$T/empty"
runs() { hooked "$2" grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 \
	--vocab 13 --eos 12 --tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 1 -o "$1/m"; }
left() { [ "$1" = 0 ] || ls -A "$T/w"; }
WHAT=grpo-init
# 3 and 148: succeeded; 162: libgomp's thread creation failed, and it exits
sweep "$T/empty" 20 3 148 162
verdict
left() { unfinished "$T/w"; }

init_model "$T/ref/init" 2> "$T/err"
round "$T/ref" 1 && cp -R "$T/ref" "$T/one" && round "$T/ref" 2 && grpo-spool recover --tmp-age 0 "$T/ref"
is "$?:$(cat "$T/err")" "0:" "two rounds of the loop, no fault"
for st in collect score pack step; do
	runs() { round "$1" 2 $st "$2"; }
	WHAT="grpo-$st in the loop"
	# points that once went wrong: collect 711 and 723 (of 998), libarchive registering the raw
	# format for the prompts file, which unchecked made it "Unrecognized archive format"; pack
	# 551 (of 714), choosing the step's sequences, which read as choosing none and succeeded
	# packing nothing, and 704, the manifest after the micro-batches, which left them without
	# DONE; step 1017 (of 1031), retiring the trained step's micro-batches (a warning)
	case $st in
	collect) extra="711 723" ;;
	pack) extra="551 704" ;;
	step) extra="1017 673" ;;   # 673: printf of the options' hash text failed, its -1 taken as a length
	*) extra= ;;
	esac
	sweep "$T/one" 12 $extra
	verdict
done

# grpo-collect importing the JSON lines grpo-cat prints of round 2's rollouts, as step 3
grpo-cat "$T/ref/rollouts/step_1/rank_0/"*.zst > "$T/rollouts.jsonl"
runs() { hooked "$2" grpo-collect -o "$1/rollouts" --step 3 "$T/rollouts.jsonl"; }
WHAT="grpo-collect importing JSON lines"
sweep "$T/ref" 15 5
verdict

# grpo-cat: what it prints must be all of it when it succeeds
result() { cat "$T/w/out"; }
left() { :; }
scored=$(ls "$T/ref/scored/step_1/rank_0/"*.zst)
rollouts=$(ls "$T/ref/rollouts/step_1/rank_0/"*.zst)
runs() { hooked "$2" grpo-cat "$scored" > "$1/out"; }
WHAT="grpo-cat printing a scored file"
sweep "$T/empty" 15
verdict
runs() { hooked "$2" grpo-cat --model "$T/ref/init" "$rollouts" > "$1/out"; }
WHAT="grpo-cat --model checking logprobs"
sweep "$T/empty" 12
verdict
# --from-json -o: no output file is left behind when it fails
result() { cksum < "$T/w/x.zst"; }
left() { [ "$1" = 0 ] || ls -A "$T/w"; }
runs() { hooked "$2" grpo-cat --from-json -o "$1/x.zst" "$T/rollouts.jsonl"; }
WHAT="grpo-cat --from-json -o"
# 6 and 157 (of 273): getline failing for memory read as the end of the input, and the
# file was published with the records read so far
sweep "$T/empty" 15 6 157
verdict
# --encode with a tokenizer whose added tokens use every flag: its loader, then the encoder
result() { cat "$T/w/out"; }
left() { :; }
printf '%s\n' '"a <|b|>  <|s|> b n\u00e9"' '"<|end|>  ## b"' > "$T/texts.jsonl"
runs() { hooked "$2" grpo-cat --tokenizer "$GRPO_TOP/tests/data/tokadded/tokenizer.json" --encode "$T/texts.jsonl" \
	> "$1/out"; }
WHAT="grpo-cat --encode"
# 1125 and 1132 (of 1138): cJSON failing for memory on an input line, said as "expected a JSON string"
sweep "$T/empty" 15 1125 1132
verdict

# grpo-spool: status prints all of it; consume, recover and gc leave the spool as without the fault
result() { cat "$T/w/out"; }
left() { :; }
runs() { hooked "$2" grpo-spool status "$1" > "$1/out"; }
WHAT="grpo-spool status"
sweep "$T/ref" 12
verdict
result() { digest "$T/w"; }
left() { unfinished "$T/w"; }
runs() { hooked "$2" grpo-spool consume "$1/scored" -- true; }
WHAT="grpo-spool consume"
sweep "$T/one" 12
verdict
# recover after grpo-score was killed in round 2 (its claim and temporary left:
# killed writing its second file, the record of what it scored, found by a
# traced run on a copy)
cp -R "$T/one" "$T/killed" && UNTIL=collect round "$T/killed" 2 && cp -R "$T/killed" "$T/traced" &&
	at=$(GRPO_FSYS_TRACE=1 grpo-score --reward gsm8k --ref "$T/traced/init" -o "$T/traced/scored" \
		"$T/traced/rollouts" 2>&1 | awk '$1 == "fsys" && $3 == "open_excl" { k++ }
			$1 == "fsys" && k == 2 && $3 == "write" { print $2; exit }') &&
	GRPO_FSYS_CRASH_AT=$at grpo-score --reward gsm8k --ref "$T/killed/init" -o "$T/killed/scored" \
		"$T/killed/rollouts" 2> /dev/null
left() { :; }
runs() { hooked "$2" grpo-spool recover --tmp-age 0 "$1"; }
WHAT="grpo-spool recover after a kill"
sweep "$T/killed" 12
verdict
left() { unfinished "$T/w"; }
runs() { hooked "$2" grpo-spool gc "$1" --keep-last 1 --archive "$1/arch"; }
WHAT="grpo-spool gc --archive"
# N=256 of 608 is in libarchive's pax writer, which then writes a damaged member and
# says ARCHIVE_OK: gc published that archive and removed the step, until it read
# each archive back before publishing it
# 160, 430 and 585 (of 682): libarchive failing without a message, said as "error"
sweep "$T/ref" 12 256 160 430 585
verdict
