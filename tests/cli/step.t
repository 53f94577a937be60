#!/bin/sh
# grpo-step: a step from grpo-pack's micro-batches to policy/step_1 (step_0
# published first), metrics, exit statuses, the same update from other
# packings, a run of two steps equal to two runs of one, and a crash during
# publish that leaves the previous step intact for a re-run to complete (a
# step without optim.bin to resume from is said to restart AdamW);
# weights or moments that are not finite are not published, nor is a step
# whose debug table meets a full disk; weight decay on the matrices alone
# or on every tensor.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 88

d="$GRPO_TOP/tests/cli/step"
grpo-init --preset tiny --seed 7 -o "$T/model" || exit 1
grpo-cat --from-json -o "$T/groups.zst" "$d/groups.jsonl" || exit 1
# the same groups sampled by later policies: new input for steps 2 and 3 (grpo-pack packs one input once)
for v in 1 2; do
	sed "s/\"policy_version\":0/\"policy_version\":$v/g" "$d/groups.jsonl" | grpo-cat --from-json -o "$T/groups$v.zst" || exit 1
done
grpo-cat --from-json -o "$T/noref.zst" "$d/noref.jsonl" || exit 1
grpo-pack -T 16 -W 1 -o "$T/b16" "$T/groups.zst" || exit 1

# 1. a first step
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/policy" --lr 1e-3 --metrics "$T/m.jsonl" 2> "$T/err"
ok $? "a first step trains"
for f in config.json generation_config.json model.safetensors; do
	cmp -s "$T/model/$f" "$T/policy/step_0/$f"; ok $? "step_0 holds the input model's $f"
done
for f in config.json generation_config.json model.safetensors optim.bin; do
	[ -s "$T/policy/step_1/$f" ]; ok $? "step_1 has $f"
done
! cmp -s "$T/model/model.safetensors" "$T/policy/step_1/model.safetensors"; ok $? "the weights moved"
# a model's own generation_config.json (Qwen's: two eos ids, sampling defaults) is what samplers read, so
# every step keeps it, as save_pretrained does; one made from config.json would lose all but config's eos
cp -r "$T/model" "$T/mgen"
printf '{\n  "do_sample": true,\n  "eos_token_id": [5, 3],\n  "temperature": 0.7,\n  "top_p": 0.8\n}\n' \
	> "$T/mgen/generation_config.json"
grpo-step --model "$T/mgen" --batches "$T/b16" -o "$T/pgen" --lr 1e-3 2> /dev/null &&
	cmp "$T/mgen/generation_config.json" "$T/pgen/step_1/generation_config.json"
ok $? "step_1 keeps the input model's generation_config.json"
# config.json too is step_0's, as save_pretrained keeps a config's keys: the
# keys grpo-tools does not read (Qwen2.5's max_window_layers and sliding_window,
# pad_token_id, dropout, the transformers version) stay as they were, so a
# sampler builds every step as it built step_0; only the dtype follows the weights
mkdir "$T/mkeys" && cp "$T/model/"* "$T/mkeys/" &&
	awk 'NR == 1 { print; print "  \"pad_token_id\": 0,"; print "  \"transformers_version\": \"4.51.0\","; next }
	     { print }' "$T/model/config.json" |
	sed -e 's/"max_window_layers": 2/"max_window_layers": 21/' -e 's/"sliding_window": null/"sliding_window": 32768/' \
	    -e 's/"attention_dropout": 0.0/"attention_dropout": 0.1/' -e 's/"use_cache": true/"use_cache": false/' \
	> "$T/mkeys/config.json" &&
	sed 's/"float32"/"bfloat16"/' "$T/mkeys/config.json" > "$T/keys-bf16.json"
grpo-step --model "$T/mkeys" --batches "$T/b16" -o "$T/pkeys" --lr 1e-3 --save-dtype bfloat16 2> /dev/null &&
	cmp "$T/keys-bf16.json" "$T/pkeys/step_1/config.json"
ok $? "step_1's config.json is the input's, its dtype bfloat16"
# a transformers 5 config names the dtype only as "dtype": "torch_dtype" is added for older readers
grep -v '"torch_dtype"' "$T/mkeys/config.json" > "$T/mkeys/c5" && mv "$T/mkeys/c5" "$T/mkeys/config.json" &&
	grpo-step --model "$T/mkeys" --batches "$T/b16" -o "$T/pkeys5" --lr 1e-3 --save-dtype bfloat16 2> /dev/null
c5="$T/pkeys5/step_1/config.json"
is "$(grep -c '"dtype": "bfloat16"' "$c5"):$(grep -c '"torch_dtype": "bfloat16"' "$c5"):$(grep -c '"pad_token_id": 0' "$c5")" \
	"1:1:1" "a config with dtype alone: step_1 says bfloat16 as dtype and torch_dtype, and keeps the rest"
# a Hugging Face hub cache snapshot: every file a relative symlink into ../../blobs
mkdir -p "$T/hub/blobs" "$T/hub/snapshots/abc"
for f in config.json generation_config.json model.safetensors; do
	cp "$T/model/$f" "$T/hub/blobs/$f.blob" && ln -s "../../blobs/$f.blob" "$T/hub/snapshots/abc/$f"
done
grpo-step --model "$T/hub/snapshots/abc" --batches "$T/b16" -o "$T/phub" --lr 1e-3 2> "$T/hub.err"
ok $? "a model whose files are symlinks (a hub cache snapshot) trains: $(cat "$T/hub.err")"
[ -f "$T/phub/step_0/model.safetensors" ] && [ ! -L "$T/phub/step_0/model.safetensors" ] &&
	cmp -s "$T/model/model.safetensors" "$T/phub/step_0/model.safetensors"
ok $? "step_0 holds the files the links point to, not links that dangle there"
is "$(wc -l < "$T/m.jsonl" | tr -d ' ')" 1 "one metrics line"
for k in '"step":1' '"loss":' '"policy_loss":' '"kl":' '"entropy":' '"clip_low":' '"ratio_mean":' \
	'"grad_norm":' '"lr":0.001' '"sequences":12' '"align_diff_abs_mean":' '"time":{"read":'; do
	grep -q "$k" "$T/m.jsonl" || { echo "# no $k"; false; }
done
ok $? "the metrics line has the loss parts, ratio, alignment, grad norm, lr, counts and times"
diff=$(sed -n 's/.*"align_diff_abs_mean":\([-0-9.e+]*\).*/\1/p' "$T/m.jsonl")
want=$(awk -v d="$diff" 'BEGIN { print (d > 0.1) ? 0 : 1 }')
grep -q 'warning: trainer and sampler logprobs differ' "$T/err"
is $? "$want" "the alignment warning comes exactly when mean |trainer - sampler| > 0.1 (it is $diff)"

# 2. exit statuses
grpo-step --batches "$T/b16" -o "$T/policy" --step 1; ok $? "a step already published: nothing to do, 0"
grpo-step --batches "$T/b16" -o "$T/policy" 2> "$T/err"; is $? 75 "no DONE for step 2 yet: 75"
grep -q 'step_2: no DONE yet' "$T/err"; ok $? "and says so"
grpo-step --batches "$T/b16x" -o "$T/policy" 2> "$T/err"
is "$?:$(grep -c "no DONE yet ($T/b16x: No such file or directory: is it the queue grpo-pack -o writes?)" "$T/err")" \
	"75:1" "a batches queue that does not exist (a typo?): 75, naming it"
# said once however late it starts: a second of waiting is timed from the message
grpo-step --watch --batches "$T/b16x" -o "$T/policy" 2> "$T/err" &
pid=$!
said() { grep -q "$T/b16x: No such file or directory: waiting for it" "$T/err"; }
wait_for 120 said && sleep 1
kill -0 $pid 2> /dev/null
waiting=$?
kill -TERM $pid 2> /dev/null; wait $pid
is "$waiting:$(grep -c "$T/b16x: No such file or directory: waiting for it" "$T/err")" "0:1" \
	"--watch on one: said once, then waits"
grpo-step --batches "$T/b16" -o "$T/policy" --step 5 2> "$T/err"; is $? 1 "step 5 without step_4: 1"
grpo-step -o "$T/policy" 2> /dev/null; is $? 2 "no --batches: usage, 2"
grpo-step --batches "$T/b16" -o "$T/p2" --loss-agg dr_grpo --model "$T/model" 2> /dev/null
is $? 2 "dr_grpo without --max-len: 2"
grpo-step --batches "$T/b16" -o "$T/p2" --loss-agg mean 2> /dev/null; is $? 2 "unknown aggregation: 2"
grpo-pack -T 16 -W 1 -o "$T/bn" "$T/noref.zst" || exit 1
grpo-step --model "$T/model" --batches "$T/bn" -o "$T/pn" --beta 0.1 2> "$T/err"; is $? 1 "beta without reference logprobs: 1"
grep -q 'reference logprobs' "$T/err" && [ ! -d "$T/pn/step_1" ]; ok $? "says why, publishes nothing"
# a token id the model does not have: the message says which micro-batch holds it
cp -r "$T/b16" "$T/bv" && rm "$T/bv/step_1/rank_0/mb_0002.zst"
grpo-cat --json "$T/b16/step_1/rank_0/mb_0002.zst" | sed 's/"input_ids":\[\([0-9]*\),[0-9]*,/"input_ids":[\1,9999,/' |
	grpo-cat --from-json -o "$T/bv/step_1/rank_0/mb_0002.zst" || exit 1
grpo-step --model "$T/model" --batches "$T/bv" -o "$T/pv" 2> "$T/err"; is $? 1 "a token id outside the vocabulary: 1"
grep -q 'rank 0, index 2.*id 9999 outside the vocabulary' "$T/err" && [ ! -d "$T/pv/step_1" ]
ok $? "names the micro-batch, publishes nothing: $(cat "$T/err")"
# scored groups where a micro-batch belongs: refused naming the file, not skipped
cp -r "$T/b16" "$T/bg" && cp "$T/groups.zst" "$T/bg/step_1/rank_0/mb_0006.zst"
grpo-step --model "$T/model" --batches "$T/bg" -o "$T/pg" 2> "$T/err"; is $? 1 "groups among the micro-batches: 1"
grep -q 'bg/step_1/rank_0/mb_0006.zst: record 1: a group' "$T/err" && [ ! -d "$T/pg/step_1" ]
ok $? "names the file and record, publishes nothing: $(cat "$T/err")"

# debug table: a row per sequence, a row per token, 18 columns each
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pt" --debug-table "$T/t.tsv" --debug-tokens \
	--metrics "$T/mt" 2> /dev/null; ok $? "--debug-table --debug-tokens"
is "$(awk -F'\t' '{ print NF }' "$T/t.tsv" | sort -u)" 18 "every row has 18 tab-separated columns"
is "$(head -1 "$T/t.tsv" | cut -f1,5,13-18 | tr '\t' ' ')" \
	"kind sequence_id sampler_lp ref_lp trainer_lp ratio clipped loss_mask" "the header"
is "$(grep -c '^seq' "$T/t.tsv")" 12 "one row per sequence"
is "$(awk -F'\t' '$1 == "tok" && $18 == 1' "$T/t.tsv" | wc -l | tr -d ' ')" \
	"$(sed -n 's/.*"loss_tokens":\([0-9]*\).*/\1/p' "$T/mt")" "one trained token row per loss token"
# rows appended through standard output (>>) to a table that has its header: no second header
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pt2" --debug-table - 2> /dev/null >> "$T/t.tsv"
is "$(grep -c '^kind' "$T/t.tsv"):$(grep -c '^seq' "$T/t.tsv")" 1:24 "--debug-table - >> TABLE: the rows, one header"

# 3. the same data packed differently: same loss and grad norm (fp32 tolerance)
grpo-pack -T 32 -W 2 -o "$T/b32" "$T/groups.zst" || exit 1
grpo-pack -T 24 -W 3 -o "$T/b24" "$T/groups.zst" || exit 1
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(d <= 1e-5 * m + 1e-9) }'; }
for agg in grpo dapo dr_grpo; do
	for b in b16 b32 b24; do
		grpo-step --model "$T/model" --batches "$T/$b" -o "$T/p-$agg-$b" --loss-agg "$agg" --max-len 8 \
			--beta 0.05 --metrics "$T/m-$agg-$b" 2> /dev/null || echo "# $agg $b failed"
	done
	okk=0
	for b in b32 b24; do
		for k in loss grad_norm; do
			close "$(field "$T/m-$agg-b16" $k)" "$(field "$T/m-$agg-$b" $k)" || { okk=1; echo "# $agg $b $k differs"; }
		done
	done
	ok $okk "$agg: packed as 16x1, 32x2, 24x3: the same loss and grad norm"
done

# 4. two steps in one run equal two runs of one step (resume from optim.bin, bf16 weights)
grpo-pack -T 16 -W 1 -o "$T/b16" "$T/groups1.zst" || exit 1   # step 2
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pa" --lr 1e-3 --save-dtype bfloat16 --steps 2 2> /dev/null
ok $? "two steps in one run"
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pb" --lr 1e-3 --save-dtype bfloat16 2> /dev/null &&
grpo-step --batches "$T/b16" -o "$T/pb" --lr 1e-3 --save-dtype bfloat16 2> /dev/null
ok $? "the same two steps in two runs"
cmp -s "$T/pa/step_2/optim.bin" "$T/pb/step_2/optim.bin" &&
	cmp -s "$T/pa/step_2/model.safetensors" "$T/pb/step_2/model.safetensors"
ok $? "resuming is bit-identical (weights and optimizer state)"
grep -q '"torch_dtype": "bfloat16"' "$T/pb/step_2/config.json"; ok $? "--save-dtype bfloat16 in config.json"
# a step without optim.bin (lost, or put there by hand) restarts AdamW and its
# warmup: said, naming the step, rather than a resume that silently is not one
mkdir "$T/po" && cp -r "$T/pb/step_0" "$T/pb/step_1" "$T/po/" && rm "$T/po/step_1/optim.bin"
grpo-step --batches "$T/b16" -o "$T/po" --lr 1e-3 --warmup-steps 4 --metrics "$T/mo" 2> "$T/err"
is "$?:$(grep -c "warning: $T/po/step_1 has no optim.bin: AdamW starts afresh" "$T/err"):$(field "$T/mo" lr)" \
	"0:1:0.00025" "step_1 without optim.bin: step 2 trains at the warmup's first lr, and says why"
mkdir "$T/pq" && cp -r "$T/pb/step_0" "$T/pb/step_1" "$T/pq/"
grpo-step --batches "$T/b16" -o "$T/pq" --lr 1e-3 --warmup-steps 4 --metrics "$T/mq" 2> "$T/err"
is "$?:$(grep -c 'optim.bin' "$T/err"):$(field "$T/mq" lr)" "0:0:0.0005" "with it: resumed at the second lr, nothing said"
# an optim.bin cut short, or one that is no optimizer state, is refused naming it: nothing published
for bad in short foreign; do
	mkdir "$T/p$bad" && cp -r "$T/pb/step_0" "$T/pb/step_1" "$T/p$bad/" || exit 1
	if [ $bad = short ]; then head -c 1000 "$T/pb/step_1/optim.bin"; else head -c 5000 "$T/pb/step_1/model.safetensors"; fi \
		> "$T/p$bad/step_1/optim.bin"
	grpo-step --batches "$T/b16" -o "$T/p$bad" --lr 1e-3 2> "$T/err"
	is "$?:$(cat "$T/err"):$(ls "$T/p$bad" | tr '\n' ' ')" \
		"1:grpo-step: $T/p$bad/step_1/optim.bin: $([ $bad = short ] && echo truncated optimizer state || echo 'not an optimizer state file (bad magic)'):step_0 step_1 " \
		"an optim.bin $([ $bad = short ] && echo cut short || echo of another kind): 1, naming it, step 2 not published"
done

# 5. --watch: waits for step 3's DONE (or finds it) and trains it
grpo-step --batches "$T/b16" -o "$T/pa" --lr 1e-3 --save-dtype bfloat16 --watch --steps 1 2> /dev/null &
pid=$!
grpo-pack -T 16 -W 1 -o "$T/b16" "$T/groups2.zst" || exit 1   # step 3
wait $pid; ok $? "--watch --steps 1 trains step 3 once its DONE is there"
[ -s "$T/pa/step_3/optim.bin" ]; ok $? "and publishes it"
# a re-run of --step 1 --steps 3 after a run that published steps 1 and 2 (and died): step 3 still comes
cp -r "$T/pb" "$T/pe"
grpo-step --batches "$T/b16" -o "$T/pe" --lr 1e-3 --save-dtype bfloat16 --step 1 --steps 3 2> /dev/null
ok $? "--step 1 --steps 3 with steps 1 and 2 published"
cmp -s "$T/pe/step_3/optim.bin" "$T/pa/step_3/optim.bin" && cmp -s "$T/pe/step_1/optim.bin" "$T/pb/step_1/optim.bin"
ok $? "leaves steps 1 and 2 alone and trains step 3 as an uninterrupted run does"

# 6. kill -9 during publish: step_1 intact, no step_2; a re-run completes it
cp -r "$T/pb" "$T/pc"
rm -rf "$T/pc/step_2" "$T/pc/.tmp"
cp -r "$T/pc" "$T/pd"
GRPO_FSYS_TRACE=1 grpo-step --batches "$T/b16" -o "$T/pd" --lr 1e-3 --save-dtype bfloat16 2> "$T/trace"
n=$(grep 'rename_noreplace' "$T/trace" | tail -1 | awk '{print $2}')
[ -n "$n" ]; ok $? "the publish's rename is fsys call $n"
GRPO_FSYS_CRASH_AT=$n grpo-step --batches "$T/b16" -o "$T/pc" --lr 1e-3 --save-dtype bfloat16 2> /dev/null
is $? 86 "killed just before the rename"
[ ! -e "$T/pc/step_2" ] && cmp -s "$T/pc/step_1/optim.bin" "$T/pb/step_1/optim.bin" &&
	cmp -s "$T/pc/step_1/model.safetensors" "$T/pb/step_1/model.safetensors"
ok $? "no step_2, step_1 intact"
grpo-step --batches "$T/b16" -o "$T/pc" --lr 1e-3 --save-dtype bfloat16 2> /dev/null; ok $? "the re-run"
cmp -s "$T/pc/step_2/optim.bin" "$T/pb/step_2/optim.bin" &&
	cmp -s "$T/pc/step_2/model.safetensors" "$T/pb/step_2/model.safetensors"
ok $? "completes step_2 as an uninterrupted run does"

# 7. --keep 1 after step 3: step_0 and step_3 stay
grpo-step --batches "$T/b16" -o "$T/pc" --lr 1e-3 --keep 1 2> /dev/null
is "$(ls "$T/pc" | tr '\n' ' ')" "step_0 step_3 " "--keep 1 leaves step_0 and the newest"
# steps 1 and 2 were trained and removed by --keep: the same command again trains none of them again
cp "$T/pc/step_3/optim.bin" "$T/optim3"
grpo-step --batches "$T/b16" -o "$T/pc" --lr 1e-3 --step 1 --steps 3 2> "$T/err"
is "$?:$(ls "$T/pc" | tr '\n' ' ')" "0:step_0 step_3 " "--step 1 --steps 3 again: nothing trained, 0"
cmp -s "$T/pc/step_3/optim.bin" "$T/optim3"; ok $? "step 3 left as it was"

# 8. --epochs 3: the metrics line is the first epoch's, as grpo-step(1) says, the
# optimizer's numbers included (warmup makes each epoch's learning rate differ)
grpo-pack -T 16 -W 1 -o "$T/be" "$T/groups.zst" || exit 1
for e in 1 3; do
	grpo-step --model "$T/model" --batches "$T/be" -o "$T/pe$e" --lr 1e-3 --warmup-steps 4 --epochs $e \
		--metrics "$T/me$e" 2> /dev/null || echo "# --epochs $e failed"
done
okk=0
for k in loss grad_norm grad_clip lr; do
	[ "$(field "$T/me1" $k)" = "$(field "$T/me3" $k)" ] ||
		{ okk=1; echo "# $k: $(field "$T/me1" $k) with 1 epoch, $(field "$T/me3" $k) with 3"; }
done
ok $okk "--epochs 3 reports the first epoch's loss, grad norm, clip factor and lr (0.00025)"
[ "$(field "$T/me3" last_epoch_loss)" != "" ] && [ "$(field "$T/me1" last_epoch_loss)" = "" ]
ok $? "and the last epoch's loss as last_epoch_loss"

# 9. the debug table's clipped column is the clip the loss applied, as the metrics
# count it: to the sampler by default, to the policy's own logprobs under
# --tis-cap (ratio 1 at the step's start: nothing clipped), per sequence with
# --ratio sequence
for o in "" "--tis-cap 2" "--ratio sequence --clip-low 0.05 --clip-high 0.05"; do
	rm -rf "$T/pg" "$T/mg" "$T/tg"
	grpo-step --model "$T/model" --batches "$T/be" -o "$T/pg" $o --metrics "$T/mg" --debug-table "$T/tg" \
		--debug-tokens 2> /dev/null || echo "# $o failed"
	got=$(awk -F'\t' '$1 == "tok" && $18 == 1 { n++; c += $17 } END { printf "%.4f", c / n }' "$T/tg")
	want=$(awk -v a="$(field "$T/mg" clip_low)" -v b="$(field "$T/mg" clip_high)" 'BEGIN { printf "%.4f", a + b }')
	is "$got" "$want" "debug table ${o:-default}: clipped tokens are the metrics' clip_low + clip_high"
done

# 10. an optimizer step that leaves weights or moments not finite publishes
# nothing: 1, naming the step and the first such tensor, the queue as it was,
# so that a re-run with sane options trains the step
for o in "--lr 1e300" "--lr 1 --weight-decay 1e300" "--entropy-coef 1e30 --max-grad-norm 0"; do
	rm -rf "$T/pi"
	grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pi" $o 2> "$T/err"
	is "$?:$(ls "$T/pi" | tr '\n' ' ')" "1:step_0 " "$o: 1, nothing published"
	case $o in *entropy*) what="the second moment of model\.[a-z_.0-9]*";; *) what=model.embed_tokens.weight;; esac
	grep -q "pi/step_1 not published: $what is not finite (element [0-9]*: [-a-z]*) after the optimizer step" "$T/err"
	ok $? "$o: names the step and the tensor: $(tail -1 "$T/err")"
done
grpo-step --batches "$T/b16" -o "$T/pi" --lr 1e-3 2> /dev/null
is "$?:$(ls "$T/pi" | tr '\n' ' ')" "0:step_0 step_1 " "a re-run with a sane --lr trains step 1"

# 11. a step that trains no token (every response masked) reports ratio 1, its
# ratio at a step's start, in all three of ratio_mean, ratio_min and ratio_max
python3 -c 'import json, sys
for l in sys.stdin:
    g = json.loads(l)
    for t in g["trajectories"]:
        t["response_mask"] = [0] * len(t["response_tokens"])
    print(json.dumps(g))' < "$d/groups.jsonl" | grpo-cat --from-json -o "$T/masked.zst" &&
	grpo-pack -T 16 -W 1 -o "$T/bm" "$T/masked.zst" &&
	grpo-step --model "$T/model" --batches "$T/bm" -o "$T/pm" --metrics "$T/mm" 2> /dev/null
is "$(field "$T/mm" loss) $(field "$T/mm" ratio_mean) $(field "$T/mm" ratio_min) $(field "$T/mm" ratio_max)" \
	"0 1 1 1" "no trained token: loss 0, and every ratio 1"

# 11b. at --beta 0 (the default) a KL past exp's range is measured, not trained: a
# temperature of 1e-4 puts the policy's logprobs thousands below a reference of
# -0.001, k3 is infinite, and the step is still taken, its metrics line JSON
# with null for the KL (Python's json refused the bare 'inf' it wrote)
python3 -c 'import json, sys
for l in sys.stdin:
    g = json.loads(l)
    for t in g["trajectories"]:
        t["temperature"] = 0.0001
        t["ref_logprobs"] = [-0.001] * len(t["response_tokens"])
    print(json.dumps(g))' < "$d/groups.jsonl" | grpo-cat --from-json -o "$T/far.zst" &&
	grpo-pack -T 16 -W 1 -o "$T/bf" "$T/far.zst" &&
	grpo-step --model "$T/model" --batches "$T/bf" -o "$T/pf" --metrics "$T/mf" 2> /dev/null
ok $? "a step whose KL to the reference is infinite trains at beta 0"
is "$(python3 -c 'import json, sys; m = json.loads(sys.stdin.readline()); print(m["kl"], m["kl_loss"], m["loss"] == m["policy_loss"])' < "$T/mf")" \
	"None None True" "its metrics line is JSON, the KL null, the loss the policy's alone"

# 12. an old run's policy step given as --model starts a new run: step_0 takes
# the model, not that run's optimizer state, so step 1 starts AdamW afresh
mkdir "$T/old" && cp "$T/model/"* "$T/old/" && cp "$T/pc/step_3/optim.bin" "$T/old/"
grpo-step --model "$T/old" --batches "$T/b16" -o "$T/pn" --lr 1e-3 --metrics "$T/mn" 2> /dev/null
is "$?:$(ls "$T/pn/step_0" | tr '\n' ' ')" "0:config.json generation_config.json model.safetensors " \
	"step_0 from a directory with an optim.bin: the model alone"
grep -q '"resumed_optimizer":false' "$T/mn"; ok $? "and step 1 does not resume that optimizer"
# a model on another file system is copied, not linked: the same bytes
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" != "$(stat -f -c %T "$T")" ]; then
	m=$(mktemp -d /dev/shm/grpo-step-t.XXXXXX) && cp "$T/model/"* "$m/"
	grpo-step --model "$m" --batches "$T/b16" -o "$T/px" --lr 1e-3 2> /dev/null
	cmp -s "$m/model.safetensors" "$T/px/step_0/model.safetensors" && [ "$(stat -c %h "$T/px/step_0/model.safetensors")" = 1 ]
	ok $? "a model on another file system (/dev/shm) is copied whole"
	rm -rf "$m"
else
	ok 0 "# SKIP no /dev/shm on another file system than $T"
fi

# 14. --model is the initial model of a new queue; given to a queue whose
# step_0 is another model it is not trained from, and grpo-step says so
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pw" --lr 1e-3 2> /dev/null || exit 1
mkdir "$T/mcopy" && cp "$T/model/"* "$T/mcopy/" && grpo-init --preset tiny --seed 8 -o "$T/m8" || exit 1
grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pw" --step 1 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "the queue's own initial model again: nothing said"
grpo-step --model "$T/mcopy" --batches "$T/b16" -o "$T/pw" --step 1 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "a copy of it, byte for byte: nothing said"
grpo-step --model "$T/m8" --batches "$T/b16" -o "$T/pw" --step 1 2> "$T/err"
is "$?:$(grep -c "warning: --model $T/m8 is not the initial model of $T/pw (its model.safetensors is not step_0's)" "$T/err")" \
	"0:1" "another model: a warning naming the queue and the file that differs"
cmp -s "$T/model/model.safetensors" "$T/pw/step_0/model.safetensors"; ok $? "and step_0 stays the queue's own"

# 13. a debug table on a full disk fails the step before it is published (a
# metrics line that cannot be written is only said: metrics-full.t)
if [ -c /dev/full ]; then
	grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pg2" --lr 1e-3 --debug-table /dev/full 2> "$T/err"
	is "$?:$(grep -c '/dev/full' "$T/err"):$(ls "$T/pg2")" "75:1:step_0" \
		"a debug table on a full disk: 75, naming the file, nothing published"
else
	ok 0 "# SKIP no /dev/full"
fi

# 15. --weight-decay-on: by default the matrices decay and the norm weights
# (and biases) step as without weight decay, to the bit; with all they decay
# too. One step each from the same model, so that the gradients are the same.
wn=0
for o in "" "--weight-decay 0.1" "--weight-decay 0.1 --weight-decay-on matrices" "--weight-decay 0.1 --weight-decay-on all"; do
	wn=$((wn + 1))
	grpo-step --model "$T/model" --batches "$T/b16" -o "$T/pd$wn" --lr 1e-2 $o 2> "$T/err" || echo "# $o: $(cat "$T/err")"
done
# per kind of tensor of step_1 (norm, bias, matrix), whether it is the same as the step without decay or differs
wd_diff() {
	python3 -c 'import json, struct, sys
def tensors(p):
    with open(p + "/step_1/model.safetensors", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        b = f.read()
    return {k: (len(v["shape"]), b[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
kind = lambda k: "matrix" if a[k][0] == 2 else "norm" if "norm" in k else "bias"
print(" ".join(sorted(set("%s:%s" % (kind(k), "same" if a[k][1] == b[k][1] else "differs") for k in a))))' "$T/pd1" "$1"
}
is "$(wd_diff "$T/pd2")" "bias:same matrix:differs norm:same" \
	"--weight-decay alone: every matrix decayed, every norm weight and bias as without decay"
cmp -s "$T/pd2/step_1/model.safetensors" "$T/pd3/step_1/model.safetensors"; ok $? "--weight-decay-on matrices is the default"
# (grpo-init's biases are 0, which decay leaves where it is)
is "$(wd_diff "$T/pd4")" "bias:same matrix:differs norm:differs" "--weight-decay-on all: the norm weights decayed too"
grpo-step --batches "$T/b16" -o "$T/pd5" --weight-decay-on norms 2> "$T/err"
is "$?:$(grep -c "weight-decay-on: expected one of matrices, all, got 'norms'" "$T/err")" "2:1" \
	"--weight-decay-on norms: a usage error naming the choices"

exit $_failed
