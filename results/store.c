/* The results store: one SQLite database (WAL, versioned schema) holding runs, datasets,
 * kernel variants and their measurements; resume lookups, merge, export and regression compare. */
#include "results/store.h"
#include "codegen/config.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A prepared statement kept for reuse: a search of the default space runs the same few queries
 * for each of its 829,440 points, and preparing them anew each time took most of its setup. */
typedef struct cached_stmt {
    sqlite3_stmt *st;
    int busy;   /* handed out and not yet released: a nested use of the same query prepares another */
} cached_stmt;

#define RS_STMT_CACHE 64

struct rs_store {
    sqlite3 *db;
    char *path;
    int batch;   /* inside rs_batch_begin: each write joins the batch's transaction */
    cached_stmt cache[RS_STMT_CACHE];
    int ncache;
};

/* Long enough for a sweep process to outwait a merge or an export of another process. */
#define RS_BUSY_TIMEOUT_MS 60000
#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

/* ---------------------------------------------------------------- schema ---- */

static const char SCHEMA_V1[] =
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " uuid TEXT NOT NULL UNIQUE,"
    " started_at TEXT NOT NULL,"
    " finished_at TEXT,"
    " git_commit TEXT NOT NULL DEFAULT '',"
    " host TEXT NOT NULL DEFAULT '',"
    " gpu_name TEXT NOT NULL DEFAULT '',"
    " sm INTEGER NOT NULL DEFAULT 0,"
    " driver_version TEXT NOT NULL DEFAULT '',"
    " cuda_version TEXT NOT NULL DEFAULT '',"
    " cupti_version TEXT NOT NULL DEFAULT '',"
    " command_line TEXT NOT NULL DEFAULT '',"
    " status TEXT NOT NULL DEFAULT 'running'"
    "  CHECK (status IN ('running','finished','failed','interrupted')));"
    "CREATE TABLE datasets ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " nodes INTEGER, edges INTEGER, node_types INTEGER, edge_types INTEGER, unique_pairs INTEGER,"
    " compaction_ratio REAL, avg_degree REAL, density REAL,"
    " rel_min INTEGER, rel_max INTEGER, rel_median REAL, rel_skew REAL,"
    " max_in_degree INTEGER, in_degree_skew REAL,"
    " updated_at TEXT);"
    "CREATE TABLE variants ("
    " id INTEGER PRIMARY KEY,"
    " hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 16),"
    " config TEXT NOT NULL CHECK (json_valid(config)),"
    " model TEXT NOT NULL, task TEXT NOT NULL,"
    " dim_in INTEGER NOT NULL, dim_out INTEGER NOT NULL, heads INTEGER NOT NULL);"
    "CREATE TABLE measurements ("
    " id INTEGER PRIMARY KEY,"
    " uuid TEXT NOT NULL UNIQUE,"
    " run_id INTEGER NOT NULL REFERENCES runs(id),"
    " dataset_id INTEGER NOT NULL REFERENCES datasets(id),"
    " variant_id INTEGER NOT NULL REFERENCES variants(id),"
    " device_key TEXT NOT NULL,"
    " system TEXT NOT NULL DEFAULT 'generated',"
    " layer TEXT NOT NULL DEFAULT '',"
    " status TEXT NOT NULL CHECK (status IN ('ok','invalid','compile_error','launch_error',"
    "  'runtime_fault','wrong_answer','timeout','oom')),"
    " evidence TEXT,"
    " validation_error REAL,"
    " median_ms REAL, min_ms REAL, max_ms REAL, stddev_ms REAL,"
    " repeats INTEGER NOT NULL DEFAULT 0,"
    " peak_mem_bytes INTEGER,"
    " gemm_ms REAL, traversal_ms REAL, other_ms REAL,"
    " git_commit TEXT NOT NULL DEFAULT '',"
    " recorded_at TEXT NOT NULL,"
    " CHECK (status <> 'ok' OR median_ms IS NOT NULL));"
    "CREATE TABLE kernel_times ("
    " id INTEGER PRIMARY KEY,"
    " measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,"
    " kernel TEXT NOT NULL, category TEXT NOT NULL, median_ns REAL NOT NULL, spread_ns REAL);"
    "CREATE TABLE metrics ("
    " id INTEGER PRIMARY KEY,"
    " measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,"
    " kernel TEXT NOT NULL DEFAULT '', name TEXT NOT NULL, value REAL, unit TEXT NOT NULL DEFAULT '');"
    /* resume lookup: device + commit + variant + dataset (+ system) */
    "CREATE INDEX measurements_resume ON measurements(device_key, git_commit, variant_id, dataset_id, system);"
    "CREATE INDEX measurements_run ON measurements(run_id);"
    /* best-per-problem reports scan ok rows of a variant/dataset by time */
    "CREATE INDEX measurements_report ON measurements(variant_id, dataset_id, status, median_ms);"
    "CREATE INDEX variants_problem ON variants(model, task, dim_in, dim_out, heads);"
    "CREATE INDEX kernel_times_measurement ON kernel_times(measurement_id);"
    "CREATE INDEX metrics_measurement ON metrics(measurement_id);";

/* Version 2: runs know their process (pid, with host: a run whose process is gone is
 * interrupted) and their group (the runs of one plan and night, compared together); claims
 * make concurrent sweeps of one store measure each variant once. Older runs form a group
 * each. */
static const char V1_TO_V2[] =
    "ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN group_id TEXT NOT NULL DEFAULT '';"
    "UPDATE runs SET group_id = uuid;"
    "CREATE INDEX runs_group ON runs(group_id, started_at);"
    "CREATE TABLE claims ("
    " device_key TEXT NOT NULL, git_commit TEXT NOT NULL,"
    " variant_id INTEGER NOT NULL REFERENCES variants(id),"
    " dataset_id INTEGER NOT NULL REFERENCES datasets(id),"
    " system TEXT NOT NULL,"
    " run_id INTEGER NOT NULL REFERENCES runs(id),"
    " PRIMARY KEY (device_key, git_commit, variant_id, dataset_id, system));";

/* MIGRATIONS[v] upgrades a database of version v to v + 1; append, never edit. */
static const char *const MIGRATIONS[] = {SCHEMA_V1, V1_TO_V2};

/* The tables each version must have (an integrity check before anything is written). */
static const char *const TABLES[] = {"runs", "datasets", "variants", "measurements", "kernel_times", "metrics",
                                     "claims"};
static const int TABLES_OF_VERSION[RS_SCHEMA_VERSION + 1] = {0, 6, 7};

/* A version-1 store opened read-only cannot be migrated: a temporary view with the version-2
 * columns shadows its runs table for this connection only (temp objects are found first). */
static const char V1_READ_COMPAT[] =
    "CREATE TEMP VIEW runs AS SELECT *, 0 AS pid, uuid AS group_id FROM main.runs;";
_Static_assert(sizeof MIGRATIONS / sizeof MIGRATIONS[0] == RS_SCHEMA_VERSION,
               "one migration per schema version");

/* Column lists shared by merge (copy) and the record/insert statements. */
#define RUN_COLS "uuid, started_at, finished_at, git_commit, host, gpu_name, sm, driver_version, " \
                 "cuda_version, cupti_version, command_line, pid, group_id, status"
#define DATASET_STAT_COLS "nodes, edges, node_types, edge_types, unique_pairs, compaction_ratio, " \
                          "avg_degree, density, rel_min, rel_max, rel_median, rel_skew, max_in_degree, " \
                          "in_degree_skew, updated_at"
#define MEAS_COLS "uuid, device_key, system, layer, status, evidence, validation_error, median_ms, " \
                  "min_ms, max_ms, stddev_ms, repeats, peak_mem_bytes, gemm_ms, traversal_ms, other_ms, " \
                  "git_commit, recorded_at"
#define KERNEL_COLS "kernel, category, median_ns, spread_ns"
#define METRIC_COLS "kernel, name, value, unit"

/* Number of columns in one of the lists above. */
static int ncols(const char *cols)
{
    int n = 1;
    for (const char *p = cols; *p; p++) n += *p == ',';
    return n;
}

/* ---------------------------------------------------------------- sqlite helpers ---- */

static int db_fail(const rs_store *s, rg_err *err, const char *what)
{
    return rg_errf(err, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int exec_sql(rs_store *s, const char *sql, rg_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    rg_errf(err, "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    return -1;
}

/* The statement for sql, reused from the store's cache when one is free; hand it back with release. */
static sqlite3_stmt *prepare(rs_store *s, const char *sql, rg_err *err)
{
    for (int i = 0; i < s->ncache; i++) {
        cached_stmt *c = &s->cache[i];
        if (!c->busy && !strcmp(sqlite3_sql(c->st), sql)) {
            c->busy = 1;
            return c->st;
        }
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(s, err, "preparing a query");
        sqlite3_finalize(st);
        return NULL;
    }
    if (s->ncache < RS_STMT_CACHE) s->cache[s->ncache++] = (cached_stmt){st, 1};
    return st;
}

/* Ends a use of a statement from prepare: a cached one is reset (which also ends its read
 * transaction) and its bindings cleared for the next use; any other is finalized. */
static void release(rs_store *s, sqlite3_stmt *st)
{
    if (!st) return;
    for (int i = 0; i < s->ncache; i++) {
        if (s->cache[i].st == st) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            s->cache[i].busy = 0;
            return;
        }
    }
    sqlite3_finalize(st);
}

static void drop_cache(rs_store *s)
{
    for (int i = 0; i < s->ncache; i++) sqlite3_finalize(s->cache[i].st);
    s->ncache = 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v)) sqlite3_bind_double(st, i, v);
    else sqlite3_bind_null(st, i);   /* NaN/Inf mean "unknown" */
}

static double col_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? rg_xstrdup((const char *)t) : NULL;
}

static void col_copy(sqlite3_stmt *st, int i, char *out, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(out, cap, "%s", t ? (const char *)t : "");
}

/* Steps a statement expected to finish without rows (INSERT/UPDATE). */
static int step_done(rs_store *s, sqlite3_stmt *st, rg_err *err, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) return 0;
    return db_fail(s, err, what);
}

/* BEGIN IMMEDIATE takes the write lock up front: in WAL mode a deferred transaction that
 * later upgrades fails with SQLITE_BUSY without waiting, the busy timeout only covers this. */
static int begin_write(rs_store *s, rg_err *err)
{
    if (!s->batch) return exec_sql(s, "BEGIN IMMEDIATE", err);
    /* a write that failed inside the batch rolled it back: none may go on outside it */
    if (sqlite3_get_autocommit(s->db)) return rg_errf(err, "%s: an earlier write of this batch failed", s->path);
    return 0;
}
static int commit(rs_store *s, rg_err *err) { return s->batch ? 0 : exec_sql(s, "COMMIT", err); }

static void rollback(rs_store *s)
{
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int rs_batch_begin(rs_store *s, rg_err *err)
{
    RG_ASSERT(!s->batch);
    if (begin_write(s, err)) return -1;
    s->batch = 1;
    return 0;
}

int rs_batch_end(rs_store *s, rg_err *err)
{
    RG_ASSERT(s->batch);
    s->batch = 0;
    if (sqlite3_get_autocommit(s->db))
        return rg_errf(err, "%s: a write of the batch failed, so none of its rows were kept", s->path);
    if (commit(s, err)) {
        rollback(s);
        return -1;
    }
    return 0;
}

static void new_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* No kernel entropy (very old kernels): time and pid are unique enough per host. */
        rg_rng r;
        rg_rng_seed(&r, (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(rg_now() * 1e9));
        for (int i = 0; i < 16; i++) b[i] = (unsigned char)rg_rng_next(&r);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* RFC 4122 variant */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* ---------------------------------------------------------------- opening ---- */

/* Decides from the bytes alone whether SQLite may touch the file: SQLite itself would
 * happily turn a short or empty-looking file into a database. */
static int check_header(const char *path, rg_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return rg_errf(err, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return rg_errf(err, "%s: not a regular file", path);
    if (st.st_size == 0) return 0;
    static const char magic[16] = "SQLite format 3";
    char head[100];
    FILE *f = fopen(path, "rb");
    if (!f) return rg_errf(err, "%s: cannot read: %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got < sizeof head || memcmp(head, magic, sizeof magic) != 0)
        return rg_errf(err, "%s: not an SQLite database (results store expected); left untouched", path);
    return 0;
}

static int make_parent_dirs(const char *path, rg_err *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return 0;
    char *dir = rg_xstrdup(path);
    dir[slash - path] = 0;
    int rc = rg_mkdir_p(dir, err);
    free(dir);
    return rc;
}

static int pragma_int(rs_store *s, const char *sql, int64_t *out, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, sql, err);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    release(s, st);
    if (rc != SQLITE_ROW) return rg_errf(err, "%s: cannot read the database: %s", s->path, sqlite3_errstr(rc));
    return 0;
}

/* Read-only checks: ours, and a version we understand. *version: 0 for a blank database. */
static int check_identity(rs_store *s, int64_t *version, rg_err *err)
{
    int64_t app, tables;
    if (pragma_int(s, "PRAGMA user_version", version, err) || pragma_int(s, "PRAGMA application_id", &app, err) ||
        pragma_int(s, "SELECT count(*) FROM sqlite_master", &tables, err))
        return -1;
    if (app != RS_APPLICATION_ID && (app != 0 || tables > 0 || *version != 0))
        return rg_errf(err, "%s: an SQLite database of another program (application_id 0x%llx, %lld tables), "
                            "not a results store; left untouched",
                       s->path, (unsigned long long)app, (long long)tables);
    if (*version > RS_SCHEMA_VERSION)
        return rg_errf(err, "%s: results schema version %lld is newer than this program understands (%d); "
                            "use a newer explore; left untouched",
                       s->path, (long long)*version, RS_SCHEMA_VERSION);
    return 0;
}

/* Switching to WAL needs a moment of exclusive access; retry while another process that
 * is creating the same database holds it. */
static int enable_wal(rs_store *s, rg_err *err)
{
    for (int attempt = 0;; attempt++) {
        sqlite3_stmt *st = prepare(s, "PRAGMA journal_mode=WAL", err);
        if (!st) return -1;
        int rc = sqlite3_step(st);
        int is_wal = rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
        release(s, st);
        if (is_wal) return 0;
        if (rc == SQLITE_ROW)   /* e.g. an in-memory database: concurrent writers need WAL */
            return rg_errf(err, "%s: cannot use WAL journal mode here", s->path);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) return db_fail(s, err, "enabling WAL");
        if (attempt * 10 > RS_BUSY_TIMEOUT_MS)
            return rg_errf(err, "%s: cannot switch to WAL mode: database busy", s->path);
        usleep(10000);
    }
}

static int migrate(rs_store *s, rg_err *err)
{
    if (begin_write(s, err)) return -1;
    int64_t version;
    /* Re-checked under the write lock: another process may have created it meanwhile. */
    if (check_identity(s, &version, err)) goto fail;
    for (int64_t v = version; v < RS_SCHEMA_VERSION; v++)
        if (exec_sql(s, MIGRATIONS[v], err)) {
            rg_err_prefix(err, "migrating the results schema from version %lld", (long long)v);
            goto fail;
        }
    if (version < RS_SCHEMA_VERSION) {
        char *sql = rg_xasprintf("PRAGMA user_version=%d; PRAGMA application_id=%d", RS_SCHEMA_VERSION,
                                 RS_APPLICATION_ID);
        int rc = exec_sql(s, sql, err);
        free(sql);
        if (rc) goto fail;
    }
    return commit(s, err);
fail:
    rollback(s);
    return -1;
}

/* Opening (header check, creation, WAL switch, schema) is serialized between processes
 * with a lock on the database's folder: a second sweep starting at the same moment would
 * otherwise see a file another process is still writing and take it for garbage. */
static int lock_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? rg_xasprintf("%.*s", (int)(slash - path), path) : rg_xstrdup(".");
    if (!*dir) {
        free(dir);
        dir = rg_xstrdup("/");
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;   /* -1: no lock (e.g. a folder not yet created); opening still works */
}

static void unlock_folder(int fd)
{
    if (fd >= 0) close(fd);   /* closing releases the flock */
}

static rs_store *open_store_locked(const char *path, int create, int readonly, rg_err *err);

static rs_store *open_store(const char *path, int create, int readonly, rg_err *err)
{
    if (create && !rg_file_exists(path) && make_parent_dirs(path, err)) return NULL;
    int lock = readonly ? -1 : lock_folder(path);
    rs_store *s = open_store_locked(path, create, readonly, err);
    unlock_folder(lock);
    return s;
}

static void this_host(char *out, size_t cap)
{
    if (gethostname(out, cap - 1) != 0) out[0] = 0;
    out[cap - 1] = 0;
}

/* EPERM: the process exists but belongs to someone else. */
static int pid_alive(int64_t pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }

/* Names the damage, or 0: the tables this version must have, then SQLite's quick_check (b-tree
 * structure, page and record formats, NOT NULL and CHECK constraints). */
static int check_damage(rs_store *s, int64_t version, int readonly, rg_err *err)
{
    char found[512] = "";
    sqlite3_stmt *st = NULL;
    int missing = -1;
    for (int i = 0; i < TABLES_OF_VERSION[version] && missing < 0; i++) {
        if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st,
                               NULL) != SQLITE_OK)
            break;
        bind_text(st, 1, TABLES[i]);
        if (sqlite3_step(st) != SQLITE_ROW) missing = i;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (missing >= 0) {
        snprintf(found, sizeof found, "table '%s' is missing (schema version %lld)", TABLES[missing], (long long)version);
    } else if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check(3)", -1, &st, NULL) != SQLITE_OK) {
        snprintf(found, sizeof found, "%s", sqlite3_errmsg(s->db));
    } else {
        int rc;
        size_t n = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n + 2 < sizeof found) {
            const char *row = (const char *)sqlite3_column_text(st, 0);
            if (row && !strcmp(row, "ok")) break;
            n += (size_t)snprintf(found + n, sizeof found - n, "%s%s", n ? "; " : "", row ? row : "?");
        }
        if (rc != SQLITE_ROW && rc != SQLITE_DONE && !n) snprintf(found, sizeof found, "%s", sqlite3_errmsg(s->db));
    }
    sqlite3_finalize(st);
    if (!found[0]) return 0;
    return rg_errf(err, "%s: the results store is damaged: %s; %s (restore it from a copy, or merge its shards "
                        "into a new store)", s->path, found, readonly ? "nothing was read" : "nothing was written");
}

/* Runs still 'running' on this host whose process is gone were killed: say so. Runs of other
 * hosts are left alone, their processes cannot be checked from here. */
static int mark_stale_runs(rs_store *s, rg_err *err)
{
    char host[256];
    this_host(host, sizeof host);
    sqlite3_stmt *q = prepare(s, "SELECT id, pid FROM runs WHERE status = 'running' AND host = ?1 AND pid > 0", err);
    if (!q) return -1;
    bind_text(q, 1, host);
    int64_t *dead = NULL;
    size_t n = 0;
    while (sqlite3_step(q) == SQLITE_ROW)
        if (!pid_alive(sqlite3_column_int64(q, 1))) {
            dead = rg_xrealloc(dead, (n + 1) * sizeof *dead);
            dead[n++] = sqlite3_column_int64(q, 0);
        }
    release(s, q);
    sqlite3_stmt *up = n ? prepare(s, "UPDATE runs SET status = 'interrupted', finished_at = COALESCE((SELECT"
                                      " max(recorded_at) FROM measurements WHERE run_id = runs.id), started_at)"
                                      " WHERE id = ?1 AND status = 'running'", err) : NULL;
    int rc = n && !up ? -1 : 0;
    for (size_t i = 0; i < n && !rc; i++) {
        sqlite3_reset(up);
        sqlite3_bind_int64(up, 1, dead[i]);
        rc = step_done(s, up, err, "marking an interrupted run");
    }
    release(s, up);
    free(dead);
    return rc;
}

/* A reader's URI: read-only, and immutable when the folder cannot be written (SQLite could not
 * create the WAL index there) and no write-ahead log holds data the file lacks. */
static char *read_uri(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? rg_xasprintf("%.*s", (int)(slash - path + (slash == path)), path) : rg_xstrdup(".");
    char *wal = rg_xasprintf("%s-wal", path);
    struct stat st;
    int wal_data = stat(wal, &st) == 0 && st.st_size > 0;
    int immutable = access(dir, W_OK) != 0 && !wal_data;
    free(dir);
    free(wal);
    rg_str u = {0};
    rg_str_puts(&u, "file:");
    for (const char *p = path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#') rg_str_printf(&u, "%%%02X", (unsigned char)*p);
        else rg_str_putc(&u, *p);
    }
    rg_str_puts(&u, immutable ? "?immutable=1" : "?mode=ro");
    return u.s;
}

/* rg_precision(config): the operand precision of a stored variant (cfg_precision of its
 * config JSON; NULL when the text is not a config this build reads). Derived on reading, so the
 * schema and every stored row stay as they are: variants stored before the mma key are fp32. */
static void sql_precision(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *json = (const char *)sqlite3_value_text(argv[0]);
    cg_config c;
    cfg_default(&c);
    rg_err e;
    if (!json || cfg_parse_json(&c, json, &e)) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_text(ctx, cfg_precision(&c), -1, SQLITE_STATIC);
}

static int open_handle(rs_store *s, int readonly, rg_err *err)
{
    char *uri = readonly ? read_uri(s->path) : NULL;
    int flags = readonly ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(readonly ? uri : s->path, &s->db, flags, NULL);
    free(uri);
    if (rc != SQLITE_OK)
        return rg_errf(err, "%s: cannot open: %s", s->path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, RS_BUSY_TIMEOUT_MS);
    if (sqlite3_create_function_v2(s->db, "rg_precision", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_precision,
                                   NULL, NULL, NULL) != SQLITE_OK)
        return rg_errf(err, "%s: cannot register rg_precision: %s", s->path, sqlite3_errmsg(s->db));
    return 0;
}

/* Readers never write: an older schema is read through compatibility views, not migrated. */
static int finish_read_open(rs_store *s, int64_t version, rg_err *err)
{
    if (version == 0) return rg_errf(err, "%s: an empty database, not a results store", s->path);
    if (check_damage(s, version, 1, err)) return -1;
    if (version == 1) return exec_sql(s, V1_READ_COMPAT, err);
    return 0;
}

static rs_store *open_store_locked(const char *path, int create, int readonly, rg_err *err)
{
    int exists = rg_file_exists(path);
    if (exists && check_header(path, err)) return NULL;
    if (!exists && !create) {
        rg_errf(err, "%s: no such results database", path);
        return NULL;
    }
    if (!exists && make_parent_dirs(path, err)) return NULL;
    rs_store *s = rg_xcalloc(1, sizeof *s);
    s->path = rg_xstrdup(path);
    int64_t version;
    if (open_handle(s, readonly, err) || check_identity(s, &version, err)) goto fail;
    if (readonly) {
        if (finish_read_open(s, version, err)) goto fail;
        return s;
    }
    /* a damaged store is refused before the WAL switch, the migration or any row */
    if ((version > 0 && check_damage(s, version, 0, err)) || enable_wal(s, err) ||
        exec_sql(s, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", err) || migrate(s, err) ||
        mark_stale_runs(s, err))
        goto fail;
    return s;
fail:
    rs_close(s);
    return NULL;
}

rs_store *rs_open(const char *path, rg_err *err) { return open_store(path, 1, 0, err); }
rs_store *rs_open_existing(const char *path, rg_err *err) { return open_store(path, 0, 0, err); }
rs_store *rs_open_read(const char *path, rg_err *err) { return open_store(path, 0, 1, err); }

struct sqlite3 *rs_detach(rs_store *s)
{
    drop_cache(s);
    sqlite3 *db = s->db;
    free(s->path);
    free(s);
    return db;
}

void rs_close(rs_store *s)
{
    if (!s) return;
    drop_cache(s);
    sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

const char *rs_path(const rs_store *s) { return s->path; }

/* ---------------------------------------------------------------- names ---- */

static const char *const STATUS_NAMES[RS_STATUS_COUNT] = {
    "ok", "invalid", "compile_error", "launch_error", "runtime_fault", "wrong_answer", "timeout", "oom",
};

const char *rs_status_name(rs_status st)
{
    RG_ASSERT(st >= 0 && st < RS_STATUS_COUNT);
    return STATUS_NAMES[st];
}

int rs_status_parse(const char *name, rs_status *out)
{
    for (int i = 0; i < RS_STATUS_COUNT; i++)
        if (!strcmp(name, STATUS_NAMES[i])) {
            *out = (rs_status)i;
            return 0;
        }
    return -1;
}

const char *rs_run_status_name(rs_run_status st)
{
    static const char *const names[] = {"running", "finished", "failed", "interrupted"};
    RG_ASSERT(st >= RS_RUN_RUNNING && st <= RS_RUN_INTERRUPTED);
    return names[st];
}

char *rs_device_key(const char *gpu_name, int sm) { return rg_xasprintf("%s (sm_%d)", gpu_name, sm); }

void rs_hash_hex(uint64_t hash, char out[17]) { snprintf(out, 17, "%016llx", (unsigned long long)hash); }

/* ---------------------------------------------------------------- runs ---- */

int64_t rs_begin_run(rs_store *s, const rs_run_info *info, rg_err *err)
{
    char uuid[37], host[256] = "";
    new_uuid(uuid);
    if (info->host) snprintf(host, sizeof host, "%s", info->host);
    else this_host(host, sizeof host);
    if (info->group && rs_check_group(info->group, err)) return -1;
    sqlite3_stmt *st = prepare(s, "INSERT INTO runs(" RUN_COLS ") VALUES (?1, " NOW_SQL ", NULL, "
                                  "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, COALESCE(?11, ?1), 'running')", err);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    bind_text(st, 2, info->commit ? info->commit : "");
    bind_text(st, 3, host);
    bind_text(st, 4, info->gpu_name ? info->gpu_name : "");
    sqlite3_bind_int(st, 5, info->sm);
    bind_text(st, 6, info->driver_version ? info->driver_version : "");
    bind_text(st, 7, info->cuda_version ? info->cuda_version : "");
    bind_text(st, 8, info->cupti_version ? info->cupti_version : "");
    bind_text(st, 9, info->command_line ? info->command_line : "");
    sqlite3_bind_int64(st, 10, (int64_t)getpid());
    bind_text(st, 11, info->group);
    int rc = step_done(s, st, err, "starting a run");
    release(s, st);
    return rc ? -1 : sqlite3_last_insert_rowid(s->db);
}

int rs_check_group(const char *group, rg_err *err)
{
    size_t n = strlen(group);
    if (n == 0 || n >= RS_GROUP_MAX) return rg_errf(err, "a run group must have 1 to %d characters", RS_GROUP_MAX - 1);
    for (const char *p = group; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return rg_errf(err, "run group '%s' holds a control character", group);
    return 0;
}

int rs_finish_run(rs_store *s, int64_t run_id, rs_run_status status, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, "UPDATE runs SET status = ?2, finished_at = " NOW_SQL " WHERE id = ?1", err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, rs_run_status_name(status), -1, SQLITE_STATIC);
    int rc = step_done(s, st, err, "finishing a run");
    release(s, st);
    if (!rc && sqlite3_changes(s->db) == 0) return rg_errf(err, "%s: no run with id %lld", s->path, (long long)run_id);
    return rc;
}

int rs_get_run(rs_store *s, int64_t run_id, rs_run_row *out, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT id, uuid, started_at, finished_at, status, git_commit, gpu_name, sm,"
                                  " (SELECT count(*) FROM measurements WHERE run_id = runs.id), group_id, host, pid"
                                  " FROM runs WHERE id = ?1", err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        memset(out, 0, sizeof *out);
        out->id = sqlite3_column_int64(st, 0);
        col_copy(st, 1, out->uuid, sizeof out->uuid);
        col_copy(st, 2, out->started_at, sizeof out->started_at);
        col_copy(st, 3, out->finished_at, sizeof out->finished_at);
        col_copy(st, 4, out->status, sizeof out->status);
        col_copy(st, 5, out->commit, sizeof out->commit);
        col_copy(st, 6, out->gpu_name, sizeof out->gpu_name);
        out->sm = sqlite3_column_int(st, 7);
        out->measurements = sqlite3_column_int64(st, 8);
        col_copy(st, 9, out->group, sizeof out->group);
        col_copy(st, 10, out->host, sizeof out->host);
        out->pid = sqlite3_column_int64(st, 11);
        /* a reader cannot record it, but says it: a run of this host whose process is gone */
        char host[256];
        this_host(host, sizeof host);
        if (!strcmp(out->status, "running") && out->pid > 0 && !strcmp(out->host, host) && !pid_alive(out->pid))
            snprintf(out->status, sizeof out->status, "interrupted");
    }
    release(s, st);
    if (rc == SQLITE_ROW) return 0;
    if (rc == SQLITE_DONE) return rg_errf(err, "%s: no run with id %lld", s->path, (long long)run_id);
    return db_fail(s, err, "reading a run");
}

/* Runs the query (parameter ?1 = text) and returns how many rows matched (up to 2),
 * the first one's id in *id. */
static int match_runs(rs_store *s, const char *sql, const char *arg, int64_t *id, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, sql, err);
    if (!st) return -1;
    if (arg) bind_text(st, 1, arg);
    int n = 0, rc;
    while (n < 2 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == 0) *id = sqlite3_column_int64(st, 0);
        n++;
    }
    if (n < 2 && rc != SQLITE_DONE) n = db_fail(s, err, "looking up runs");
    release(s, st);
    return n;
}

int rs_resolve_run(rs_store *s, const char *spec, int64_t *run_id, rg_err *err)
{
    if (!strcmp(spec, "latest") || !strcmp(spec, "previous")) {
        int latest = !strcmp(spec, "latest");
        int n = match_runs(s, latest ? "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1"
                                     : "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1 OFFSET 1",
                           NULL, run_id, err);
        if (n < 0) return -1;
        if (n == 0)
            return rg_errf(err, "%s: %s", s->path, latest ? "no runs recorded" : "'previous' needs at least two runs");
        return 0;
    }
    size_t len = strlen(spec);
    if (len == 0 || strspn(spec, "0123456789abcdefABCDEF-") != len)
        return rg_errf(err, "bad run '%s': give a run id, a uuid prefix, 'latest' or 'previous'", spec);
    if (strspn(spec, "0123456789") == len && len < 18) {
        int n = match_runs(s, "SELECT id FROM runs WHERE id = CAST(?1 AS INTEGER)", spec, run_id, err);
        if (n != 0) return n < 0 ? -1 : 0;
    }
    char *lower = rg_xstrdup(spec);
    for (char *p = lower; *p; p++)
        if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
    int n = match_runs(s, "SELECT id FROM runs WHERE substr(uuid, 1, length(?1)) = ?1 ORDER BY id", lower, run_id, err);
    free(lower);
    if (n < 0) return -1;
    if (n == 0) return rg_errf(err, "%s: no run with id or uuid prefix '%s'", s->path, spec);
    if (n > 1) return rg_errf(err, "%s: uuid prefix '%s' matches several runs; give more digits", s->path, spec);
    return 0;
}

/* The k-th newest group, by the start of its first run. */
static int nth_group(rs_store *s, int k, char *out, size_t cap, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT group_id FROM runs GROUP BY group_id ORDER BY min(started_at) DESC,"
                                  " min(id) DESC LIMIT 1 OFFSET ?1", err);
    if (!st) return -1;
    sqlite3_bind_int(st, 1, k);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) col_copy(st, 0, out, cap);
    release(s, st);
    if (rc == SQLITE_ROW) return 1;
    return rc == SQLITE_DONE ? 0 : db_fail(s, err, "looking up run groups");
}

int rs_resolve_selection(rs_store *s, const char *spec, rs_selection *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(spec, "latest") || !strcmp(spec, "previous")) {
        int latest = !strcmp(spec, "latest");
        int found = nth_group(s, latest ? 0 : 1, out->group, sizeof out->group, err);
        if (found < 0) return -1;
        if (!found)
            return rg_errf(err, "%s: %s", s->path, latest ? "no runs recorded" : "'previous' needs runs of two groups "
                                                                              "(two nights of a plan, or two sweeps)");
        return 0;
    }
    if (!strncmp(spec, "group:", 6)) {
        snprintf(out->group, sizeof out->group, "%s", spec + 6);
        int64_t id;
        int n = match_runs(s, "SELECT id FROM runs WHERE group_id = ?1", out->group, &id, err);
        if (n < 0) return -1;
        return n ? 0 : rg_errf(err, "%s: no runs in group '%s'", s->path, out->group);
    }
    return rs_resolve_run(s, spec, &out->run_id, err);
}

int rs_selection_summary(rs_store *s, const rs_selection *sel, int64_t *runs, int64_t *measurements, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT count(*), (SELECT count(*) FROM measurements WHERE run_id IN"
                                  " (SELECT id FROM runs WHERE id = ?1 OR (?1 = 0 AND group_id = ?2)))"
                                  " FROM runs WHERE id = ?1 OR (?1 = 0 AND group_id = ?2)", err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, sel->run_id);
    bind_text(st, 2, sel->group);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *runs = sqlite3_column_int64(st, 0);
        *measurements = sqlite3_column_int64(st, 1);
    }
    release(s, st);
    return rc == SQLITE_ROW ? 0 : db_fail(s, err, "counting a group's runs");
}

/* ---------------------------------------------------------------- datasets, variants ---- */

static int64_t select_id(rs_store *s, const char *sql, const char *key, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, sql, err);
    if (!st) return -1;
    bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    release(s, st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(s, err, "looking up an id");
    return id;   /* 0: absent (rowids start at 1) */
}

int64_t rs_upsert_dataset(rs_store *s, const char *name, const hg_stats *x, rg_err *err)
{
    if (!name || !*name) return rg_errf(err, "dataset name is empty");
    const char *sql = x ? "INSERT INTO datasets(name, " DATASET_STAT_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                          " ?9, ?10, ?11, ?12, ?13, ?14, ?15, " NOW_SQL ") ON CONFLICT(name) DO UPDATE SET"
                          " nodes = excluded.nodes, edges = excluded.edges, node_types = excluded.node_types,"
                          " edge_types = excluded.edge_types, unique_pairs = excluded.unique_pairs,"
                          " compaction_ratio = excluded.compaction_ratio, avg_degree = excluded.avg_degree,"
                          " density = excluded.density, rel_min = excluded.rel_min, rel_max = excluded.rel_max,"
                          " rel_median = excluded.rel_median, rel_skew = excluded.rel_skew,"
                          " max_in_degree = excluded.max_in_degree, in_degree_skew = excluded.in_degree_skew,"
                          " updated_at = excluded.updated_at"
                        : "INSERT OR IGNORE INTO datasets(name) VALUES (?1)";
    sqlite3_stmt *st = prepare(s, sql, err);
    if (!st) return -1;
    bind_text(st, 1, name);
    if (x) {
        sqlite3_bind_int64(st, 2, x->nodes);
        sqlite3_bind_int64(st, 3, x->edges);
        sqlite3_bind_int(st, 4, x->node_types);
        sqlite3_bind_int(st, 5, x->edge_types);
        sqlite3_bind_int64(st, 6, x->unique_pairs);
        bind_real(st, 7, x->compaction_ratio);
        bind_real(st, 8, x->avg_degree);
        bind_real(st, 9, x->density);
        sqlite3_bind_int64(st, 10, x->rel_min);
        sqlite3_bind_int64(st, 11, x->rel_max);
        bind_real(st, 12, x->rel_median);
        bind_real(st, 13, x->rel_skew);
        sqlite3_bind_int64(st, 14, x->max_in_degree);
        bind_real(st, 15, x->in_degree_skew);
    }
    int rc = step_done(s, st, err, "storing a dataset");
    release(s, st);
    if (rc) return -1;
    return select_id(s, "SELECT id FROM datasets WHERE name = ?1", name, err);
}

/* Finds the variant of this hash (checking it describes the same thing) or inserts it.
 * *added is set to 1 when inserted. Shared by rs_upsert_variant and rs_merge. */
static int64_t find_or_insert_variant(rs_store *s, const char *hash, const char *config, const char *model,
                                      const char *task, int dim_in, int dim_out, int heads, int *added, rg_err *err)
{
    *added = 0;
    sqlite3_stmt *st = prepare(s, "SELECT id, json(config) = json(?2) AND model = ?3 AND task = ?4 AND dim_in = ?5"
                                  " AND dim_out = ?6 AND heads = ?7 FROM variants WHERE hash = ?1", err);
    if (!st) return -1;
    bind_text(st, 1, hash);
    bind_text(st, 2, config);
    bind_text(st, 3, model);
    bind_text(st, 4, task);
    sqlite3_bind_int(st, 5, dim_in);
    sqlite3_bind_int(st, 6, dim_out);
    sqlite3_bind_int(st, 7, heads);
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    int same = rc == SQLITE_ROW && sqlite3_column_int(st, 1) == 1;
    release(s, st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(s, err, "looking up a variant");
    if (id > 0 && !same)
        return rg_errf(err, "%s: config hash %s is already stored for a different config or problem "
                            "(hash collision or non-canonical config)", s->path, hash);
    if (id > 0) return id;
    st = prepare(s, "INSERT INTO variants(hash, config, model, task, dim_in, dim_out, heads)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", err);
    if (!st) return -1;
    bind_text(st, 1, hash);
    bind_text(st, 2, config);
    bind_text(st, 3, model);
    bind_text(st, 4, task);
    sqlite3_bind_int(st, 5, dim_in);
    sqlite3_bind_int(st, 6, dim_out);
    sqlite3_bind_int(st, 7, heads);
    rc = step_done(s, st, err, "storing a variant");
    release(s, st);
    if (rc) return -1;
    *added = 1;
    return sqlite3_last_insert_rowid(s->db);
}

int64_t rs_upsert_variant(rs_store *s, const rs_variant *v, rg_err *err)
{
    if (!v->config_json || !v->model || !*v->model || !v->task || !*v->task)
        return rg_errf(err, "variant needs a config, a model and a task");
    char hash[17];
    rs_hash_hex(v->hash ? v->hash : rg_fnv1a64(v->config_json, strlen(v->config_json), RG_FNV_SEED), hash);
    /* json_valid is also a CHECK constraint; testing first gives a message that says why. */
    sqlite3_stmt *st = prepare(s, "SELECT json_valid(?1)", err);
    if (!st) return -1;
    bind_text(st, 1, v->config_json);
    int valid = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    release(s, st);
    if (!valid) return rg_errf(err, "variant %s: config is not valid JSON: %.200s", hash, v->config_json);
    if (begin_write(s, err)) return -1;
    int added;
    int64_t id = find_or_insert_variant(s, hash, v->config_json, v->model, v->task, v->dim_in, v->dim_out,
                                        v->heads, &added, err);
    if (id < 0 || commit(s, err)) {
        rollback(s);
        return -1;
    }
    return id;
}

/* ---------------------------------------------------------------- measurements ---- */

void rs_measurement_init(rs_measurement *m)
{
    memset(m, 0, sizeof *m);
    m->status = RS_OK;
    m->validation_error = m->median_ms = m->min_ms = m->max_ms = m->stddev_ms = NAN;
    m->gemm_ms = m->traversal_ms = m->other_ms = NAN;
    m->peak_mem_bytes = -1;
}

static int check_measurement(const rs_measurement *m, rg_err *err)
{
    if (m->status < 0 || m->status >= RS_STATUS_COUNT) return rg_errf(err, "measurement has an unknown status %d", (int)m->status);
    if (!m->device_key || !*m->device_key) return rg_errf(err, "measurement has no device key");
    if (m->status == RS_OK && !(isfinite(m->median_ms) && m->median_ms >= 0))
        return rg_errf(err, "measurement with status ok has no median time");
    return 0;
}

static int insert_measurement(rs_store *s, const rs_measurement *m, int64_t *id, rg_err *err)
{
    char uuid[37];
    new_uuid(uuid);
    sqlite3_stmt *st = prepare(s, "INSERT INTO measurements(run_id, dataset_id, variant_id, " MEAS_COLS ") VALUES"
                                  " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
                                  " ?18, ?19, COALESCE(?20, (SELECT git_commit FROM runs WHERE id = ?1)), " NOW_SQL ")",
                               err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, m->run_id);
    sqlite3_bind_int64(st, 2, m->dataset_id);
    sqlite3_bind_int64(st, 3, m->variant_id);
    bind_text(st, 4, uuid);
    bind_text(st, 5, m->device_key);
    bind_text(st, 6, m->system ? m->system : "generated");
    bind_text(st, 7, m->layer ? m->layer : "");
    bind_text(st, 8, rs_status_name(m->status));
    bind_text(st, 9, m->evidence);
    bind_real(st, 10, m->validation_error);
    bind_real(st, 11, m->median_ms);
    bind_real(st, 12, m->min_ms);
    bind_real(st, 13, m->max_ms);
    bind_real(st, 14, m->stddev_ms);
    sqlite3_bind_int(st, 15, m->repeats);
    if (m->peak_mem_bytes >= 0) sqlite3_bind_int64(st, 16, m->peak_mem_bytes);
    bind_real(st, 17, m->gemm_ms);
    bind_real(st, 18, m->traversal_ms);
    bind_real(st, 19, m->other_ms);
    bind_text(st, 20, m->commit);
    int rc = step_done(s, st, err, "recording a measurement");
    release(s, st);
    *id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

static int insert_kernels(rs_store *s, int64_t mid, const rs_kernel_time *k, size_t n, rg_err *err)
{
    if (n == 0) return 0;
    sqlite3_stmt *st = prepare(s, "INSERT INTO kernel_times(measurement_id, " KERNEL_COLS ") VALUES (?1, ?2, ?3, ?4, ?5)", err);
    if (!st) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!k[i].kernel || !k[i].category || !isfinite(k[i].median_ns)) {
            rc = rg_errf(err, "kernel time %zu lacks a name, a category or a median", i);
            break;
        }
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, mid);
        bind_text(st, 2, k[i].kernel);
        bind_text(st, 3, k[i].category);
        bind_real(st, 4, k[i].median_ns);
        bind_real(st, 5, k[i].spread_ns);
        rc = step_done(s, st, err, "recording kernel times");
    }
    release(s, st);
    return rc;
}

static int insert_metrics(rs_store *s, int64_t mid, const rs_metric *x, size_t n, rg_err *err)
{
    if (n == 0) return 0;
    sqlite3_stmt *st = prepare(s, "INSERT INTO metrics(measurement_id, " METRIC_COLS ") VALUES (?1, ?2, ?3, ?4, ?5)", err);
    if (!st) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!x[i].name) {
            rc = rg_errf(err, "metric %zu has no name", i);
            break;
        }
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, mid);
        bind_text(st, 2, x[i].kernel ? x[i].kernel : "");
        bind_text(st, 3, x[i].name);
        bind_real(st, 4, x[i].value);
        bind_text(st, 5, x[i].unit ? x[i].unit : "");
        rc = step_done(s, st, err, "recording metrics");
    }
    release(s, st);
    return rc;
}

int64_t rs_record(rs_store *s, const rs_measurement *m, const rs_kernel_time *kernels, size_t n_kernels,
                  const rs_metric *metrics, size_t n_metrics, rg_err *err)
{
    if (check_measurement(m, err)) return -1;
    if (begin_write(s, err)) return -1;
    int64_t id = -1;
    if (insert_measurement(s, m, &id, err) || insert_kernels(s, id, kernels, n_kernels, err) ||
        insert_metrics(s, id, metrics, n_metrics, err) || commit(s, err)) {
        rollback(s);
        return -1;
    }
    return id;
}

/* The resume key's problem, device, commit and system, as parameters ?1 to ?9 (bind_resume_key binds them). */
#define WHERE_RESUME                                                                                     \
    " WHERE m.device_key = ?1 AND d.name = ?2 AND m.git_commit = ?3 AND v.model = ?4 AND v.task = ?5"    \
    " AND v.dim_in = ?6 AND v.dim_out = ?7 AND v.heads = ?8 AND m.system = ?9"

static void bind_resume_key(sqlite3_stmt *st, const rs_resume_key *k)
{
    bind_text(st, 1, k->device_key);
    bind_text(st, 2, k->dataset);
    bind_text(st, 3, k->commit ? k->commit : "");
    bind_text(st, 4, k->model);
    bind_text(st, 5, k->task);
    sqlite3_bind_int(st, 6, k->dim_in);
    sqlite3_bind_int(st, 7, k->dim_out);
    sqlite3_bind_int(st, 8, k->heads);
    bind_text(st, 9, k->system ? k->system : "generated");
}

int rs_measured_hashes(rs_store *s, const rs_resume_key *k, char (**hashes)[17], size_t *n, rg_err *err)
{
    *hashes = NULL;
    *n = 0;
    sqlite3_stmt *st = prepare(s, "SELECT DISTINCT v.hash FROM measurements m"
                                  " JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
                                  WHERE_RESUME " ORDER BY v.hash", err);
    if (!st) return -1;
    bind_resume_key(st, k);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            *hashes = rg_xrealloc(*hashes, cap * sizeof **hashes);
        }
        col_copy(st, 0, (*hashes)[(*n)++], sizeof **hashes);
    }
    release(s, st);
    if (rc == SQLITE_DONE) return 0;
    free(*hashes);
    *hashes = NULL;
    *n = 0;
    return db_fail(s, err, "resume lookup");
}

int rs_already_measured(rs_store *s, const rs_resume_key *k, rs_status *status, rg_err *err)
{
    char hash[17];
    rs_hash_hex(k->config_hash, hash);
    sqlite3_stmt *st = prepare(s, "SELECT m.status FROM measurements m"
                                  " JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
                                  WHERE_RESUME " AND v.hash = ?10 ORDER BY m.id DESC LIMIT 1", err);
    if (!st) return -1;
    bind_resume_key(st, k);
    bind_text(st, 10, hash);
    int rc = sqlite3_step(st), found = rc == SQLITE_ROW;
    if (found && status && rs_status_parse((const char *)sqlite3_column_text(st, 0), status)) *status = RS_INVALID;
    release(s, st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(s, err, "resume lookup");
    return found;
}

/* 1 when the run holding a claim may still measure it: running, and on this host its process
 * is alive (another host's process cannot be checked: its claim stands until its run ends). */
static int claim_holder_live(rs_store *s, int64_t run_id, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT status, host, pid FROM runs WHERE id = ?1", err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st), live = 0;
    if (rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "running")) {
        char host[256];
        this_host(host, sizeof host);
        live = strcmp((const char *)sqlite3_column_text(st, 1), host) || pid_alive(sqlite3_column_int64(st, 2));
    }
    release(s, st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(s, err, "reading a claim's run");
    return live;
}

static void bind_claim_key(sqlite3_stmt *st, const rs_claim_key *k)
{
    bind_text(st, 1, k->device_key);
    bind_text(st, 2, k->commit ? k->commit : "");
    sqlite3_bind_int64(st, 3, k->variant_id);
    sqlite3_bind_int64(st, 4, k->dataset_id);
    bind_text(st, 5, k->system ? k->system : "generated");
    if (sqlite3_bind_parameter_count(st) >= 6) sqlite3_bind_int64(st, 6, k->run_id);
}

/* The decision, inside the caller's write transaction. */
static int claim_locked(rs_store *s, const rs_claim_key *k, int remeasure, rg_err *err)
{
    static const char *const SQL[] = {
        "SELECT 1 FROM measurements WHERE device_key = ?1 AND git_commit = ?2 AND variant_id = ?3"
        " AND dataset_id = ?4 AND system = ?5 LIMIT 1",
        "SELECT run_id FROM claims WHERE device_key = ?1 AND git_commit = ?2 AND variant_id = ?3"
        " AND dataset_id = ?4 AND system = ?5",
        "INSERT INTO claims(device_key, git_commit, variant_id, dataset_id, system, run_id)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO UPDATE SET run_id = excluded.run_id",
    };
    int64_t holder = 0;
    for (int q = 0; q < 2; q++) {
        if (q == 0 && remeasure) continue;
        sqlite3_stmt *st = prepare(s, SQL[q], err);
        if (!st) return -1;
        bind_claim_key(st, k);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && q == 1) holder = sqlite3_column_int64(st, 0);
        release(s, st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(s, err, "looking up a claim");
        if (rc == SQLITE_ROW && q == 0) return RS_CLAIM_MEASURED;
    }
    if (holder && holder != k->run_id) {
        int live = claim_holder_live(s, holder, err);
        if (live) return live < 0 ? -1 : RS_CLAIM_HELD;
    }
    sqlite3_stmt *st = prepare(s, SQL[2], err);
    if (!st) return -1;
    bind_claim_key(st, k);
    int rc = step_done(s, st, err, "claiming a variant");
    release(s, st);
    return rc ? -1 : RS_CLAIMED;
}

int rs_claim(rs_store *s, const rs_claim_key *k, int remeasure, rg_err *err)
{
    RG_ASSERT(k->run_id > 0 && k->variant_id > 0 && k->dataset_id > 0 && k->device_key);
    if (begin_write(s, err)) return -1;
    int rc = claim_locked(s, k, remeasure, err);
    if (rc < 0 || commit(s, err)) {
        rollback(s);
        return -1;
    }
    return rc;
}

/* ---------------------------------------------------------------- queries ---- */

#define FROM_MVD " FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
#define FILTER_SQL                                                                                          \
    " WHERE (?1 = 0 OR m.run_id = ?1) AND (?2 IS NULL OR v.model = ?2) AND (?3 IS NULL OR d.name = ?3)"    \
    " AND (?4 IS NULL OR v.task = ?4) AND (?5 IS NULL OR m.device_key = ?5) AND (?6 IS NULL OR m.system = ?6)" \
    " AND (?7 IS NULL OR m.git_commit = ?7)"                                                                 \
    " AND (?8 IS NULL OR m.run_id IN (SELECT id FROM runs WHERE group_id = ?8))"

static void bind_filter(sqlite3_stmt *st, const rs_filter *f)
{
    static const rs_filter none;
    if (!f) f = &none;
    sqlite3_bind_int64(st, 1, f->run_id);
    bind_text(st, 2, f->model);
    bind_text(st, 3, f->dataset);
    bind_text(st, 4, f->task);
    bind_text(st, 5, f->device_key);
    bind_text(st, 6, f->system);
    bind_text(st, 7, f->commit);
    bind_text(st, 8, f->group);
}

static int replace_metric(rs_store *s, sqlite3_stmt *del, const char *name, const char *unit, int64_t id,
                          double value, rg_err *err)
{
    sqlite3_reset(del);
    sqlite3_bind_int64(del, 1, id);
    bind_text(del, 2, name);
    if (step_done(s, del, err, "replacing a metric")) return -1;
    if (!isfinite(value)) return 0;
    rs_metric x = {"", name, unit, value};
    if (insert_metrics(s, id, &x, 1, err) == 0) return 0;
    /* the usual cause: a foreign-key failure, the measurement is not in this store */
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return rg_errf(err, "measurement %lld: %s", (long long)id, why);
}

/* Removes NAME from every measurement the scope matches (inside the caller's transaction). */
static int clear_metric(rs_store *s, const char *name, const rs_filter *scope, rg_err *err)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM metrics WHERE kernel = '' AND name = ?9 AND measurement_id IN"
                                  " (SELECT m.id" FROM_MVD FILTER_SQL ")", err);
    if (!st) return -1;
    bind_filter(st, scope);
    bind_text(st, 9, name);
    int rc = step_done(s, st, err, "clearing a metric");
    release(s, st);
    return rc;
}

int rs_set_metric(rs_store *s, const char *name, const char *unit, const rs_filter *scope, const int64_t *ids,
                  const double *values, size_t n, rg_err *err)
{
    RG_ASSERT(name && *name);
    if (begin_write(s, err)) return -1;
    if (scope && clear_metric(s, name, scope, err)) {
        rollback(s);
        return -1;
    }
    sqlite3_stmt *del = prepare(s, "DELETE FROM metrics WHERE measurement_id = ?1 AND kernel = '' AND name = ?2", err);
    int rc = del ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++) rc = replace_metric(s, del, name, unit, ids[i], values[i], err);
    release(s, del);
    if (rc || commit(s, err)) {
        rollback(s);
        return -1;
    }
    return 0;
}

/* SQLite takes the bare columns of a min() query from the row holding the minimum, so
 * one pass yields each problem's best time together with its variant. */
static int query_best(rs_store *s, const rs_filter *f, int by_device, rs_best **rows, size_t *n, rg_err *err)
{
    char *sql = rg_xasprintf(
        "SELECT m.device_key, m.system, v.model, v.task, d.name, v.dim_in, v.dim_out, v.heads,"
        " min(CASE WHEN m.status = 'ok' THEN m.median_ms END), m.id, m.run_id, v.hash, v.config,"
        " sum(m.status = 'ok'), count(*)" FROM_MVD FILTER_SQL
        " GROUP BY %s m.system, v.model, v.task, d.name, v.dim_in, v.dim_out, v.heads"
        " ORDER BY v.model, v.task, d.name, v.dim_in, v.dim_out, v.heads, m.system, m.device_key",
        by_device ? "m.device_key," : "");
    sqlite3_stmt *st = prepare(s, sql, err);
    free(sql);
    if (!st) return -1;
    bind_filter(st, f);
    size_t cap = 16, count = 0;
    rs_best *out = rg_xmalloc(cap * sizeof *out);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) out = rg_xrealloc(out, (cap *= 2) * sizeof *out);
        rs_best *b = &out[count++];
        memset(b, 0, sizeof *b);
        b->device_key = col_dup(st, 0);
        b->system = col_dup(st, 1);
        b->model = col_dup(st, 2);
        b->task = col_dup(st, 3);
        b->dataset = col_dup(st, 4);
        b->dim_in = sqlite3_column_int(st, 5);
        b->dim_out = sqlite3_column_int(st, 6);
        b->heads = sqlite3_column_int(st, 7);
        b->best_ms = col_real(st, 8);
        b->n_ok = sqlite3_column_int64(st, 13);
        b->n_total = sqlite3_column_int64(st, 14);
        if (isnan(b->best_ms)) continue;   /* every attempt failed: no best variant to name */
        b->measurement_id = sqlite3_column_int64(st, 9);
        b->run_id = sqlite3_column_int64(st, 10);
        col_copy(st, 11, b->hash, sizeof b->hash);
        b->config_json = col_dup(st, 12);
    }
    release(s, st);
    if (rc != SQLITE_DONE) {
        rs_best_free(out, count);
        return db_fail(s, err, "querying best times");
    }
    *rows = out;
    *n = count;
    return 0;
}

int rs_query_best(rs_store *s, const rs_filter *f, rs_best **rows, size_t *n, rg_err *err)
{
    return query_best(s, f, 1, rows, n, err);
}

void rs_best_free(rs_best *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].device_key);
        free(rows[i].system);
        free(rows[i].model);
        free(rows[i].task);
        free(rows[i].dataset);
        free(rows[i].config_json);
    }
    free(rows);
}

static void fill_row(sqlite3_stmt *st, rs_row *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    r->run_id = sqlite3_column_int64(st, 1);
    r->device_key = col_dup(st, 2);
    r->system = col_dup(st, 3);
    r->layer = col_dup(st, 4);
    r->model = col_dup(st, 5);
    r->task = col_dup(st, 6);
    r->dataset = col_dup(st, 7);
    r->evidence = col_dup(st, 8);
    r->commit = col_dup(st, 9);
    col_copy(st, 10, r->hash, sizeof r->hash);
    r->dim_in = sqlite3_column_int(st, 11);
    r->dim_out = sqlite3_column_int(st, 12);
    r->heads = sqlite3_column_int(st, 13);
    r->repeats = sqlite3_column_int(st, 14);
    if (rs_status_parse((const char *)sqlite3_column_text(st, 15), &r->status)) r->status = RS_INVALID;
    r->median_ms = col_real(st, 16);
    r->min_ms = col_real(st, 17);
    r->max_ms = col_real(st, 18);
    r->stddev_ms = col_real(st, 19);
    r->validation_error = col_real(st, 20);
    r->gemm_ms = col_real(st, 21);
    r->traversal_ms = col_real(st, 22);
    r->other_ms = col_real(st, 23);
    r->peak_mem_bytes = sqlite3_column_type(st, 24) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 24);
    r->n_kernels = sqlite3_column_int64(st, 25);
    r->n_metrics = sqlite3_column_int64(st, 26);
    r->span_ms = col_real(st, 27);
}

int rs_query_measurements(rs_store *s, const rs_filter *f, rs_row **rows, size_t *n, rg_err *err)
{
    sqlite3_stmt *st = prepare(
        s, "SELECT m.id, m.run_id, m.device_key, m.system, m.layer, v.model, v.task, d.name, m.evidence,"
           " m.git_commit, v.hash, v.dim_in, v.dim_out, v.heads, m.repeats, m.status, m.median_ms, m.min_ms,"
           " m.max_ms, m.stddev_ms, m.validation_error, m.gemm_ms, m.traversal_ms, m.other_ms, m.peak_mem_bytes,"
           " (SELECT count(*) FROM kernel_times k WHERE k.measurement_id = m.id),"
           " (SELECT count(*) FROM metrics x WHERE x.measurement_id = m.id),"
           " (SELECT value FROM metrics x WHERE x.measurement_id = m.id AND x.kernel = '' AND x.name = 'span_ms')"
           FROM_MVD FILTER_SQL " ORDER BY m.id",
        err);
    if (!st) return -1;
    bind_filter(st, f);
    size_t cap = 16, count = 0;
    rs_row *out = rg_xmalloc(cap * sizeof *out);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) out = rg_xrealloc(out, (cap *= 2) * sizeof *out);
        fill_row(st, &out[count++]);
    }
    release(s, st);
    if (rc != SQLITE_DONE) {
        rs_rows_free(out, count);
        return db_fail(s, err, "querying measurements");
    }
    *rows = out;
    *n = count;
    return 0;
}

void rs_rows_free(rs_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rs_row *r = &rows[i];
        free(r->device_key);
        free(r->system);
        free(r->layer);
        free(r->model);
        free(r->task);
        free(r->dataset);
        free(r->evidence);
        free(r->commit);
    }
    free(rows);
}

/* ---------------------------------------------------------------- export ---- */

int rs_format_parse(const char *name, rs_format *out)
{
    if (!strcmp(name, "csv")) *out = RS_CSV;
    else if (!strcmp(name, "json")) *out = RS_JSON;
    else return -1;
    return 0;
}

/* Export columns: name in the output, SQL expression over m, r, v, d. */
static const struct export_col {
    const char *name, *expr;
} EXPORT_COLS[] = {
    {"measurement_id", "m.id"}, {"measurement_uuid", "m.uuid"}, {"run_id", "m.run_id"},
    {"run_uuid", "r.uuid"}, {"recorded_at", "m.recorded_at"}, {"commit", "m.git_commit"},
    {"host", "r.host"}, {"device", "m.device_key"}, {"gpu_name", "r.gpu_name"}, {"sm", "r.sm"},
    {"system", "m.system"}, {"layer", "m.layer"}, {"model", "v.model"}, {"task", "v.task"},
    {"dim_in", "v.dim_in"}, {"dim_out", "v.dim_out"}, {"heads", "v.heads"}, {"config_hash", "v.hash"},
    {"config", "v.config"}, {"precision", "rg_precision(v.config)"}, {"dataset", "d.name"}, {"nodes", "d.nodes"}, {"edges", "d.edges"},
    {"node_types", "d.node_types"}, {"edge_types", "d.edge_types"}, {"unique_pairs", "d.unique_pairs"},
    {"compaction_ratio", "d.compaction_ratio"}, {"avg_degree", "d.avg_degree"}, {"density", "d.density"},
    {"status", "m.status"}, {"median_ms", "m.median_ms"}, {"min_ms", "m.min_ms"}, {"max_ms", "m.max_ms"},
    {"stddev_ms", "m.stddev_ms"}, {"repeats", "m.repeats"}, {"peak_mem_bytes", "m.peak_mem_bytes"},
    {"gemm_ms", "m.gemm_ms"}, {"traversal_ms", "m.traversal_ms"}, {"other_ms", "m.other_ms"},
    {"validation_error", "m.validation_error"}, {"evidence", "m.evidence"},
};
#define N_EXPORT_COLS (sizeof EXPORT_COLS / sizeof EXPORT_COLS[0])

static char *export_sql(rs_format fmt)
{
    rg_str sql = {0};
    rg_str_puts(&sql, fmt == RS_JSON ? "SELECT json_object(" : "SELECT ");
    for (size_t i = 0; i < N_EXPORT_COLS; i++) {
        const char *expr = EXPORT_COLS[i].expr;
        if (i) rg_str_puts(&sql, ", ");
        if (fmt == RS_CSV) rg_str_puts(&sql, expr);
        else if (!strcmp(EXPORT_COLS[i].name, "config")) rg_str_printf(&sql, "'config', json(%s)", expr);
        else rg_str_printf(&sql, "'%s', %s", EXPORT_COLS[i].name, expr);
    }
    if (fmt == RS_JSON)
        rg_str_puts(&sql, ", 'kernels', json((SELECT json_group_array(json_object('kernel', k.kernel,"
                          " 'category', k.category, 'median_ns', k.median_ns, 'spread_ns', k.spread_ns))"
                          " FROM kernel_times k WHERE k.measurement_id = m.id)),"
                          " 'metrics', json((SELECT json_group_array(json_object('kernel', x.kernel,"
                          " 'name', x.name, 'value', x.value, 'unit', x.unit))"
                          " FROM metrics x WHERE x.measurement_id = m.id)))");
    rg_str_puts(&sql, FROM_MVD " JOIN runs r ON r.id = m.run_id" FILTER_SQL " ORDER BY m.id");
    return sql.s;
}

/* RFC 4180: quote fields holding separators, quotes, line breaks or edge spaces. */
static void csv_field(FILE *out, const char *v)
{
    size_t n = strlen(v);
    int quote = n > 0 && (strpbrk(v, ",\"\r\n") || v[0] == ' ' || v[n - 1] == ' ');
    if (!quote) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *p = v; *p; p++) {
        if (*p == '"') fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

/* Shortest decimal that reads back to the same double. */
static void csv_real(FILE *out, double v)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, out);
}

static void csv_row(FILE *out, sqlite3_stmt *st)
{
    for (int i = 0; i < (int)N_EXPORT_COLS; i++) {
        if (i) fputc(',', out);
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL: break;
        case SQLITE_FLOAT: csv_real(out, sqlite3_column_double(st, i)); break;
        default: csv_field(out, (const char *)sqlite3_column_text(st, i));
        }
    }
    fputs("\r\n", out);
}

int64_t rs_export(rs_store *s, rs_format fmt, FILE *out, const rs_filter *f, rg_err *err)
{
    char *sql = export_sql(fmt);
    sqlite3_stmt *st = prepare(s, sql, err);
    free(sql);
    if (!st) return -1;
    bind_filter(st, f);
    if (fmt == RS_CSV) {
        for (size_t i = 0; i < N_EXPORT_COLS; i++) fprintf(out, "%s%s", i ? "," : "", EXPORT_COLS[i].name);
        fputs("\r\n", out);
    } else {
        fputc('[', out);
    }
    int64_t rows = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (fmt == RS_CSV) csv_row(out, st);
        else fprintf(out, "%s\n%s", rows ? "," : "", (const char *)sqlite3_column_text(st, 0));
        rows++;
    }
    release(s, st);
    if (rc != SQLITE_DONE) return db_fail(s, err, "exporting");
    if (fmt == RS_JSON) fputs(rows ? "\n]\n" : "]\n", out);
    if (fflush(out) != 0 || ferror(out)) return rg_errf(err, "writing the export: %s", strerror(errno));
    return rows;
}

/* ---------------------------------------------------------------- compare ---- */

const char *rs_cmp_kind_name(rs_cmp_kind k)
{
    static const char *const names[] = {"REGRESSION", "FAILED", "improvement", "same", "missing", "new"};
    RG_ASSERT(k >= RS_CMP_REGRESSION && k <= RS_CMP_NEW);
    return names[k];
}

static int problem_cmp(const rs_best *a, const rs_best *b)
{
    int c;
    if ((c = strcmp(a->system, b->system)) || (c = strcmp(a->model, b->model)) || (c = strcmp(a->task, b->task)) ||
        (c = strcmp(a->dataset, b->dataset)))
        return c;
    if (a->dim_in != b->dim_in) return a->dim_in < b->dim_in ? -1 : 1;
    if (a->dim_out != b->dim_out) return a->dim_out < b->dim_out ? -1 : 1;
    if (a->heads != b->heads) return a->heads < b->heads ? -1 : 1;
    return 0;
}

static int problem_qsort_cmp(const void *a, const void *b) { return problem_cmp(a, b); }

static void add_cmp_row(rs_comparison *c, size_t *cap, const rs_best *key, const rs_best *base, const rs_best *head,
                        double threshold)
{
    int base_ok = base && !isnan(base->best_ms), head_ok = head && !isnan(head->best_ms);
    rs_cmp_kind kind;
    if (base_ok && head_ok) {
        double ratio = head->best_ms / base->best_ms;
        kind = ratio > 1 + threshold ? RS_CMP_REGRESSION : ratio < 1 / (1 + threshold) ? RS_CMP_IMPROVEMENT : RS_CMP_SAME;
    } else if (base_ok) {
        kind = head ? RS_CMP_FAILED : RS_CMP_MISSING;
    } else if (head_ok) {
        kind = RS_CMP_NEW;
    } else {
        return;   /* failed on both sides, or failed in base and absent in head: nothing to compare */
    }
    if (c->n == *cap) c->rows = rg_xrealloc(c->rows, (*cap = *cap ? 2 * *cap : 16) * sizeof *c->rows);
    rs_cmp_row *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->system = rg_xstrdup(key->system);
    r->model = rg_xstrdup(key->model);
    r->task = rg_xstrdup(key->task);
    r->dataset = rg_xstrdup(key->dataset);
    r->dim_in = key->dim_in;
    r->dim_out = key->dim_out;
    r->heads = key->heads;
    r->base_ms = base_ok ? base->best_ms : NAN;
    r->head_ms = head_ok ? head->best_ms : NAN;
    r->ratio = base_ok && head_ok ? r->head_ms / r->base_ms : NAN;
    if (base_ok) memcpy(r->base_hash, base->hash, sizeof r->base_hash);
    if (head_ok) memcpy(r->head_hash, head->hash, sizeof r->head_hash);
    c->count[kind]++;
}

/* Worst news first: regressions by ratio (largest first), failures, improvements. */
static int cmp_row_order(const void *pa, const void *pb)
{
    const rs_cmp_row *a = pa, *b = pb;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    if (a->kind == RS_CMP_REGRESSION && a->ratio != b->ratio) return a->ratio > b->ratio ? -1 : 1;
    if (a->kind == RS_CMP_IMPROVEMENT && a->ratio != b->ratio) return a->ratio < b->ratio ? -1 : 1;
    return 0;
}

static void selection_filter(const rs_selection *sel, rs_filter *f)
{
    memset(f, 0, sizeof *f);
    f->run_id = sel->run_id;
    f->group = sel->run_id ? NULL : sel->group;
}

int rs_compare_selections(rs_store *s, const rs_selection *base_sel, const rs_selection *head_sel, double threshold,
                          rs_comparison *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    if (!isfinite(threshold) || threshold < 0) return rg_errf(err, "threshold must be a non-negative fraction (0.05 = 5%%)");
    rs_filter fb, fh;
    selection_filter(base_sel, &fb);
    selection_filter(head_sel, &fh);
    rs_best *base = NULL, *head = NULL;
    size_t nb = 0, nh = 0, cap = 0;
    if (query_best(s, &fb, 0, &base, &nb, err)) return -1;
    if (query_best(s, &fh, 0, &head, &nh, err)) {
        rs_best_free(base, nb);
        return -1;
    }
    qsort(base, nb, sizeof *base, problem_qsort_cmp);
    qsort(head, nh, sizeof *head, problem_qsort_cmp);
    for (size_t i = 0, j = 0; i < nb || j < nh;) {
        int c = i == nb ? 1 : j == nh ? -1 : problem_cmp(&base[i], &head[j]);
        const rs_best *b = c <= 0 ? &base[i] : NULL, *h = c >= 0 ? &head[j] : NULL;
        add_cmp_row(out, &cap, b ? b : h, b, h, threshold);
        i += c <= 0;
        j += c >= 0;
    }
    /* stable order within a kind: the rows were produced in problem order */
    if (out->n) qsort(out->rows, out->n, sizeof *out->rows, cmp_row_order);
    rs_best_free(base, nb);
    rs_best_free(head, nh);
    return 0;
}

int rs_compare(rs_store *s, int64_t base_run, int64_t head_run, double threshold, rs_comparison *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    rs_run_row check;
    if (rs_get_run(s, base_run, &check, err) || rs_get_run(s, head_run, &check, err)) return -1;
    rs_selection b = {.run_id = base_run}, h = {.run_id = head_run};
    return rs_compare_selections(s, &b, &h, threshold, out, err);
}

int rs_comparison_common(const rs_comparison *c)
{
    return c->count[RS_CMP_REGRESSION] + c->count[RS_CMP_FAILED] + c->count[RS_CMP_IMPROVEMENT] + c->count[RS_CMP_SAME];
}

void rs_comparison_free(rs_comparison *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->rows[i].system);
        free(c->rows[i].model);
        free(c->rows[i].task);
        free(c->rows[i].dataset);
    }
    free(c->rows);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- merge ---- */

/* src id -> dst id, open addressing; ids are positive. */
typedef struct id_map {
    int64_t *keys, *vals;
    size_t cap, n;
} id_map;

static void map_put(id_map *m, int64_t k, int64_t v);

static void map_grow(id_map *m)
{
    id_map old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->keys = rg_xcalloc(m->cap, sizeof *m->keys);
    m->vals = rg_xcalloc(m->cap, sizeof *m->vals);
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i]) map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
}

static void map_put(id_map *m, int64_t k, int64_t v)
{
    RG_ASSERT(k > 0);
    if (2 * (m->n + 1) > m->cap) map_grow(m);
    size_t i = (size_t)((uint64_t)k * 0x9e3779b97f4a7c15ULL) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
}

static int64_t map_get(const id_map *m, int64_t k)
{
    if (!m->cap) return 0;
    size_t i = (size_t)((uint64_t)k * 0x9e3779b97f4a7c15ULL) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->keys[i] == k) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

static void map_free(id_map *m)
{
    free(m->keys);
    free(m->vals);
}

typedef struct merge_ctx {
    rs_store *dst, *src;
    id_map runs, datasets, variants;
    rs_merge_stats *stats;
    rg_err *err;
} merge_ctx;

/* Binds columns [from, from + n) of a src row to parameters [first, first + n) of dst. */
static void bind_row(sqlite3_stmt *dst, int first, sqlite3_stmt *src, int from, int n)
{
    for (int i = 0; i < n; i++) sqlite3_bind_value(dst, first + i, sqlite3_column_value(src, from + i));
}

static char *placeholders(int first, int n)
{
    rg_str b = {0};
    for (int i = 0; i < n; i++) rg_str_printf(&b, "%s?%d", i ? ", " : "", first + i);
    return b.s;
}

static int merge_datasets(merge_ctx *c)
{
    const int NSTAT = ncols(DATASET_STAT_COLS);
    char *ph = placeholders(2, NSTAT);
    char *ins = rg_xasprintf("INSERT INTO datasets(name, " DATASET_STAT_COLS ") VALUES (?1, %s)", ph);
    /* the destination's statistics win; src fills them only where it has none */
    char *upd = rg_xasprintf("UPDATE datasets SET (" DATASET_STAT_COLS ") = (%s) WHERE id = ?1 AND nodes IS NULL", ph);
    free(ph);
    sqlite3_stmt *q = prepare(c->src, "SELECT id, name, " DATASET_STAT_COLS " FROM datasets", c->err);
    sqlite3_stmt *put = q ? prepare(c->dst, ins, c->err) : NULL;
    sqlite3_stmt *fill = put ? prepare(c->dst, upd, c->err) : NULL;
    free(ins);
    free(upd);
    int rc = fill ? 0 : -1, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 1);
        int64_t id = select_id(c->dst, "SELECT id FROM datasets WHERE name = ?1", name, c->err);
        if (id < 0) {
            rc = -1;
        } else if (id == 0) {
            sqlite3_reset(put);
            bind_row(put, 1, q, 1, NSTAT + 1);
            rc = step_done(c->dst, put, c->err, "merging datasets");
            id = sqlite3_last_insert_rowid(c->dst->db);
            c->stats->datasets_added++;
        } else if (sqlite3_column_type(q, 2) != SQLITE_NULL) {
            sqlite3_reset(fill);
            sqlite3_bind_int64(fill, 1, id);
            bind_row(fill, 2, q, 2, NSTAT);
            rc = step_done(c->dst, fill, c->err, "merging dataset statistics");
        }
        if (!rc) map_put(&c->datasets, sqlite3_column_int64(q, 0), id);
    }
    if (!rc && step != SQLITE_DONE) rc = db_fail(c->src, c->err, "reading datasets");
    release(c->src, q);
    release(c->dst, put);
    release(c->dst, fill);
    return rc;
}

static int merge_variants(merge_ctx *c)
{
    sqlite3_stmt *q = prepare(c->src, "SELECT id, hash, config, model, task, dim_in, dim_out, heads FROM variants", c->err);
    if (!q) return -1;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(q)) == SQLITE_ROW) {
        int added;
        int64_t id = find_or_insert_variant(
            c->dst, (const char *)sqlite3_column_text(q, 1), (const char *)sqlite3_column_text(q, 2),
            (const char *)sqlite3_column_text(q, 3), (const char *)sqlite3_column_text(q, 4),
            sqlite3_column_int(q, 5), sqlite3_column_int(q, 6), sqlite3_column_int(q, 7), &added, c->err);
        if (id < 0) rc = -1;
        else {
            map_put(&c->variants, sqlite3_column_int64(q, 0), id);
            c->stats->variants_added += added;
        }
    }
    if (!rc && step != SQLITE_DONE) rc = db_fail(c->src, c->err, "reading variants");
    release(c->src, q);
    return rc;
}

/* A run already present (same uuid) is reused; if it was still running there and has
 * ended in src, its end is copied so the merged store shows the final state. */
static int merge_runs(merge_ctx *c)
{
    const int NCOLS = ncols(RUN_COLS);
    char *ph = placeholders(1, NCOLS);
    char *ins = rg_xasprintf("INSERT INTO runs(" RUN_COLS ") VALUES (%s)", ph);
    free(ph);
    sqlite3_stmt *q = prepare(c->src, "SELECT id, " RUN_COLS " FROM runs ORDER BY id", c->err);
    sqlite3_stmt *put = q ? prepare(c->dst, ins, c->err) : NULL;
    sqlite3_stmt *end = put ? prepare(c->dst, "UPDATE runs SET finished_at = ?2, status = ?3"
                                              " WHERE id = ?1 AND status = 'running' AND ?3 <> 'running'", c->err)
                            : NULL;
    free(ins);
    int rc = end ? 0 : -1, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t id = select_id(c->dst, "SELECT id FROM runs WHERE uuid = ?1", (const char *)sqlite3_column_text(q, 1), c->err);
        if (id < 0) {
            rc = -1;
        } else if (id == 0) {
            sqlite3_reset(put);
            bind_row(put, 1, q, 1, NCOLS);
            rc = step_done(c->dst, put, c->err, "merging runs");
            id = sqlite3_last_insert_rowid(c->dst->db);
            c->stats->runs_added++;
        } else {
            sqlite3_reset(end);
            sqlite3_bind_int64(end, 1, id);
            bind_row(end, 2, q, 3, 1);          /* finished_at */
            bind_row(end, 3, q, NCOLS, 1);      /* status */
            rc = step_done(c->dst, end, c->err, "merging run status");
            c->stats->runs_known++;
        }
        if (!rc) map_put(&c->runs, sqlite3_column_int64(q, 0), id);
    }
    if (!rc && step != SQLITE_DONE) rc = db_fail(c->src, c->err, "reading runs");
    release(c->src, q);
    release(c->dst, put);
    release(c->dst, end);
    return rc;
}

/* Copies the child rows (kernel times or metrics) of one measurement. */
static int copy_children(merge_ctx *c, const char *table, const char *cols, int64_t src_mid, int64_t dst_mid)
{
    int n = ncols(cols);
    char *sel = rg_xasprintf("SELECT %s FROM %s WHERE measurement_id = ?1 ORDER BY id", cols, table);
    char *ph = placeholders(2, n);
    char *ins = rg_xasprintf("INSERT INTO %s(measurement_id, %s) VALUES (?1, %s)", table, cols, ph);
    sqlite3_stmt *q = prepare(c->src, sel, c->err);
    sqlite3_stmt *put = q ? prepare(c->dst, ins, c->err) : NULL;
    free(sel);
    free(ph);
    free(ins);
    int rc = put ? 0 : -1, step = SQLITE_DONE;
    if (!rc) sqlite3_bind_int64(q, 1, src_mid);
    while (!rc && (step = sqlite3_step(q)) == SQLITE_ROW) {
        sqlite3_reset(put);
        sqlite3_bind_int64(put, 1, dst_mid);
        bind_row(put, 2, q, 0, n);
        rc = step_done(c->dst, put, c->err, "merging kernel times and metrics");
    }
    if (!rc && step != SQLITE_DONE) rc = db_fail(c->src, c->err, "reading kernel times and metrics");
    release(c->src, q);
    release(c->dst, put);
    return rc;
}

static int map_ids(merge_ctx *c, sqlite3_stmt *q, int64_t ids[3])
{
    const id_map *maps[3] = {&c->runs, &c->datasets, &c->variants};
    static const char *const what[3] = {"run", "dataset", "variant"};
    for (int i = 0; i < 3; i++) {
        int64_t src_id = sqlite3_column_int64(q, 2 + i);
        if (!(ids[i] = map_get(maps[i], src_id)))
            return rg_errf(c->err, "%s: measurement %lld refers to a missing %s %lld", c->src->path,
                           (long long)sqlite3_column_int64(q, 0), what[i], (long long)src_id);
    }
    return 0;
}

static int merge_measurements(merge_ctx *c)
{
    const int NCOLS = ncols(MEAS_COLS);
    char *ph = placeholders(4, NCOLS);
    char *ins = rg_xasprintf("INSERT INTO measurements(run_id, dataset_id, variant_id, " MEAS_COLS ") VALUES (?1, ?2, ?3, %s)", ph);
    free(ph);
    sqlite3_stmt *q = prepare(c->src, "SELECT id, uuid, run_id, dataset_id, variant_id, " MEAS_COLS
                                      " FROM measurements ORDER BY id", c->err);
    sqlite3_stmt *put = q ? prepare(c->dst, ins, c->err) : NULL;
    free(ins);
    int rc = put ? 0 : -1, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t known = select_id(c->dst, "SELECT id FROM measurements WHERE uuid = ?1",
                                  (const char *)sqlite3_column_text(q, 1), c->err), ids[3];
        if (known != 0) {
            rc = known < 0 ? -1 : 0;
            c->stats->measurements_skipped += known > 0;
            continue;
        }
        if ((rc = map_ids(c, q, ids))) break;
        sqlite3_reset(put);
        for (int i = 0; i < 3; i++) sqlite3_bind_int64(put, 1 + i, ids[i]);
        bind_row(put, 4, q, 5, NCOLS);
        if ((rc = step_done(c->dst, put, c->err, "merging measurements"))) break;
        int64_t src_mid = sqlite3_column_int64(q, 0), dst_mid = sqlite3_last_insert_rowid(c->dst->db);
        rc = copy_children(c, "kernel_times", KERNEL_COLS, src_mid, dst_mid) ||
             copy_children(c, "metrics", METRIC_COLS, src_mid, dst_mid) ? -1 : 0;
        c->stats->measurements_added++;
    }
    if (!rc && step != SQLITE_DONE) rc = db_fail(c->src, c->err, "reading measurements");
    release(c->src, q);
    release(c->dst, put);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int rs_merge(rs_store *dst, const char *src_path, rs_merge_stats *stats, rg_err *err)
{
    rs_merge_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (same_file(dst->path, src_path)) return rg_errf(err, "%s: cannot merge a database into itself", src_path);
    rs_store *src = open_store(src_path, 0, 1, err);
    if (!src) return -1;
    merge_ctx c = {.dst = dst, .src = src, .stats = stats, .err = err};
    /* One read transaction on src gives a consistent snapshot while its writers go on. */
    int rc = exec_sql(src, "BEGIN", err);
    if (!rc && begin_write(dst, err)) rc = -1;
    else if (!rc) {
        rc = merge_datasets(&c) || merge_variants(&c) || merge_runs(&c) || merge_measurements(&c) || commit(dst, err)
                 ? -1 : 0;
        if (rc) {
            rollback(dst);
            memset(stats, 0, sizeof *stats);
        }
    }
    rollback(src);
    map_free(&c.runs);
    map_free(&c.datasets);
    map_free(&c.variants);
    rs_close(src);
    return rc;
}

/* ================================================================ pruning ==== */

/* The measurements to keep: per problem (device, dataset, system, layer, model, task, dims,
 * heads), every row of one commit, the one whose ok rows cover the most configs (ties: the
 * newest ok row). For generated rows this is the commit explorer/costmodel.c fits on
 * (CM_NEWEST_OK), so pruning leaves a fit unchanged; the two rules must stay the same. A
 * problem that no commit measured ok keeps its newest commit's rows (its failures). Rows with
 * per-kernel counters (CUPTI profiles, figure 7) stay too: a later sweep does not profile
 * again. Keeping a few rows of another commit cannot change which commit a fit picks. */
static const char PRUNE_KEEP_SQL[] =
    "CREATE TEMP TABLE prune_keep AS"
    " WITH r AS (SELECT m.id, m.device_key, m.dataset_id, m.system, m.layer, m.git_commit, m.status, m.variant_id,"
    "                   v.model, v.task, v.dim_in, v.dim_out, v.heads"
    "            FROM measurements m JOIN variants v ON v.id = m.variant_id),"
    " per_commit AS (SELECT device_key, dataset_id, system, layer, model, task, dim_in, dim_out, heads, git_commit,"
    "                       count(DISTINCT CASE WHEN status = 'ok' THEN variant_id END) AS n,"
    "                       max(CASE WHEN status = 'ok' THEN id END) AS newest_ok, max(id) AS newest FROM r"
    "                GROUP BY device_key, dataset_id, system, layer, model, task, dim_in, dim_out, heads, git_commit),"
    " chosen AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY device_key, dataset_id, system, layer,"
    "                   model, task, dim_in, dim_out, heads ORDER BY n DESC, newest_ok DESC, newest DESC) AS rn"
    "                   FROM per_commit) WHERE rn = 1)"
    " SELECT r.id AS id FROM r JOIN chosen"
    "  USING (device_key, dataset_id, system, layer, model, task, dim_in, dim_out, heads, git_commit)"
    " UNION SELECT measurement_id FROM metrics WHERE kernel <> '';"
    "CREATE UNIQUE INDEX temp.prune_keep_id ON prune_keep(id)";

/* Deletes the superseded rows, children first (faster than cascading row by row), and the
 * finished runs left empty. Variants stay: they are few, and a sweep registers its variants
 * before it measures them. */
static const char PRUNE_DELETE_SQL[] =
    "DELETE FROM kernel_times WHERE measurement_id NOT IN (SELECT id FROM prune_keep);"
    "DELETE FROM metrics WHERE measurement_id NOT IN (SELECT id FROM prune_keep);"
    "DELETE FROM measurements WHERE id NOT IN (SELECT id FROM prune_keep);"
    /* a finished run's claim on a point whose measurement went names nothing any more (and a
     * kept claim would make a later sweep at that commit skip the point) */
    "DELETE FROM claims WHERE run_id IN (SELECT id FROM runs WHERE status <> 'running') AND NOT EXISTS"
    " (SELECT 1 FROM measurements m WHERE m.device_key = claims.device_key AND m.git_commit = claims.git_commit"
    "  AND m.variant_id = claims.variant_id AND m.dataset_id = claims.dataset_id AND m.system = claims.system);"
    "DELETE FROM runs WHERE status <> 'running' AND id NOT IN (SELECT DISTINCT run_id FROM measurements)"
    " AND id NOT IN (SELECT run_id FROM claims);"
    "DROP TABLE temp.prune_keep";

static int count_rows(rs_store *s, const char *table, int64_t *out, rg_err *err)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM %s", table);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
    if (rc) rg_errf(err, "%s: counting %s: %s", s->path, table, sqlite3_errmsg(s->db));
    else *out = sqlite3_column_int64(st, 0);
    release(s, st);
    sqlite3_free(sql);
    return rc;
}

static int count_all(rs_store *s, int64_t n[4], rg_err *err)
{
    static const char *const tables[4] = {"measurements", "kernel_times", "metrics", "runs"};
    for (int i = 0; i < 4; i++)
        if (count_rows(s, tables[i], &n[i], err)) return -1;
    return 0;
}

int rs_prune_superseded(rs_store *s, rs_prune_stats *stats, rg_err *err)
{
    rs_prune_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    int64_t before[4], after[4];
    if (begin_write(s, err)) return -1;
    if (count_all(s, before, err) || exec_sql(s, PRUNE_KEEP_SQL, err) || exec_sql(s, PRUNE_DELETE_SQL, err) ||
        count_all(s, after, err) || commit(s, err)) {
        rollback(s);
        exec_sql(s, "DROP TABLE IF EXISTS temp.prune_keep", err);
        return -1;
    }
    stats->measurements_kept = after[0];
    stats->measurements_removed = before[0] - after[0];
    stats->kernel_times_removed = before[1] - after[1];
    stats->metrics_removed = before[2] - after[2];
    stats->runs_removed = before[3] - after[3];
    /* the freed pages go back to the file system; the WAL is emptied so the file alone is the store */
    if (!stats->measurements_removed) return 0;
    return exec_sql(s, "VACUUM; PRAGMA wal_checkpoint(TRUNCATE)", err);
}
