#!/bin/sh
# The weight-sync hooks of examples/sync/ against the fake server (which
# records each request: the path and JSON body are checked), their errors,
# and examples/vllm-loop.sh: parsed always, and one step run end to end with
# the fake server standing in for vLLM.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v python3 > /dev/null || skip_all "no python3 to run the fake server"
command -v curl > /dev/null || skip_all "no curl, which the sync scripts use"
plan 14
X="$GRPO_TOP/examples/sync"

S="$T/server"
mkdir -p "$T/spool/policy/step_3"
fake_server "$S"
P="$T/spool/policy"
last() { tail -n 1 "$S/log" | sed 's/, "t": [0-9.]*}$/}/'; }   # the last request, without its time

for f in vllm-restart vllm-reload vllm-lora sglang-update; do sh -n "$X/$f.sh" || echo "$f" >> "$T/bad"; done
sh -n "$GRPO_TOP/examples/vllm-loop.sh" || echo vllm-loop >> "$T/bad"
is "$(cat "$T/bad" 2> /dev/null)" "" "the sync scripts and the loop parse (sh -n)"

GRPO_POLICY_DIR="$P/step_3" GRPO_STEP=3 SGLANG_URL="$URL" sh "$X/sglang-update.sh"
is "$?:$(last)" "0:{\"method\": \"POST\", \"path\": \"/update_weights_from_disk\", \"body\": {\"model_path\": \"$P/step_3\", \"weight_version\": \"3\", \"flush_cache\": true}}" \
	"sglang-update.sh: POST /update_weights_from_disk with the directory and the version"
GRPO_POLICY_DIR="$P/step_3" VLLM_URL="$URL" sh "$X/vllm-reload.sh"
is "$?:$(last):$(readlink "$P/current")" "0:{\"method\": \"POST\", \"path\": \"/collective_rpc\", \"body\": {\"method\": \"reload_weights\"}}:$P/step_3" \
	"vllm-reload.sh: points policy/current at the step, then POST /collective_rpc reload_weights"
mkdir -p "$P/step_3/adapter"
GRPO_POLICY_DIR="$P/step_3" VLLM_URL="$URL" sh "$X/vllm-lora.sh"
is "$?:$(last)" "0:{\"method\": \"POST\", \"path\": \"/v1/load_lora_adapter\", \"body\": {\"lora_name\": \"policy\", \"lora_path\": \"$P/step_3/adapter\", \"load_inplace\": true}}" \
	"vllm-lora.sh: POST /v1/load_lora_adapter in place"

n=$(wc -l < "$S/log")
GRPO_POLICY_DIR="$P/step_4" GRPO_STEP=4 SGLANG_URL="$URL" sh "$X/sglang-update.sh" 2> "$T/err"
is "$?:$(cat "$T/err"):$(($(wc -l < "$S/log") - n))" "1:sglang-update.sh: $P/step_4: no such directory:0" \
	"a missing checkpoint: a clear error, nothing sent"
env -u GRPO_STEP GRPO_POLICY_DIR="$P/step_3" SGLANG_URL="$URL" sh "$X/sglang-update.sh" 2> "$T/err"
# the status is the shell's: 2 from dash, 1 from bash
is "$([ $? -ne 0 ] && echo failed):$(grep -c 'GRPO_STEP (its step) is not set' "$T/err")" "failed:1" \
	"an unset variable fails the hook, named"
kill $server
wait $server 2> /dev/null
GRPO_POLICY_DIR="$P/step_3" VLLM_URL="$URL" sh "$X/vllm-reload.sh" 2> "$T/err"
is "$?:$(grep -c "vllm-reload.sh: $URL/collective_rpc: .*VLLM_SERVER_DEV_MODE=1" "$T/err")" "1:1" \
	"a server that does not answer: the script fails, saying where and what to check"
GRPO_POLICY_DIR="$P/step_3" PATH="$T/nothing:/usr/bin:/bin" sh "$X/vllm-restart.sh" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:vllm-restart.sh: no vllm command on PATH" "vllm-restart.sh without vLLM says so"

# --- vllm-restart.sh with a stand-in vllm: the fake server, on the port it is given -----
# (the fake server picks its own port; the stand-in reports it in the port file
# and vllm-restart.sh is pointed there after the first start)
mkdir -p "$T/bin"
cat > "$T/bin/vllm" <<EOF
#!/bin/sh
# stand-in: vllm serve DIR --port P ...: the fake server, its model path DIR
echo "{\"model_path\": \"\$2\"}" > "$S/script2.json"
rm -f "$S/port2"
exec python3 "$GRPO_TOP/tests/cli/fake-server.py" "$S/port2" "$S/log2" "$S/script2.json"
EOF
chmod +x "$T/bin/vllm"
# vllm-restart.sh waits for http://127.0.0.1:VLLM_PORT/v1/models; the stand-in's
# port is known only once it runs, so a first start is waited for here
( GRPO_POLICY_DIR="$P/step_3" PATH="$T/bin:$PATH" VLLM_PID_FILE="$T/vllm.pid" VLLM_LOG="$T/vllm.log" \
	VLLM_PORT=0 VLLM_START_TIMEOUT=2 sh "$X/vllm-restart.sh" 2> "$T/err" )
i=0
while [ ! -s "$S/port2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
port=$(cat "$S/port2")
first=$(cat "$T/vllm.pid")
mkdir -p "$P/step_4"
GRPO_POLICY_DIR="$P/step_4" PATH="$T/bin:$PATH" VLLM_PID_FILE="$T/vllm.pid" VLLM_LOG="$T/vllm.log" \
	VLLM_PORT="$port" VLLM_START_TIMEOUT=1 sh "$X/vllm-restart.sh" 2> "$T/err"
st=$?
kill -0 "$first" 2> /dev/null
is "$st:$?" "$st:1" "vllm-restart.sh stops the running server (its whole session)"
# its 1 s start wait may end before the stand-in has even begun (the old
# port2 still there): wait for the new server's port file itself
new_server() { grep -q step_4 "$S/script2.json" && [ -s "$S/port2" ]; }
wait_for 60 new_server
second=$(cat "$T/vllm.pid" 2> /dev/null)
is "$(cat "$S/script2.json")" "{\"model_path\": \"$P/step_4\"}" "and starts a new one on GRPO_POLICY_DIR"
[ -n "$second" ] && kill -TERM "-$second" 2> /dev/null

# --- the loop, one step, with the fake server for vLLM -------------------------------
S3="$T/s3"
mkdir -p "$S3"
echo "{\"model_path\": \"$T/loop/policy/current\", \"vocab\": 13}" > "$S3/script.json"
fake_server "$S3"
grpo-init --family qwen2 --hidden 16 --layers 1 --heads 2 --kv-heads 1 --intermediate 32 --vocab 13 \
	--eos 12 --tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 1 -o "$T/init" > /dev/null
head -n 4 "$GRPO_TOP/examples/addition/prompts.jsonl" > "$T/prompts.jsonl"
mkdir -p "$T/nobin"
printf '#!/bin/sh\necho "the loop must not start vllm with GRPO_SERVER set" >&2\nexit 1\n' > "$T/nobin/vllm"
chmod +x "$T/nobin/vllm"
# one step of the loop on $T/loop, the fake server standing in for vLLM
loop_step() {
	GRPO_SERVER="http://127.0.0.1:$(cat "$S3/port")" SYNC="$X/vllm-reload.sh" STEPS=1 G=4 PROMPTS_PER_STEP=4 \
		MAX_TOKENS=4 SEQ_LEN=256 LR=0.01 PATH="$T/nobin:$PATH" \
		sh "$GRPO_TOP/examples/vllm-loop.sh" "$T/init" "$T/prompts.jsonl" "$T/loop" > "$T/out" 2> "$T/err"
}
loop_step
is "$?:$(readlink "$T/loop/policy/current" | sed 's,.*/,,')" "0:step_1" \
	"vllm-loop.sh: one step end to end (collect through the server, score, pack, train, sync)"
is "$(grep -c '"path": "/collective_rpc"' "$S3/log"):$(grep -c '"path": "/v1/completions"' "$S3/log")" "1:4" \
	"the loop sampled through the server and synced it after the step"
loop_step
is "$?:$(readlink "$T/loop/policy/current" | sed 's,.*/,,')" "0:step_2" \
	"vllm-loop.sh run again on its spool goes on with step 2"
is "$(grep -c '"path": "/collective_rpc"' "$S3/log"):$(grep -c '"path": "/v1/completions"' "$S3/log")" "3:8" \
	"the server is synced to step 1 before sampling again, and to step 2 after it"
