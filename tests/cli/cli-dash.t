#!/bin/sh
# "-" where a tool takes a path: standard output where it can be (--metrics
# of grpo-score and grpo-pack with -o, grpo-collect --responses with -o,
# grpo-spool plot -o), a usage error where standard output carries the
# tool's data already or where a directory is meant (-o QUEUE, --archive);
# standard input for an input (grpo-spool plot --metrics). Never a file or
# a directory named "-": each runs in a directory that must not get one.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 23
mkdir "$T/cwd"
cd "$T/cwd" || exit 1
no_dash() { [ ! -e "$T/cwd/-" ]; }

grpo-collect "$GRPO_TOP/examples/vllm-completions.jsonl" > "$T/r.zst" 2> /dev/null &&
	grpo-score -r length -m 100 "$T/r.zst" > "$T/s.zst" 2> /dev/null
ok $? "the inputs"

# metrics on standard output, the data published with -o
grpo-score -r length -m 100 --metrics - -o "$T/scored" "$T/r.zst" > "$T/out" 2> /dev/null
is "$?:$(grep -c '^{"input":' "$T/out")" "0:1" "grpo-score -o Q --metrics -: the metrics line on standard output"
no_dash; ok $? "grpo-score --metrics -: no file named -"
grpo-pack -T 256 --metrics - -o "$T/batches" "$T/s.zst" > "$T/out" 2> /dev/null
is "$?:$(grep -c '^{"step":1,' "$T/out")" "0:1" "grpo-pack -o Q --metrics -: the metrics line on standard output"
no_dash; ok $? "grpo-pack --metrics -: no file named -"

# without -o standard output carries the data: refused
grpo-score -r length -m 100 --metrics - "$T/r.zst" > "$T/out" 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-score: --metrics -: without -o standard output carries the scored groups; give -o QUEUE or --metrics FILE" \
	"grpo-score --metrics - without -o: a usage error"
grpo-pack -T 256 --metrics - "$T/s.zst" > "$T/out" 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-pack: --metrics -: without -o standard output carries the micro-batches; give -o QUEUE or --metrics FILE" \
	"grpo-pack --metrics - without -o: a usage error"
grpo-collect --server http://127.0.0.1:9 --prompts "$T/none.jsonl" --responses - > "$T/out" 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-collect: --responses -: without -o standard output carries the rollout groups; give -o QUEUE or --responses FILE" \
	"grpo-collect --responses - without -o: a usage error"
grpo-step --batches "$T/batches" -o "$T/policy" --metrics - --debug-table - > "$T/out" 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-step: --metrics - and --debug-table - would mix on standard output: give one a FILE" \
	"grpo-step: --metrics - and --debug-table - together: a usage error"

# a directory cannot be standard output
dir="a directory, which standard output ('-') cannot be"
for c in "grpo-collect|-s 1 -o - $T/none.jsonl" "grpo-score|-r length -m 5 -o - $T/none.zst" \
	"grpo-pack|-T 8 -o - $T/none.zst" "grpo-step|--batches $T/batches -o -" "grpo-init|--preset tiny -o -"; do
	tool=${c%%|*}
	$tool ${c#*|} < /dev/null > /dev/null 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err")" "2:$tool: -o: expected $dir, got '-'" "$tool -o -: a usage error"
done
grpo-spool gc "$T/batches" --keep-last 1 --archive - 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-spool: --archive: expected $dir, got '-'" "grpo-spool gc --archive -: a usage error"
no_dash; ok $? "none of them made a -"

# grpo-spool plot -o -: the image on standard output, drawn by a stand-in
# gnuplot (as spool-plot-output.t's) into a file or a pipe
mkdir -p "$T/stub" "$T/spool"
echo '{"step":1,"kl":0.5,"grad_norm":3}' > "$T/spool/step.jsonl"
cat > "$T/stub/gnuplot" <<'EOF'
#!/bin/sh
out=$(sed -n 's/^set output "\(.*\)"$/\1/p')
printf '\211PNG\r\n\032\n\0\0\0\0IEND\256\102\140\202' > "$out"
EOF
chmod +x "$T/stub/gnuplot"
PATH="$T/stub:$PATH" grpo-spool plot "$T/spool" -o - 2> "$T/err" | od -An -tx1 | tr -d ' \n' > "$T/got"
is "$(cat "$T/got"):$(cat "$T/err")" "89504e470d0a1a0a0000000049454e44ae426082:" "grpo-spool plot -o -: the image into the pipe"
PATH="$T/stub:$PATH" grpo-spool plot "$T/spool" -o - > "$T/out.png" 2> "$T/err"
is "$?:$(wc -c < "$T/out.png" | tr -d ' '):$(find "$T/cwd" "$T/spool" -mindepth 1 \( -name - -o -name '*tmp*' \) | wc -l | tr -d ' ')" "0:20:0" \
	"grpo-spool plot -o - > FILE: the image in FILE, no file named - nor a temporary left"

# grpo-collect --server --responses - with -o: the answers on standard output
# (tests/cli/fake-server.py answers), the rollouts published
if command -v python3 > /dev/null; then
	fake_server "$T/server"
	printf '{"prompt":"1+1=","answer":"2"}\n{"prompt":"2+2=","answer":"4"}\n' > "$T/p.jsonl"
	grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --responses - -o "$T/rq/rollouts" > "$T/out" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(grep -c '"response"' "$T/out"):$(find "$T/rq" -name '*.zst' | wc -l | tr -d ' ')" "0::2:1" \
		"grpo-collect -o Q --responses -: a line per prompt on standard output, the rollouts published"
	grpo-collect -s 0 "$T/out" | grpo-cat --stats | sed -n 's/^records *\([0-9]*\).*/\1/p' > "$T/got"
	is "$(cat "$T/got")" 2 "what --responses - wrote imports as the 2 groups"
	no_dash; ok $? "grpo-collect --responses -: no file named -"
else
	for i in 1 2 3; do skip "no python3 for the fake server"; done
fi

# grpo-spool plot --metrics -: standard input, not a file named - (there is one here)
mkdir "$T/decoy"
echo '{"step":7,"kl":0.25,"grad_norm":1}' > "$T/decoy/-"
(cd "$T/decoy" && echo '{"step":1,"kl":0.5,"grad_norm":3}' | grpo-spool plot "$T/none" --metrics - --tsv) \
	2> "$T/err" | cut -f1,2 | tr '\t\n' ', ' > "$T/got"
is "$(cat "$T/got"):$(cat "$T/err")" "step,kl 1,0.5 :" "grpo-spool plot --metrics -: the lines of standard input"
echo 'not json' | grpo-spool plot "$T/none" --metrics - --tsv > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: <stdin>:1: not a JSON object" "grpo-spool plot --metrics -: a bad line named <stdin>:LINE"
exit $_failed
