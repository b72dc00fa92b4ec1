/* Measured ceilings of the current device, once per process: copy and L2 bandwidth, FP32 FMA
 * peak, TF32 and BF16 GEMM peaks; what the floors and achieved-bandwidth figures divide by. */
#include "runtime/ceil.h"
#include "runtime/rt.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TRIES 3
#define COPY_BYTES ((size_t)512 << 20)
#define GEMM_N 8192

static const char *CEIL_SRC =
    "extern \"C\" __global__ void l2_read(const float4 *buf, int n4, int passes, float *sink)\n"
    "{\n"
    "    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);\n"
    "    int stride = gridDim.x * blockDim.x;\n"
    "    for (int p = 0; p < passes; p++)\n"
    "        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {\n"
    "            float4 v = buf[i];\n"
    "            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;\n"
    "        }\n"
    "    if (acc.x + acc.y + acc.z + acc.w == 1234.5f) *sink = acc.x;   /* keeps the reads */\n"
    "}\n"
    "extern \"C\" __global__ void fma_chain(int iters, float *sink)\n"
    "{\n"
    "    float a = threadIdx.x, b = a + 1.f, c = a + 2.f, d = a + 3.f;\n"
    "    const float m = 0.999f, k = 0.001f;\n"
    "    for (int i = 0; i < iters; i++) {\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < 16; j++) {\n"
    "            a = fmaf(a, m, k); b = fmaf(b, m, k); c = fmaf(c, m, k); d = fmaf(d, m, k);\n"
    "        }\n"
    "    }\n"
    "    if (a + b + c + d == 1234.5f) *sink = a;\n"
    "}\n";

double kceil_best_seconds(int (*fn)(void *), void *ctx, int tries, const char *what, rg_err *err)
{
    cudaEvent_t t0, t1;
    if (cudaEventCreate(&t0) != cudaSuccess) return rg_errf(err, "%s: cannot create events", what), -1;
    if (cudaEventCreate(&t1) != cudaSuccess) {
        cudaEventDestroy(t0);
        return rg_errf(err, "%s: cannot create events", what), -1;
    }
    double best = -1;
    for (int i = 0; i <= tries; i++) {   /* the first call warms up */
        cudaEventRecord(t0, 0);
        if (fn(ctx)) break;
        cudaEventRecord(t1, 0);
        float ms = 0;
        if (cudaEventSynchronize(t1) != cudaSuccess || cudaEventElapsedTime(&ms, t0, t1) != cudaSuccess) break;
        if (i > 0 && (best < 0 || ms / 1e3 < best)) best = ms / 1e3;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    if (best <= 0) rg_errf(err, "%s: a timing failed: %s", what, cudaGetErrorString(cudaGetLastError()));
    return best;
}

static double best_seconds(int (*fn)(void *), void *ctx, rg_err *err)
{
    return kceil_best_seconds(fn, ctx, TRIES, "ceilings", err);
}

typedef struct copy_ctx { void *a, *b; size_t bytes; } copy_ctx;
static int do_copy(void *p)
{
    copy_ctx *c = p;
    return cudaMemcpyAsync(c->b, c->a, c->bytes, cudaMemcpyDeviceToDevice, 0) != cudaSuccess;
}

typedef struct launch_ctx { const krt_kernel *k; krt_dim3 grid, block; void **args; rg_err *err; } launch_ctx;
static int do_launch(void *p)
{
    launch_ctx *c = p;
    return krt_launch(c->k, c->grid, c->block, 0, c->args, c->err);
}

typedef struct gemm_ctx { cublasHandle_t h; void *a, *b, *c; cudaDataType in; cublasComputeType_t ct; } gemm_ctx;
static int do_gemm(void *p)
{
    gemm_ctx *g = p;
    const float one = 1, zero = 0;
    return cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, g->a, g->in, GEMM_N, g->b,
                        g->in, GEMM_N, &zero, g->c, CUDA_R_32F, GEMM_N, g->ct, CUBLAS_GEMM_DEFAULT) !=
           CUBLAS_STATUS_SUCCESS;
}

static int measure_copy(kceil *k, rg_err *err)
{
    copy_ctx c = {NULL, NULL, COPY_BYTES};
    if (krt_alloc(&c.a, c.bytes, err) || krt_alloc(&c.b, c.bytes, err) || krt_memset(c.a, 1, c.bytes, err)) {
        krt_free(c.a), krt_free(c.b);
        return -1;
    }
    double s = best_seconds(do_copy, &c, err);
    krt_free(c.a), krt_free(c.b);
    if (s <= 0) return -1;
    k->copy_Bps = 2.0 * (double)c.bytes / s;   /* each byte read once and written once */
    return 0;
}

/* The L2 read and the FMA kernels, compiled with NVRTC. */
static int measure_kernels(kceil *k, const krt_device *dev, rg_err *err)
{
    krt_source src = {"ceil.cu", CEIL_SRC, 0, NULL, 0};
    krt_cubin cub;
    krt_module *m;
    krt_kernel l2, fma;
    if (krt_compile(&src, dev->sm, &cub, err)) return -1;
    int rc = krt_module_load(&cub, &m, err);
    krt_cubin_free(&cub);
    if (rc || krt_get_kernel(m, "l2_read", &l2, err) || krt_get_kernel(m, "fma_chain", &fma, err)) return -1;
    size_t bytes = (size_t)dev->l2_bytes / 2;
    void *buf = NULL, *sink = NULL;
    if (krt_alloc(&buf, bytes, err) || krt_alloc(&sink, 64, err) || krt_memset(buf, 0, bytes, err)) {
        krt_free(buf), krt_free(sink);
        return -1;
    }
    int n4 = (int)(bytes / 16), passes = 50, iters = 4096;
    void *l2args[] = {&buf, &n4, &passes, &sink}, *fargs[] = {&iters, &sink};
    krt_dim3 grid = {(unsigned)dev->sm_count * 8, 1, 1}, block = {256, 1, 1};
    launch_ctx lc = {&l2, grid, block, l2args, err}, fc = {&fma, grid, block, fargs, err};
    double s1 = best_seconds(do_launch, &lc, err);
    double s2 = s1 > 0 ? best_seconds(do_launch, &fc, err) : -1;
    krt_free(buf), krt_free(sink);
    if (s1 <= 0 || s2 <= 0) return -1;
    k->l2_Bps = (double)passes * (double)n4 * 16.0 / s1;
    k->fp32_flops = 2.0 * 4 * 16 * (double)iters * grid.x * block.x / s2;
    return 0;
}

static int measure_gemm(kceil *k, rg_err *err)
{
    size_t n2 = (size_t)GEMM_N * GEMM_N;
    gemm_ctx g = {0};
    if (cublasCreate(&g.h) != CUBLAS_STATUS_SUCCESS) return rg_errf(err, "ceilings: cublasCreate failed");
    int rc = krt_alloc(&g.a, n2 * 4, err) || krt_alloc(&g.b, n2 * 4, err) || krt_alloc(&g.c, n2 * 4, err) ||
             krt_memset(g.a, 0, n2 * 4, err) || krt_memset(g.b, 0, n2 * 4, err);
    double flop = 2.0 * GEMM_N * (double)n2, s;
    if (!rc) {
        g.in = CUDA_R_32F, g.ct = CUBLAS_COMPUTE_32F_FAST_TF32;
        s = best_seconds(do_gemm, &g, err);
        rc = s <= 0;
        k->tf32_flops = rc ? 0 : flop / s;
    }
    if (!rc) {
        /* the same zeroed buffers read as bf16 matrices (half the bytes) */
        g.in = CUDA_R_16BF, g.ct = CUBLAS_COMPUTE_32F;
        s = best_seconds(do_gemm, &g, err);
        rc = s <= 0;
        k->bf16_flops = rc ? 0 : flop / s;
    }
    krt_free(g.a), krt_free(g.b), krt_free(g.c);
    cublasDestroy(g.h);
    return rc ? -1 : 0;
}

int kceil_disabled(void)
{
    const char *off = getenv("RGNN_NO_CEILINGS");
    return off && *off && strcmp(off, "0");
}

static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
static int measured = 0;
static kceil cached;

const kceil *kceil_get(rg_err *err)
{
    /* compute-sanitizer's racecheck cannot follow cuBLAS's GEMM kernels (an internal error) and
     * instruments the copy and FMA kernels too: sanitizer runs leave the ceilings out */
    if (kceil_disabled()) return rg_errf(err, "ceilings not measured: RGNN_NO_CEILINGS is set"), NULL;
    pthread_mutex_lock(&once_lock);
    int rc = 0;
    if (!measured) {
        krt_device dev;
        kceil k = {0};
        rc = krt_init(0, &dev, err) || measure_copy(&k, err) || measure_kernels(&k, &dev, err) || measure_gemm(&k, err);
        k.l2_bytes = dev.l2_bytes;
        if (!rc) cached = k, measured = 1;
    }
    pthread_mutex_unlock(&once_lock);
    return rc ? NULL : &cached;
}
