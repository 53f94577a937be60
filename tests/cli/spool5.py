#!/usr/bin/env python3
"""A second reader of spool files, written from grpo-spool(5) alone.

Usage: spool5.py FILE.zst CAT.jsonl
       spool5.py --fields

Decodes FILE.zst (through `zstd -dc`) by the byte layout, tags and types
that man/grpo-spool.5 documents, and compares every record with the JSON
line grpo-cat printed for it in CAT.jsonl. Nothing here comes from the C
code: where the two disagree, the page or the code is wrong. Prints each
disagreement and exits 1; prints a summary and exits 0 when they agree.
"""
import json
import struct
import subprocess
import sys

# type number -> (name, element format, element size); None: not an array
TYPES = {
    1: ("I64", None, 8), 2: ("F32", None, 4), 3: ("STR", None, 0),
    4: ("I32S", "i", 4), 5: ("F32S", "f", 4), 6: ("U8S", "B", 1),
    7: ("U32S", "I", 4), 8: ("I64S", "q", 8), 9: ("NESTED", None, 0),
    10: ("STRS", None, 0), 11: ("IDS", None, 0),
}

# JSON names by tag, from the page's tables: (name, type)
GROUP = {1: ("group_id", "I64"), 2: ("prompt_tokens", "I32S"), 3: ("trajectory", "NESTED"),
         4: ("group_id", "STR")}
TRAJ = {
    1: ("prompt_tokens", "I32S"), 2: ("response_tokens", "I32S"), 3: ("logprobs", "F32S"),
    4: ("response_mask", "U8S"), 5: ("answer", "STR"), 6: ("sequence_id", "I64"),
    7: ("group_id", "I64"), 8: ("policy_version", "I64"), 9: ("temperature", "F32"),
    10: ("finish_reason", "I64"), 11: ("run", "STR"), 12: ("scored", "I64"),
    13: ("ref_logprobs", "F32S"), 14: ("rewards", "F32S"), 15: ("reward_names", "STRS"),
    16: ("advantages", "F32"), 17: ("successes", "F32"), 18: ("sequence_id", "STR"),
    19: ("group_id", "STR"), 20: ("successes", "F32S"), 21: ("finish_reason", "STR"),
}
MICROBATCH = {
    1: ("input_ids", "I32S"), 2: ("position_ids", "I32S"), 3: ("loss_mask", "U8S"),
    4: ("advantages", "F32S"), 5: ("inference_logprobs", "F32S"), 6: ("ref_logprobs", "F32S"),
    7: ("temperatures", "F32S"), 8: ("seq_lens", "U32S"), 9: ("sequence_ids", "I64S"),
    10: ("group_ids", "I64S"), 11: ("step", "I64"), 12: ("rank", "I64"), 13: ("index", "I64"),
    14: ("run", "STR"), 15: ("sequence_ids", "IDS"), 16: ("group_ids", "IDS"),
    17: ("prompt_lens", "U32S"), 18: ("policy_versions", "I64S"), 19: ("rewards", "F32S"),
    20: ("finish_reasons", "STRS"), 21: ("logprobs_missing", "U8S"),
}
FINISH = {0: None, 1: "stop", 2: "length"}
SEEN = set()  # name:TYPE[/planar] of every field decoded, for the caller to check its coverage


class Bad(Exception):
    pass


def array(data, fmt, size, planar):
    if len(data) % size:
        raise Bad("array of %d bytes is no whole number of %d-byte elements" % (len(data), size))
    n = len(data) // size
    if planar:  # byte k of element i at k * n + i
        data = bytes(data[k * n + i] for i in range(n) for k in range(size))
    return list(struct.unpack("<%d%s" % (n, fmt), data))


def strings(data):
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        out.append(data[at + 4:at + 4 + n].decode("utf-8"))
        at += 4 + n
    return out


def ids(data):
    out, at = [], 0
    while at < len(data):
        if data[at] == 0:
            out.append(struct.unpack_from("<q", data, at + 1)[0])
            at += 9
        elif data[at] == 1:
            (n,) = struct.unpack_from("<I", data, at + 1)
            out.append(data[at + 5:at + 5 + n].decode("utf-8"))
            at += 5 + n
        else:
            raise Bad("id kind byte %d" % data[at])
    return out


def fields(payload, table, label=""):
    """A field list -> [(name, value)] in file order; unknown tags skipped."""
    out, at = [], 0
    while at < len(payload):
        tag, typ, enc, n = struct.unpack_from("<HBBI", payload, at)
        data = payload[at + 8:at + 8 + n]
        if len(data) != n:
            raise Bad("field tag %d runs past its payload" % tag)
        at += 8 + n
        if typ not in TYPES:
            raise Bad("field tag %d: unknown type %d" % (tag, typ))
        tname, fmt, size = TYPES[typ]
        if tag not in table:
            continue
        name, want = table[tag]
        SEEN.add("%s%s:%s%s" % (label, name, tname, "/planar" if enc == 1 else ""))
        if tname != want:
            raise Bad("field %s (tag %d) has type %s, the page says %s" % (name, tag, tname, want))
        if enc not in (0, 1) or (enc == 1 and fmt is None):
            raise Bad("field %s: encoding %d on a %s" % (name, enc, tname))
        if fmt:
            value = array(data, fmt, size, enc == 1)
        elif tname == "I64":
            (value,) = struct.unpack("<q", data)
        elif tname == "F32":
            (value,) = struct.unpack("<f", data)
        elif tname == "STR":
            value = data.decode("utf-8")
        elif tname == "STRS":
            value = strings(data)
        elif tname == "IDS":
            value = ids(data)
        else:
            value = data  # NESTED: decoded by the caller
        out.append((name, value))
    return out


def trajectory(payload, shared_prompt):
    t = {"prompt_tokens": shared_prompt}
    scored = False
    single = None
    for name, v in fields(payload, TRAJ):
        if name == "finish_reason" and isinstance(v, int):
            v = FINISH[v]
        if name == "successes" and not isinstance(v, list):
            single = v  # 1.0's one number, taken below for one reward function only
            continue
        if name == "scored":
            scored = v == 1
            continue
        t[name] = v
    if single is not None and "successes" not in t and len(t.get("rewards", [])) == 1:
        t["successes"] = [single]
    if not scored:
        for k in ("ref_logprobs", "rewards", "reward_names", "advantages", "successes"):
            t.pop(k, None)
    # the JSON view's defaults for what the bytes leave out
    for k, v in (("sequence_id", -1), ("policy_version", -1), ("temperature", 1.0), ("logprobs", None)):
        t.setdefault(k, v)
    if t.get("finish_reason", 0) is None:
        del t["finish_reason"]
    return t


def group(payload):
    g = {"trajectories": []}
    shared = []
    for name, v in fields(payload, GROUP, "group."):
        if name == "prompt_tokens":
            shared = v
        elif name == "trajectory":
            g["trajectories"].append(trajectory(v, shared))
        else:
            g[name] = v
    for t in g["trajectories"]:
        t.setdefault("group_id", g.get("group_id", -1))
    return g


def records(content):
    if content[:4] != b"GRPO":
        raise Bad("no GRPO magic")
    major, minor, extra = struct.unpack_from("<HHI", content, 4)
    if major != 1:
        raise Bad("major version %d" % major)
    at = 12 + extra
    while at < len(content):
        kind, flags, n = struct.unpack_from("<IIQ", content, at)
        payload = content[at + 16:at + 16 + n]
        if len(payload) != n:
            raise Bad("record runs past the content")
        at += 16 + n
        if kind == 1:
            yield group(payload)
        elif kind == 2:
            mb = dict(fields(payload, MICROBATCH, "mb."))
            if "finish_reasons" in mb:  # empty when unknown, null in the JSON view
                mb["finish_reasons"] = [r or None for r in mb["finish_reasons"]]
            yield mb


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same(a, b):
    """a from the bytes, b from grpo-cat's JSON; floats as binary32."""
    if isinstance(a, float) or (isinstance(b, float) and isinstance(a, (int, float))):
        return b is not None and f32(a) == f32(b)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def compare(where, mine, cat, out):
    for k, v in mine.items():
        if k == "trajectories":
            ts = cat.get(k, [])
            if len(ts) != len(v):
                out.append("%s: %d trajectories, grpo-cat %d" % (where, len(v), len(ts)))
                continue
            for i, (a, b) in enumerate(zip(v, ts)):
                compare("%s trajectory %d" % (where, i), a, b, out)
        elif k not in cat:
            out.append("%s: %s in the bytes, not in grpo-cat's line" % (where, k))
        elif k in ("advantages", "temperatures") and isinstance(cat[k], list) and len(v) != len(cat[k]):
            out.append("%s: %s has %d entries in the bytes, %d tokens in grpo-cat's line (the page "
                       "says one per token)" % (where, k, len(v), len(cat[k])))
        elif not same(v, cat[k]):
            out.append("%s: %s is %.200r in the bytes, %.200r in grpo-cat's line" % (where, k, v, cat[k]))
    for k in cat:
        if k not in mine and k != "trajectories":
            out.append("%s: grpo-cat prints %s, which the bytes do not hold" % (where, k))


def main():
    if sys.argv[1] == "--fields":  # every field of the page's tables, as the summary names them
        for label, table in (("group.", GROUP), ("", TRAJ), ("mb.", MICROBATCH)):
            for name, typ in table.values():
                print("%s%s:%s" % (label, name, typ))
        return 0
    path, catpath = sys.argv[1], sys.argv[2]
    content = subprocess.run(["zstd", "-dcq", path], check=True, stdout=subprocess.PIPE).stdout
    with open(catpath) as f:
        cat = [json.loads(line) for line in f]
    mine = list(records(content))
    out = []
    if len(mine) != len(cat):
        out.append("%d records in the bytes, %d lines from grpo-cat" % (len(mine), len(cat)))
    for i, (a, b) in enumerate(zip(mine, cat)):
        compare("%s: record %d" % (path, i + 1), a, b, out)
    for line in out[:20]:
        print(line)
    if out:
        return 1
    print("%s: %d records agree; fields: %s" % (path, len(mine), " ".join(sorted(SEEN))))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Bad as e:
        print("%s: %s" % (sys.argv[1], e))
        sys.exit(1)
