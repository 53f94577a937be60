#!/usr/bin/env python3
"""
mutate.py: mutation testing of the code that decides what is trained.

A developer tool, not part of `make check`. Run it from the top of a built
tree (`make -j2` first) whose sources are committed:

    python3 tools/mutate.py loss              # every mutant of the loss module
    python3 tools/mutate.py --list loss       # the mutants, not run
    python3 tools/mutate.py --only ID loss    # one mutant (ID as --list prints it)
    python3 tools/mutate.py --all             # every module, in MODULES' order
    python3 tools/mutate.py --from build/mutants/loss.tsv loss
                                              # again, the survivors of an earlier sweep
                                              # (matched by file, operator and mutated line)
    python3 tools/mutate.py --units ...       # the unit tests only, not the .t scripts
    python3 tools/mutate.py --sample 7 pack   # every 7th mutant only: indices 0, 7, 14, ...
                                              # of the --list order (--sample-offset 1..6
                                              # takes another seventh)

It makes one mutant at a time of a module's source by text (a comparison
flipped, + to -, * to /, a constant c to c+1, c-1 or 0, a `- 1` or `+ 1`
dropped, a `!` removed, && to ||, a statement replaced by `;`, fmin/fmax
swapped, a unary minus dropped), writes it into the file, rebuilds only the
module's targets with `make -j2`, runs the module's tests (unit tests first,
stopping at the first that fails) each under a timeout of ten times what it
took on the unmutated tree (at least 10 s), and writes the original back. A mutant whose stripped object files are byte for byte the original's
is "same-code" (equivalent by construction) and is not tested. Each result
is a line of build/mutants/MODULE.tsv: id, status (killed, survived,
build-failed, same-code), the test that killed it, the line as mutated, the
line before.
Comments, strings and preprocessor lines are never mutated.

The unit tests run with TAP_BAIL=1 (tests/tap.h): a killed mutant stops at
its first failing assertion. A --sample N sweep is a fixed, reproducible
subset: the mutants at indices offset, offset+N, offset+2N, ... of the
module's --list order (the order depends only on the sources), so the same
commit gives the same sample; its tsv (the usual MODULE.tsv) starts with a
# line that says so, and the summary says "sample 1/N of M". --from reads
that line and reruns the survivors within the same sample (survivors are
matched by their lines' text, which mutants outside it may share).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

UNIT = "build/tests/"
CLI = "tests/cli/"

# module: sources to mutate, make targets to rebuild, objects whose stripped
# bytes decide same-code, tests (unit binaries, then .t scripts).
MODULES = {
    "loss": dict(
        files=["lib/train/loss.c", "lib/train/loss_token.h"],
        targets=["build/tests/test_loss", "build/tests/test_loss_token", "build/tests/test_step",
                 "build/tests/test_gradx", "build/bin/grpo-step"],
        objects=["build/lib/train/loss.o", "build/tests/unit/test_loss_token.o"],
        tests=[UNIT + "test_loss", UNIT + "test_loss_token", UNIT + "test_gradx", UNIT + "test_step",
               CLI + "step-parity.t", CLI + "step.t"]),
    "advantage": dict(
        files=["lib/score/advantage.c"],
        targets=["build/tests/test_advantage", "build/bin/grpo-score"],
        objects=["build/lib/score/advantage.o"],
        tests=[UNIT + "test_advantage", CLI + "score.t"]),
    "optim": dict(
        files=["lib/train/optim.c"],
        targets=["build/tests/test_optim", "build/tests/test_step", "build/bin/grpo-step"],
        objects=["build/lib/train/optim.o"],
        tests=[UNIT + "test_optim", UNIT + "test_step", CLI + "step-parity.t", CLI + "step.t"]),
    "pack": dict(
        files=["lib/pack/pack.c", "lib/pack/packstep.c"],
        targets=["build/tests/test_pack", "build/tests/test_packbuf", "build/bin/grpo-pack"],
        objects=["build/lib/pack/pack.o", "build/lib/pack/packstep.o"],
        tests=[UNIT + "test_pack", UNIT + "test_packbuf", CLI + "pack.t", CLI + "pack-truncate.t"]),
    "align": dict(
        files=["lib/model/align.c"],
        targets=["build/tests/test_align", "build/bin/grpo-cat"],
        objects=["build/lib/model/align.o"],
        tests=[UNIT + "test_align", CLI + "align.t", CLI + "align-sampler.t"]),
    "reward": dict(
        files=["lib/score/reward.c"],
        targets=["build/tests/test_reward", "build/bin/grpo-score"],
        objects=["build/lib/score/reward.o"],
        tests=[UNIT + "test_reward", CLI + "score.t"]),
    "mathans": dict(
        files=["lib/score/mathans_lex.c", "lib/score/mathans_parse.c", "lib/score/mathans_compare.c"],
        targets=["build/tests/test_mathans", "build/tests/test_mathans_sympy", "build/tests/test_reward"],
        objects=["build/lib/score/mathans_lex.o", "build/lib/score/mathans_parse.o",
                 "build/lib/score/mathans_compare.o"],
        tests=[UNIT + "test_mathans", UNIT + "test_mathans_sympy", UNIT + "test_reward"]),
    "step": dict(
        files=["lib/train/step.c"],
        targets=["build/tests/test_step", "build/bin/grpo-step"],
        objects=["build/lib/train/step.o"],
        tests=[UNIT + "test_step", CLI + "step-parity.t", CLI + "step.t", CLI + "step-ops.t"]),
    "claim": dict(
        files=["lib/spool/claim.c"],
        targets=["build/tests/test_claim", "build/tests/test_queue", "build/tests/test_watch",
                 "build/bin/grpo-spool"],
        objects=["build/lib/spool/claim.o"],
        tests=[UNIT + "test_claim", UNIT + "test_queue", UNIT + "test_watch",
               CLI + "spool.t", CLI + "spool-quarantine.t"]),
    "queue": dict(
        files=["lib/spool/queue.c"],
        targets=["build/tests/test_queue", "build/bin/grpo-spool"],
        objects=["build/lib/spool/queue.o"],
        tests=[UNIT + "test_queue", CLI + "spool.t", CLI + "spool-status.t", CLI + "spool-quarantine.t"]),
    "done": dict(
        files=["lib/data/done.c"],
        targets=["build/tests/test_done", "build/tests/test_queue", "build/tests/test_packbuf",
                 "build/bin/grpo-pack", "build/bin/grpo-spool"],
        objects=["build/lib/data/done.o"],
        tests=[UNIT + "test_done", UNIT + "test_queue", UNIT + "test_packbuf",
               CLI + "pack-gc-jobs.t", CLI + "pack-once.t"]),
    "check": dict(
        files=["lib/data/check.c"],
        targets=["build/tests/test_sfile", "build/tests/test_jsonview", "build/tests/test_check",
                 "build/bin/grpo-cat"],
        objects=["build/lib/data/check.o"],
        tests=[UNIT + "test_sfile", UNIT + "test_jsonview", UNIT + "test_check", CLI + "invariants.t"]),
    "mbbuild": dict(
        files=["lib/data/mbbuild.c"],
        targets=["build/tests/test_mbbuild", "build/tests/test_pack", "build/tests/test_packbuf",
                 "build/tests/test_align", "build/tests/test_model_mb", "build/bin/grpo-pack"],
        objects=["build/lib/data/mbbuild.o"],
        tests=[UNIT + "test_mbbuild", UNIT + "test_pack", UNIT + "test_packbuf", UNIT + "test_align",
               UNIT + "test_model_mb", CLI + "pack.t", CLI + "pack-truncate.t"]),
    "gradx": dict(
        files=["lib/train/gradx.c"],
        targets=["build/tests/test_gradx", "build/bin/grpo-step"],
        objects=["build/lib/train/gradx.o"],
        tests=[UNIT + "test_gradx", CLI + "step-ops.t", CLI + "once-mixups.t"]),
    "ckpt": dict(
        files=["lib/train/ckpt.c"],
        targets=["build/tests/test_ckpt", "build/tests/test_ckpt_dtype", "build/tests/test_step",
                 "build/bin/grpo-step"],
        objects=["build/lib/train/ckpt.o"],
        tests=[UNIT + "test_ckpt", UNIT + "test_ckpt_dtype", UNIT + "test_step", CLI + "step.t",
               CLI + "step-ops.t"]),
    "sfile": dict(
        files=["lib/data/sfile.c"],
        targets=["build/tests/test_sfile_bytes", "build/tests/test_sfile", "build/tests/test_jsonview",
                 "build/tests/test_scoreio",
                 "build/tests/test_packbuf", "build/bin/grpo-cat", "build/bin/grpo-pack", "build/bin/grpo-score"],
        objects=["build/lib/data/sfile.o"],
        tests=[UNIT + "test_sfile_bytes", UNIT + "test_sfile", UNIT + "test_jsonview", UNIT + "test_scoreio",
               UNIT + "test_packbuf",
               CLI + "format.t", CLI + "invariants.t", CLI + "record-numbers.t", CLI + "cat.t",
               CLI + "cat-archive-damage.t"]),
    "traj": dict(
        files=["lib/data/traj.c"],
        targets=["build/tests/test_traj", "build/tests/test_check", "build/tests/test_sfile",
                 "build/tests/test_groupset", "build/bin/grpo-cat"],
        objects=["build/lib/data/traj.o"],
        tests=[UNIT + "test_traj", UNIT + "test_check", UNIT + "test_sfile", UNIT + "test_groupset",
               CLI + "cat.t", CLI + "invariants.t"]),
    "scorer": dict(
        files=["lib/score/scorer.c"],
        targets=["build/tests/test_scorer", "build/tests/test_scoreio", "build/bin/grpo-score"],
        objects=["build/lib/score/scorer.o"],
        tests=[UNIT + "test_scorer", UNIT + "test_scoreio", CLI + "group-integrity.t", CLI + "score-repeats.t",
               CLI + "score-length.t", CLI + "score-math.t", CLI + "score.t", CLI + "score-groups.t"]),
    "scoreio": dict(
        files=["lib/score/scoreio.c"],
        targets=["build/tests/test_scoreio", "build/bin/grpo-score"],
        objects=["build/lib/score/scoreio.o"],
        tests=[UNIT + "test_scoreio", CLI + "score-names.t", CLI + "score-repeats.t", CLI + "score-rounds.t",
               CLI + "score-again.t", CLI + "record-numbers.t", CLI + "group-integrity.t", CLI + "score-stream.t"]),
    "spool": dict(
        files=["lib/spool/spool.c"],
        targets=["build/tests/test_spool", "build/tests/test_claim", "build/tests/test_tempfile",
                 "build/tests/test_queue", "build/tests/test_packbuf", "build/bin/grpo-spool",
                 "build/bin/grpo-pack"],
        objects=["build/lib/spool/spool.o"],
        tests=[UNIT + "test_spool", UNIT + "test_claim", UNIT + "test_queue", UNIT + "test_packbuf",
               UNIT + "test_tempfile", CLI + "spool.t", CLI + "spool-status.t"]),
    "reflp": dict(
        files=["lib/score/reflp.c"],
        targets=["build/tests/test_reflp", "build/tests/test_scorer", "build/bin/grpo-score"],
        objects=["build/lib/score/reflp.o"],
        tests=[UNIT + "test_reflp", UNIT + "test_scorer", CLI + "align-sampler.t", CLI + "pipeline.t",
               CLI + "progress.t"]),
    "packbuf": dict(
        files=["lib/pack/packbuf.c"],
        targets=["build/tests/test_packbuf", "build/bin/grpo-pack"],
        objects=["build/lib/pack/packbuf.o"],
        tests=[UNIT + "test_packbuf", CLI + "pack-drops.t", CLI + "pack-truncate.t", CLI + "pack-dup-inputs.t",
               CLI + "pack-gc-jobs.t", CLI + "pack-once.t", CLI + "pack.t"]),
    "cursor": dict(
        files=["lib/collect/cursor.c"],
        targets=["build/tests/test_cursor", "build/bin/grpo-collect"],
        objects=["build/lib/collect/cursor.o"],
        tests=[UNIT + "test_cursor", CLI + "collect-walk.t", CLI + "collect-cursor.t", CLI + "collect-policy-once.t"]),
    "tempfile": dict(
        files=["lib/base/tempfile.c"],
        targets=["build/tests/test_tempfile", "build/tests/test_spool", "build/tests/test_done"],
        objects=["build/lib/base/tempfile.o"],
        tests=[UNIT + "test_tempfile", UNIT + "test_spool", UNIT + "test_done"]),
    "watch": dict(
        files=["lib/spool/watch.c"],
        targets=["build/tests/test_watch", "build/tests/test_claim", "build/bin/grpo-spool"],
        objects=["build/lib/spool/watch.o"],
        tests=[UNIT + "test_watch", UNIT + "test_claim", CLI + "spool-consume.t", CLI + "spool.t",
               CLI + "cli-plural.t"]),
    "steparc": dict(
        files=["lib/spool/steparc.c"],
        targets=["build/tests/test_steparc", "build/bin/grpo-spool", "build/bin/grpo-cat"],
        objects=["build/lib/spool/steparc.o"],
        tests=[UNIT + "test_steparc", CLI + "spool-archive.t", CLI + "spool-gc-queue.t"]),
    "rewardcmd": dict(
        files=["lib/score/rewardcmd.c", "lib/score/rewardpool.c"],
        targets=["build/tests/test_rewardcmd", "build/tests/test_rewardpool", "build/tests/test_scorer",
                 "build/bin/grpo-score"],
        objects=["build/lib/score/rewardcmd.o", "build/lib/score/rewardpool.o"],
        tests=[UNIT + "test_rewardcmd", UNIT + "test_rewardpool", UNIT + "test_scorer", CLI + "score-groups.t",
               CLI + "score-jobs.t"]),
    "safetensors": dict(
        files=["lib/model/safetensors.c"],
        targets=["build/tests/test_safetensors", "build/tests/test_safetensors_bytes", "build/tests/test_ckpt",
                 "build/tests/test_model_hf"],
        objects=["build/lib/model/safetensors.o"],
        tests=[UNIT + "test_safetensors", UNIT + "test_safetensors_bytes", UNIT + "test_ckpt",
               UNIT + "test_model_hf", CLI + "collect.t"]),
    "jsonview": dict(
        files=["lib/data/jsonview.c"],
        targets=["build/tests/test_jsonview", "build/tests/test_jsonview_bytes", "build/tests/test_sfile",
                 "build/tests/test_collect", "build/tests/test_jsonpick", "build/bin/grpo-cat", "build/bin/grpo-collect"],
        objects=["build/lib/data/jsonview.o"],
        tests=[UNIT + "test_jsonview", UNIT + "test_jsonview_bytes", UNIT + "test_sfile", UNIT + "test_collect",
               UNIT + "test_jsonpick",
               CLI + "cat.t", CLI + "cat-output.t", CLI + "collect-fields.t", CLI + "collect-shapes.t",
               CLI + "collect-token-ids.t", CLI + "collect-long-line.t", CLI + "collect.t"]),
    "collect": dict(
        files=["lib/collect/collect.c"],
        targets=["build/tests/test_collect", "build/bin/grpo-collect"],
        objects=["build/lib/collect/collect.o"],
        tests=[UNIT + "test_collect", CLI + "collect-fields.t", CLI + "collect-shapes.t",
               CLI + "collect-answers.t", CLI + "collect-repeats.t", CLI + "collect-incomplete.t",
               CLI + "collect-token-ids.t"]),
    "chat": dict(
        files=["lib/model/chat.c"],
        targets=["build/tests/test_chat", "build/bin/grpo-cat", "build/bin/grpo-init", "build/bin/grpo-collect"],
        objects=["build/lib/model/chat.o"],
        tests=[UNIT + "test_chat", CLI + "chat.t"]),
    "model_config": dict(
        files=["lib/model/model_config.c"],
        targets=["build/tests/test_model_config", "build/tests/test_safetensors", "build/tests/test_model_hf",
                 "build/tests/test_model_fixtures", "build/tests/test_ckpt"],
        objects=["build/lib/model/model_config.o"],
        tests=[UNIT + "test_model_config", UNIT + "test_safetensors", UNIT + "test_model_hf",
               UNIT + "test_model_fixtures", UNIT + "test_ckpt"]),
    "jsonpick": dict(
        files=["lib/data/jsonpick.c"],
        targets=["build/tests/test_jsonpick", "build/tests/test_collect", "build/bin/grpo-collect",
                 "build/bin/grpo-cat"],
        objects=["build/lib/data/jsonpick.o"],
        tests=[UNIT + "test_jsonpick", UNIT + "test_collect", CLI + "collect-long-line.t", CLI + "json-long-line.t"]),
    "groupset": dict(
        files=["lib/data/groupset.c"],
        targets=["build/tests/test_groupset", "build/tests/test_collect", "build/tests/test_scoreio",
                 "build/bin/grpo-collect", "build/bin/grpo-cat", "build/bin/grpo-score"],
        objects=["build/lib/data/groupset.o"],
        tests=[UNIT + "test_groupset", UNIT + "test_collect", UNIT + "test_scoreio", CLI + "group-integrity.t",
               CLI + "collect-repeats.t", CLI + "score-repeats.t", CLI + "ids.t"]),
    "scoresum": dict(
        files=["lib/data/scoresum.c"],
        targets=["build/tests/test_scoresum", "build/tests/test_scorer", "build/bin/grpo-cat",
                 "build/bin/grpo-score"],
        objects=["build/lib/data/scoresum.o"],
        tests=[UNIT + "test_scoresum", UNIT + "test_scorer", CLI + "cat-eval.t", CLI + "cat.t"]),
    "stopstr": dict(
        files=["lib/model/stopstr.c"],
        targets=["build/tests/test_stopstr", "build/bin/grpo-collect"],
        objects=["build/lib/model/stopstr.o"],
        tests=[UNIT + "test_stopstr", CLI + "collect-stop.t"]),
    "metrics": dict(
        files=["lib/data/metrics.c"],
        targets=["build/tests/test_metrics", "build/bin/grpo-spool"],
        objects=["build/lib/data/metrics.o"],
        tests=[UNIT + "test_metrics", CLI + "spool-plot.t", CLI + "spool-plot-output.t"]),
    "spoolin": dict(
        files=["lib/data/spoolin.c"],
        targets=["build/tests/test_spoolin", "build/bin/grpo-cat"],
        objects=["build/lib/data/spoolin.o"],
        tests=[UNIT + "test_spoolin", CLI + "cat-stdin.t", CLI + "cat-archive.t", CLI + "cat-archive-damage.t",
               CLI + "spool-archive.t", CLI + "cat.t"]),
    "dtable": dict(
        files=["lib/train/dtable.c"],
        targets=["build/tests/test_dtable", "build/bin/grpo-step"],
        objects=["build/lib/train/dtable.o"],
        tests=[UNIT + "test_dtable", CLI + "step.t", CLI + "step-ops.t", CLI + "missing-logprobs.t"]),
    # test_tokenizer_hf, test_tokenizer_regex's GSM8K half and tokenize.t skip
    # without the real tokenizers and fixtures: export GRPO_SHARED=/work/shared
    # (make check's ../shared) before sweeping, or most mutants survive.
    "tokenizer": dict(
        files=["lib/model/tokenizer_encode.c", "lib/model/tokenizer_pretok.c"],
        targets=["build/tests/test_tokenizer_load", "build/tests/test_tokenizer_added",
                 "build/tests/test_tokenizer_spm", "build/tests/test_tokenizer_hf",
                 "build/tests/test_tokenizer_regex", "build/bin/grpo-cat"],
        objects=["build/lib/model/tokenizer_encode.o", "build/lib/model/tokenizer_pretok.o"],
        tests=[UNIT + "test_tokenizer_load", UNIT + "test_tokenizer_added", UNIT + "test_tokenizer_spm",
               UNIT + "test_tokenizer_hf", UNIT + "test_tokenizer_regex", CLI + "tokenize.t"]),
    # test_tokenizer_hf and tokenize.t decode with the real tokenizers and
    # fixtures, and skip without them: export GRPO_SHARED=/work/shared (make
    # check's ../shared) before sweeping, as for "tokenizer".
    "decode": dict(
        files=["lib/model/tokenizer_decode.c"],
        targets=["build/tests/test_tokenizer_load", "build/tests/test_tokenizer_spm",
                 "build/tests/test_tokenizer_hf", "build/bin/grpo-cat"],
        objects=["build/lib/model/tokenizer_decode.o"],
        tests=[UNIT + "test_tokenizer_load", UNIT + "test_tokenizer_spm", UNIT + "test_tokenizer_hf",
               CLI + "tokenize.t"]),
    # test_rollout's prompts as text need the real Qwen3 tokenizer: export
    # GRPO_SHARED=/work/shared here too.
    "rollout": dict(
        files=["lib/model/rollout.c"],
        targets=["build/tests/test_rollout", "build/bin/grpo-collect", "build/bin/grpo-init",
                 "build/bin/grpo-cat"],
        objects=["build/lib/model/rollout.o"],
        tests=[UNIT + "test_rollout", CLI + "generate.t"]),
    # the importers of vLLM/OpenAI, SGLang and Atropos replies; they share the
    # collect entry's tests. collect.t (14 s) and collect-server.t are left out.
    "import": dict(
        files=["lib/collect/collect_vllm.c", "lib/collect/collect_sglang.c", "lib/collect/collect_atropos.c"],
        targets=["build/tests/test_collect", "build/bin/grpo-collect"],
        objects=["build/lib/collect/collect_vllm.o", "build/lib/collect/collect_sglang.o",
                 "build/lib/collect/collect_atropos.o"],
        tests=[UNIT + "test_collect", CLI + "collect-shapes.t", CLI + "collect-repeats.t",
               CLI + "collect-token-ids.t", CLI + "collect-long-line.t", CLI + "collect-stop.t",
               CLI + "collect-modes.t", CLI + "collect-incomplete.t"]),
}

UNITS_ONLY = False
BUILD_TIMEOUT = 300
UNIT_TIMEOUT = 60
CLI_TIMEOUT = 240


def code_mask(text):
    """A list of booleans, True where text is code (not a comment, string, char or # line)."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" or (line_start and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            j = i
            while j < n:   # a preprocessor line, with its continuations
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                j += 1
            for k in range(i, j):
                mask[k] = False
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                mask[k] = False
            i = j
            line_start = False
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                mask[k] = False
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i, min(j + 1, n)):
                mask[k] = False
            i = j + 1
            line_start = False
            continue
        line_start = c == "\n"
        i += 1
    return mask


def num_mutants(lit):
    """c to c+1, c-1, 0 (as literals of the same kind)."""
    m = re.fullmatch(r"(\d+\.?\d*(?:[eE][-+]?\d+)?)([fFuUlL]*)", lit)
    if not m:
        return []
    body, suf = m.group(1), m.group(2)
    isfloat = "." in body or "e" in body.lower()
    v = float(body) if isfloat else int(body)
    out = []
    for nv in (v + 1, v - 1, 0):
        if nv == v or nv < 0:
            continue
        s = repr(float(nv)) if isfloat else str(int(nv))
        if s + suf not in out:
            out.append(s + suf)
    return out


REL = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
# (name, pattern, replacement or function of the match giving replacements)
OPS = [
    ("rel", re.compile(r"(?<![<>=!\-])(<=|>=|==|!=|<|>)(?![<>=])"), lambda m: [REL[m.group(1)]]),
    ("arith", re.compile(r"(?<= )([-+*/])(?= )"), lambda m: [{"+": "-", "-": "+", "*": "/", "/": "*"}[m.group(1)]]),
    ("assign", re.compile(r"(?<= )([-+*/])=(?= )"), lambda m: [{"+": "-=", "-": "+=", "*": "/=", "/": "*="}[m.group(1)]]),
    ("drop1", re.compile(r" [-+] 1(?![\w.])"), lambda m: [""]),
    ("neg", re.compile(r"(?:(?<=[(=?:,] )|(?<=\()|(?<=return ))-(?=[\w(])"), lambda m: [""]),
    ("const", re.compile(r"(?<![\w.])\d+\.?\d*(?:[eE][-+]?\d+)?[fFuUlL]*(?![\w.])"), lambda m: num_mutants(m.group(0))),
    ("not", re.compile(r"!(?!=)"), lambda m: [""]),
    ("logic", re.compile(r"&&|\|\|"), lambda m: ["||" if m.group(0) == "&&" else "&&"]),
    ("minmax", re.compile(r"\bf(min|max)(f?)\b"), lambda m: ["f" + ("max" if m.group(1) == "min" else "min") + m.group(2)]),
]

DECL = re.compile(r"^\s*(?:const\s+|static\s+|unsigned\s+|struct\s+\w+\s*\**|enum\s+\w+|int|long|double|float|char|"
                  r"size_t|ssize_t|u?int\d+_t|void|bool|off_t|return|break|continue|goto|case|default|else\s*;)\b")


def statement_lines(lines, masks):
    """Indices of lines that hold one whole statement a deletion can replace by `;`."""
    out = []
    prev = "{"
    for i, (ln, mk) in enumerate(zip(lines, masks)):
        code = "".join(ch for ch, m in zip(ln, mk) if m).strip()
        if not code:
            continue
        starts = prev.endswith((";", "{", "}", ")", ":")) or prev == "else"
        if (starts and code.endswith(";") and "{" not in code and "}" not in code and not DECL.match(code)
                and not code.startswith(("for", "while", "if", "do")) and code != ";"):
            out.append(i)
        prev = code
    return out


def mutants_of(path):
    text = open(path).read()
    mask = code_mask(text)
    lines = text.split("\n")
    masks, off = [], 0
    for ln in lines:
        masks.append(mask[off:off + len(ln)])
        off += len(ln) + 1
    muts = []
    for i, (ln, mk) in enumerate(zip(lines, masks)):
        for name, pat, repl in OPS:
            for m in pat.finditer(ln):
                if not all(mk[m.start():m.end()]):
                    continue
                if name == "rel" and re.search(r"#\s*include", ln):
                    continue
                for r in repl(m):
                    new = ln[:m.start()] + r + ln[m.end():]
                    muts.append(dict(id="%s:%d:%d:%s:%s" % (os.path.basename(path), i + 1, m.start() + 1, name, r or "x"),
                                     path=path, line=i, new=new, old=ln))
    for i in statement_lines(lines, masks):
        ln = lines[i]
        indent = ln[:len(ln) - len(ln.lstrip())]
        muts.append(dict(id="%s:%d:1:delete:;" % (os.path.basename(path), i + 1), path=path, line=i,
                         new=indent + ";", old=ln))
    return text, muts


def run(cmd, timeout, env=None):
    """rc (124 on timeout) and output of cmd, its process group killed on timeout."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return 124, "timeout"


def build(mod):
    return run(["make", "-j2"] + mod["targets"], BUILD_TIMEOUT)


def stripped(objs):
    # a name of this sweep's own: two sweeps at once must not read each other's
    strip = "/tmp/mutate-strip.%d.o" % os.getpid()
    out = []
    for o in objs:
        rc, _ = run(["objcopy", "--strip-debug", o, strip], 60)
        out.append(open(strip, "rb").read() if rc == 0 else None)
    if os.path.exists(strip):
        os.unlink(strip)
    return out


def test_env():
    env = dict(os.environ)
    env.setdefault("BUILD", "build")
    env["TAP_BAIL"] = "1"   # a unit test stops at its first failure (tests/tap.h)
    return env


# How long each test took on the unmutated tree: a mutant's run of it is
# cut at ten times that (and at least 10 s), so that a mutant that loops
# (a search that never ends, a wait on a flag never set) costs seconds, not
# the whole UNIT_TIMEOUT or CLI_TIMEOUT.
BASE_SECONDS = {}


def run_tests(mod, timing=False):
    """The first test that fails, or None; with timing, each test's time kept in BASE_SECONDS."""
    env = test_env()
    for t in mod["tests"]:
        if UNITS_ONLY and t.endswith(".t"):
            continue
        limit = CLI_TIMEOUT if t.endswith(".t") else UNIT_TIMEOUT
        if t in BASE_SECONDS:
            limit = min(limit, max(10, 10 * BASE_SECONDS[t]))
        t0 = time.time()
        rc, _ = run(["sh", "tests/run.sh", t], limit, env)
        if timing:
            BASE_SECONDS[t] = time.time() - t0
        if rc != 0:
            return t + (" (timeout)" if rc == 124 else "")
    return None


def key(mid, new, orig=None):
    f, _, _, op, _ = mid.split(":", 4)
    return (f, op, new.strip(), orig.strip() if orig is not None else None)


def survivors_of(path):
    out = set()
    for ln in open(path):
        f = ln.rstrip("\n").split("\t")
        if len(f) >= 4 and not f[0].startswith("#") and f[1] == "survived":
            out.add(key(f[0], f[3], f[4] if len(f) > 4 else None))
    return out


def sample_of(path):
    """The (N, K) of a --sample sweep's results file, from its # line, or None."""
    with open(path) as f:
        m = re.match(r"# sample: every (\d+)th mutant from index (\d+) ", f.readline())
    return (int(m.group(1)), int(m.group(2))) if m else None


def sweep(name, only, listing, out, survivors=None, sample=None):
    mod = MODULES[name]
    allm = []
    for f in mod["files"]:
        text, muts = mutants_of(f)
        allm += [(text, m) for m in muts]
    total = len(allm)
    if sample:
        n, off = sample
        allm = allm[off::n]
    if only:
        allm = [(t, m) for t, m in allm if m["id"] in only]
    if survivors is not None:
        allm = [(t, m) for t, m in allm
                if key(m["id"], m["new"]) in survivors or key(m["id"], m["new"], m["old"]) in survivors]
    if listing:
        for _, m in allm:
            print("%s\t%s" % (m["id"], m["new"].strip()))
        return
    rc, o = build(mod)
    if rc != 0:
        sys.exit("mutate: the unmutated tree does not build:\n" + o)
    base = stripped(mod["objects"])
    bad = run_tests(mod, timing=True)
    if bad:
        sys.exit("mutate: %s fails on the unmutated tree" % bad)
    counts = {}
    what = "%d mutants" % len(allm)
    if sample:
        what = "%d mutants (sample 1/%d of %d, offset %d)" % (len(allm), sample[0], total, sample[1])
        out.write("# sample: every %dth mutant from index %d of %d in --list order\n" % (sample[0], sample[1], total))
    for k, (text, m) in enumerate(allm):
        lines = text.split("\n")
        lines[m["line"]] = m["new"]
        t0 = time.time()
        try:
            open(m["path"], "w").write("\n".join(lines))
            rc, _ = build(mod)
            if rc != 0:
                status, by = "build-failed", ""
            elif stripped(mod["objects"]) == base:
                status, by = "same-code", ""
            else:
                by = run_tests(mod)
                status = "killed" if by else "survived"
        finally:
            open(m["path"], "w").write(text)
        counts[status] = counts.get(status, 0) + 1
        line = "%s\t%s\t%s\t%s\t%s" % (m["id"], status, by or "", m["new"].strip(), m["old"].strip())
        out.write(line + "\n")
        out.flush()
        print("[%d/%d %.1fs] %s" % (k + 1, len(allm), time.time() - t0, line), flush=True)
    build(mod)   # the original back in build/
    print("%s: %s: %s" % (name, what, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))


def main():
    ap = argparse.ArgumentParser(description="mutation testing of grpo-tools' training code")
    ap.add_argument("modules", nargs="*", help="of: " + " ".join(MODULES))
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the mutants, run none")
    ap.add_argument("--only", action="append", help="run this mutant id (repeatable)")
    ap.add_argument("--from", dest="frm", help="run only the mutants that survived in this results file")
    ap.add_argument("--units", action="store_true", help="run the unit tests only, not the .t scripts")
    ap.add_argument("--sample", type=int, metavar="N", help="run every N-th mutant of the --list order")
    ap.add_argument("--sample-offset", type=int, default=0, metavar="K", help="with --sample: start at index K")
    a = ap.parse_args()
    if a.sample is not None and a.sample < 1 or not 0 <= a.sample_offset < (a.sample or 1):
        ap.error("--sample N wants N >= 1, --sample-offset K wants 0 <= K < N")
    sample = (a.sample, a.sample_offset) if a.sample else None
    global UNITS_ONLY
    UNITS_ONLY = a.units
    # killed (timeout(1), kill): unwind, so that the file under mutation is written back
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    mods = list(MODULES) if a.all else a.modules
    if not mods or any(m not in MODULES for m in mods):
        ap.error("name modules of: " + " ".join(MODULES))
    os.makedirs("build/mutants", exist_ok=True)
    # survivors are matched by their lines' text, which mutants outside a
    # sample may share: a sampled sweep's survivors are rerun in its sample
    if a.frm and not sample:
        sample = sample_of(a.frm)
    for name in mods:
        surv = survivors_of(a.frm) if a.frm else None
        suffix = "-only" if a.only else "-again" if a.frm else ""
        if a.list:
            sweep(name, a.only, True, None, surv, sample)
            continue
        with open("build/mutants/%s%s.tsv" % (name, suffix), "a" if a.only else "w") as out:
            sweep(name, a.only, False, out, surv, sample)


if __name__ == "__main__":
    main()
