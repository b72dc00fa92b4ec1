# Build of the RGNN kernel explorer: host code in C11, device code generated at run time.
# `make` builds build/explore; `make test` runs every CPU test (GPU tests skip without a device).

CUDA_HOME ?= /usr/local/cuda
CC        ?= gcc
PKGS      := gsl serd-0 zlib sqlite3 cmocka
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -I$(CUDA_HOME)/include $(PKG_CFLAGS) -MMD -MP
# cudart is linked statically and loads the driver itself: no -lcuda anywhere, so every
# command that needs no GPU runs on machines without one.
LDLIBS    := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static -lnvrtc -lcupti -lcublas \
             $(PKG_LIBS) -lpthread -ldl -lrt -lm
DEBIAN_PKGS := libgsl-dev libserd-dev serdi zlib1g-dev libsqlite3-dev gnuplot-nox libcmocka-dev pkg-config

MODULE_DIRS := common datasets codegen runtime measure explorer results baselines cli
LIB_SRC   := $(filter-out cli/main.c,$(wildcard $(addsuffix /*.c,$(MODULE_DIRS))))
LIB_OBJ   := $(LIB_SRC:%.c=build/obj/%.o)
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/%.c=build/tests/%)
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=build/obj/%.o)

.PHONY: all test gpu-test clean deps bench-datasets figures
all: build/explore $(TEST_BIN)

build/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

build/librgnn.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/explore: build/obj/cli/main.o build/librgnn.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/tests/%: build/obj/tests/%.o $(TEST_SUPPORT_OBJ) build/librgnn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The test sources must not assert on a duration or a speed ratio (speed lives in bench-datasets).
test: all
	@sh tests/check_no_timed_asserts.sh
	@sh tests/run.sh $(TEST_BIN)

# GPU correctness sweep (needs a CUDA device): same runner, GPU tests are not skipped there.
gpu-test: all
	@RGNN_REQUIRE_GPU=1 sh tests/run.sh $(TEST_BIN)

bench-datasets: build/explore
	sh datasets/bench.sh

# Paper-style figures and index.md from the results store (explore report, plots/*.gp).
figures: build/explore
	build/explore report --db results/results.db --out results/reports/latest

# Regenerates the committed fixture of tests/test_report.c (deterministic; commit the .db).
.PHONY: report-fixture
report-fixture: build/librgnn.a
	$(CC) $(CFLAGS) -o build/make_report_fixture tests/fixtures/make_report_fixture.c build/librgnn.a $(LDLIBS)
	rm -f tests/fixtures/report.db && build/make_report_fixture tests/fixtures/report.db

deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEBIAN_PKGS)

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(TEST_SUPPORT_OBJ:.o=.d) $(TEST_SRC:tests/%.c=build/obj/tests/%.d) build/obj/cli/main.d
