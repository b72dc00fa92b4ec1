/* Validation of a variant's run against the float64 CPU reference: the comparisons, the
 * tolerance, near-kink branch alternatives, the SGD step, and the first kernel that went wrong. */
#ifndef XV_VALIDATE_H
#define XV_VALIDATE_H

#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "codegen/ref.h"

/* ---- comparisons ---- */
/* ||x - ref||_2 / ||ref||_2; the absolute ||x - ref||_2 when ref is all zero; NaN if any
 * value is NaN, so `err < tol` fails on poisoned (never written) outputs. Large arrays are
 * summed on the reference's threads. */
double xv_rel_l2(const double *ref, const double *x, int64_t n);
/* Normalized mean squared error ||x - ref||^2 / ||ref||^2 (the square of xv_rel_l2). */
double xv_nmse(const double *ref, const double *x, int64_t n);
/* xv_rel_l2 of a float32 result (as a device stores it) against the reference. */
double xv_compare_f32(const double *ref, const float *x, int64_t n);
/* Fills a float32 output buffer with NaN, so values nothing writes fail the comparison. */
void xv_poison_f32(float *x, int64_t n);
/* The relative L2 error allowed: `requested` when > 0, else 1e-4 for training (float32
 * backward sums) and 1e-5 for inference. */
double xv_tolerance(double requested, int train);
/* Explicit mantissa bits of the operands of a precision cfg_precision names: fp32 23, tf32 10,
 * bf16 7 (a "+bf16-store" suffix, bfloat16 storage, does not change the operands' bits). */
int xv_mantissa_bits(const char *precision);
/* The relative L2 error allowed for variant cfg of problem p: `requested` when > 0, else
 * xv_tolerance's float32 one plus, for GEMM operands rounded to p mantissa bits on tensor
 * cores, the rounding error of a K-long dot product with float32 accumulation:
 *     tol = tol_fp32(task) + c * u * sqrt(K),   u = 2^-(p+1),  K = max(dim_in, dim_out),
 *     c = 2 for inference, 4 for training.
 * Rounding both operands moves each product x_k w_k by at most 2u of its size, so the sum by at
 * most 2u sum_k |x_k w_k|, which for terms of either sign is about sqrt(K) times |y|: 2u sqrt(K)
 * relative to the result. Training chains the backward products (X W^T and X^T dY) on top of
 * the forward ones: twice that. tf32 (u = 2^-11) at K = 64: 7.8e-3 inference, 1.6e-2 training;
 * bf16 (u = 2^-8): 6.3e-2 and 0.13. fp32 keeps xv_tolerance's. bfloat16 storage (store=bf16,
 * "+bf16-store") adds its own u = 2^-8 to the operands' u (validate.c says why):
 * fp32+bf16-store gets bf16's tolerance, bf16+bf16-store twice its added term. */
double xv_variant_tolerance(double requested, const pl_problem *p, const cg_config *cfg);

/* ---- the reference ---- */
/* Near-kink rows: a device computes a (Leaky)ReLU's input in float32, about 1e-7 of its
 * scale off the float64 value, so inputs within XV_KINK_REL of their RMS of the kink may
 * take either branch, and both derivatives are right (codegen/ref.h, kinks). Up to
 * XV_KINK_MAX_ENUM such rows, training runs are validated against every combination of
 * branches (2^n references); beyond, against the plain reference only. */
#define XV_KINK_REL 1e-6
#define XV_KINK_MAX_ENUM 3

typedef struct xv_reference xv_reference;

/* Builds the reference program of p, runs it on g (which must outlive it) and, for
 * training, finds the near-kink rows and computes the alternatives (said on stderr). */
xv_reference *xv_reference_new(const pl_problem *p, const hg_graph *g, rg_err *err);
/* The same with the reference's options (a relabelled graph's data maps, ref_options). */
xv_reference *xv_reference_new_opts(const pl_problem *p, const hg_graph *g, const ref_options *opt, rg_err *err);
void xv_reference_free(xv_reference *r);
const ir_program *xv_reference_program(const xv_reference *r);
ref_exec *xv_reference_exec(xv_reference *r);
/* Host values (the reference's seeded data) of every input, parameter, label and graph
 * input of the variant program ir, indexed by ir's variables (NULL elsewhere); NULL with a
 * message when one has no counterpart in the reference. Caller frees the array. */
const double **xv_input_values(xv_reference *r, const ir_program *ir, rg_err *err);

/* ---- a run's values ---- */
/* Where the values of a run come from: the device (the GPU backend downloads them) or host
 * arrays (tests). */
typedef struct xv_source {
    /* The values of variable `var` of the variant program as stored: *n elements of *elem
     * bytes (4: float, 8: double), valid until the next call. NULL with err set when they
     * cannot be read. Only asked for materialized variables. */
    const void *(*values)(void *ctx, int var, int64_t *n, int *elem, rg_err *err);
    void *ctx;
} xv_source;

/* The first kernel (in plan order) that completes a variable whose values disagree with the
 * reference: every kernel that writes a variable (from the lowered instances: a kernel is
 * named after its instance, with _p<k> for a traversal's phases) runs before the variable
 * is read, so the earliest completed wrong variable is where the error entered. Variables
 * with no reference counterpart of the same shape and layout (renamed or compacted by a
 * pass) are not compared. */
typedef struct xv_culprit {
    int kernel;      /* plan index; -1 when every comparable variable agrees */
    int var;         /* the variant program's variable */
    double error;    /* its relative L2 error (NaN: poisoned) */
} xv_culprit;

/* Compares every comparable materialized variable of the run with reference alternative
 * `alt` (0: the plain one; see xv_verdict.alt) under tolerance tol. -1 with err when a
 * value cannot be read. */
int xv_locate(xv_reference *r, const ir_program *ir, const lw_program *lp, const cg_variant *v, const xv_source *src,
              int alt, double tol, xv_culprit *out, rg_err *err);

typedef struct xv_verdict {
    double error;        /* the smallest over references of the largest error; NaN after an error */
    int ok;              /* error < tol */
    int ncompared;       /* variables and SGD steps compared (before an error) */
    int alt;             /* the reference used: 0 plain, else a near-kink alternative */
    xv_culprit culprit;  /* on a mismatch: the first kernel that went wrong (kernel -1: none found) */
    char evidence[3072]; /* "validated: h=3e-08" or "relative L2 error above 1e-05: ...; first wrong ..." */
} xv_verdict;

/* Validates a finished run: the output (inference) or the loss, every input/weight gradient
 * and the SGD step of each weight (training, against the weights before the run, inputs[]
 * as xv_input_values gives them), against the reference and each near-kink alternative.
 * On a mismatch the evidence also names the first kernel whose output disagrees. 0 with the
 * verdict; -1 with err when values could not be read (the verdict then holds what was
 * compared before, with error NaN). */
int xv_validate(xv_reference *r, const ir_program *ir, const lw_program *lp, const cg_variant *v, const xv_source *src,
                const double *const *inputs, double tol, xv_verdict *out, rg_err *err);

#endif
