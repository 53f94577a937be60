# grpo-tools: see README.md.  `make`, `make check`, `make bench`, `make install`.
#
# Sources are found by pattern, so adding a module never touches this file:
#   lib/*/*.c            -> $(BUILD)/libgrpo.a   (folders by layer: lib/README.md)
#   tools/grpo-*.c       -> $(BUILD)/bin/grpo-*
#   tools/collect-*.c    -> linked into grpo-collect alone (its parts: tools/grpo-collect.h)
#   tools/*.c, the rest  -> linked into every tool (tools/cli.c: messages, exits, option values)
#   tests/unit/test_*.c  -> $(BUILD)/tests/test_*   (TAP on stdout)
#   tests/cli/*.t        shell TAP scripts, run with the tools on PATH
#   bench/bench_*.c      -> $(BUILD)/bench/bench_*  (run by `make bench`)
#   kernels/*.cu         -> $(BUILD)/libgrpo-cuda.so (the tools load it when a run goes to the GPU)
#                           and $(BUILD)/libgrpo-cuda.a, only where nvcc and cuBLAS are found
#   tests/cuda/test_*.c  -> $(BUILD)/tests/test_*   (likewise; skip without a GPU)

# Every core, unless the command line says how many (-j N, or -j1 for one):
# `make check` builds five trees and the CUDA kernels, one file at a time
# without it. The tests themselves still run one at a time. Only the top
# make: a sub-make shares its jobs (it cannot see -j in MAKEFLAGS while it
# reads this file, and setting it again would leave the jobserver).
ifeq ($(MAKELEVEL),0)
ifeq ($(filter -j% --jobs%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2> /dev/null || echo 1)
endif
endif

PREFIX    ?= /usr/local
MANPREFIX ?= $(PREFIX)/share/man
BINDIR    ?= $(PREFIX)/bin
CC        ?= cc
AR        ?= ar
PKG_CONFIG ?= pkg-config
BUILD     ?= build
OPT       ?= -O2
SAN       ?=

DEPS      := libzstd libarchive zlib libcjson openblas libcurl oniguruma
DEPS_MISSING := $(strip $(foreach d,$(DEPS),$(if $(shell $(PKG_CONFIG) --exists $(d) 2>/dev/null && echo y),,$(d))))
DEPS_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DEPS) 2>/dev/null)
DEPS_LIBS   := $(shell $(PKG_CONFIG) --libs $(DEPS) 2>/dev/null)

VERSION   := 0.1.0
# Warnings are errors only where asked: CI runs `make check WERROR=-Werror`,
# so a user's compiler, newer than ours, warns without failing the build.
WERROR    ?=
# GCC's -Wformat-truncation, off (snprintf's cuts are checked where they
# matter): asked only of a compiler that has it, as clang, which has not,
# fails on an unknown -Wno- option under -Werror.
NO_TRUNC  := $(shell $(CC) -Werror -Wno-format-truncation -x c -fsyntax-only /dev/null 2>/dev/null && \
               echo -Wno-format-truncation)
WARN      := -Wall -Wextra $(WERROR) -Wno-unused-parameter $(NO_TRUNC)
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -DGRPO_VERSION='"$(VERSION)"' $(WARN) $(OPT) -g \
             -fno-omit-frame-pointer -fopenmp $(SAN) -Ilib -Itests $(DEPS_CFLAGS) -MMD -MP $(CFLAGS)
ALL_LDLIBS = $(DEPS_LIBS) -lm -lpthread -ldl $(LDLIBS)

LIB_SRC   := $(wildcard lib/*/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB_A     := $(BUILD)/libgrpo.a
TOOLS     := $(patsubst tools/%.c,$(BUILD)/bin/%,$(wildcard tools/grpo-*.c))
# The tools' own modules, which print and exit and so stay out of lib/.
TOOL_SHARED := $(patsubst %.c,$(BUILD)/%.o,$(filter-out tools/grpo-%.c tools/collect-%.c,$(wildcard tools/*.c)))
# grpo-collect in parts: sampling from a model and through a server, each its
# own file beside tools/grpo-collect.c, linked into that tool only.
COLLECT_PARTS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/collect-*.c))
UNITS     := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
BENCHES   := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/bench_*.c))
MANS      := $(wildcard man/*.[1-9])

# CUDA is optional: nvcc (on PATH, or CUDA_HOME/bin) and cuBLAS beside it.
# Where both are found, kernels/*.cu build into $(BUILD)/libgrpo-cuda.so,
# which the tools load when a run goes to the GPU (lib/model/model_gpu.c),
# and $(BUILD)/libgrpo-cuda.a, which tests/cuda/test_*.c (built into
# $(BUILD)/tests, skipping, saying so, on a machine without a GPU) and the
# GPU benchmarks link. Sanitized builds leave CUDA out (ASan and the CUDA
# driver do not mix). CUDA=0 turns it off; CUDA_ARCHS picks the GPUs.
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc)))
NVCC       ?= $(wildcard $(CUDA_HOME)/bin/nvcc)
CUDA_LIBDIR ?= $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcublas.so \
                 $(CUDA_HOME)/targets/*/lib/libcublas.so $(CUDA_HOME)/lib/*-linux-gnu/libcublas.so))))
CUDA_INC   ?= $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/include/cublas_v2.h \
                 $(CUDA_HOME)/targets/*/include/cublas_v2.h))))
CUDA_ARCHS ?= 80 90
CUDA_GENCODE = $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
# -Ilib: loss.cu shares lib/train/loss_token.h, the loss's per-token maths,
# and computes it without fused multiply-adds, rounding as the host does
NVCC_FLAGS = -O3 -std=c++17 -g -Xcompiler -Wall,-Wextra,-fPIC -Ikernels -Ilib $(CUDA_GENCODE) -MMD -MP
$(BUILD)/kernels/loss.o: NVCC_FLAGS += --fmad=false
CUDA_LDLIBS = -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublasLt -lcudart -lstdc++ -lm
CUDA_WHY := $(if $(filter 0 no,$(CUDA)),CUDA=$(CUDA),$(if $(NVCC),$(if $(and $(CUDA_LIBDIR),$(CUDA_INC)),,no cuBLAS beside $(NVCC)),no nvcc))
CUDA_A     := $(BUILD)/libgrpo-cuda.a
CUDA_SO    := $(BUILD)/libgrpo-cuda.so
CUDA_OBJ   := $(patsubst kernels/%.cu,$(BUILD)/kernels/%.o,$(wildcard kernels/*.cu))
CUDA_TESTS := $(patsubst tests/cuda/%.c,$(BUILD)/tests/%,$(wildcard tests/cuda/test_*.c))
CUDA_BENCH := $(BUILD)/bench/cuda/bench_cuda_model $(BUILD)/bench/cuda/bench_cuda_generate
CUDA_ALL   := $(if $(CUDA_WHY)$(SAN),,$(CUDA_SO) $(CUDA_A) $(CUDA_TESTS) $(CUDA_BENCH))
# With the CUDA library built, lib/model/model_gpu.c loads it (else it says
# there is no GPU path); what links libgrpo.a links nothing of CUDA, unless
# it links libgrpo-cuda.a and asks for its table with LINK_CUDA_A.
$(BUILD)/lib/model/model_gpu.o: ALL_CFLAGS += -I. $(if $(CUDA_ALL),-DGRPO_CUDA)
LINK_CUDA_A = -Wl,--undefined=grpo_cuda_ops $(CUDA_A) $(CUDA_LDLIBS)

.PHONY: all deps-ok cuda-note check check-fast check-san check-tsan check-cuda check-sim check-sim-race check-sim-mem test-units man-lint fuzz fuzz-short bench \
	bench-cuda \
	install uninstall clean

all: deps-ok cuda-note $(LIB_A) $(TOOLS) $(UNITS) $(BENCHES) $(CUDA_ALL)

cuda-note:
ifneq ($(CUDA_WHY),)
ifeq ($(SAN),)
	@echo "grpo-tools: $(CUDA_WHY): CUDA kernels not built"
endif
endif

deps-ok:
ifneq ($(DEPS_MISSING),)
	@echo "grpo-tools: missing libraries: $(DEPS_MISSING)" >&2
	@echo "  install them with: sudo sh tools/install-deps.sh   (Debian: libzstd-dev libarchive-dev libcjson-dev libopenblas-dev libcurl4-openssl-dev libonig-dev)" >&2
	@exit 1
endif

# V=1 shows the full commands.
Q := $(if $(V),,@)

# Order-only on deps-ok, so that under -j a missing library is reported
# before any compiler complains about its header.
$(BUILD)/%.o: %.c | deps-ok
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/tools/%.o $(TOOL_SHARED) $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(TOOL_PARTS) $(TOOL_SHARED) $(LIB_A) $(ALL_LDLIBS) -o $@

# A tool's own parts (none but grpo-collect's), linked after its main file.
$(BUILD)/bin/grpo-collect: TOOL_PARTS = $(COLLECT_PARTS)
$(BUILD)/bin/grpo-collect: $(COLLECT_PARTS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(LIB_A) $(ALL_LDLIBS) -o $@

$(BUILD)/kernels/%.o: kernels/%.cu
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCC_FLAGS) -c $< -o $@

$(CUDA_A): $(CUDA_OBJ)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

# Its own references resolved (-z defs: it needs nothing of lib/ or of the
# program that loads it), its table the one symbol it exports.
$(CUDA_SO): $(CUDA_OBJ) kernels/gpu_ops.map
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-z,defs -Wl,--version-script=kernels/gpu_ops.map $(CUDA_OBJ) \
		$(CUDA_LDLIBS) -o $@

# The CUDA tests are C: they see kernels/*.h, the CUDA runtime's C API and
# lib/, whose C model is their reference.
$(BUILD)/tests/cuda/%.o: tests/cuda/%.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -Ikernels -I$(CUDA_INC) -c $< -o $@

$(BUILD)/tests/test_cuda_%: $(BUILD)/tests/cuda/test_cuda_%.o $(LIB_A) $(CUDA_A)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(LIB_A) $(LINK_CUDA_A) $(ALL_LDLIBS) -o $@

$(BUILD)/bench/cuda/%.o: bench/cuda/%.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -Ikernels -I$(CUDA_INC) -c $< -o $@

$(CUDA_BENCH): %: %.o $(LIB_A) $(CUDA_A)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(LIB_A) $(LINK_CUDA_A) $(ALL_LDLIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(LIB_A) $(ALL_LDLIBS) -o $@

# make check: the plain build's tests, the kernels' CPU simulations (and
# again under ThreadSanitizer), the same tests under ASan+UBSan, the threaded ones under ThreadSanitizer, a
# bounded fuzz run from the committed corpus, and mandoc -Tlint.
check: all
	BUILD=$(BUILD) sh tests/run.sh
	$(MAKE) check-sim
	$(MAKE) check-sim-race
	$(MAKE) check-san
	$(MAKE) check-tsan
	$(MAKE) fuzz-short
	$(MAKE) man-lint

check-fast: all
	BUILD=$(BUILD) sh tests/run.sh

check-san:
	$(MAKE) BUILD=build/san OPT=-O1 SAN='-fsanitize=address,undefined -fno-sanitize-recover=all -Wno-maybe-uninitialized' all
	BUILD=build/san GRPO_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		sh tests/run.sh

# ThreadSanitizer, over the tests that run threads only: grpo-pack's
# publishing threads and --watch (tests/cli/threads.t), the gemm's OpenMP tiles (the model
# tests run 1 and 2 threads) and the watch. Built with clang, whose OpenMP
# runtime (libomp, with libarcher telling TSan about its barriers) TSan can
# see; GCC's libgomp makes it report races that are not there. Warnings are
# not errors there (WERROR=): clang does not know all of GCC's -Wno- options,
# and the plain build has checked the code already.
TSAN_CC    ?= clang
TSAN_UNITS := test_model_grad test_generate test_watch test_pack
TSAN_CLI   := threads.t
ARCHER     ?= $(firstword $(wildcard $(dir $(shell $(TSAN_CC) -print-file-name=libomp.so 2>/dev/null))libarcher.so \
                /usr/lib/llvm-*/lib/libarcher.so))

check-tsan:
	$(MAKE) BUILD=build/tsan CC=$(TSAN_CC) OPT=-O1 SAN=-fsanitize=thread CUDA=0 WERROR= \
		$(patsubst tools/%.c,build/tsan/bin/%,$(wildcard tools/grpo-*.c)) $(TSAN_UNITS:%=build/tsan/tests/%)
	BUILD=build/tsan GRPO_SANITIZED=1 OMP_TOOL_LIBRARIES=$(ARCHER) \
		TSAN_OPTIONS='halt_on_error=1 exitcode=66 second_deadlock_stack=1 ignore_noninstrumented_modules=1' \
		sh tests/run.sh $(TSAN_UNITS:%=build/tsan/tests/%) $(TSAN_CLI:%=tests/cli/%)

# CUDA kernels run on the CPU (tests/cuda/*_sim over tests/cuda/sim: their
# code copied unchanged, a thread per CUDA thread, a fiber in model_sim)
# against double-precision sums, for the machines without a GPU, CI's among
# them: every kernel of kernels/ (the matrix products are cuBLAS's); and
# model_sim, all of kernels/*.cu, host code too, with the matrix products
# on the CPU, under test_cuda_model, test_cuda_step (its fp32 cases),
# test_cuda_paged, test_cuda_lmhead, test_reflp, test_cuda_attention and
# test_cuda_generate (its random model: the decoder, its graphs and paged
# cache), each copy checked to lie within one allocation, each graph
# capture held to the GPU's rules (tests/cuda/model_sim/run.sh says how to
# run the rest). Threads of a block that wait at different barriers
# (__syncthreads, __syncwarp, shuffles: file and line) fail the sim, as
# compute-sanitizer's synccheck reports divergent threads.
# check-sim-race runs them again built with ThreadSanitizer, which reports
# two threads of a block touching the same memory with no barrier between
# them, as compute-sanitizer's racecheck does on a GPU; check-sim-mem, not
# in make check, with AddressSanitizer and UBSan, as its memcheck does.
# Neither sees a block read what another block of the launch writes, so
# check-sim runs the blocks of every grid shuffled and check-sim-race in
# reverse, where such a read gives other results (see cuda_runtime.h).
# Every sim runs, and the target fails if any failed; each prints the
# command that runs one again. About seven minutes, seven (model_sim is
# skipped under ThreadSanitizer) and twenty.
SIMS = $(sort $(wildcard tests/cuda/*_sim/run.sh))
# run_sims ENV: every sim with ENV set
run_sims = @rc=0; for s in $(SIMS); do echo "== $(1) GRPO_TEST_SMALL=1 sh $$s"; \
	$(1) GRPO_TEST_SMALL=1 sh $$s || rc=1; done; exit $$rc
check-sim:
	$(call run_sims,SIM_BLOCK_ORDER=shuffle)

check-sim-race:
	$(call run_sims,SIM_TSAN=1 SIM_BLOCK_ORDER=reverse)

check-sim-mem:
	$(call run_sims,SIM_ASAN=1)

# Only the CUDA kernels and their tests: needs nvcc and the CUDA libraries,
# nothing else. On a machine without a GPU the tests skip, saying so.
check-cuda:
ifneq ($(CUDA_WHY),)
	@echo "check-cuda: $(CUDA_WHY): CUDA kernels not built" >&2; exit 1
else
	$(MAKE) $(CUDA_SO) $(CUDA_A) $(CUDA_TESTS)
	GRPO_TOP=$(CURDIR) prove $(CUDA_TESTS)
endif

# The GPU benchmark against PyTorch + transformers on the same batch, in one
# run (bench/cuda/run.sh); needs a GPU, and python3 with torch for the peer.
bench-cuda:
ifneq ($(CUDA_WHY),)
	@echo "bench-cuda: $(CUDA_WHY): CUDA kernels not built" >&2; exit 1
else
	$(MAKE) $(CUDA_BENCH)
	BUILD=$(BUILD) sh bench/cuda/run.sh
	BUILD=$(BUILD) sh bench/cuda/run_generate.sh
endif

man-lint:
	@if ! command -v mandoc >/dev/null; then echo "man-lint: mandoc not installed" >&2; exit 1; fi
	mandoc -Tlint -W warning $(MANS)
	@echo "man-lint: $(words $(MANS)) pages clean"

# Fuzzing needs clang with libFuzzer (Debian: clang and the libclang-rt-dev matching it;
# tools/install-deps.sh picks it).
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN  := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_CC   ?= clang
FUZZ_TIME ?= 15

FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -DGRPO_VERSION='"$(VERSION)"' -g -O1 -Ilib $(DEPS_CFLAGS)
# Every sanitizer report stops the run as a crash, with its input saved: UBSan
# otherwise prints and goes on, and the fuzzer never counts it.
FUZZ_SAN  := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OBJ  := $(LIB_SRC:lib/%.c=build/fuzz/lib/%.o)
build/fuzz/lib/model/model_gpu.o: FUZZ_CFLAGS += -I.

build/fuzz/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP -c $< -o $@

build/fuzz/libgrpo-fuzz.a: $(FUZZ_OBJ)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

build/fuzz/%: tests/fuzz/%.c build/fuzz/libgrpo-fuzz.a
	@$(if $(V),,echo "  FUZZ    $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) $(LDFLAGS) $< build/fuzz/libgrpo-fuzz.a \
		$(ALL_LDLIBS) -o $@

# Targets that need real data (fuzz_tokenizer: the tokenizers) find it under
# $$GRPO_SHARED, else ../shared beside the tree, and say when they skip it.
FUZZ_ENV = GRPO_SHARED=$${GRPO_SHARED:-$(CURDIR)/../shared}

fuzz: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		echo "fuzz: $$f (Ctrl-C to stop)"; $(FUZZ_ENV) $$f -artifact_prefix=build/fuzz/$$n- build/fuzz/corpus-$$n tests/fuzz/corpus/$$n; done

# Every target runs, so that one failure does not hide another; then it fails.
fuzz-short: $(FUZZ_BIN)
	@failed=; for f in $(FUZZ_BIN); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		if $(FUZZ_ENV) $$f -max_total_time=$(FUZZ_TIME) -print_final_stats=0 -artifact_prefix=build/fuzz/$$n- \
			build/fuzz/corpus-$$n tests/fuzz/corpus/$$n 2>build/fuzz/$$n.log; then \
			grep -h '^fuzz_.*skipped' build/fuzz/$$n.log | sed 's/^/fuzz-short: /'; \
			echo "fuzz-short: $$n: $$(grep -o 'Done [0-9]* runs' build/fuzz/$$n.log) without a crash"; \
		else \
			grep -v '^#[0-9]' build/fuzz/$$n.log | tail -30; echo "fuzz-short: $$n: FAILED (log: build/fuzz/$$n.log)"; \
			failed="$$failed $$n"; \
		fi; done; \
	if [ -n "$$failed" ]; then echo "fuzz-short: failed:$$failed" >&2; exit 1; fi

bench: all
	BUILD=$(BUILD) sh bench/run.sh

# Only what it installs: the tools, the CUDA library where it is built, in
# the place beside PREFIX/bin where the tools look for it (lib/model/model_gpu.c),
# and the man pages, which need no build.
CUDA_INSTALL := $(filter $(CUDA_SO),$(CUDA_ALL))
PKGLIBDIR = $(PREFIX)/lib/grpo-tools

# DESTDIR and PREFIX are quoted: a packager's staging directory may hold a space.
install: deps-ok $(TOOLS) $(CUDA_INSTALL)
	mkdir -p "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANPREFIX)/man1" "$(DESTDIR)$(MANPREFIX)/man5" "$(DESTDIR)$(MANPREFIX)/man7"
	cp $(TOOLS) "$(DESTDIR)$(BINDIR)/"
ifneq ($(CUDA_INSTALL),)
	mkdir -p "$(DESTDIR)$(PKGLIBDIR)"
	cp $(CUDA_INSTALL) "$(DESTDIR)$(PKGLIBDIR)/"
endif
	for m in $(MANS); do s=$${m##*.}; cp $$m "$(DESTDIR)$(MANPREFIX)/man$$s/"; done

uninstall:
	for t in $(TOOLS); do rm -f "$(DESTDIR)$(BINDIR)/$$(basename $$t)"; done
	rm -f "$(DESTDIR)$(PKGLIBDIR)/libgrpo-cuda.so"
	rmdir "$(DESTDIR)$(PKGLIBDIR)" 2>/dev/null || true
	for m in $(MANS); do s=$${m##*.}; rm -f "$(DESTDIR)$(MANPREFIX)/man$$s/$$(basename $$m)"; done

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(wildcard $(BUILD)/tools/*.d $(BUILD)/tests/unit/*.d $(BUILD)/bench/*.d \
	$(BUILD)/kernels/*.d $(BUILD)/tests/cuda/*.d $(BUILD)/bench/cuda/*.d build/fuzz/lib/*/*.d)
.SECONDARY:
