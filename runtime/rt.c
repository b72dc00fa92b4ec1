/* GPU runtime: device query, NVRTC compilation with a disk cache of cubins, library
 * loading and launch through the CUDA runtime API (never the driver API), device buffers. */
#include "runtime/rt.h"

#include <cuda_runtime_api.h>
#include <ctype.h>
#include <errno.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Error helpers ----------------------------------------------------------------- */

/* Faults that leave the CUDA context unusable: every later call fails the same way. */
static int is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
        return 1;
    default:
        return 0;
    }
}

/* The class of a CUDA error: callers decide a variant's status by it, not by the text. */
static rg_err_class cuda_class(cudaError_t e)
{
    if (is_sticky(e)) return RG_ERR_FAULT;
    switch (e) {
    case cudaErrorMemoryAllocation: return RG_ERR_OOM;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice: return RG_ERR_NO_DEVICE;
    default: return RG_ERR_LAUNCH;
    }
}

/* "<what>: <cudaErrorName>: <description>", classified with e, and clears the non-sticky
 * last error so one failed call does not poison the next krt_sync. */
__attribute__((format(printf, 3, 4)))
static int cuda_fail(rg_err *err, cudaError_t e, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    (void)cudaGetLastError();
    rg_errf(err, "%s: %s: %s%s", what, cudaGetErrorName(e), cudaGetErrorString(e),
            is_sticky(e) ? " (sticky fault: the process must restart to use the GPU)" : "");
    return rg_err_classify(err, cuda_class(e), (int)e);
}

/* ---- Device -------------------------------------------------------------------------- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static cudaError_t probe_error = cudaSuccess;
static int probe_count = 0;

static void probe_devices(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n <= 0) e = cudaErrorNoDevice;
    probe_error = e;
    probe_count = e == cudaSuccess ? n : 0;
    (void)cudaGetLastError();
}

int krt_device_count(void)
{
    pthread_once(&probe_once, probe_devices);
    return probe_count;
}

int krt_have_device(void)
{
    pthread_once(&probe_once, probe_devices);
    return probe_count > 0;
}

/* cudart says "CUDA driver version is insufficient for CUDA runtime version" both when the
 * driver is too old and when there is no driver at all (driver version 0): the reader needs
 * to know which, and what to look for. */
void krt_no_device_reason(int cuda_error, int driver_version, int runtime_version, char *buf, size_t cap)
{
    cudaError_t e = (cudaError_t)cuda_error;
    if (e == cudaErrorInsufficientDriver && driver_version <= 0)
        snprintf(buf, cap, "no NVIDIA driver or device was found (cudaErrorInsufficientDriver)");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(buf, cap, "the NVIDIA driver supports CUDA %d.%d, older than this build's CUDA %d.%d runtime "
                 "(cudaErrorInsufficientDriver)", driver_version / 1000, driver_version % 1000 / 10,
                 runtime_version / 1000, runtime_version % 1000 / 10);
    else if (e == cudaErrorNoDevice)
        snprintf(buf, cap, "no NVIDIA device was found (cudaErrorNoDevice)");
    else
        snprintf(buf, cap, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

int krt_require_device(rg_err *err)
{
    if (krt_have_device()) return 0;
    int driver = 0, runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    (void)cudaGetLastError();
    char reason[256];
    krt_no_device_reason((int)probe_error, driver, runtime, reason, sizeof reason);
    rg_errf(err, "no CUDA device: %s", reason);
    return rg_err_classify(err, RG_ERR_NO_DEVICE, (int)probe_error);
}

int krt_gpu_required(void)
{
    const char *v = getenv("RGNN_REQUIRE_GPU");
    return v && strcmp(v, "1") == 0;
}

void krt_nvrtc_version(int *major, int *minor)
{
    int a = 0, b = 0;
    if (nvrtcVersion(&a, &b) != NVRTC_SUCCESS) a = b = 0;
    if (major) *major = a;
    if (minor) *minor = b;
}

static int device_attr(enum cudaDeviceAttr attr, int device)
{
    int v = 0;
    if (cudaDeviceGetAttribute(&v, attr, device) != cudaSuccess) v = 0;
    return v;
}

int krt_init(int device, krt_device *out, rg_err *err)
{
    if (krt_require_device(err)) return -1;
    if (device < 0 || device >= probe_count) {
        rg_errf(err, "CUDA device %d does not exist (%d present)", device, probe_count);
        return rg_err_classify(err, RG_ERR_NO_DEVICE, (int)cudaErrorInvalidDevice);
    }
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaFree(NULL);   /* creates the primary context now */
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot initialise CUDA device %d", device);
    if (!out) return 0;
    memset(out, 0, sizeof *out);
    out->index = device;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->cc_major = device_attr(cudaDevAttrComputeCapabilityMajor, device);
    out->cc_minor = device_attr(cudaDevAttrComputeCapabilityMinor, device);
    out->sm = out->cc_major * 10 + out->cc_minor;
    out->sm_count = device_attr(cudaDevAttrMultiProcessorCount, device);
    out->l2_bytes = device_attr(cudaDevAttrL2CacheSize, device);
    out->max_smem_per_block_optin = device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (cudaMemGetInfo(&out->free_mem, &out->total_mem) != cudaSuccess)
        out->free_mem = out->total_mem = 0;
    cudaDriverGetVersion(&out->driver_version);
    cudaRuntimeGetVersion(&out->runtime_version);
    krt_nvrtc_version(&out->nvrtc_major, &out->nvrtc_minor);
    (void)cudaGetLastError();
    return 0;
}

/* ---- Counters ------------------------------------------------------------------------ */

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static krt_stats stats;

/* Adds `delta` to one counter of `stats` under the lock (counters are shared by threads). */
static void stat_add(long *counter, long delta, double seconds)
{
    pthread_mutex_lock(&stats_lock);
    *counter += delta;
    stats.compile_s += seconds;
    pthread_mutex_unlock(&stats_lock);
}

void krt_stats_get(krt_stats *out)
{
    pthread_mutex_lock(&stats_lock);
    *out = stats;
    pthread_mutex_unlock(&stats_lock);
}

void krt_stats_reset(void)
{
    pthread_mutex_lock(&stats_lock);
    memset(&stats, 0, sizeof stats);
    pthread_mutex_unlock(&stats_lock);
}

/* ---- Architectures and options -------------------------------------------------------- */

int krt_arch_supported(int sm)
{
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return 0;
    int *archs = rg_xmalloc((size_t)n * sizeof *archs);
    int found = 0;
    if (nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS)
        for (int i = 0; i < n; i++) found |= archs[i] == sm;
    free(archs);
    return found;
}

static int unsupported_arch(int sm, rg_err *err)
{
    int n = 0, major, minor;
    krt_nvrtc_version(&major, &minor);
    rg_str list = {0};
    if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
        int *archs = rg_xmalloc((size_t)n * sizeof *archs);
        if (nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS)
            for (int i = 0; i < n; i++) rg_str_printf(&list, " %d", archs[i]);
        free(archs);
    }
    rg_errf(err, "NVRTC %d.%d cannot compile for sm_%d (supported:%s)", major, minor, sm,
            list.s ? list.s : " none");
    rg_str_free(&list);
    return rg_err_classify(err, RG_ERR_COMPILE, 0);
}

static char toolkit_include[4200];

static void find_toolkit_include(void)
{
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home) home = getenv("CUDA_PATH");
    if (!home || !*home) home = "/usr/local/cuda";
    snprintf(toolkit_include, sizeof toolkit_include, "--include-path=%s/include", home);
}

/* NVRTC searches no directory of its own, so a source that includes a toolkit header (the
 * tensor-core GEMMs: mma.h, cuda_bf16.h) gets the toolkit's include directory: $CUDA_HOME,
 * else $CUDA_PATH, else /usr/local/cuda (the Makefile's default). The others keep their
 * option list, and so their cache keys. */
static const char *include_option(const krt_source *src)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!strstr(src->code, "#include <")) return NULL;
    pthread_once(&once, find_toolkit_include);
    return toolkit_include;
}

/* The full NVRTC option list for (src, sm); the strings live in `arch` and src. */
static const char **build_options(const krt_source *src, char arch[32], int *count)
{
    int n = 0, cap = 4 + (src->num_options > 0 ? src->num_options : 0);
    const char **opts = rg_xmalloc((size_t)cap * sizeof *opts);
    opts[n++] = arch;
    opts[n++] = "-std=c++17";
    if (src->fast_math) opts[n++] = "--use_fast_math";
    const char *inc = include_option(src);
    if (inc) opts[n++] = inc;
    for (int i = 0; i < src->num_options; i++) opts[n++] = src->options[i];
    *count = n;
    return opts;
}

/* ---- Cache key ------------------------------------------------------------------------ */

#define KEY_FORMAT "rgnn-kcache-1"
#define SECOND_SEED 0x9ae16a3b2f90404fULL

typedef struct key_state {
    uint64_t a, b;
} key_state;

/* Each field is hashed with its length first, so ("ab","c") and ("a","bc") differ. */
static void key_field(key_state *k, const void *data, size_t n)
{
    uint64_t len = n;
    k->a = rg_fnv1a64(data, n, rg_fnv1a64(&len, sizeof len, k->a));
    k->b = rg_fnv1a64(data, n, rg_fnv1a64(&len, sizeof len, k->b));
}

static void key_str(key_state *k, const char *s)
{
    key_field(k, s, strlen(s));
}

/* splitmix64's finaliser: FNV's high bits depend weakly on the last bytes. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void compute_key(const krt_source *src, const char **opts, int nopts, uint64_t out[2])
{
    key_state k = {RG_FNV_SEED, SECOND_SEED};
    int major, minor;
    krt_nvrtc_version(&major, &minor);
    char version[32];
    snprintf(version, sizeof version, "nvrtc-%d.%d", major, minor);
    key_str(&k, KEY_FORMAT);
    key_str(&k, version);
    uint64_t n = (uint64_t)nopts;
    key_field(&k, &n, sizeof n);
    for (int i = 0; i < nopts; i++) key_str(&k, opts[i]);   /* the arch is opts[0] */
    key_str(&k, src->code);
    out[0] = mix64(k.a);
    out[1] = mix64(k.b ^ mix64(k.a));
}

static void key_to_hex(const uint64_t key[2], char hex[33])
{
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)key[0], (unsigned long long)key[1]);
}

void krt_cache_key(const krt_source *src, int sm, char key_hex[33])
{
    char arch[32];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", sm);
    int nopts;
    const char **opts = build_options(src, arch, &nopts);
    uint64_t key[2];
    compute_key(src, opts, nopts, key);
    free(opts);
    key_to_hex(key, key_hex);
}

/* ---- Disk cache ------------------------------------------------------------------------- */

/* File layout: "RGKC", u32 format version, u64 key[2], u64 payload size, u64 FNV-1a of
 * the payload, then the cubin. The key inside guards against a file renamed by hand. */
#define CACHE_MAGIC "RGKC"
#define CACHE_VERSION 1u
#define CACHE_HEADER 40
#define CACHE_MAX_PAYLOAD ((uint64_t)1 << 30)

static const char *nonempty_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

char *krt_cache_dir(void)
{
    const char *v = nonempty_env("RGNN_KCACHE");
    if (v) return strcmp(v, "off") == 0 ? NULL : rg_xstrdup(v);
    if ((v = nonempty_env("XDG_CACHE_HOME"))) return rg_xasprintf("%s/rgnn/cubin", v);
    if ((v = nonempty_env("HOME"))) return rg_xasprintf("%s/.cache/rgnn/cubin", v);
    return rg_xstrdup("/tmp/rgnn-cubin-cache");
}

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, sizeof v);
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void make_header(unsigned char h[CACHE_HEADER], const uint64_t key[2],
                        const unsigned char *data, size_t n)
{
    memcpy(h, CACHE_MAGIC, 4);
    put_u32(h + 4, CACHE_VERSION);
    put_u64(h + 8, key[0]);
    put_u64(h + 16, key[1]);
    put_u64(h + 24, (uint64_t)n);
    put_u64(h + 32, rg_fnv1a64(data, n, RG_FNV_SEED));
}

/* Reads a whole file; NULL if it cannot be opened (absent) or read. */
static unsigned char *read_file(const char *path, size_t *size, int *absent)
{
    *absent = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *absent = errno == ENOENT;
        return NULL;
    }
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0 &&
        (uint64_t)st.st_size <= CACHE_MAX_PAYLOAD + CACHE_HEADER) {
        *size = (size_t)st.st_size;
        buf = rg_xmalloc(*size ? *size : 1);
        if (fread(buf, 1, *size, f) != *size) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

enum { CACHE_MISS = 0, CACHE_HIT = 1, CACHE_CORRUPT = -1 };

/* Validates header, key, size and checksum; on a hit out->data/size are filled. */
static int cache_load(const char *path, const uint64_t key[2], krt_cubin *out)
{
    size_t size = 0;
    int absent;
    unsigned char *buf = read_file(path, &size, &absent);
    if (!buf) return absent ? CACHE_MISS : CACHE_CORRUPT;
    int ok = size >= CACHE_HEADER && memcmp(buf, CACHE_MAGIC, 4) == 0 &&
             get_u32(buf + 4) == CACHE_VERSION && get_u64(buf + 8) == key[0] &&
             get_u64(buf + 16) == key[1] && get_u64(buf + 24) == size - CACHE_HEADER &&
             size > CACHE_HEADER &&
             get_u64(buf + 32) == rg_fnv1a64(buf + CACHE_HEADER, size - CACHE_HEADER, RG_FNV_SEED);
    if (!ok) {
        free(buf);
        return CACHE_CORRUPT;
    }
    out->size = size - CACHE_HEADER;
    out->data = rg_xmalloc(out->size);
    memcpy(out->data, buf + CACHE_HEADER, out->size);
    free(buf);
    return CACHE_HIT;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes to a unique temporary file and renames it into place, so a reader (another
 * thread or process) sees either no entry or a complete one, never a partial file. */
static int cache_store(const char *dir, const char *path, const char *hex, const uint64_t key[2],
                       const unsigned char *data, size_t n, rg_err *err)
{
    if (rg_mkdir_p(dir, err)) return -1;
    char *tmp = rg_xasprintf("%s/.%s.tmp.XXXXXX", dir, hex);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rg_errf(err, "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    unsigned char header[CACHE_HEADER];
    make_header(header, key, data, n);
    int bad = write_all(fd, header, sizeof header) || write_all(fd, data, n);
    int saved = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        rg_errf(err, "cannot write %s: %s", path, strerror(saved));
        unlink(tmp);
    }
    free(tmp);
    return bad ? -1 : 0;
}

static void warn_cache_once(const rg_err *e)
{
    static int warned = 0;
    pthread_mutex_lock(&stats_lock);
    int first = !warned;
    warned = 1;
    pthread_mutex_unlock(&stats_lock);
    if (first) fprintf(stderr, "warning: kernel cache: %s (compiling without caching)\n", e->msg);
}

/* ---- NVRTC --------------------------------------------------------------------------- */

/* Joins the diagnostic lines of an NVRTC log with "; " so the error stays one line. The
 * indented lines (the echoed source line and its caret) are left to the full log. */
static void flatten_log(const char *log, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (const char *p = log; *p && n + 1 < cap;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ')) len--;
        if (len > 0 && !isspace((unsigned char)p[0])) {
            int w = snprintf(out + n, cap - n, "%s%.*s", n ? "; " : "", (int)len, p);
            if (w < 0) break;
            n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
        }
        p = end ? end + 1 : p + strlen(p);
    }
}

static char *program_log(nvrtcProgram prog)
{
    size_t size = 0;
    if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return NULL;
    char *log = rg_xmalloc(size);
    if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    return log;
}

static int nvrtc_compile(const krt_source *src, const char **opts, int nopts, int sm,
                         krt_cubin *out, rg_err *err)
{
    const char *name = src->name ? src->name : "kernel.cu";
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src->code, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        rg_errf(err, "NVRTC cannot create program %s: %s", name, nvrtcGetErrorString(r));
        return rg_err_classify(err, RG_ERR_COMPILE, 0);
    }
    double t0 = rg_now();
    r = nvrtcCompileProgram(prog, nopts, opts);
    out->compile_s = rg_now() - t0;
    out->log = program_log(prog);
    if (r != NVRTC_SUCCESS) {
        char flat[1600];
        flatten_log(out->log ? out->log : "(empty log)", flat, sizeof flat);
        rg_errf(err, "NVRTC failed to compile %s for sm_%d (%s): %s", name, sm,
                nvrtcGetErrorString(r), flat);
        nvrtcDestroyProgram(&prog);
        return rg_err_classify(err, RG_ERR_COMPILE, 0);
    }
    size_t size = 0;
    r = nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS && size > 0) {
        out->data = rg_xmalloc(size);
        r = nvrtcGetCUBIN(prog, (char *)out->data);
        out->size = size;
    }
    nvrtcDestroyProgram(&prog);
    if (r != NVRTC_SUCCESS || size == 0) {
        free(out->data);
        out->data = NULL;
        out->size = 0;
        rg_errf(err, "NVRTC produced no cubin for %s (sm_%d): %s", name, sm, nvrtcGetErrorString(r));
        return rg_err_classify(err, RG_ERR_COMPILE, 0);
    }
    return 0;
}

/* Looks the entry up; a damaged one is removed so the fresh compile replaces it. */
static int try_cache(const char *path, const uint64_t key[2], krt_cubin *out)
{
    int r = cache_load(path, key, out);
    if (r == CACHE_HIT) {
        out->from_cache = 1;
        stat_add(&stats.cache_hits, 1, 0);
        return 1;
    }
    if (r == CACHE_CORRUPT) {
        unlink(path);
        stat_add(&stats.cache_corrupt, 1, 0);
    }
    stat_add(&stats.cache_misses, 1, 0);
    return 0;
}

int krt_compile(const krt_source *src, int sm, krt_cubin *out, rg_err *err)
{
    RG_ASSERT(src && src->code && out);
    RG_ASSERT(src->num_options == 0 || src->options);
    memset(out, 0, sizeof *out);
    out->sm = sm;
    if (!krt_arch_supported(sm)) return unsupported_arch(sm, err);
    char arch[32];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", sm);
    int nopts;
    const char **opts = build_options(src, arch, &nopts);
    uint64_t key[2];
    compute_key(src, opts, nopts, key);
    key_to_hex(key, out->key);

    char *dir = krt_cache_dir();
    char *path = dir ? rg_xasprintf("%s/%s.cubin", dir, out->key) : NULL;
    int rc = 0;
    if (path && try_cache(path, key, out)) goto done;
    if (nvrtc_compile(src, opts, nopts, sm, out, err)) {
        stat_add(&stats.compile_failures, 1, out->compile_s);
        rc = -1;
        goto done;
    }
    stat_add(&stats.compiles, 1, out->compile_s);
    rg_err cerr;
    if (path && cache_store(dir, path, out->key, key, out->data, out->size, &cerr)) {
        stat_add(&stats.cache_write_errors, 1, 0);
        warn_cache_once(&cerr);
    }
done:
    free(opts);
    free(dir);
    free(path);
    return rc;
}

void krt_cubin_free(krt_cubin *c)
{
    if (!c) return;
    free(c->data);
    free(c->log);
    memset(c, 0, sizeof *c);
}

/* ---- Modules, kernels, launches ---------------------------------------------------------- */

struct krt_module {
    cudaLibrary_t lib;
    int sm;
};

/* A cubin runs only on its own major version, at an equal or newer minor. Checked up front
 * because libraries load lazily: the driver would only complain at the first use. */
static int check_arch(int cubin_sm, rg_err *err)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot query the current device");
    int major = device_attr(cudaDevAttrComputeCapabilityMajor, dev);
    int minor = device_attr(cudaDevAttrComputeCapabilityMinor, dev);
    if (cubin_sm <= 0 || (cubin_sm / 10 == major && cubin_sm % 10 <= minor)) return 0;
    return rg_errf(err, "cannot load a cubin for sm_%d on device %d (sm_%d%d): compile for sm_%d%d",
                   cubin_sm, dev, major, minor, major, minor);
}

int krt_module_load(const krt_cubin *cubin, krt_module **out, rg_err *err)
{
    RG_ASSERT(cubin && out);
    *out = NULL;
    if (krt_require_device(err)) return -1;
    if (!cubin->data || cubin->size == 0) return rg_errf(err, "cannot load an empty cubin");
    if (check_arch(cubin->sm, err)) return -1;
    cudaLibrary_t lib;
    cudaError_t e = cudaLibraryLoadData(&lib, cubin->data, NULL, NULL, 0, NULL, NULL, 0);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "cannot load the sm_%d cubin %s on the device", cubin->sm,
                         cubin->key);
    krt_module *m = rg_xcalloc(1, sizeof *m);
    m->lib = lib;
    m->sm = cubin->sm;
    *out = m;
    return 0;
}

void krt_module_unload(krt_module *m)
{
    if (!m) return;
    if (cudaLibraryUnload(m->lib) != cudaSuccess) (void)cudaGetLastError();
    free(m);
}

int krt_get_kernel(krt_module *m, const char *name, krt_kernel *out, rg_err *err)
{
    RG_ASSERT(m && name && out);
    memset(out, 0, sizeof *out);
    cudaKernel_t k;
    cudaError_t e = cudaLibraryGetKernel(&k, m->lib, name);
    if (e == cudaErrorSymbolNotFound)
        return cuda_fail(err, e, "kernel '%s' not found in the module (is it extern \"C\"?)", name);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot get kernel '%s' from the module", name);
    /* The runtime takes a cudaKernel_t wherever it takes a kernel as const void *. */
    struct cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, (const void *)k);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot read the attributes of kernel '%s'", name);
    out->handle = (void *)k;
    snprintf(out->name, sizeof out->name, "%s", name);
    out->num_regs = attr.numRegs;
    out->static_smem = (int)attr.sharedSizeBytes;
    out->local_bytes = (int)attr.localSizeBytes;
    out->max_threads_per_block = attr.maxThreadsPerBlock;
    return 0;
}

static krt_launch_hooks hooks;
static int hooks_set = 0;

void krt_set_launch_hooks(const krt_launch_hooks *h)
{
    hooks_set = h != NULL;
    if (h) hooks = *h;
    else memset(&hooks, 0, sizeof hooks);
}

static int dims_valid(krt_dim3 d)
{
    return d.x > 0 && d.y > 0 && d.z > 0;
}

#define DEFAULT_SMEM_LIMIT (48u * 1024u)

/* The stream a capture records on (a thread captures one graph at a time); NULL, the default stream,
 * when no capture is under way. Capturing needs a stream of its own: the legacy default stream
 * cannot be captured. */
static _Thread_local cudaStream_t capture_stream;
static _Thread_local cudaStream_t capture_stream_made;

struct krt_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

int krt_capture_begin(rg_err *err)
{
    RG_ASSERT(!capture_stream);
    if (krt_require_device(err)) return -1;
    cudaError_t e = cudaSuccess;
    if (!capture_stream_made) e = cudaStreamCreateWithFlags(&capture_stream_made, cudaStreamNonBlocking);
    /* relaxed: the launches look kernels up and set their shared-memory limits while capturing */
    if (e == cudaSuccess) e = cudaStreamBeginCapture(capture_stream_made, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot start capturing a launch graph");
    capture_stream = capture_stream_made;
    return 0;
}

int krt_capture_set_deps(void *const *nodes, int n, rg_err *err)
{
    RG_ASSERT(capture_stream && n >= 0);
    cudaError_t e = cudaStreamUpdateCaptureDependencies(capture_stream, (cudaGraphNode_t *)nodes, NULL, (size_t)n,
                                                        cudaStreamSetCaptureDependencies);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot set a launch graph node's dependencies");
    return 0;
}

int krt_capture_last_node(void **node, rg_err *err)
{
    RG_ASSERT(capture_stream);
    enum cudaStreamCaptureStatus status;
    const cudaGraphNode_t *deps = NULL;
    size_t n = 0;
    cudaError_t e = cudaStreamGetCaptureInfo(capture_stream, &status, NULL, NULL, &deps, NULL, &n);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot read the launch graph being captured");
    /* right after a launch, the stream's one dependency is the node that launch added */
    if (status != cudaStreamCaptureStatusActive || n != 1) return rg_errf(err, "launch graph capture lost its last node");
    *node = deps[0];
    return 0;
}

void krt_capture_abort(void)
{
    if (!capture_stream) return;
    cudaGraph_t g = NULL;
    if (cudaStreamEndCapture(capture_stream, &g) == cudaSuccess && g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
    capture_stream = NULL;
}

int krt_capture_end(krt_graph **out, rg_err *err)
{
    RG_ASSERT(capture_stream);
    *out = NULL;
    krt_graph *g = rg_xcalloc(1, sizeof *g);
    cudaError_t e = cudaStreamEndCapture(capture_stream, &g->graph);
    capture_stream = NULL;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (e != cudaSuccess) {
        krt_graph_free(g);
        return cuda_fail(err, e, "cannot build the launch graph");
    }
    *out = g;
    return 0;
}

int krt_graph_launch(const krt_graph *g, rg_err *err)
{
    RG_ASSERT(g && g->exec);
    cudaError_t e = cudaGraphLaunch(g->exec, 0);
    if (e != cudaSuccess) return cuda_fail(err, e, "launch of the run's graph failed");
    return 0;
}

void krt_graph_free(krt_graph *g)
{
    if (!g) return;
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    free(g);
}

int krt_launch(const krt_kernel *k, krt_dim3 grid, krt_dim3 block, size_t shmem,
               void **args, rg_err *err)
{
    RG_ASSERT(k && k->handle);
    if (!dims_valid(grid) || !dims_valid(block))
        return rg_errf(err, "launch of %s: empty grid (%u,%u,%u) or block (%u,%u,%u)", k->name,
                       grid.x, grid.y, grid.z, block.x, block.y, block.z);
    cudaError_t e = cudaSuccess;
    if (shmem > DEFAULT_SMEM_LIMIT) {
        int dev = 0;
        e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaKernelSetAttributeForDevice((cudaKernel_t)k->handle,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)shmem, dev);
        if (e != cudaSuccess)
            return cuda_fail(err, e, "launch of %s: cannot allow %zu bytes of dynamic shared memory",
                             k->name, shmem);
    }
    dim3 g = {grid.x, grid.y, grid.z}, b = {block.x, block.y, block.z};
    if (hooks_set && hooks.before) hooks.before(hooks.ctx, k, grid, block, shmem);
    e = cudaLaunchKernel((const void *)k->handle, g, b, args, shmem, capture_stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (hooks_set && hooks.after) hooks.after(hooks.ctx, k, e == cudaSuccess);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "launch of %s (grid %u,%u,%u block %u,%u,%u shmem %zu) failed",
                         k->name, grid.x, grid.y, grid.z, block.x, block.y, block.z, shmem);
    return 0;
}

int krt_sync(rg_err *err)
{
    if (krt_require_device(err)) return -1;
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) return cuda_fail(err, e, "kernel execution failed");
    return 0;
}

/* ---- Device buffers -------------------------------------------------------------------- */

int krt_alloc(void **dptr, size_t bytes, rg_err *err)
{
    RG_ASSERT(dptr);
    *dptr = NULL;
    if (krt_require_device(err)) return -1;
    if (bytes == 0) return 0;
    cudaError_t e = cudaMalloc(dptr, bytes);
    if (e == cudaSuccess) return 0;
    *dptr = NULL;
    cuda_fail(err, e, "cudaMalloc of %zu bytes failed", bytes);
    return e == cudaErrorMemoryAllocation ? KRT_OOM : -1;
}

void krt_free(void *dptr)
{
    if (dptr && cudaFree(dptr) != cudaSuccess) (void)cudaGetLastError();
}

static int copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                const char *what, rg_err *err)
{
    if (bytes == 0) return 0;
    if (krt_require_device(err)) return -1;
    RG_ASSERT(dst && src);
    cudaError_t e = cudaMemcpy(dst, src, bytes, kind);
    if (e != cudaSuccess) return cuda_fail(err, e, "%s of %zu bytes failed", what, bytes);
    return 0;
}

int krt_upload(void *dst_dev, const void *src_host, size_t bytes, rg_err *err)
{
    return copy(dst_dev, src_host, bytes, cudaMemcpyHostToDevice, "upload", err);
}

int krt_download(void *dst_host, const void *src_dev, size_t bytes, rg_err *err)
{
    return copy(dst_host, src_dev, bytes, cudaMemcpyDeviceToHost, "download", err);
}

void *krt_host_alloc(size_t bytes, rg_err *err)
{
    if (krt_require_device(err)) return NULL;
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cuda_fail(err, e, "cudaMallocHost of %zu bytes failed", bytes);
        return NULL;
    }
    return p;
}

void krt_host_free(void *p)
{
    if (p) cudaFreeHost(p);
}

int krt_memset(void *dst_dev, int byte, size_t bytes, rg_err *err)
{
    if (bytes == 0) return 0;
    if (krt_require_device(err)) return -1;
    RG_ASSERT(dst_dev);
    /* while capturing, a node of the graph (krt_capture_begin), as a launch is */
    cudaError_t e =
        capture_stream ? cudaMemsetAsync(dst_dev, byte, bytes, capture_stream) : cudaMemset(dst_dev, byte, bytes);
    if (e != cudaSuccess) return cuda_fail(err, e, "memset of %zu bytes failed", bytes);
    return 0;
}

int krt_poison(void *dst_dev, size_t bytes, rg_err *err)
{
    return krt_memset(dst_dev, 0xFF, bytes, err);
}

int krt_mem_info(size_t *free_bytes, size_t *total_bytes, rg_err *err)
{
    if (krt_require_device(err)) return -1;
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    if (e != cudaSuccess) return cuda_fail(err, e, "cannot read the device memory size");
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return 0;
}
