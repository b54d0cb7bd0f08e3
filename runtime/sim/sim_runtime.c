/* sim_runtime.c: the ACL runtime part: init, devices, contexts, device memory, copies,
 * streams, SoC name and versions.
 *
 * Status codes chosen for misuse (the real values are not all documented, see cann-abi.md 8.5):
 *   NULL out-pointer, size 0, bad policy/kind, count > destMax     ACL_ERROR_INVALID_PARAM 100000
 *   aclrtSetDevice/CreateContext before aclInit                    ACL_ERROR_UNINITIALIZE 100001
 *   repeated aclInit                                               ACL_ERROR_REPEAT_INITIALIZE 100002
 *   aclFinalize without aclInit                                    ACL_ERROR_REPEAT_FINALIZE 100037
 *   unknown package in aclsysGetVersion*                           ACL_ERROR_INVALID_FILE 100003
 *   bad device id, unknown handle or device address, freeing or
 *   copying memory a queued launch still uses, waiting on a stream
 *   from inside a kernel                                           ACL_ERROR_RT_PARAM_INVALID 107000
 *   no current context in the calling thread                       ACL_ERROR_RT_CONTEXT_NULL 107002
 *   host allocation failure                                        ACL_ERROR_RT_MEMORY_ALLOCATION 207001
 *   a kernel (run hook) failed during synchronisation              ACL_ERROR_RT_AICORE_EXCEPTION 507015
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (Linux), beside POSIX */

#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static const char *const NO_CONTEXT_HINT =
    "no current context in this thread; call aclrtSetDevice or aclrtSetCurrentContext in this "
    "thread first";

/* ------------------------------------------------------------------------------------------ */
/* init                                                                                       */

aclError aclInit(const char *configPath)
{
    (void)configPath; /* accepted and not read: the simulator has no configuration file */
    SIM_LOCK();
    if (sim_g.initialized) {
        SIM_UNLOCK();
        sim_err("aclInit: already initialized (ACL_ERROR_REPEAT_INITIALIZE); this may be ignored");
        return SIM_ACL_REPEAT_INITIALIZE;
    }
    sim_g.initialized = 1;
    SIM_UNLOCK();
    return SIM_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* contexts                                                                                   */

static struct sim_context *ctx_create_locked(int device, int is_default)
{
    struct sim_context *c = calloc(1, sizeof *c);
    struct sim_stream *s = calloc(1, sizeof *s);
    if (!c || !s || sim_reg_add(c, SIM_H_CONTEXT) != 0) {
        free(c);
        free(s);
        return NULL;
    }
    if (sim_reg_add(s, SIM_H_STREAM) != 0) {
        sim_reg_del(c);
        free(c);
        free(s);
        return NULL;
    }
    c->device = device;
    c->is_default = is_default;
    c->serial = sim_next_serial();
    c->default_stream = s;
    s->ctx = c;
    s->is_default = 1;
    s->serial = sim_next_serial();
    sim_g.counters.contexts++;
    sim_g.counters.streams++;
    return c;
}

/* Nonzero (with a message) when destroying c would have to wait for a stream from inside a
 * hook, which could deadlock. */
static int ctx_blocked_locked(const struct sim_context *c, const char *who)
{
    for (size_t i = 0; i < sim_reg_count(); i++) {
        int type;
        struct sim_stream *s = sim_reg_at(i, &type);
        if (type != SIM_H_STREAM || s->ctx != c || !s->draining)
            continue;
        if (pthread_equal(s->drainer, pthread_self()) || sim_tls.in_hook) {
            sim_err("%s: a stream of this context is running kernels and this call comes from "
                    "inside a kernel (hook); it cannot wait for them",
                    who);
            return SIM_RT_PARAM_INVALID;
        }
    }
    return SIM_OK;
}

/* Runs the queued work of every stream of c, then frees them and c. Returns 507015 when a
 * kernel failed, else 0. */
static int ctx_destroy_locked(struct sim_context *c, const char *who)
{
    int first = SIM_OK;
    c->dying = 1;
    for (;;) {
        struct sim_stream *s = NULL;
        for (size_t i = 0; i < sim_reg_count(); i++) {
            int type;
            struct sim_stream *cand = sim_reg_at(i, &type);
            if (type == SIM_H_STREAM && cand->ctx == c) {
                s = cand;
                break;
            }
        }
        if (!s)
            break;
        int st = sim_drain_locked(s, who);
        if (st == SIM_RT_AICORE_EXCEPTION && first == SIM_OK)
            first = st;
        if (sim_reg_type(s) != SIM_H_STREAM || s->ctx != c)
            continue; /* destroyed by another thread meanwhile */
        if (s->draining)
            return st ? st : SIM_RT_PARAM_INVALID; /* could not wait (reported by drain) */
        sim_reg_del(s);
        free(s);
        sim_g.counters.streams--;
    }
    sim_reg_del(c);
    free(c);
    sim_g.counters.contexts--;
    return first;
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
    if (!context) {
        sim_err("aclrtCreateContext: context is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    int rc = SIM_OK;
    if (!sim_g.initialized) {
        sim_err("aclrtCreateContext: aclInit has not been called");
        rc = SIM_ACL_UNINITIALIZE;
    } else if (deviceId < 0 || deviceId >= sim_g.device_count) {
        sim_err("aclrtCreateContext: device %d does not exist (devices 0..%d)", (int)deviceId,
                sim_g.device_count - 1);
        rc = SIM_RT_PARAM_INVALID;
    } else {
        struct sim_context *c = ctx_create_locked(deviceId, 0);
        if (!c) {
            sim_err("aclrtCreateContext: out of host memory");
            rc = SIM_RT_MEMORY_ALLOCATION;
        } else {
            sim_ctx_set_current(c); /* the new context becomes the thread's current one */
            *context = c;
        }
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtDestroyContext(aclrtContext context)
{
    if (!context) {
        sim_err("aclrtDestroyContext: context is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    struct sim_context *c = context;
    int rc;
    if (sim_reg_type(c) != SIM_H_CONTEXT || c->dying) {
        sim_err("aclrtDestroyContext: %p is not a live context", context);
        rc = SIM_RT_PARAM_INVALID;
    } else if (c->is_default) {
        sim_err("aclrtDestroyContext: this is a device's default context; aclrtResetDevice "
                "releases it");
        rc = SIM_RT_PARAM_INVALID;
    } else if ((rc = ctx_blocked_locked(c, "aclrtDestroyContext")) == SIM_OK) {
        rc = ctx_destroy_locked(c, "aclrtDestroyContext");
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtSetCurrentContext(aclrtContext context)
{
    if (!context) {
        sim_err("aclrtSetCurrentContext: context is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    struct sim_context *c = context;
    int rc = SIM_OK;
    if (sim_reg_type(c) != SIM_H_CONTEXT || c->dying) {
        sim_err("aclrtSetCurrentContext: %p is not a live context", context);
        rc = SIM_RT_PARAM_INVALID;
    } else {
        sim_ctx_set_current(c);
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtGetCurrentContext(aclrtContext *context)
{
    if (!context) {
        sim_err("aclrtGetCurrentContext: context is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    struct sim_context *c = sim_ctx_current();
    SIM_UNLOCK();
    if (!c) {
        sim_err("aclrtGetCurrentContext: %s", NO_CONTEXT_HINT);
        return SIM_RT_CONTEXT_NULL;
    }
    *context = c;
    return SIM_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* devices                                                                                    */

aclError aclrtSetDevice(int32_t deviceId)
{
    SIM_LOCK();
    int rc = SIM_OK;
    if (!sim_g.initialized) {
        sim_err("aclrtSetDevice: aclInit has not been called");
        rc = SIM_ACL_UNINITIALIZE;
    } else if (deviceId < 0 || deviceId >= sim_g.device_count) {
        sim_err("aclrtSetDevice: device %d does not exist (devices 0..%d)", (int)deviceId,
                sim_g.device_count - 1);
        rc = SIM_RT_PARAM_INVALID;
    } else {
        struct sim_device *d = &sim_g.dev[deviceId];
        if (!d->default_ctx)
            d->default_ctx = ctx_create_locked(deviceId, 1);
        if (!d->default_ctx) {
            sim_err("aclrtSetDevice: out of host memory");
            rc = SIM_RT_MEMORY_ALLOCATION;
        } else {
            d->refcount++;
            sim_ctx_set_current(d->default_ctx);
        }
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    SIM_LOCK();
    int rc = SIM_OK;
    if (!sim_g.initialized) {
        sim_err("aclrtResetDevice: aclInit has not been called");
        rc = SIM_ACL_UNINITIALIZE;
    } else if (deviceId < 0 || deviceId >= sim_g.device_count) {
        sim_err("aclrtResetDevice: device %d does not exist (devices 0..%d)", (int)deviceId,
                sim_g.device_count - 1);
        rc = SIM_RT_PARAM_INVALID;
    } else if (sim_g.dev[deviceId].refcount == 0) {
        sim_err("aclrtResetDevice: device %d is not set (each aclrtSetDevice takes one "
                "aclrtResetDevice)",
                (int)deviceId);
        rc = SIM_RT_PARAM_INVALID;
    } else {
        struct sim_device *d = &sim_g.dev[deviceId];
        struct sim_context *c = d->default_ctx;
        if (d->refcount == 1 && c && (rc = ctx_blocked_locked(c, "aclrtResetDevice")) != SIM_OK) {
            /* message set */
        } else if (--d->refcount == 0 && c) {
            d->default_ctx = NULL;
            rc = ctx_destroy_locked(c, "aclrtResetDevice");
        }
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtGetDevice(int32_t *deviceId)
{
    if (!deviceId) {
        sim_err("aclrtGetDevice: deviceId is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    struct sim_context *c = sim_ctx_current();
    int dev = c ? c->device : -1;
    SIM_UNLOCK();
    if (!c) {
        sim_err("aclrtGetDevice: %s", NO_CONTEXT_HINT);
        return SIM_RT_CONTEXT_NULL;
    }
    *deviceId = dev;
    return SIM_OK;
}

aclError aclFinalize(void)
{
    SIM_LOCK();
    if (!sim_g.initialized) {
        SIM_UNLOCK();
        sim_err("aclFinalize: not initialized (ACL_ERROR_REPEAT_FINALIZE)");
        return SIM_ACL_REPEAT_FINALIZE;
    }
    /* Contexts alive now; destroyed below unless destroyed meanwhile. */
    size_t n = 0, cap = sim_reg_count();
    struct sim_context **ctxs = malloc((cap ? cap : 1) * sizeof *ctxs);
    uint64_t *serials = malloc((cap ? cap : 1) * sizeof *serials);
    if (!ctxs || !serials) {
        free(ctxs);
        free(serials);
        SIM_UNLOCK();
        sim_err("aclFinalize: out of host memory");
        return SIM_RT_MEMORY_ALLOCATION;
    }
    for (size_t i = 0; i < sim_reg_count(); i++) {
        int type;
        struct sim_context *c = sim_reg_at(i, &type);
        if (type != SIM_H_CONTEXT || c->dying)
            continue;
        if (ctx_blocked_locked(c, "aclFinalize") != SIM_OK) {
            free(ctxs);
            free(serials);
            SIM_UNLOCK();
            return SIM_RT_PARAM_INVALID;
        }
        ctxs[n] = c;
        serials[n++] = c->serial;
    }
    sim_g.initialized = 0;
    for (int d = 0; d < SIM_MAX_DEVICES; d++) {
        sim_g.dev[d].refcount = 0;
        sim_g.dev[d].default_ctx = NULL;
    }
    int first = SIM_OK;
    for (size_t i = 0; i < n; i++) {
        struct sim_context *c = ctxs[i];
        if (sim_reg_type(c) != SIM_H_CONTEXT || c->serial != serials[i] || c->dying)
            continue;
        int st = ctx_destroy_locked(c, "aclFinalize");
        if (st != SIM_OK && first == SIM_OK)
            first = st;
    }
    free(ctxs);
    free(serials);
    SIM_UNLOCK();
    return first;
}

/* ------------------------------------------------------------------------------------------ */
/* device memory                                                                              */

static int policy_valid(unsigned long policy)
{
    unsigned long base = policy & 0xFFUL;
    unsigned long flags = policy & ~0xFFUL;
    return base <= 7 && (flags & ~(0x100UL | 0x1000UL | 0x100000UL)) == 0;
}

/* The simulated device's memory: ACLNNGEN_SIM_MEMORY_LIMIT bytes (a number with an optional
 * K/M/G/T suffix, powers of 1024), else 4 GiB or a quarter of the host's physical memory,
 * whichever is smaller. Device memory is host memory here: without a cap an op on a huge broadcast would
 * get the process killed by the OOM killer instead of failing with 207001. Read on every
 * allocation, so a test can change it. Returns 0 for a setting that is not a size. */
#define SIM_MEMORY_LIMIT_ENV "ACLNNGEN_SIM_MEMORY_LIMIT"

/* A size in bytes: digits with an optional K/M/G/T suffix (powers of 1024, optional "iB"/"B");
 * 0 for a text that is not one. */
static unsigned long long parse_size(const char *text)
{
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = 0;
    if (end == text || text[0] == '-')
        return 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if ((*end == 'b' || *end == 'B') && end[1] == '\0')
        end++;
    if (*end != '\0' || v > (~0ULL >> shift))
        return 0;
    return v << shift;
}

/* Large blocks are backed by transparent huge pages where the kernel offers them on request
 * (THP "madvise", as NumPy asks for its large arrays): a kernel's first write to a fresh 64 MiB
 * output then takes 32 page faults instead of 16384, which was a third of a 16M-element launch. */
#define SIM_HUGE_BLOCK ((size_t)4 << 20)

static void advise_huge_pages(void *p, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (size < SIM_HUGE_BLOCK || page == 0 || page == (uintptr_t)-1)
        return;
    const uintptr_t start = ((uintptr_t)p + page - 1) / page * page;
    const uintptr_t end = ((uintptr_t)p + size) / page * page;
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE); /* advice only: failure is harmless */
#else
    (void)p;
    (void)size;
#endif
}

/* Poison fills (0xFF on malloc, so a forgotten output reads as NaN; 0xDD on free): blocks up to
 * ACLNNGEN_SIM_POISON bytes (default 1 MiB) are filled whole, larger ones only in their first
 * page, so a large allocation costs no resident memory until it is written. "full" fills every
 * block whole (a debug setting), "off" or 0 fills nothing. Read on every call, like the limit. */
#define SIM_POISON_ENV "ACLNNGEN_SIM_POISON"

size_t sim_poison_bytes(size_t size)
{
    const char *text = getenv(SIM_POISON_ENV);
    unsigned long long limit = SIM_POISON_DEFAULT;
    if (text && text[0]) {
        if (strcmp(text, "full") == 0)
            return size;
        if (strcmp(text, "off") == 0 || strcmp(text, "0") == 0)
            return 0;
        unsigned long long v = parse_size(text);
        if (v)
            limit = v;
    }
    if (size <= limit)
        return size;
    return size < SIM_POISON_PREFIX ? size : SIM_POISON_PREFIX;
}

static unsigned long long memory_limit(const char **setting)
{
    const char *text = getenv(SIM_MEMORY_LIMIT_ENV);
    *setting = text;
    if (text && text[0])
        return parse_size(text);
    /* the machine's memory does not change under the process: asked once (sysconf's
     * _SC_PHYS_PAGES is a sysinfo system call, which every aclrtMalloc paid); a race between
     * two first callers stores the same value twice */
    static unsigned long long fallback;
    unsigned long long known = __atomic_load_n(&fallback, __ATOMIC_RELAXED);
    if (known)
        return known;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    known = 4ULL << 30;
    if (pages > 0 && page > 0) {
        unsigned long long quarter = (unsigned long long)pages / 4 * (unsigned long long)page;
        known = quarter < known ? quarter : known;
    }
    __atomic_store_n(&fallback, known, __ATOMIC_RELAXED);
    return known;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    const char *setting = NULL;
    unsigned long long limit = memory_limit(&setting);
    if (!devPtr) {
        sim_err("aclrtMalloc: devPtr is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    int rc = SIM_OK;
    struct sim_context *c = sim_ctx_current();
    if (!c) {
        sim_err("aclrtMalloc: %s", NO_CONTEXT_HINT);
        rc = SIM_RT_CONTEXT_NULL;
    } else if (size == 0) {
        sim_err("aclrtMalloc: size must not be 0");
        rc = SIM_ACL_INVALID_PARAM;
    } else if (!policy_valid((unsigned long)policy)) {
        sim_err("aclrtMalloc: %ld is not an aclrtMemMallocPolicy", (long)policy);
        rc = SIM_ACL_INVALID_PARAM;
    } else if (limit == 0) {
        sim_err("aclrtMalloc: %s=%s is not a size in bytes (such as 4294967296 or 4G)",
                SIM_MEMORY_LIMIT_ENV, setting);
        rc = SIM_RT_MEMORY_ALLOCATION;
    } else if (size > ((size_t)-1) / 2 ||
               (unsigned long long)size > limit - (unsigned long long)sim_g.counters.allocated_bytes ||
               (unsigned long long)sim_g.counters.allocated_bytes > limit) {
        sim_err("aclrtMalloc: cannot allocate %zu bytes: the simulated device has %llu bytes "
                "(%s), %lld in use",
                size, limit, setting && setting[0] ? "set by " SIM_MEMORY_LIMIT_ENV
                : "the default; set " SIM_MEMORY_LIMIT_ENV " to change it",
                (long long)sim_g.counters.allocated_bytes);
        rc = SIM_RT_MEMORY_ALLOCATION;
    } else {
        /* As on the device: round up to 32 bytes, then add 32; blocks are 64-byte aligned. */
        size_t real = (size + 31) / 32 * 32 + 32;
        size_t alloc = (real + 63) / 64 * 64;
        void *p = aligned_alloc(64, alloc);
        struct sim_block b = {(uintptr_t)p, size, real, 0, c->device};
        if (p)
            b.serial = sim_next_serial();
        if (!p || sim_block_add(&b) != 0) {
            free(p);
            sim_err("aclrtMalloc: cannot allocate %zu bytes", size);
            rc = SIM_RT_MEMORY_ALLOCATION;
        } else {
            /* Fresh device memory is garbage: 0xFF reads as NaN in every float format, so an
             * output a kernel forgot to write shows. */
            advise_huge_pages(p, alloc);
            memset(p, 0xFF, sim_poison_bytes(alloc));
            sim_g.counters.allocations++;
            sim_g.counters.allocated_bytes += (int64_t)real;
            *devPtr = p;
        }
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtFree(void *devPtr)
{
    if (!devPtr) {
        sim_err("aclrtFree: devPtr is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    int rc = SIM_OK;
    struct sim_block *b = sim_block_exact((uintptr_t)devPtr);
    const struct sim_launch *who = NULL;
    if (!b) {
        if (sim_block_overlapping((uintptr_t)devPtr, (uintptr_t)devPtr + 1))
            sim_err("aclrtFree: %p points inside a device allocation, not at its start", devPtr);
        else
            sim_err("aclrtFree: %p is not a live device allocation (freed twice, or host memory?)",
                    devPtr);
        rc = SIM_RT_PARAM_INVALID;
    } else if (sim_range_busy_locked(b->start, b->start + b->size, b->serial, 1, &who)) {
        sim_err("aclrtFree: the block at %p is still used by a queued launch of %s; call "
                "aclrtSynchronizeStream before freeing it",
                devPtr, sim_op_symbol(who->ex->op));
        rc = SIM_RT_PARAM_INVALID;
    } else {
        size_t size = b->size, real = b->real;
        sim_block_del(b->start);
        memset(devPtr, 0xDD, sim_poison_bytes(size));
        free(devPtr);
        sim_g.counters.allocations--;
        sim_g.counters.allocated_bytes -= (int64_t)real;
    }
    SIM_UNLOCK();
    return rc;
}

/* Checks one side of a copy. device: the range must lie in one live block and not race with a
 * queued launch; host: it must not touch device memory. */
static int check_side_locked(const char *side, uintptr_t p, size_t count, int device, int writing,
                             int kind)
{
    uintptr_t hi = p + count;
    if (hi < p) {
        sim_err("aclrtMemcpy: %s range wraps around the address space", side);
        return SIM_ACL_INVALID_PARAM;
    }
    if (!device) {
        if (sim_block_overlapping(p, hi)) {
            sim_err("aclrtMemcpy: %s %p is device memory but %s treats it as host memory", side,
                    (void *)p, sim_memcpy_kind_name(kind));
            return SIM_RT_PARAM_INVALID;
        }
        return SIM_OK;
    }
    struct sim_block *b = sim_block_holding(p, hi);
    if (!b) {
        if (sim_block_overlapping(p, hi))
            sim_err("aclrtMemcpy: %s range [%p, +%zu) runs past the end of its device "
                    "allocation",
                    side, (void *)p, count);
        else
            sim_err("aclrtMemcpy: %s %p is not in a live device allocation (%s)", side, (void *)p,
                    sim_memcpy_kind_name(kind));
        return SIM_RT_PARAM_INVALID;
    }
    const struct sim_launch *who = NULL;
    if (sim_range_busy_locked(p, hi, 0, writing, &who)) {
        sim_err("aclrtMemcpy: %s range [%p, +%zu) is %s by a queued launch of %s; call "
                "aclrtSynchronizeStream first",
                side, (void *)p, count, writing ? "used" : "written", sim_op_symbol(who->ex->op));
        return SIM_RT_PARAM_INVALID;
    }
    return SIM_OK;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    int k = (int)kind;
    SIM_LOCK();
    int rc = SIM_OK;
    if (!sim_ctx_current()) {
        sim_err("aclrtMemcpy: %s", NO_CONTEXT_HINT);
        rc = SIM_RT_CONTEXT_NULL;
    } else if (k < 0 || k > 7) {
        sim_err("aclrtMemcpy: %d is not an aclrtMemcpyKind", k);
        rc = SIM_ACL_INVALID_PARAM;
    } else if (count > destMax) {
        sim_err("aclrtMemcpy: count %zu exceeds destMax %zu", count, destMax);
        rc = SIM_ACL_INVALID_PARAM;
    } else if (count > 0 && (!dst || !src)) {
        sim_err("aclrtMemcpy: %s is NULL", dst ? "src" : "dst");
        rc = SIM_ACL_INVALID_PARAM;
    } else if (count > 0) {
        int dst_dev, src_dev;
        switch (k) {
        case 0: dst_dev = 0; src_dev = 0; break;
        case 1: case 5: dst_dev = 1; src_dev = 0; break;
        case 2: dst_dev = 0; src_dev = 1; break;
        case 4: /* DEFAULT: the runtime tells from the addresses */
            dst_dev = sim_block_overlapping((uintptr_t)dst, (uintptr_t)dst + 1) != NULL;
            src_dev = sim_block_overlapping((uintptr_t)src, (uintptr_t)src + 1) != NULL;
            break;
        default: dst_dev = 1; src_dev = 1; break;
        }
        rc = check_side_locked("dst", (uintptr_t)dst, count, dst_dev, 1, k);
        if (rc == SIM_OK)
            rc = check_side_locked("src", (uintptr_t)src, count, src_dev, 0, k);
        if (rc == SIM_OK)
            memmove(dst, src, count);
    }
    SIM_UNLOCK();
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* streams                                                                                    */

aclError aclrtCreateStream(aclrtStream *stream)
{
    if (!stream) {
        sim_err("aclrtCreateStream: stream is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    int rc = SIM_OK;
    struct sim_context *c = sim_ctx_current();
    struct sim_stream *s = NULL;
    if (!c) {
        sim_err("aclrtCreateStream: %s", NO_CONTEXT_HINT);
        rc = SIM_RT_CONTEXT_NULL;
    } else if (!(s = calloc(1, sizeof *s)) || sim_reg_add(s, SIM_H_STREAM) != 0) {
        free(s);
        sim_err("aclrtCreateStream: out of host memory");
        rc = SIM_RT_MEMORY_ALLOCATION;
    } else {
        s->ctx = c;
        s->serial = sim_next_serial();
        sim_g.counters.streams++;
        *stream = s;
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    if (!stream) {
        sim_err("aclrtDestroyStream: stream is NULL (the default stream cannot be destroyed)");
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    struct sim_stream *s = stream;
    int rc;
    if (sim_reg_type(s) != SIM_H_STREAM) {
        sim_err("aclrtDestroyStream: %p is not a live stream", stream);
        rc = SIM_RT_PARAM_INVALID;
    } else if (s->is_default) {
        sim_err("aclrtDestroyStream: a default stream is released with its context");
        rc = SIM_RT_PARAM_INVALID;
    } else {
        /* Queued work runs first (the header asks callers to synchronise before destroying). */
        uint64_t serial = s->serial;
        rc = sim_drain_locked(s, "aclrtDestroyStream");
        if (sim_reg_type(s) == SIM_H_STREAM && s->serial == serial && !s->draining) {
            sim_reg_del(s);
            free(s);
            sim_g.counters.streams--;
        }
    }
    SIM_UNLOCK();
    return rc;
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
    SIM_LOCK();
    int rc;
    struct sim_stream *s = stream;
    if (!s) {
        struct sim_context *c = sim_ctx_current();
        if (!c) {
            SIM_UNLOCK();
            sim_err("aclrtSynchronizeStream: stream is NULL (the default stream) and %s",
                    NO_CONTEXT_HINT);
            return SIM_RT_CONTEXT_NULL;
        }
        s = c->default_stream;
    } else if (sim_reg_type(s) != SIM_H_STREAM) {
        SIM_UNLOCK();
        sim_err("aclrtSynchronizeStream: %p is not a live stream", stream);
        return SIM_RT_PARAM_INVALID;
    }
    rc = sim_drain_locked(s, "aclrtSynchronizeStream");
    SIM_UNLOCK();
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* SoC name and versions                                                                      */

static _Thread_local char tl_soc[SIM_NAME_CAP];

const char *aclrtGetSocName(void)
{
    const char *result = tl_soc;
    SIM_LOCK();
    if (sim_g.soc_set) {
        snprintf(tl_soc, sizeof tl_soc, "%s", sim_g.soc);
    } else {
        const char *env = getenv("ACLNNGEN_SIM_SOC");
        if (env && env[0] != '\0') {
            if (strlen(env) >= SIM_NAME_CAP) {
                sim_err("aclrtGetSocName: $ACLNNGEN_SIM_SOC is longer than %d characters",
                        SIM_NAME_CAP - 1);
                result = NULL;
            } else {
                snprintf(tl_soc, sizeof tl_soc, "%s", env);
            }
        } else {
            snprintf(tl_soc, sizeof tl_soc, "%s", "Ascend910B2");
        }
    }
    SIM_UNLOCK();
    return result;
}

aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion)
{
    if (!majorVersion || !minorVersion || !patchVersion) {
        sim_err("aclrtGetVersion: an output pointer is NULL");
        return SIM_ACL_INVALID_PARAM;
    }
    /* The ACL API version of the headers in cann-abi.md 9.1 (not the CANN release). */
    *majorVersion = 1;
    *minorVersion = 17;
    *patchVersion = 0;
    return SIM_OK;
}

/* -DACLSIM_NO_VERSION_API builds a library without aclsysGetVersionStr/Num, like a CANN release
 * that predates them (tests of the version fallback to ascend_toolkit_install.info). */
#ifndef ACLSIM_NO_VERSION_API

/* Package names the simulated install answers for (directories of share/info). */
static int known_package(const char *name)
{
    static const char *const names[] = {
        "cann", "runtime", "compiler", "ge_compiler", "hccl", "toolkit", "opp", "opp_kernel",
        "nnopbase", "opbase", "ops-nn", "ops-math", "ops-transformer", "ops-cv",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

aclError aclsysGetVersionStr(char *pkgName, char *versionStr)
{
    if (!pkgName || !versionStr) {
        sim_err("aclsysGetVersionStr: %s is NULL", pkgName ? "versionStr" : "pkgName");
        return SIM_ACL_INVALID_PARAM;
    }
    if (!known_package(pkgName)) {
        sim_err("aclsysGetVersionStr: no version information for package '%.64s' in the "
                "simulated install",
                pkgName);
        return SIM_ACL_INVALID_FILE;
    }
    char v[SIM_VERSION_CAP];
    sim_version_copy(v);
    memcpy(versionStr, v, strlen(v) + 1);
    return SIM_OK;
}

aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum)
{
    if (!pkgName || !versionNum) {
        sim_err("aclsysGetVersionNum: %s is NULL", pkgName ? "versionNum" : "pkgName");
        return SIM_ACL_INVALID_PARAM;
    }
    if (!known_package(pkgName)) {
        sim_err("aclsysGetVersionNum: no version information for package '%.64s' in the "
                "simulated install",
                pkgName);
        return SIM_ACL_INVALID_FILE;
    }
    char v[SIM_VERSION_CAP];
    sim_version_copy(v);
    int32_t num = 0;
    if (sim_version_num(v, &num) != 0) { /* cannot happen: aclsim_set_version validates */
        sim_err("aclsysGetVersionNum: version '%s' does not parse", v);
        return SIM_ACL_INVALID_FILE;
    }
    *versionNum = num;
    return SIM_OK;
}

#endif /* ACLSIM_NO_VERSION_API */

/* ------------------------------------------------------------------------------------------ */
/* aclnn_base.h                                                                               */

aclnnStatus aclnnInit(const char *configPath)
{
    (void)configPath;
    return SIM_OK;
}

aclnnStatus aclnnFinalize(void)
{
    return SIM_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* reset (a simulator-only control): frees what every layer holds, so it lives at the top       */

int aclsim_reset(void)
{
    SIM_LOCK();
    if (sim_g.hooks_running > 0) {
        SIM_UNLOCK();
        sim_err("aclsim_reset: a prepare or run hook is in progress; nothing was reset");
        return SIM_RT_PARAM_INVALID;
    }
    sim_discard_all_launches_locked();

    /* Take the registry's contents, then free. Tensors and scalars owned by a list are freed
     * by their list. */
    size_t n = 0;
    struct sim_hentry *all = sim_reg_take_all(&n);
    if (!all) {
        SIM_UNLOCK();
        sim_err("aclsim_reset: out of host memory");
        return SIM_RT_MEMORY_ALLOCATION;
    }
    for (size_t i = 0; i < n; i++) {
        void *p = (void *)all[i].key;
        int type = all[i].type;
        if (type == SIM_H_TENSOR && ((aclTensor *)p)->owner)
            continue;
        if (type == SIM_H_SCALAR && ((aclScalar *)p)->owner)
            continue;
        if (type == SIM_H_STREAM || type == SIM_H_CONTEXT || type == SIM_H_EXECUTOR) {
            if (type == SIM_H_EXECUTOR)
                sim_executor_free_locked((aclOpExecutor *)p);
            else
                free(p);
            continue;
        }
        sim_free_handle_locked(p, type);
    }
    free(all);

    for (size_t i = 0; i < sim_block_count(); i++) {
        const struct sim_block *b = sim_block_at(i);
        void *p = (void *)b->start;
        memset(p, 0xDD, sim_poison_bytes(b->size));
        free(p);
    }
    sim_block_clear();

    sim_g.initialized = 0;
    memset(sim_g.dev, 0, sizeof sim_g.dev);
    memset(&sim_g.counters, 0, sizeof sim_g.counters);
    sim_g.pending = NULL;
    sim_memo_clear_locked();
    SIM_UNLOCK();
    sim_ctx_set_current(NULL);
    sim_err_clear();
    return SIM_OK;
}
