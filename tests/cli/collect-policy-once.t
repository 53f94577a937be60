#!/bin/sh
# grpo-collect --model SPOOL/policy --cursor, exactly once across kills and
# re-runs while the trainer publishes new checkpoints (issue 10): the
# collector is stopped at every one of its file system calls
# (GRPO_FSYS_CRASH_AT), a newer policy step is published, and the same
# command is run again until the job is done. A batch the killed run had
# started is finished from the checkpoint it was started with, so what is
# published is, byte for byte, what a run that was never stopped publishes:
# from step_2 when the killed run had started, from step_3 when it had not.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 10

grpo-init --preset tiny --seed 3 -o "$T/m2" > /dev/null || exit 1
grpo-init --preset tiny --seed 4 -o "$T/m3" > /dev/null || exit 1
for i in 1 2 3 4 5 6; do printf '{"prompt_tokens":[%d,%d],"answer":"%d"}\n' $i $((i + 1)) $i; done > "$T/p.jsonl"
visible() { find "$1" -name '*.zst' 2> /dev/null | grep -v '/\.' | sort; }
# the published files, each by its path under the queue and its checksum
listing() { visible "$1/rollouts" | while IFS= read -r f; do echo "${f#"$1"/} $(cksum < "$f")"; done; }
# how often each group id (place) was published, with its policy version:
# "1:0 v2" is group 0, once, from step_2
groups() {
	visible "$1/rollouts" | while IFS= read -r f; do grpo-cat --json "$f"; done |
		sed 's/^{"group_id":\([0-9]*\),.*"policy_version":\([0-9]*\),.*/\1 v\2/' | sort | uniq -c |
		awk '{ printf "%s%s:%s v%s", s, $1, $2, substr($3, 2); s = ", " }'
}
spool() { # spool DIR STEP...: a spool whose policy queue holds those steps
	rm -rf "$1" && mkdir -p "$1/policy"
	sd=$1
	shift
	for v; do cp -r "$T/m$v" "$sd/policy/step_$v"; done
}
collect() { # collect DIR [ENV...]: the job, rows 0 to 2 of the prompts, from DIR's newest policy
	d=$1
	shift
	env "$@" grpo-collect --model "$d/policy" --prompts "$T/p.jsonl" -n 2 --max-tokens 4 --count 3 \
		--cursor "$d/cursor" -m 1 -o "$d/rollouts"
}

# what runs never stopped publish, from step_2 and from step_3
spool "$T/r2" 2 && collect "$T/r2" && listing "$T/r2" > "$T/want2"
spool "$T/r3" 2 3 && collect "$T/r3" && listing "$T/r3" > "$T/want3"
spool "$T/c" 2
calls=$(collect "$T/c" GRPO_FSYS_TRACE=1 2>&1 | grep -c '^fsys')
is "$(wc -l < "$T/want2" | tr -d ' '):$(head -n 1 "$T/r2/cursor"):$(groups "$T/r2")" \
	'3:3:1:0 v2, 1:1 v2, 1:2 v2' \
	"a run never stopped: three files, a group each, from step_2; the cursor at row 3"
cmp -s "$T/want2" "$T/want3"
is "$?" 1 "step_3 samples otherwise"

# stopped at call K, step_3 published, then the same command until the
# cursor is at row 3: prints what went wrong, nothing when all is well
trial() { # trial K [ENV...]
	k=$1
	shift
	spool "$T/q" 2
	collect "$T/q" GRPO_FSYS_CRASH_AT="$k" "$@" 2> /dev/null
	st=$?
	started=no
	[ -n "$(sed -n 2p "$T/q/cursor" 2> /dev/null)" ] || [ -n "$(visible "$T/q/rollouts")" ] && started=yes
	cp -r "$T/m3" "$T/q/policy/step_3"
	st2=0 runs=0
	: > "$T/err"
	while [ "$(head -n 1 "$T/q/cursor" 2> /dev/null)" != 3 ] && [ $runs -lt 3 ]; do
		collect "$T/q" 2> "$T/err" || st2=$?
		runs=$((runs + 1))
	done
	listing "$T/q" > "$T/got"
	want="$T/want3"
	[ $started = yes ] && want="$T/want2"
	[ "$st" = "${crashed:-86}" ] && [ "$st2" = 0 ] && cmp -s "$T/got" "$want" && [ "$(cat "$T/q/cursor")" = 3 ] ||
		echo "call $k (started: $started): status $st, re-runs $st2 ($(cat "$T/err")), published: $(groups "$T/q"), cursor $(head -n 1 "$T/q/cursor" 2> /dev/null)"
}
: > "$T/bad"
k=1
while [ $k -le "$calls" ]; do trial $k >> "$T/bad"; k=$((k + 1)); done
is "$(cat "$T/bad")" "" "stopped at each of its $calls calls, a newer policy published, then the same command: every prompt once, from the policy the batch was started with"
: > "$T/bad"
crashed=143
k=1
while [ $k -le "$calls" ]; do trial $k GRPO_FSYS_CRASH_SIGNAL=15 >> "$T/bad"; k=$((k + 1)); done
crashed=
is "$(cat "$T/bad")" "" "SIGTERM at each of the $calls calls: the same"

# killed after its first file was published: the cursor names the batch and
# its policy version
spool "$T/c" 2
first=$(collect "$T/c" GRPO_FSYS_TRACE=1 2>&1 | grep -n 'rename_noreplace' | head -n 1 | cut -d: -f1)
spool "$T/q" 2
collect "$T/q" GRPO_FSYS_CRASH_AT=$((first + 1)) 2> /dev/null
is "$(visible "$T/q/rollouts" | wc -l | tr -d ' '):$(sed -n 2p "$T/q/cursor" | grep -o '"from":0,"prompts":3,"next":3,"policy_version":2')" \
	'1:"from":0,"prompts":3,"next":3,"policy_version":2' \
	"killed after one of three files: the cursor holds the batch of rows 0 to 2 started at policy version 2"
cp -r "$T/m3" "$T/q/policy/step_3"
grpo-collect --model "$T/q/policy" --prompts "$T/p.jsonl" -n 2 --max-tokens 4 --count 3 --seed 5 \
	--cursor "$T/q/cursor" -m 1 -o "$T/q/rollouts" 2> "$T/err"
is "$?:$(visible "$T/q/rollouts" | wc -l | tr -d ' '):$(cat "$T/err")" \
	"1:1:grpo-collect: $T/q/cursor holds 3 prompts from place 0, started from $T/q/policy/step_2 (policy version 2) and perhaps published in part, but this command samples them otherwise (other prompts, or another --samples, --temperature, --top-p, --top-k, --max-tokens, --stop or --seed): nothing published; run the command that started them again to finish them" \
	"another --seed against the started batch is refused, publishing nothing"
grpo-collect --model "$T/q/policy" --prompts "$T/p.jsonl" -n 2 --max-tokens 4 --count 3 --stop 3 \
	--tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --cursor "$T/q/cursor" -m 1 -o "$T/q/rollouts" 2> "$T/err"
is "$?:$(visible "$T/q/rollouts" | wc -l | tr -d ' '):$(grep -c 'samples them otherwise' "$T/err")" "1:1:1" \
	"so is a --stop string the started batch was sampled without"
grpo-collect --model "$T/q/policy" --prompts "$T/p.jsonl" -n 2 --max-tokens 4 --count 3 \
	--cursor "$T/q/cursor" -m 2 -o "$T/q/rollouts" 2> "$T/err"
is "$?:$(visible "$T/q/rollouts" | wc -l | tr -d ' '):$(cat "$T/err")" \
	"1:1:grpo-collect: $T/q/cursor holds 3 prompts from place 0, sampled at policy version 2 for $T/q/rollouts (rank 0, --max-groups 1) and perhaps published in part: publishing them elsewhere would publish some twice; run the command that sampled them again to finish them" \
	"and so is another -m"

# the checkpoint it was started with is gone: refused, naming it
mv "$T/q/policy/step_2" "$T/step_2.away"
collect "$T/q" 2> "$T/err"
is "$?:$(visible "$T/q/rollouts" | wc -l | tr -d ' '):$(head -n 1 "$T/q/cursor"):$(cat "$T/err")" \
	"1:1:0:grpo-collect: $T/q/cursor holds 3 prompts from place 0, started from $T/q/policy/step_2 (policy version 2) and perhaps published in part, but $T/q/policy/step_2 is gone (no config.json): they cannot be sampled again as they were; bring the checkpoint back and run again, or write 3 alone into $T/q/cursor to pass over those not yet published" \
	"the checkpoint gone: refused, naming it and what to do, publishing nothing"
mv "$T/step_2.away" "$T/q/policy/step_2"
collect "$T/q" 2> "$T/err"
listing "$T/q" > "$T/got"
cmp -s "$T/got" "$T/want2"
is "$?:$(cat "$T/err"):$(cat "$T/q/cursor")" "0::3" "brought back, the same command finishes the batch from step_2, as a run never stopped"
exit $_failed
