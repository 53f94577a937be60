// tokdiff.mjs: grpo-cat --encode/--decode against Hugging Face tokenizers
// (the Rust library, through its Node binding, npm "tokenizers") and,
// for a second opinion, transformers.js. A maintainer's tool, run by hand;
// see README. Deterministic: the cases come from a fixed seed.
//
//   node tokdiff.mjs --modules DIR --grpo-cat PATH --tokenizers DIR [--out DIR] [--quick]
//
// DIR of --modules holds node_modules with tokenizers and, optionally,
// @huggingface/transformers. --tokenizers DIR has one folder per tokenizer
// (qwen3/, llama3/) holding tokenizer.json; --out defaults to $TMPDIR/tokdiff. Exit 0 when grpo-cat agrees with
// the Rust library on every case; the differences are written under --out.
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = {};
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	if (a === '--quick') args.quick = true;
	else args[a.replace(/^--/, '')] = process.argv[++i];
}
for (const k of ['modules', 'grpo-cat', 'tokenizers'])
	if (!args[k]) {
		console.error(`usage: node tokdiff.mjs --modules DIR --grpo-cat PATH --tokenizers DIR [--out DIR] [--quick]`);
		process.exit(2);
	}
const out = args.out || path.join(os.tmpdir(), 'tokdiff');   // never inside the tree
fs.mkdirSync(out, { recursive: true });
const req = createRequire(path.resolve(args.modules, 'package.json'));
const { Tokenizer } = req('tokenizers');
let tjs = null;
try {
	tjs = await import(pathToFileURL(req.resolve('@huggingface/transformers')).href);
	tjs.env.allowRemoteModels = false;
	tjs.env.localModelPath = path.resolve(args.tokenizers) + '/';
} catch (e) {
	console.error(`(no transformers.js: ${e.message.split('\n')[0]})`);
}

// ---- cases ----
let seed = 0x9e3779b9;
function rnd() {   // mulberry32
	seed = (seed + 0x6d2b79f5) | 0;
	let t = seed;
	t = Math.imul(t ^ (t >>> 15), t | 1);
	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ri = (n) => Math.floor(rnd() * n);
const pick = (a) => a[ri(a.length)];
const cp = (c) => String.fromCodePoint(c);
const range = (lo, hi) => () => cp(lo + ri(hi - lo + 1));

const scripts = {
	latin: range(0x41, 0x7a), latin1: range(0xc0, 0xff), latinext: range(0x100, 0x24f),
	ipa: range(0x250, 0x2af), greek: range(0x391, 0x3c9), cyrillic: range(0x410, 0x44f),
	armenian: range(0x531, 0x556), hebrew: range(0x5d0, 0x5ea), arabic: range(0x621, 0x64a),
	arabicmarks: range(0x64b, 0x65f), devanagari: range(0x900, 0x97f), bengali: range(0x985, 0x9b9),
	tamil: range(0xb85, 0xbb9), thai: range(0xe01, 0xe5b), lao: range(0xe81, 0xeb0),
	tibetan: range(0xf40, 0xf6c), myanmar: range(0x1000, 0x102a), georgian: range(0x10d0, 0x10fa),
	hangul: range(0xac00, 0xd7a3), jamo: range(0x1100, 0x11ff), ethiopic: range(0x1200, 0x135a),
	cherokee: range(0x13a0, 0x13f4), khmer: range(0x1780, 0x17dd), mongolian: range(0x1800, 0x18aa),
	hiragana: range(0x3041, 0x3096), katakana: range(0x30a1, 0x30fa), cjk: range(0x4e00, 0x9fff),
	cjkext: range(0x20000, 0x2a6df), fullwidth: range(0xff01, 0xff5e), halfwidth: range(0xff61, 0xff9f),
	combining: range(0x300, 0x36f), mathalnum: range(0x1d400, 0x1d7ff), runic: range(0x16a0, 0x16f8),
	emoji: range(0x1f300, 0x1faff), symbols: range(0x2000, 0x2bff), pua: range(0xe000, 0xe0ff),
	syriac: range(0x710, 0x74f), nko: range(0x7c0, 0x7fa), sinhala: range(0xd85, 0xdf4),
	vai: range(0xa500, 0xa62b), digitsany: () => pick(['٣', '۴', '߅', '३', '৭', '๕', '０', '𝟘', '²', '½', 'Ⅻ', '〇', '①', '𐒠']),
};
const specials = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>',
	'<|eot_id|>', '<|begin_of_text|>', '<|start_header_id|>', '<|end_header_id|>', '<|reserved_special_token_5|>',
	'<|fim_prefix|>', '<|im_start', 'im_end|>', '<|eot_id', '<<|im_end|>>', '<|<|eot_id|>|>'];
const spaces = [' ', '  ', '\t', '\n', '\r\n', '\r', '\v', '\f', '\u0085', '\u00a0', '\u1680', '\u2000', '\u200a',
	'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u200b', '\u180e', '\u001c', '\u001f'];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE", "'VE",
	"'M", "'LL", "'Ll", "'D", "\u2019s", "\u2019ll", "'ſ", "'\u212a", "'x", "''", "'", "'l", "'r"];
const emojiSeq = ['👩‍👩‍👧‍👦', '👨🏽‍💻', '🏳️‍🌈', '🇯🇵', '🇺🇸🇬🇧', '❤️', '✋🏿', '🧑‍🤝‍🧑', '👁️‍🗨️', '#️⃣', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '😀'];
const words = ['the', 'The', 'HELLO', 'don', 'it', 'I', 'naïve', 'café', 'Straße', 'résumé', 'x', 'snake_case',
	'camelCase', 'über', 'Ω', 'İstanbul', 'ﬁnance', 'ǅ', 'ß', 'Σίσυφος', 'Привет', 'مرحبا', 'שלום', 'नमस्ते',
	'สวัสดี', '你好', 'こんにちは', '안녕하세요', 'ภาษาไทย', 'ᄀᄁ', 'e\u0301', 'a\u0308\u0301', 'n\u0303',
	'\u1100\u1161\u11a8', 'A\u030a', '\u212b', 'Å', 'q\u0307\u0323', 'ḍ\u0307'];
const punct = ['.', ',', '!', '?', ';', ':', '-', '--', '...', '(', ')', '[', ']', '{', '}', '"', '`', '~', '@',
	'#', '$', '%', '^', '&', '*', '+', '=', '<', '>', '/', '\\', '|', '_', '«', '»', '“', '”', '—', '–', '…', '。',
	'、', '，', '！', '¿', '¡', '§', '©', '€', '£', '→', '∑', '√', '∞', '😀', '\u00ad', '\u200d', '\u2060'];
function digits(n) {
	let s = String(1 + ri(9));
	for (let i = 1; i < n; i++) s += ri(10);
	return s;
}
function number() {
	const n = 1 + ri(40);
	const d = digits(n);
	switch (ri(8)) {
	case 0: return d.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	case 1: return d.replace(/\B(?=(\d{3})+(?!\d))/g, pick(['.', ' ', "'", '_', '\u202f', '\u00a0']));
	case 2: return '-' + d + '.' + digits(1 + ri(6));
	case 3: return d + 'e-' + ri(30);
	case 4: return '$' + d;
	case 5: return d + '%';
	default: return d;
	}
}
function piece() {
	switch (ri(13)) {
	case 0: return pick(words);
	case 1: return pick(punct);
	case 2: return pick(spaces).repeat(1 + (ri(4) ? 0 : ri(6)));
	case 3: return number();
	case 4: return pick(contractions);
	case 5: return pick(emojiSeq);
	case 6: return ri(6) ? '' : pick(specials);
	case 7: { const f = pick(Object.values(scripts)); let s = ''; for (let k = 1 + ri(6); k; k--) s += f(); return s; }
	case 8: return ' ' + pick(words);
	case 9: return String.fromCodePoint(1 + ri(0x7f));
	case 10: { const c = ri(0x30000); return c >= 0xd800 && c < 0xe000 ? 'z' : cp(c || 1); }
	default: return ' ';
	}
}
function randomText() {
	let s = '';
	for (let k = 1 + ri(ri(3) ? 12 : 60); k; k--) s += piece();
	return s;
}

const cases = [];   // [kind, text]
const add = (kind, s) => { if (!s.includes('\u0000')) cases.push([kind, s]); };
const gsm = (f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const gdir = path.resolve(args.tokenizers, '../gsm8k');
if (fs.existsSync(gdir + '/test.jsonl')) {
	const rows = gsm(gdir + '/test.jsonl').concat(args.quick ? [] : gsm(gdir + '/train.jsonl').slice(200, 1200));
	for (const r of rows.slice(0, args.quick ? 100 : undefined)) {
		add('gsm8k', r.question);
		add('gsm8k', r.answer);
	}
}
// code and text: this repository's own sources and man pages, in chunks of lines
const top = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
for (const d of ['lib/model', 'lib/base', 'tools', 'man', 'tests/cli']) {
	for (const f of fs.readdirSync(path.join(top, d)).sort()) {
		if (!fs.statSync(path.join(top, d, f)).isFile()) continue;
		const lines = fs.readFileSync(path.join(top, d, f), 'utf8').split('\n');
		for (let i = 0; i < lines.length; i += 25)
			add('code', lines.slice(i, i + 25).join(ri(4) ? '\n' : '\r\n'));
	}
}
for (const [name, f] of Object.entries(scripts))
	for (let k = 0; k < 8; k++) {
		let s = '';
		for (let m = 1 + ri(30); m; m--) s += f() + (ri(4) ? '' : pick([' ', '\n', ', ', '1', ' 12']));
		add('script:' + name, s);
	}
for (const e of emojiSeq) add('emoji', e + ' ' + e + e + 'x' + e + '\n' + e);
for (let n = 1; n <= 40; n++) {
	const d = digits(n);
	for (const w of [d, ' ' + d, 'x' + d, d + 'x', '-' + d, d + '.' + d, '٣' + d, d + '٣٤٥'])
		add('digits', w);
}
for (let k = 0; k < 200; k++) add('number', number() + pick([' ', ', ', '']) + number());
for (const c of contractions)
	for (const w of ['it', 'IT', '', ' ', '1', 'x '])
		for (const tail of ['', 'x', ' ', 'e', 'l', 'ex', '\n'])
			add('contraction', w + c + tail);
for (const a of spaces)
	for (const b of ['', ...spaces.slice(0, 8)])
		for (let n = 1; n <= 5; n++)
			for (const [pre, post] of [['', ''], ['x', ''], ['', 'x'], ['x', 'y'], ['', '!'], ['.', '1']])
				add('space', pre + (a + b).repeat(n) + post);
for (let n = 1; n <= 70; n++)
	for (const s of [' ', '\n', '\r\n', '\t', ' \n', '\n ', '\t\n'])
		add('run', s.repeat(n) + (n % 3 ? 'word' : '') + s.repeat(n % 5));
for (const s of specials)
	for (const [a, b] of [['', ''], ['x', 'y'], [' ', ' '], ['\n', '\n'], ['hello ', ' world'], ['', s]])
		add('special', a + s + b);
for (const n of [100, 1000, 10000, 100000]) {
	add('long', 'a'.repeat(n));
	add('long', 'ab'.repeat(n / 2));
	add('long', ' '.repeat(n) + 'x');
	add('long', '\n'.repeat(n));
	add('long', digits(n));
	add('long', '中'.repeat(n));
	add('long', '!'.repeat(n));
	add('long', '😀'.repeat(n / 4));
	let s = '';
	while (s.length < n) s += scripts.latin();
	add('long', s);
}
for (let k = 0; k < (args.quick ? 300 : 4000); k++) add('random', randomText());
// runs of combining marks of every age (canonical ordering, composition, NFC's
// Unicode version), and every canonical pair NFC composes, after a letter
const marks = [range(0x300, 0x36f), range(0x591, 0x5c7), range(0x610, 0x61a), range(0x64b, 0x65f),
	range(0x898, 0x89f), range(0x8ca, 0x8e1), range(0x1ab0, 0x1ace), range(0x1dc0, 0x1dff), range(0x20d0, 0x20f0),
	range(0x302a, 0x302f), range(0x1e130, 0x1e136), () => pick(['\u0323', '\u0316', '\u0334', '\u0345', '\u05b0'])];
for (let k = 0; k < (args.quick ? 100 : 2000); k++) {
	let s = pick(['a', 'e', 'o', 'A', 'ب', 'x', 'ᄀ', '가', ' ', '1', '']);
	for (let m = 1 + ri(k < 1900 ? 6 : 300); m; m--) s += pick(marks)();
	add('marks', s + pick(['', ' ', 'b', 'a\u0301']));
}
for (let c = 0xc0; c < 0x30000; c++) {
	if (c >= 0xd800 && c < 0xe000) continue;
	const d = cp(c).normalize('NFD');
	if (d.length > 1 && d !== cp(c)) add('compose', 'x' + d + ' ' + d.normalize('NFC') + ' ' + d);
}
// every code point, a block of 32 a case, in contexts that reach each alternative of the regex
if (!args.quick)
	for (let lo = 1; lo < 0x110000; lo += 32) {
		if (lo >= 0xd800 && lo < 0xe000) continue;
		let s = '';
		for (let c = lo; c < lo + 32 && c < 0x110000; c++) {
			if (c >= 0xd800 && c < 0xe000) continue;
			const x = cp(c);
			s += 'a' + x + ' ' + x + 'b' + x + x + '1' + x + '\n' + x + "'s ";
		}
		add('codepoint', s);
	}

// ---- encode ----
const names = fs.readdirSync(args.tokenizers).filter((n) => fs.existsSync(path.join(args.tokenizers, n, 'tokenizer.json')));
const file = (n) => path.join(args.tokenizers, n, 'tokenizer.json');
let bad = 0;
const summary = [];

// grpo-cat stops at its first bad line, having printed the lines before it:
// that line's answer is the error, and the rest goes in again.
function grpo(mode, tk, lines) {
	const res = [];
	while (res.length < lines.length) {
		const r = spawnSync(args['grpo-cat'], ['--tokenizer', file(tk), '--' + mode], {
			input: lines.slice(res.length).join('\n') + '\n', maxBuffer: 1 << 30, encoding: 'utf8' });
		res.push(...r.stdout.split('\n').slice(0, -1));
		if (r.status === 0)
			break;
		if (r.status !== 1 || res.length >= lines.length)
			throw new Error(`grpo-cat --${mode} (${tk}): exit ${r.status}: ${r.stderr}`);
		res.push('ERROR ' + r.stderr.trim());
	}
	return res;
}

for (const tk of names) {
	const rust = Tokenizer.fromFile(file(tk));
	const js = tjs ? await tjs.AutoTokenizer.from_pretrained(tk) : null;
	const ours = grpo('encode', tk, cases.map(([, s]) => JSON.stringify(s)));
	const ref = (await rust.encodeBatch(cases.map(([, s]) => s), { addSpecialTokens: false })).map((e) => JSON.stringify(e.getIds()));
	const diffs = [], jsdiffs = [];
	for (let i = 0; i < cases.length; i++) {
		const jsids = js ? JSON.stringify(js.encode(cases[i][1], { add_special_tokens: false })) : ref[i];
		if (ours[i] !== ref[i])
			diffs.push({ kind: cases[i][0], text: cases[i][1], ours: ours[i], hf: ref[i], transformers_js: jsids });
		if (jsids !== ref[i])
			jsdiffs.push({ kind: cases[i][0], text: cases[i][1], hf: ref[i], transformers_js: jsids, ours: ours[i] });
	}
	fs.writeFileSync(`${out}/${tk}.encode.diff.jsonl`, diffs.map((d) => JSON.stringify(d) + '\n').join(''));
	fs.writeFileSync(`${out}/${tk}.encode.jsdiff.jsonl`, jsdiffs.map((d) => JSON.stringify(d) + '\n').join(''));
	summary.push(`${tk} encode: ${cases.length} cases, grpo-cat differs from tokenizers on ${diffs.length}` +
		(js ? `, transformers.js on ${jsdiffs.length}` : ''));
	bad += diffs.length;

	// ---- decode: random ids, added tokens, lone bytes that make partial UTF-8 ----
	const vsize = rust.getVocabSize(true);
	const added = Object.values(rust.getVocab(true)).filter((id) => id >= rust.getVocabSize(false));
	const byteTok = [];   // ids of the single byte tokens 0x80..0xFF, which alone are partial UTF-8
	for (let b = 0x80; b < 0x100; b++) {
		const ch = b >= 0xa1 && b !== 0xad ? cp(b) : cp(0x100 + (b < 0xa1 ? 33 + b - 0x7f : 67));
		const id = rust.tokenToId(ch);
		if (id !== null) byteTok.push(id);
	}
	const seqs = [];
	for (let k = 0; k < (args.quick ? 300 : 5000); k++) {
		const n = ri(40);
		const v = [];
		for (let j = 0; j < n; j++) {
			const r = ri(10);
			v.push(r < 5 ? ri(vsize) : r < 8 ? pick(byteTok) : r < 9 ? pick(added) : pick([0, vsize - 1, ...added.slice(0, 3)]));
		}
		seqs.push(v);
	}
	const oursD = grpo('decode', tk, seqs.map((v) => JSON.stringify(v)));
	const refD = (await rust.decodeBatch(seqs, false)).map((s) => JSON.stringify(s));
	const ddiffs = [];
	for (let i = 0; i < seqs.length; i++) {
		const jst = js && seqs[i].length ? JSON.stringify(js.decode(seqs[i], { skip_special_tokens: false, clean_up_tokenization_spaces: false })) : refD[i];
		if (JSON.parse(oursD[i]) !== JSON.parse(refD[i]) || jst !== refD[i])
			ddiffs.push({ ids: seqs[i], ours: oursD[i], hf: refD[i], transformers_js: jst });
	}
	const mine = ddiffs.filter((d) => JSON.parse(d.ours) !== JSON.parse(d.hf)).length;
	fs.writeFileSync(`${out}/${tk}.decode.diff.jsonl`, ddiffs.map((d) => JSON.stringify(d) + '\n').join(''));
	summary.push(`${tk} decode: ${seqs.length} sequences, grpo-cat differs from tokenizers on ${mine}` +
		(js ? `, transformers.js on ${ddiffs.length - mine} more` : ''));
	bad += mine;
}
// ---- chat prompts: transformers.js renders the model's own Jinja template ----
// (the Rust library has no templates). Its Jinja strips all white space in
// lstrip('\n') and strip('\n') where Python strips newlines only, so the
// contents here never begin or end with other white space.
if (tjs)
	for (const tk of names) {
		const js = await tjs.AutoTokenizer.from_pretrained(tk);
		if (!js.chat_template) continue;
		const bits = ['hi', '\n', '\n\n', '<think>', '</think>', 'reason', 'answer', '<tool_response>',
			'</tool_response>', 'x', 'x  pad  x', 'x\tx', '<|im_end|>', '<|eot_id|>'];
		const convs = [];
		for (let i = 0; i < (args.quick ? 300 : 3000); i++) {
			const msgs = [];
			for (let j = 1 + ri(5); j; j--) {
				let c = '';
				for (let k = ri(7); k; k--) c += pick(bits);
				msgs.push({ role: !msgs.length && ri(3) === 0 ? 'system' : pick(['user', 'assistant', 'user', 'system']), content: c });
			}
			const o = { messages: msgs };
			if (ri(3) === 0) o.enable_thinking = ri(2) === 0;
			convs.push(o);
		}
		const r = spawnSync(args['grpo-cat'], ['--chat', tk], { input: convs.map((c) => JSON.stringify(c)).join('\n') + '\n', encoding: 'utf8' });
		const ours = r.stdout.split('\n');
		const cdiffs = [];
		convs.forEach((c, i) => {
			const ref = js.apply_chat_template(c.messages, { tokenize: false, add_generation_prompt: true,
				...('enable_thinking' in c ? { enable_thinking: c.enable_thinking } : {}) });
			if (ours[i] === undefined || JSON.stringify(ref) !== JSON.stringify(JSON.parse(ours[i])))
				cdiffs.push({ conversation: c, ours: ours[i], transformers_js: ref });
		});
		fs.writeFileSync(`${out}/${tk}.chat.jsdiff.jsonl`, cdiffs.map((d) => JSON.stringify(d) + '\n').join(''));
		summary.push(`${tk} --chat ${tk}: ${convs.length} conversations, grpo-cat differs from transformers.js's template on ${cdiffs.length}`);
		bad += cdiffs.length;
	}
console.log(summary.join('\n'));
console.log(`differences in ${out}/*.diff.jsonl (grpo-cat vs tokenizers), *.jsdiff.jsonl (transformers.js vs tokenizers)`);
process.exit(bad ? 1 : 0);
