# kernsrc.py: what the simulations' extract scripts (tests/cuda/*_sim/
# extract.py) share: kernels/'s source, a definition cut out of a file
# whole, and each <<<grid, block, smem, stream>>> launch in it made a call
# of cuda_runtime.h's launch(), or launch_serial() where the kernel never
# synchronises its threads.
import os
import re

SYNC = re.compile(r"__syncthreads|__syncwarp|__shfl|warp_sum|block_sum|row_sum")
LAUNCH = re.compile(r"(\w+(?:<[^<>]*>)?)<<<(.*?), ([^,]+), [^,]+, [\w>-]+>>>\((.*?)\);", re.S)
KERNEL = re.compile(r"__global__ void (?:__launch_bounds__\(.*?\)\s*)?(\w+)")


class Kernels:
    def __init__(self, files, env):
        """files of kernels/, or of the directory the environment variable env names."""
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.environ.get(env) or here + "/../../../kernels"
        self.path = {f: os.path.normpath(root + "/" + f) for f in files}
        self.src = {f: open(self.path[f]).read() for f in files}
        self.kernels = {}   # name: definition, of those copied so far

    def piece(self, f, start, end):
        """f's text from start to end, under a #line naming where it stands
        there: a compiler's message, and the simulation's about a barrier,
        then name kernels/'s file and line."""
        line = self.src[f].count("\n", 0, start) + 1
        return '#line %d "%s"\n%s' % (line, self.path[f], self.src[f][start:end])

    def head(self, f, marker):
        """f's text before marker."""
        return self.piece(f, 0, self.src[f].index(marker))

    def function(self, f, head):
        """The definition containing head: from the blank line before it to its closing brace."""
        text = self.src[f]
        i = text.index(head)
        return self.piece(f, text.rfind("\n\n", 0, i) + 2, text.index("\n}\n", i) + 3)

    def defines(self, f, *names):
        """f's values of names, each #undef'd first: two files may define one name."""
        out = []
        for name in names:
            value = re.search(r"#define %s (\w+)" % name, self.src[f]).group(1)
            out += ["#undef %s" % name, "#define %s %s" % (name, value)]
        return "\n".join(out)

    def launcher(self, kernel):
        return "launch" if SYNC.search(self.kernels[kernel]) else "launch_serial"

    def calls(self, text):
        """text with its launches made calls."""
        def call(m):   # on as many lines as the launch, so that the #line above holds
            c = "%s(dim3(%s), dim3(%s), [&] { %s(%s); });" % (self.launcher(m.group(1).split("<")[0]),
                                                              m.group(2), m.group(3), m.group(1), m.group(4))
            return c + "\n" * (m.group(0).count("\n") - c.count("\n"))
        return LAUNCH.sub(call, text)

    def copy(self, f, head):
        """The definition containing head, its launches made calls."""
        text = self.function(f, head)
        m = KERNEL.search(text)
        if m:
            self.kernels[m.group(1)] = text
        return self.calls(text)
