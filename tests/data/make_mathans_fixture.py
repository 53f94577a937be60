# Regenerates tests/data/mathans-sympy.jsonl, the second oracle of the math
# reward's comparison (lib/score/mathans.c; test_mathans reads the file):
#
#   python3 tests/data/make_mathans_fixture.py > tests/data/mathans-sympy.jsonl
#
# Committed output; deterministic (a fixed seed, no clock, no hash order).
# Needs sympy (Debian: python3-sympy), only to regenerate.
#
# Each pair is two LaTeX answers, nearly always as sympy's own printer
# writes them (latex()), so the C parser meets a printer it was not written
# against: \left( \right), \sin{\left(x \right)}, x^{2} y, - \frac{x}{2},
# \left[\begin{matrix}...\end{matrix}\right], \left\{...\right\}. The label
# is sympy's: two expressions are equal when simplify(a - b) is 0, sets and
# intervals when sympy's objects are equal, matrices entry by entry. Only
# relations are labelled by construction (an equation times any k != 0 is
# the same equation, an inequality times k > 0 the same inequality, times
# k < 0 its flip), since sympy does not compare relations that way.
#
# Left out, as the comparison's sampling at negative points would rightly
# disagree with sympy's assumptions: square roots and logarithms of
# variables (sympy's sqrt(x)**2 is x), and exp (sympy's e is a constant,
# the parser's a variable).
#
# Each line: {"a", "b", "equal" (true/false), "what" (the kind of pair)}.
import json
import random
import sys

import sympy as sp
from sympy import Rational as R

x, y = sp.symbols("x y", real=True)
rng = random.Random(20261129)
out = []


def emit(a, b, equal, what):
    out.append({"a": a, "b": b, "equal": bool(equal), "what": what})


def same(e, f):
    return sp.simplify(e - f) == 0


def coeff():
    return rng.choice([-3, -2, -1, 1, 2, 3, 4, 5])


def rational():
    return R(rng.randint(-30, 30), rng.choice([1, 2, 3, 4, 5, 6, 8, 10, 12]))


def plain(q):
    """A rational as a person might write it: a decimal when it ends, else p/q."""
    if q.q == 1 or all(p in (2, 5) for p in sp.factorint(q.q)):
        return str(sp.Float(q, 15)).rstrip("0").rstrip(".")
    return "%d/%d" % (q.p, q.q)


def poly(var, degree):
    return sum(coeff() * var**k for k in range(degree + 1))


def algebra():
    for i in range(80):
        kind = i % 4
        if kind == 0:   # a product of linear factors
            e = sp.Mul(*[(x + rng.randint(-4, 4)) for _ in range(rng.randint(2, 3))], evaluate=False) * coeff()
        elif kind == 1:   # two variables
            e = (coeff() * x + coeff() * y) ** 2 + coeff() * x * y
        elif kind == 2:   # a rational function
            e = poly(x, 2) / (x + rng.randint(1, 5))
        else:
            e = poly(x, 1) / (x**2 + rng.randint(1, 4)) + R(coeff(), rng.randint(2, 5))
        exprs = [e, sp.expand(e), sp.factor(e), sp.together(e)] + ([sp.apart(e, x)] if kind >= 2 else [])
        forms = sorted({sp.latex(f): f for f in exprs}.items())
        for (a, fa), (b, fb) in zip(forms, forms[1:]):
            emit(a, b, same(fa, fb), "algebra")
        # a different expression: one coefficient off, or x and y swapped
        f = sp.expand(e) + (1 if i % 2 else x) if kind != 1 else e.subs({x: y, y: x}, simultaneous=True)
        emit(sp.latex(sp.expand(e)), sp.latex(f), same(e, f), "algebra-different")


def numbers():
    for _ in range(60):
        q = rational()
        emit(sp.latex(q), plain(q), True, "number")
        emit(sp.latex(q), sp.latex(q + R(1, rng.choice([1, 7, 100]))), False, "number-different")
    for _ in range(30):
        n, k = rng.choice([2, 3, 5, 6, 7]), rng.randint(2, 6)
        emit("\\sqrt{%d}" % (n * k * k), sp.latex(sp.sqrt(n * k * k)), True, "radical")
        emit("\\sqrt{%d}" % (n * k * k), sp.latex(sp.sqrt(n * k * k + 1)), False, "radical-different")
        q = rational()
        emit(sp.latex(q * sp.pi), sp.latex(q) + " \\pi", True, "pi")
        emit(sp.latex(sp.sqrt(n) / k), "%d \\sqrt{%d} / %d" % (k, n, k * k),
             same(sp.sqrt(n) / k, k * sp.sqrt(n) / (k * k)), "radical-fraction")


def trig():
    pairs = [
        (sp.sin(x) ** 2 + sp.cos(x) ** 2, sp.Integer(1)),
        (sp.tan(x) ** 2 + 1, sp.sec(x) ** 2),
        (sp.sin(2 * x), 2 * sp.sin(x) * sp.cos(x)),
        (sp.cos(2 * x), 1 - 2 * sp.sin(x) ** 2),
        (sp.sin(x + y), sp.expand_trig(sp.sin(x + y))),
        (sp.cos(x - y), sp.expand_trig(sp.cos(x - y))),
        (1 / sp.tan(x), sp.cot(x)),
        (sp.sin(x) / sp.cos(x), sp.tan(x)),
        (sp.csc(x), 1 / sp.sin(x)),
        (sp.sin(x) * sp.cos(y), sp.cos(y) * sp.sin(x)),
    ]
    for e, f in pairs:
        emit(sp.latex(e), sp.latex(f), same(e, f), "trig")
        g = f + R(1, 2)
        emit(sp.latex(e), sp.latex(g), same(e, g), "trig-different")
    for _ in range(20):
        k = rng.randint(2, 4)
        e = sp.sin(k * x) * coeff()
        f = sp.expand_trig(e)
        emit(sp.latex(e), sp.latex(f), same(e, f), "trig-expanded")
        emit(sp.latex(e), sp.latex(sp.sin((k + 1) * x) * coeff()), False, "trig-different")


def sets():
    for _ in range(40):
        elems = sorted({rational() for _ in range(rng.randint(2, 4))})
        s = sp.FiniteSet(*elems)
        shuffled = elems[:]
        rng.shuffle(shuffled)
        other = ", ".join(sp.latex(e) for e in shuffled)
        emit(sp.latex(s), other, True, "set")
        emit(sp.latex(s), "\\{" + other + "\\}", True, "set")
        changed = shuffled[:-1] + [shuffled[-1] + 1]
        emit(sp.latex(s), ", ".join(sp.latex(e) for e in changed), sp.FiniteSet(*changed) == s, "set-different")
    for _ in range(40):
        a, b = sorted(rng.sample(range(-20, 20), 2))
        lo, hi = R(a, rng.choice([1, 2, 4])), R(b, 1)
        if lo >= hi:
            lo, hi = hi - 1, hi
        lopen, ropen = rng.random() < 0.5, rng.random() < 0.5
        i = sp.Interval(lo, hi, lopen, ropen)
        j = sp.Interval(lo, hi, not lopen, ropen)
        emit(sp.latex(i), "%s%s, %s%s" % ("(" if lopen else "[", plain(lo), plain(hi), ")" if ropen else "]"),
             True, "interval")
        emit(sp.latex(i), sp.latex(j), i == j, "interval-different")
        u = sp.Union(sp.Interval(-sp.oo, lo, True, not lopen), sp.Interval(hi + 1, sp.oo, ropen, True))
        parts = list(u.args)
        rng.shuffle(parts)
        emit(sp.latex(u), " \\cup ".join(sp.latex(p) for p in parts), True, "union")
        v = sp.Union(sp.Interval(-sp.oo, lo, True, not lopen), sp.Interval(hi + 2, sp.oo, ropen, True))
        emit(sp.latex(u), sp.latex(v), u == v, "union-different")


def matrices():
    for _ in range(30):
        rows, cols = rng.choice([(2, 2), (2, 1), (1, 3), (3, 3)])
        m = sp.Matrix(rows, cols, lambda i, j: rational())
        written = " \\\\ ".join(" & ".join(plain(m[i, j]) for j in range(cols)) for i in range(rows))
        emit(sp.latex(m), "\\begin{pmatrix}" + written + "\\end{pmatrix}", True, "matrix")
        d = m.copy()
        d[rng.randrange(rows), rng.randrange(cols)] += 1
        emit(sp.latex(m), sp.latex(d), m == d, "matrix-different")
        if rows == cols:
            emit(sp.latex(m), sp.latex(m.T), m == m.T, "matrix-transposed")


def relations():
    for _ in range(40):
        a, b, c = coeff(), coeff(), rng.randint(-9, 9)
        k = rng.choice([2, 3, R(1, 2), -1, -2])
        lhs = a * x + b * y
        emit(sp.latex(sp.Eq(lhs, c)), sp.latex(sp.Eq(sp.expand(k * lhs), k * c)), True, "equation")
        emit(sp.latex(sp.Eq(lhs, c)), sp.latex(sp.Eq(sp.expand(k * lhs), k * c + 1)), False, "equation-different")
        rel = rng.choice([sp.Lt, sp.Le, sp.Gt, sp.Ge])
        flip = {sp.Lt: sp.Gt, sp.Le: sp.Ge, sp.Gt: sp.Lt, sp.Ge: sp.Le}[rel]
        e = rel(a * x, c)
        kk = rng.choice([2, 3, R(1, 3)])
        emit(sp.latex(e), sp.latex(rel(sp.expand(kk * a * x), kk * c)), True, "inequality")
        emit(sp.latex(e), sp.latex(flip(sp.expand(-kk * a * x), -kk * c)), True, "inequality-flipped")
        emit(sp.latex(e), sp.latex(rel(sp.expand(-kk * a * x), -kk * c)), False, "inequality-different")


algebra()
numbers()
trig()
sets()
matrices()
relations()
print(json.dumps({"generator": "tests/data/make_mathans_fixture.py", "sympy": sp.__version__, "pairs": len(out)}))
for o in out:
    if o["a"] == o["b"] and not o["equal"]:
        sys.exit("a pair of one text labelled different: " + json.dumps(o))
    print(json.dumps(o, sort_keys=True))
