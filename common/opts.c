/* The one command-line parser of every `explore` command: a table of option descriptors per command,
 * --opt VALUE and --opt=VALUE, positionals, a generated --help, one-line errors with exit status 2. */
#include "common/opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COLUMN 22

void ro_init(ro_cmd *c, const char *name, const char *usage, const char *epilog)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->usage = usage;
    c->epilog = epilog;
}

static const ro_opt *find(const ro_cmd *c, const char *name, size_t len)
{
    for (int i = 0; i < c->nopts; i++)
        if (strlen(c->opts[i].name) == len && !strncmp(c->opts[i].name, name, len)) return &c->opts[i];
    return NULL;
}

void ro_add(ro_cmd *c, ro_opt o)
{
    RG_ASSERT(c->nopts < RO_MAX_OPTS);
    RG_ASSERT(o.name && o.dst && o.help);
    RG_ASSERT((o.kind == RO_FLAG) == (o.arg == NULL));
    RG_ASSERT(o.kind != RO_FN || o.fn);
    if (find(c, o.name, strlen(o.name))) RG_DIE("option --%s added twice to %s", o.name, c->name);
    c->opts[c->nopts++] = o;
}

void ro_positional(ro_cmd *c, const char **pos, int max)
{
    c->pos = pos;
    c->max_pos = max;
}

int ro_exit(int rc) { return rc == RO_HELP ? 0 : RO_BAD; }

int ro_given(const ro_cmd *c, const char *name)
{
    const ro_opt *o = find(c, name, strlen(name));
    RG_ASSERT(o);
    return c->seen[o - c->opts];
}

/* ---------------------------------------------------------------- messages ---- */

static int vbad(const char *cmd, const char *fmt, va_list ap)
{
    char msg[sizeof(rg_err)];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* one line, whatever the message: scripts read the first line of stderr */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fflush(stdout);
    fprintf(stderr, "%s: %s\n", cmd, msg);
    return RO_BAD;
}

int ro_bad(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vbad(cmd, fmt, ap);
    va_end(ap);
    return rc;
}

int ro_fail(const char *cmd, const rg_err *err) { return ro_bad(cmd, "%s", err->msg); }

/* ---------------------------------------------------------------- help ---- */

void ro_print_options(const ro_cmd *c, FILE *f)
{
    for (int i = 0; i < c->nopts; i++) {
        const ro_opt *o = &c->opts[i];
        char lhs[64];
        snprintf(lhs, sizeof lhs, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-*s", HELP_COLUMN - 2, lhs);
        if (strlen(lhs) > HELP_COLUMN - 3) fprintf(f, "\n%*s", HELP_COLUMN, "");
        for (const char *h = o->help; *h; h++) {
            fputc(*h, f);
            if (*h == '\n') fprintf(f, "%*s", HELP_COLUMN, "");
        }
        fputc('\n', f);
    }
}

void ro_print_help(const ro_cmd *c, FILE *f)
{
    fputs(c->usage, f);
    if (c->nopts) {
        fprintf(f, "options:\n");
        ro_print_options(c, f);
    }
    if (c->epilog) fputs(c->epilog, f);
}

/* ---------------------------------------------------------------- values ---- */

int ro_parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int ro_parse_real(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

int ro_parse_dims(const char *text, int *in, int *out, rg_err *err)
{
    char first[32];
    size_t n = strcspn(text, ",x");
    long a = 0, b = 0;
    int ok = n < sizeof first;
    if (ok) {
        snprintf(first, sizeof first, "%.*s", (int)n, text);
        ok = !ro_parse_long(first, 1, RO_MAX_DIM, &a) &&
             !ro_parse_long(text[n] ? text + n + 1 : first, 1, RO_MAX_DIM, &b);
    }
    if (!ok) return rg_errf(err, "dims must be IN,OUT or N, each 1 to %d (got '%s')", RO_MAX_DIM, text);
    *in = (int)a;
    *out = (int)b;
    return 0;
}

int ro_check_heads(int heads, int dim_out, rg_err *err)
{
    if (heads < 1 || heads > RO_MAX_HEADS)
        return rg_errf(err, "heads must be 1 to %d (got %d)", RO_MAX_HEADS, heads);
    if (dim_out % heads) return rg_errf(err, "heads %d does not divide the output dim %d", heads, dim_out);
    return 0;
}

/* Parses one value into its destination; a message (without the option's name) on failure. */
static int store_value(const ro_opt *o, const char *v, rg_err *err)
{
    long x;
    double r;
    switch (o->kind) {
    case RO_STR:
        *(const char **)o->dst = v;
        return 0;
    case RO_INT:
        if (ro_parse_long(v, (long)o->lo, (long)o->hi, &x))
            return rg_errf(err, "expects an integer from %.0f to %.0f (got '%s')", o->lo, o->hi, v);
        *(int *)o->dst = (int)x;
        return 0;
    case RO_REAL:
        if (ro_parse_real(v, o->lo, o->hi, &r)) return rg_errf(err, "expects a number from %g to %g (got '%s')", o->lo, o->hi, v);
        *(double *)o->dst = r;
        return 0;
    case RO_DIMS: {
        int *d = o->dst;
        return ro_parse_dims(v, &d[0], &d[1], err);
    }
    case RO_FN:
        return o->fn(v, o->dst, err);
    case RO_FLAG:
        break;
    }
    RG_DIE("option --%s: no value kind %d", o->name, (int)o->kind);
}

/* ---------------------------------------------------------------- parsing ---- */

static int unknown_option(const ro_cmd *c, const char *arg, size_t len)
{
    char name[128];
    const char *bare = arg + strspn(arg, "-");
    snprintf(name, sizeof name, "%.*s", (int)(len - (size_t)(bare - arg)), bare);
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; i < c->nopts; i++) {
        int d = rg_edit_distance(name, c->opts[i].name);
        if (d < best_d) best_d = d, best = c->opts[i].name;
    }
    if (best) return ro_bad(c->name, "unknown option '%.*s' (did you mean --%s?)", (int)len, arg, best);
    return ro_bad(c->name, "unknown option '%.*s' (see %s --help)", (int)len, arg, c->name);
}

static int positional(ro_cmd *c, const char *arg)
{
    if (c->npos >= c->max_pos) return ro_bad(c->name, "unexpected argument '%s' (see %s --help)", arg, c->name);
    c->pos[c->npos++] = arg;
    return RO_OK;
}

/* One option at argv[*i]; a value that is not attached with '=' is the next word. */
static int option(ro_cmd *c, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    const ro_opt *o = !strncmp(arg, "--", 2) ? find(c, arg + 2, len - 2) : NULL;
    if (!o) return unknown_option(c, arg, len);
    int k = (int)(o - c->opts);
    if (c->seen[k]) return ro_bad(c->name, "--%s is given twice", o->name);
    c->seen[k] = 1;
    if (o->kind == RO_FLAG) {
        if (eq) return ro_bad(c->name, "--%s takes no value", o->name);
        *(int *)o->dst = 1;
        rg_err err;
        if (o->fn && o->fn(NULL, o->dst, &err)) return ro_bad(c->name, "--%s: %s", o->name, err.msg);
        return RO_OK;
    }
    const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
    /* "--model --dataset x": the next option is no value */
    if (!v || !*v || (!eq && !strncmp(v, "--", 2)))
        return ro_bad(c->name, "--%s needs a value (%s)", o->name, o->arg);
    rg_err err;
    if (store_value(o, v, &err)) return ro_bad(c->name, "--%s: %s", o->name, err.msg);
    return RO_OK;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

int ro_parse(ro_cmd *c, int argc, char **argv)
{
    c->npos = 0;
    memset(c->seen, 0, sizeof c->seen);
    if (wants_help(argc, argv)) {
        ro_print_help(c, stdout);
        return RO_HELP;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = a[0] == '-' && a[1] ? option(c, argc, argv, &i) : positional(c, a);
        if (rc) return rc;
    }
    return RO_OK;
}
