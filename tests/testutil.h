/* Helpers shared by the test programs: where the shared real datasets are, whether a
 * GPU is present, temporary directories. Tests that need absent data skip, saying so. */
#ifndef TU_TESTUTIL_H
#define TU_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "codegen/codegen.h"
#include "codegen/config.h"
#include "codegen/ir.h"
#include "results/store.h"

/* A synthetic graph of the generator's spec (datasets/loaders.h, synth_generate); fails the test with the
 * generator's message when the spec is refused. */
struct hg_graph *tu_synth(const char *spec);

/* ../shared/datasets (or $RGNN_TEST_DATA) if present, else NULL. */
const char *tu_shared_datasets(void);
/* Path of one dataset's folder under it, or NULL (caller frees). */
char *tu_dataset_dir(const char *name);
/* Skips the current test with a printed reason when the shared datasets are absent. */
#define TU_REQUIRE_DATASET(dirvar, name) \
    char *dirvar = tu_dataset_dir(name); \
    if (!dirvar) { printf("skip: ../shared/datasets/%s not present\n", name); skip(); }
/* 1 in a build with AddressSanitizer (`make asan`), else 0. */
int tu_under_asan(void);
/* First line of every GPU test, and of CPU tests that load NVIDIA's profiler host libraries
 * (CUPTI, nvperf: dlopen'ed with RTLD_DEEPBIND, which ASan refuses): under ASan it skips,
 * saying why. */
#define TU_SKIP_CUPTI_UNDER_ASAN() \
    if (tu_under_asan()) { printf("skip: ASan build: NVIDIA's profiler libraries (CUPTI) cannot run under ASan\n"); skip(); }
/* 1 when a CUDA device is usable; 0 without one, unless RGNN_REQUIRE_GPU=1 (make gpu-test)
 * makes its absence a test failure. */
int tu_gpu_present(void);
/* Skips the current test without a GPU (fails instead under RGNN_REQUIRE_GPU=1). */
#define TU_REQUIRE_GPU() \
    do { \
        TU_SKIP_CUPTI_UNDER_ASAN(); \
        if (!tu_gpu_present()) { printf("skip: no CUDA device\n"); skip(); } \
    } while (0)
/* 1 when PROGRAM is an executable in $PATH. */
int tu_have_program(const char *program);
/* Skips the current test, saying why, when PROGRAM is not installed (gnuplot on the GPU machine). */
#define TU_REQUIRE_PROGRAM(program) \
    if (!tu_have_program(program)) { printf("skip: %s is not installed\n", program); skip(); }
/* Every shipped model (the .rgnn files of models/ but lib), for the tests that check each one: the papers'
 * three and the PyG-definition programs. */
extern const char *const tu_models[];
extern const int tu_nmodels;
/* The dims a test gives a model: D, except that pyg_hgt gets OUT = IN (PyG's HGTConv has its gated
 * skip only there, and pyg_hgt always applies it). */
ir_dims tu_model_dims(const char *model, const ir_dims *d);
/* The first key whose value differs between two configs, as "KEY=A, not KEY=B" (caller frees),
 * or NULL when every key agrees. cfg_hash hashes the canonical string, so it cannot see a key that
 * the string leaves out: round-trip tests compare with this too. */
char *tu_config_diff(const cg_config *a, const cg_config *b);
/* Builds the variant of config for model/task (dims 64, 1 head): pl_build's result when it fails (PL_INAPPLICABLE
 * for a pass's refusal, err saying why), else cg_build's. *ir_out (may be NULL) keeps the program when both
 * succeed (the caller frees it). */
int tu_build_variant(const char *model, const char *task, const char *config, cg_variant *v,
                     ir_program **ir_out, rg_err *err);
/* Fails the test unless pl_build refuses config for model/task (dims 64, 1 head) as inapplicable with a
 * message holding both `says` and `why`: a pass's refusal, which sweeps record as invalid. */
void tu_expect_inapplicable(const char *model, const char *task, const char *config, const char *says,
                            const char *why);
/* A fresh empty directory under /tmp (caller frees the string). */
char *tu_tmpdir(void);
/* Removes a directory tree (a test's temporary folder) and frees its name. */
void tu_rm_tree(char *dir);
/* The whole file, NUL-terminated ("" when empty), or NULL when it cannot be read. *len (may be
 * NULL) receives its size. Caller frees. */
char *tu_read_file(const char *path, size_t *len);
/* Writes text to dir/name and returns the path (caller frees). */
char *tu_write_file(const char *dir, const char *name, const char *text);
/* The first column of the first row of a query on an SQLite file (opened read-only); the test
 * fails when the query cannot run or returns no row. */
int64_t tu_sql_int(const char *db_path, const char *sql);
/* Stores one measurement of variant v (upserted first; m->variant_id is set from it) with its
 * kernel times and metrics; the test fails on any store error. Returns the measurement's id. */
int64_t tu_store_measurement(rs_store *s, const rs_variant *v, rs_measurement *m, const rs_kernel_time *kernels,
                             size_t nkernels, const rs_metric *metrics, size_t nmetrics);

#endif
