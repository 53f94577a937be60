#!/bin/sh
# grpo-init: a complete model directory, deterministic for a seed, written atomically.
n=0; fail=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi; }
t=$(mktemp -d "${TMPDIR:-/tmp}/grpo-init.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT

grpo-init --preset tiny --seed 7 -o "$t/a"; ok $? "tiny preset, seed 7"
for f in config.json generation_config.json model.safetensors; do
	[ -s "$t/a/$f" ]; ok $? "writes $f"
done
grep -q '"architectures": \[' "$t/a/config.json" && grep -q '"Qwen2ForCausalLM"' "$t/a/config.json"
ok $? "config.json names Qwen2ForCausalLM"
grep -q '"tie_word_embeddings": true' "$t/a/config.json"; ok $? "tiny is tied"
! grep -q 'lm_head.weight' "$t/a/model.safetensors"; ok $? "a tied model has no lm_head.weight"
grep -q 'model.layers.1.self_attn.q_proj.bias' "$t/a/model.safetensors"; ok $? "qwen2 has q_proj.bias"

grpo-init --preset tiny --seed 7 -o "$t/b"; cmp -s "$t/a/model.safetensors" "$t/b/model.safetensors"
ok $? "same seed, same bytes"
cmp -s "$t/a/config.json" "$t/b/config.json"; ok $? "same seed, same config.json"
grpo-init --preset tiny --seed 8 -o "$t/c"; ! cmp -s "$t/a/model.safetensors" "$t/c/model.safetensors"
ok $? "another seed, other weights"

grpo-init --preset tiny -o "$t/a" 2>"$t/err"; [ $? -eq 1 ] && grep -q "already exists" "$t/err"
ok $? "refuses an existing directory (exit 1): $(cat "$t/err")"
[ "$(ls -A "$t" | grep -c 'tmp')" -eq 0 ]; ok $? "and leaves no temporary directory"

# A full disk at any write (GRPO_FSYS_FAIL_AT=N: the Nth file system call
# fails with ENOSPC) is 75, "later", naming the file; a failing disk (EIO)
# is 1; either leaves nothing behind
bad=
for k in 1 2 3 4 5 6 7 8; do
	for f in ENOSPC EIO; do
		GRPO_FSYS_FAIL_AT=$k:$f grpo-init --preset tiny -o "$t/full/m" 2> "$t/err"
		rc=$?
		case $rc:$f in
		75:ENOSPC) grep -q "^grpo-init: $t.*: No space left on device$" "$t/err" || bad="$bad $k:$f(message)" ;;
		1:EIO) grep -q "^grpo-init: $t.*: Input/output error$" "$t/err" || bad="$bad $k:$f(message)" ;;
		*) bad="$bad $k:$f(exit $rc)" ;;
		esac
		[ ! -e "$t/full/m" ] && [ "$(ls -A "$t/full" 2> /dev/null | wc -l)" -eq 0 ] || bad="$bad $k:$f(left)"
		rm -rf "$t/full"
	done
done
[ -z "$bad" ]; ok $? "a full disk at each of the first 8 calls: exit 75; a failing one: 1; nothing left:${bad:- none}"

# A signal at any point of the write (the crash hook raises SIGTERM before
# the Nth file system call) leaves no temporary beside the target: the
# target is absent or complete, and grpo-init still dies of the signal.
mkdir "$t/sig"
calls=$(GRPO_FSYS_TRACE=1 grpo-init --preset tiny --seed 7 -o "$t/sig/all" 2>&1 >/dev/null | grep -c '^fsys ')
rm -rf "$t/sig/all"
bad=""
k=1
while [ "$k" -le "$calls" ]; do
	GRPO_FSYS_CRASH_AT=$k GRPO_FSYS_CRASH_SIGNAL=15 grpo-init --preset tiny --seed 7 -o "$t/sig/m" 2>/dev/null
	st=$?
	left=$(ls -A "$t/sig" | grep -v '^m$')
	if [ "$st" -ne 143 ] || [ -n "$left" ] ||
		{ [ -e "$t/sig/m" ] && ! cmp -s "$t/sig/m/model.safetensors" "$t/a/model.safetensors"; }; then
		bad="$bad $k"
	fi
	rm -rf "$t/sig/m"
	k=$((k + 1))
done
[ "$calls" -gt 5 ] && [ -z "$bad" ]
ok $? "SIGTERM at each of the $calls file system calls leaves no temporary${bad:+: $bad}"

grpo-init --family qwen3 --hidden 32 --layers 1 --heads 2 --kv-heads 1 --intermediate 48 --vocab 64 \
	--head-dim 24 --no-tie --eos 5 --eos 6 --bos 1 -o "$t/q3"; ok $? "qwen3 shape from options"
grep -q '"head_dim": 24' "$t/q3/config.json" && grep -q '"eos_token_id": \[5, 6\]' "$t/q3/config.json"
ok $? "head_dim 24 and two eos ids in config.json"
grep -q 'lm_head.weight' "$t/q3/model.safetensors" && grep -q 'q_norm.weight' "$t/q3/model.safetensors"
ok $? "untied qwen3 has lm_head.weight and q_norm"

grpo-init --family llama --hidden 32 --layers 1 --heads 2 --intermediate 48 --vocab 64 --dtype bfloat16 \
	--shard-size 4K -o "$t/l"; ok $? "llama in bfloat16 shards of 4K"
[ -f "$t/l/model.safetensors.index.json" ] && ls "$t/l"/model-00001-of-*.safetensors >/dev/null
ok $? "index and shards written"
grep -q '"BF16"' "$t/l/model-00001-of-"*.safetensors; ok $? "shards hold BF16"

# grpo-init(1) and grpo(7) write -o policy/step_0 in a spool that has no
# policy/ yet: the parents are made, as grpo-step makes its policy queue
grpo-init --preset tiny --seed 7 -o "$t/new/policy/step_0" 2> "$t/err"
[ $? -eq 0 ] && cmp -s "$t/a/model.safetensors" "$t/new/policy/step_0/model.safetensors"
ok $? "-o DIR whose parents do not exist makes them: $(cat "$t/err")"
# a path that cannot be made fails before the weights are drawn (this
# shape takes seconds and 2 GB to draw), leaving nothing
: > "$t/file"
timeout 5 grpo-init --preset qwen2.5-0.5b -o "$t/file/step_0" 2> "$t/err"
[ $? -eq 1 ] && grep -q "^grpo-init: $t/file" "$t/err" && [ "$(ls -A "$t" | grep -c tmp)" -eq 0 ]
ok $? "-o under a regular file fails at once (exit 1), naming it: $(cat "$t/err")"

grpo-init --family gpt2 -o "$t/x" 2>/dev/null; [ $? -eq 2 ]; ok $? "unknown family: exit 2"
grpo-init --preset tiny 2>/dev/null; [ $? -eq 2 ]; ok $? "no -o: exit 2"
grpo-init --family qwen2 --hidden 30 --layers 1 --heads 4 --intermediate 8 --vocab 16 -o "$t/y" 2>/dev/null
[ $? -eq 2 ]; ok $? "hidden 30 with 4 heads (odd head_dim): exit 2"
grpo-init --help | grep -q "usage: grpo-init"; ok $? "--help on stdout"
grpo-init --version | grep -q "^grpo-init "; ok $? "--version"

tok="${GRPO_SHARED:-../shared}/data/tokenizers/qwen3/tokenizer.json"
if [ -f "$tok" ]; then
	grpo-init --preset tiny --tokenizer "$tok" -o "$t/tk"; ok $? "with the Qwen3 tokenizer"
	cmp -s "$tok" "$t/tk/tokenizer.json"; ok $? "tokenizer.json copied"
	grep -q '"vocab_size": 151680' "$t/tk/config.json"; ok $? "vocab raised to cover the tokenizer's 151669 ids"
	grep -q '"eos_token_id": \[151645, 151643\]' "$t/tk/config.json" &&
		grep -q '"eos_token_id": \[151645, 151643\]' "$t/tk/generation_config.json" &&
		grep -q '"bos_token_id": null' "$t/tk/config.json"
	ok $? "eos from the tokenizer: <|im_end|> (tokenizer_config.json) and <|endoftext|>; Qwen3 has no bos"
	grpo-init --preset tiny --eos 7 --bos 3 --tokenizer "$tok" -o "$t/tk2"
	grep -q '"eos_token_id": 7,' "$t/tk2/config.json" && grep -q '"bos_token_id": 3,' "$t/tk2/config.json"
	ok $? "--bos and --eos win over the tokenizer"
	grpo-init --preset qwen2.5-0.5b --layers 1 --hidden 64 --heads 2 --kv-heads 1 --intermediate 32 \
		--tokenizer "$tok" -o "$t/tk3"
	grep -q '"eos_token_id": 151645,' "$t/tk3/config.json"; ok $? "a preset's own eos stays"
else
	n=$((n + 1)); echo "ok $n # SKIP no shared tokenizer at $tok"
fi
# the tokenizer is read by the tokenizer module: what the tools could not load is refused here
mkdir "$t/addtok"
cp "$GRPO_TOP/examples/addition/tokenizer.json" "$t/addtok/"
printf '{"eos_token": "="}\n' > "$t/addtok/tokenizer_config.json"
grpo-init --preset tiny --tokenizer "$t/addtok/tokenizer.json" -o "$t/add"
grep -q '"eos_token_id": 11,' "$t/add/config.json" && grep -q '"bos_token_id": null' "$t/add/config.json"
ok $? "eos_token of tokenizer_config.json found among the vocab tokens too (= is 11)"
sed 's/"type": "BPE"/"type": "Unigram"/' "$GRPO_TOP/examples/addition/tokenizer.json" > "$t/unigram.json"
grpo-init --preset tiny --tokenizer "$t/unigram.json" -o "$t/uni" 2> "$t/err"
[ $? -eq 1 ] && grep -q "^grpo-init: $t/unigram.json: .*Unigram" "$t/err" && [ ! -e "$t/uni" ]
ok $? "a tokenizer the tools cannot read is refused, naming it: $(cat "$t/err")"
tok="${GRPO_SHARED:-../shared}/data/tokenizers/llama3/tokenizer.json"
if [ -f "$tok" ]; then
	grpo-init --preset tiny --family llama --tokenizer "$tok" -o "$t/ll"
	grep -q '"bos_token_id": 128000,' "$t/ll/config.json" &&
		grep -q '"eos_token_id": \[128001, 128009\]' "$t/ll/config.json"
	ok $? "Llama 3 tokenizer: bos <|begin_of_text|>, eos <|end_of_text|> and <|eot_id|>"
else
	n=$((n + 1)); echo "ok $n # SKIP no shared tokenizer at $tok"
fi
echo "1..$n"
exit $fail
