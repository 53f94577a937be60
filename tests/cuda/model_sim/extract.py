# extract.py for model_sim (see run.sh): every kernels/*.cu but matmul.cu
# (cuBLASLt: matmul.cc here instead) and gpu_prof.cu (CUDA events: prof.cc),
# copied into the directory given, each as NAME.cc, with kernels/'s headers
# beside them, changed only where C++ on the CPU needs it:
#  - each launch, k<<<grid, block, smem, stream>>>(args);, made a call of
#    sim_launch.h's sim_launch<sync>(grid, block, smem, stream, &k, args),
#    sync where the kernel (or a device function it calls) synchronises its
#    threads, so that the others run on one thread (cuda_runtime.h's
#    launch_serial);
#  - extern __shared__ arrays (dynamic shared memory) a pointer to the
#    launch's own buffer, of the size it asked for;
#  - mma.cuh's mma.sync (inline PTX) a call of runtime.cc's emulation.
# Each copy starts with a #line naming kernels/'s file, and a launch keeps
# its lines, so that compilers' and sanitizers' messages name kernels/'s
# lines. MODEL_SIM_KERNELS names another kernels directory to copy from.
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.normpath(os.environ.get("MODEL_SIM_KERNELS") or here + "/../../../kernels")
out = sys.argv[1]
SKIP = {"matmul.cu", "gpu_prof.cu"}
SYNC = re.compile(r"__syncthreads|__syncwarp|__shfl\w*|mma16816")
files = sorted(f for f in os.listdir(src) if f.endswith((".cu", ".cuh", ".h")))
text = {f: open(os.path.join(src, f)).read() for f in files}


def balanced(s, i, open_, close):
    """index just past the bracket that closes the one at s[i]"""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == open_:
            depth += 1
        elif s[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError("unbalanced %s at %d" % (open_, i))


def split_top(s):
    """s split at its commas outside brackets"""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


# Functions that synchronise a block's threads: those whose body has a
# barrier, a shuffle or an mma, and those that call one of them.
bodies = {}
for f, t in text.items():
    t = re.sub(r"//[^\n]*|/\*.*?\*/", "", t, flags=re.S)
    t = re.sub(r"__launch_bounds__\((?:[^()]|\([^()]*\))*\)", "", t)
    for m in re.finditer(r"(\w+)\s*\([^;{]*?\)\s*(?:const\s*)?\{", t):
        name = m.group(1)
        if name in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        start = m.end() - 1
        try:
            end = balanced(t, start, "{", "}")
        except ValueError:
            continue
        bodies[name] = bodies.get(name, "") + t[start:end]
sync = {n for n, b in bodies.items() if SYNC.search(b)}
while True:
    more = {n for n, b in bodies.items() if n not in sync and any(re.search(r"\b%s\b" % s, b) for s in sync)}
    if not more:
        break
    sync |= more


def launches(t, f):
    res, i = [], 0
    while True:
        a = t.find("<<<", i)
        if a < 0:
            res.append(t[i:])
            return "".join(res)
        # the kernel's name, with its template arguments
        n = a
        if t[n - 1] == ">":
            depth = 0
            while True:
                n -= 1
                if t[n] == ">":
                    depth += 1
                elif t[n] == "<":
                    depth -= 1
                    if depth == 0:
                        break
        while n > 0 and (t[n - 1].isalnum() or t[n - 1] == "_"):
            n -= 1
        kernel = t[n:a]
        b = t.index(">>>", a)
        cfg = split_top(t[a + 3:b])
        if len(cfg) != 4:
            sys.exit("%s: a launch without four <<< >>> arguments: %s" % (f, t[n:b + 3]))
        p = b + 3
        while t[p].isspace():
            p += 1
        e = balanced(t, p, "(", ")")
        args = t[p + 1:e - 1]
        base = kernel.split("<")[0]
        if base not in bodies:
            sys.exit("%s: kernel %s: no definition found" % (f, base))
        call = "sim_launch<%d>(%s, %s, %s, %s, &%s%s%s)" % (base in sync, cfg[0], cfg[1], cfg[2], cfg[3], kernel,
                                                          ", " if args.strip() else "", args)
        call += "\n" * (t[n:e].count("\n") - call.count("\n"))
        res.append(t[i:n] + call)
        i = e


for f in files:
    t = text[f]
    if f in SKIP:
        continue
    if f == "mma.cuh":
        m = re.search(r'asm volatile\("mma\.sync.*?\);', t, re.S)
        if not m:
            sys.exit("mma.cuh: no mma.sync asm found")
        call = "sim_mma16816(c, a, b0, b1);"
        t = t[:m.start()] + call + "\n" * m.group(0).count("\n") + t[m.end():]
        t = t.replace("#include <stdint.h>", "#include <stdint.h>\nvoid sim_mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);", 1)
    t = re.sub(r"extern __shared__ (?:__align__\(\d+\) )?(\w[\w ]*?) (\w+)\[\];", r"\1 *\2 = (\1 *)sim::dyn_smem;", t)
    if "<<<" in t:
        t = launches(t, f)
    name = f[:-3] + ".cc" if f.endswith(".cu") else f
    with open(os.path.join(out, name), "w") as o:
        o.write('#line 1 "%s"\n%s' % (os.path.join(src, f), t))
