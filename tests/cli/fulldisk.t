#!/bin/sh
# The loop of examples/demo.sh (collect, score, pack, step through one
# spool) on a disk that fills or fails: each stage of its second round has
# one file-system call after another fail with ENOSPC, or EIO where it
# reads (GRPO_FSYS_FAIL_AT), then a real full tmpfs leaves the round a
# page, two pages, ... of room. Each time the stage either fails, exit 1
# with a message that names the file and says what failed, or succeeds
# with at most a warning; it leaves no temporary, no claim, no step of
# micro-batches without its DONE; and once the fault is gone the round run
# again ends with the spool as a run that never failed left it, byte for
# byte, as chaos.t compares it.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
. "$GRPO_TOP/tests/cli/loop.sh"
HOOK=GRPO_FSYS_FAIL_AT
init_model "$T/ref/init" 2> "$T/err"
round "$T/ref" 1 && cp -R "$T/ref" "$T/one" && round "$T/ref" 2 && grpo-spool recover --tmp-age 0 "$T/ref"
is "$?:$(cat "$T/err")" "0:" "two rounds, no fault"
digest "$T/ref" > "$T/ref.d"
unfinished() { # what a failed stage must not leave: temporaries, claims, a step of batches without DONE
	(cd "$1" && find . -path ./init -prune -o \( -path '*/.tmp/*' -o -path '*/.claimed/*' -o \
		-name '.*.tmp.*' \) -print)
	grpo-spool status "$1" | awk '$1 == "batches" && $NF == "-" { print "batches step " $2 " without DONE" }'
}
faulted() { # faulted SPOOL RC WHY: what is wrong after a stage failed with RC; nothing when all is well
	_last=$(tail -n 1 "$T/err")
	case $2 in
	0) ;;
	1) case $_last in *"$1/"*": $3"*) ;; *) echo "message '$_last'" ;; esac ;;
	*) echo "exit $2" ;;
	esac
	unfinished "$1"
	: > "$T/err"
	round "$1" 2 || echo "the run again failed: $(cat "$T/err")"
	grpo-spool recover --tmp-age 0 "$1" && digest "$1" | cmp -s - "$T/ref.d" || echo "not as never failed"
}
for st in collect score pack step; do
	rm -rf "$T/w" && cp -R "$T/one" "$T/w"
	round "$T/w" 2 $st trace
	grep "^fsys [0-9]" "$T/err" | cut -d' ' -f3 > "$T/calls"
	: > "$T/err"
	calls=$(wc -l < "$T/calls")
	# every call but those inside a run of one kind (the writes of one checkpoint): its first and last
	points=$(awk '{ n[NR] = $1 } END { for (i = 1; i <= NR; i++) if (n[i] != n[i-1] || n[i] != n[i+1]) print i }' "$T/calls")
	bad= tried=0
	for n in $points; do
		case $(sed -n "${n}p" "$T/calls") in
		read | open_read | list_dir | stat | fstat) fault=EIO why="Input/output error" ;;
		*) fault=ENOSPC why="No space left on device" ;;
		esac
		rm -rf "$T/w" && cp -R "$T/one" "$T/w"
		round "$T/w" 2 $st "$n:$fault"
		wrong=$(faulted "$T/w" $? "$why")
		[ -z "$wrong" ] || bad="$bad $n:$fault($wrong)"
		tried=$((tried + 1))
	done
	is "$calls:${bad:- none}" "$calls: none" \
		"grpo-$st failing at $tried of its $calls calls: said, nothing half done, run again as never failed"
done
# the same on a real file system that fills: a tmpfs with the round's spool and K pages free
mkdir "$T/mnt"
if ! mount -t tmpfs -o size=4m tmpfs "$T/mnt" 2> "$T/mount.err"; then
	skip "a full tmpfs: cannot mount one here ($(cat "$T/mount.err"))"
	exit
fi
trap 'umount "$T/mnt"; rm -rf "$T"' EXIT
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
