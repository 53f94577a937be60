#!/bin/sh
# vllm-restart.sh: restart vLLM on the checkpoint grpo-step published: stop
# the running server, wait until its GPU memory is released, start a new one
# on GRPO_POLICY_DIR and wait until it answers. A grpo-step --on-publish hook,
# and how examples/vllm-loop.sh starts the first server too.
#
# Usage: GRPO_POLICY_DIR=DIR [VLLM_PORT=8000] [VLLM_PID_FILE=vllm.pid]
#        [VLLM_LOG=vllm.log] [VLLM_ARGS='--logprobs-mode processed_logprobs ...']
#        [VLLM_START_TIMEOUT=900] [VLLM_STOP_TIMEOUT=120] sh vllm-restart.sh
#
# The simplest sync, and the slowest: every step pays vLLM's start-up (loading
# the weights, capturing CUDA graphs: a minute or more). It works with every
# vLLM version and leaves no old weights behind. The server runs in a session
# of its own (setsid), so that stopping it stops its engine processes too;
# VLLM_PID_FILE holds that session's leader. The model path vLLM reports
# (/v1/models "root") ends in step_K, which grpo-collect --server reads as
# the policy version.
set -eu
: "${GRPO_POLICY_DIR:?vllm-restart.sh: GRPO_POLICY_DIR (the checkpoint to serve) is not set}"
port=${VLLM_PORT:-8000}
pidfile=${VLLM_PID_FILE:-vllm.pid}
log=${VLLM_LOG:-vllm.log}
start_timeout=${VLLM_START_TIMEOUT:-900}
stop_timeout=${VLLM_STOP_TIMEOUT:-120}
[ -d "$GRPO_POLICY_DIR" ] || { echo "vllm-restart.sh: $GRPO_POLICY_DIR: no such directory" >&2; exit 1; }
command -v vllm > /dev/null || { echo "vllm-restart.sh: no vllm command on PATH" >&2; exit 1; }

# the processes of the old server's session, for the GPU wait below
old=
if [ -s "$pidfile" ]; then
	pid=$(cat "$pidfile")
	old=$(ps -o pid= -s "$pid" 2> /dev/null | tr -d ' ' | tr '\n' ' ')
	kill -TERM "-$pid" 2> /dev/null || kill -TERM "$pid" 2> /dev/null || true
	t=0
	while [ -n "$(ps -o pid= -s "$pid" 2> /dev/null)" ]; do
		if [ "$t" -ge "$stop_timeout" ]; then
			echo "vllm-restart.sh: vLLM (session $pid) still running after ${stop_timeout}s: killing it" >&2
			kill -KILL "-$pid" 2> /dev/null || true
			sleep 1
			break
		fi
		sleep 1
		t=$((t + 1))
	done
	rm -f "$pidfile"
fi

# A process's GPU memory is freed by the driver a moment after it exits: wait
# until nvidia-smi lists none of the old processes, or the new server may
# find too little memory and fail to start.
if [ -n "$old" ] && command -v nvidia-smi > /dev/null; then
	t=0
	while :; do
		busy=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2> /dev/null | tr -d ' ')
		left=
		for p in $old; do
			echo "$busy" | grep -qx "$p" && left="$left $p"
		done
		[ -z "$left" ] && break
		if [ "$t" -ge "$stop_timeout" ]; then
			echo "vllm-restart.sh: GPU memory of processes$left not released after ${stop_timeout}s" >&2
			exit 1
		fi
		sleep 1
		t=$((t + 1))
	done
fi

# shellcheck disable=SC2086 # VLLM_ARGS is split into arguments on purpose
setsid vllm serve "$GRPO_POLICY_DIR" --port "$port" ${VLLM_ARGS:-} >> "$log" 2>&1 < /dev/null &
echo $! > "$pidfile"
new=$(cat "$pidfile")
t=0
until curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null 2>&1; do
	if ! kill -0 "$new" 2> /dev/null; then
		echo "vllm-restart.sh: vLLM on $GRPO_POLICY_DIR exited while starting; see $log" >&2
		rm -f "$pidfile"
		exit 1
	fi
	if [ "$t" -ge "$start_timeout" ]; then
		echo "vllm-restart.sh: vLLM on $GRPO_POLICY_DIR not answering after ${start_timeout}s; see $log" >&2
		exit 1
	fi
	sleep 1
	t=$((t + 1))
done
