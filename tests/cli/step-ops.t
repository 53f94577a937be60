#!/bin/sh
# grpo-step's operations around a step: --on-publish and its failures,
# --mask-truncated (the same update as never having sampled the truncated
# sequences), DONE's totals checked against the micro-batches, the sweep of
# a dead process's temporaries, token text in the debug table, --save-every
# with --keep and resuming from a step without weights, and two --rank
# processes exchanging gradients (the same bits as one process), with a
# peer that never comes, and --keep and --on-publish, which a rank other
# than 0 says it ignores; a step's micro-batches retired once it is
# published, after a crash in between or while retiring too; --on-publish
# run by the next run for a step a crash (or a failure) left without its
# command's success (a warning when the queue cannot be listed for it); one
# grpo-step per policy queue and rank, a second exiting 75 at once; SIGTERM
# before the last of --steps K, or no DONE for it: 75, naming the --step and
# --steps that train the steps left.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 85

d="$GRPO_TOP/tests/cli/step"
grpo-init --preset tiny --seed 7 -o "$T/model" || exit 1
for f in groups truncated kept; do
	grpo-cat --from-json -o "$T/$f.zst" "$d/$f.jsonl" || exit 1
done
# three steps of input: the same groups sampled by later policies
for v in 1 2; do
	sed "s/\"policy_version\":0/\"policy_version\":$v/g" "$d/groups.jsonl" | grpo-cat --from-json -o "$T/groups$v.zst" || exit 1
done
for f in groups groups1 groups2; do
	grpo-pack -T 16 -W 1 -o "$T/b" "$T/$f.zst" || exit 1
done
[ -f "$T/b/step_3/DONE" ] || { echo "Bail out! grpo-pack made no step 3"; exit 1; }
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(d <= 1e-5 * m + 1e-9) }'; }

# 1. --on-publish: the command sees the step's directory, number and queue
# (logged between bars: the paths under $T may hold spaces)
cat > "$T/hook" << 'EOF'
#!/bin/sh
echo "$GRPO_STEP|$GRPO_POLICY_DIR|$GRPO_POLICY_QUEUE|$(cat "$GRPO_POLICY_DIR/config.json" | wc -c)" >> "$HOOK_LOG"
exit "${HOOK_EXIT:-0}"
EOF
chmod +x "$T/hook"
hook="'$T/hook'" # --on-publish runs its command through sh -c, and $T may hold a space
export HOOK_LOG="$T/hook.log"
grpo-step --model "$T/model" --batches "$T/b" -o "$T/p" --steps 2 --on-publish "$hook" 2> "$T/err"
ok $? "two steps with --on-publish"
p=$(cd "$T/p" && pwd -P)
is "$(cut -d'|' -f1-3 "$HOOK_LOG" | tr '\n' ';')" "1|$p/step_1|$p;2|$p/step_2|$p;" \
	"run after each step with GRPO_STEP, GRPO_POLICY_DIR and GRPO_POLICY_QUEUE (absolute)"
[ "$(cut -d'|' -f4 "$HOOK_LOG" | sort -u)" -gt 0 ]; ok $? "the step's directory is whole when it runs"
HOOK_EXIT=3 grpo-step --batches "$T/b" -o "$T/p" --on-publish "$hook" 2> "$T/err"
ok $? "a failing command only warns by default"
grep -q "step 3: --on-publish '$hook' failed with exit status 3" "$T/err"; ok $? "naming the command and its status"
[ -f "$T/p/step_3/config.json" ]; ok $? "and step 3 is published"
cp -r "$T/p" "$T/q" && rm -rf "$T/q/step_2" "$T/q/step_3"
HOOK_EXIT=4 grpo-step --batches "$T/b" -o "$T/q" --steps 2 --on-publish "$hook" --on-publish-fail stop 2> "$T/err"
is $? 3 "--on-publish-fail stop: exit status 3"
[ -f "$T/q/step_2/config.json" ] && [ ! -e "$T/q/step_3" ]; ok $? "after publishing the step, before the next"
grep -q 'stopping after step 2' "$T/err"; ok $? "and says so"
rm -rf "$T/q/step_2"
grpo-step --batches "$T/b" -o "$T/q" --on-publish 'kill -9 $$' --on-publish-fail stop 2> "$T/err"
is $? 3 "a killed command stops it too"
grep -q "on-publish 'kill -9 \$\$' killed by signal 9" "$T/err"; ok $? "naming the signal"
grpo-step --batches "$T/b" -o "$T/q" --on-publish-fail later 2> /dev/null; is $? 2 "--on-publish-fail: warn or stop"

# 2. --mask-truncated: as if the truncated sequences had not been sampled
grpo-pack -T 16 -W 1 -o "$T/bt" "$T/truncated.zst" || exit 1
grpo-pack -T 16 -W 2 -o "$T/bk" "$T/kept.zst" || exit 1
for agg in grpo dapo dr_grpo; do
	grpo-step --model "$T/model" --batches "$T/bt" -o "$T/pt-$agg" --loss-agg $agg --max-len 8 --beta 0.05 \
		--mask-truncated --metrics "$T/mt-$agg" 2> /dev/null || echo "# $agg truncated failed"
	grpo-step --model "$T/model" --batches "$T/bk" -o "$T/pk-$agg" --loss-agg $agg --max-len 8 --beta 0.05 \
		--metrics "$T/mk-$agg" 2> /dev/null || echo "# $agg kept failed"
	okk=0
	for k in loss grad_norm kl entropy; do
		close "$(field "$T/mt-$agg" $k)" "$(field "$T/mk-$agg" $k)" || { okk=1; echo "# $agg $k differs"; }
	done
	ok $okk "$agg: masking 2 truncated sequences gives the update of the input without them"
done
# hand-counted: 12 sequences, 2 of them truncated with 5 and 3 response tokens
all=$(sed -n 's/.*"loss_tokens":\([0-9]*\).*/\1/p' "$T/bt/step_1/DONE")
is "$(field "$T/mt-dapo" sequences) $(field "$T/mt-dapo" loss_tokens) $(field "$T/mt-dapo" masked_truncated)" \
	"10 $((all - 8)) 2" "the totals leave out the 2 sequences and their 8 tokens (DONE: $all)"
grpo-step --model "$T/model" --batches "$T/bt" -o "$T/pu" --metrics "$T/mu" 2> /dev/null
is "$(field "$T/mu" sequences) $(field "$T/mu" loss_tokens)" "12 $all" "without --mask-truncated they train"
grpo-step --model "$T/model" --batches "$T/bt" -o "$T/pw" --mask-truncated 2> "$T/err"
is "$?:$(grep -c finish_reason "$T/err")" "0:0" "every sequence with a finish_reason: nothing to warn of"
# groups.jsonl gives no finish reasons (as TRL's /generate/ does not): said, not silently trained whole
grpo-step --model "$T/model" --batches "$T/b" -o "$T/pn" --mask-truncated 2> "$T/err"
grep -q "step 1: warning: --mask-truncated: 12 of 12 sequences have no finish_reason (their source gave none), so they are trained whether cut or not" "$T/err"
ok $? "sequences with no finish_reason: $(head -n 1 "$T/err")"

# 2b. --kl-clamp and k3+: the fixture's reference logprobs are not the model's, so the KL has a gradient
for v in "b0|--beta 0" "k3|--beta 0.05 --kl k3" "c0|--beta 0.05 --kl k3 --kl-clamp 1e-30" "k3p|--beta 0.05 --kl k3+"; do
	grpo-step --model "$T/model" --batches "$T/bt" -o "$T/kl-${v%%|*}" ${v#*|} --metrics "$T/mkl-${v%%|*}" 2> /dev/null ||
		echo "# ${v#*|} failed"
done
cmp -s "$T/kl-b0/step_1/model.safetensors" "$T/kl-c0/step_1/model.safetensors" &&
	! cmp -s "$T/kl-b0/step_1/model.safetensors" "$T/kl-k3/step_1/model.safetensors"
ok $? "--kl-clamp 1e-30 holds every token's KL past its gradient: the weights of --beta 0, bit for bit (not those of k3)"
[ "$(field "$T/mkl-k3p" kl)" = "$(field "$T/mkl-k3" kl)" ] && [ "$(field "$T/mkl-k3p" grad_norm)" != "$(field "$T/mkl-k3" grad_norm)" ]
ok $? "k3+: k3's KL ($(field "$T/mkl-k3p" kl)), another gradient (norm $(field "$T/mkl-k3p" grad_norm), k3's $(field "$T/mkl-k3" grad_norm))"

# 3. DONE's totals are checked against the micro-batches
cp -r "$T/bt" "$T/bx"
sed "s/\"loss_tokens\":$all/\"loss_tokens\":$((all + 1))/" "$T/bt/step_1/DONE" > "$T/bx/step_1/DONE"
grpo-step --model "$T/model" --batches "$T/bx" -o "$T/px" 2> "$T/err"; is $? 1 "DONE disagrees with the micro-batches: 1"
grep -q "bx/step_1/DONE: says $((all + 1)) loss tokens, and the micro-batches of every rank hold $all" "$T/err" &&
	[ ! -e "$T/px/step_1" ]
ok $? "says which file and what differs, publishes nothing"

# 4. a dead process's temporaries are swept, a live one's and another host's are not
host=$(hostname | tr './' '__')
sh -c 'exit 0' & dead=$!; wait
mkdir -p "$T/p/.tmp/step_4.$host.$dead.1.0" "$T/p/.tmp/step_4.$host.$$.1.0" "$T/p/.tmp/step_4.elsewhere.$dead.1.0"
: > "$T/p/.tmp/step_4.$host.$dead.1.0/model.safetensors"
grpo-step --batches "$T/b" -o "$T/p" 2> "$T/err"
is $? 75 "a run with nothing to train (no step 4)"
grep -q "p/.tmp: removed 1 temporary left by processes of this host that died" "$T/err"; ok $? "says what it swept"
[ ! -e "$T/p/.tmp/step_4.$host.$dead.1.0" ] && [ -d "$T/p/.tmp/step_4.$host.$$.1.0" ] &&
	[ -d "$T/p/.tmp/step_4.elsewhere.$dead.1.0" ]
ok $? "the dead pid's is gone; a live pid's and another host's stay"

# 5. token text in the debug table, escaped
tok="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
if [ -f "$tok" ]; then
	cp -r "$T/model" "$T/mtok" && cp "$tok" "$T/mtok/"
	# Qwen3: 198 newline, 197 tab, 59 backslash, 77 n, 220 space (the tiny model's vocabulary is 512)
	sed 's/"response_tokens":\[190,469,310\]/"response_tokens":[198,197,59]/; s/"response_tokens":\[277,429,282,244,204\]/"response_tokens":[59,77,220,244,204]/' \
		"$d/groups.jsonl" | grpo-cat --from-json -o "$T/text.zst" && grpo-pack -T 16 -W 1 -o "$T/btx" "$T/text.zst"
	grpo-step --model "$T/mtok" --batches "$T/btx" -o "$T/ptx" --debug-table "$T/tx.tsv" --debug-tokens 2> /dev/null
	ok $? "--debug-tokens with the model's tokenizer.json"
	is "$(awk -F'\t' 'NR == 1 { print $10, $11 }' "$T/tx.tsv")" "token text" "a text column after the token"
	is "$(awk -F'\t' '$1 == "tok" && $5 == 0 && $7 >= 2 { printf "%s=%s ", $10, $11 }' "$T/tx.tsv")" \
		'198=\n 197=\t 59=\\ ' "newline, tab and backslash escaped"
	is "$(awk -F'\t' '$1 == "tok" && $5 == 1 && $7 >= 2 && $7 <= 4 { printf "%s=[%s] ", $10, $11 }' "$T/tx.tsv")" \
		'59=[\\] 77=[n] 220=[ ] ' "a backslash before n stays apart from a newline; a space is itself"
	is "$(awk -F'\t' '{ print NF }' "$T/tx.tsv" | sort -u)" 18 "every row still one row of 18 columns"
else
	for i in 1 2 3 4 5; do ok 0 "# SKIP no tokenizer at $tok"; done
fi

# 6. --save-every 2: weights on even steps, the optimizer state on every step
grpo-step --model "$T/model" --batches "$T/b" -o "$T/s" --lr 1e-3 --steps 3 --save-every 2 \
	--on-publish 'echo $GRPO_STEP >> "$HOOK_LOG.s"' --metrics "$T/ms" 2> /dev/null
ok $? "three steps with --save-every 2"
[ -f "$T/s/step_1/optim.bin" ] && [ ! -e "$T/s/step_1/config.json" ] && [ ! -e "$T/s/step_1/model.safetensors" ] &&
	[ -f "$T/s/step_2/model.safetensors" ] && [ -f "$T/s/step_2/config.json" ] && [ -f "$T/s/step_3/optim.bin" ] &&
	[ ! -e "$T/s/step_3/config.json" ]
ok $? "steps 1 and 3 hold optim.bin alone, step 2 the weights too"
is "$(grep -o '"weights":[a-z]*' "$T/ms" | tr '\n' ' ')" '"weights":false "weights":true "weights":false ' "the metrics say which"
is "$(cat "$HOOK_LOG.s")" 2 "--on-publish runs for the step with weights only"
grpo-step --model "$T/model" --batches "$T/b" -o "$T/s1" --lr 1e-3 --save-every 2 2> /dev/null &&
	grpo-step --batches "$T/b" -o "$T/s1" --lr 1e-3 --save-every 2 2> /dev/null
ok $? "step 2 resumed from step 1, which has no weights"
cmp -s "$T/s/step_2/model.safetensors" "$T/s1/step_2/model.safetensors" &&
	cmp -s "$T/s/step_2/optim.bin" "$T/s1/step_2/optim.bin"
ok $? "bit-identical to the run that never stopped"
cp -r "$T/s" "$T/sk"
rm -rf "$T/sk/step_3"
grpo-step --batches "$T/b" -o "$T/sk" --lr 1e-3 --save-every 2 --keep 1 2> /dev/null
is "$(ls "$T/sk" | tr '\n' ' ')" "step_0 step_2 step_3 " "--keep 1 keeps the newest weights (step 2) and the steps after"
echo '{"prompt_tokens":[1,2]}' > "$T/prompts"
grpo-collect --model "$T/sk" --prompts "$T/prompts" --samples 1 --max-tokens 2 | grpo-cat | grep -q '"policy_version":2,'
ok $? "grpo-collect --model POLICY samples from step 2, the newest with weights, not step 3"

# 7. two ranks in two processes: the same bits as one process over both ranks
grpo-pack -T 32 -W 2 -o "$T/b2" "$T/groups.zst" || exit 1
mkdir "$T/r2" "$T/r1"
cp -r "$T/p/step_0" "$T/r2/" && cp -r "$T/p/step_0" "$T/r1/"
grpo-step --batches "$T/b2" -o "$T/r1" --lr 1e-3 --beta 0.05 --loss-agg dapo --metrics "$T/m1" 2> /dev/null
ok $? "one process over both ranks"
grpo-step --batches "$T/b2" -o "$T/r2" --lr 1e-3 --beta 0.05 --loss-agg dapo --rank 1 --step 1 \
	--metrics "$T/m2.1" 2> "$T/err1" &
pid1=$!
grpo-step --batches "$T/b2" -o "$T/r2" --lr 1e-3 --beta 0.05 --loss-agg dapo --rank 0 --step 1 \
	--metrics "$T/m2.0" 2> "$T/err0"
s0=$?
wait $pid1
s1=$?
is "$s0 $s1" "0 0" "--rank 0 and --rank 1 in two processes"
cmp -s "$T/r1/step_1/model.safetensors" "$T/r2/step_1/model.safetensors" &&
	cmp -s "$T/r1/step_1/optim.bin" "$T/r2/step_1/optim.bin"
ok $? "rank 0 publishes the weights and optimizer state of the single process, bit for bit"
is "$(field "$T/m2.1" loss) $(field "$T/m2.1" grad_norm)" "$(field "$T/m1" loss) $(field "$T/m1" grad_norm)" \
	"rank 1 took the same step (loss and grad norm)"
[ ! -e "$T/r2/.grad" ]; ok $? "the exchanged gradients are removed once the step is published"
mkdir "$T/r3" && cp -r "$T/p/step_0" "$T/r3/"
grpo-step --batches "$T/b2" -o "$T/r3" --rank 0 --rank-timeout 1 2> "$T/err"
is $? 75 "a peer that never comes: 75, try later"
grep -q "rank 1's gradient did not appear within 1s" "$T/err" && [ ! -e "$T/r3/step_1" ]
ok $? "names the rank after --rank-timeout, publishes nothing"
grpo-step --batches "$T/b2" -o "$T/r3" --rank 2 2> "$T/err"; is $? 1 "--rank beyond the step's ranks: 1"
grpo-step --batches "$T/b2" -o "$T/r3" --rank 1 --rank-timeout 60 2> "$T/err1" &
pid1=$!
grpo-step --batches "$T/b2" -o "$T/r3" --rank 0 --rank-timeout 60 2> "$T/err0"
s0=$?
wait $pid1
is "$s0 $?" "0 0" "run again once the peer runs, the step goes on"
[ -f "$T/r3/step_1/model.safetensors" ] && [ ! -e "$T/r3/.grad" ]
ok $? "rank 0 publishes it, and the first try's gradient is gone with the rest"

# 8. --keep and --on-publish are rank 0's: another rank says so once and does neither
grpo-pack -T 32 -W 2 -o "$T/b2" "$T/groups1.zst" || exit 1
mkdir "$T/r4" && cp -r "$T/p/step_0" "$T/r4/"
grpo-step --batches "$T/b2" -o "$T/r4" --rank 1 --steps 2 --keep 1 \
	--on-publish "echo \"1 \$GRPO_STEP\" >> '$T/hook.r'" 2> "$T/err1" &
pid1=$!
grpo-step --batches "$T/b2" -o "$T/r4" --rank 0 --steps 2 \
	--on-publish "echo \"0 \$GRPO_STEP\" >> '$T/hook.r'" 2> "$T/err0"
s0=$?
wait $pid1
is "$s0 $?" "0 0" "two steps in two processes, rank 1 with --keep 1 and --on-publish"
is "$(grep -c "^grpo-step: --keep is rank 0's (it alone publishes and prunes policy/step_N): ignored on rank 1\$" "$T/err1")" 1 \
	"rank 1 says once that --keep is rank 0's and ignored"
is "$(grep -c "^grpo-step: --on-publish is rank 0's (it alone publishes policy/step_N): ignored on rank 1\$" "$T/err1")" 1 \
	"and once that --on-publish is"
is "$(tr '\n' ';' < "$T/hook.r")" "0 1;0 2;" "only rank 0 ran --on-publish, after each step"
is "$(ls "$T/r4" | tr '\n' ' ')" "step_0 step_1 step_2 " "rank 1 pruned nothing"
is "$(grep -c "rank 0's" "$T/err0")" 0 "rank 0 has nothing to say of it"

# 9. rank 0 killed after publishing step 1, before removing its gradients: the next step removes them.
# Rank 1 goes first, and rank 0 only once rank 1's gradient is out, so that
# rank 0 finds it at its first look: its calls up to publishing, which the
# crash point counts, are then the same in every run (waiting would add some).
rank1_first() { # rank1_first POLICY: rank 1 of step 1 in the background ($pid1), its gradient published
	grpo-step --batches "$T/b2" -o "$1" --rank 1 2> /dev/null &
	pid1=$!
	w=0
	while ! [ -e "$1/.grad/step_1/e0.rank_1" ] && [ $w -lt 1200 ]; do sleep 0.05; w=$((w + 1)); done
}
mkdir "$T/r5" "$T/r6" && cp -r "$T/p/step_0" "$T/r5/" && cp -r "$T/p/step_0" "$T/r6/"
rank1_first "$T/r6"
GRPO_FSYS_TRACE=1 grpo-step --batches "$T/b2" -o "$T/r6" --rank 0 2> "$T/trace"
wait $pid1
n=$(grep 'rename_noreplace' "$T/trace" | tail -1 | awk '{print $2 + 1}')
rank1_first "$T/r5"
GRPO_FSYS_CRASH_AT=$n grpo-step --batches "$T/b2" -o "$T/r5" --rank 0 2> /dev/null
s0=$?
wait $pid1
is "$s0 $? $(ls "$T/r5/.grad")" "86 0 step_1" "rank 0 killed after publishing step 1 leaves its gradients"
grpo-step --batches "$T/b2" -o "$T/r5" --rank 1 2> /dev/null &
pid1=$!
grpo-step --batches "$T/b2" -o "$T/r5" --rank 0 2> /dev/null
s0=$?
wait $pid1
is "$s0 $?" "0 0" "step 2 in two processes"
[ -f "$T/r5/step_2/optim.bin" ] && [ ! -e "$T/r5/.grad" ]; ok $? "and no gradient of step 1 or 2 is left"

# 10. a published step's micro-batches are retired: grpo-spool shows them done,
# not waiting, and gc can remove the step; a run killed between publishing and
# retiring leaves them waiting, and the next run retires them, a micro-batch
# that a crash left claimed too
mkdir -p "$T/sp/policy" && cp -r "$T/p/step_0" "$T/sp/policy/"
grpo-pack -T 16 -W 1 -o "$T/sp/batches" "$T/groups.zst" && grpo-pack -T 16 -W 1 -o "$T/sp/batches" "$T/groups1.zst" ||
	exit 1
cp -r "$T/sp" "$T/sq" && cp -r "$T/sp" "$T/sr" && cp -r "$T/sp" "$T/ss"
GRPO_FSYS_TRACE=1 grpo-step --batches "$T/sq/batches" -o "$T/sq/policy" 2> "$T/trace"
n=$(grep -m1 'rename_noreplace' "$T/trace" | awk '{print $2 + 2}')   # the step published, its fsync_dir done
waiting() { grpo-spool status --json "$1" | grep "\"queue\":\"batches\",\"step\":$2," | sed 's/.*"waiting":\([0-9]*\).*/\1/'; }
is "$(waiting "$T/sq" 1)" 0 "a step trained: its micro-batches are not waiting"
GRPO_FSYS_CRASH_AT=$n grpo-step --batches "$T/sp/batches" -o "$T/sp/policy" 2> /dev/null
is "$?:$(ls "$T/sp/policy" | tr '\n' ' '):$(waiting "$T/sp" 1)" "86:step_0 step_1 :$(ls "$T/sp/batches/step_1/rank_0" | wc -l | tr -d ' ')" \
	"killed after publishing step 1: its micro-batches still wait"
grpo-step --batches "$T/sp/batches" -o "$T/sp/policy" 2> /dev/null
is "$?:$(waiting "$T/sp" 1):$(waiting "$T/sp" 2)" "0:0:0" "the next run retires them, and step 2's"
# the flush that makes step 1's rename last fails: the step is published all
# the same (a re-run finds it), so its metrics line is written before the
# run fails, saying so, and the next run retires its micro-batches
GRPO_FSYS_FAIL_AT=$((n - 1)):EIO grpo-step --batches "$T/ss/batches" -o "$T/ss/policy" --metrics "$T/ss/m" 2> "$T/err"
is "$?:$(ls "$T/ss/policy" | tr '\n' ' '):$(grep -c '"step":1,' "$T/ss/m"):$(cat "$T/err")" \
	"1:step_0 step_1 :1:grpo-step: $T/ss/policy/step_1 is published, but $T/ss/policy: fsync failed: Input/output error" \
	"the flush after step 1's rename fails: exit 1 saying step 1 is published, and its metrics line written"
grpo-step --batches "$T/ss/batches" -o "$T/ss/policy" --metrics "$T/ss/m" 2> /dev/null
is "$?:$(grep -c '"step":1,' "$T/ss/m"):$(grep -c '"step":2,' "$T/ss/m"):$(waiting "$T/ss" 1):$(waiting "$T/ss" 2)" "0:1:1:0:0" \
	"the next run trains step 2 and retires step 1's micro-batches: one line for each step"
# killed while retiring: right after claiming a micro-batch (the claim's rename, its .claimed/
# made first), before moving its record to .done
n=$(awk '/create_locked/ { c = 1 } c && r && / stat$/ { print $2; exit } { r = c && / rename_noreplace$/ }' "$T/trace")
GRPO_FSYS_CRASH_AT=$n grpo-step --batches "$T/sr/batches" -o "$T/sr/policy" 2> /dev/null
is "$?:$(grpo-spool status --json "$T/sr" | grep -c '"step":1,.*"claimed":1,')" "86:1" \
	"killed while retiring step 1: a micro-batch is left claimed by the dead run"
grpo-step --batches "$T/sr/batches" -o "$T/sr/policy" 2> /dev/null
is "$?:$(grpo-spool status --json "$T/sr" | grep -c '"step":[12],.*"waiting":0,"claimed":0,"done":6,')" "0:2" \
	"the next run retires it too, with the rest of step 1 and step 2"
grpo-spool gc "$T/sp" --keep-last 0 --queue batches 2> /dev/null
is "$(ls "$T/sp/batches" | tr '\n' ' ')" "step_2 " "gc removes step 1, and keeps the newest step with DONE (grpo-pack reads it back)"
grpo-pack -T 16 -W 1 -o "$T/sp/batches" "$T/groups2.zst" && [ -f "$T/sp/batches/step_3/DONE" ]
ok $? "grpo-pack goes on with step 3"

# 11. --on-publish at least once: a run killed between publishing step 1 and
# running its command leaves it to the next run, which runs it for the newest
# published step before training (and stops there with --on-publish-fail stop
# when it fails); once it has succeeded, no run repeats it
mkdir -p "$T/hp/policy" && cp -r "$T/model" "$T/hp/policy/step_0"
grpo-pack -T 16 -W 1 -o "$T/hp/batches" "$T/groups.zst" && grpo-pack -T 16 -W 1 -o "$T/hp/batches" "$T/groups1.zst" ||
	exit 1
cp -r "$T/hp" "$T/hq"
hk='echo "$GRPO_STEP" >> "$HOOK_LOG.h"'
GRPO_FSYS_TRACE=1 grpo-step --batches "$T/hq/batches" -o "$T/hq/policy" --on-publish "$hk" 2> "$T/trace"
rm -f "$HOOK_LOG.h"
n=$(grep -m1 'rename_noreplace' "$T/trace" | awk '{print $2 + 2}')   # step 1 published, its fsync_dir done
GRPO_FSYS_CRASH_AT=$n grpo-step --batches "$T/hp/batches" -o "$T/hp/policy" --on-publish "$hk" 2> /dev/null
is "$?:$(ls "$T/hp/policy" | tr '\n' ' '):$(cat "$HOOK_LOG.h" 2> /dev/null)" "86:step_0 step_1 :" \
	"killed after publishing step 1, before its --on-publish"
grpo-step --batches "$T/hp/batches" -o "$T/hp/policy" --on-publish 'exit 5' --on-publish-fail stop 2> "$T/err"
is "$?:$(ls "$T/hp/policy" | tr '\n' ' ')" "3:step_0 step_1 " \
	"the next run runs it for step 1 first; failing with --on-publish-fail stop: 3, nothing trained"
grep -q "step 1: --on-publish 'exit 5' failed with exit status 5" "$T/err"; ok $? "naming the step and the status"
grpo-step --batches "$T/hp/batches" -o "$T/hp/policy" --on-publish "$hk" 2> "$T/err"
is "$?:$(tr '\n' ' ' < "$HOOK_LOG.h")" "0:1 2 " "the next run runs it for step 1, then trains step 2 and runs it for step 2"
[ -f "$T/hp/policy/step_1/.on-publish-done" ] && [ -f "$T/hp/policy/step_2/.on-publish-done" ]
ok $? "each step's success is marked in the step's .on-publish-done"
grpo-step --batches "$T/hp/batches" -o "$T/hp/policy" --on-publish "$hk" 2> /dev/null
is "$?:$(tr '\n' ' ' < "$HOOK_LOG.h")" "75:1 2 " "a run with nothing to train runs it for no step again"
# the newest step (3, of --save-every 2) has no weights, so the run lists the queue for
# the one before with weights (2); that listing failing skipped the command silently
cp -r "$T/s" "$T/sh" && rm -f "$T/sh/step_2/.on-publish-done"
cp -r "$T/sh" "$T/sh0"
GRPO_FSYS_TRACE=1 grpo-step --batches "$T/b" -o "$T/sh0" --on-publish true 2> "$T/trace"
n=$(sed -n '/running --on-publish/q;s/^fsys \([0-9]*\) list_dir$/\1/p' "$T/trace" | tail -1)
HOOK_LOG=$T/hsh GRPO_FSYS_FAIL_AT=$n:EIO grpo-step --batches "$T/b" -o "$T/sh" --on-publish "$hk" \
	--on-publish-fail stop 2> "$T/err"
is "$?:$(cat "$T/hsh.h" 2> /dev/null)" "3:" \
	"the queue unreadable looking for the step with weights: the command's failure, stop: 3"
grep -q "warning: cannot find the newest step with weights to run --on-publish for.*: $T/sh: .*Input/output error" "$T/err"
ok $? "a warning naming the queue and the error: $(head -1 "$T/err")"
HOOK_LOG=$T/hsh grpo-step --batches "$T/b" -o "$T/sh" --on-publish "$hk" 2> /dev/null
is "$?:$(cat "$T/hsh.h")" "75:2" "the next run runs it for step 2"

# 12. one grpo-step per policy queue and rank: a second exits 75 at once,
# naming the first, while --rank processes of other ranks run beside it
mkdir -p "$T/lk/policy" && cp -r "$T/model" "$T/lk/policy/step_0"
grpo-pack -T 16 -W 1 -o "$T/lk/batches" "$T/groups.zst" && grpo-pack -T 16 -W 1 -o "$T/lk/batches" "$T/groups1.zst" ||
	exit 1
# the first holds the queue while its --on-publish waits for $T/lk-go
grpo-step --batches "$T/lk/batches" -o "$T/lk/policy" \
	--on-publish "touch '$T/lk-in'; while [ ! -e '$T/lk-go' ]; do sleep 0.05; done" 2> /dev/null &
pid=$!
w=0
while ! [ -e "$T/lk-in" ] && [ $w -lt 1200 ]; do sleep 0.05; w=$((w + 1)); done
grpo-step --batches "$T/lk/batches" -o "$T/lk/policy" 2> "$T/err"
s2=$?
ls "$T/lk/policy" > "$T/lk-ls"
touch "$T/lk-go"
wait $pid
is "$s2:$?:$(tr '\n' ' ' < "$T/lk-ls")" "75:0:step_0 step_1 " "a second grpo-step on the queue: 75, nothing trained"
grep -q "another grpo-step (pid $pid on .*) is training into this policy queue" "$T/err"
ok $? "naming the one that holds it: $(cat "$T/err")"
# rank 1 waits for rank 0's gradient: a second rank 1 exits 75, rank 0 runs beside it
mkdir "$T/r7" && cp -r "$T/p/step_0" "$T/r7/"
grpo-step --batches "$T/b2" -o "$T/r7" --rank 1 --step 1 2> /dev/null &
pid1=$!
w=0
while ! [ -e "$T/r7/.grad/step_1/e0.rank_1" ] && [ $w -lt 1200 ]; do sleep 0.05; w=$((w + 1)); done
grpo-step --batches "$T/b2" -o "$T/r7" --rank 1 --step 1 --rank-timeout 5 2> "$T/err"
s2=$?
grpo-step --batches "$T/b2" -o "$T/r7" --rank 0 --step 1 2> /dev/null
s0=$?
wait $pid1
is "$s2:$s0:$?" "75:0:0" "a second rank 1: 75; rank 0 beside rank 1 trains the step"

# 13. SIGTERM during --steps 2 (sent here by --on-publish after step 1): the
# step in hand is finished, and the run exits 75, not 0, as a step asked for
# is not published; under --watch without --steps it is how training ends: 0
mkdir "$T/sg" "$T/sw" && cp -r "$T/model" "$T/sg/step_0" && cp -r "$T/model" "$T/sw/step_0"
grpo-step --batches "$T/b" -o "$T/sg" --steps 2 --on-publish 'kill -TERM $PPID' 2> "$T/err"
is "$?:$(ls "$T/sg" | tr '\n' ' ')" "75:step_0 step_1 " "SIGTERM after step 1 of --steps 2: 75, step 1 published"
grep -q 'stopped by a signal (Terminated) before step 2, 1 step asked for not trained (--step 2 --steps 1 trains it and no more)$' "$T/err"
ok $? "and says so, with what trains the step left (the same command would train 2 after step 1): $(cat "$T/err")"
grpo-step --batches "$T/b" -o "$T/sg" --step 2 --steps 1 2> /dev/null
is "$?:$(ls "$T/sg" | tr '\n' ' ')" "0:step_0 step_1 step_2 " "which trains step 2 and no more"
grpo-step --batches "$T/b" -o "$T/sg" --steps 3 2> "$T/err"
is "$?:$(ls "$T/sg" | tr '\n' ' ')" "75:step_0 step_1 step_2 step_3 " "--steps 3 with DONE for one: step 3, then 75"
grep -q "$T/b/step_4: no DONE yet, 2 steps asked for not trained (--step 4 --steps 2 trains them and no more)\$" "$T/err"
ok $? "naming what trains the two left: $(grep DONE "$T/err")"
grpo-step --batches "$T/b" -o "$T/sw" --watch --on-publish 'kill -TERM $PPID' 2> /dev/null
is "$?:$(ls "$T/sw" | tr '\n' ' ')" "0:step_0 step_1 " "SIGTERM ends --watch without --steps: 0"

exit $_failed
