/* Streaming line reader over zlib (plain and .gz files alike) with strict field and number
 * parsing, shared by the text loaders; every error names FILE:LINE and the offending text. */
#ifndef TIO_TEXTIO_H
#define TIO_TEXTIO_H

#include <stdint.h>
#include "common/util.h"

typedef struct tio_reader {
    void *gz;          /* gzFile, kept opaque so users need not include zlib.h */
    char *path;
    int64_t line_no;   /* 1-based number of the current line */
    char *line;        /* current line without its "\n" or "\r\n" */
    size_t len, cap;
    char *work;        /* tio_split's copy, so r->line stays whole for error messages */
    size_t work_cap;
} tio_reader;

/* dir/name if it exists, else dir/name.gz, else (for a name ending in .gz) dir/name without
 * .gz; NULL if none exists. Caller frees. */
char *tio_find(const char *dir, const char *name);
/* Like tio_find, but a missing file is an error "WHAT: missing NAME (or NAME.gz) in DIR". */
char *tio_require(const char *dir, const char *name, const char *what, rg_err *err);

tio_reader *tio_open(const char *path, rg_err *err);
/* Reads the next line: 1 = a line is in r->line, 0 = clean end of file, -1 = error (read
 * error, corrupt or truncated gzip stream: a short file is never taken for a complete one). */
int tio_next(tio_reader *r, rg_err *err);
void tio_close(tio_reader *r);

/* 1 if the current line holds only spaces/tabs (or nothing). */
int tio_blank(const tio_reader *r);
/* Formats "PATH:LINE: expected EXPECTED, got 'LINE'" (long lines shortened) and returns -1. */
int tio_fail(const tio_reader *r, rg_err *err, const char *expected);

/* Splits a copy of the current line (r->line is left whole). sep ' ' splits on runs of spaces/tabs (leading and
 * trailing blanks ignored); any other sep splits on each occurrence exactly (empty fields kept).
 * Returns the number of fields, or max+1 when there are more than max. */
int tio_split(tio_reader *r, char sep, char **fields, int max);

/* Strict decimal parse of a whole string: digits only, no sign or blanks, no overflow.
 * Returns 0 and sets *out, or -1. */
int tio_parse_u64(const char *s, uint64_t *out);
/* Same, bounded: the value must be < limit. */
int tio_parse_below(const char *s, int64_t limit, int64_t *out);

#endif
