#!/bin/sh
# Option values (tools/cli.h): every numeric, duration, size and word option
# of every tool takes its good values and refuses bad ones, malformed,
# overflowing or out of range, with exit status 2 and one line in one form:
#     grpo-pack: --seq-len: expected a positive integer up to 1073741824, got '12x'
#     grpo-score: --device: expected one of auto, cpu, cuda, got 'tpu'
# A good value is shown taken by --help after it, which exits 0 only when
# every option before it parsed. Then usage errors (the message, then the
# usage), the program's name, and the values' meaning where it shows.
. "$GRPO_TOP/tests/cli/lib.sh"

# TOOL|OPTION|VALUE|what the option takes, or ok. grpo-spool's options
# follow the command that takes them and its operand.
cat > "$T/values" <<'EOF'
grpo-pack|--seq-len|8|ok
grpo-pack|--seq-len|1073741824|ok
grpo-pack|--seq-len|12x|a positive integer up to 1073741824
grpo-pack|--seq-len|0|a positive integer up to 1073741824
grpo-pack|--seq-len|1073741825|a positive integer up to 1073741824
grpo-pack|--seq-len||a positive integer up to 1073741824
grpo-pack|--ranks|65536|ok
grpo-pack|--ranks|-1|a positive integer up to 65536
grpo-pack|--pad-multiple|4|ok
grpo-pack|--pad-multiple|0|a positive integer up to 1048576
grpo-pack|--step|0|ok
grpo-pack|--step|-1|an integer from 0 to 9007199254740991
grpo-pack|--step|9007199254740991|ok
grpo-pack|--step|9007199254740992|an integer from 0 to 9007199254740991
grpo-pack|--batch-size|2|ok
grpo-pack|--batch-size|12x|a positive integer
grpo-pack|--batch-size|0|a positive integer
grpo-pack|--batch-size|99999999999999999999|a positive integer
grpo-pack|--batch-tokens|4096|ok
grpo-pack|--batch-tokens|1.5|a positive integer
grpo-pack|--max-lag|0|ok
grpo-pack|--max-lag|-1|an integer from 0 to 1073741824
grpo-pack|--min-tokens|10|ok
grpo-pack|--min-tokens|0|a positive integer
grpo-pack|--timeout|30|ok
grpo-pack|--timeout|1.5m|ok
grpo-pack|--timeout|1d|ok
grpo-pack|--timeout|0|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-pack|--timeout|5x|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-pack|--timeout|200d|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-pack|--timeout|1e308d|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-pack|--poll|0.2|ok
grpo-pack|--poll|-1|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-pack|--rescan|5m|ok
grpo-pack|--rescan|5ms|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-pack|--fill-target|0.95|ok
grpo-pack|--fill-target|1|ok
grpo-pack|--fill-target|0|a number > 0 and <= 1
grpo-pack|--fill-target|1.01|a number > 0 and <= 1
grpo-pack|--fill-target|nan|a number > 0 and <= 1
grpo-pack|--lease|60|ok
grpo-pack|--lease|1h|ok
grpo-pack|--lease|1.5m|ok
grpo-pack|--lease|1.5|a whole number of seconds > 0 (or with s, m, h or d)
grpo-pack|--lease|0|a whole number of seconds > 0 (or with s, m, h or d)
grpo-score|--reward-timeout|0.2|ok
grpo-score|--reward-timeout|2m|ok
grpo-score|--reward-timeout|0|a duration > 0 and <= 1000000s (seconds, or with s, m, h or d)
grpo-score|--reward-timeout|12d|a duration > 0 and <= 1000000s (seconds, or with s, m, h or d)
grpo-score|--reward-jobs|1|ok
grpo-score|--reward-jobs|256|ok
grpo-score|--reward-jobs|0|a positive integer up to 256
grpo-score|--reward-jobs|257|a positive integer up to 256
grpo-score|--reward-jobs|4x|a positive integer up to 256
grpo-score|--success-threshold|0.5|ok
grpo-score|--success-threshold|-3|ok
grpo-score|--success-threshold|inf|a number
grpo-score|--success-threshold|1x|a number
grpo-score|--max-len|2000|ok
grpo-score|--max-len|0|a positive integer up to 1073741824
grpo-score|--overlong-buffer|0|ok
grpo-score|--overlong-buffer|-1|an integer from 0 to 1073741824
grpo-score|--cosine-values|1,0.5,-1,-0.5|ok
grpo-score|--cosine-values|1e38,0,0,-1e38|ok
grpo-score|--cosine-values|1,0.5,-1|four numbers from -1e38 to 1e38, separated by commas
grpo-score|--cosine-values|1,0.5,-1,-0.5,0|four numbers from -1e38 to 1e38, separated by commas
grpo-score|--cosine-values|1,0.5,,-0.5|four numbers from -1e38 to 1e38, separated by commas
grpo-score|--cosine-values|1,0.5,-1,2e38|four numbers from -1e38 to 1e38, separated by commas
grpo-score|--cosine-values|1,nan,-1,0|four numbers from -1e38 to 1e38, separated by commas
grpo-score|--std-eps|1e-4|ok
grpo-score|--std-eps|0|ok
grpo-score|--std-eps|-1e-4|a number from 0 to 1e+06
grpo-score|--std-eps|1e-400|a number from 0 to 1e+06 and not so small that it would be 0
grpo-score|--ref-tokens|4096|ok
grpo-score|--ref-tokens|16777217|a positive integer up to 16777216
grpo-score|--poll|1|ok
grpo-score|--poll|0|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-score|--lease|3600|ok
grpo-score|--lease|1h|ok
grpo-score|--lease|1.5|a whole number of seconds from 1 to 1000000000 (or with s, m, h or d)
grpo-score|--lease|1y|a whole number of seconds from 1 to 1000000000 (or with s, m, h or d)
grpo-collect|--step|7|ok
grpo-collect|--step|-1|an integer from 0 to 9007199254740991
grpo-collect|--step|9007199254740992|an integer from 0 to 9007199254740991
grpo-collect|--rank|3|ok
grpo-collect|--rank|2147483648|an integer from 0 to 2147483647
grpo-collect|--max-groups|0|ok
grpo-collect|--max-groups|x|a non-negative integer
grpo-collect|--vocab-size|2147483648|ok
grpo-collect|--vocab-size|0|a positive integer up to 2147483648
grpo-collect|--temperature|0.7|ok
grpo-collect|--temperature|0|ok
grpo-collect|--temperature|-1|a number >= 0
grpo-collect|--temperature|1e39|a number >= 0
grpo-collect|--temperature|1e-50|a number >= 0 and not so small that it would be 0
grpo-collect|--samples|16|ok
grpo-collect|--samples|0|a positive integer up to 65536
grpo-collect|--top-p|1|ok
grpo-collect|--top-p|0|a number > 0 and <= 1
grpo-collect|--top-k|0|ok
grpo-collect|--top-k|-1|an integer from 0 to 2147483647
grpo-collect|--max-tokens|256|ok
grpo-collect|--max-tokens|1048577|a positive integer up to 1048576
grpo-collect|--seed|18446744073709551615|ok
grpo-collect|--seed|-1|a non-negative integer
grpo-collect|--seed|18446744073709551616|a non-negative integer
grpo-collect|--offset|5|ok
grpo-collect|--offset|5.0|a non-negative integer
grpo-collect|--count|0|ok
grpo-collect|--count| 3|an integer from 0 to 2147483647
grpo-collect|--batch|16|ok
grpo-collect|--batch|0|a positive integer up to 65536
grpo-collect|--concurrency|8|ok
grpo-collect|--concurrency|4097|a positive integer up to 4096
grpo-collect|--timeout|600|ok
grpo-collect|--timeout|0.5|ok
grpo-collect|--timeout|1d|ok
grpo-collect|--timeout|2d|a duration > 0 and <= 1d (seconds, or with s, m, h or d)
grpo-collect|--retries|0|ok
grpo-collect|--retries|101|an integer from 0 to 100
grpo-collect|--max-lag|0|ok
grpo-collect|--max-lag|-2|an integer from 0 to 9007199254740991
grpo-cat|--head|0|ok
grpo-cat|--head|10|ok
grpo-cat|--head||a non-negative integer
grpo-cat|--head|x|a non-negative integer
grpo-cat|--head|-1|a non-negative integer
grpo-step|--step|1|ok
grpo-step|--step|0|a positive integer up to 9007199254740991
grpo-step|--step|9007199254740991|ok
grpo-step|--step|9007199254740992|a positive integer up to 9007199254740991
grpo-step|--steps|3|ok
grpo-step|--steps|0|a positive integer
grpo-step|--epochs|2|ok
grpo-step|--epochs|0|a positive integer up to 2147483647
grpo-step|--clip-low|0.2|ok
grpo-step|--clip-low|0|ok
grpo-step|--clip-low|-0.1|a number >= 0
grpo-step|--clip-high|0.28|ok
grpo-step|--clip-high|1e39|a number >= 0
grpo-step|--dual-clip|3|ok
grpo-step|--dual-clip|0|ok
grpo-step|--dual-clip|1|a number > 1, or 0 for none
grpo-step|--dual-clip|-1|a number > 1, or 0 for none
grpo-step|--dual-clip|1.00000001|a number > 1, or 0 for none
grpo-step|--dual-clip|1e-50|a number > 1, or 0 for none
grpo-step|--beta|0.05|ok
grpo-step|--beta|-0.1|a number >= 0
grpo-step|--entropy-coef|0.02|ok
grpo-step|--entropy-coef|-0.01|ok
grpo-step|--entropy-coef|nan|a number
grpo-step|--entropy-coef|-1e-46|a number not so small that it would be 0
grpo-step|--tis-cap|2|ok
grpo-step|--tis-cap|-1|a number >= 0
grpo-step|--tis-cap|1e-50|a number >= 0 and not so small that it would be 0
grpo-step|--tis-cap|1e-45|ok
grpo-step|--tis-cap|0.0e-50|ok
grpo-step|--tis-cap|3.5e38|a number >= 0
grpo-step|--max-len|512|ok
grpo-step|--max-len|0|a positive integer up to 2147483647
grpo-step|--lr|1e-6|ok
grpo-step|--lr|0|ok
grpo-step|--lr|-1e-6|a number >= 0
grpo-step|--lr|1e-3x|a number >= 0
grpo-step|--lr|1e-50|ok
grpo-step|--lr|1e-400|a number >= 0 and not so small that it would be 0
grpo-step|--lr|1e309|a number >= 0
grpo-step|--warmup-steps|0|ok
grpo-step|--warmup-steps|-1|an integer from 0 to 2147483647
grpo-step|--total-steps|100|ok
grpo-step|--total-steps|0|a positive integer up to 2147483647
grpo-step|--weight-decay|0.01|ok
grpo-step|--weight-decay|-0.01|a number >= 0
grpo-step|--betas|0.9,0.999|ok
grpo-step|--betas|0.9|B1,B2, each a number >= 0 and < 1
grpo-step|--betas|0.9,1|B1,B2, each a number >= 0 and < 1
grpo-step|--betas|0.9,x|B1,B2, each a number >= 0 and < 1
grpo-step|--betas|0.9,0.95,0.99|B1,B2, each a number >= 0 and < 1
grpo-step|--betas|,0.95|B1,B2, each a number >= 0 and < 1
grpo-step|--eps|1e-8|ok
grpo-step|--eps|0|a number > 0
grpo-step|--max-grad-norm|0|ok
grpo-step|--max-grad-norm|-1|a number >= 0
grpo-step|--shard-size|5G|ok
grpo-step|--shard-size|200000|ok
grpo-step|--shard-size|1.1K|ok
grpo-step|--shard-size|0|a size in bytes > 0 (or with K, M or G, powers of 1000)
grpo-step|--shard-size|1.5|a size in bytes > 0 (or with K, M or G, powers of 1000)
grpo-step|--shard-size|5T|a size in bytes > 0 (or with K, M or G, powers of 1000)
grpo-step|--threads|2|ok
grpo-step|--threads|0|a positive integer up to 2147483647
grpo-step|--keep|1|ok
grpo-step|--keep|0|a positive integer up to 2147483647
grpo-step|--save-every|2|ok
grpo-step|--save-every|0|a positive integer up to 2147483647
grpo-step|--rank|0|ok
grpo-step|--rank|-1|an integer from 0 to 2147483647
grpo-step|--rank-timeout|600|ok
grpo-step|--rank-timeout|10m|ok
grpo-step|--rank-timeout|0|a duration > 0 (seconds, or with s, m, h or d)
grpo-step|--rank-timeout|inf|a duration > 0 (seconds, or with s, m, h or d)
grpo-init|--hidden|64|ok
grpo-init|--hidden|0|a positive integer up to 1048576
grpo-init|--layers|2|ok
grpo-init|--layers|4097|a positive integer up to 4096
grpo-init|--heads|4|ok
grpo-init|--heads|0|a positive integer up to 4096
grpo-init|--kv-heads|2|ok
grpo-init|--kv-heads|x|a positive integer up to 4096
grpo-init|--intermediate|128|ok
grpo-init|--intermediate|4194305|a positive integer up to 4194304
grpo-init|--vocab|512|ok
grpo-init|--vocab|16777217|a positive integer up to 16777216
grpo-init|--head-dim|16|ok
grpo-init|--head-dim|1|an integer from 2 to 65536
grpo-init|--rope-theta|1e6|ok
grpo-init|--rope-theta|0|a number > 0
grpo-init|--rope-theta|1e39|a number > 0
grpo-init|--rms-eps|1e-6|ok
grpo-init|--rms-eps|0|a number > 0
grpo-init|--rms-eps|1e-50|a number > 0 and not so small that it would be 0
grpo-init|--bos|1|ok
grpo-init|--bos|-1|an integer from 0 to 2147483647
grpo-init|--eos|2|ok
grpo-init|--eos|2x|an integer from 0 to 2147483647
grpo-init|--seed|7|ok
grpo-init|--seed|-7|a non-negative integer
grpo-init|--shard-size|4K|ok
grpo-init|--shard-size|1.5G|ok
grpo-init|--shard-size|0|a size in bytes > 0 (or with K, M or G, powers of 1000)
grpo-init|--shard-size|1.0001K|a size in bytes > 0 (or with K, M or G, powers of 1000)
grpo-spool|--from|0|ok
grpo-spool|--from|-1|an integer from 0 to 9007199254740991
grpo-spool|--from|9007199254740991|ok
grpo-spool|--from|9223372036854775807|an integer from 0 to 9007199254740991
grpo-spool|--to|4|ok
grpo-spool|--to|x|an integer from 0 to 9007199254740991
grpo-spool|--to|9007199254740992|an integer from 0 to 9007199254740991
grpo-spool|--keep-last|0|ok
grpo-spool|--keep-last|-1|a non-negative integer
grpo-spool|--lease|60|ok
grpo-spool|--lease|2h|ok
grpo-spool|--lease|0|a whole number of seconds > 0 (or with s, m, h or d)
grpo-spool|--poll|0.5|ok
grpo-spool|--poll|0|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-spool|--rescan|300|ok
grpo-spool|--rescan|5min|a duration > 0 and <= 10000000s (seconds, or with s, m, h or d)
grpo-spool|--tmp-age|0|ok
grpo-spool|--tmp-age|36h|ok
grpo-spool|--tmp-age|-1|a whole number of seconds >= 0 (or with s, m, h or d)
grpo-spool|--tmp-age|1.5|a whole number of seconds >= 0 (or with s, m, h or d)
grpo-pack|--cost|flops|ok
grpo-pack|--cost|time|one of tokens, flops
grpo-pack|--overlong|truncate|ok
grpo-pack|--overlong|drop|one of error, skip, truncate
grpo-score|--advantage|batch|ok
grpo-score|--advantage|ppo|one of grpo, dr_grpo, rloo, batch
grpo-score|--std|biased|ok
grpo-score|--std|n|one of unbiased, biased
grpo-score|--combine|normalize-then-sum|ok
grpo-score|--combine|sum|one of sum-then-normalize, normalize-then-sum
grpo-score|--device|cuda|ok
grpo-score|--device|tpu|one of auto, cpu, cuda
grpo-score|--precision|fp32|ok
grpo-score|--precision|fp16|one of bf16, fp32
grpo-collect|--api|openai|ok
grpo-collect|--api|tgi|one of vllm, sglang, openai
grpo-collect|--chat|llama3|ok
grpo-collect|--chat|chatml|one of qwen, qwen2.5, qwen2.5-math, qwen3, llama3, llama3.1, llama3.2, llama2, mistral, zephyr, smollm2, deepseek-r1 or auto
grpo-collect|--format|atropos|ok
grpo-collect|--format|jsonl|one of auto, native, vllm, sglang, atropos
grpo-collect|--on-error|skip|ok
grpo-collect|--on-error|ignore|one of fail, skip
grpo-step|--ratio|sequence|ok
grpo-step|--ratio|seq|one of token, sequence
grpo-step|--kl|k3|ok
grpo-step|--kl|k3+|ok
grpo-step|--kl|K3|one of k1, k2, k3, k1+, k3+
grpo-step|--kl-clamp|10|ok
grpo-step|--kl-clamp|0|ok
grpo-step|--kl-clamp|-1|a number >= 0
grpo-step|--loss-agg|bnpo|ok
grpo-step|--loss-agg|mean|one of grpo, dapo, dr_grpo, bnpo
grpo-step|--lr-schedule|linear|ok
grpo-step|--lr-schedule||one of constant, cosine, linear
grpo-step|--weight-decay-on|matrices|ok
grpo-step|--weight-decay-on|all|ok
grpo-step|--weight-decay-on|none|one of matrices, all
grpo-step|--save-dtype|bfloat16|ok
grpo-step|--save-dtype|bf16|one of float32, bfloat16
grpo-step|--on-publish-fail|stop|ok
grpo-step|--on-publish-fail|retry|one of warn, stop
grpo-init|--dtype|bfloat16|ok
grpo-init|--dtype|float16|one of float32, bfloat16
grpo-score|--advantage|grpo|ok
grpo-collect|--on-error|fail|ok
grpo-step|--kl|k1|ok
EOF
plan $(($(wc -l < "$T/values") + 19))

run() { # run TOOL ARG...: the tool, with the grpo-spool command that takes the option, and its operand
	t=$1
	shift
	[ "$t" = grpo-spool ] || { "$t" "$@"; return; }
	case $1 in
	--from | --to | --poll | --rescan) grpo-spool consume "$T" "$@" ;;
	--keep-last) grpo-spool gc "$T" "$@" ;;
	--tmp-age) grpo-spool recover "$T" "$@" ;;
	*) grpo-spool status "$T" "$@" ;;
	esac
}

while IFS='|' read -r tool opt val want; do
	if [ "$want" = ok ]; then
		run "$tool" "$opt" "$val" --help > /dev/null 2> "$T/err"
		is "$?:$(cat "$T/err")" "0:" "$tool $opt '$val' is taken"
	else
		run "$tool" "$opt" "$val" > /dev/null 2> "$T/err" < /dev/null
		is "$?:$(cat "$T/err")" "2:$tool: $opt: expected $want, got '$val'" "$tool $opt '$val' is refused"
	fi
done < "$T/values"

# A short option, or --opt=value, is named by its long name.
grpo-pack -T 12x 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-pack: --seq-len: expected a positive integer up to 1073741824, got '12x'" \
	"-T is named --seq-len"
grpo-score -L 90.5 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"2:grpo-score: --lease: expected a whole number of seconds from 1 to 1000000000 (or with s, m, h or d), got '90.5'" \
	"-L is named --lease"
grpo-collect --top-p=2 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-collect: --top-p: expected a number > 0 and <= 1, got '2'" "--top-p=2"

# A usage error: the message, then the usage, exit 2.
usage_error() { # usage_error STATUS: "STATUS:first line:the second's first two words" of $T/err
	echo "$1:$(sed -n 1p "$T/err"):$(sed -n 2p "$T/err" | cut -d' ' -f1-2)"
}
grpo-pack --ranks 2 < /dev/null > /dev/null 2> "$T/err"
is "$(usage_error $?)" "2:grpo-pack: --seq-len is required:usage: grpo-pack" "grpo-pack: a missing option, then the usage"
grpo-step -o "$T/p" 2> "$T/err"
is "$(usage_error $?)" "2:grpo-step: --batches and -o are required:usage: grpo-step" "grpo-step: likewise"
grpo-spool frobnicate x 2> "$T/err"
is "$(usage_error $?)" "2:grpo-spool: unknown command: frobnicate:usage: grpo-spool" "grpo-spool: an unknown command"
grpo-init --preset tiny 2> "$T/err"
is "$(usage_error $?)" "2:grpo-init: missing: -o DIR:usage: grpo-init" "grpo-init: no -o"
grpo-cat --output x 2> "$T/err"
is "$(usage_error $?)" "2:grpo-cat: printing records takes no -o (it goes with --from-json):usage: grpo-cat" "grpo-cat: -o without --from-json"
grpo-score in.zst 2> "$T/err"
is "$(usage_error $?)" "2:grpo-score: no reward: give --reward NAME or --reward-cmd CMD:usage: grpo-score" \
	"grpo-score: no reward"
grpo-score -r gsm8k -r gsm8k in.zst 2> "$T/err"
is "$(usage_error $?)" "2:grpo-score: --reward gsm8k given twice:usage: grpo-score" "grpo-score: a reward twice"
grpo-score -r nosuch in.zst 2> "$T/err"
is "$(usage_error $?)" "2:grpo-score: --reward: unknown reward 'nosuch' (built in: gsm8k, boxed, math, format, think, tags, length, exact, repetition, steps, cosine, kimi-length; another name is a reward program's, with --reward-cmd):usage: grpo-score" \
	"grpo-score: an unknown reward"
grpo-score -r gsm8k --watch a b 2> "$T/err"
is "$(usage_error $?)" "2:grpo-score: --watch needs exactly one queue directory:usage: grpo-score" "grpo-score: --watch, no queue"
grpo-collect --model m 2> "$T/err"
is "$(usage_error $?)" "2:grpo-collect: --model (or --server) and --prompts go together, without FILEs:usage: grpo-collect" \
	"grpo-collect: --model without --prompts"
grpo-collect -o q x.jsonl 2> "$T/err"
is "$(usage_error $?)" "2:grpo-collect: -o needs --step N, the policy version that sampled the rollouts:usage: grpo-collect" \
	"grpo-collect: -o without --step"

# The name in messages is the program's, as it was run.
"$GRPO_BIN/grpo-cat" --head x 2> "$T/err"
is "$(cat "$T/err")" "grpo-cat: --head: expected a non-negative integer, got 'x'" "run by its path: grpo-cat"
ln -s "$GRPO_BIN/grpo-cat" "$T/gcat"
"$T/gcat" --head x 2> "$T/err"
is "$(cat "$T/err")" "gcat: --head: expected a non-negative integer, got 'x'" "run by another name: that name"

# What the values mean: a duration with a unit is that many seconds, a size
# with a suffix that many bytes.
mkdir -p "$T/s/q/step_0/rank_0"
echo x > "$T/s/q/step_0/rank_0/a.zst"
grpo-spool consume "$T/s/q" --lease 2m -- true
grep -q " lease=120$" "$T/s/q/step_0/rank_0/.done/a.zst"
ok $? "grpo-spool consume --lease 2m records a lease of 120 seconds"
grpo-init --preset tiny --shard-size 30K -o "$T/m1" && grpo-init --preset tiny --shard-size 30000 -o "$T/m2" &&
	[ -f "$T/m1/model-00002-of-00012.safetensors" ] && diff -r "$T/m1" "$T/m2" > /dev/null
ok $? "grpo-init --shard-size 30K writes what --shard-size 30000 does"
# --step's bound, 2^53 - 1, is the largest a step's records and manifest
# hold (a larger one was taken, and failed only when written, exit 1)
grpo-collect "$GRPO_TOP/examples/vllm-completions.jsonl" 2> /dev/null | grpo-score -r length -m 100 2> /dev/null |
	grpo-pack -T 256 -s 9007199254740991 -o "$T/big" && [ -f "$T/big/step_9007199254740991/DONE" ]
ok $? "grpo-pack --step 9007199254740991 publishes that step"

exit $_failed
