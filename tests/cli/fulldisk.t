#!/bin/sh
# The loop of examples/demo.sh (collect, score, pack, step through one
# spool) on a disk that fills or fails: each stage of its second round has
# one file-system call after another fail with ENOSPC, or EIO where it
# reads (GRPO_FSYS_FAIL_AT), then a real full tmpfs leaves the round a
# page, two pages, ... of room. Each time the stage either fails, with a
# message that names the file and says what failed, exit 75 ("later") for
# the full disk and 1 for the bad one, or succeeds
# with at most a warning; it leaves no temporary, no claim, no step of
# micro-batches without its DONE; and once the fault is gone the round run
# again ends with the spool as a run that never failed left it, byte for
# byte, as chaos.t compares it. The same for grpo-step --keep and grpo-spool
# gc --archive; and each --watch consumer on the full tmpfs stops, exit 75.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9
. "$GRPO_TOP/tests/cli/loop.sh"
HOOK=GRPO_FSYS_FAIL_AT
init_model "$T/ref/init" 2> "$T/err"
round "$T/ref" 1 && cp -R "$T/ref" "$T/one" && round "$T/ref" 2 && grpo-spool recover --tmp-age 0 "$T/ref"
is "$?:$(cat "$T/err")" "0:" "two rounds, no fault"
digest "$T/ref" > "$T/loop.d"
cp "$T/loop.d" "$T/ref.d"
faulted() { # faulted SPOOL RC WHY: what is wrong after a command failed with RC; nothing when all is well
	# (it failed saying so, or succeeded with a warning, or silently having done all), then after `again`
	# and recover
	_last=$(tail -n 1 "$T/err")
	case $2:$3 in
	0:*) ;;
	"75:No space left on device" | "1:Input/output error")
		case $_last in *"$1"*": $3"*) ;; *) echo "message '$_last'" ;; esac ;;
	*) echo "exit $2" ;;
	esac
	grep -q warning "$T/err" || unfinished "$1"
	if [ "$2" = 0 ] && [ ! -s "$T/err" ]; then
		grpo-spool recover --tmp-age 0 "$1" && digest "$1" | cmp -s - "$T/ref.d" ||
			echo "silent, its work not done"
	fi
	: > "$T/err"
	again "$1" || echo "the run again failed: $(cat "$T/err")"
	grpo-spool recover --tmp-age 0 "$1" && digest "$1" | cmp -s - "$T/ref.d" || echo "not as never failed"
}
walk() { # walk BASE [CALL]: `attempt` on copies of BASE in $T/w, each of its calls (from the first CALL
	# on) failing in turn (but those inside a run of one kind, the writes of one checkpoint: its first and
	# last), ENOSPC, or EIO where it reads; then faulted; sets calls, tried and bad
	rm -rf "$T/w" && cp -R "$1" "$T/w"
	attempt trace
	grep "^fsys [0-9]" "$T/err" | cut -d' ' -f3 > "$T/calls"
	: > "$T/err"
	calls=$(wc -l < "$T/calls")
	bad= tried=0
	_from=1
	[ -z "${2:-}" ] || _from=$(grep -n -x "$2" "$T/calls" | head -n 1 | cut -d: -f1)
	for n in $(awk -v from="${_from:-1}" '{ n[NR] = $1 } END { for (i = from; i <= NR; i++)
			if (n[i] != n[i-1] || n[i] != n[i+1]) print i }' "$T/calls"); do
		case $(sed -n "${n}p" "$T/calls") in
		read | open_read | list_dir | stat | fstat) fault=EIO why="Input/output error" ;;
		*) fault=ENOSPC why="No space left on device" ;;
		esac
		rm -rf "$T/w" && cp -R "$1" "$T/w"
		attempt "$n:$fault"
		wrong=$(faulted "$T/w" $? "$why")
		[ -z "$wrong" ] || bad="$bad $n:$fault($wrong)"
		tried=$((tried + 1))
	done
}
again() { round "$1" 2; }
for st in collect score pack step; do
	attempt() { round "$T/w" 2 $st "$1"; }
	walk "$T/one"
	is "$calls:${bad:- none}" "$calls: none" \
		"grpo-$st failing at $tried of its $calls calls: said, nothing half done, run again as never failed"
done
# grpo-step --keep 1 training step 2 (from the rename that publishes it on) and grpo-spool gc --archive
# of batches, which has markers: the same, each against what it does on a disk that never fails
trained() { # trained CMD...: CMD under the hook attempt was given ($h), into $T/err
	case $h in
	trace) GRPO_FSYS_TRACE=1 "$@" ;;
	'') "$@" ;;
	*) GRPO_FSYS_FAIL_AT=$h "$@" ;;
	esac 2>> "$T/err"
}
keep() { trained grpo-step --model "$1/init" --batches "$1/batches" --step 2 -o "$1/policy" --lr 0.01 \
	--entropy-coef 0.02 --keep 1; }
attempt() { h=$1 keep "$T/w"; }
again() { h= keep "$1"; }
cp -R "$T/one" "$T/packed" && UNTIL=pack round "$T/packed" 2 && rm -rf "$T/w" && cp -R "$T/packed" "$T/w" &&
	again "$T/w" && grpo-spool recover --tmp-age 0 "$T/w" && digest "$T/w" > "$T/ref.d"
walk "$T/packed" rename_noreplace
is "$(ls "$T/w/policy" | tr '\n' ' '):${bad:- none}" "step_0 step_2 : none" \
	"grpo-step --keep 1 failing at $tried of its calls from publishing on: said, run again as never failed"
attempt() { h=$1 trained grpo-spool gc "$T/w" --keep-last 1 --archive "$T/w/arch" --queue batches; }
again() { h= trained grpo-spool gc "$1" --keep-last 1 --archive "$1/arch" --queue batches; }
rm -rf "$T/w" && cp -R "$T/ref" "$T/w" && again "$T/w" && grpo-spool recover "$T/w" &&
	digest "$T/w" > "$T/ref.d"
walk "$T/ref"
is "$(ls "$T/w/arch"):${bad:- none}" "batches-step_1.tar.zst: none" \
	"grpo-spool gc --archive of batches failing at $tried of its $calls calls: said, or done; run again as never \
failed"
# the same on a real file system that fills: a tmpfs with the round's spool and K pages free
mkdir "$T/mnt"
if ! mount -t tmpfs -o size=4m tmpfs "$T/mnt" 2> "$T/mount.err"; then
	skip "a full tmpfs: cannot mount one here ($(cat "$T/mount.err"))"
	skip "--watch on a full tmpfs: cannot mount one here"
	exit
fi
trap 'umount "$T/mnt"; rm -rf "$T"' EXIT
cp "$T/loop.d" "$T/ref.d"
again() { round "$1" 2; }
free_pages() { echo $(($(df -B 4096 --output=avail "$T/mnt" | tail -n 1))); }
cp -R "$T/one" "$T/mnt/w"
before=$(free_pages)
round "$T/mnt/w" 2
need=$((before - $(free_pages)))
bad= tried=0 k=0
while [ $k -le "$need" ]; do
	rm -rf "$T/mnt/w" && cp -R "$T/one" "$T/mnt/w"
	fallocate -l $((($(free_pages) - k) * 4096)) "$T/mnt/fill"
	round "$T/mnt/w" 2
	rc=$?
	rm "$T/mnt/fill"
	wrong=$(faulted "$T/mnt/w" $rc "No space left on device")
	[ -z "$wrong" ] || bad="$bad $k($wrong)"
	tried=$((tried + 1)) k=$((k + 1 + need / 40))
done
is "${bad:- none}" " none" "round 2 with 0 to $need of the $need pages it needs free ($tried tries): as above"
# Each --watch consumer on that tmpfs, its input waiting, 0 pages free (its claim fails) or 1 (its
# output fails; not grpo-spool consume, whose command writes nothing): it stops, exit 75, saying which
# file and why, its claim released and nothing half published, neither retrying nor waiting for ever
# (the timeout only guards against a hang)
cp -R "$T/one" "$T/collected" && UNTIL=collect round "$T/collected" 2 &&
	cp -R "$T/one" "$T/scored" && UNTIL=score round "$T/scored" 2
bad=
for k in 0 1; do
	for w in score pack step $([ $k = 0 ] && echo consume); do
		case $w in
		score | consume) base=collected ;;
		pack) base=scored ;;
		step) base=packed ;;
		esac
		rm -rf "$T/mnt/w" && cp -R "$T/$base" "$T/mnt/w"
		fallocate -l $((($(free_pages) - k) * 4096)) "$T/mnt/fill"
		s=$T/mnt/w
		case $w in
		score) timeout 30 grpo-score --watch --reward gsm8k --ref "$s/init" -o "$s/scored" "$s/rollouts" ;;
		pack) timeout 30 grpo-pack --watch --seq-len 64 --batch-size 24 -o "$s/batches" "$s/scored" ;;
		step) timeout 30 grpo-step --watch --model "$s/init" --batches "$s/batches" -o "$s/policy" ;;
		consume) timeout 30 grpo-spool consume --watch "$s/rollouts" -- cat ;;
		esac > /dev/null 2> "$T/err"
		rc=$?
		rm "$T/mnt/fill"
		wrong=$(case $rc in 75) ;; *) echo "exit $rc" ;; esac
			grep -q "^grpo-[a-z]*: .*$s/.*: No space left on device$" "$T/err" || echo "message '$(cat "$T/err")'"
			unfinished "$s"
			grpo-spool status "$s" | grep claimed)
		[ -z "$wrong" ] || bad="$bad $w/$k($wrong)"
	done
done
is "${bad:- none}" " none" \
	"score, pack, step and consume --watch on a full disk: exit 75, saying why, nothing claimed or half published"
