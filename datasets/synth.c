/* Synthetic typed graphs: profiles shaped like the papers' datasets (synth:<name>) or explicit
 * sizes (synth:nodes=..), deterministic from a seed, written straight into a reserved builder. */
#include "datasets/loaders.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Profiles ----
 * A relation row: a canonical edge type with its edge count and its numbers of distinct
 * sources and destinations (0 = not known: sized from the profile's totals and target ratio).
 * With reverse types, the distinct destinations of r are the distinct sources of rev-r, so
 * the unique (src, etype) pairs of the graph are sum(uniq_src + uniq_dst) exactly. */
typedef struct synth_rel_row {
    const char *name;
    int32_t src, dst;             /* node type indices of the profile */
    int64_t edges, uniq_src, uniq_dst;
    int32_t mirror_of;            /* >= 0: holds the reversed edges of that (earlier) row */
} synth_rel_row;

typedef struct synth_profile {
    const char *name;
    int add_reverse;              /* DGL's RDF/KG preprocessing adds rev-<rel>; OGB's does not */
    double ratio;                 /* compaction ratio of the finished graph: target, or implied by rows */
    double src_skew, dst_skew;    /* Zipf exponents of out- and in-degree (and node popularity) */
    int32_t num_ntypes;
    const char *const *ntype_names;   /* NULL: t0, t1, ... */
    const int64_t *ntype_counts;      /* NULL: `nodes` split over the types by a Zipf law */
    int64_t nodes;
    int32_t num_rels;             /* relations before reverse */
    int32_t num_rows;             /* rows given; relations past them are generated */
    const synth_rel_row *rows;
    const int32_t (*kg_rows)[3];  /* one-type profiles: {edges, uniq src, uniq dst} per relation */
    int64_t edges;                /* edges before reverse */
    const char *fill_prefix;      /* name prefix of generated relations */
    int32_t fill_src, fill_dst;   /* their node types; -1: drawn by type size */
} synth_profile;

/* The four datasets with a copy in ../shared/datasets: per-relation counts derived from the
 * real files with DGL's rules (aifb, mutag), OpenKE's splits (fb15k237) and the .npy arrays
 * (mag_0.1). Only statistics are kept here; the totals equal the published ones exactly. */
static const char *const AIFB_NTYPES[] = {"Forschungsgebiete", "Projekte", "Personen", "_Literal", "Forschungsgruppen", "Publikationen", "Kooperationen"};
static const int64_t AIFB_NCOUNT[] = {146, 78, 237, 5450, 5, 1318, 28};
static const synth_rel_row AIFB_RELS[] = {
    {"ontology#dealtWithIn", 0, 1, 357, 110, 71, -1},
    {"ontology#isWorkedOnBy", 0, 2, 571, 124, 100, -1},
    {"ontology#name", 0, 3, 146, 146, 145, -1},
    {"rdftype", 0, 3, 129, 129, 1, -1},
    {"ontology#carriesOut", 4, 1, 79, 4, 74, -1},
    {"ontology#head", 4, 2, 5, 4, 5, -1},
    {"ontology#homepage", 4, 3, 5, 5, 5, -1},
    {"ontology#member", 4, 2, 74, 5, 74, -1},
    {"ontology#name", 4, 3, 5, 5, 5, -1},
    {"ontology#publishes", 4, 5, 1217, 4, 1207, -1},
    {"ontology#finances", 6, 1, 68, 21, 61, -1},
    {"ontology#name", 6, 3, 28, 28, 28, -1},
    {"ontology#fax", 2, 3, 227, 227, 27, -1},
    {"ontology#name", 2, 3, 227, 227, 227, -1},
    {"ontology#phone", 2, 3, 227, 227, 110, -1},
    {"ontology#publication", 2, 5, 2609, 128, 1210, -1},
    {"ontology#homepage", 2, 3, 78, 78, 54, -1},
    {"ontology#photo", 2, 3, 148, 148, 148, -1},
    {"ontology#worksAtProject", 2, 1, 200, 80, 49, -1},
    {"ontology#carriedOutBy", 1, 4, 79, 74, 4, -1},
    {"ontology#financedBy", 1, 6, 65, 58, 21, -1},
    {"ontology#homepage", 1, 3, 57, 57, 56, -1},
    {"ontology#isAbout", 1, 0, 357, 71, 110, -1},
    {"ontology#member", 1, 2, 265, 73, 90, -1},
    {"ontology#name", 1, 3, 75, 75, 75, -1},
    {"ontology#projectInfo", 1, 5, 952, 57, 576, -1},
    {"ontology#homepage", 5, 3, 99, 99, 95, -1},
    {"ontology#name", 5, 3, 821, 821, 795, -1},
    {"ontology#publication", 5, 5, 1554, 759, 606, -1},
    {"ontology#abstract", 5, 3, 534, 534, 518, -1},
    {"ontology#author", 5, 2, 2550, 1167, 138, -1},
    {"ontology#booktitle", 5, 3, 765, 765, 692, -1},
    {"ontology#hasProject", 5, 1, 952, 576, 57, -1},
    {"ontology#isAbout", 5, 0, 2120, 708, 129, -1},
    {"ontology#title", 5, 3, 1227, 1227, 1148, -1},
    {"ontology#year", 5, 3, 1227, 1227, 18, -1},
    {"ontology#journal", 5, 3, 161, 161, 114, -1},
    {"ontology#month", 5, 3, 759, 759, 14, -1},
    {"ontology#number", 5, 3, 145, 145, 50, -1},
    {"ontology#pages", 5, 3, 548, 548, 528, -1},
    {"ontology#address", 5, 3, 202, 202, 133, -1},
    {"ontology#author", 5, 5, 1436, 560, 699, -1},
    {"ontology#series", 5, 3, 298, 298, 174, -1},
    {"ontology#volume", 5, 3, 311, 311, 178, -1},
    {"ontology#editor", 5, 2, 81, 52, 25, -1},
    {"ontology#editor", 5, 5, 109, 41, 87, -1},
    {"ontology#note", 5, 3, 114, 114, 89, -1},
    {"ontology#howpublished", 5, 3, 49, 49, 47, -1},
    {"ontology#type", 5, 3, 50, 50, 13, -1},
    {"ontology#isbn", 5, 3, 16, 16, 16, -1},
    {"ontology#chapter", 5, 3, 15, 15, 13, -1},
    {"ontology#edition", 5, 3, 12, 12, 9, -1},
};

static const char *const MUTAG_NTYPES[] = {"SCHEMA", "bond", "d", "_Literal", "hasStructure"};
static const int64_t MUTAG_NCOUNT[] = {3687, 9317, 9529, 1104, 3526};
static const synth_rel_row MUTAG_RELS[] = {
    {"rdf-schema#subClassOf", 0, 0, 138, 138, 30, -1},
    {"owl#disjointWith", 0, 0, 6, 3, 3, -1},
    {"22-rdf-syntax-ns#type", 0, 0, 3526, 3526, 38, -1},
    {"rdf-schema#domain", 0, 0, 19, 19, 3, -1},
    {"inBond", 1, 2, 18634, 9317, 9188, -1},
    {"22-rdf-syntax-ns#type", 1, 0, 9317, 9317, 4, -1},
    {"amesTestPositive", 2, 3, 340, 340, 2, -1},
    {"cytogen_ca", 2, 3, 293, 292, 2, -1},
    {"cytogen_sce", 2, 3, 283, 283, 2, -1},
    {"drosophila_rt", 2, 3, 25, 25, 2, -1},
    {"drosophila_slrl", 2, 3, 25, 25, 1, -1},
    {"hasAtom", 2, 2, 9189, 340, 9189, -1},
    {"hasBond", 2, 1, 9317, 340, 9317, -1},
    {"hasStructure", 2, 4, 3526, 332, 3526, -1},
    {"mouse_lymph", 2, 3, 203, 203, 2, -1},
    {"salmonella", 2, 3, 305, 305, 2, -1},
    {"22-rdf-syntax-ns#type", 2, 0, 9529, 9529, 67, -1},
    {"charge", 2, 3, 9189, 9189, 1102, -1},
    {"chromaberr", 2, 3, 55, 55, 2, -1},
    {"salmonella_n", 2, 3, 61, 61, 2, -1},
    {"chromex", 2, 3, 35, 35, 2, -1},
    {"micronuc_f", 2, 3, 13, 13, 2, -1},
    {"micronuc_m", 2, 3, 13, 13, 2, -1},
    {"salmonella_reduc", 2, 3, 5, 5, 2, -1},
    {"rdf-schema#range", 0, 0, 4, 4, 3, -1},
};

static const int32_t FB15K237_RELS[][3] = {
    {369, 192, 6}, {1426, 271, 968}, {2901, 102, 1603}, {8491, 1612, 1618}, {2279, 745, 7},
    {2283, 744, 6}, {11045, 2120, 1793}, {11069, 241, 1623}, {16391, 2337, 2345}, {2711, 120, 121},
    {3440, 261, 140}, {1749, 1626, 5}, {3040, 1139, 1652}, {15568, 1354, 180}, {3125, 1869, 61},
    {5834, 908, 3009}, {201, 199, 4}, {13382, 4383, 152}, {726, 113, 37}, {14051, 3449, 406},
    {7134, 319, 1097}, {2321, 524, 461}, {3229, 540, 2238}, {977, 330, 24}, {2783, 2783, 724},
    {4364, 4364, 1}, {6445, 1289, 39}, {3337, 141, 1627}, {2673, 1756, 64}, {2622, 58, 209},
    {3536, 1033, 235}, {8649, 1885, 123}, {2643, 76, 1646}, {458, 458, 1}, {1471, 1471, 7},
    {1310, 59, 66}, {626, 89, 20}, {936, 23, 491}, {6483, 2363, 1629}, {834, 834, 208},
    {710, 113, 364}, {2040, 480, 109}, {2227, 90, 633}, {4530, 4530, 2}, {867, 48, 367},
    {1573, 646, 653}, {404, 262, 48}, {6070, 435, 2516}, {5097, 4448, 105}, {193, 40, 14},
    {895, 70, 756}, {307, 283, 11}, {851, 275, 171}, {153, 122, 120}, {160, 138, 125},
    {113, 5, 110}, {563, 563, 563}, {499, 80, 77}, {2157, 790, 779}, {726, 167, 580}, {583, 583, 3},
    {1013, 496, 21}, {619, 619, 137}, {883, 13, 847}, {838, 58, 58}, {685, 43, 55},
    {4275, 2619, 829}, {240, 112, 40}, {844, 94, 202}, {1269, 139, 43}, {379, 59, 187},
    {2483, 77, 1895}, {821, 210, 41}, {320, 136, 3}, {447, 338, 49}, {3887, 120, 121},
    {2744, 146, 862}, {1432, 653, 651}, {134, 4, 134}, {337, 20, 123}, {523, 523, 9},
    {552, 552, 552}, {1337, 1173, 45}, {951, 849, 376}, {1399, 978, 395}, {3557, 3334, 4},
    {1734, 1179, 84}, {541, 11, 541}, {316, 67, 166}, {2788, 25, 655}, {344, 226, 6}, {147, 147, 1},
    {1599, 98, 188}, {263, 28, 50}, {419, 295, 412}, {833, 372, 20}, {528, 94, 20}, {745, 256, 255},
    {287, 31, 14}, {123, 42, 17}, {979, 713, 39}, {3219, 607, 127}, {886, 275, 848},
    {1144, 122, 647}, {397, 57, 41}, {219, 217, 29}, {1185, 790, 257}, {1183, 304, 85},
    {460, 460, 6}, {823, 680, 344}, {266, 266, 1}, {313, 313, 198}, {618, 23, 120}, {179, 123, 3},
    {104, 12, 12}, {421, 411, 5}, {1196, 1094, 217}, {610, 67, 17}, {493, 493, 1}, {252, 155, 153},
    {966, 966, 1}, {304, 30, 164}, {426, 129, 184}, {453, 266, 270}, {883, 621, 24}, {164, 11, 157},
    {191, 9, 183}, {314, 314, 85}, {361, 361, 6}, {219, 218, 4}, {3551, 52, 970}, {490, 67, 132},
    {191, 8, 191}, {628, 628, 86}, {809, 295, 68}, {391, 391, 60}, {803, 565, 256}, {1179, 22, 70},
    {260, 218, 110}, {194, 193, 5}, {324, 66, 260}, {495, 168, 169}, {184, 50, 7}, {800, 787, 125},
    {137, 135, 129}, {425, 259, 176}, {559, 559, 559}, {178, 151, 23}, {652, 56, 12},
    {145, 23, 134}, {414, 145, 106}, {153, 42, 85}, {779, 83, 87}, {246, 71, 195}, {1417, 1388, 13},
    {439, 366, 220}, {235, 49, 5}, {536, 42, 186}, {358, 57, 259}, {361, 255, 201}, {609, 542, 244},
    {528, 4, 519}, {286, 196, 89}, {429, 136, 189}, {236, 174, 173}, {128, 25, 112}, {481, 481, 7},
    {162, 162, 1}, {218, 4, 146}, {574, 65, 16}, {552, 73, 273}, {129, 43, 3}, {426, 333, 7},
    {129, 24, 105}, {599, 40, 51}, {143, 119, 120}, {426, 29, 22}, {241, 131, 45}, {125, 29, 28},
    {136, 81, 18}, {102, 18, 18}, {125, 122, 35}, {181, 181, 26}, {373, 366, 63}, {182, 181, 32},
    {322, 297, 12}, {200, 187, 30}, {123, 101, 28}, {361, 91, 89}, {322, 20, 249}, {184, 184, 183},
    {298, 251, 21}, {437, 403, 394}, {200, 142, 25}, {296, 271, 296}, {191, 191, 1},
    {168, 121, 127}, {121, 7, 58}, {244, 152, 23}, {133, 123, 76}, {165, 151, 2}, {149, 122, 108},
    {166, 155, 31}, {282, 194, 38}, {128, 47, 5}, {141, 141, 19}, {160, 160, 1}, {231, 86, 185},
    {182, 182, 2}, {45, 45, 1}, {134, 134, 9}, {104, 7, 94}, {204, 201, 5}, {199, 199, 2},
    {242, 75, 59}, {150, 8, 131}, {197, 23, 54}, {162, 133, 3}, {202, 62, 62}, {233, 233, 3},
    {182, 71, 5}, {248, 196, 44}, {154, 102, 41}, {108, 91, 27}, {307, 285, 129}, {119, 119, 6},
    {157, 117, 106}, {141, 33, 74}, {113, 106, 104}, {194, 61, 56}, {211, 196, 196}, {114, 12, 12},
    {139, 138, 3}, {127, 6, 96}, {149, 149, 1}, {109, 84, 25}, {121, 82, 54},
};

static const char *const MAG_SUB_NTYPES[] = {"paper", "field", "author"};
static const int64_t MAG_SUB_NCOUNT[] = {73638, 6001, 73631};
static const synth_rel_row MAG_SUB_RELS[] = {
    {"cited", 0, 0, 52670, 24417, 27983, -1},
    {"citing", 0, 0, 52670, 27983, 24417, 0},
    {"has", 1, 0, 64620, 2771, 44196, -1},
    {"is-about", 0, 1, 64620, 44196, 2771, 2},
    {"writing", 2, 0, 55296, 19757, 22950, -1},
    {"written-by", 0, 2, 55296, 22950, 19757, 4},
};

/* ogbn-mag: OGB's type and relation sizes (datasets-formats.md); distinct endpoints unknown. */
static const char *const MAG_NTYPES[] = {"author", "field_of_study", "institution", "paper"};
static const int64_t MAG_NCOUNT[] = {1134649, 59965, 8740, 736389};
static const synth_rel_row MAG_RELS[] = {
    {"affiliated_with", 0, 2, 1043998, 0, 0, -1},
    {"writes", 0, 3, 7145660, 0, 0, -1},
    {"cites", 3, 3, 5416271, 0, 0, -1},
    {"has_topic", 3, 1, 7505078, 0, 0, -1},
};

/* ogbl-biokg: OGB's type sizes; the 13 non drug-drug relation kinds are OGB's, the remaining
 * 38 relations are drug-drug interaction types, all sized by a Zipf split [reconstructed]. */
static const char *const BIOKG_NTYPES[] = {"disease", "drug", "function", "protein", "sideeffect"};
static const int64_t BIOKG_NCOUNT[] = {10687, 10533, 45085, 17499, 9969};
static const synth_rel_row BIOKG_RELS[] = {
    {"disease-protein", 0, 3, 0, 0, 0, -1},
    {"drug-disease", 1, 0, 0, 0, 0, -1},
    {"drug-protein", 1, 3, 0, 0, 0, -1},
    {"drug-sideeffect", 1, 4, 0, 0, 0, -1},
    {"function-function", 2, 2, 0, 0, 0, -1},
    {"protein-function", 3, 2, 0, 0, 0, -1},
    {"protein-protein_activation", 3, 3, 0, 0, 0, -1},
    {"protein-protein_binding", 3, 3, 0, 0, 0, -1},
    {"protein-protein_catalysis", 3, 3, 0, 0, 0, -1},
    {"protein-protein_expression", 3, 3, 0, 0, 0, -1},
    {"protein-protein_inhibition", 3, 3, 0, 0, 0, -1},
    {"protein-protein_ptmod", 3, 3, 0, 0, 0, -1},
    {"protein-protein_reaction", 3, 3, 0, 0, 0, -1},
};
static const char *const ONE_ENTITY[] = {"entity"};

#define COUNT(a) ((int32_t)(sizeof a / sizeof a[0]))

/* Sizes: seed digest §5.2 and DGL's/OGB's documented counts (the registry's expectations).
 * Skews: Zipf exponents; where a real copy exists, chosen so that the in-degree skewness of
 * the synthetic graph is near the real one (aifb 20, mutag 98, fb15k237 34, mag_0.1 119);
 * the others borrow the exponents of the closest kind (RDF, KG, mag).
 * Ratios marked [R] are estimates: the papers show them only in a figure (AM: 57% stated). */
static const synth_profile PROFILES[] = {
    {.name = "aifb", .add_reverse = 1, .ratio = 24299.0 / 48810, .src_skew = 0.5, .dst_skew = 1.2,
     .num_ntypes = COUNT(AIFB_NTYPES), .ntype_names = AIFB_NTYPES, .ntype_counts = AIFB_NCOUNT,
     .num_rels = COUNT(AIFB_RELS), .num_rows = COUNT(AIFB_RELS), .rows = AIFB_RELS},
    {.name = "mutag", .add_reverse = 1, .ratio = 76204.0 / 148100, .src_skew = 0.5, .dst_skew = 1.1,
     .num_ntypes = COUNT(MUTAG_NTYPES), .ntype_names = MUTAG_NTYPES, .ntype_counts = MUTAG_NCOUNT,
     .num_rels = COUNT(MUTAG_RELS), .num_rows = COUNT(MUTAG_RELS), .rows = MUTAG_RELS},
    /* [R] an RDF graph like aifb and mutag: about one half */
    {.name = "bgs", .add_reverse = 1, .ratio = 0.50, .src_skew = 0.5, .dst_skew = 1.1,
     .num_ntypes = 27, .nodes = 94806, .num_rels = 61, .edges = 336442,
     .fill_prefix = "rel", .fill_src = -1, .fill_dst = -1},
    /* AM 57% is stated in both papers; nodes as DGL documents them (the papers' 1.885M is suspect) */
    {.name = "am", .add_reverse = 1, .ratio = 0.57, .src_skew = 0.5, .dst_skew = 1.1,
     .num_ntypes = 7, .nodes = 881680, .num_rels = 54, .edges = 2834341,
     .fill_prefix = "rel", .fill_src = -1, .fill_dst = -1},
    /* [R] every author writes and nearly every paper cites and has topics: about 0.16 */
    {.name = "mag", .add_reverse = 0, .ratio = 0.16, .src_skew = 0.3, .dst_skew = 0.8,
     .num_ntypes = COUNT(MAG_NTYPES), .ntype_names = MAG_NTYPES, .ntype_counts = MAG_NCOUNT,
     .num_rels = COUNT(MAG_RELS), .num_rows = COUNT(MAG_RELS), .rows = MAG_RELS},
    /* [R] most (entity, property) pairs of Wikidata hold one or two values */
    {.name = "wikikg2", .add_reverse = 0, .ratio = 0.60, .src_skew = 0.5, .dst_skew = 0.8,
     .num_ntypes = 1, .ntype_names = ONE_ENTITY, .nodes = 2500604, .num_rels = 535,
     .edges = 16109182, .fill_prefix = "P", .fill_src = 0, .fill_dst = 0},
    {.name = "fb15k237", .add_reverse = 1, .ratio = 161922.0 / 620232, .src_skew = 0.5,
     .dst_skew = 0.6, .num_ntypes = 1, .ntype_names = ONE_ENTITY, .nodes = 14541,
     .num_rels = COUNT(FB15K237_RELS), .kg_rows = FB15K237_RELS},
    /* [R] dense protein and drug relations (average degree 51): about 0.1 */
    {.name = "biokg", .add_reverse = 0, .ratio = 0.10, .src_skew = 0.5, .dst_skew = 0.6,
     .num_ntypes = COUNT(BIOKG_NTYPES), .ntype_names = BIOKG_NTYPES, .ntype_counts = BIOKG_NCOUNT,
     .num_rels = 51, .num_rows = COUNT(BIOKG_RELS), .rows = BIOKG_RELS, .edges = 4762678,
     .fill_prefix = "drug-drug_", .fill_src = 1, .fill_dst = 1},
    {.name = "mag_0.1", .add_reverse = 0, .ratio = 142074.0 / 345172, .src_skew = 0.3,
     .dst_skew = 0.8, .num_ntypes = COUNT(MAG_SUB_NTYPES), .ntype_names = MAG_SUB_NTYPES,
     .ntype_counts = MAG_SUB_NCOUNT, .num_rels = COUNT(MAG_SUB_RELS),
     .num_rows = COUNT(MAG_SUB_RELS), .rows = MAG_SUB_RELS},
};
#define PROFILE_COUNT ((int)(sizeof PROFILES / sizeof PROFILES[0]))

#define REL_SIZE_SKEW 1.0     /* Zipf exponent of relation sizes when only totals are known */
#define NTYPE_SIZE_SKEW 1.0   /* ... and of node type sizes */
#define DEFAULT_SEED 1
#define MAX_CUSTOM_NTYPES 4096    /* the builder finds types by linear search */
#define MAX_CUSTOM_ETYPES 16384

static const char SYNTH_USAGE[] =
    "use synth:<profile>[,seed=N] with a profile among aifb, mutag, bgs, am, mag, wikikg2, "
    "fb15k237, biokg, mag_0.1, or synth:nodes=N,edges=M,ntypes=T,etypes=R,ratio=X"
    "[,seed=S][,reverse=0|1][,skew=A]";

const char *synth_help(void)
{
    return "synth:<profile>[,seed=N]\n"
           "    profile: aifb, mutag, bgs, am, mag, wikikg2, fb15k237, biokg, mag_0.1. The node\n"
           "    and edge types, nodes, edges and compaction ratio of the dataset after DGL's/OGB's\n"
           "    preprocessing; sizes per type and per relation are the real ones for aifb, mutag,\n"
           "    fb15k237, mag_0.1 (and mag's types and relations), Zipf splits of the published\n"
           "    totals otherwise. Reverse types rev-<rel> are added for aifb, mutag, bgs, am and\n"
           "    fb15k237, not for the OGB sets (mag, wikikg2, biokg) nor mag_0.1 (whose six\n"
           "    relations are already three pairs). The seed changes the edges, never the sizes.\n"
           "synth:nodes=N,edges=M,ntypes=T,etypes=R,ratio=X[,seed=S][,reverse=0|1][,skew=A]\n"
           "    R relations before reverse. reverse=1 (default) adds rev-<rel> for each, so the\n"
           "    graph has 2R edge types and M edges in all (M/2 each way; M must be even);\n"
           "    reverse=0 keeps R types and M edges. ratio: unique (src, edge type) pairs / edges.\n"
           "    skew: Zipf exponent of in-degrees (default 1; out-degrees use skew/2).\n"
           "    Counts take K/M/G suffixes (nodes=1.5M). Same spec and seed, same graph.\n";
}

/* ---- The plan: a profile with every size filled in ---- */

typedef struct plan_rel {
    char *name;
    int32_t src, dst, mirror_of;
    int64_t edges, uniq_src, uniq_dst;
} plan_rel;

typedef struct synth_plan {
    char *graph_name;
    int32_t num_ntypes;
    char **ntype_names;
    int64_t *ntype_counts;
    int32_t num_rels;
    plan_rel *rels;
    int add_reverse;
    double ratio, src_skew, dst_skew;
    uint64_t seed;
} synth_plan;

static void plan_free(synth_plan *p)
{
    if (!p) return;
    for (int32_t t = 0; t < p->num_ntypes; t++) free(p->ntype_names[t]);
    for (int32_t r = 0; r < p->num_rels; r++) free(p->rels[r].name);
    free(p->ntype_names);
    free(p->ntype_counts);
    free(p->rels);
    free(p->graph_name);
    free(p);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Splits total into n parts of at least 1, the rest in proportion to (k+1)^-alpha. The
 * parts are differences of a rounded cumulative sum, so they add up to total exactly. */
static void zipf_split(int64_t *out, int64_t n, int64_t total, double alpha)
{
    RG_ASSERT(n > 0 && total >= n);
    double wsum = 0, cum = 0;
    for (int64_t k = 0; k < n; k++) wsum += exp(-alpha * log((double)k + 1));
    int64_t extra = total - n, prev = 0;
    for (int64_t k = 0; k < n; k++) {
        cum += exp(-alpha * log((double)k + 1));
        int64_t upto = k == n - 1 ? extra : min64(extra, max64(prev, (int64_t)floor(extra * cum / wsum)));
        out[k] = 1 + upto - prev;
        prev = upto;
    }
}

/* A random stream per (seed, purpose), so each relation's edges depend on nothing else. */
static void seed_stream(rg_rng *rng, uint64_t seed, uint64_t stream)
{
    uint64_t key[2] = {seed, stream};
    rg_rng_seed(rng, rg_fnv1a64(key, sizeof key, RG_FNV_SEED));
}

static void plan_ntypes(synth_plan *p, const synth_profile *prof)
{
    p->num_ntypes = prof->num_ntypes;
    p->ntype_names = rg_xmalloc((size_t)p->num_ntypes * sizeof(char *));
    p->ntype_counts = rg_xmalloc((size_t)p->num_ntypes * sizeof(int64_t));
    for (int32_t t = 0; t < p->num_ntypes; t++)
        p->ntype_names[t] = prof->ntype_names ? rg_xstrdup(prof->ntype_names[t]) : rg_xasprintf("t%d", t);
    if (prof->ntype_counts)
        memcpy(p->ntype_counts, prof->ntype_counts, (size_t)p->num_ntypes * sizeof(int64_t));
    else
        zipf_split(p->ntype_counts, p->num_ntypes, prof->nodes, NTYPE_SIZE_SKEW);
}

/* A node type drawn with probability proportional to its node count. */
static int32_t pick_type_by_size(const synth_plan *p, rg_rng *rng)
{
    int64_t total = 0;
    for (int32_t t = 0; t < p->num_ntypes; t++) total += p->ntype_counts[t];
    int64_t x = (int64_t)rg_rng_below(rng, (uint64_t)total);
    for (int32_t t = 0; t < p->num_ntypes; t++) {
        if (x < p->ntype_counts[t]) return t;
        x -= p->ntype_counts[t];
    }
    return p->num_ntypes - 1;
}

static void plan_relations(synth_plan *p, const synth_profile *prof, rg_rng *shape)
{
    p->num_rels = prof->num_rels;
    p->rels = rg_xcalloc((size_t)p->num_rels, sizeof(plan_rel));
    for (int32_t r = 0; r < p->num_rels; r++) {
        plan_rel *rel = &p->rels[r];
        rel->mirror_of = -1;
        if (prof->kg_rows) {
            rel->name = rg_xasprintf("r%d", r);
            rel->edges = prof->kg_rows[r][0];
            rel->uniq_src = prof->kg_rows[r][1];
            rel->uniq_dst = prof->kg_rows[r][2];
        } else if (r < prof->num_rows) {
            const synth_rel_row *row = &prof->rows[r];
            *rel = (plan_rel){rg_xstrdup(row->name), row->src, row->dst, row->mirror_of,
                              row->edges, row->uniq_src, row->uniq_dst};
        } else {
            int32_t j = r - prof->num_rows;   /* the first ones touch every type once */
            rel->name = rg_xasprintf("%s%d", prof->fill_prefix, j);
            rel->src = prof->fill_src >= 0 ? prof->fill_src
                       : j < p->num_ntypes ? j : pick_type_by_size(p, shape);
            rel->dst = prof->fill_dst >= 0 ? prof->fill_dst : pick_type_by_size(p, shape);
        }
    }
}

typedef struct rel_capacity {
    double pairs;   /* |src type| x |dst type| */
    int32_t rel;
} rel_capacity;

static int by_capacity_desc(const void *a, const void *b)
{
    const rel_capacity *x = a, *y = b;
    if (x->pairs != y->pairs) return x->pairs < y->pairs ? 1 : -1;
    return x->rel - y->rel;
}

/* Relations of unknown size share the remaining edges by a Zipf law, the largest sizes
 * going to the relations between the largest types (fewest forced duplicate edges). */
static void plan_edge_sizes(synth_plan *p, const synth_profile *prof)
{
    int64_t known = 0;
    int32_t m = 0;
    rel_capacity *cap = rg_xmalloc((size_t)p->num_rels * sizeof *cap);
    for (int32_t r = 0; r < p->num_rels; r++) {
        const plan_rel *rel = &p->rels[r];
        if (rel->edges > 0) { known += rel->edges; continue; }
        cap[m].pairs = (double)p->ntype_counts[rel->src] * (double)p->ntype_counts[rel->dst];
        cap[m++].rel = r;
    }
    if (m > 0) {
        int64_t *sizes = rg_xmalloc((size_t)m * sizeof *sizes);
        qsort(cap, (size_t)m, sizeof *cap, by_capacity_desc);
        zipf_split(sizes, m, prof->edges - known, REL_SIZE_SKEW);
        for (int32_t k = 0; k < m; k++) p->rels[cap[k].rel].edges = sizes[k];
        free(sizes);
    }
    free(cap);
}

/* Bounds on a relation's distinct endpoints on one side: at most one per edge and per node;
 * at least enough that the edges need not repeat a (src, dst) pair. */
static void endpoint_bounds(const synth_plan *p, const plan_rel *rel, int src_side, int64_t *lo, int64_t *hi)
{
    int64_t here = p->ntype_counts[src_side ? rel->src : rel->dst];
    int64_t there = p->ntype_counts[src_side ? rel->dst : rel->src];
    *hi = min64(rel->edges, here);
    *lo = min64(*hi, max64(1, (rel->edges + there - 1) / there));
}

static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Distinct endpoints of the relations still unsized, all set to clamp(f x edges) with one
 * f; counted: the sides that make unique (src, etype) pairs (destinations only with reverse). */
static double counted_uniques(const synth_plan *p, double f)
{
    double sum = 0;
    for (int32_t r = 0; r < p->num_rels; r++) {
        const plan_rel *rel = &p->rels[r];
        if (rel->uniq_src) continue;
        for (int side = 1; side >= (p->add_reverse ? 0 : 1); side--) {
            int64_t lo, hi;
            endpoint_bounds(p, rel, side, &lo, &hi);
            sum += clampd(f * (double)rel->edges, (double)lo, (double)hi);
        }
    }
    return sum;
}

/* Rounding leaves the total a few pairs off: move them one at a time within the bounds. */
static void fix_rounding(synth_plan *p, const uint8_t *unsized, int64_t diff)
{
    while (diff != 0) {
        int64_t before = diff;
        for (int32_t r = 0; r < p->num_rels && diff != 0; r++) {
            if (!unsized[r]) continue;
            for (int side = 1; side >= (p->add_reverse ? 0 : 1) && diff != 0; side--) {
                int64_t lo, hi, *u = side ? &p->rels[r].uniq_src : &p->rels[r].uniq_dst;
                endpoint_bounds(p, &p->rels[r], side, &lo, &hi);
                if (diff > 0 && *u < hi) { (*u)++; diff--; }
                else if (diff < 0 && *u > lo) { (*u)--; diff++; }
            }
        }
        RG_ASSERT(diff != before);   /* the target was checked to lie within the bounds */
    }
}

/* Sets the unsized relations' distinct endpoints to clamp(f x edges); returns the counted sum. */
static int64_t set_uniques(synth_plan *p, const uint8_t *unsized, double f)
{
    int64_t got = 0;
    for (int32_t r = 0; r < p->num_rels; r++) {
        plan_rel *rel = &p->rels[r];
        if (!unsized[r]) continue;
        int64_t slo, shi, dlo, dhi;
        endpoint_bounds(p, rel, 1, &slo, &shi);
        endpoint_bounds(p, rel, 0, &dlo, &dhi);
        rel->uniq_src = llround(clampd(f * (double)rel->edges, (double)slo, (double)shi));
        rel->uniq_dst = llround(clampd(f * (double)rel->edges, (double)dlo, (double)dhi));
        got += rel->uniq_src + (p->add_reverse ? rel->uniq_dst : 0);
    }
    return got;
}

/* Sizes the distinct sources and destinations of relations that do not give them, so that
 * the finished graph's compaction ratio is the target (to the pair). */
static int plan_uniques(synth_plan *p, rg_err *err)
{
    int64_t edges = 0, known = 0;
    uint8_t *unsized = rg_xcalloc((size_t)p->num_rels, 1);
    for (int32_t r = 0; r < p->num_rels; r++) {
        const plan_rel *rel = &p->rels[r];
        edges += rel->edges;
        if (rel->uniq_src) known += rel->uniq_src + (p->add_reverse ? rel->uniq_dst : 0);
        else unsized[r] = 1;
    }
    if (p->add_reverse) edges *= 2;
    double need = (double)llround(p->ratio * (double)edges) - (double)known;
    double lo = counted_uniques(p, 0), hi = counted_uniques(p, 1);
    int any = memchr(unsized, 1, (size_t)p->num_rels) != NULL;
    if (any && (need < lo || need > hi)) {
        double rlo = ((double)known + lo) / (double)edges, rhi = ((double)known + hi) / (double)edges;
        free(unsized);
        if (lo == hi)
            return rg_errf(err, "ratio=%g cannot be reached with these sizes: the compaction ratio "
                           "can only be %.4f", p->ratio, rlo);
        return rg_errf(err, "ratio=%g cannot be reached with these sizes: the compaction ratio "
                       "can lie between %.4f and %.4f", p->ratio, rlo, rhi);
    }
    double f0 = 0, f1 = 1;
    for (int it = 0; any && it < 100; it++) {
        double mid = 0.5 * (f0 + f1);
        if (counted_uniques(p, mid) < need) f0 = mid; else f1 = mid;
    }
    if (any) fix_rounding(p, unsized, (int64_t)need - set_uniques(p, unsized, f1));
    free(unsized);
    return 0;
}

static void check_mirrors(const synth_plan *p)
{
    for (int32_t r = 0; r < p->num_rels; r++) {
        const plan_rel *m = &p->rels[r];
        if (m->mirror_of < 0) continue;
        RG_ASSERT(m->mirror_of < r);
        const plan_rel *o = &p->rels[m->mirror_of];
        RG_ASSERT(o->mirror_of < 0 && m->src == o->dst && m->dst == o->src && m->edges == o->edges);
        RG_ASSERT(m->uniq_src == o->uniq_dst && m->uniq_dst == o->uniq_src);
    }
}

static synth_plan *plan_new(const synth_profile *prof, uint64_t seed, const char *graph_name, rg_err *err)
{
    synth_plan *p = rg_xcalloc(1, sizeof *p);
    p->graph_name = rg_xstrdup(graph_name);
    p->add_reverse = prof->add_reverse;
    p->ratio = prof->ratio;
    p->src_skew = prof->src_skew;
    p->dst_skew = prof->dst_skew;
    p->seed = seed;
    /* The shape (type sizes, relation types and sizes) depends on the profile only. */
    rg_rng shape;
    rg_rng_seed(&shape, rg_fnv1a64(prof->name, strlen(prof->name), RG_FNV_SEED));
    plan_ntypes(p, prof);
    plan_relations(p, prof, &shape);
    plan_edge_sizes(p, prof);
    if (plan_uniques(p, err) != 0) {
        plan_free(p);
        return NULL;
    }
    check_mirrors(p);
    return p;
}

/* ---- Drawing the edges ---- */

typedef struct gen_ctx {
    const synth_plan *p;
    int32_t **popular;         /* per node type: its node ids, most popular first */
    uint8_t *taken;            /* [largest type] marks while sampling */
    double *keys, *work;       /* [largest type] */
    int32_t *srcs, *dsts;      /* [largest type] chosen endpoints, in popularity order */
    int64_t *out_deg, *in_deg; /* [largest type] */
    int32_t *slots;            /* [largest relation] destination of each edge */
} gen_ctx;

static void ctx_init(gen_ctx *c, const synth_plan *p)
{
    int64_t big_type = 1, big_rel = 1;
    for (int32_t t = 0; t < p->num_ntypes; t++) big_type = max64(big_type, p->ntype_counts[t]);
    for (int32_t r = 0; r < p->num_rels; r++) big_rel = max64(big_rel, p->rels[r].edges);
    c->p = p;
    c->popular = rg_xmalloc((size_t)p->num_ntypes * sizeof *c->popular);
    for (int32_t t = 0; t < p->num_ntypes; t++) {
        int64_t n = p->ntype_counts[t];
        int32_t *perm = rg_xmalloc((size_t)n * sizeof *perm);
        rg_rng rng;
        seed_stream(&rng, p->seed, (1ULL << 40) + (uint64_t)t);
        for (int64_t i = 0; i < n; i++) perm[i] = (int32_t)i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)rg_rng_below(&rng, (uint64_t)i + 1);
            int32_t x = perm[i]; perm[i] = perm[j]; perm[j] = x;
        }
        c->popular[t] = perm;
    }
    c->taken = rg_xcalloc((size_t)big_type, 1);
    c->keys = rg_xmalloc((size_t)big_type * sizeof(double));
    c->work = rg_xmalloc((size_t)big_type * sizeof(double));
    c->srcs = rg_xmalloc((size_t)big_type * sizeof(int32_t));
    c->dsts = rg_xmalloc((size_t)big_type * sizeof(int32_t));
    c->out_deg = rg_xmalloc((size_t)big_type * sizeof(int64_t));
    c->in_deg = rg_xmalloc((size_t)big_type * sizeof(int64_t));
    c->slots = rg_xmalloc((size_t)big_rel * sizeof(int32_t));
}

static void ctx_free(gen_ctx *c)
{
    for (int32_t t = 0; t < c->p->num_ntypes; t++) free(c->popular[t]);
    free(c->popular);
    free(c->taken);
    free(c->keys);
    free(c->work);
    free(c->srcs);
    free(c->dsts);
    free(c->out_deg);
    free(c->in_deg);
    free(c->slots);
}

/* A popularity rank in [0, n) with density ~ (k+1)^-skew (inverse of the continuous CDF). */
static int64_t draw_rank(rg_rng *rng, int64_t n, double skew)
{
    double u = rg_rng_uniform(rng), x;
    if (fabs(skew - 1.0) < 1e-9) {
        x = exp(u * log((double)n + 1.0)) - 1.0;
    } else {
        double a = 1.0 - skew;
        x = pow(u * (pow((double)n + 1.0, a) - 1.0) + 1.0, 1.0 / a) - 1.0;
    }
    int64_t k = (int64_t)x;
    return k < 0 ? 0 : k >= n ? n - 1 : k;
}

/* k-th smallest (0-based) by quickselect; reorders a. */
static double select_kth(double *a, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi];
        double pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) { double t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return a[k];
    }
    return a[k];
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Few nodes of a large type: repeated popularity draws, skipping repeats (that is weighted
 * sampling without replacement). Gives up (returns 0) when repeats dominate. */
static int draw_distinct_ranks(gen_ctx *c, int32_t *ranks, int64_t want, int64_t n, double skew, rg_rng *rng)
{
    int64_t got = 0, budget = 4 * want + 64;
    while (got < want && budget-- > 0) {
        int64_t k = draw_rank(rng, n, skew);
        if (!c->taken[k]) {
            c->taken[k] = 1;
            ranks[got++] = (int32_t)k;
        }
    }
    for (int64_t i = 0; i < got; i++) c->taken[ranks[i]] = 0;
    if (got < want) return 0;
    qsort(ranks, (size_t)want, sizeof *ranks, cmp_i32);
    return 1;
}

/* The same sampling over all n nodes at once (Efraimidis-Spirakis keys log(u)/w, keeping
 * the `want` largest), for when most of the type is taken. */
static void select_ranks_by_keys(gen_ctx *c, int32_t *ranks, int64_t want, int64_t n, double skew, rg_rng *rng)
{
    for (int64_t k = 0; k < n; k++)
        c->keys[k] = log(1.0 - rg_rng_uniform(rng)) * exp(skew * log((double)k + 1));
    memcpy(c->work, c->keys, (size_t)n * sizeof(double));
    double cut = select_kth(c->work, n, n - want);
    int64_t above = 0, got = 0;
    for (int64_t k = 0; k < n; k++) above += c->keys[k] > cut;
    int64_t ties = want - above;
    for (int64_t k = 0; k < n && got < want; k++)
        if (c->keys[k] > cut || (c->keys[k] == cut && ties-- > 0)) ranks[got++] = (int32_t)k;
    RG_ASSERT(got == want);
}

/* `want` distinct nodes of a type, popular ones more likely, listed most popular first. */
static void choose_nodes(gen_ctx *c, int32_t *out, int64_t want, int32_t ntype, double skew, rg_rng *rng)
{
    int64_t n = c->p->ntype_counts[ntype];
    const int32_t *popular = c->popular[ntype];
    RG_ASSERT(want >= 1 && want <= n);
    if (want == n) {
        memcpy(out, popular, (size_t)n * sizeof *out);
        return;
    }
    if (want > n / 4 || !draw_distinct_ranks(c, out, want, n, skew, rng))
        select_ranks_by_keys(c, out, want, n, skew, rng);
    for (int64_t i = 0; i < want; i++) out[i] = popular[out[i]];
}

static int32_t mirror_of(const synth_plan *p, int32_t r)
{
    for (int32_t m = 0; m < p->num_rels; m++)
        if (p->rels[m].mirror_of == r) return m;
    return -1;
}

/* Exactly uniq_src sources and uniq_dst destinations: each chosen node gets at least one edge
 * and the rest follow Zipf laws by popularity; destinations are shuffled against sources. */
static void gen_relation(gen_ctx *c, hg_builder *b, int32_t r)
{
    const synth_plan *p = c->p;
    const plan_rel *rel = &p->rels[r];
    if (rel->mirror_of >= 0) return;   /* written together with the relation it mirrors */
    rg_rng rng;
    seed_stream(&rng, p->seed, (uint64_t)r);
    choose_nodes(c, c->srcs, rel->uniq_src, rel->src, p->src_skew, &rng);
    choose_nodes(c, c->dsts, rel->uniq_dst, rel->dst, p->dst_skew, &rng);
    zipf_split(c->out_deg, rel->uniq_src, rel->edges, p->src_skew);
    zipf_split(c->in_deg, rel->uniq_dst, rel->edges, p->dst_skew);
    int64_t e = 0;
    for (int64_t k = 0; k < rel->uniq_dst; k++)
        for (int64_t d = 0; d < c->in_deg[k]; d++) c->slots[e++] = c->dsts[k];
    for (int64_t i = rel->edges - 1; i > 0; i--) {
        int64_t j = (int64_t)rg_rng_below(&rng, (uint64_t)i + 1);
        int32_t x = c->slots[i]; c->slots[i] = c->slots[j]; c->slots[j] = x;
    }
    int32_t m = mirror_of(p, r);
    e = 0;
    for (int64_t k = 0; k < rel->uniq_src; k++)
        for (int64_t d = 0; d < c->out_deg[k]; d++, e++) {
            hgb_add_edge(b, r, c->srcs[k], c->slots[e]);
            if (m >= 0) hgb_add_edge(b, m, c->slots[e], c->srcs[k]);
        }
}

static hg_builder *build_graph(const synth_plan *p)
{
    hg_builder *b = hgb_new(p->graph_name);
    int64_t edges = 0;
    for (int32_t t = 0; t < p->num_ntypes; t++) {
        RG_ASSERT(hgb_ntype(b, p->ntype_names[t]) == t);
        hgb_ntype_count_at_least(b, t, p->ntype_counts[t]);
    }
    for (int32_t r = 0; r < p->num_rels; r++) {
        RG_ASSERT(hgb_etype(b, p->rels[r].name, p->rels[r].src, p->rels[r].dst) == r);
        edges += p->rels[r].edges;
    }
    /* Room for the reverse edges too, so hgb_finish appends them without moving arrays. */
    hgb_reserve(b, p->add_reverse ? 2 * edges : edges);
    gen_ctx c;
    ctx_init(&c, p);
    for (int32_t r = 0; r < p->num_rels; r++) gen_relation(&c, b, r);
    ctx_free(&c);
    RG_ASSERT(hgb_num_edges(b) == edges);
    return b;
}

/* ---- Specs ---- */

enum { K_NODES, K_EDGES, K_NTYPES, K_ETYPES, K_RATIO, K_SEED, K_REVERSE, K_SKEW, K_COUNT };
static const char *const KEYS[K_COUNT] = {"nodes", "edges", "ntypes", "etypes", "ratio",
                                          "seed", "reverse", "skew"};

typedef struct spec_values {
    int seen[K_COUNT];
    int64_t count[4];          /* nodes, edges, ntypes, etypes */
    double ratio, skew;
    uint64_t seed;
    int reverse;
} spec_values;

/* A whole positive count, with an optional K/M/G suffix: "20000", "1.5M", "2e6". */
static int parse_count(const char *key, const char *val, int64_t *out, rg_err *err)
{
    char *end;
    errno = 0;
    double x = strtod(val, &end);
    if (end != val && *end && strchr("kKmMgG", *end) && !end[1]) {
        x *= *end == 'k' || *end == 'K' ? 1e3 : *end == 'm' || *end == 'M' ? 1e6 : 1e9;
        end++;
    }
    if (end == val || *end || errno || !isfinite(x) || x != floor(x) || x < 1)
        return rg_errf(err, "%s=%s is not a positive whole number (write e.g. %s=20000 or %s=1.5M)",
                       key, val, key, key);
    if (x >= INT32_MAX)
        return rg_errf(err, "%s=%s is too large: ids are 32-bit (at most %d)", key, val, INT32_MAX - 1);
    *out = (int64_t)x;
    return 0;
}

static int parse_real(const char *key, const char *val, double lo, double hi, double *out, rg_err *err)
{
    char *end;
    errno = 0;
    double x = strtod(val, &end);
    if (end == val || *end || errno || !isfinite(x))
        return rg_errf(err, "%s=%s is not a number", key, val);
    if (x < lo || x > hi) return rg_errf(err, "%s=%s is out of range [%g, %g]", key, val, lo, hi);
    *out = x;
    return 0;
}

static int parse_value(spec_values *v, int key, const char *val, rg_err *err)
{
    char *end;
    switch (key) {
    case K_RATIO:
        if (parse_real("ratio", val, 0, 1, &v->ratio, err)) return -1;
        return v->ratio > 0 ? 0 : rg_errf(err, "ratio=%s must be above 0", val);
    case K_SKEW:
        return parse_real("skew", val, 0, 4, &v->skew, err);
    case K_REVERSE:
        if (strcmp(val, "0") && strcmp(val, "1")) return rg_errf(err, "reverse=%s: use reverse=0 or reverse=1", val);
        v->reverse = val[0] == '1';
        return 0;
    case K_SEED:
        errno = 0;
        v->seed = strtoull(val, &end, 10);
        if (val[0] < '0' || val[0] > '9' || *end || errno)
            return rg_errf(err, "seed=%s is not a non-negative whole number", val);
        return 0;
    default:
        return parse_count(KEYS[key], val, &v->count[key], err);
    }
}

static int find_key(const char *key, size_t len)
{
    for (int k = 0; k < K_COUNT; k++)
        if (strlen(KEYS[k]) == len && !strncmp(KEYS[k], key, len)) return k;
    return -1;
}

/* Parses the comma-separated key=value list `s` (modified in place). */
static int parse_pairs(char *s, spec_values *v, rg_err *err)
{
    for (char *tok = s; tok; ) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = 0;
        char *eq = strchr(tok, '=');
        if (!*tok) return rg_errf(err, "empty item (two commas or a trailing comma)");
        if (!eq) return rg_errf(err, "'%s' is not key=value", tok);
        int k = find_key(tok, (size_t)(eq - tok));
        if (k < 0) {
            *eq = 0;
            return rg_errf(err, "unknown key '%s' (keys: nodes, edges, ntypes, etypes, ratio, seed, "
                           "reverse, skew)", tok);
        }
        if (v->seen[k]) return rg_errf(err, "%s= is given twice", KEYS[k]);
        if (parse_value(v, k, eq + 1, err)) return -1;
        v->seen[k] = 1;
        tok = comma ? comma + 1 : NULL;
    }
    return 0;
}

static const synth_profile *find_profile(const char *name)
{
    for (int i = 0; i < PROFILE_COUNT; i++)
        if (!strcmp(PROFILES[i].name, name)) return &PROFILES[i];
    return NULL;
}

static int unknown_profile(const char *name, rg_err *err)
{
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i < PROFILE_COUNT; i++) {
        int d = rg_edit_distance(name, PROFILES[i].name);
        if (d < best_d) { best_d = d; best = PROFILES[i].name; }
    }
    if (best) return rg_errf(err, "unknown profile '%s' (did you mean %s?); %s", name, best, SYNTH_USAGE);
    return rg_errf(err, "unknown profile '%s'; %s", name, SYNTH_USAGE);
}

/* The profile of a nodes=.. spec; its name (which seeds the shape) holds the shape's keys. */
static int custom_profile(const spec_values *v, synth_profile *prof, char *name, size_t name_size, rg_err *err)
{
    static const int required[] = {K_NODES, K_EDGES, K_NTYPES, K_ETYPES, K_RATIO};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!v->seen[required[i]])
            return rg_errf(err, "missing %s= (nodes, edges, ntypes, etypes and ratio are required)",
                           KEYS[required[i]]);
    int64_t nodes = v->count[K_NODES], edges = v->count[K_EDGES];
    int64_t ntypes = v->count[K_NTYPES], etypes = v->count[K_ETYPES];
    int reverse = v->seen[K_REVERSE] ? v->reverse : 1;
    if (ntypes > nodes) return rg_errf(err, "ntypes=%lld exceeds nodes=%lld", (long long)ntypes, (long long)nodes);
    if (ntypes > MAX_CUSTOM_NTYPES) return rg_errf(err, "ntypes=%lld: at most %d", (long long)ntypes, MAX_CUSTOM_NTYPES);
    if (etypes > MAX_CUSTOM_ETYPES) return rg_errf(err, "etypes=%lld: at most %d", (long long)etypes, MAX_CUSTOM_ETYPES);
    if (reverse && edges % 2)
        return rg_errf(err, "edges=%lld must be even: reverse types double every edge (or give reverse=0)",
                       (long long)edges);
    int64_t forward = reverse ? edges / 2 : edges;
    /* refused here, before the generator allocates per node; hgb_finish has the same bound */
    if (nodes > hg_plausible_nodes(forward))
        return rg_errf(err, "nodes=%lld for edges=%lld: more than max(2^24, %d x %lld edges) = %lld nodes would "
                       "be almost all isolated; give fewer nodes or more edges", (long long)nodes, (long long)edges,
                       HG_PLAUSIBLE_IDS_PER_EDGE, (long long)forward, (long long)hg_plausible_nodes(forward));
    if (forward < etypes)
        return rg_errf(err, "edges=%lld are too few for etypes=%lld relations (each needs an edge%s)",
                       (long long)edges, (long long)etypes, reverse ? " each way" : "");
    double skew = v->seen[K_SKEW] ? v->skew : 1.0;
    snprintf(name, name_size, "nodes=%lld,edges=%lld,ntypes=%lld,etypes=%lld", (long long)nodes,
             (long long)edges, (long long)ntypes, (long long)etypes);
    *prof = (synth_profile){.name = name, .add_reverse = reverse, .ratio = v->ratio,
                            .src_skew = skew / 2, .dst_skew = skew, .num_ntypes = (int32_t)ntypes,
                            .nodes = nodes, .num_rels = (int32_t)etypes, .edges = forward,
                            .fill_prefix = "r", .fill_src = -1, .fill_dst = -1};
    return 0;
}

/* Spec -> plan: "<profile>[,seed=N]" or "nodes=..,edges=..,...". */
static synth_plan *plan_from_spec(const char *spec, rg_err *err)
{
    if (!strncmp(spec, "synth:", 6)) spec += 6;
    if (!*spec) {
        rg_errf(err, "empty synth spec: %s", SYNTH_USAGE);
        return NULL;
    }
    char *copy = rg_xstrdup(spec), *pairs = copy, custom_name[160];
    spec_values v = {.seed = DEFAULT_SEED};
    synth_profile custom;
    const synth_profile *prof = NULL;
    synth_plan *p = NULL;
    char *comma = strchr(copy, ','), *eq = strchr(copy, '=');
    int named = !eq || (comma && comma < eq);   /* a profile name first */
    if (named) {
        if (comma) *comma = 0;
        pairs = comma ? comma + 1 : NULL;
        prof = find_profile(copy);
        if (!prof) unknown_profile(copy, err);
    }
    int ok = (!named || prof) && (!pairs || parse_pairs(pairs, &v, err) == 0);
    if (ok && prof) {
        for (int k = 0; k < K_COUNT; k++)
            if (v.seen[k] && k != K_SEED) {
                ok = 0;
                rg_errf(err, "%s= cannot follow a profile name (only seed= can): %s", KEYS[k], SYNTH_USAGE);
            }
    } else if (ok) {
        ok = custom_profile(&v, &custom, custom_name, sizeof custom_name, err) == 0;
        prof = &custom;
    }
    if (ok) {
        char *name = rg_xasprintf("synth:%s", spec);
        p = plan_new(prof, v.seed, name, err);
        free(name);
    }
    if (!p) rg_err_prefix(err, "synth spec '%s'", spec);
    free(copy);
    return p;
}

hg_builder *synth_build(const char *spec, int *add_reverse, rg_err *err)
{
    synth_plan *p = plan_from_spec(spec, err);
    if (!p) return NULL;
    hg_builder *b = build_graph(p);
    *add_reverse = p->add_reverse;
    plan_free(p);
    return b;
}

hg_graph *synth_generate(const char *spec, rg_err *err)
{
    int add_reverse = 0;
    hg_builder *b = synth_build(spec, &add_reverse, err);
    return b ? hgb_finish(b, add_reverse, err) : NULL;
}
