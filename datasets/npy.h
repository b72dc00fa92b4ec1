/* NumPy .npy arrays: strict v1/v2 header parsing (little-endian int32/int64 and fixed-width
 * unicode, C order), header writing, UTF-8 <-> UCS4 for '<U<n>' strings, used by npz and mag_0.1. */
#ifndef NPY_NPY_H
#define NPY_NPY_H

#include <stddef.h>
#include <stdint.h>
#include "common/util.h"

#define NPY_MAX_DIMS 8
/* Room for any header npy_format_header writes (the dict is short; padding to 64). */
#define NPY_HEADER_MAX 256

/* NPY_F4 and NPY_F8 come only from npy_read_numeric_file. */
typedef enum npy_kind { NPY_I4, NPY_I8, NPY_U, NPY_F4, NPY_F8 } npy_kind;

typedef struct npy_array {
    npy_kind kind;
    int64_t itemsize;            /* 4, 8, or 4 * chars for '<U<chars>' */
    int ndim;                    /* 0 for a scalar array */
    int64_t shape[NPY_MAX_DIMS];
    int64_t count;               /* product of shape (1 when ndim = 0) */
    unsigned char *buf;          /* the whole .npy bytes, owned */
    const unsigned char *data;   /* count * itemsize bytes inside buf, C order */
} npy_array;

/* Parses .npy bytes, taking ownership of buf (malloc'd) even on failure. Accepts format
 * versions 1 and 2, descr '<i4', '<i8' or '<U<n>', fortran_order False; anything else is
 * an error "WHAT: ...". Data past count * itemsize is ignored, as numpy does. */
int npy_parse(unsigned char *buf, size_t n, npy_array *a, const char *what, rg_err *err);
/* Reads a whole .npy file (plain or gzip-compressed) and parses it. */
int npy_read_file(const char *path, npy_array *a, rg_err *err);
void npy_free(npy_array *a);
/* Like npy_read_file for numeric arrays: '<i4', '<i8', '<f4' or '<f8' (tensor dumps); the
 * strict readers above never return float kinds, so their callers need not handle them. */
int npy_read_numeric_file(const char *path, npy_array *a, rg_err *err);
/* Element i of a numeric array as a double. */
double npy_value_at(const npy_array *a, int64_t i);

/* Whole .npy files (version 1.0, C order) of float64 or int64 values; ndim 0 is a scalar. */
int npy_write_f64(const char *path, int ndim, const int64_t *shape, const double *data, rg_err *err);
int npy_write_i64(const char *path, int ndim, const int64_t *shape, const int64_t *data, rg_err *err);

/* Element i of an integer array (NPY_I4 or NPY_I8). */
int64_t npy_int_at(const npy_array *a, int64_t i);
/* Element i of a NPY_U array as UTF-8 (caller frees); trailing NULs are padding. */
char *npy_string_at(const npy_array *a, int64_t i);

/* Writes a version 1.0 header for descr and shape into out (NPY_HEADER_MAX bytes), padded
 * with spaces and a newline so the data starts 64-byte aligned; returns its length. */
size_t npy_format_header(unsigned char *out, const char *descr, int ndim, const int64_t *shape);

/* Code points of UTF-8 s; bytes that are not valid UTF-8 count one each (they are stored as
 * U+DC80+byte, Python's "surrogateescape", so any byte string round-trips). */
int64_t npy_ucs4_len(const char *s);
/* Writes s as `width` little-endian UCS4 code points, zero padded (width >= npy_ucs4_len). */
void npy_encode_ucs4(const char *s, unsigned char *out, int64_t width);

#endif
