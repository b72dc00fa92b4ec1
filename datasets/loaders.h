/* Format loaders turning files into typed graphs, each streaming its input:
 * RDF (serd), OpenKE/KGE triples, OGB raw CSV (zlib), NumPy COO, and the generator. */
#ifndef DS_LOADERS_H
#define DS_LOADERS_H

#include "datasets/hgraph.h"

/* RDF with DGL's per-dataset rules (datasets/rdf.c). Reads every .nt, .nt.gz, .n3, .ttl
 * file in dir (sorted by name), drops what DGL drops, adds rev- types. */
hg_graph *rdf_load_aifb(const char *dir, const char *name, rg_err *err);
hg_graph *rdf_load_mutag(const char *dir, const char *name, rg_err *err);
hg_graph *rdf_load_bgs(const char *dir, const char *name, rg_err *err);
hg_graph *rdf_load_am(const char *dir, const char *name, rg_err *err);

/* Knowledge-graph triples, all splits, with reverse types (datasets/kg.c). */
hg_graph *kg_load_openke(const char *dir, const char *name, rg_err *err);  /* *2id.txt, h t r */
hg_graph *kg_load_kge(const char *dir, const char *name, rg_err *err);     /* h\tr\tt text */

/* OGB raw layout, gzip CSV (datasets/ogb.c). Training edges as published, no reverse. */
hg_graph *ogb_load_hetero(const char *dir, const char *name, rg_err *err);   /* ogbn-mag, ogbl-biokg */
hg_graph *ogb_load_wikikg2(const char *dir, const char *name, rg_err *err);

/* NumPy .npy COO per relation: the mag_0.1 subsample (datasets/npy.c). */
hg_graph *npy_load_mag_sub(const char *dir, const char *name, rg_err *err);

/* Generator (datasets/synth.c): "aifb" (a registered name) or "nodes=..,edges=..,ntypes=..,
 * etypes=..,ratio=..[,seed=..]". Deterministic for a seed. */
hg_graph *synth_generate(const char *spec, rg_err *err);
/* The same graph before preprocessing: a builder holding the edges (reserved to size) for
 * hgb_finish(b, *add_reverse, err), so generation and preprocessing can be timed apart. */
hg_builder *synth_build(const char *spec, int *add_reverse, rg_err *err);
/* Multi-line description of the synth: specs (profiles, keys, whether reverse types are added). */
const char *synth_help(void);

/* Versioned, checksummed binary cache of a finished graph (datasets/gcache.c). */
int gcache_write(const char *path, const hg_graph *g, rg_err *err);
/* Returns NULL with a message if the file is missing, truncated, corrupt or of another version. */
hg_graph *gcache_read(const char *path, rg_err *err);

#endif
