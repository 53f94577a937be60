#!/bin/sh
# sglang-update.sh: make a running SGLang load the checkpoint grpo-step
# published. A grpo-step --on-publish hook.
#
# Usage: GRPO_POLICY_DIR=SPOOL/policy/step_K GRPO_STEP=K
#        [SGLANG_URL=http://127.0.0.1:30000] sh sglang-update.sh
#
# POST /update_weights_from_disk {"model_path": DIR, "weight_version": "K",
# "flush_cache": true}: SGLang loads the weights in place (the same
# architecture) and from then on writes weight_version K into every answer's
# meta_info, which grpo-collect stores as the rollouts' policy_version.
# SGLang answers {"success": false, "message": ...} on a failed load; that
# fails this script with its message. Written from SGLang's io_struct.py
# (UpdateWeightFromDiskReqInput); not tried against a live server here.
set -eu
: "${GRPO_POLICY_DIR:?sglang-update.sh: GRPO_POLICY_DIR (the checkpoint to serve) is not set}"
: "${GRPO_STEP:?sglang-update.sh: GRPO_STEP (its step) is not set}"
url=${SGLANG_URL:-http://127.0.0.1:30000}
[ -d "$GRPO_POLICY_DIR" ] || { echo "sglang-update.sh: $GRPO_POLICY_DIR: no such directory" >&2; exit 1; }
dir=$(cd "$GRPO_POLICY_DIR" && pwd)
case "$dir" in *'"'*|*'\'*) echo "sglang-update.sh: $dir: a quote or backslash in the name" >&2; exit 1;; esac
case "$GRPO_STEP" in ''|*[!0-9]*) echo "sglang-update.sh: GRPO_STEP '$GRPO_STEP' is not a step number" >&2; exit 1;; esac
if ! out=$(curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' \
	-d "{\"model_path\":\"$dir\",\"weight_version\":\"$GRPO_STEP\",\"flush_cache\":true}" \
	"$url/update_weights_from_disk" 2>&1); then
	echo "sglang-update.sh: $url/update_weights_from_disk: $out" >&2
	exit 1
fi
case "$out" in
*'"success": false'*|*'"success":false'*) echo "sglang-update.sh: SGLang refused: $out" >&2; exit 1;;
esac
