/* A tiny streaming JSON writer (objects, arrays, escaped strings, numbers), used for
 * --json outputs, config hashes and exports. Not a parser. */
#ifndef RG_JSON_H
#define RG_JSON_H

#include <stdint.h>
#include "common/util.h"

typedef struct rgj_writer {
    rg_str out;
    int depth;
    int need_comma[64];
    int after_key;
} rgj_writer;

void rgj_begin_object(rgj_writer *w);
void rgj_end_object(rgj_writer *w);
void rgj_begin_array(rgj_writer *w);
void rgj_end_array(rgj_writer *w);
void rgj_key(rgj_writer *w, const char *key);
void rgj_string(rgj_writer *w, const char *s);
void rgj_int(rgj_writer *w, int64_t v);
void rgj_double(rgj_writer *w, double v);   /* NaN/Inf written as null */
void rgj_bool(rgj_writer *w, int v);
void rgj_null(rgj_writer *w);
/* Convenience: key + value. */
void rgj_kv_string(rgj_writer *w, const char *key, const char *s);
void rgj_kv_int(rgj_writer *w, const char *key, int64_t v);
void rgj_kv_double(rgj_writer *w, const char *key, double v);
/* Takes ownership of the text; the writer is reset. Caller frees. */
char *rgj_finish(rgj_writer *w);

#endif
