#!/bin/sh
# grpo-collect --model: rollouts sampled from a model, over a prompts file
# walked round-robin with a cursor, from a model directory or the newest
# checkpoint of a policy queue; deterministic and safe to re-run.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 18
grpo-init --preset tiny --seed 3 -o "$T/m" || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3],"answer":"5"}' '{"prompt_tokens":[4,5]}' '' '{"prompt_tokens":[7]}' > "$T/p.jsonl"
shift_run() { m=$1; shift; grpo-collect --model "$m" --prompts "$T/p.jsonl" -n 2 --max-tokens 5 --seed 9 "$@"; }

shift_run "$T/m" --count 4 --cursor "$T/cur" -o "$T/s/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "4 prompts sampled and published, silently"
grpo-cat "$T"/s/rollouts/step_0/rank_0/*.zst > "$T/out.json"
is "$(grep -c '"group_id"' "$T/out.json"):$(grep -o '"sequence_id":[0-9]*' "$T/out.json" | tr -d '\n' | tr -dc '0-9')" \
	"4:01234567" "4 groups of 2, group by group, sequence ids place * G + j"
is "$(cat "$T/cur")" "4" "the cursor holds the next place: 4 prompts from 3 rows, the next run from place 4 (row 1)"
is "$(grep -o '"prompt_tokens":\[[0-9,]*\]' "$T/out.json" | uniq | tr '\n' ' ')" \
	'"prompt_tokens":[1,2,3] "prompt_tokens":[4,5] "prompt_tokens":[7] "prompt_tokens":[1,2,3] ' \
	"the fourth prompt is the first row again"

shift_run "$T/m" --count 4 --offset 0 -o "$T/s/rollouts" -v 2> "$T/err"
is "$?:$(ls "$T"/s/rollouts/step_0/rank_0 | wc -l | tr -d ' '):$(grep -c 'already published' "$T/err")" "0:1:1" \
	"the same run again publishes nothing new"

shift_run "$T/m" > "$T/a.zst" && shift_run "$T/m" > "$T/b.zst"
cmp -s "$T/a.zst" "$T/b.zst"
is "$?" 0 "same seed, same model, same prompts: the same bytes"
shift_run "$T/m" --seed 10 > "$T/c.zst"
cmp -s "$T/a.zst" "$T/c.zst"
is "$?" 1 "another seed samples otherwise"

mkdir -p "$T/s/policy/step_2"
cp "$T"/m/* "$T/s/policy/step_2/"
mkdir -p "$T/s/policy/step_5"   # a checkpoint still being written: no config.json yet
shift_run "$T/s/policy" --count 1 -o "$T/s/rollouts" 2> "$T/err"
is "$?:$(grpo-cat "$T"/s/rollouts/step_2/rank_0/*.zst 2>&1 | grep -o '"policy_version":[0-9]*' | sort -u)" \
	'0:"policy_version":2' "a policy queue: the newest complete step_K samples, into rollouts/step_K"
# a checkpoint pinned by naming it (as SAMPLING FROM A MODEL advises) is
# still policy version K, as a policy queue's newest would be, not 0
shift_run "$T/s/policy/step_2" --count 1 -o "$T/pin/rollouts" 2> "$T/err"
is "$?:$(cd "$T/pin/rollouts" && ls):$(grpo-cat "$T"/pin/rollouts/step_*/rank_0/*.zst 2>&1 | grep -o '"policy_version":[0-9]*' | sort -u)" \
	'0:step_2:"policy_version":2' "a policy queue's step_K named directly: version K, into rollouts/step_K"
# a directory named so that the spool would never name a step (step_007) is
# a model of its own, version 0, as the server's path would be
mkdir -p "$T/odd/step_007" && cp "$T"/m/* "$T/odd/step_007/"
shift_run "$T/odd/step_007" --count 1 -o "$T/odd/rollouts" 2> "$T/err"
is "$?:$(cd "$T/odd/rollouts" && ls)" "0:step_0" "step_007 is not step 7: version 0"

printf '%s\n' '{"prompt_tokens":[1]}' '{"prompt_tokens":[99999]}' > "$T/bad.jsonl"
grpo-collect --model "$T/m" --prompts "$T/bad.jsonl" -o "$T/s2/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s2" 2> /dev/null)" \
	"1:grpo-collect: $T/bad.jsonl:2: prompt_tokens[0]: expected a token id in [0, 512):" \
	"a bad prompt fails the run, naming file, line and field, publishing nothing"

printf '%s\n' '{"prompt_tokens":[1]}' '{"prompt_tokens":[2],"answer":"7\u0000x"}' > "$T/nul.jsonl"
grpo-collect --model "$T/m" --prompts "$T/nul.jsonl" -o "$T/s3/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s3" 2> /dev/null)" \
	"1:grpo-collect: $T/nul.jsonl:2: a NUL character (\\u0000) in a string is not supported (it would be cut there):" \
	"a prompt whose answer holds a \\u0000 is refused, not cut short"

printf '%s\n' '{"prompt_tokens":[1]}' '{"prompt_tokens":[2]} {"prompt_tokens":[3]}' > "$T/two.jsonl"
grpo-collect --model "$T/m" --prompts "$T/two.jsonl" -o "$T/s4/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s4" 2> /dev/null)" \
	"1:grpo-collect: $T/two.jsonl:2: not valid JSON (text after the value, near byte 23):" \
	"a prompts line holding two objects is refused, naming file and line, not read as its first"

grpo-collect --model "$T/m" -o "$T/s/rollouts" 2> /dev/null
is "$?" 2 "--model without --prompts is a usage error"

# A prompt and its --max-tokens must fit the model's positions.
cp -r "$T/m" "$T/short"
sed 's/"max_position_embeddings": [0-9]*/"max_position_embeddings": 7/' "$T/m/config.json" > "$T/short/config.json"
grpo-collect --model "$T/short" --prompts "$T/p.jsonl" --count 3 -n 2 --max-tokens 5 -o "$T/s5/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s5" 2> /dev/null)" \
	"1:grpo-collect: $T/p.jsonl:1: a prompt of 3 tokens and --max-tokens 5 need 8 positions, beyond the 7 of $T/short/config.json (max_position_embeddings); shorten the prompt or lower --max-tokens:" \
	"a prompt that would run past max_position_embeddings is refused before anything is sampled, naming its line"
grpo-collect --model "$T/short" --prompts "$T/p.jsonl" --count 3 -n 2 --max-tokens 4 -o "$T/s5/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T"/s5/rollouts/step_0/rank_0 | wc -l | tr -d ' ')" "0::1" "one that fits exactly is sampled"

A="$GRPO_TOP/examples/addition"
grpo-init --preset tiny --vocab 13 --eos 12 --tokenizer "$A/tokenizer.json" -o "$T/add" || exit 1
grpo-collect --model "$T/add" --prompts "$A/prompts.jsonl" --count 2 --offset 12 -n 2 --max-tokens 3 > "$T/add.zst"
grpo-cat "$T/add.zst" > "$T/add.json"
is "$?:$(grep -o '"prompt_tokens":\[[0-9,]*\]\|"answer":"[0-9]*"' "$T/add.json" | paste -d' ' - - | uniq | tr '\n' ' ')" \
	'0:"prompt_tokens":[1,10,2,11] "answer":"3" "prompt_tokens":[1,10,3,11] "answer":"4" ' \
	"text prompts are encoded with the model's tokenizer, answers carried (rows 12 and 13: 1+2=, 1+3=)"
grep -o '"response_tokens":\[[0-9,]*\]' "$T/add.json" | grep -q '12\]' || grep -q '"finish_reason":"length"' "$T/add.json"
is "$?" 0 "responses end in the model's eos id or at --max-tokens"
