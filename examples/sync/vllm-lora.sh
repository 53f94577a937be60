#!/bin/sh
# vllm-lora.sh: load the LoRA adapter grpo-step published into a running vLLM,
# in place of the one it serves. A grpo-step --on-publish hook.
#
# Usage: GRPO_POLICY_DIR=SPOOL/policy/step_K [VLLM_URL=http://127.0.0.1:8000]
#        [VLLM_LORA_NAME=policy] [VLLM_LORA_SUBDIR=adapter] sh vllm-lora.sh
#
# POST /v1/load_lora_adapter {"lora_name": NAME, "lora_path": DIR,
# "load_inplace": true}, where DIR is GRPO_POLICY_DIR/VLLM_LORA_SUBDIR, or
# GRPO_POLICY_DIR itself when VLLM_LORA_SUBDIR is empty. Requests name the
# adapter as their model (grpo-collect --served-model policy).
#
# Needs vLLM started with --enable-lora (and --max-lora-rank at least the
# adapter's rank) and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; "load_inplace"
# is in recent releases only: older ones refuse to load a name already
# loaded, and then this fails with their message. Written from vLLM's
# documentation; not tried against a live server here.
set -eu
: "${GRPO_POLICY_DIR:?vllm-lora.sh: GRPO_POLICY_DIR (the checkpoint) is not set}"
url=${VLLM_URL:-http://127.0.0.1:8000}
name=${VLLM_LORA_NAME:-policy}
sub=${VLLM_LORA_SUBDIR-adapter}
dir=$GRPO_POLICY_DIR${sub:+/$sub}
[ -d "$dir" ] || { echo "vllm-lora.sh: $dir: no such directory (no adapter published?)" >&2; exit 1; }
dir=$(cd "$dir" && pwd)
case "$dir$name" in *'"'*|*'\'*) echo "vllm-lora.sh: $dir: a quote or backslash in the name" >&2; exit 1;; esac
if ! out=$(curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' \
	-d "{\"lora_name\":\"$name\",\"lora_path\":\"$dir\",\"load_inplace\":true}" \
	"$url/v1/load_lora_adapter" 2>&1); then
	echo "vllm-lora.sh: $url/v1/load_lora_adapter: $out" >&2
	exit 1
fi
