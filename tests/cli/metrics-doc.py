#!/usr/bin/env python3
"""Usage: metrics-doc.py PAGE START LINES.jsonl [both]

Holds metrics lines (or a manifest) to the man page that documents them:
every key of the lines, and of the objects in them, must be named in the
page's block that begins with the line START, up to the next .It, .Ss or
.Sh at its level: by .Va or .Li, or, in a file's entry (.It Pa), as a
"key": of its literal display. With "both", every name there must also be
a key. The keys of "rewards" are reward functions' names and those of
"pass_at" the k of pass@k, so only their members count.
"""
import json
import re
import sys


def documented(page, start):
    lines = open(page).read().split("\n")
    i = lines.index(start)
    stop = (".It", ".Ss", ".Sh") if start.startswith(".It") else (".Ss", ".Sh")
    names = set()
    literal = False  # in a .Bd -literal display: its "quoted" keys count
    for line in lines[i + 1:]:
        if line.startswith(stop):
            break
        if line.startswith(".Bd -literal") or line.startswith(".Ed"):
            literal = line.startswith(".Bd")
            continue
        if literal:
            names.update(re.findall(r'"([a-z][a-z_]*)":', line))
            continue
        if not line.startswith(".") or start.startswith(".It Pa"):
            continue  # a file's entry (.It Pa) shows its keys in the display alone
        naming = False  # inside a .Va or .Li on this line, until another macro
        for w in line[1:].split():
            if re.fullmatch(r"[A-Z][a-z]{1,2}", w):
                naming = w in ("Va", "Li")
            elif naming and re.fullmatch(r"[a-z][a-z_]*", w):
                names.add(w)
    return names


def keys(v, out, parent=""):
    if isinstance(v, dict):
        for k, x in v.items():
            if parent not in ("rewards", "pass_at"):
                out.add(k)
            keys(x, out, k)
    elif isinstance(v, list):
        for x in v:
            keys(x, out, parent)


def main():
    page, start, path = sys.argv[1:4]
    names = documented(page, start)
    found = set()
    for line in open(path):
        keys(json.loads(line), found)
    bad = ["%s: key %s is not in the page's list" % (path, k) for k in sorted(found - names)]
    if sys.argv[4:] == ["both"]:
        bad += ["%s names %s, which no line holds" % (page, k) for k in sorted(names - found)]
    print("\n".join(bad) if bad else "%d keys, all documented" % len(found))
    return 1 if bad else 0


sys.exit(main())
