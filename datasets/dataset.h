/* Opening a dataset by name: the registry of known graphs, the data and cache
 * directories, the synthetic generator (synth:...) and the per-format loaders. */
#ifndef DS_DATASET_H
#define DS_DATASET_H

#include "datasets/hgraph.h"

typedef struct ds_options {
    const char *data_dir;   /* NULL: $RGNN_DATA, else datasets/data */
    const char *cache_dir;  /* NULL: $RGNN_CACHE, else datasets/cache */
    int no_cache;           /* parse even if a cache exists, and do not write one */
    int quiet;              /* no progress lines on stderr */
} ds_options;

/* Loaders of the registry: a loader reads the directory of one dataset. */
typedef hg_graph *(*ds_loader_fn)(const char *dir, const char *name, rg_err *err);

typedef struct ds_expected {
    int32_t node_types, edge_types;
    int64_t nodes, edges, unique_pairs;   /* 0 = not published */
} ds_expected;

typedef struct ds_entry {
    const char *name;
    const char *description;
    const char *format;          /* "rdf-n3", "rdf-nt", "openke", "kge", "ogb-hetero", "ogb-wikikg2", "npy-coo" */
    const char *subdir;          /* folder under the data dir */
    const char *const *files;    /* files that must exist in it (NULL-terminated) */
    const char *url;             /* where to download it (documented in README) */
    const char *sha256;          /* of the downloaded file; NULL when not recorded */
    const char *how_to_get;      /* one line for "missing" messages */
    ds_loader_fn load;
    ds_expected expected;        /* after the loader's preprocessing (reverse types) */
} ds_entry;

const ds_entry *ds_registry(int *count);
const ds_entry *ds_find(const char *name);
/* "did you mean" list for an unknown name: a comma-separated string (caller frees) */
char *ds_suggest(const char *name);

const char *ds_data_dir(const ds_options *opt);
const char *ds_cache_dir(const ds_options *opt);
/* How the data dir was chosen: "--data-dir", "$RGNN_DATA" or "default" (for messages). */
const char *ds_data_dir_origin(const ds_options *opt);
/* <data dir>/<subdir> of a registered dataset (caller frees). */
char *ds_entry_dir(const ds_entry *e, const ds_options *opt);
/* The entry's required files (or patterns such as "aifb*.n3") absent from dir,
 * comma-separated, or NULL when all are there (caller frees). */
char *ds_missing_files(const ds_entry *e, const char *dir);
/* The cache file ds_open would read or write for the dataset `name` read from `dir`: named
 * after the dataset, keyed by the source files' paths, sizes and mtimes (caller frees). */
char *ds_cache_path(const char *name, const char *dir, const ds_options *opt);

/* Opens "name" (registry), "synth:name", "synth:k=v,..." or a path to a dataset folder
 * whose format is recognised. Uses and refreshes the binary cache. */
hg_graph *ds_open(const char *spec, const ds_options *opt, rg_err *err);

#endif
