/* GPU runtime: device query, NVRTC compilation of generated CUDA C to cubins with a disk
 * cache, loading and launching through the CUDA runtime library API, device buffers. */
#ifndef KRT_RT_H
#define KRT_RT_H

#include <stddef.h>
#include <stdint.h>
#include "common/util.h"

/* ---- Device ---------------------------------------------------------------------- */

typedef struct krt_device {
    int index;
    char name[256];
    int cc_major, cc_minor;        /* compute capability, e.g. 9.0 */
    int sm;                        /* cc_major * 10 + cc_minor: the arch to compile for */
    int sm_count;
    size_t total_mem, free_mem;    /* bytes, free_mem at krt_init time */
    int l2_bytes;
    int max_smem_per_block_optin;  /* bytes of shared memory a block may opt into */
    int driver_version;            /* e.g. 13000 for CUDA 13.0 */
    int runtime_version;
    int nvrtc_major, nvrtc_minor;
} krt_device;

/* Selects `device` and fills `out` (may be NULL). With no usable device the error is one
 * line "no CUDA device: <krt_no_device_reason>". */
int krt_init(int device, krt_device *out, rg_err *err);
/* 1 when at least one CUDA device is usable. Cached; never aborts, never prints. */
int krt_have_device(void);
/* How many CUDA devices this process sees (0 without a driver or device). */
int krt_device_count(void);
/* 0 when a device is usable, else -1 with the "no CUDA device: ..." line in err. */
int krt_require_device(rg_err *err);
/* Why no device is usable, for a reader: cuda_error is the cudaError_t of the device probe,
 * driver/runtime versions as cudaDriverGetVersion gives them (0: no driver). One line. */
void krt_no_device_reason(int cuda_error, int driver_version, int runtime_version, char *buf, size_t cap);
/* 1 when $RGNN_REQUIRE_GPU is "1": GPU tests must then fail instead of skipping. */
int krt_gpu_required(void);

/* ---- NVRTC compilation and the cubin disk cache ---------------------------------- */

typedef struct krt_source {
    const char *name;                 /* program name used in logs, e.g. "gemm_1.cu" */
    const char *code;                 /* CUDA C++; kernels looked up by name must be extern "C" */
    int fast_math;                    /* 1: add --use_fast_math */
    const char *const *options;       /* extra NVRTC options ("-DTILE=16"), may be NULL */
    int num_options;
} krt_source;

typedef struct krt_cubin {
    unsigned char *data;              /* the cubin (an ELF image) */
    size_t size;
    int sm;
    char key[33];                     /* cache key: 32 hex digits */
    int from_cache;                   /* 1: read from the disk cache, no NVRTC call */
    double compile_s;                 /* seconds spent in NVRTC (0 for a cache hit) */
    char *log;                        /* NVRTC log (warnings, or the errors after a failure) */
} krt_cubin;

/* Compiles src for the real architecture sm_<sm> (e.g. 90), through the disk cache.
 * Needs no GPU. On failure returns -1, err holds one line with the log flattened and
 * out->log the full log; krt_cubin_free(out) is valid after success and failure. */
int krt_compile(const krt_source *src, int sm, krt_cubin *out, rg_err *err);
void krt_cubin_free(krt_cubin *c);

/* Cache key of (src, sm): a 128-bit hash of the source, every option, the NVRTC version
 * and the arch, as 32 hex digits in key_hex. */
void krt_cache_key(const krt_source *src, int sm, char key_hex[33]);
/* The cache folder: $RGNN_KCACHE, else $XDG_CACHE_HOME/rgnn/cubin, else
 * $HOME/.cache/rgnn/cubin (else /tmp/rgnn-cubin-cache). NULL when RGNN_KCACHE=off
 * (caching disabled). Read at every compile, so tests may change it. Caller frees. */
char *krt_cache_dir(void);

/* Counters since the start or the last reset, shared by all threads. */
typedef struct krt_stats {
    long compiles;            /* NVRTC compilations that produced a cubin */
    long compile_failures;
    long cache_hits;
    long cache_misses;
    long cache_corrupt;       /* entries found damaged, removed and recompiled */
    long cache_write_errors;  /* entries that could not be stored (compile still succeeds) */
    double compile_s;         /* total seconds in NVRTC */
} krt_stats;
void krt_stats_get(krt_stats *out);
void krt_stats_reset(void);

/* NVRTC version and the real architectures it can compile for. */
void krt_nvrtc_version(int *major, int *minor);
int krt_arch_supported(int sm);

/* ---- Loading and launching (CUDA runtime library API only) ----------------------- */

typedef struct krt_module krt_module;

typedef struct krt_kernel {
    void *handle;                   /* cudaKernel_t */
    char name[256];
    int num_regs;
    int static_smem;                /* bytes */
    int local_bytes;                /* per thread (register spills) */
    int max_threads_per_block;
} krt_kernel;

typedef struct krt_dim3 {
    unsigned x, y, z;
} krt_dim3;

int krt_module_load(const krt_cubin *cubin, krt_module **out, rg_err *err);
void krt_module_unload(krt_module *m);
int krt_get_kernel(krt_module *m, const char *name, krt_kernel *out, rg_err *err);
/* Launches on the default stream (into the graph being captured, see below). args[i] points
 * at the value of parameter i. Dynamic shared memory above 48 KiB is opted into automatically.
 * Launch-time errors come back here; faults during execution come back from krt_sync. */
int krt_launch(const krt_kernel *k, krt_dim3 grid, krt_dim3 block, size_t shmem,
               void **args, rg_err *err);
/* Waits for all work; an asynchronous fault (e.g. cudaErrorIllegalAddress) comes back as
 * an error naming it. Such faults are sticky: the process must restart to use the GPU. */
int krt_sync(rg_err *err);

/* ---- Launch graphs ------------------------------------------------------------------ */

/* Between krt_capture_begin and krt_capture_end every krt_launch and krt_memset of the calling thread
 * becomes a node of one CUDA graph instead of running (stream capture on a stream of krt's own). Each
 * node depends on the nodes krt_capture_set_deps named last (none: a root), never implicitly on the one
 * before it; krt_capture_last_node gives the node the last launch or memset added. krt_capture_end
 * instantiates the graph (NULL *out and an error on failure, the capture ended either way);
 * krt_capture_abort ends a capture that a failed launch cut short. A graph's kernels keep the
 * arguments they were captured with. */
typedef struct krt_graph krt_graph;
int krt_capture_begin(rg_err *err);
int krt_capture_set_deps(void *const *nodes, int n, rg_err *err);
int krt_capture_last_node(void **node, rg_err *err);
int krt_capture_end(krt_graph **out, rg_err *err);
void krt_capture_abort(void);
/* Launches the whole graph on the default stream, after the work queued there before it. */
int krt_graph_launch(const krt_graph *g, rg_err *err);
void krt_graph_free(krt_graph *g);

/* Called around every krt_launch while set (the cudaEvent fallback of runtime/prof.c).
 * Set or clear only while no other thread launches. */
typedef struct krt_launch_hooks {
    void (*before)(void *ctx, const krt_kernel *k, krt_dim3 grid, krt_dim3 block, size_t shmem);
    void (*after)(void *ctx, const krt_kernel *k, int launched);   /* launched: 1 if it was */
    void *ctx;
} krt_launch_hooks;
void krt_set_launch_hooks(const krt_launch_hooks *hooks);   /* NULL clears */

/* ---- Device buffers ---------------------------------------------------------------- */

enum { KRT_OOM = -2 };
/* 0 and *dptr set; KRT_OOM when the device is out of memory; -1 on other errors.
 * bytes == 0 gives *dptr = NULL and success. */
int krt_alloc(void **dptr, size_t bytes, rg_err *err);
void krt_free(void *dptr);
int krt_upload(void *dst_dev, const void *src_host, size_t bytes, rg_err *err);
int krt_download(void *dst_host, const void *src_dev, size_t bytes, rg_err *err);
int krt_memset(void *dst_dev, int byte, size_t bytes, rg_err *err);
/* Fills with 0xFF bytes (a NaN for floats, -1 for ints) so outputs a kernel forgot to
 * write fail the comparison against the reference. */
int krt_poison(void *dst_dev, size_t bytes, rg_err *err);
int krt_mem_info(size_t *free_bytes, size_t *total_bytes, rg_err *err);
/* Page-locked host memory, for copies that repeat (staged inputs, downloads to validate):
 * they run at the link's speed and skip the driver's bounce buffer. NULL on failure. */
void *krt_host_alloc(size_t bytes, rg_err *err);
void krt_host_free(void *p);

#endif
