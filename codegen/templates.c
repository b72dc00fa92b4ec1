/* Device-side template text shared by every generated kernel (the compact-row binary search, row-group
 * sums, activations, bfloat16 vector loads and stores), put in front of each kernel that calls it. */
#include "codegen/templates.h"
#include "common/util.h"

#include <string.h>

typedef struct tpl_helper {
    const char *name;   /* what a kernel calls */
    const char *text;   /* its definition (CUDA C); it calls no other helper */
} tpl_helper;

/* In the order they are written out. A helper a kernel does not call is left out: nvcc warns
 * about each unused static function (#177), and NVRTC would parse it for nothing. */
static const tpl_helper helpers[] = {
    {"compact_find",
     "/* Compact row of (src, etype t): binary search in t's group of unique sources,\n"
     "   which is sorted ascending (datasets/hgraph.h). The pair always exists. */\n"
     "static __device__ __forceinline__ int compact_find(const int* __restrict__ unique_src,\n"
     "        const int* __restrict__ unique_etype_ptr, int t, int s)\n"
     "{\n"
     "    int lo = unique_etype_ptr[t], hi = unique_etype_ptr[t + 1] - 1;\n"
     "    while (lo < hi) {\n"
     "        int mid = (lo + hi) >> 1;\n"
     "        if (__ldg(unique_src + mid) < s) lo = mid + 1; else hi = mid;\n"
     "    }\n"
     "    return lo;\n"
     "}\n"},
    {"warp_sum",
     "static __device__ __forceinline__ double warp_sum(double v)\n"
     "{\n"
     "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
     "    return v;\n"
     "}\n"},
    {"group_sum",
     "/* The sum over a row group: `width` lanes (4, 8 or 16) of one warp, `mask` their bits. */\n"
     "static __device__ __forceinline__ double group_sum(double v, unsigned mask, int width)\n"
     "{\n"
     "    for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o, width);\n"
     "    return v;\n"
     "}\n"},
    /* the float forms of the two above (farith=f32): a float shuffles in one instruction, a double in two */
    {"warp_sumf",
     "static __device__ __forceinline__ float warp_sumf(float v)\n"
     "{\n"
     "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
     "    return v;\n"
     "}\n"},
    {"group_sumf",
     "static __device__ __forceinline__ float group_sumf(float v, unsigned mask, int width)\n"
     "{\n"
     "    for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o, width);\n"
     "    return v;\n"
     "}\n"},
    {"lrelu", "static __device__ __forceinline__ double lrelu(double x, double slope) { return x > 0.0 ? x : slope * x; }\n"},
    {"lrelu_grad",
     "static __device__ __forceinline__ double lrelu_grad(double g, double x, double slope) { return x > 0.0 ? g : slope * g; }\n"},
    /* GELU in PyTorch's exact (erf) form, x * Phi(x), and g times its derivative Phi(x) + x phi(x) */
    {"gelu", "static __device__ __forceinline__ double gelu(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }\n"},
    /* bfloat16 rows (store=bf16) read 2 or 4 elements at once, as floats: the alignment the
       float2/float4 accesses of float32 rows need, halved */
    {"ld_bf16x2",
     "static __device__ __forceinline__ float2 ld_bf16x2(const __nv_bfloat16* p)\n"
     "{\n"
     "    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));\n"
     "}\n"},
    {"ld_bf16x4",
     "static __device__ __forceinline__ float4 ld_bf16x4(const __nv_bfloat16* p)\n"
     "{\n"
     "    const uint2 q = *reinterpret_cast<const uint2*>(p);\n"
     "    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.x));\n"
     "    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.y));\n"
     "    return make_float4(a.x, a.y, b.x, b.y);\n"
     "}\n"},
    /* eight elements (vec=8) into the caller's array, which inlining keeps in registers: one 16-byte
       access of bfloat16, two of float32 */
    {"ld_bf16x8",
     "static __device__ __forceinline__ void ld_bf16x8(const __nv_bfloat16* p, float* o)\n"
     "{\n"
     "    const uint4 q = *reinterpret_cast<const uint4*>(p);\n"
     "    const unsigned w[4] = {q.x, q.y, q.z, q.w};\n"
     "    #pragma unroll\n"
     "    for (int k = 0; k < 4; k++) {\n"
     "        const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[k]));\n"
     "        o[2 * k] = f.x;\n"
     "        o[2 * k + 1] = f.y;\n"
     "    }\n"
     "}\n"},
    {"ld_f32x8",
     "static __device__ __forceinline__ void ld_f32x8(const float* p, float* o)\n"
     "{\n"
     "    const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];\n"
     "    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;\n"
     "    o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;\n"
     "}\n"},
    {"ldg_bf16x4",
     "static __device__ __forceinline__ float4 ldg_bf16x4(const __nv_bfloat16* p)\n"
     "{\n"
     "    const uint2 q = __ldg(reinterpret_cast<const uint2*>(p));\n"
     "    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.x));\n"
     "    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.y));\n"
     "    return make_float4(a.x, a.y, b.x, b.y);\n"
     "}\n"},
    /* four floats rounded once to bfloat16 and written in 8 bytes (p keeps that alignment) */
    {"st_bf16x4",
     "static __device__ __forceinline__ void st_bf16x4(__nv_bfloat16* p, float4 v)\n"
     "{\n"
     "    const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);\n"
     "    *reinterpret_cast<uint2*>(p) = make_uint2(*reinterpret_cast<const unsigned*>(&a), *reinterpret_cast<const unsigned*>(&b));\n"
     "}\n"},
    /* four floats added at p (16-byte aligned) by one vector atomic, which sm_90 has for global memory;
       an older target adds them one by one (gvec=on) */
    {"atomic_add4",
     "static __device__ __forceinline__ void atomic_add4(float* p, float4 v)\n"
     "{\n"
     "#if __CUDA_ARCH__ >= 900\n"
     "    atomicAdd(reinterpret_cast<float4*>(p), v);\n"
     "#else\n"
     "    atomicAdd(p, v.x); atomicAdd(p + 1, v.y); atomicAdd(p + 2, v.z); atomicAdd(p + 3, v.w);\n"
     "#endif\n"
     "}\n"},
    {"gelu_grad",
     "static __device__ __forceinline__ double gelu_grad(double g, double x)\n"
     "{\n"
     "    return g * (0.5 * erfc(-x * 0.70710678118654752440) + x * 0.39894228040143267794 * exp(-0.5 * x * x));\n"
     "}\n"},
};

static int ident_char(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

const char *tpl_find_word(const char *text, const char *from, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = strstr(from, word); p; p = strstr(p + 1, word))
        if ((p == text || !ident_char(p[-1])) && !ident_char(p[len])) return p;
    return NULL;
}

/* 1 when the text calls `name`: the whole identifier followed by '('. */
static int calls(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = tpl_find_word(text, text, name); p; p = tpl_find_word(text, p + 1, name))
        if (p[len] == '(') return 1;
    return 0;
}

char *tpl_source(const char *kernel_text)
{
    rg_str s = {0};
    rg_str_puts(&s, "/* generated by the RGNN explorer: device helpers */\n");
    /* bfloat16 storage (store=bf16): the type and its conversions, before any helper uses them
     * (an mma=bf16 kernel that includes it itself and calls none keeps its text as it was) */
    int bf16_helper = 0;
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        bf16_helper |= strstr(helpers[i].name, "bf16") && calls(kernel_text, helpers[i].name);
    if (strstr(kernel_text, "__nv_bfloat16") && (bf16_helper || !strstr(kernel_text, "#include <cuda_bf16.h>")))
        rg_str_puts(&s, "#include <cuda_bf16.h>\n");
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        if (calls(kernel_text, helpers[i].name)) rg_str_puts(&s, helpers[i].text);
    rg_str_puts(&s, kernel_text);
    return s.s;
}
