# Regenerates tests/data/gsm8k-labelled.jsonl, the stand-in for issue 12's
# held-out set of model solutions labelled by people, from the GSM8K test set:
#
#   python3 tests/data/make_gsm8k_labelled.py ../shared/data/gsm8k/test.jsonl \
#       > tests/data/gsm8k-labelled.jsonl
#
# Committed output; deterministic (a fixed seed, no clock, no hash order).
#
# THE LABELS COME FROM CONSTRUCTION, NOT FROM PEOPLE, AND THE RESPONSES ARE
# WRITTEN BY THIS SCRIPT, NOT BY A MODEL. Each response is a real GSM8K
# problem's reference solution (its <<calculator>> notes removed) ending in
# one of the styles real models write their answer in; a "correct" response
# states the reference answer as its final answer, an "incorrect" one states
# something else (or nothing). A person would judge by the same rule: is the
# final answer the reference number? The set measures how the gsm8k reward
# reads these styles; it cannot measure styles nobody wrote here, and it was
# written by the same engineers who wrote the reward, so it is a floor on
# the check, not the check. Replace it with real labelled samples when any
# exist.
#
# Not in the set: a response whose only statement of the answer is followed
# by other numbers with no marker ("####", \boxed{}, "The answer is") to
# find it by, which the reward's last-number rule cannot read (the reference
# solutions' own final sentences are kept as they are, and a few are such);
# answers spelled in words; a response cut off after its answer was written.
#
# Each line: {"id", "source" (the test.jsonl line, from 1), "style",
# "label" ("correct" or "incorrect"), "answer" (the "#### N" line of the
# GSM8K answer, all the reward reads of it), "response"}.
import json
import random
import re
import sys

SEED = 20261126
PROBLEMS = 300          # problems drawn; three responses each
rng = random.Random(SEED)


def fmt(v):
    """A number as a model writes it: an integer without '.0'."""
    if v == int(v):
        return str(int(v))
    return ("%.2f" % v).rstrip("0").rstrip(".")


def thousands(v):
    if v == int(v):
        return "{:,}".format(int(v))
    return "{:,.2f}".format(v)


def steps(answer):
    """The reference solution's lines without the calculator notes, and the
    results of those notes in order (the intermediate values)."""
    body = answer.split("####")[0].strip()
    results = [r for r in re.findall(r"<<[^>=]*=([^>]*)>>", body)]
    vals = []
    for r in results:
        try:
            vals.append(float(r))
        except ValueError:
            pass
    exprs = re.findall(r"<<([^>=]*)=[^>]*>>", body)
    lines = [re.sub(r"<<[^>]*>>", "", l).strip() for l in body.split("\n")]
    return [l for l in lines if l], vals, exprs


def unit(question):
    """What the question counts: dollars when it asks how much money, else
    the noun after "How many" (a guess good enough for a final sentence)."""
    q = question.lower()
    last = q.rstrip("? ").split(".")[-1]
    if "percent" in last:
        return "%"
    m = re.search(r"how many ([a-z]+)", last)
    if m and m.group(1) not in ("more", "of", "times", "in", "total", "does", "do", "did", "will", "is"):
        return m.group(1)
    if "$" in question or "dollar" in q or "how much money" in q or "cost" in last or "pay" in last or "earn" in last:
        return "$"
    return ""


def with_unit(num, u):
    if u == "$":
        return "$" + num
    if u == "%":
        return num + "%"
    return num + (" " + u if u else "")


def times(line):
    """Models write products as *, x, × or \\times; vary it."""
    op = rng.choice([" * ", " × ", " x ", " * "])
    return line.replace(" * ", op)


def cot(lines):
    return "\n".join(times(l) for l in lines)


def think(lines):
    return "<think>\n" + "Okay, let me work through this.\n" + " ".join(lines) + "\n</think>\n\n"


# ---- the endings: each takes the value string s (already formatted) ----

def end_hash(s, ctx):
    return ctx["cot"] + "\n#### " + s


def end_boxed(s, ctx):
    return ctx["cot"] + "\n\nThe final answer is $\\boxed{" + s + "}$."


def end_qwen(s, ctx):
    return ctx["cot"] + "\n\nTherefore, the answer is \\(\\boxed{" + s + "}\\)."


def end_r1(s, ctx):
    return think(ctx["lines"]) + ctx["cot"] + "\n\n**Final Answer**\n\\[\n\\boxed{" + s + "}\n\\]"


def end_answer_is(s, ctx):
    return ctx["cot"] + "\nThe answer is " + s + "."


def end_answer_colon(s, ctx):
    return ctx["cot"] + "\nThe answer is: " + s


def end_bold(s, ctx):
    return ctx["cot"] + "\n\n**Answer:** " + s


def end_minerva(s, ctx):
    return ctx["cot"] + "\nFinal Answer: The final answer is $" + s + "$. I hope it is correct."


def end_xml(s, ctx):
    """The layout GRPO recipes ask for (willccbb's grpo_demo.py, open-r1)."""
    return "<reasoning>\n" + ctx["cot"] + "\n</reasoning>\n<answer>\n" + s + "\n</answer>"


def end_answer_plain(s, ctx):
    return ctx["cot"] + "\nAnswer: " + s


def end_units(s, ctx):
    return ctx["cot"] + "\nTherefore, the total comes to " + s + "."


SPECIAL = {"thousands-hash", "thousands-boxed", "thousands-latex-boxed", "thousands-answer-is", "thousands-bold",
           "negative-boxed", "negative-answer-is", "percent", "boxed-percent"}

ENDINGS = {"hash": end_hash, "boxed": end_boxed, "qwen-boxed": end_qwen, "r1-boxed": end_r1,
           "answer-is": end_answer_is, "answer-is-colon": end_answer_colon, "bold-answer": end_bold,
           "minerva": end_minerva, "final-sentence-units": end_units, "xml-answer": end_xml,
           "answer-plain": end_answer_plain}


def correct(p):
    """The correct responses this problem can give: (style, response)."""
    v, u, ctx = p["v"], p["unit"], p["ctx"]
    n = fmt(v)
    out = [
        ("hash", end_hash(n, ctx)),
        ("boxed", end_boxed(n, ctx)),
        ("qwen-boxed", end_qwen(n, ctx)),
        ("r1-boxed", end_r1(n, ctx)),
        ("boxed-decimal", end_boxed(n + ".00" if v == int(v) else n, ctx)),
        ("answer-is", end_answer_is(n, ctx)),
        ("answer-is-colon", end_answer_colon(n, ctx)),
        ("answer-is-bold", ctx["cot"] + "\nSo the answer is **" + n + "**."),
        ("bold-answer", end_bold(with_unit(n, u) if u in ("$", "%") else n, ctx)),
        ("minerva", end_minerva(n, ctx)),
        ("xml-answer", end_xml(n, ctx)),
        ("answer-plain", end_answer_plain(with_unit(n, u) if u == "$" else n, ctx)),
        ("final-sentence-units", end_units(with_unit(n, u), ctx)),
        ("restate-after-answer",
         end_answer_is(n, ctx) + "\n\nTo check: " + "; ".join(ctx["checks"]) + "."),
        ("restate-after-boxed",
         end_boxed(n, ctx) + "\n\nThis follows from " + " and ".join(ctx["checks"]) + "."),
        ("self-correction",
         ctx["cot"] + "\nWait, let me re-read the question. " + ctx["lines"][-1] +
         "\nSo the answer is " + n + "."),
    ]
    if ctx["last_line_has_answer"]:
        out.append(("reference-final-sentence", "\n".join(ctx["lines"])))
    if u == "$":
        out += [("boxed-dollar", end_boxed("\\$" + n, ctx)),
                ("boxed-text-units", end_boxed("\\text{" + n + " dollars}", ctx)),
                ("dollar-decimal", end_answer_is("$" + n + ".00" if v == int(v) else "$" + n, ctx))]
    elif u and u != "%":
        out += [("boxed-text-units", end_boxed(n + "\\text{ " + u + "}", ctx)),
                ("final-sentence-noun", ctx["cot"] + "\nIn the end there are " + n + " " + u + ".")]
    if u == "%":
        out += [("percent", end_answer_is(n + "%", ctx)),
                ("boxed-percent", end_boxed(n + "\\%", ctx))]
    if abs(v) >= 1000:
        t = thousands(v)
        out += [("thousands-hash", end_hash(t, ctx)),
                ("thousands-boxed", end_boxed(t, ctx)),
                ("thousands-latex-boxed", end_boxed(t.replace(",", "{,}"), ctx)),
                ("thousands-answer-is", end_answer_is(with_unit(t, u) if u == "$" else t, ctx)),
                ("thousands-bold", end_bold(with_unit(t, u) if u == "$" else t, ctx))]
    if ctx["expr"]:
        out.append(("answer-is-expression", ctx["cot"] + "\nSo the answer is " + ctx["expr"] + " = " + n + "."))
    if v < 0:
        out += [("negative-boxed", end_boxed(n, ctx)), ("negative-answer-is", end_answer_is(n, ctx))]
    return out


def wrong_number(p, kind):
    v = p["v"]
    if kind == "off-by-one":
        return v + rng.choice([-1, 1])
    if kind == "wrong-intermediate":
        cands = [x for x in p["vals"] if abs(x - v) > 1e-9]
        return cands[-1] if cands else None
    if kind == "wrong-sign":
        return -v if v != 0 else None
    if kind == "wrong-decimal":
        return v + 0.5
    if kind == "times-ten":
        return v * 10 if v != 0 else None
    return None


def incorrect(p):
    """The incorrect responses this problem can give: (style, response)."""
    v, u, ctx = p["v"], p["unit"], p["ctx"]
    out = []
    for kind in ("off-by-one", "wrong-intermediate", "wrong-sign", "wrong-decimal", "times-ten"):
        w = wrong_number(p, kind)
        if w is None:
            continue
        ending = rng.choice(sorted(ENDINGS))
        s = fmt(w)
        if ending == "bold-answer" and u == "$":
            s = "$" + s
        out.append((kind + "/" + ending, ENDINGS[ending](s, ctx)))
    # the right number mid-text, then one more (wrong) step and its result
    k = rng.choice([2, 3, 4])
    w = v - k if rng.random() < 0.5 or v == 0 else v * k
    ending = rng.choice(["answer-is", "boxed", "hash", "bold-answer", "final-sentence-units"])
    extra = ctx["cot"] + "\nBut we still have to take away the " + str(k) + " from the start: " + \
        fmt(v) + " - " + str(k) + " = " + fmt(v - k) + "." if w == v - k else \
        ctx["cot"] + "\nThis happens " + str(k) + " times, so " + fmt(v) + " * " + str(k) + " = " + fmt(w) + "."
    out.append(("right-mid-wrong-final/" + ending, ENDINGS[ending](fmt(w), dict(ctx, cot=extra))))
    # it stops one step short: the last line is missing, no final answer
    if len(ctx["lines"]) > 1 and not any(re.search(r"(?<![\d.])" + re.escape(x) + r"(?![\d])", ctx["lines"][-2])
                                         for x in (fmt(v), thousands(v))):
        out.append(("one-step-short", "\n".join(ctx["lines"][:-1])))
    out.append(("empty", ""))
    # cut off by the length limit inside the reasoning, before the answer is
    # first written (a response cut after it is left out: people would not
    # agree whether it answers)
    text = ctx["cot"]
    first = min([m.start() for x in {fmt(v), thousands(v)}
                 for m in re.finditer(r"(?<![\d.,])" + re.escape(x) + r"(?![\d,])", text)] + [len(text)])
    if first > 10:
        out.append(("truncated", text[:int(first * rng.uniform(0.3, 1.0))]))
    # a fraction left unfinished: the right numerator over a divisor
    out.append(("unfinished-fraction", end_boxed("\\frac{" + fmt(v) + "}{" + str(rng.choice([2, 3, 4, 5])) + "}", ctx)))
    out.append(("wrong-restated-after-answer",
                end_answer_is(fmt(v + rng.choice([-2, 2, 10])), ctx) + "\n\nTo check: " + "; ".join(ctx["checks"]) + "."))
    return out


def problem(i, row):
    gold = row["answer"].split("####")[-1].strip()
    v = float(gold.replace(",", ""))
    lines, vals, exprs = steps(row["answer"])
    checks = []
    for e, r in zip(exprs, vals):
        checks.append(e.replace("*", " * ").replace("+", " + ").replace("/", " / ") + " = " + fmt(r))
    if not checks:
        checks = [lines[0]]
    last = lines[-1] if lines else ""
    expr = None
    if exprs and vals and abs(vals[-1] - v) < 1e-9 and re.fullmatch(r"[0-9.+\-*/() ]+", exprs[-1]):
        expr = exprs[-1].replace("*", " * ").replace("+", " + ").replace("/", " / ").replace("-", " - ")
        expr = re.sub(r" +", " ", expr).strip()
    has = any(re.search(r"(?<![\d.,])" + re.escape(x) + r"(?![\d,])", last) for x in {fmt(v), thousands(v)})
    ctx = {"lines": lines, "cot": cot(lines), "checks": checks[:2], "expr": expr, "last_line_has_answer": has}
    return {"i": i, "gold": gold, "v": v, "vals": vals, "unit": unit(row["question"]), "ctx": ctx}


def main():
    rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
    # every problem whose answer is negative, has a thousands separator or asks
    # for a percentage, then a random draw of the rest
    special = [i for i, r in enumerate(rows)
               if re.search(r"####\s*-|####.*,", r["answer"]) or "percent" in r["question"].lower().split(".")[-1]]
    rest = [i for i in range(len(rows)) if i not in special]
    chosen = sorted(special + rng.sample(rest, PROBLEMS - len(special)))
    n = 0
    for i in chosen:
        p = problem(i, rows[i])
        c = correct(p)
        w = incorrect(p)
        # a problem with a negative, large or percentage answer gives one of
        # its two correct responses in a style made for it
        special = [x for x in c if x[0].split("-")[0] in ("thousands", "negative", "percent", "boxed")
                   and x[0] in SPECIAL]
        first = rng.choice(special) if special else rng.choice(c)
        second = rng.choice([x for x in c if x[0] != first[0]])
        picks = [("correct",) + first, ("correct",) + second, ("incorrect",) + rng.choice(w)]
        for label, style, resp in picks:
            n += 1
            print(json.dumps({"id": "gsm8k-test-%04d/%s" % (i + 1, style.split("/")[0]), "source": i + 1,
                              "style": style, "label": label, "answer": "#### " + p["gold"], "response": resp},
                             ensure_ascii=False))


main()
