/* The one command-line parser of every `explore` command: a table of option descriptors per command,
 * --opt VALUE and --opt=VALUE, positionals, a generated --help, one-line errors with exit status 2. */
#ifndef RO_OPTS_H
#define RO_OPTS_H

#include "common/util.h"

#include <stdio.h>

/* The limits of a problem, the same for every command and for plan files. */
#define RO_MAX_DIM 4096
#define RO_MAX_HEADS 64

typedef enum ro_kind {
    RO_FLAG,    /* dst int *: set to 1; takes no value; fn, if given, is then called with value NULL */
    RO_STR,     /* dst const char **: the value as given (never empty) */
    RO_INT,     /* dst int *: an integer in [lo, hi] */
    RO_REAL,    /* dst double *: a number in [lo, hi] */
    RO_DIMS,    /* dst int[2]: IN,OUT, INxOUT or N, each 1..RO_MAX_DIM (ro_parse_dims) */
    RO_FN,      /* fn(value, dst, err) parses and stores; its message follows "--name: " */
} ro_kind;

typedef struct ro_opt {
    const char *name;    /* without the leading "--" */
    const char *arg;     /* the value's name in the help ("N", "IN,OUT"); NULL for a flag */
    ro_kind kind;
    void *dst;
    const char *help;    /* "\n" continues on the next line, indented under the first */
    double lo, hi;       /* RO_INT, RO_REAL */
    int (*fn)(const char *value, void *dst, rg_err *err);   /* RO_FN */
} ro_opt;

#define RO_MAX_OPTS 40

typedef struct ro_cmd {
    const char *name;              /* "explore run": the first word of every message */
    const char *usage;             /* the help before the option list (usage line, description) */
    const char *epilog;            /* the help after it, or NULL */
    ro_opt opts[RO_MAX_OPTS];
    int nopts;
    unsigned char seen[RO_MAX_OPTS];
    const char **pos;              /* positional arguments go here (NULL: the command takes none) */
    int max_pos, npos;
} ro_cmd;

enum { RO_OK = 0, RO_HELP = 1, RO_BAD = 2 };

void ro_init(ro_cmd *c, const char *name, const char *usage, const char *epilog);
/* Appends one option; a name given twice is a programmer error. */
void ro_add(ro_cmd *c, ro_opt o);
/* The command takes up to max words that are not options, stored in pos[] (npos counts them). */
void ro_positional(ro_cmd *c, const char **pos, int max);
/* argv[0] is the command word. RO_OK; RO_HELP after printing the help on stdout (--help or -h
 * anywhere); RO_BAD after one line on stderr: an unknown option (with "did you mean"), a missing or
 * unexpected value, an option given twice, a value out of its limits, a surplus positional. */
int ro_parse(ro_cmd *c, int argc, char **argv);
/* The exit status for a ro_parse result that is not RO_OK: 0 for the help, else 2. */
int ro_exit(int rc);
/* Whether the option was on the command line. */
int ro_given(const ro_cmd *c, const char *name);

void ro_print_help(const ro_cmd *c, FILE *f);
void ro_print_options(const ro_cmd *c, FILE *f);

/* Bad input after parsing: "<cmd>: <message>" as one line on stderr (line breaks of the message
 * become spaces); returns 2, the exit status of bad input. */
int ro_bad(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ro_fail(const char *cmd, const rg_err *err);

/* ---- Values shared by the commands and the plan files ---- */

/* "IN,OUT", "INxOUT" or "N" (N,N), each 1..RO_MAX_DIM. */
int ro_parse_dims(const char *text, int *in, int *out, rg_err *err);
/* 1..RO_MAX_HEADS heads that divide the output dim (each head gets an equal slice). */
int ro_check_heads(int heads, int dim_out, rg_err *err);
/* A whole decimal integer in [lo, hi]: 0, or -1 for anything else. */
int ro_parse_long(const char *text, long lo, long hi, long *out);
/* A number in [lo, hi]: 0, or -1. */
int ro_parse_real(const char *text, double lo, double hi, double *out);

#endif
