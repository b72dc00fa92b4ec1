/* The options every command that takes a problem shares (--model, --dataset, --task, --dims,
 * --heads, --data-dir, --config, --db): one definition each, one set of limits, one check. */
#include "cli/problem.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "results/store.h"
#include "runtime/memplan.h"

#include <string.h>

void cp_init(cp_problem *p)
{
    memset(p, 0, sizeof *p);
    p->task = "infer";
    p->dims[0] = p->dims[1] = 64;
    p->heads = 1;
    p->db = RS_DEFAULT_DB;
    p->repeats = 10;
    p->warmup = 3;
}

/* --task: the canonical name (inference and training read as infer and train). */
static int parse_bytes(const char *v, void *dst, rg_err *err) { return mp_parse_bytes(v, (size_t *)dst, err); }

static int parse_task(const char *v, void *dst, rg_err *err) { return pl_parse_task(v, (const char **)dst, err); }

/* Process-wide: forked sweep workers load the dataset with the same rule. */
static int allow_mismatch(const char *value, void *dst, rg_err *err)
{
    (void)value, (void)dst, (void)err;
    ds_set_allow_mismatch(1);
    return 0;
}

void cp_add_options(ro_cmd *c, cp_problem *p, unsigned which)
{
    if (which & CP_MODEL) ro_add(c, (ro_opt){.name = "model", .arg = "M", .kind = RO_STR, .dst = &p->model, .help = "rgcn, rgat, hgt (a name in models/) or a .rgnn file"});
    if (which & CP_DATASET)
        ro_add(c, (ro_opt){.name = "dataset", .arg = "D", .kind = RO_STR, .dst = &p->dataset, .help = "a registered name, synth:NAME, synth:nodes=..,edges=.. or a folder"});
    if (which & CP_TASK) ro_add(c, (ro_opt){.name = "task", .arg = "T", .kind = RO_FN, .dst = &p->task, .help = "infer or train (default infer where the command needs one)", .fn = parse_task});
    if (which & CP_DIMS)
        ro_add(c, (ro_opt){.name = "dims", .arg = "IN,OUT", .kind = RO_DIMS, .dst = p->dims, .help = "feature sizes, IN,OUT or N for N,N, each 1 to 4096 (default 64,64)"});
    if (which & CP_HEADS)
        ro_add(c, (ro_opt){.name = "heads", .arg = "H", .kind = RO_INT, .dst = &p->heads, .help = "attention heads, 1 to 64, dividing OUT (default 1)", .lo = 1, .hi = RO_MAX_HEADS});
    if (which & CP_CONFIG)
        ro_add(c, (ro_opt){.name = "config", .arg = "KEY=VAL,...", .kind = RO_STR, .dst = &p->config,
                           .help = "e.g. compact=direct,reorder=on,tile=32,coarsen=2,lb=off,w=shmem,trav=node,pagg=on"});
    if (which & CP_DATA_DIR) {
        ro_add(c, (ro_opt){.name = "data-dir", .arg = "DIR", .kind = RO_STR, .dst = &p->data_dir, .help = "dataset directory (default $RGNN_DATA, else datasets/data)"});
        ro_add(c, (ro_opt){.name = "allow-mismatch", .kind = RO_FLAG, .dst = &p->allow_mismatch, .fn = allow_mismatch,
                           .help = "load a registered dataset whose counts differ from the registry's expected\n"
                                   "statistics, with a warning, instead of refusing it"});
    }
    if (which & CP_MEM_LIMIT)
        ro_add(c, (ro_opt){.name = "mem-limit", .arg = "BYTES", .kind = RO_FN, .dst = &p->mem_limit,
                           .help = "device memory cap, e.g. 24GB: above it a result is recorded as out of memory", .fn = parse_bytes});
    if (which & CP_REPEATS) {
        ro_add(c, (ro_opt){.name = "repeats", .arg = "N", .kind = RO_INT, .dst = &p->repeats, .help = "timed runs (default 10)", .lo = 1, .hi = 100000});
        ro_add(c, (ro_opt){.name = "warmup", .arg = "N", .kind = RO_INT, .dst = &p->warmup, .help = "untimed runs before them (default 3)", .lo = 0, .hi = 100000});
        ro_add(c, (ro_opt){.name = "flush-l2", .kind = RO_FLAG, .dst = &p->flush_l2,
                           .help = "write twice the L2 before each timed run, outside its timing, so it starts\n"
                                   "cold (stored as the metric flush_l2 = 1)"});
    }
    if (which & CP_DB) ro_add(c, (ro_opt){.name = "db", .arg = "PATH", .kind = RO_STR, .dst = &p->db, .help = "results database (default " RS_DEFAULT_DB ")"});
}

int cp_check(const cp_problem *p, rg_err *err)
{
    if (!ro_check_heads(p->heads, p->dims[1], err)) return 0;
    rg_err_prefix(err, "--heads %d with --dims %d,%d", p->heads, p->dims[0], p->dims[1]);
    return -1;
}

int cp_config(const cp_problem *p, cg_config *cfg, rg_err *err)
{
    cfg_default(cfg);
    /* cfg_parse's messages name the config already */
    if (p->config && cfg_parse(cfg, p->config, err)) return -1;
    return cfg_validate(cfg, err);
}

static int copy_name(char *dst, size_t cap, const char *flag, const char *v, rg_err *err)
{
    if (v && strlen(v) >= cap) return rg_errf(err, "--%s: '%.40s...' is too long", flag, v);
    snprintf(dst, cap, "%s", v ? v : "");
    return 0;
}

pl_problem cp_to_pl(const cp_problem *p)
{
    return (pl_problem){.model = p->model, .task = p->task, .dims = {p->dims[0], p->dims[1], p->heads}};
}

int cp_to_xb(const cp_problem *p, xb_problem *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    if (copy_name(out->model, sizeof out->model, "model", p->model, err) ||
        copy_name(out->dataset, sizeof out->dataset, "dataset", p->dataset, err))
        return -1;
    snprintf(out->task, sizeof out->task, "%s", p->task);
    out->dim_in = p->dims[0];
    out->dim_out = p->dims[1];
    out->heads = p->heads;
    out->data_dir = p->data_dir;
    out->mem_limit = p->mem_limit;
    return 0;
}

char *cp_command_line(int argc, char **argv)
{
    rg_str s = {0};
    rg_str_puts(&s, "explore");
    for (int i = 0; i < argc; i++) rg_str_printf(&s, " %s", argv[i]);
    return s.s;
}
