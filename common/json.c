/* A tiny streaming JSON writer (objects, arrays, escaped strings, numbers), used for
 * --json outputs, config hashes and exports. Not a parser. */
#include "common/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void before_value(rgj_writer *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0 && w->need_comma[w->depth]) rg_str_putc(&w->out, ',');
    if (w->depth > 0) w->need_comma[w->depth] = 1;
}

static void open(rgj_writer *w, char c)
{
    before_value(w);
    rg_str_putc(&w->out, c);
    w->depth++;
    RG_ASSERT(w->depth < 64);
    w->need_comma[w->depth] = 0;
}

static void close(rgj_writer *w, char c)
{
    RG_ASSERT(w->depth > 0 && !w->after_key);
    w->depth--;
    rg_str_putc(&w->out, c);
}

void rgj_begin_object(rgj_writer *w) { open(w, '{'); }
void rgj_end_object(rgj_writer *w) { close(w, '}'); }
void rgj_begin_array(rgj_writer *w) { open(w, '['); }
void rgj_end_array(rgj_writer *w) { close(w, ']'); }

static void put_escaped(rg_str *b, const char *s)
{
    rg_str_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': rg_str_puts(b, "\\\""); break;
        case '\\': rg_str_puts(b, "\\\\"); break;
        case '\n': rg_str_puts(b, "\\n"); break;
        case '\r': rg_str_puts(b, "\\r"); break;
        case '\t': rg_str_puts(b, "\\t"); break;
        default:
            if (*p < 0x20) rg_str_printf(b, "\\u%04x", *p);
            else rg_str_putc(b, (char)*p);
        }
    }
    rg_str_putc(b, '"');
}

void rgj_key(rgj_writer *w, const char *key)
{
    before_value(w);
    put_escaped(&w->out, key);
    rg_str_putc(&w->out, ':');
    w->after_key = 1;
}

void rgj_string(rgj_writer *w, const char *s)
{
    before_value(w);
    if (s) put_escaped(&w->out, s);
    else rg_str_puts(&w->out, "null");
}

void rgj_int(rgj_writer *w, int64_t v)
{
    before_value(w);
    rg_str_printf(&w->out, "%lld", (long long)v);
}

void rgj_double(rgj_writer *w, double v)
{
    before_value(w);
    if (isfinite(v)) rg_str_printf(&w->out, "%.17g", v);
    else rg_str_puts(&w->out, "null");
}

void rgj_bool(rgj_writer *w, int v)
{
    before_value(w);
    rg_str_puts(&w->out, v ? "true" : "false");
}

void rgj_null(rgj_writer *w)
{
    before_value(w);
    rg_str_puts(&w->out, "null");
}

void rgj_kv_string(rgj_writer *w, const char *key, const char *s) { rgj_key(w, key); rgj_string(w, s); }
void rgj_kv_int(rgj_writer *w, const char *key, int64_t v) { rgj_key(w, key); rgj_int(w, v); }
void rgj_kv_double(rgj_writer *w, const char *key, double v) { rgj_key(w, key); rgj_double(w, v); }

char *rgj_finish(rgj_writer *w)
{
    RG_ASSERT(w->depth == 0);
    char *s = w->out.s ? w->out.s : rg_xstrdup("");
    memset(w, 0, sizeof *w);
    return s;
}
