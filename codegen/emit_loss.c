/* The loss and update emitters of a training plan: the mean NLL loss of log-softmax and its
 * gradient (one kernel each, a group of lanes per node), and the SGD step that ends the plan. */
#include "codegen/emit_loss.h"
#include "codegen/vartype.h"

#include <stdlib.h>
#include <string.h>

#define NLL_WARPS 8   /* warps per block of the loss kernels */

/* Lanes that share one node's row in the loss kernels: a power of two with at most 8 classes
 * per lane. A warp per node leaves most of the time to shuffle latency when rows are short
 * (64 classes: 2 values per lane and 10 shuffle rounds per node). */
static int nll_group(int classes)
{
    int g = 1;
    while (g < 32 && g * 8 < classes) g *= 2;
    return g;
}

/* Blocks of the loss kernel: a grid-stride loop over nodes, and one atomic add per block to the
 * single loss address. One block per 32 nodes (synth:mag: 61,000 atomics on one double) made the
 * atomics the kernel's time; 8 blocks of 256 threads per SM of an H100 still fill it. */
#define NLL_LOSS_BLOCKS 1056

/* The node's row: its maximum, its exponentials and their sum z, and its label; `ind` indents it
 * (inside the loss kernel's loop). Lane `sub` of the node's G holds classes sub * V .. sub * V + V - 1,
 * read as float4 vectors where V is a multiple of 4 and the G lanes cover the row exactly (a row of
 * C floats, C a multiple of 4, is 16-byte aligned), else one float a class. The arithmetic is float32
 * with the accurate expf (no --use_fast_math; the biased __expf would shift every d logit alike): a
 * row's terms are at most 1 after the maximum's subtraction and z sums at most 1024 of them, so the d
 * logits keep about 1e-7 of relative error, far inside the validation tolerance, where double exp
 * made the loss kernel compute-bound (synth:mag: 0.44 ms at 25% of the DRAM peak, session 26). */
static void emit_row_softmax(rg_str *src, const char *ind, int vec4)
{
    rg_str_printf(src,
                  "%1$sconst bool valid = n < num_rows;\n"
                  "%1$sconst float* x = X + (size_t)(valid ? n : 0) * C + sub * V;\n"
                  "%1$sfloat xv[V];\n",
                  ind);
    if (vec4)
        rg_str_printf(src,
                      "%1$s#pragma unroll\n"
                      "%1$sfor (int j = 0; j < V; j += 4) {\n"
                      "%1$s    const float4 q = valid ? *(const float4*)(x + j) : make_float4(-3.402823466e38f, -3.402823466e38f, -3.402823466e38f, -3.402823466e38f);\n"
                      "%1$s    xv[j] = q.x; xv[j + 1] = q.y; xv[j + 2] = q.z; xv[j + 3] = q.w;\n"
                      "%1$s}\n",
                      ind);
    else
        rg_str_printf(src,
                      "%1$s#pragma unroll\n"
                      "%1$sfor (int j = 0; j < V; j++) xv[j] = (valid && sub * V + j < C) ? x[j] : -3.402823466e38f;\n",
                      ind);
    rg_str_printf(src,
                  "%1$sfloat m = -3.402823466e38f;\n"
                  "%1$s#pragma unroll\n"
                  "%1$sfor (int j = 0; j < V; j++) m = fmaxf(m, xv[j]);\n"
                  "%1$s#pragma unroll\n"
                  "%1$sfor (int o = G / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));\n"
                  "%1$sfloat e[V], z = 0.0f;\n"
                  "%1$s#pragma unroll\n"
                  "%1$sfor (int j = 0; j < V; j++) {\n"
                  "%1$s    e[j] = sub * V + j < C ? expf(xv[j] - m) : 0.0f;\n"
                  "%1$s    z += e[j];\n"
                  "%1$s}\n"
                  "%1$s#pragma unroll\n"
                  "%1$sfor (int o = G / 2; o > 0; o >>= 1) z += __shfl_xor_sync(0xffffffffu, z, o);\n"
                  "%1$sconst int label = valid ? (int)L[n] : -1;\n",
                  ind);
}

/* The lane holding the label adds the node's loss; each lane sums its nodes over the loop, and
 * the block adds its sum with one atomic. The loop's bound is the same for every lane of a block,
 * so the shuffles see whole warps. */
static void emit_loss_body(rg_str *src, int per_block, int vec4)
{
    rg_str_printf(src,
                  "    double t = 0.0;\n"
                  "    for (int base = blockIdx.x * %d; base < num_rows; base += gridDim.x * %d) {\n"
                  "        const int n = base + warp * (32 / G) + lane / G;\n",
                  per_block, per_block);
    emit_row_softmax(src, "        ", vec4);
    /* the node's loss from float32 terms; the sum over nodes in double */
    rg_str_printf(src,
                  "        #pragma unroll\n"
                  "        for (int j = 0; j < V; j++)\n"
                  "            if (sub * V + j == label) t += -(double)(xv[j] - m - logf(z)) / (double)num_rows;\n"
                  "    }\n"
                  "    t = warp_sum(t);\n"
                  "    __shared__ double part[%d];\n"
                  "    if (lane == 0) part[warp] = t;\n"
                  "    __syncthreads();\n"
                  "    if (threadIdx.x == 0) {\n"
                  "        double b = 0.0;\n"
                  "        for (int w = 0; w < %d; w++) b += part[w];\n"
                  "        atomicAdd(O, b);\n"
                  "    }\n"
                  "}\n",
                  NLL_WARPS, NLL_WARPS);
}

/* The gradient overwrites its output where it is the output's one writer and the output starts at
 * zero (autodiff's `+=` into a zero-filled d_h): reading the zeros back would add a pass over it. */
static int grad_overwrites(const ir_program *ir, const ir_stmt *s)
{
    if (!s->accumulate) return 1;
    return ir->vars[s->out.var].zero_init && ir_first_sole_writer(ir, (int)(s - ir->stmts));
}

static void emit_grad_body(rg_str *src, int per_block, int overwrite, int vec4, const char *out_type)
{
    rg_str_printf(src, "    const int n = blockIdx.x * %d + warp * (32 / G) + lane / G;\n", per_block);
    emit_row_softmax(src, "    ", vec4);
    rg_str_printf(src,
                  "    if (!valid) return;\n"
                  "    const float scale = (float)((double)dloss[0] / (double)num_rows), inv_z = 1.0f / z;\n"
                  "    float g[V];\n"
                  "    #pragma unroll\n"
                  "    for (int j = 0; j < V; j++) g[j] = (e[j] * inv_z - (sub * V + j == label ? 1.0f : 0.0f)) * scale;\n"
                  "    %s* o = O + (size_t)n * C + sub * V;\n",
                  out_type);
    if (vec4 && overwrite && !strcmp(out_type, "float"))
        rg_str_puts(src, "    #pragma unroll\n"
                         "    for (int j = 0; j < V; j += 4) *(float4*)(o + j) = make_float4(g[j], g[j + 1], g[j + 2], g[j + 3]);\n"
                         "}\n");
    else
        rg_str_printf(src, "    #pragma unroll\n"
                           "    for (int j = 0; j < V; j++)\n"
                           "        if (sub * V + j < C) o[j] %s g[j];\n"
                           "}\n",
                      overwrite ? "=" : "+=");
}

int el_emit_nll(const ir_program *ir, const ir_stmt *s, kp_kernel *k, rg_str *src, rg_err *err)
{
    const ir_var *x = &ir->vars[s->in[0].var];
    int C = (int)ir_var_row_width(x);
    /* one class: the output is a per-row scalar, float64 (vt_is_f64), and its loss is always 0 */
    if (vt_is_f64(x)) return rg_errf(err, "loss over %d class: training needs an output of at least 2 classes", C);
    /* X is the layer output, float32 under every store= (vt_bf16_exclusion) */
    RG_ASSERT(!vt_is_bf16(x));
    if (C > 1024) return rg_errf(err, "loss over %d classes: more than one block row", C);
    int G = nll_group(C), V = (C + G - 1) / G, per_block = NLL_WARPS * (32 / G);
    int vec4 = V % 4 == 0 && G * V == C;   /* float4 loads of whole, 16-byte-aligned slices */
    int grad = s->op == IR_OP_NLL_GRAD;
    k->category = KC_OTHER;
    k->block_x = 32 * NLL_WARPS;
    if (grad) {
        k->grid_kind = KGRID_ROWS;
        k->grid_rows_size = KS_NODES;
        k->rows_per_block = per_block;
    } else {
        k->grid_kind = KGRID_FIXED;
        k->grid_x_fixed = NLL_LOSS_BLOCKS;
    }
    const ir_var *lv = &ir->vars[s->in[1].var], *ov = &ir->vars[s->out.var];
    rg_str_printf(src,
                  "\n/* %s: %s (log-sum-exp in float32, expf), %d lanes per node, %d classes a lane%s */\n"
                  "#define C %d\n#define G %d\n#define V %d\n"
                  "extern \"C\" __global__ void %s(int num_rows, const float* __restrict__ X, const %s* __restrict__ L,\n"
                  "    %s* __restrict__ O%s)\n"
                  "{\n"
                  "    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, sub = lane & (G - 1);\n",
                  k->name, grad ? "d logits of the mean NLL loss" : "mean NLL loss of log-softmax", G, V,
                  vec4 ? " (float4 loads)" : "", C, G, V, k->name,
                  vt_ctype(lv), vt_ctype(ov),
                  grad ? (vt_is_f64(&ir->vars[s->in[2].var]) ? ", const double* __restrict__ dloss"
                                                                 : ", const float* __restrict__ dloss")
                       : "");
    int overwrite = grad && grad_overwrites(ir, s);
    if (grad) emit_grad_body(src, per_block, overwrite, vec4, vt_ctype(ov));
    /* every node's row stored before anything reads it: d_h needs no zero-fill */
    if (overwrite && ir_first_sole_writer(ir, (int)(s - ir->stmts))) kp_kernel_covers(k, s->out.var);
    else emit_loss_body(src, per_block, vec4);
    kp_add_param(k, KP_INT, KS_NODES, 0, "num_rows");
    kp_add_param(k, KP_VAR, s->in[0].var, 0, "X");
    kp_add_param(k, KP_VAR, s->in[1].var, 0, "L");
    kp_add_param(k, KP_VAR, s->out.var, 0, "O")->written = 1;
    if (grad) kp_add_param(k, KP_VAR, s->in[2].var, 0, "dloss");
    return 0;
}

/* Trainable weights with a gradient in device memory, in variable order. */
static int sgd_params(const ir_program *ir, const int *materialized, int *out)
{
    int n = 0;
    for (int v = 0; v < ir->nvars; v++) {
        const ir_var *x = &ir->vars[v];
        if (!el_sgd_updates(x)) continue;
        RG_ASSERT(materialized[v] && materialized[x->grad]);
        out[n++] = v;
    }
    return n;
}

/* Weights one SGD kernel takes: num_rows, then (types, w, dw) per weight. */
#define SGD_WEIGHTS_PER_KERNEL ((KP_MAX_PARAMS - 1) / 3)

/* One kernel updating the n weights params[0..n). */
static void emit_sgd_kernel(const ir_program *ir, const int *params, int n, const char *name, kp_plan *plan)
{
    kp_kernel *k = kp_add_kernel(plan);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->backward = 1;
    k->category = KC_OTHER;
    k->grid_kind = KGRID_FIXED;
    k->grid_x_fixed = 264;   /* two blocks per H100 SM; a grid-stride loop covers any size */
    k->block_x = 256;
    rg_str src = {0}, body = {0};
    rg_str_printf(&src, "\n/* %s: w -= lr * dw for every trainable weight (lr = %g) */\n"
                        "extern \"C\" __global__ void %s(int num_rows", name, EL_SGD_LR, name);
    kp_add_param(k, KP_INT, KS_NONE, 1, "num_rows");
    for (int i = 0; i < n; i++) {
        const ir_var *w = &ir->vars[params[i]], *dw = &ir->vars[w->grad];
        kp_size types = w->widx == IR_WIDX_ETYPE ? KS_ETYPES : w->widx == IR_WIDX_NTYPE ? KS_NTYPES : KS_NONE;
        char pn[32];
        snprintf(pn, sizeof pn, "types%d", i);
        kp_add_param(k, KP_INT, types, 1, pn);
        snprintf(pn, sizeof pn, "w%d", i);
        kp_add_param(k, KP_VAR, params[i], 0, pn)->written = 1;   /* w -= lr * dw */
        snprintf(pn, sizeof pn, "dw%d", i);
        kp_add_param(k, KP_VAR, w->grad, 0, pn);
        rg_str_printf(&src, ",\n    int types%d, float* __restrict__ w%d /* %s */, const %s* __restrict__ dw%d /* %s */",
                      i, i, w->name, vt_ctype(dw), i, dw->name);
        /* __fsub_rn: no contraction into an fma, so the host can redo the step bit for bit */
        rg_str_printf(&body,
                      "    for (size_t i = start; i < (size_t)types%d * %lld; i += stride)\n"
                      "        w%d[i] = __fsub_rn(w%d[i], (float)(%.17g * (double)dw%d[i]));\n",
                      i, (long long)ir_var_row_width(w), i, i, EL_SGD_LR, i);
    }
    rg_str_printf(&src, ")\n{\n    (void)num_rows;\n"
                        "    const size_t start = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;\n"
                        "%s}\n", body.s);
    rg_str_free(&body);
    k->source = src.s;
}

int el_emit_sgd(const ir_program *ir, const int *materialized, const char *name, kp_plan *plan, rg_err *err)
{
    (void)err;
    int *params = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof *params);
    int n = sgd_params(ir, materialized, params);
    /* more weights than one kernel's parameters take (PyG's HGTConv has 12): NAME, NAME_2, ... */
    for (int first = 0, part = 1; first < n; first += SGD_WEIGHTS_PER_KERNEL, part++) {
        int m = n - first < SGD_WEIGHTS_PER_KERNEL ? n - first : SGD_WEIGHTS_PER_KERNEL;
        char kname[64];
        if (part == 1) snprintf(kname, sizeof kname, "%s", name);
        else snprintf(kname, sizeof kname, "%s_%d", name, part);
        emit_sgd_kernel(ir, params + first, m, kname, plan);
    }
    free(params);
    return 0;
}

