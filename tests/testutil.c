/* Helpers shared by the test programs: where the shared real datasets are, whether a
 * GPU is present, temporary directories. Tests that need absent data skip, saying so. */
#include "tests/testutil.h"
#include "common/util.h"
#include "runtime/rt.h"
#include "datasets/loaders.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"

#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tu_shared_datasets(void)
{
    const char *env = getenv("RGNN_TEST_DATA");
    if (env && rg_file_exists(env)) return env;
    if (rg_file_exists("../shared/datasets/README.md")) return "../shared/datasets";
    return NULL;
}

int tu_gpu_present(void)
{
    if (krt_have_device()) return 1;
    if (krt_gpu_required()) fail_msg("RGNN_REQUIRE_GPU=1 but no CUDA device is usable");
    return 0;
}

char *tu_dataset_dir(const char *name)
{
    const char *root = tu_shared_datasets();
    if (!root) return NULL;
    char *p = rg_xasprintf("%s/%s", root, name);
    if (!rg_file_exists(p)) {
        free(p);
        return NULL;
    }
    return p;
}

int tu_under_asan(void)
{
#ifdef __SANITIZE_ADDRESS__
    return 1;
#else
    return 0;
#endif
}

const char *const tu_models[] = {"rgcn", "rgat", "hgt", "pyg_rgcn", "pyg_rgat", "pyg_hgt"};
const int tu_nmodels = (int)(sizeof tu_models / sizeof tu_models[0]);

ir_dims tu_model_dims(const char *model, const ir_dims *d)
{
    ir_dims m = *d;
    if (!strcmp(model, "pyg_hgt")) m.out_dim = m.in_dim;
    return m;
}

int tu_build_variant(const char *model, const char *task, const char *config, cg_variant *v, ir_program **ir_out,
                     rg_err *err)
{
    pl_problem pb = {.model = model, .task = task, .dims = {64, 64, 1}};
    cg_config cfg;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, config, err), 0);
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(&pb, &cfg, NULL, NULL, &ir, &lp, err);
    if (rc) return rc;
    rc = cg_build(ir, lp, &cfg, v, err);
    lw_free(lp);
    if (ir_out && !rc) *ir_out = ir;
    else ir_free(ir);
    return rc;
}

void tu_expect_inapplicable(const char *model, const char *task, const char *config, const char *says,
                            const char *why)
{
    cg_variant v;
    rg_err err;
    assert_int_equal(tu_build_variant(model, task, config, &v, NULL, &err), PL_INAPPLICABLE);
    if (!strstr(err.msg, why) || !strstr(err.msg, says)) fail_msg("%s %s %s: %s", model, task, config, err.msg);
}

char *tu_config_diff(const cg_config *a, const cg_config *b)
{
    for (int k = 0; k < CFG_NKEYS; k++) {
        char va[CFG_VALUE_MAX], vb[CFG_VALUE_MAX];
        const cfg_key *key = cfg_key_at(k);
        if (strcmp(cfg_value(key, a, va), cfg_value(key, b, vb)))
            return rg_xasprintf("%s=%s, not %s=%s", key->name, vb, key->name, va);
    }
    return NULL;
}

char *tu_tmpdir(void)
{
    char tmpl[] = "/tmp/rgnn-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (!d) RG_DIE("mkdtemp failed");
    return rg_xstrdup(d);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void tu_rm_tree(char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    rg_str b = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) rg_str_putc(&b, buf[i]);
    fclose(f);
    if (len) *len = b.len;
    return b.s ? b.s : rg_xstrdup("");
}

char *tu_write_file(const char *dir, const char *name, const char *text)
{
    char *p = rg_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) RG_DIE("cannot write %s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

int64_t tu_sql_int(const char *db_path, const char *sql)
{
    sqlite3 *db;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) fail_msg("%s: cannot open", db_path);
    sqlite3_busy_timeout(db, 10000);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) != SQLITE_ROW) fail_msg("%s: no row", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

int tu_have_program(const char *program)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *copy = rg_xstrdup(path), *save = NULL;
    int found = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *full = rg_xasprintf("%s/%s", *dir ? dir : ".", program);
        found = access(full, X_OK) == 0;
        free(full);
    }
    free(copy);
    return found;
}

int64_t tu_store_measurement(rs_store *s, const rs_variant *v, rs_measurement *m, const rs_kernel_time *kernels,
                             size_t nkernels, const rs_metric *metrics, size_t nmetrics)
{
    rg_err err;
    m->variant_id = rs_upsert_variant(s, v, &err);
    if (m->variant_id <= 0) fail_msg("variant %s: %s", v->config_json, err.msg);
    int64_t id = rs_record(s, m, kernels, nkernels, metrics, nmetrics, &err);
    if (id <= 0) fail_msg("measurement of %s: %s", v->config_json, err.msg);
    return id;
}

hg_graph *tu_synth(const char *spec)
{
    rg_err err;
    hg_graph *g = synth_generate(spec, &err);
    if (!g) fail_msg("synth %s: %s", spec, err.msg);
    return g;
}
