/* NumPy .npz archives (zip of .npy members, deflated, zlib CRC-32): a streaming writer, a
 * reader, and the export/import of a whole typed graph as arrays numpy can load. */
#ifndef NPZ_NPZ_H
#define NPZ_NPZ_H

#include <stdint.h>
#include "common/util.h"
#include "datasets/hgraph.h"
#include "datasets/npy.h"

/* ---- Writing: members go to PATH.tmp.<pid>, renamed to PATH by npz_finish ---- */
typedef struct npz_writer npz_writer;

npz_writer *npz_create(const char *path, rg_err *err);
/* A 1-d '<i4' array "name" (stored as member name.npy). */
int npz_add_i32(npz_writer *w, const char *name, const int32_t *v, int64_t n, rg_err *err);
/* A 1-d '<U<width>' array of n UTF-8 strings; width is the longest (at least 1). */
int npz_add_strings(npz_writer *w, const char *name, char *const *s, int64_t n, rg_err *err);
/* A 0-d '<U<width>' array holding one string, as np.savez stores a Python str. */
int npz_add_string_scalar(npz_writer *w, const char *name, const char *s, rg_err *err);
/* Writes the zip directory, flushes, renames into place and frees w. On failure the
 * temporary file is removed and PATH is left as it was. */
int npz_finish(npz_writer *w, rg_err *err);
/* Gives up: removes the temporary file and frees w. */
void npz_abandon(npz_writer *w);

/* ---- Reading: every .npy member, checked (CRC, sizes, headers) ---- */
typedef struct npz_file {
    int count;
    char **names;         /* member names without ".npy" */
    npy_array *arrays;
} npz_file;

/* NULL with a message for a missing, truncated or corrupt archive, zip64 or encrypted
 * members, methods other than stored/deflate, or members that are not valid .npy. */
npz_file *npz_read(const char *path, rg_err *err);
const npy_array *npz_get(const npz_file *f, const char *name);
void npz_free(npz_file *f);

/* ---- A graph as arrays ----
 * int32: src, dst, etype, ntype_ptr, etype_ptr, etype_src, etype_dst, unique_src,
 * unique_etype_ptr, edge_compact; unicode: ntype_names, etype_names, and a 0-d name. */
int npz_export_graph(const hg_graph *g, const char *path, rg_err *err);
/* Rebuilds the graph through hgb_* from names, ntype_ptr, etype_src/dst and src/dst/etype
 * (int32 or int64); derived arrays present in the file must match the rebuilt ones. */
hg_graph *npz_import_graph(const char *path, rg_err *err);

#endif
