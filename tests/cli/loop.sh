# The loop of examples/demo.sh (collect, score, pack, step through one
# spool) as chaos.t and fulldisk.t run it, one stage of a round under a
# fault hook of fsys.h, and what they compare and what a failed stage must not leave. Sourced after lib.sh.
head -n 6 "$GRPO_TOP/examples/addition/prompts.jsonl" > "$T/prompts.jsonl"
HOOK=GRPO_FSYS_CRASH_AT   # the hook that round's STAGE runs under (fsys.h)
round() { # round SPOOL K [STAGE N]: the demo's step K, STAGE under $HOOK=N (trace: GRPO_FSYS_TRACE);
	# with UNTIL=collect, score or pack, only up to that stage
	_s=$1 _k=$2 _cs=${3:-} _cn=${4:-}
	_m="$_s/policy"
	[ -d "$_s/policy/step_0" ] || _m="$_s/init"
	if [ ! -f "$_s/batches/step_$_k/DONE" ]; then
		stage collect grpo-collect --model "$_m" --prompts "$T/prompts.jsonl" -n 4 --max-tokens 2 \
			--seed "$_k" -o "$_s/rollouts" || return
		[ "${UNTIL:-}" != collect ] || return 0
		stage score grpo-score --reward gsm8k --ref "$_s/init" -o "$_s/scored" "$_s/rollouts" || return
		[ "${UNTIL:-}" != score ] || return 0
	fi
	stage pack grpo-pack --seq-len 64 --step "$_k" --flush -o "$_s/batches" "$_s/scored" || return
	[ "${UNTIL:-}" != pack ] || return 0
	stage step grpo-step --model "$_s/init" --batches "$_s/batches" --step "$_k" -o "$_s/policy" \
		--lr 0.01 --entropy-coef 0.02
}
stage() { # stage NAME CMD...: CMD, under the hook when NAME is the stage round was given
	_st=$1
	shift
	if [ "$_st" != "$_cs" ]; then "$@"
	elif [ "$_cn" = trace ]; then GRPO_FSYS_TRACE=1 "$@"
	else env "$HOOK=$_cn" "$@"; fi 2>> "$T/err"
}
digest() { # what must match: every published file's bytes (claim records hold pids and
	# times, lock files pids: names only; archives the times of their members: their records), the
	# directories, and what status says
	(cd "$1" && find . -path ./init -prune -o -type f -print | LC_ALL=C sort | while read -r _f; do
		case $_f in
		*/.done/* | */.claimed/* | *.lock) echo "$_f" ;;
		*.tar.zst) echo "$_f $(grpo-cat "$_f" | cksum)" ;;
		*) echo "$_f $(cksum < "$_f")" ;;
		esac
	done
	find . -path ./init -prune -o -type d -print | LC_ALL=C sort)
	grpo-spool status "$1"
}
unfinished() { # what a failed stage must not leave: temporaries, claims, a step of batches without DONE
	# (a step gc was removing, QUEUE/.tmp/gc.* or del.*, is for the next gc or recover to finish)
	(cd "$1" && find . -path ./init -prune -o -path '*/.tmp/gc.*' -prune -o -path '*/.tmp/del.*' -prune -o \
		\( -path '*/.tmp/*' -o -path '*/.claimed/*' -o -name '.*.tmp.*' \) -print)
	grpo-spool status "$1" | awk '$1 == "batches" && $NF == "-" { print "batches step " $2 " without DONE" }'
}
init_model() { # init_model DIR: the demo's random model
	grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 --vocab 13 \
		--eos 12 --tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 1 -o "$1"
}
