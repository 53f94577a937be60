#!/bin/sh
# lib/ is layered: a module includes only its own folder and the folders that
# lib/README.md's table lets it include. This reads that table and checks
# every quoted include of every file under lib/.
. "$GRPO_TOP/tests/cli/lib.sh"
L="$GRPO_TOP/lib"
plan 6

# "| folder | may include | ..." rows, as "folder: allowed..."
sed -n 's/^| *\([a-z]*\) *| *\([a-z ()]*\) *|.*/\1: \2/p' "$L/README.md" | grep -v '^folder:' > "$T/allowed"
folders=$(ls -d "$L"/*/ | xargs -n1 basename | sort | tr '\n' ' ')
listed=$(cut -d: -f1 "$T/allowed" | sort | tr '\n' ' ')
is "$listed" "$folders" "lib/README.md's table names every folder of lib/ and no other"

check() { # check ROOT: print "file: include" for every include that breaks a rule
	for f in $(cd "$1" && ls */*.[ch] */*.inc 2>/dev/null); do
		d=${f%%/*}
		allowed=" $d $(sed -n "s/^$d: //p" "$T/allowed") "
		sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$1/$f" | while read -r inc; do
			case $inc in
			*/*) case "$allowed" in *" ${inc%%/*} "*) ;; *) echo "$f: $inc (upward or sideways)" ;; esac ;;
			*) echo "$f: $inc (names no folder)" ;;
			esac
		done
	done
}
check "$L" > "$T/bad"
is "$(cat "$T/bad")" "" "every include in lib/ names its folder and goes down"

# The check itself must be able to fail: an upward include and a bare one.
mkdir -p "$T/lib/base" "$T/lib/data"
printf '#include "spool/claim.h"\n' > "$T/lib/base/x.c"
printf '#include "traj.h"\n#include "base/err.h"\n' > "$T/lib/data/y.c"
check "$T/lib" > "$T/bad"
is "$(cat "$T/bad")" "base/x.c: spool/claim.h (upward or sideways)
data/y.c: traj.h (names no folder)" "a planted upward include and a bare include are both caught"

# Nothing outside lib/ includes a lib header without its folder; the tools
# may include their own modules (tools/cli.h) by name, the tests their helpers
# (tap.h, tokexpect.h).
bare() { # bare TOP: print "file:line:include" for every bare include of a lib header
	grep -n '#include "[a-z_]*\.h"' "$1"/tools/*.[ch] "$1"/tests/unit/*.c "$1"/tests/fuzz/*.c \
		"$1"/bench/*.c 2>/dev/null | grep -v '"tap.h"\|"tokexpect.h"\|"model_ref.h"\|"bench.h"' | while IFS= read -r l; do
		inc=$(echo "$l" | sed 's/.*#include "\([^"]*\)".*/\1/')
		case ${l%%:*} in "$1"/tools/*) [ -f "$1/tools/$inc" ] && continue ;; esac
		echo "${l#"$1"/}"
	done
}
is "$(bare "$GRPO_TOP")" "" "tools, tests and benchmarks include lib headers by folder"
mkdir -p "$T/top/tools" "$T/top/tests/unit"
printf '#include "cli.h"\n#include "err.h"\n' > "$T/top/tools/grpo-x.c"
: > "$T/top/tools/cli.h"
printf '#include "cli.h"\n' > "$T/top/tests/unit/test_x.c"
is "$(bare "$T/top")" 'tools/grpo-x.c:2:#include "err.h"
tests/unit/test_x.c:1:#include "cli.h"' "a tool's own header passes; a bare lib header, or a tool's header outside tools/, does not"

# A module's private header (NAME_impl.h) is for its own files, NAME_*.c
private() { # private TOP: print "file: header" for every include of a private header by another module
	grep -rl '#include "[a-z]*/[a-z_]*_impl\.h"' "$1"/lib "$1"/tools "$1"/tests "$1"/bench 2>/dev/null | while read -r f; do
		sed -n 's/^#include "[a-z]*\/\([a-z_]*\)_impl\.h".*/\1/p' "$f" | while read -r m; do
			case $(basename "$f") in "${m}_"*.c) ;; *) echo "${f#"$1"/}: ${m}_impl.h" ;; esac
		done
	done
}
mkdir -p "$T/priv/lib/model" "$T/priv/tools"
printf '#include "model/tokenizer_impl.h"\n' > "$T/priv/lib/model/tokenizer_load.c"
printf '#include "model/tokenizer_impl.h"\n' > "$T/priv/tools/grpo-x.c"
is "$(private "$GRPO_TOP"):$(private "$T/priv")" ":tools/grpo-x.c: tokenizer_impl.h" \
	"tokenizer_impl.h is included by the tokenizer's own files alone (a planted include elsewhere is caught)"
