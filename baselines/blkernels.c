/* The simple CUDA kernels the cuBLAS baseline layers are composed of, written the way a
 * framework's generic operators are: one elementwise or gather/scatter step per kernel. */
#include "baselines/blkernels.h"

#include <string.h>

static const char *const NAMES[BLK_COUNT] = {
    "bl_gather_rows", "bl_replicate", "bl_fill", "bl_dot_heads", "bl_add", "bl_leakyrelu",
    "bl_scale_by_type", "bl_exp", "bl_sum_by_dst", "bl_div_by_dst", "bl_aggregate",
};

const char *blk_kernel_name(blk_id id)
{
    RG_ASSERT(id >= 0 && id < BLK_COUNT);
    return NAMES[id];
}

const char *blk_kernel_category(blk_id id)
{
    if (id == BLK_REPLICATE) return "copy";
    if (id == BLK_FILL) return "other";
    return "traversal";
}

const char *blk_category_of(const char *kernel_name)
{
    for (int i = 0; i < BLK_COUNT; i++)
        if (!strcmp(kernel_name, NAMES[i])) return blk_kernel_category((blk_id)i);
    return "gemm";
}

/* Every kernel walks its items with a grid-stride loop over a 64-bit index, so one launch
 * covers any size with the grid blk_grid() picks. Atomics are used where rows collide
 * (several edges share a destination), as PyTorch's scatter_add/index_add do. */
static const char SOURCE[] =
    "#define LOOP(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \\\n"
    "                        i += (long long)gridDim.x * blockDim.x)\n"
    "extern \"C\" __global__ void bl_gather_rows(const float *__restrict__ x, const int *__restrict__ idx,\n"
    "                                          float *__restrict__ out, long long rows, int width)\n"
    "{\n"
    "    LOOP(i, rows * width) {\n"
    "        long long r = i / width;\n"
    "        out[i] = x[(long long)idx[r] * width + i % width];\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void bl_replicate(const float *__restrict__ w, const int *__restrict__ type,\n"
    "                                        float *__restrict__ out, long long rows, long long wsize)\n"
    "{\n"
    "    LOOP(i, rows * wsize) {\n"
    "        long long r = i / wsize;\n"
    "        out[i] = w[(long long)type[r] * wsize + i % wsize];\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void bl_fill(float *__restrict__ x, float value, long long n)\n"
    "{\n"
    "    LOOP(i, n) x[i] = value;\n"
    "}\n"
    "extern \"C\" __global__ void bl_dot_heads(const float *__restrict__ a, const float *__restrict__ b,\n"
    "                                        const int *__restrict__ bidx, float *__restrict__ out,\n"
    "                                        long long rows, int heads, int d)\n"
    "{\n"
    "    LOOP(i, rows * heads) {\n"
    "        long long r = i / heads;\n"
    "        int h = (int)(i % heads);\n"
    "        long long br = bidx ? (long long)bidx[r] : r;\n"
    "        const float *pa = a + (r * heads + h) * d, *pb = b + (br * heads + h) * d;\n"
    "        float s = 0.f;\n"
    "        for (int k = 0; k < d; k++) s += pa[k] * pb[k];\n"
    "        out[i] = s;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void bl_add(const float *__restrict__ a, const float *__restrict__ b,\n"
    "                                  float *__restrict__ out, long long n)\n"
    "{\n"
    "    LOOP(i, n) out[i] = a[i] + b[i];\n"
    "}\n"
    "extern \"C\" __global__ void bl_leakyrelu(float *__restrict__ x, float slope, long long n)\n"
    "{\n"
    "    LOOP(i, n) x[i] = x[i] > 0.f ? x[i] : slope * x[i];\n"
    "}\n"
    "extern \"C\" __global__ void bl_scale_by_type(float *__restrict__ x, const float *__restrict__ s,\n"
    "                                            const int *__restrict__ type, float c, long long rows, int heads)\n"
    "{\n"
    "    LOOP(i, rows * heads) {\n"
    "        long long r = i / heads;\n"
    "        x[i] = x[i] * s[(long long)type[r] * heads + i % heads] * c;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void bl_exp(float *__restrict__ x, long long n)\n"
    "{\n"
    "    LOOP(i, n) x[i] = expf(x[i]);\n"
    "}\n"
    "extern \"C\" __global__ void bl_sum_by_dst(const float *__restrict__ x, const int *__restrict__ dst,\n"
    "                                         float *__restrict__ sum, long long rows, int heads)\n"
    "{\n"
    "    LOOP(i, rows * heads) atomicAdd(&sum[(long long)dst[i / heads] * heads + i % heads], x[i]);\n"
    "}\n"
    "extern \"C\" __global__ void bl_div_by_dst(float *__restrict__ x, const float *__restrict__ sum,\n"
    "                                         const int *__restrict__ dst, long long rows, int heads)\n"
    "{\n"
    "    LOOP(i, rows * heads) x[i] = x[i] / sum[(long long)dst[i / heads] * heads + i % heads];\n"
    "}\n"
    "extern \"C\" __global__ void bl_aggregate(const float *__restrict__ coef, const float *__restrict__ msg,\n"
    "                                        const int *__restrict__ dst, float *__restrict__ out,\n"
    "                                        long long rows, int heads, int d)\n"
    "{\n"
    "    LOOP(i, rows * heads * d) {\n"
    "        long long rh = i / d, r = rh / heads;\n"
    "        int h = (int)(rh % heads);\n"
    "        atomicAdd(&out[((long long)dst[r] * heads + h) * d + i % d], coef[rh] * msg[i]);\n"
    "    }\n"
    "}\n";

const char *blk_source(void)
{
    return SOURCE;
}

int blk_compile(int sm, krt_cubin *out, rg_err *err)
{
    krt_source src = {.name = "baselines.cu", .code = SOURCE};
    if (krt_compile(&src, sm, out, err)) {
        rg_err_prefix(err, "baseline kernels");
        return -1;
    }
    return 0;
}

krt_dim3 blk_grid(int64_t n)
{
    /* Enough blocks to fill any GPU several times over; the loops stride past the rest. */
    int64_t blocks = (n + BLK_THREADS - 1) / BLK_THREADS;
    if (blocks < 1) blocks = 1;
    if (blocks > (1 << 20)) blocks = 1 << 20;
    return (krt_dim3){(unsigned)blocks, 1, 1};
}
