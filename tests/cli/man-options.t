#!/bin/sh
# Every option a tool accepts (its getopt_long table) is in its man page, and
# so is every option its --help shows: a reader of grpo-X(1) finds what the
# program takes. The page is read as mandoc renders it, so that `Fl Fl x`,
# `Fl -x` and `-x` after a `|` all count.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v mandoc > /dev/null || skip_all "no mandoc to render the man pages"
plan 14
for t in cat collect init pack score spool step; do
	grep -oE '\{ *"[a-z][a-z0-9-]*", *(required_argument|no_argument|optional_argument|[012]) *,' \
		"$GRPO_TOP/tools/grpo-$t.c" | sed -E 's/^\{ *"([^"]*)".*/--\1/' | sort -u > "$T/src"
	grpo-$t --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u > "$T/help"
	mandoc -Tmarkdown "$GRPO_TOP/man/grpo-$t.1" | sed 's/-&#45;/--/g' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u > "$T/man"
	# the table read, so that an empty one cannot pass
	n=$(wc -l < "$T/src" | tr -d ' ')
	[ "$n" -ge 5 ] || n="only $n"
	is "$n:$(comm -23 "$T/src" "$T/man" | tr '\n' ' ')" "$n:" "grpo-$t(1) names every option grpo-$t accepts"
	is "$(comm -23 "$T/help" "$T/man" | tr '\n' ' ')" "" "grpo-$t(1) names every option of grpo-$t --help"
done
