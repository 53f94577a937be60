#!/bin/sh
# vllm-reload.sh: make a running vLLM re-read its weights from disk after
# grpo-step publishes a checkpoint. A grpo-step --on-publish hook.
#
# Usage: GRPO_POLICY_DIR=SPOOL/policy/step_K [VLLM_URL=http://127.0.0.1:8000]
#        [VLLM_SERVED_DIR=SPOOL/policy/current] sh vllm-reload.sh
#
# vLLM's POST /collective_rpc {"method": "reload_weights"} re-reads the model
# directory the server was started on; it takes no other directory. So start
# vLLM on a symbolic link, VLLM_SERVED_DIR (default: "current" beside
# GRPO_POLICY_DIR), that this script points at GRPO_POLICY_DIR (a new link
# renamed over the old one, so the link is never missing) before asking for
# the reload. grpo-collect --server resolves that link, where it shares the
# file system with vLLM, to learn the version served.
#
# Needs a vLLM with the development endpoints: started with
# VLLM_SERVER_DEV_MODE=1 (recent releases; /collective_rpc is listed in
# GET /openapi.json where the installed version has it). Written from vLLM's
# documentation, not tried here against a live server: check the first
# reload by hand. The reload is not atomic: requests in flight while it runs
# may mix old and new weights; run it between collections.
set -eu
: "${GRPO_POLICY_DIR:?vllm-reload.sh: GRPO_POLICY_DIR (the checkpoint to serve) is not set}"
url=${VLLM_URL:-http://127.0.0.1:8000}
served=${VLLM_SERVED_DIR:-$(dirname "$GRPO_POLICY_DIR")/current}
[ -d "$GRPO_POLICY_DIR" ] || { echo "vllm-reload.sh: $GRPO_POLICY_DIR: no such directory" >&2; exit 1; }
target=$(cd "$GRPO_POLICY_DIR" && pwd)
ln -sfn "$target" "$served.new.$$"
mv -T "$served.new.$$" "$served"
if ! out=$(curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' \
	-d '{"method":"reload_weights"}' "$url/collective_rpc" 2>&1); then
	echo "vllm-reload.sh: $url/collective_rpc: $out (is vLLM running with VLLM_SERVER_DEV_MODE=1?)" >&2
	exit 1
fi
