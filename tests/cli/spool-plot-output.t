#!/bin/sh
# grpo-spool plot writes its PNG all or nothing: gnuplot exits 0 when its
# writes fail (a full disk) and, when it cannot open its output, draws onto
# its standard output. A stand-in gnuplot (stub/gnuplot) plays the full disk;
# the real one, where installed, the missing directory.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 8
S="$T/spool"
mkdir -p "$S" "$T/stub"
echo '{"step":1,"kl":0.5,"grad_norm":3}' > "$S/step.jsonl"
# draws a PNG's signature and end (IEND) into the script's output, or with
# STUB_CUT only the signature, as a disk that filled up midway leaves it
cat > "$T/stub/gnuplot" <<'EOF'
#!/bin/sh
out=$(sed -n 's/^set output "\(.*\)"$/\1/p')
printf '\211PNG\r\n\032\n' > "$out"
[ -n "$STUB_CUT" ] || printf '\0\0\0\0IEND\256\102\140\202' >> "$out"
EOF
chmod +x "$T/stub/gnuplot"
stub() { PATH="$T/stub:$PATH" "$@"; }

echo 'the plot before' > "$T/run.png"
STUB_CUT=1 stub grpo-spool plot "$S" -o "$T/run.png" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/run.png: the image gnuplot drew was cut short (a full disk?); not written" \
	"an image cut short (a full disk) is an error, not exit 0"
is "$(cat "$T/run.png"):$(ls -A "$T" | grep -c '^\.run')" "the plot before:0" \
	"the plot drawn before is left as it was, and no temporary beside it"
stub grpo-spool plot "$S" -o "$T/run.png" 2> "$T/err"
is "$?:$(cat "$T/err"):$(wc -c < "$T/run.png" | tr -d ' ')" "0::20" "a whole image replaces it"

stub grpo-spool plot "$S" -o /dev/full 2> "$T/err"
is "$?:$(grep -c '/dev/full: .*No space left on device' "$T/err")" "1:1" "-o /dev/full: exit 1, said"
stub grpo-spool plot "$S" -o /dev/stdout 2> "$T/err" | od -An -tx1 | tr -d ' \n' > "$T/got"
is "$(cat "$T/got"):$(cat "$T/err")" "89504e470d0a1a0a0000000049454e44ae426082:" \
	"-o /dev/stdout writes the image into the pipe"
ln -s run.png "$T/link.png"
stub grpo-spool plot "$S" -o "$T/link.png" && [ -L "$T/link.png" ]
ok $? "-o a link draws its target, and the link stays"

stub grpo-spool plot "$S" -o "$T/nodir/run.png" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/nodir/run.png: cannot create: No such file or directory" \
	"-o in a missing directory names the image asked for, not its temporary"

if command -v gnuplot > /dev/null; then
	grpo-spool plot "$S" -o "$T/no/such/dir/run.png" > "$T/out" 2> "$T/err"
	is "$?:$(wc -c < "$T/out" | tr -d ' ')" "1:0" \
		"-o in a missing directory: exit 1, and no image on standard output ($(head -n 1 "$T/err"))"
else
	skip "no gnuplot"
fi
