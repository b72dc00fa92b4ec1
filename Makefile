# Build of the RGNN kernel explorer: host code in C11, device code generated at run time.
# `make` builds build/explore; `make test` runs every CPU test (GPU tests skip without a device).

CUDA_HOME ?= /usr/local/cuda
CC        ?= gcc
BUILD     ?= build
PKGS      := gsl serd-0 zlib sqlite3 cmocka
DEBIAN_PKGS := libgsl-dev libserd-dev serdi zlib1g-dev libsqlite3-dev gnuplot-nox libcmocka-dev pkg-config

# pkg-config runs when the first compile or link expands these, not when make reads this file:
# `make deps all` must see the packages its own deps step has just installed. Each runs once
# (the eval replaces the variable by its value); a package pkg-config cannot find is named.
PKG_DEB   := gsl=libgsl-dev serd-0=libserd-dev zlib=zlib1g-dev sqlite3=libsqlite3-dev cmocka=libcmocka-dev \
             pkg-config=pkg-config
pkg_missing = $(strip $(if $(shell command -v pkg-config),$(foreach p,$(PKGS),$(if $(shell pkg-config --exists $(p) && echo y),,$(p))),pkg-config))
pkg_check = $(if $(pkg_missing),$(error missing packages: $(foreach p,$(pkg_missing),$(p) (Debian: $(patsubst $(p)=%,%,$(filter $(p)=%,$(PKG_DEB))))); `make deps` installs them))
PKG_CFLAGS = $(eval PKG_CFLAGS := $(pkg_check)$(shell pkg-config --cflags $(PKGS)))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(pkg_check)$(shell pkg-config --libs $(PKGS)))$(PKG_LIBS)
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -I$(CUDA_HOME)/include $(PKG_CFLAGS) -MMD -MP $(SANITIZE)
# cudart is linked statically and loads the driver itself: no -lcuda anywhere, so every
# command that needs no GPU runs on machines without one.
LDLIBS    = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static -lnvrtc -lcupti -lcublas -lcusparse -lnccl \
             $(PKG_LIBS) -lpthread -ldl -lrt -lm

MODULE_DIRS := common datasets codegen runtime results measure explorer baselines cli
LIB_SRC   := $(filter-out cli/main.c,$(wildcard $(addsuffix /*.c,$(MODULE_DIRS))))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/obj/%.o)
ALL_OBJ   := $(LIB_OBJ) $(TEST_OBJ) $(TEST_SUPPORT_OBJ) $(BUILD)/obj/cli/main.o
# Sanitizers of `make asan` (GCC 12 needs -Wno-format-truncation with them: -O2 plus ASan's
# instrumentation makes its truncation warnings fire on snprintf calls that are fine).
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -Wno-format-truncation

.PHONY: all test gpu-test asan clean deps deps-slurm bench-datasets figures
all: $(BUILD)/explore $(TEST_BIN)

# With `make deps all` (and -j) nothing compiles before deps has installed the packages.
$(ALL_OBJ): | $(filter deps,$(MAKECMDGOALS))
# Test objects are kept, so an unchanged test is not relinked by the next make.
.SECONDARY: $(TEST_OBJ)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/librgnn.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/explore: $(BUILD)/obj/cli/main.o $(BUILD)/librgnn.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_SUPPORT_OBJ) $(BUILD)/librgnn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The source checks first (no test asserts on a duration or a speed ratio: speed lives in
# bench-datasets; no two modules include each other, and the include check still sees the circle
# of its fixture), then every test binary.
CHECK_CFLAGS = -std=c11 -D_GNU_SOURCE -I. -I$(CUDA_HOME)/include $(PKG_CFLAGS)
test: all
	@sh tests/check_no_timed_asserts.sh
	@CHECK_CFLAGS="$(CHECK_CFLAGS)" sh tests/check_includes.sh $(MODULE_DIRS)
	@cd tests/fixtures/include_circle && ! CHECK_CFLAGS=-I. sh ../../check_includes.sh m >/dev/null || \
	    { echo "tests/check_includes.sh misses the circle of tests/fixtures/include_circle"; exit 1; }
	@sh tests/check_layers.sh $(MODULE_DIRS)
	@cd tests/fixtures/layer_breach && ! sh ../../check_layers.sh low high >/dev/null || \
	    { echo "tests/check_layers.sh misses the breach of tests/fixtures/layer_breach"; exit 1; }
	@sh tests/run.sh $(TEST_BIN)

# GPU correctness sweep (needs a CUDA device): same runner, GPU tests are not skipped there, one
# binary at a time (they share the device).
gpu-test: all
	@RGNN_REQUIRE_GPU=1 RGNN_TEST_JOBS=1 sh tests/run.sh $(TEST_BIN)

# The CPU tests built with AddressSanitizer + UBSan into build-asan/. GPU tests skip there:
# NVIDIA's profiler library (CUPTI) cannot run under ASan. Any UBSan report fails the test.
# RGNN_TEST_COVER=pairwise: the tests that walk the default space's points (tests/kcover.h) walk
# its pairwise-covering points only; `make test` walks them all without the sanitizers' slowdown.
asan:
	$(MAKE) BUILD=build-asan SANITIZE="$(ASAN_FLAGS)" all
	@ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    RGNN_TEST_COVER=pairwise sh tests/run.sh $(TEST_SRC:tests/%.c=build-asan/tests/%)

bench-datasets: $(BUILD)/explore
	sh datasets/bench.sh

# Paper-style figures and index.md from the results store (explore report, plots/*.gp).
figures: $(BUILD)/explore
	$(BUILD)/explore report --db results/results.db --out results/reports/latest

# The docs' tables of record from the committed H100 stores (read-only); .ci/run fails when the
# committed docs/perf-tables.md differs from what this writes. Only stores git tracks: a scratch
# .db left in results/h100/ must not change the tables.
PERF_STORES = $(shell git ls-files 'results/h100/*.db')
.PHONY: perf-tables
perf-tables: $(BUILD)/explore
	@[ -n "$(PERF_STORES)" ] || { echo "make perf-tables: git lists no results/h100/*.db (not a git checkout?)" >&2; exit 2; }
	$(BUILD)/explore perf-tables --replay results/h100/results.db,results/h100/session14-sizes.db --loso results/h100/session6-sizes.db \
	    --transfer results/h200/session13-sizes.db --transfer-fit results/h100/session13-sizes.db \
	    --out docs/perf-tables.md $(PERF_STORES)

# Regenerates the committed fixture of tests/test_report.c (deterministic; commit the .db).
.PHONY: report-fixture
report-fixture: $(BUILD)/librgnn.a
	$(CC) $(CFLAGS) -o $(BUILD)/make_report_fixture tests/fixtures/make_report_fixture.c $(BUILD)/librgnn.a $(LDLIBS)
	rm -f tests/fixtures/report.db && $(BUILD)/make_report_fixture tests/fixtures/report.db

APT_INSTALL = if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq

deps:
	@$(APT_INSTALL) $(DEBIAN_PKGS)

# A single-node Slurm for tests/slurm/run.sh (the daemons it starts itself, on localhost).
deps-slurm:
	@$(APT_INSTALL) --no-install-recommends slurmctld slurmd slurm-client

clean:
	rm -rf build build-asan

-include $(ALL_OBJ:.o=.d)
