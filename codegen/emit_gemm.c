/* The GEMM template emitter: specializes Y[S] (+)= s * X[G] x W[T] (and its outer-product
 * form dW[T] += X[G]^T dY[S]) for one lowered instance and one schedule, as CUDA C. */
#include "codegen/emit_gemm.h"
#include "codegen/vartype.h"

#include <string.h>

/* What the emitted kernel needs to know, resolved once from the IR. */
typedef struct gemm_shape {
    const ir_var *x, *w, *y, *s;
    int heads;          /* grid.z: independent per-head products */
    int K, N;           /* one head's inner and output widths */
    int ldx, ldy;       /* row widths of X and Y (all heads) */
    int x_head_stride;  /* 0 when X is broadcast over heads */
    int y_head_stride;
    int w_slice;        /* floats per type slice of W */
    int w_head_stride;
    int y_sums_heads;   /* per-head products summed into a one-head output */
} gemm_shape;

/* Graph arrays the kernel reads, in parameter order. */
typedef struct used_arrays {
    int used[KG__COUNT];
} used_arrays;

static const char *use(used_arrays *u, kp_graph_array a)
{
    u->used[a] = 1;
    return kp_graph_array_name(a);
}

static int resolve_shape(const ir_program *ir, const lw_gemm *gm, gemm_shape *sh, rg_err *err)
{
    memset(sh, 0, sizeof *sh);
    sh->x = &ir->vars[gm->x_var];
    sh->w = &ir->vars[gm->w_var];
    sh->y = &ir->vars[gm->y_var];
    sh->s = gm->scalar_var >= 0 ? &ir->vars[gm->scalar_var] : NULL;
    const ir_var *w = sh->w;
    int wheads = w->heads;
    sh->ldx = (int)ir_var_row_width(sh->x);
    sh->ldy = (int)ir_var_row_width(sh->y);
    if (gm->outer_product) {
        /* dW[t][h] (K x N) += x[row]^T dy[row]; a vector weight is the N = 1 case. */
        sh->K = w->rows_dim ? w->rows_dim : w->dim;
        sh->N = w->rows_dim ? w->dim : 1;
    } else {
        sh->K = gm->transpose_w ? w->dim : w->rows_dim;
        sh->N = gm->transpose_w ? w->rows_dim : w->dim;
        if (w->rows_dim == 0) return rg_errf(err, "GEMM %s: weight %s is a vector", ir->name, w->name);
    }
    sh->heads = wheads;
    sh->w_head_stride = sh->K * sh->N;
    sh->w_slice = wheads * sh->K * sh->N;
    sh->x_head_stride = (wheads > 1 && sh->x->heads > 1) ? sh->K : 0;
    /* A one-head output of a per-head product receives the sum over heads (the adjoint of
     * broadcasting an input over heads): every head's block adds into the same row. */
    sh->y_sums_heads = wheads > 1 && !gm->outer_product && sh->y->heads <= 1;
    sh->y_head_stride = wheads > 1 && !sh->y_sums_heads ? sh->N : 0;
    if (sh->x_head_stride == 0 && sh->ldx != sh->K)
        return rg_errf(err, "GEMM over %s: X row width %d does not match K=%d", w->name, sh->ldx, sh->K);
    if (gm->outer_product && w->rows_dim == 0 && sh->y->dim != 1)
        return rg_errf(err, "gradient of vector weight %s from a %d-wide dY is not an outer product", w->name,
                       sh->y->dim);
    if (gm->outer_product) {
        if (sh->ldy != sh->N * (wheads > 1 ? wheads : 1) && !(sh->N == 1 && sh->ldy == wheads))
            return rg_errf(err, "outer product into %s: dY row width %d does not match N=%d", w->name, sh->ldy, sh->N);
    } else if (sh->ldy != sh->N * (sh->y_sums_heads ? 1 : wheads)) {
        return rg_errf(err, "GEMM over %s: Y row width %d does not match %d heads x N=%d", w->name, sh->ldy, wheads, sh->N);
    }
    return 0;
}

/* CUDA expression of a row index list applied to `row` (whose segment type is `t`). */
static int index_expr(lw_index idx, lw_rows rows, const cg_config *cfg, used_arrays *u, char *out, size_t n,
                      rg_err *err)
{
    switch (idx) {
    case LW_IDX_ROW: snprintf(out, n, "row"); return 0;
    case LW_IDX_SRC:
        if (rows == LW_ROWS_EDGES) snprintf(out, n, "__ldg(%s + row)", use(u, KG_SRC));
        else if (rows == LW_ROWS_UNIQUE) snprintf(out, n, "__ldg(%s + row)", use(u, KG_UNIQUE_SRC));
        else return rg_errf(err, "a src gather needs edge or compact rows");
        return 0;
    case LW_IDX_DST:
        if (rows != LW_ROWS_EDGES) return rg_errf(err, "a dst gather needs edge rows");
        snprintf(out, n, "__ldg(%s + row)", use(u, KG_DST));
        return 0;
    case LW_IDX_COMPACT:
        if (rows != LW_ROWS_EDGES) return rg_errf(err, "a compact lookup needs edge rows");
        if (cfg->compact == CFG_COMPACT_BSEARCH) {
            use(u, KG_UNIQUE_SRC);
            use(u, KG_UNIQUE_ETYPE_PTR);
            snprintf(out, n, "compact_find(unique_src, unique_etype_ptr, t, __ldg(%s + row))", use(u, KG_SRC));
        } else {
            snprintf(out, n, "__ldg(%s + row)", use(u, KG_EDGE_COMPACT));
        }
        return 0;
    }
    return rg_errf(err, "unknown index kind %d", (int)idx);
}

static int weight_slice_expr(ir_access acc, lw_rows rows, used_arrays *u, char *out, size_t n, rg_err *err)
{
    int edge_rows = rows == LW_ROWS_EDGES || rows == LW_ROWS_UNIQUE;
    switch (acc) {
    case IR_ACC_ETYPE:
        if (!edge_rows) return rg_errf(err, "W[etype] in a node GEMM");
        snprintf(out, n, "t");
        return 0;
    case IR_ACC_SRC_NTYPE:
        if (!edge_rows) return rg_errf(err, "W[src ntype] in a node GEMM");
        snprintf(out, n, "__ldg(%s + t)", use(u, KG_ETYPE_SRC_NTYPE));
        return 0;
    case IR_ACC_DST_NTYPE:
        if (!edge_rows) return rg_errf(err, "W[dst ntype] in a node GEMM");
        snprintf(out, n, "__ldg(%s + t)", use(u, KG_ETYPE_DST_NTYPE));
        return 0;
    case IR_ACC_NTYPE:
        if (rows != LW_ROWS_NODES) return rg_errf(err, "W[ntype] outside a node GEMM");
        snprintf(out, n, "t");
        return 0;
    case IR_ACC_ALL: snprintf(out, n, "0"); return 0;
    default: return rg_errf(err, "weight access %d cannot slice a GEMM weight", (int)acc);
    }
}

static kp_rowset rowset_of(const lw_gemm *gm)
{
    switch (gm->rows) {
    case LW_ROWS_EDGES: return KR_EDGES;
    case LW_ROWS_UNIQUE: return KR_UNIQUE;
    case LW_ROWS_NODES: return gm->w_acc == IR_ACC_NTYPE ? KR_NODES_BY_NTYPE : KR_NODES_ALL;
    default: RG_DIE("rows kind %d has no row set", (int)gm->rows);
    }
}

/* Segment end of tile type t, as an expression over kernel parameters. */
static const char *segment_end_expr(kp_rowset rs, used_arrays *u, char *buf, size_t n)
{
    switch (rs) {
    case KR_EDGES: snprintf(buf, n, "__ldg(%s + t + 1)", use(u, KG_ETYPE_PTR)); break;
    case KR_UNIQUE: snprintf(buf, n, "__ldg(%s + t + 1)", use(u, KG_UNIQUE_ETYPE_PTR)); break;
    case KR_NODES_BY_NTYPE: snprintf(buf, n, "__ldg(%s + t + 1)", use(u, KG_NTYPE_PTR)); break;
    case KR_NODES_ALL: snprintf(buf, n, "num_nodes"); break;
    default: RG_DIE("bad rowset");
    }
    return buf;
}

/* The parameters after X, W and Y (without the closing parenthesis): the per-row scalar, the
 * tile table of `tile_rows` rows, the graph arrays used, and the node count. Both forms share it;
 * `outer`: the outer-product form, which writes W (dW) instead of Y. */
static void emit_param_tail(rg_str *src, kp_kernel *k, const used_arrays *u, const gemm_shape *sh, const lw_gemm *gm,
                            kp_rowset rs, int tile_rows, int outer)
{
    kp_add_param(k, KP_VAR, gm->x_var, 0, "X");
    kp_add_param(k, KP_VAR, gm->w_var, 0, "W")->written = outer;
    kp_add_param(k, KP_VAR, gm->y_var, 0, "Y")->written = !outer;
    if (sh->s) {
        rg_str_printf(src, "    const %s* __restrict__ S,\n", vt_ctype(sh->s));
        kp_add_param(k, KP_VAR, gm->scalar_var, 0, "S");
    }
    rg_str_printf(src, "    const int* __restrict__ tile_type, const int* __restrict__ tile_row0");
    kp_add_param(k, KP_TILE_TYPE, rs, tile_rows, "tile_type");
    kp_add_param(k, KP_TILE_ROW0, rs, tile_rows, "tile_row0");
    for (int a = 0; a < KG__COUNT; a++) {
        if (!u->used[a]) continue;
        const char *name = kp_graph_array_name((kp_graph_array)a);
        rg_str_printf(src, ",\n    const int* __restrict__ %s", name);
        kp_add_param(k, KP_GRAPH, a, 0, name);
    }
    if (rs == KR_NODES_ALL) {
        rg_str_printf(src, ",\n    int num_nodes");
        kp_add_param(k, KP_INT, KS_NODES, 0, "num_nodes");
    }
}

/* with_ntiles: a last parameter, the tile count (a block that walks several tiles stops at it) */
static void emit_params(rg_str *src, kp_kernel *k, const used_arrays *u, const gemm_shape *sh, const lw_gemm *gm,
                        kp_rowset rs, int with_ntiles)
{
    rg_str_printf(src, "    const %s* __restrict__ X, const float* __restrict__ W, %s* __restrict__ Y,\n", vt_ctype(sh->x),
                  vt_ctype(sh->y));
    emit_param_tail(src, k, u, sh, gm, rs, k->tile_rows, 0);
    if (with_ntiles) {
        rg_str_puts(src, ",\n    int num_tiles");
        kp_add_param(k, KP_INT, KS_NTILES, 0, "num_tiles");
    }
    rg_str_printf(src, ")\n");
}

/* Per-row scalar of Y column `colexpr` (per head when the scalar has several heads). */
static void scalar_expr(const gemm_shape *sh, const char *sidx, const char *colexpr, char *out, size_t n)
{
    int hs = sh->s->heads;
    if (hs <= 1) snprintf(out, n, "__ldg(S + (size_t)(%s))", sidx);
    else if (sh->heads > 1) snprintf(out, n, "__ldg(S + (size_t)(%s) * %d + h)", sidx, hs);
    else snprintf(out, n, "__ldg(S + (size_t)(%s) * %d + (%s) / %d)", sidx, hs, colexpr, sh->y->dim);
}

static void launch_bounds(rg_str *src, const cg_config *cfg, int threads)
{
    if (cfg->launch_bounds)
        rg_str_printf(src, "__launch_bounds__(%d, %d) ", threads, threads >= 512 ? 2 : 4);
}

/* The float value of element `at` (an index expression) of operand `name` of variable v: an
 * __ldg, converted from bfloat16 under store=bf16 (vt_load). */
static const char *ldg(const ir_var *v, const char *name, const char *at, char *out, size_t n)
{
    char elem[200];
    snprintf(elem, sizeof elem, "__ldg(%s + %s)", name, at);
    return vt_load(v, elem, out, n);
}

/* Four consecutive elements at `at` of operand `name` (16-byte aligned for float32, 8 for
 * bfloat16) as a float4. */
static const char *ldg4(const ir_var *v, const char *name, const char *at, char *out, size_t n)
{
    if (vt_is_bf16(v)) snprintf(out, n, "ldg_bf16x4(%s + %s)", name, at);
    else snprintf(out, n, "__ldg((const float4*)(%s + %s))", name, at);
    return out;
}

/* Whether Y is written with plain stores (no atomic, no +=): so are all bfloat16 outputs, which
 * are never accumulated (vt_bf16_exclusion). */
static int y_plain(const gemm_shape *sh, const lw_gemm *gm)
{
    int plain = !(gm->y_atomic || sh->y_sums_heads || gm->accumulate);
    RG_ASSERT(plain || !vt_is_bf16(sh->y));
    return plain;
}

/* The statement writing the float `v` into Y's element `*y`: an atomic add, an add or a plain
 * store. A bfloat16 Y rounds the float once with a float conversion: the same value as
 * vt_store's rounding from double (v is a float, exact in double), without the float64
 * conversions, whose throughput on sm_90 is a fraction of the float32 ones'. */
static void emit_y_store(rg_str *src, const char *indent, const gemm_shape *sh, const lw_gemm *gm)
{
    if (!y_plain(sh, gm)) {
        if (gm->y_atomic || sh->y_sums_heads) rg_str_printf(src, "%satomicAdd(y, v);\n", indent);
        else rg_str_printf(src, "%s*y += v;\n", indent);
    } else if (vt_is_bf16(sh->y)) {
        rg_str_printf(src, "%s*y = __float2bfloat16_rn(v);\n", indent);
    } else {
        rg_str_printf(src, "%s*y = v;\n", indent);
    }
}

/* What both GEMM forms resolve before emitting: the shapes, the index expressions of X, Y
 * and the per-row scalar, the weight slice, the row set and its segment ends. */
typedef struct gemm_exprs {
    gemm_shape sh;
    used_arrays u;
    char xrow[160], yrow[160], sidx[160], wsl[96], segend[96];
    kp_rowset rs;
} gemm_exprs;

static int prepare_exprs(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg, gemm_exprs *x, rg_err *err)
{
    memset(x, 0, sizeof *x);
    if (resolve_shape(ir, gm, &x->sh, err)) return -1;
    if (index_expr(gm->x_idx, gm->rows, cfg, &x->u, x->xrow, sizeof x->xrow, err) ||
        index_expr(gm->y_idx, gm->rows, cfg, &x->u, x->yrow, sizeof x->yrow, err) ||
        (x->sh.s && index_expr(gm->scalar_idx, gm->rows, cfg, &x->u, x->sidx, sizeof x->sidx, err)) ||
        weight_slice_expr(gm->w_acc, gm->rows, &x->u, x->wsl, sizeof x->wsl, err))
        return -1;
    x->rs = rowset_of(gm);
    segment_end_expr(x->rs, &x->u, x->segend, sizeof x->segend);
    return 0;
}

/* The opening of a product kernel whose block owns one row tile (blockIdx.x) of one type segment and
 * TILE columns: the tile's type, rows and segment end, the thread indices (`threads`, a declaration),
 * the W slice of the type and head, and the declaration of the tile's X row offsets (the caller fills them). */
static void emit_tile_block_open(rg_str *src, const gemm_exprs *ex, const char *threads)
{
    const gemm_shape *sh = &ex->sh;
    rg_str_printf(src,
        "{\n"
        "    const int t = tile_type[blockIdx.x];\n"
        "    const int row0 = tile_row0[blockIdx.x];\n"
        "    const int seg_end = %s;\n"
        "    const int h = blockIdx.z;\n"
        "    %s\n"
        "    const int col0 = blockIdx.y * TILE;\n"
        "    const float* __restrict__ Wt = W + (size_t)(%s) * %d + (size_t)h * %d;\n"
        "    __shared__ long xbase[TILE];\n",
        ex->segend, threads, ex->wsl, sh->w_slice, sh->w_head_stride);
}

static void emit_shared_read(rg_str *src, const char *indent, const char *dst, const char *row, const char *idx,
                             int n);

/* Whether rows of operand v (width elements read, row pitch ld, head offset head_stride) can be
 * read n elements at a time, each access aligned to n elements (buffers are cudaMalloc'd). */
static int rows_aligned(const ir_var *v, int width, int ld, int head_stride, int n)
{
    return !vt_is_f64(v) && width % n == 0 && ld % n == 0 && head_stride % n == 0;
}

/* ... four at a time: float4 alignment for float32; a bfloat16 operand reads them in 8 bytes. */
static int rows_vectorize(const ir_var *v, int width, int ld, int head_stride)
{
    return rows_aligned(v, width, ld, head_stride, 4);
}

/* Whether the product can use 16-byte loads: X rows, their head offsets and the W slice
 * keep float4 alignment along the direction each tile is read in. */
static int product_vectorizes(const gemm_shape *sh, const lw_gemm *gm, const cg_config *cfg)
{
    if (cfg->w_regs || !rows_vectorize(sh->x, sh->K, sh->ldx, sh->x_head_stride)) return 0;
    if (sh->w_slice % 4 || sh->w_head_stride % 4) return 0;
    return gm->transpose_w ? 1 : sh->N % 4 == 0;
}

/* The K step of the float32 forms: the inner extent of their shared tiles (TILE x KT of X and
 * KT x TILE of W in the products; KT rows of X and dY per step in the outer products). The tile
 * itself up to 64, so tiles 16/32/64 keep the text their stored times were measured with; 32 at
 * tile 128, whose two tiles then take 35 KB of the 48 KB of static shared memory (two 128 x 132
 * float tiles took 135 KB). A multiple of 4: float4 staging and 16-byte aligned padded rows. */
static int gemm_k_step(int T) { return T <= 64 ? T : 32; }

/* "#define TILE" and, where the K step differs from the tile, "#define KT"; returns the name the
 * kernel text gives the K step ("TILE" where they agree: the text stays as it was). */
static const char *emit_tile_defines(rg_str *src, int T)
{
    int kt = gemm_k_step(T);
    RG_ASSERT(kt % 4 == 0 && T % kt == 0);
    rg_str_printf(src, "#define TILE %d\n", T);
    if (kt == T) return "TILE";
    rg_str_printf(src, "#define KT %d\n", kt);
    return "KT";
}

/* Main loop of the vectorized product: X and W tiles loaded with float4, rows padded by 4
 * floats (aligned, and rows start on other banks). A thread owns C consecutive rows, so
 * four k steps cost C float4 reads of X and four CW-wide reads of W for 4 C CW FMAs. */
static void emit_product_vec_loop(rg_str *src, const gemm_shape *sh, const lw_gemm *gm, int C, int CW, const char *kn)
{
    char x4[128];
    /* X is TILE rows x KT, W KT rows x TILE: as many float4s each, so one loop stages both */
    rg_str_printf(src,
        "    __shared__ __align__(16) float Xs[TILE][%s + 4];\n"
        "    __shared__ __align__(16) float Ws[%s][TILE + 4];\n"
        "    for (int k0 = 0; k0 < K; k0 += %s) {\n"
        "        for (int idx = tid; idx < TILE * %s / 4; idx += NT) {\n"
        "            const int r = idx / (%s / 4), kk = (idx %% (%s / 4)) * 4;\n"
        "            *(float4*)&Xs[r][kk] = (xbase[r] >= 0 && k0 + kk < K) ? %s\n"
        "                                                              : make_float4(0.f, 0.f, 0.f, 0.f);\n",
        kn, kn, kn, kn, kn, kn, ldg4(sh->x, "X", "xbase[r] + k0 + kk", x4, sizeof x4));
    if (gm->transpose_w)
        /* W^T: a column of the tile is contiguous in memory, scattered into shared rows */
        rg_str_printf(src,
            "            { const int c = idx / (%s / 4), r = (idx %% (%s / 4)) * 4;\n"
            "              const float4 v = (col0 + c < N && k0 + r < K) ? __ldg((const float4*)(Wt + (size_t)(col0 + c) * K + k0 + r))\n"
            "                                                          : make_float4(0.f, 0.f, 0.f, 0.f);\n"
            "              Ws[r][c] = v.x; Ws[r + 1][c] = v.y; Ws[r + 2][c] = v.z; Ws[r + 3][c] = v.w; }\n",
            kn, kn);
    else
        rg_str_puts(src,
            "            { const int r = idx / (TILE / 4), c = (idx % (TILE / 4)) * 4;\n"
            "              *(float4*)&Ws[r][c] = (k0 + r < K && col0 + c < N) ? __ldg((const float4*)(Wt + (size_t)(k0 + r) * N + col0 + c))\n"
            "                                                             : make_float4(0.f, 0.f, 0.f, 0.f); }\n");
    rg_str_printf(src,
        "        }\n"
        "        __syncthreads();\n"
        "        #pragma unroll 2\n"
        "        for (int j = 0; j < %s; j += 4) {\n"
        "            float4 xq[%d];\n"
        "            #pragma unroll\n"
        "            for (int i = 0; i < %d; i++) xq[i] = *(const float4*)&Xs[ty * %d + i][j];\n",
        kn, C, C, C);
    static const char comp[4] = {'x', 'y', 'z', 'w'};
    for (int jj = 0; jj < 4; jj++) {
        char row[32];
        snprintf(row, sizeof row, "Ws[j + %d]", jj);
        rg_str_puts(src, "            {\n                float w[CW];\n");
        emit_shared_read(src, "                ", "w", row, "tx", CW);
        rg_str_printf(src,
            "                #pragma unroll\n"
            "                for (int i = 0; i < %d; i++)\n"
            "                    #pragma unroll\n"
            "                    for (int q = 0; q < CW; q++) acc[i][q] = fmaf(xq[i].%c, w[q], acc[i][q]);\n"
            "            }\n",
            C, comp[jj]);
    }
    rg_str_puts(src, "        }\n        __syncthreads();\n    }\n");
}

/* Parameters of the outer-product form (without the closing parenthesis): X = x, Y = dy,
 * W = dW (written), tile tables of `chunk` rows. */
static void emit_outer_params(rg_str *src, kp_kernel *k, const used_arrays *u, const gemm_shape *sh, const lw_gemm *gm,
                              kp_rowset rs, int chunk)
{
    rg_str_printf(src, "    const %s* __restrict__ X, float* __restrict__ W, const %s* __restrict__ Y,\n", vt_ctype(sh->x),
                  vt_ctype(sh->y));
    emit_param_tail(src, k, u, sh, gm, rs, chunk, 1);
}

/* ---- Tensor cores (cfg->mma): nvcuda::wmma fragments of 16 x 16 outputs, float32 accumulation ---- */

/* What the generated text names for one precision. Operands are rounded once, as they are
 * staged into shared memory, so each fragment load feeds the tensor cores directly. */
typedef struct mma_form {
    const char *name;      /* the config value */
    const char *includes;  /* toolkit headers (NVRTC finds them through runtime/rt.c's include path) */
    const char *etype;     /* element type of the staged operands */
    const char *ftype;     /* fragment element type of the operands */
    const char *round;     /* float -> etype, rounding to nearest */
    int fk;                /* the fragment's inner extent: m16n16k8 (tf32), m16n16k16 (bf16) */
    int esize, pad;        /* bytes per staged element; row padding in elements (16 bytes) */
} mma_form;

static const mma_form MMA_FORMS[] = {
    [CFG_MMA_TF32] = {"tf32", "#include <mma.h>\n", "float", "nvcuda::wmma::precision::tf32", "nvcuda::wmma::__float_to_tf32",
                      8, 4, 4},
    [CFG_MMA_BF16] = {"bf16", "#include <mma.h>\n#include <cuda_bf16.h>\n", "__nv_bfloat16", "__nv_bfloat16",
                      "__float2bfloat16", 16, 2, 8},
};

/* The float32 path's note on why this instance does not use tensor cores: "" when mma is off
 * (the text stays as it was), NULL when the instance runs on them. The note is the same for
 * every precision, so both share the fallback kernel's source and its cubin. */
static const char *mma_fallback(const gemm_shape *sh, const cg_config *cfg, char *buf, size_t n)
{
    if (cfg->mma == CFG_MMA_OFF) return "";
    if (vt_is_f64(sh->x) || vt_is_f64(sh->y))
        snprintf(buf, n, "; float32 path under mma: float64 operands");
    else if (sh->K < 16 || sh->N < 16)
        snprintf(buf, n, "; float32 path under mma: K=%d x N=%d is narrower than a 16 x 16 fragment", sh->K, sh->N);
    else
        return NULL;
    return buf;
}

/* Warps of a T x T output tile of (T/16)^2 fragments: the coarsening gives each warp up to C
 * of them (as it gives each thread C rows on the float32 path). */
static void mma_warps(const cg_config *cfg, int *nw, int *fpw)
{
    RG_ASSERT(cfg->tile >= 16 && cfg->tile <= 64);   /* cfg_rule_tile */
    int frags = (cfg->tile / 16) * (cfg->tile / 16);
    *fpw = cfg->coarsen < frags ? cfg->coarsen : frags;
    *nw = frags / *fpw;
}

/* Shared memory of the kernel: two staged operand tiles (rows x cols, padded), which the
 * float32 results (T x T + 4) reuse once the products are done. */
static void emit_mma_smem(rg_str *src, const mma_form *f, const char *a, int arows, int acols, const char *b, int brows,
                          int bcols, int T, int keep_b)
{
    int abytes = arows * (acols + f->pad) * f->esize, bbytes = brows * (bcols + f->pad) * f->esize;
    int cbytes = T * (T + 4) * 4, bytes = abytes + bbytes > cbytes ? abytes + bbytes : cbytes;
    /* keep_b: the second tile outlives the results (a block's next row tile reuses it), so it comes
     * first and the results overlay the first tile only (both offsets stay multiples of 32) */
    char aat[32] = "smem", bat[32], cat[32] = "smem";
    snprintf(bat, sizeof bat, "smem + %d", abytes);
    if (keep_b) {
        bytes = bbytes + (abytes > cbytes ? abytes : cbytes);
        snprintf(aat, sizeof aat, "smem + %d", bbytes);
        snprintf(bat, sizeof bat, "smem");
        snprintf(cat, sizeof cat, "smem + %d", bbytes);
    }
    rg_str_printf(src,
        "    /* 256-bit aligned fragment rows: row pitches are multiples of 16 bytes, offsets of 32 */\n"
        "    __shared__ __align__(32) unsigned char smem[%d];\n"
        "    %s (*%s)[%d] = reinterpret_cast<%s (*)[%d]>(%s);\n"
        "    %s (*%s)[%d] = reinterpret_cast<%s (*)[%d]>(%s);\n"
        "    float (*Cs)[TILE + 4] = reinterpret_cast<float (*)[TILE + 4]>(%s);\n",
        bytes, f->etype, a, acols + f->pad, f->etype, acols + f->pad, aat, f->etype, b, bcols + f->pad, f->etype,
        bcols + f->pad, bat, cat);
}

static void emit_mma_acc_init(rg_str *src, const mma_form *f)
{
    rg_str_printf(src,
        "    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, %d, float> acc[FPW];\n"
        "    #pragma unroll\n"
        "    for (int i = 0; i < FPW; i++) nvcuda::wmma::fill_fragment(acc[i], 0.f);\n", f->fk);
}

/* One step of KSTEP (a multiple of the fragment's k) over the staged tiles: each warp's
 * fragments f = warp * FPW + i, at (f / (TILE / 16), f % (TILE / 16)) in 16 x 16 blocks. */
static void emit_mma_step(rg_str *src, const mma_form *f, const char *alayout, const char *aptr, int alda,
                          const char *bptr, int ldb, const char *kstep)
{
    rg_str_printf(src,
        "        #pragma unroll\n"
        "        for (int kk = 0; kk < %s; kk += %d) {\n"
        "            #pragma unroll\n"
        "            for (int i = 0; i < FPW; i++) {\n"
        "                const int f = warp * FPW + i, fr = f / (TILE / 16), fc = f %% (TILE / 16);\n"
        "                nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, %d, %s, nvcuda::wmma::%s> a;\n"
        "                nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, %d, %s, nvcuda::wmma::row_major> b;\n"
        "                nvcuda::wmma::load_matrix_sync(a, %s, %d);\n"
        "                nvcuda::wmma::load_matrix_sync(b, %s, %d);\n"
        "                nvcuda::wmma::mma_sync(acc[i], a, b, acc[i]);\n"
        "            }\n"
        "        }\n",
        kstep, f->fk, f->fk, f->ftype, alayout, f->fk, f->ftype, aptr, alda, bptr, ldb);
}

/* The accumulators into Cs (the staging is free: the loop ended on a barrier). */
static void emit_mma_store(rg_str *src)
{
    rg_str_puts(src,
        "    #pragma unroll\n"
        "    for (int i = 0; i < FPW; i++) {\n"
        "        const int f = warp * FPW + i, fr = f / (TILE / 16), fc = f % (TILE / 16);\n"
        "        nvcuda::wmma::store_matrix_sync(&Cs[fr * 16][fc * 16], acc[i], TILE + 4, nvcuda::wmma::mem_row_major);\n"
        "    }\n"
        "    __syncthreads();\n");
}

/* The staged fragment element of X at `at` when `cond` holds (else 0), scaled by `scale` (text
 * such as "sv[rr] * ", or ""): rounded from float to the fragment's type, or under mma=bf16 a
 * bfloat16 X (store=bf16) copied as it is when there is no scale to apply. */
static void mma_stage_x(const ir_var *x, const mma_form *f, const char *cond, const char *scale, const char *at,
                        char *out, size_t n)
{
    char v[200];
    if (vt_is_bf16(x) && !strcmp(f->etype, "__nv_bfloat16") && !*scale) {
        snprintf(out, n, "%s ? __ldg(X + %s) : __float2bfloat16(0.f)", cond, at);
        return;
    }
    snprintf(out, n, "%s(%s ? %s%s : 0.f)", f->round, cond, scale, ldg(x, "X", at, v, sizeof v));
}

/* The text storing float4 `v` as four staged elements at `dst` (a shared element whose offset
 * keeps 4-element alignment): rounded to the fragment's type, bfloat16 pairs or one float4. */
static void mma_store4(const mma_form *f, const char *dst, const char *v, char *out, size_t n)
{
    if (!strcmp(f->etype, "__nv_bfloat16"))
        snprintf(out, n,
                 "{ __nv_bfloat162* p_ = (__nv_bfloat162*)&%s; p_[0] = __floats2bfloat162_rn(%s.x, %s.y); "
                 "p_[1] = __floats2bfloat162_rn(%s.z, %s.w); }",
                 dst, v, v, v, v);
    else
        snprintf(out, n, "*(float4*)&%s = make_float4(%s(%s.x), %s(%s.y), %s(%s.z), %s(%s.w));", dst, f->round, v,
                 f->round, v, f->round, v, f->round, v);
}

/* The batched staging loop both tensor-core forms share: NV float4s of the second operand per
 * step (and as many accesses of the first, or fewer when they are wider), VIT per thread, loaded
 * SB at a time into registers a[] (of type atype) and b[] (all loads of a batch in flight
 * together), then stored. Opens the loop and its load phase, with idx in scope. */
static void emit_batch_open(rg_str *src, const char *nv, const char *atype, const char *a, const char *b)
{
    rg_str_printf(src,
        "#define NV (%s)\n#define VIT ((NV + NT - 1) / NT)\n#define SB (VIT < 4 ? VIT : 4)\n"
        "        #pragma unroll\n"
        "        for (int b = 0; b < VIT; b += SB) {\n"
        "            %s %s[SB]%s %s[SB];\n"
        "            #pragma unroll\n"
        "            for (int j = 0; j < SB; j++) {\n"
        "                const int idx = tid + (b + j) * NT;\n",
        nv, atype, a, strcmp(atype, "float4") ? "; float4" : ",", b);
}

/* Ends the load phase and opens the store phase of the batch (idx in scope, past the end skipped). */
static void emit_batch_stores(rg_str *src)
{
    rg_str_puts(src,
        "            }\n"
        "            #pragma unroll\n"
        "            for (int j = 0; j < SB; j++) {\n"
        "                const int idx = tid + (b + j) * NT;\n"
        "                if (b + j >= VIT || idx >= NV) continue;\n");
}

static void emit_batch_close(rg_str *src)
{
    rg_str_puts(src, "            }\n        }\n");
}

/* How the vectorized tensor-core staging reads X. A bfloat16 X staged for bfloat16 fragments
 * (store=bf16 with mma=bf16) and not scaled moves its bits: 16-byte loads of 8 elements where
 * its rows keep that alignment, 8-byte loads of 4 otherwise, with no float round trip (it was
 * read as floats and rounded back, 4 elements per load: the staging of store=bf16 moved half the
 * bytes of float32's per instruction). Any other X is read as float4s (ldg4), scaled where the
 * caller scales, and rounded by mma_store4. */
typedef struct mma_xload {
    int width;                 /* elements per access */
    const char *type, *zero;   /* the registers of one access and their zero */
    int bits;                  /* 1: bfloat16 bits in a uint2 or uint4 */
} mma_xload;

static mma_xload mma_x_access(const gemm_shape *sh, const mma_form *f, int scaled)
{
    if (vt_is_bf16(sh->x) && !strcmp(f->etype, "__nv_bfloat16") && !scaled) {
        if (rows_aligned(sh->x, sh->K, sh->ldx, sh->x_head_stride, 8))
            return (mma_xload){8, "uint4", "make_uint4(0u, 0u, 0u, 0u)", 1};
        return (mma_xload){4, "uint2", "make_uint2(0u, 0u)", 1};
    }
    return (mma_xload){4, "float4", "make_float4(0.f, 0.f, 0.f, 0.f)", 0};
}

/* One access of X at `at`. */
static const char *mma_x_load(const mma_xload *a, const ir_var *x, const char *at, char *out, size_t n)
{
    if (a->bits) snprintf(out, n, "__ldg((const %s*)(X + %s))", a->type, at);
    else ldg4(x, "X", at, out, n);
    return out;
}

/* The guard of the accesses of X in a batch of NV (the other operand's float4s): NV itself
 * when X has as many, else its own count of `elems` elements (text) in `a->width` steps. */
static const char *mma_x_count(const mma_xload *a, const char *elems, char *out, size_t n)
{
    if (a->width == 4) snprintf(out, n, "NV");
    else snprintf(out, n, "%s / %d", elems, a->width);
    return out;
}

/* The statement storing bfloat16 bits `v` of X as they are into the staged tile at `dst`. */
static void mma_x_store_bits(const mma_xload *a, const char *dst, const char *v, char *out, size_t n)
{
    RG_ASSERT(a->bits);
    snprintf(out, n, "*(%s*)&%s = %s;", a->type, dst, v);
}

/* Staging of one K step of the product on tensor cores with 16-byte loads (product_vectorizes):
 * each thread loads SB float4s of X and of W into registers, then rounds and stores them, so SB
 * loads of each operand are in flight at once instead of one scalar load at a time (the scalar
 * staging held the tensor-core kernels under the float32 ones, docs/perf-notes.md session 8). */
static void emit_mma_stage_vec(rg_str *src, const gemm_shape *sh, const lw_gemm *gm, const mma_form *f, int wkeep)
{
    /* wkeep: W is loaded and stored only where the block's staged slice is stale (stage_w) */
    const char *wload_if = wkeep ? "stage_w && " : "", *wstore_if = wkeep ? "if (stage_w) " : "";
    const mma_xload xa = mma_x_access(sh, f, 0);
    char x4[128], xst[400], wst[400], nx[48], xguard[80] = "";
    mma_x_load(&xa, sh->x, "xbase[r] + k0 + kk", x4, sizeof x4);
    if (xa.bits) mma_x_store_bits(&xa, "Xs[r][kk]", "xv[j]", xst, sizeof xst);
    else mma_store4(f, "Xs[r][kk]", "xv[j]", xst, sizeof xst);
    mma_store4(f, "Ws[r][c]", "wv[j]", wst, sizeof wst);
    mma_x_count(&xa, "TILE * KT", nx, sizeof nx);
    if (xa.width != 4) snprintf(xguard, sizeof xguard, "if (idx < %s) ", nx);
    emit_batch_open(src, "TILE * KT / 4", xa.type, "xv", "wv");
    /* KT is a multiple of 16, so a row of the tile is a whole number of accesses */
    rg_str_printf(src,
        "                const int r = idx / (KT / %d), kk = (idx %% (KT / %d)) * %d;\n"
        "                xv[j] = (b + j < VIT && idx < %s && xbase[r] >= 0 && k0 + kk < K) ? %s\n"
        "                                                                             : %s;\n",
        xa.width, xa.width, xa.width, nx, x4, xa.zero);
    if (gm->transpose_w)
        rg_str_printf(src,
            "                const int wc = idx / (KT / 4), wr = (idx %% (KT / 4)) * 4;\n"
            "                wv[j] = (%sb + j < VIT && idx < NV && col0 + wc < N && k0 + wr < K)\n"
            "                            ? __ldg((const float4*)(Wt + (size_t)(col0 + wc) * K + k0 + wr)) : make_float4(0.f, 0.f, 0.f, 0.f);\n",
            wload_if);
    else
        rg_str_printf(src,
            "                const int wr = idx / (TILE / 4), wc = (idx %% (TILE / 4)) * 4;\n"
            "                wv[j] = (%sb + j < VIT && idx < NV && k0 + wr < K && col0 + wc < N)\n"
            "                            ? __ldg((const float4*)(Wt + (size_t)(k0 + wr) * N + col0 + wc)) : make_float4(0.f, 0.f, 0.f, 0.f);\n",
            wload_if);
    emit_batch_stores(src);
    rg_str_printf(src, "                %s{ const int r = idx / (KT / %d), kk = (idx %% (KT / %d)) * %d; %s }\n", xguard,
                  xa.width, xa.width, xa.width, xst);
    if (gm->transpose_w)
        rg_str_printf(src,
            "                %s{ const int c = idx / (KT / 4), r = (idx %% (KT / 4)) * 4;\n"
            "                  Ws[r][c] = %s(wv[j].x); Ws[r + 1][c] = %s(wv[j].y); Ws[r + 2][c] = %s(wv[j].z); Ws[r + 3][c] = %s(wv[j].w); }\n",
            wstore_if, f->round, f->round, f->round, f->round);
    else
        rg_str_printf(src, "                %s{ const int r = idx / (TILE / 4), c = (idx %% (TILE / 4)) * 4; %s }\n",
                      wstore_if, wst);
    emit_batch_close(src);
}

/* Staging of TILE rows of the outer product on tensor cores with 16-byte loads: SB float4s of
 * X (times the row's scalar) and of dY in flight per thread, then rounded and stored, as
 * emit_mma_stage_vec does for the product; without a scalar (sv[] is then 1, exact) a bfloat16
 * X under mma=bf16 is copied as its bits (mma_x_access). */
static void emit_mma_outer_stage_vec(rg_str *src, const gemm_shape *sh, const mma_form *f)
{
    const mma_xload xa = mma_x_access(sh, f, sh->s != NULL);
    char x4[128], y4[128], xst[400], dst[400], nx[48];
    /* the float4 form reads X at dY's steps (rr, cc), the bits form in its own (xr, xc) */
    mma_x_load(&xa, sh->x, xa.bits ? "xb[xr] + k0 + xc" : "xb[rr] + k0 + cc", x4, sizeof x4);
    ldg4(sh->y, "Y", "yb[rr] + n0 + cc", y4, sizeof y4);
    mma_store4(f, "Ds[rr][cc]", "dv[j]", dst, sizeof dst);
    emit_batch_open(src, "TILE * TILE / 4", xa.type, "xv", "dv");
    if (!xa.bits) {
        mma_store4(f, "Xs[rr][cc]", "xv[j]", xst, sizeof xst);
        rg_str_printf(src,
            "                const int rr = idx / (TILE / 4), cc = (idx %% (TILE / 4)) * 4;\n"
            "                const bool in = b + j < VIT && idx < NV;\n"
            "                xv[j] = make_float4(0.f, 0.f, 0.f, 0.f);\n"
            "                dv[j] = make_float4(0.f, 0.f, 0.f, 0.f);\n"
            "                if (in && xb[rr] >= 0 && k0 + cc < K) {\n"
            "                    const float s_ = sv[rr];\n"
            "                    const float4 v = %s;\n"
            "                    xv[j] = make_float4(s_ * v.x, s_ * v.y, s_ * v.z, s_ * v.w);\n"
            "                }\n"
            "                if (in && yb[rr] >= 0 && n0 + cc < N) dv[j] = %s;\n",
            x4, y4);
        emit_batch_stores(src);
        rg_str_printf(src,
            "                const int rr = idx / (TILE / 4), cc = (idx %% (TILE / 4)) * 4;\n"
            "                %s\n"
            "                %s\n",
            xst, dst);
        emit_batch_close(src);
        return;
    }
    mma_x_count(&xa, "TILE * TILE", nx, sizeof nx);
    mma_x_store_bits(&xa, "Xs[xr][xc]", "xv[j]", xst, sizeof xst);
    /* X in its own steps of xa.width (xr, xc), dY in float4s (rr, cc); TILE is a multiple of 16 */
    rg_str_printf(src,
        "                const int rr = idx / (TILE / 4), cc = (idx %% (TILE / 4)) * 4;\n"
        "                const int xr = idx / (TILE / %d), xc = (idx %% (TILE / %d)) * %d;\n"
        "                const bool in = b + j < VIT && idx < NV;\n"
        "                xv[j] = (in && idx < %s && xb[xr] >= 0 && k0 + xc < K) ? %s : %s;\n"
        "                dv[j] = make_float4(0.f, 0.f, 0.f, 0.f);\n"
        "                if (in && yb[rr] >= 0 && n0 + cc < N) dv[j] = %s;\n",
        xa.width, xa.width, xa.width, nx, x4, xa.zero, y4);
    emit_batch_stores(src);
    rg_str_printf(src,
        "                const int rr = idx / (TILE / 4), cc = (idx %% (TILE / 4)) * 4;\n"
        "                const int xr = idx / (TILE / %d), xc = (idx %% (TILE / %d)) * %d;\n"
        "                if (idx < %s) %s\n"
        "                %s\n",
        xa.width, xa.width, xa.width, nx, xst, dst);
    emit_batch_close(src);
}

/* gvec=on's way out of a product's float32 Y, 4 elements a thread: where Y is float32 and its rows keep
 * float4 alignment (bfloat16 rows already leave 4 at a time when stored plainly; accumulated ones are float32). */
static int product_gvec(const gemm_shape *sh)
{
    return !vt_is_bf16(sh->y) && rows_vectorize(sh->y, sh->N, sh->ldy, sh->y_head_stride);
}

/* gvec=on's way out of an outer product's dW tile: rows of the W slice and its head offsets keep float4
 * alignment (n0 is a multiple of TILE); a vector weight (N = 1) does not. */
static int outer_gvec(const gemm_shape *sh)
{
    return sh->N % 4 == 0 && sh->w_slice % 4 == 0 && sh->w_head_stride % 4 == 0;
}

/* The statement writing float4 `v` into the 4 floats at `y` (16-byte aligned): one vector atomic
 * (atomic_add4), a float4 read-modify-write, or a float4 store, as emit_y_store per element. */
static void emit_y_store4(rg_str *src, const char *indent, const gemm_shape *sh, const lw_gemm *gm)
{
    if (gm->y_atomic || sh->y_sums_heads)
        rg_str_printf(src, "%satomic_add4(y, v);\n", indent);
    else if (gm->accumulate)
        rg_str_printf(src, "%s{ float4 o_ = *(float4*)y; o_.x += v.x; o_.y += v.y; o_.z += v.z; o_.w += v.w; "
                           "*(float4*)y = o_; }\n", indent);
    else
        rg_str_printf(src, "%s*(float4*)y = v;\n", indent);
}

/* The loop header of a 4-elements-a-thread way out of Cs: group idx's row r and first column c of the tile,
 * its Y row and column (N is a multiple of 4, so a group starting below N ends below it), and v, the four
 * staged results times the per-row scalar (per column where the scalar has several heads). */
static void emit_epilogue4_open(rg_str *src, const gemm_exprs *ex)
{
    const gemm_shape *sh = &ex->sh;
    rg_str_puts(src,
        "    for (int idx = tid; idx < TILE * TILE / 4; idx += NT) {\n"
        "        const int r = idx / (TILE / 4), c = (idx % (TILE / 4)) * 4;\n"
        "        const int row = row0 + r, col = col0 + c;\n"
        "        if (row >= seg_end || col >= N) continue;\n"
        "        float4 v = *(const float4*)&Cs[r][c];\n");
    static const char comp[4] = {'x', 'y', 'z', 'w'};
    for (int u = 0; sh->s && u < 4; u++) {
        char col[16], scal[256];
        snprintf(col, sizeof col, "col + %d", u);
        scalar_expr(sh, ex->sidx, col, scal, sizeof scal);
        rg_str_printf(src, "        v.%c *= %s;\n", comp[u], scal);
    }
}

/* The products' way out of Cs: times the per-row scalar, into Y with its scatter and atomics.
 * A bfloat16 Y (plain stores) whose rows keep 8-byte alignment takes 4 elements per thread: one
 * float4 of Cs (consecutive threads, consecutive float4s: no bank conflict), rounded in pairs
 * and stored in 8 bytes (st_bf16x4), where element by element it took four 2-byte stores. Under
 * gvec=on a float32 Y takes 4 elements per thread too: one vector atomic, add or store. */
static void emit_mma_epilogue(rg_str *src, const gemm_exprs *ex, const lw_gemm *gm, const cg_config *cfg)
{
    const gemm_shape *sh = &ex->sh;
    char scal[256] = "1.f";
    if (cfg->gvec && product_gvec(sh)) {
        emit_epilogue4_open(src, ex);
        rg_str_printf(src, "        float* __restrict__ y = Y + (size_t)(%s) * %d + (size_t)h * %d + col;\n", ex->yrow,
                      sh->ldy, sh->y_head_stride);
        emit_y_store4(src, "        ", sh, gm);
        rg_str_puts(src, "    }\n");
        return;
    }
    if (vt_is_bf16(sh->y) && y_plain(sh, gm) && rows_vectorize(sh->y, sh->N, sh->ldy, sh->y_head_stride)) {
        emit_epilogue4_open(src, ex);
        rg_str_printf(src,
            "        st_bf16x4(Y + (size_t)(%s) * %d + (size_t)h * %d + col, v);\n"
            "    }\n",
            ex->yrow, sh->ldy, sh->y_head_stride);
        return;
    }
    if (sh->s) scalar_expr(sh, ex->sidx, "col", scal, sizeof scal);
    rg_str_printf(src,
        "    for (int idx = tid; idx < TILE * TILE; idx += NT) {\n"
        "        const int r = idx / TILE, c = idx %% TILE;\n"
        "        const int row = row0 + r, col = col0 + c;\n"
        "        if (row >= seg_end || col >= N) continue;\n"
        "        const float v = Cs[r][c] * %s;\n"
        "        %s* __restrict__ y = Y + (size_t)(%s) * %d + (size_t)h * %d + col;\n",
        scal, vt_ctype(sh->y), ex->yrow, sh->ldy, sh->y_head_stride);
    emit_y_store(src, "        ", sh, gm);
    rg_str_puts(src, "    }\n");
}

/* Y[S] (+)= s * X[G] x W[T] on tensor cores: a block owns TILE rows of one type segment and
 * TILE columns; K is staged KT at a time (zero-padded: K, N and the segment's end need not be
 * multiples of a fragment), and the float32 results go out through shared memory with the
 * same scalar, scatter and atomics as the float32 path. */
/* The opening of a tensor-core product whose block walks GT consecutive row tiles of the tile
 * table (gtiles): the shared tiles (Cs apart from Ws, which outlives a tile), then the loop over the
 * tiles, with each tile's type, rows and W slice in the names the single-tile body uses. W is staged
 * again only where the tile's relation differs from the previous one's or K takes several steps
 * (stage_w); a type's segment spans many tiles, so most tiles stage X alone. The loop's body is the
 * single-tile kernel's text, left at its indentation. */
static void emit_mma_tiles_open(rg_str *src, const gemm_exprs *ex, const gemm_shape *sh, const mma_form *f, int T,
                                int kt)
{
    rg_str_puts(src,
        "{\n"
        "    const int h = blockIdx.z;\n"
        "    const int col0 = blockIdx.y * TILE;\n"
        "    __shared__ long xbase[TILE];\n");
    emit_mma_smem(src, f, "Xs", T, kt, "Ws", kt, T, T, 1);
    rg_str_printf(src,
        "    int tw = -1;   /* the type whose W slice Ws holds */\n"
        "    for (int g = 0; g < GT; g++) {\n"
        "    const int tix = blockIdx.x * GT + g;\n"
        "    if (tix >= num_tiles) break;\n"
        "    const int t = tile_type[tix];\n"
        "    const int row0 = tile_row0[tix];\n"
        "    const int seg_end = %s;\n"
        "    const float* __restrict__ Wt = W + (size_t)(%s) * %d + (size_t)h * %d;\n"
        "    const bool stage_w = K > KT || t != tw;\n"
        "    tw = t;\n"
        "    /* the thread index made opaque: otherwise the compiler hoists the body's index arithmetic out of\n"
        "     * the loop and holds it in registers (138-164 a thread at dims 64, where one tile takes 76) */\n"
        "    int tid; asm volatile(\"mov.u32 %%0, %%%%tid.x;\" : \"=r\"(tid));\n"
        "    const int warp = tid / 32;\n",
        ex->segend, ex->wsl, sh->w_slice, sh->w_head_stride);
}

static void emit_product_mma(const gemm_exprs *ex, const lw_gemm *gm, const cg_config *cfg, kp_kernel *k, rg_str *src)
{
    const gemm_shape *sh = &ex->sh;
    const mma_form *f = &MMA_FORMS[cfg->mma];
    int T = cfg->tile, nw, fpw, G = cfg->gtiles > 1 ? cfg->gtiles : 1;
    mma_warps(cfg, &nw, &fpw);
    int kt = (sh->K + f->fk - 1) / f->fk * f->fk;
    if (kt > 64) kt = 64;
    k->category = KC_GEMM;
    k->grid_kind = KGRID_TILES;
    k->tile_rowset = ex->rs;
    k->tile_rows = T;
    k->rows_per_block = G;
    k->grid_y = (sh->N + T - 1) / T;
    k->grid_z = sh->heads;
    k->block_x = nw * 32;
    k->block_y = 1;
    rg_str_printf(src, "\n/* %s: %s[%s] %s %s%s[%s] x %s[%s]%s  (tile %d, tensor cores %s m16n16k%d: %d warps of %d "
                       "16 x 16 fragments, float32 accumulation",
                  k->name, sh->y->name, gm->y_idx == LW_IDX_ROW ? "row" : ex->yrow,
                  gm->y_atomic || gm->accumulate ? "+=" : "=", sh->s ? "s * " : "", sh->x->name, ex->xrow, sh->w->name,
                  ex->wsl, gm->transpose_w ? "^T" : "", T, f->name, f->fk, nw, fpw);
    if (G > 1) rg_str_printf(src, "; %d row tiles a block, W staged once per relation", G);
    rg_str_puts(src, ") */\n");
    rg_str_puts(src, f->includes);
    rg_str_printf(src, "#define TILE %d\n#define KT %d\n#define FPW %d\n#define NT %d\n#define K %d\n#define N %d\n", T,
                  kt, fpw, nw * 32, sh->K, sh->N);
    if (G > 1) rg_str_printf(src, "#define GT %d\n", G);
    rg_str_puts(src, "extern \"C\" __global__ void ");
    launch_bounds(src, cfg, nw * 32);
    rg_str_printf(src, "%s(\n", k->name);
    emit_params(src, k, &ex->u, sh, gm, ex->rs, G > 1);
    if (G > 1) {
        emit_mma_tiles_open(src, ex, sh, f, T, kt);
    } else {
        emit_tile_block_open(src, ex, "const int tid = threadIdx.x, warp = tid / 32;");
        emit_mma_smem(src, f, "Xs", T, kt, "Ws", kt, T, T, 0);
    }
    rg_str_printf(src,
        "    for (int r = tid; r < TILE; r += NT) {\n"
        "        const int row = row0 + r;\n"
        "        xbase[r] = row < seg_end ? (long)(%s) * %d + (long)h * %d : -1;\n"
        "    }\n",
        ex->xrow, sh->ldx, sh->x_head_stride);
    emit_mma_acc_init(src, f);
    /* W^T: consecutive threads read consecutive k, contiguous in memory */
    const char *wload = gm->transpose_w ? "const int c = idx / KT, r = idx % KT;\n"
                                          "            const float w = (k0 + r < K && col0 + c < N) ? __ldg(Wt + (size_t)(col0 + c) * K + k0 + r) : 0.f;\n"
                                        : "const int r = idx / TILE, c = idx % TILE;\n"
                                          "            const float w = (k0 + r < K && col0 + c < N) ? __ldg(Wt + (size_t)(k0 + r) * N + col0 + c) : 0.f;\n";
    char xs[256];
    mma_stage_x(sh->x, f, "(xbase[r] >= 0 && k0 + kk < K)", "", "xbase[r] + k0 + kk", xs, sizeof xs);
    rg_str_puts(src, "    __syncthreads();\n    for (int k0 = 0; k0 < K; k0 += KT) {\n");
    if (product_vectorizes(sh, gm, cfg)) {
        emit_mma_stage_vec(src, sh, gm, f, G > 1);
    } else {
        rg_str_printf(src,
            "        for (int idx = tid; idx < TILE * KT; idx += NT) {\n"
            "            const int r = idx / KT, kk = idx %% KT;\n"
            "            Xs[r][kk] = %s;\n"
            "        }\n"
            "        for (int idx = tid; %sidx < KT * TILE; idx += NT) {\n"
            "            %s"
            "            Ws[r][c] = %s(w);\n"
            "        }\n",
            xs, G > 1 ? "stage_w && " : "", wload, f->round);
    }
    rg_str_puts(src, "        __syncthreads();\n");
    emit_mma_step(src, f, "row_major", "&Xs[fr * 16][kk]", kt + f->pad, "&Ws[kk][fc * 16]", T + f->pad, "KT");
    rg_str_puts(src, "        __syncthreads();\n    }\n");
    emit_mma_store(src);
    emit_mma_epilogue(src, ex, gm, cfg);
    /* the next tile rewrites xbase and Cs, which the epilogue has just read */
    if (G > 1) rg_str_puts(src, "    __syncthreads();\n    }\n");
    rg_str_puts(src, "}\n");
    k->flops = 2.0 * sh->K * sh->N * sh->heads;  /* per row; the executor multiplies by rows */
}

/* The loop over a chunk's rows of an outer product (dW += X^T dY), `kn` rows (the name of the K
 * step) at a time: each row's X and dY offsets and per-row scalar staged in shared memory (xb, yb,
 * sv; -1 past the segment), then a barrier. The float32 and tensor-core forms share it; the loop
 * stays open for their staging. */
static void emit_row_staging(rg_str *src, const char *kn, const char *xrow, int ldx, int xhs, const char *yrow, int ldy,
                             int yhs, const char *scal)
{
    rg_str_printf(src,
        "    for (int r0 = row0; r0 < seg_end; r0 += %s) {\n"
        "        for (int rr = tid; rr < %s; rr += NT) {\n"
        "            const int row = r0 + rr;\n"
        "            if (row < seg_end) {\n"
        "                xb[rr] = (long)(%s) * %d + (long)h * %d;\n"
        "                yb[rr] = (long)(%s) * %d + (long)h * %d;\n"
        "                sv[rr] = %s;\n"
        "            } else {\n"
        "                xb[rr] = yb[rr] = -1;\n"
        "            }\n"
        "        }\n"
        "        __syncthreads();\n",
        kn, kn, xrow, ldx, xhs, yrow, ldy, yhs, scal);
}

/* dW[T] += s * X[G]^T dY[S] on tensor cores: a block reduces CHUNK rows of one segment into a
 * TILE x TILE block of dW (k0, n0), TILE rows at a time: X^T is the column-major view of the
 * staged X rows, and the partial dW leaves with one atomic per nonzero element. */
static void emit_outer_mma(const gemm_exprs *ex, const lw_gemm *gm, const cg_config *cfg, kp_kernel *k, rg_str *src)
{
    const gemm_shape *sh = &ex->sh;
    const mma_form *f = &MMA_FORMS[cfg->mma];
    int T = cfg->tile, nw, fpw;
    mma_warps(cfg, &nw, &fpw);
    int chunk = 8 * T, ntiles = (sh->N + T - 1) / T, ktiles = (sh->K + T - 1) / T;
    k->category = KC_GEMM;
    k->grid_kind = KGRID_TILES;
    k->tile_rowset = ex->rs;
    k->tile_rows = chunk;
    k->grid_y = ktiles * ntiles;
    k->grid_z = sh->heads;
    k->block_x = nw * 32;
    k->block_y = 1;
    rg_str_printf(src, "\n/* %s: %s[%s] += %s%s[%s]^T x %s[%s]  (outer product, tile %d, tensor cores %s m16n16k%d: %d "
                       "warps of %d 16 x 16 fragments, float32 accumulation) */\n",
                  k->name, sh->w->name, ex->wsl, sh->s ? "s * " : "", sh->x->name, ex->xrow, sh->y->name, ex->yrow, T,
                  f->name, f->fk, nw, fpw);
    rg_str_puts(src, f->includes);
    rg_str_printf(src, "#define TILE %d\n#define FPW %d\n#define NT %d\n#define K %d\n#define N %d\n#define CHUNK %d\n", T,
                  fpw, nw * 32, sh->K, sh->N, chunk);
    rg_str_puts(src, "extern \"C\" __global__ void ");
    launch_bounds(src, cfg, nw * 32);
    rg_str_printf(src, "%s(\n", k->name);
    emit_outer_params(src, k, &ex->u, sh, gm, ex->rs, chunk);
    char scal[256] = "1.f";
    if (sh->s) scalar_expr(sh, ex->sidx, "0", scal, sizeof scal);
    rg_str_printf(src,
        ")\n{\n"
        "    const int t = tile_type[blockIdx.x];\n"
        "    const int row0 = tile_row0[blockIdx.x];\n"
        "    const int seg_end = min(%s, row0 + CHUNK);\n"
        "    const int h = blockIdx.z;\n"
        "    const int k0 = (blockIdx.y / %d) * TILE, n0 = (blockIdx.y %% %d) * TILE;\n"
        "    const int tid = threadIdx.x, warp = tid / 32;\n"
        "    __shared__ long xb[TILE], yb[TILE];\n"
        "    __shared__ float sv[TILE];\n",
        ex->segend, ntiles, ntiles);
    emit_mma_smem(src, f, "Xs", T, T, "Ds", T, T, T, 0);
    emit_mma_acc_init(src, f);
    emit_row_staging(src, "TILE", ex->xrow, sh->ldx, sh->x_head_stride, ex->yrow, sh->ldy, sh->y_head_stride, scal);
    char xs[256], dv[200];
    mma_stage_x(sh->x, f, "(xb[rr] >= 0 && k0 + cc < K)", "sv[rr] * ", "xb[rr] + k0 + cc", xs, sizeof xs);
    if (rows_vectorize(sh->x, sh->K, sh->ldx, sh->x_head_stride) && rows_vectorize(sh->y, sh->N, sh->ldy, sh->y_head_stride))
        emit_mma_outer_stage_vec(src, sh, f);
    else
        rg_str_printf(src,
            "        for (int idx = tid; idx < TILE * TILE; idx += NT) {\n"
            "            const int rr = idx / TILE, cc = idx %% TILE;\n"
            "            Xs[rr][cc] = %s;\n"
            "            Ds[rr][cc] = %s((yb[rr] >= 0 && n0 + cc < N) ? %s : 0.f);\n"
            "        }\n",
            xs, f->round, ldg(sh->y, "Y", "yb[rr] + n0 + cc", dv, sizeof dv));
    rg_str_puts(src, "        __syncthreads();\n");
    emit_mma_step(src, f, "col_major", "&Xs[kk][fr * 16]", T + f->pad, "&Ds[kk][fc * 16]", T + f->pad, "TILE");
    rg_str_puts(src, "        __syncthreads();\n    }\n");
    emit_mma_store(src);
    rg_str_printf(src, "    float* __restrict__ Wt = W + (size_t)(%s) * %d + (size_t)h * %d;\n", ex->wsl, sh->w_slice,
                  sh->w_head_stride);
    if (cfg->gvec && outer_gvec(sh))
        /* N is a multiple of 4: a group starting below N ends below it */
        rg_str_puts(src,
            "    for (int idx = tid; idx < TILE * TILE / 4; idx += NT) {\n"
            "        const int r = idx / (TILE / 4), c = (idx % (TILE / 4)) * 4;\n"
            "        const int kk = k0 + r, nn = n0 + c;\n"
            "        const float4 v = *(const float4*)&Cs[r][c];\n"
            "        if (kk < K && nn < N && (v.x != 0.f || v.y != 0.f || v.z != 0.f || v.w != 0.f))\n"
            "            atomic_add4(Wt + (size_t)kk * N + nn, v);\n"
            "    }\n"
            "}\n");
    else
        rg_str_puts(src,
            "    for (int idx = tid; idx < TILE * TILE; idx += NT) {\n"
            "        const int kk = k0 + idx / TILE, nn = n0 + idx % TILE;\n"
            "        const float v = Cs[idx / TILE][idx % TILE];\n"
            "        if (kk < K && nn < N && v != 0.f) atomicAdd(Wt + (size_t)kk * N + nn, v);\n"
            "    }\n"
            "}\n");
    k->flops = 2.0 * sh->K * sh->N * sh->heads;
}

static void emit_product_scalar_loop(rg_str *src, const gemm_shape *sh, const lw_gemm *gm, const cg_config *cfg, int C,
                                     const char *kn);

static int emit_product(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg, kp_kernel *k, rg_str *src,
                        rg_err *err)
{
    gemm_exprs ex;
    if (prepare_exprs(ir, gm, cfg, &ex, err)) return -1;
    const gemm_shape sh = ex.sh;
    used_arrays u = ex.u;
    const char *xrow = ex.xrow, *yrow = ex.yrow, *sidx = ex.sidx, *wsl = ex.wsl;
    if (sh.y_sums_heads && !gm->y_atomic && !gm->accumulate)
        return rg_errf(err, "per-head products summed into one-head %s need an accumulation (+=) target",
                       sh.y->name);
    char why[128];
    const char *fallback = mma_fallback(&sh, cfg, why, sizeof why);
    if (!fallback) {
        emit_product_mma(&ex, gm, cfg, k, src);
        return 0;
    }
    kp_rowset rs = ex.rs;
    /* Register tiling: each thread computes C rows (the coarsening) x CW columns, so every
     * k step costs C + CW shared loads for C * CW fused multiply-adds. */
    int T = cfg->tile, C = cfg->coarsen, CW = cfg_col_coarsen(cfg), TY = T / C, TXN = T / CW, NT = TXN * TY;
    k->category = KC_GEMM;
    k->grid_kind = KGRID_TILES;
    k->tile_rowset = rs;
    k->tile_rows = T;
    k->grid_y = (sh.N + T - 1) / T;
    k->grid_z = sh.heads;
    k->block_x = TXN;
    k->block_y = TY;
    rg_str_printf(src, "\n/* %s: %s[%s] %s %s%s[%s] x %s[%s]%s  (tile %d, %d x %d outputs per thread, W in %s%s) */\n",
                  k->name, sh.y->name, gm->y_idx == LW_IDX_ROW ? "row" : yrow,
                  gm->y_atomic || gm->accumulate ? "+=" : "=", sh.s ? "s * " : "", sh.x->name, xrow, sh.w->name, wsl,
                  gm->transpose_w ? "^T" : "", T, C, CW, cfg->w_regs ? "registers" : "shared memory", fallback);
    const char *kn = emit_tile_defines(src, T);
    rg_str_printf(src, "#define TY %d\n#define CW %d\n#define NT %d\n#define K %d\n#define N %d\n", TY, CW, NT, sh.K,
                  sh.N);
    rg_str_puts(src, "extern \"C\" __global__ void ");
    launch_bounds(src, cfg, NT);
    rg_str_printf(src, "%s(\n", k->name);
    emit_params(src, k, &u, &sh, gm, rs, 0);
    emit_tile_block_open(src, &ex, "const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * blockDim.x + tx;");
    /* gathered X rows of the tile, looked up once */
    rg_str_printf(src,
        "    for (int r = tid; r < TILE; r += NT) {\n"
        "        const int row = row0 + r;\n"
        "        xbase[r] = row < seg_end ? (long)(%s) * %d + (long)h * %d : -1;\n"
        "    }\n"
        "    float acc[%d][CW];\n"
        "    #pragma unroll\n"
        "    for (int i = 0; i < %d; i++)\n"
        "        #pragma unroll\n"
        "        for (int q = 0; q < CW; q++) acc[i][q] = 0.f;\n"
        "    __syncthreads();\n",
        xrow, sh.ldx, sh.x_head_stride, C, C);
    int vec = product_vectorizes(&sh, gm, cfg);
    if (vec) {
        emit_product_vec_loop(src, &sh, gm, C, CW, kn);
    } else {
        emit_product_scalar_loop(src, &sh, gm, cfg, C, kn);
    }
    /* the vectorized loop gives a thread consecutive rows, the scalar one rows TY apart */
    char rowof[48];
    if (vec) snprintf(rowof, sizeof rowof, "ty * %d + i", C);
    else snprintf(rowof, sizeof rowof, "ty + i * TY");
    rg_str_printf(src,
        "    #pragma unroll\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        const int row = row0 + %s;\n"
        "        if (row >= seg_end) continue;\n"
        "        #pragma unroll\n"
        "        for (int q = 0; q < CW; q++) {\n"
        "            const int col = col0 + tx * CW + q;\n"
        "            if (col >= N) continue;\n",
        C, rowof);
    char scal[256] = "1.f";
    if (sh.s) scalar_expr(&sh, sidx, "col", scal, sizeof scal);
    rg_str_printf(src,
        "            const float v = acc[i][q] * %s;\n"
        "            %s* __restrict__ y = Y + (size_t)(%s) * %d + (size_t)h * %d + col;\n",
        scal, vt_ctype(sh.y), yrow, sh.ldy, sh.y_head_stride);
    emit_y_store(src, "            ", &sh, gm);
    rg_str_puts(src, "        }\n    }\n}\n");
    k->flops = 2.0 * sh.K * sh.N * sh.heads;  /* per row; the executor multiplies by rows */
    return 0;
}

static void emit_product_scalar_loop(rg_str *src, const gemm_shape *sh, const lw_gemm *gm, const cg_config *cfg, int C,
                                     const char *kn)
{
    char x[128];
    /* X is TILE rows x KT, W KT rows x TILE: one loop over TILE * KT elements stages both */
    rg_str_printf(src, "    __shared__ float Xs[TILE][%s + 1];\n", kn);
    if (!cfg->w_regs) rg_str_printf(src, "    __shared__ float Ws[%s][TILE + 1];\n", kn);
    rg_str_printf(src,
        "    for (int k0 = 0; k0 < K; k0 += %s) {\n"
        "        for (int idx = tid; idx < TILE * %s; idx += NT) {\n"
        "            const int r = idx / %s, kk = idx %% %s;\n"
        "            Xs[r][kk] = (xbase[r] >= 0 && k0 + kk < K) ? %s : 0.f;\n",
        kn, kn, kn, kn, ldg(sh->x, "X", "xbase[r] + k0 + kk", x, sizeof x));
    const char *welem = gm->transpose_w ? "Wt[(size_t)(c) * K + (r)]" : "Wt[(size_t)(r) * N + (c)]";
    if (!cfg->w_regs)
        rg_str_printf(src,
            "            { const int r = k0 + idx / TILE, c = col0 + idx %% TILE;\n"
            "              Ws[idx / TILE][idx %% TILE] = (r < K && c < N) ? __ldg(&%s) : 0.f; }\n", welem);
    rg_str_printf(src, "        }\n        __syncthreads();\n"
                       "        #pragma unroll 8\n"
                       "        for (int j = 0; j < %s; j++) {\n"
                       "            float w[CW];\n"
                       "            #pragma unroll\n"
                       "            for (int q = 0; q < CW; q++) {\n", kn);
    if (cfg->w_regs)
        rg_str_printf(src,
            "                const int r = k0 + j, c = col0 + tx * CW + q;\n"
            "                w[q] = (r < K && c < N) ? __ldg(&%s) : 0.f;\n", welem);
    else
        rg_str_puts(src, "                w[q] = Ws[j][tx * CW + q];\n");
    rg_str_printf(src,
        "            }\n"
        "            #pragma unroll\n"
        "            for (int i = 0; i < %d; i++) {\n"
        "                const float xv = Xs[ty + i * TY][j];\n"
        "                #pragma unroll\n"
        "                for (int q = 0; q < CW; q++) acc[i][q] = fmaf(xv, w[q], acc[i][q]);\n"
        "            }\n"
        "        }\n"
        "        __syncthreads();\n"
        "    }\n",
        C);
}

/* Appends the statement (after indent, ending the line) that reads n consecutive floats of
 * a shared row at idx * n into the array `dst`, as one vector access when n is 2 or 4 (the
 * row is 16-byte aligned). */
static void emit_shared_read(rg_str *src, const char *indent, const char *dst, const char *row, const char *idx,
                             int n)
{
    rg_str_puts(src, indent);
    if (n == 4)
        rg_str_printf(src, "{ const float4 v = *(const float4*)&%s[%s * 4]; %s[0] = v.x; %s[1] = v.y; %s[2] = v.z; %s[3] = v.w; }\n",
                      row, idx, dst, dst, dst, dst);
    else if (n == 2)
        rg_str_printf(src, "{ const float2 v = *(const float2*)&%s[%s * 2]; %s[0] = v.x; %s[1] = v.y; }\n", row, idx, dst,
                      dst);
    else
        rg_str_printf(src, "#pragma unroll\n            for (int z = 0; z < %d; z++) %s[z] = %s[%s * %d + z];\n", n, dst,
                      row, idx, n);
}

/* dW[t][h] (K x N) += sum over the tile's rows of s * X[g(row)]^T (outer) dY[s(row)]. */
static int emit_outer(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg, kp_kernel *k, rg_str *src,
                      rg_err *err)
{
    gemm_exprs ex;
    if (prepare_exprs(ir, gm, cfg, &ex, err)) return -1;
    const gemm_shape sh = ex.sh;
    used_arrays u = ex.u;
    const char *xrow = ex.xrow, *yrow = ex.yrow, *sidx = ex.sidx, *wsl = ex.wsl, *segend = ex.segend;
    char why[128];
    const char *fallback = mma_fallback(&sh, cfg, why, sizeof why);
    if (!fallback) {
        emit_outer_mma(&ex, gm, cfg, k, src);
        return 0;
    }
    kp_rowset rs = ex.rs;
    /* Register tiling as in the product form: a thread owns C rows (k) x CW columns (n) of
     * the dW tile and keeps them in registers over a chunk of rows. */
    int T = cfg->tile, C = cfg->coarsen, CW = cfg_col_coarsen(cfg), TY = T / C, TXN = T / CW, NT = TXN * TY;
    /* Each block reduces a chunk of rows in registers, then adds its partial dW with one
     * atomic per element: chunks are long so that atomics stay few. */
    int chunk = 8 * T;
    int ktiles = (sh.K + T - 1) / T, ntiles = (sh.N + T - 1) / T;
    int dy_head_stride = sh.N == 1 ? 1 : sh.y_head_stride;
    k->category = KC_GEMM;
    k->grid_kind = KGRID_TILES;
    k->tile_rowset = rs;
    k->tile_rows = chunk;
    k->grid_y = ktiles * ntiles;
    k->grid_z = sh.heads;
    k->block_x = TXN;
    k->block_y = TY;
    rg_str_printf(src, "\n/* %s: %s[%s] += %s%s[%s]^T x %s[%s]  (outer product, tile %d, %d x %d per thread%s) */\n",
                  k->name, sh.w->name, wsl, sh.s ? "s * " : "", sh.x->name, xrow, sh.y->name, yrow, T, C, CW, fallback);
    const char *kn = emit_tile_defines(src, T);
    rg_str_printf(src, "#define TY %d\n#define CW %d\n#define NT %d\n#define K %d\n#define N %d\n#define CHUNK %d\n", TY, CW,
                  NT, sh.K, sh.N, chunk);
    rg_str_puts(src, "extern \"C\" __global__ void ");
    launch_bounds(src, cfg, NT);
    rg_str_printf(src, "%s(\n", k->name);
    emit_outer_params(src, k, &u, &sh, gm, rs, chunk);
    char scal[256] = "1.f";
    if (sh.s) scalar_expr(&sh, sidx, "0", scal, sizeof scal);
    /* float4 loads where rows and head offsets keep 16-byte alignment (buffers are cudaMalloc'd;
     * bfloat16 rows: four elements in 8 bytes) */
    int vec_x = rows_vectorize(sh.x, sh.K, sh.ldx, sh.x_head_stride);
    int vec_y = rows_vectorize(sh.y, sh.N, sh.ldy, dy_head_stride);
    rg_str_printf(src,
        ")\n{\n"
        "    const int t = tile_type[blockIdx.x];\n"
        "    const int row0 = tile_row0[blockIdx.x];\n"
        "    const int seg_end = min(%s, row0 + CHUNK);\n"
        "    const int h = blockIdx.z;\n"
        "    const int k0 = (blockIdx.y / %d) * TILE, n0 = (blockIdx.y %% %d) * TILE;\n"
        "    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * blockDim.x + tx;\n"
        "    /* rows padded by 4 floats: 16-byte aligned vector accesses, rows on other banks */\n"
        "    __shared__ __align__(16) float Xs[%s][TILE + 4];\n"
        "    __shared__ __align__(16) float Ds[%s][TILE + 4];\n"
        "    __shared__ long xb[%s], yb[%s];\n"
        "    __shared__ float sv[%s];\n"
        "    float acc[%d][CW];\n"
        "    #pragma unroll\n"
        "    for (int i = 0; i < %d; i++)\n"
        "        #pragma unroll\n"
        "        for (int q = 0; q < CW; q++) acc[i][q] = 0.f;\n",
        segend, ntiles, ntiles, kn, kn, kn, kn, kn, C, C);
    /* a step stages KT rows of X (TILE columns from k0) and of dY (TILE from n0) */
    emit_row_staging(src, kn, xrow, sh.ldx, sh.x_head_stride, yrow, sh.ldy, dy_head_stride, scal);
    char ld[200];
    if (vec_x)
        rg_str_printf(src,
            "        for (int idx = tid; idx < %s * TILE / 4; idx += NT) {\n"
            "            const int rr = idx / (TILE / 4), cc = (idx %% (TILE / 4)) * 4;\n"
            "            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);\n"
            "            if (xb[rr] >= 0 && k0 + cc < K) {\n"
            "                v = %s;\n"
            "                const float s = sv[rr];\n"
            "                v.x *= s; v.y *= s; v.z *= s; v.w *= s;\n"
            "            }\n"
            "            *(float4*)&Xs[rr][cc] = v;\n"
            "        }\n",
            kn, ldg4(sh.x, "X", "xb[rr] + k0 + cc", ld, sizeof ld));
    else
        rg_str_printf(src,
            "        for (int idx = tid; idx < %s * TILE; idx += NT) {\n"
            "            const int rr = idx / TILE, cc = idx %% TILE;\n"
            "            Xs[rr][cc] = (xb[rr] >= 0 && k0 + cc < K) ? sv[rr] * (float)%s : 0.f;\n"
            "        }\n",
            kn, ldg(sh.x, "X", "xb[rr] + k0 + cc", ld, sizeof ld));
    if (vec_y)
        rg_str_printf(src,
            "        for (int idx = tid; idx < %s * TILE / 4; idx += NT) {\n"
            "            const int rr = idx / (TILE / 4), cc = (idx %% (TILE / 4)) * 4;\n"
            "            *(float4*)&Ds[rr][cc] = (yb[rr] >= 0 && n0 + cc < N) ? %s\n"
            "                                                             : make_float4(0.f, 0.f, 0.f, 0.f);\n"
            "        }\n",
            kn, ldg4(sh.y, "Y", "yb[rr] + n0 + cc", ld, sizeof ld));
    else
        rg_str_printf(src,
            "        for (int idx = tid; idx < %s * TILE; idx += NT) {\n"
            "            const int rr = idx / TILE, cc = idx %% TILE;\n"
            "            Ds[rr][cc] = (yb[rr] >= 0 && n0 + cc < N) ? (float)%s : 0.f;\n"
            "        }\n",
            kn, ldg(sh.y, "Y", "yb[rr] + n0 + cc", ld, sizeof ld));
    /* a thread owns C consecutive dW rows and CW consecutive columns, so each step over j
     * reads two short vectors from shared memory for C x CW fused multiply-adds */
    rg_str_printf(src,
        "        __syncthreads();\n"
        "        #pragma unroll 8\n"
        "        for (int j = 0; j < %s; j++) {\n"
        "            float xv[%d], d[CW];\n", kn, C);
    emit_shared_read(src, "            ", "xv", "Xs[j]", "ty", C);
    emit_shared_read(src, "            ", "d", "Ds[j]", "tx", CW);
    rg_str_printf(src,
        "            #pragma unroll\n"
        "            for (int i = 0; i < %d; i++)\n"
        "                #pragma unroll\n"
        "                for (int q = 0; q < CW; q++) acc[i][q] = fmaf(xv[i], d[q], acc[i][q]);\n"
        "        }\n"
        "        __syncthreads();\n"
        "    }\n"
        "    float* __restrict__ Wt = W + (size_t)(%s) * %d + (size_t)h * %d;\n"
        "    #pragma unroll\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        const int kk = k0 + ty * %d + i;\n"
        "        if (kk >= K) continue;\n"
        "        #pragma unroll\n"
        "        for (int q = 0; q < CW; q++) {\n"
        "            const int nn = n0 + tx * CW + q;\n"
        "            if (nn < N && acc[i][q] != 0.f) atomicAdd(Wt + (size_t)kk * N + nn, acc[i][q]);\n"
        "        }\n"
        "    }\n"
        "}\n",
        C, wsl, sh.w_slice, sh.w_head_stride, C, C);
    k->flops = 2.0 * sh.K * sh.N * sh.heads;
    return 0;
}

int eg_gvec_changes(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg)
{
    gemm_shape sh;
    rg_err err;
    char why[128];
    if (cfg->mma == CFG_MMA_OFF || resolve_shape(ir, gm, &sh, &err) || mma_fallback(&sh, cfg, why, sizeof why))
        return 0;
    return gm->outer_product ? outer_gvec(&sh) : product_gvec(&sh);
}

int eg_emit(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg, const char *name, int backward,
            kp_plan *plan, rg_err *err)
{
    kp_kernel *k = kp_add_kernel(plan);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->backward = backward;
    rg_str src = {0};
    int rc = gm->outer_product ? emit_outer(ir, gm, cfg, k, &src, err) : emit_product(ir, gm, cfg, k, &src, err);
    if (rc) {
        rg_str_free(&src);
        plan->nkernels--;
        rg_err_prefix(err, "cannot emit %s", name);
        return -1;
    }
    k->source = src.s;
    return 0;
}
