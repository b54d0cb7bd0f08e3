/* sim_state.c: global state, error messages, registries and the simulator-only controls.
 *
 * The bottom layer of the simulator's C: it calls no function of sim_meta.c, sim_op.c or
 * sim_runtime.c (tests/e2e/test_architecture.py checks that calls between the C files go one way).
 * What frees objects of the layers above (aclsim_reset) lives in sim_runtime.c, the top. */
#define _POSIX_C_SOURCE 200809L

#include "sim_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t sim_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_cv = PTHREAD_COND_INITIALIZER;
struct sim_state sim_g = {
    .initialized = 0,
    .device_count = 1,
    .next_serial = 1,
    .version = "", /* "": the default release, sim_version_copy */
};
_Thread_local struct sim_tls sim_tls;

/* ------------------------------------------------------------------------------------------ */
/* Error messages: per thread, newest first, cleared when read.                               */

static _Thread_local char tl_err[SIM_ERR_CAP];
static _Thread_local char tl_ret[SIM_ERR_CAP];

void sim_err(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (tl_err[0] == '\0') {
        snprintf(tl_err, sizeof tl_err, "%s", msg);
        return;
    }
    /* newest first: msg, newline, then as much of the older text as fits */
    size_t mlen = strlen(msg), olen = strlen(tl_err);
    if (mlen + 1 >= sizeof tl_err)
        olen = 0;
    else if (olen > sizeof tl_err - mlen - 2)
        olen = sizeof tl_err - mlen - 2;
    memmove(tl_err + mlen + 1, tl_err, olen);
    memcpy(tl_err, msg, mlen);
    tl_err[mlen] = '\n';
    tl_err[mlen + 1 + olen] = '\0';
}

void sim_err_clear(void)
{
    tl_err[0] = '\0';
}

const char *aclGetRecentErrMsg(void)
{
    memcpy(tl_ret, tl_err, sizeof tl_ret);
    tl_err[0] = '\0';
    return tl_ret;
}

/* ------------------------------------------------------------------------------------------ */
/* Registry of live handles: a sorted array of (address, type).                              */

static struct sim_hentry *h_v;
static size_t h_n, h_cap;

static size_t h_lower(uintptr_t key)
{
    size_t lo = 0, hi = h_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h_v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int sim_reg_add(const void *p, int type)
{
    uintptr_t key = (uintptr_t)p;
    if (h_n == h_cap) {
        size_t cap = h_cap ? h_cap * 2 : 256;
        struct sim_hentry *v = realloc(h_v, cap * sizeof *v);
        if (!v)
            return -1;
        h_v = v;
        h_cap = cap;
    }
    size_t i = h_lower(key);
    if (i < h_n && h_v[i].key == key) {
        h_v[i].type = type; /* cannot happen for live memory; keep the registry consistent */
        return 0;
    }
    memmove(&h_v[i + 1], &h_v[i], (h_n - i) * sizeof *h_v);
    h_v[i].key = key;
    h_v[i].type = type;
    h_n++;
    return 0;
}

int sim_reg_type(const void *p)
{
    uintptr_t key = (uintptr_t)p;
    if (!p)
        return SIM_H_NONE;
    size_t i = h_lower(key);
    return (i < h_n && h_v[i].key == key) ? h_v[i].type : SIM_H_NONE;
}

void sim_reg_del(const void *p)
{
    uintptr_t key = (uintptr_t)p;
    size_t i = h_lower(key);
    if (i < h_n && h_v[i].key == key) {
        memmove(&h_v[i], &h_v[i + 1], (h_n - i - 1) * sizeof *h_v);
        h_n--;
    }
}

size_t sim_reg_count(void)
{
    return h_n;
}

void *sim_reg_at(size_t i, int *type)
{
    if (i >= h_n)
        return NULL;
    if (type)
        *type = h_v[i].type;
    return (void *)h_v[i].key;
}

struct sim_hentry *sim_reg_take_all(size_t *n)
{
    struct sim_hentry *all = malloc((h_n ? h_n : 1) * sizeof *all);
    if (!all)
        return NULL;
    if (h_n)
        memcpy(all, h_v, h_n * sizeof *all);
    *n = h_n;
    h_n = 0;
    return all;
}

/* ------------------------------------------------------------------------------------------ */
/* Device blocks: a sorted array of non-overlapping ranges.                                  */

static struct sim_block *b_v;
static size_t b_n, b_cap;

/* index of the first block with start > p */
static size_t b_upper(uintptr_t p)
{
    size_t lo = 0, hi = b_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b_v[mid].start <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int sim_block_add(const struct sim_block *b)
{
    if (b_n == b_cap) {
        size_t cap = b_cap ? b_cap * 2 : 64;
        struct sim_block *v = realloc(b_v, cap * sizeof *v);
        if (!v)
            return -1;
        b_v = v;
        b_cap = cap;
    }
    size_t i = b_upper(b->start);
    memmove(&b_v[i + 1], &b_v[i], (b_n - i) * sizeof *b_v);
    b_v[i] = *b;
    b_n++;
    return 0;
}

struct sim_block *sim_block_exact(uintptr_t p)
{
    size_t i = b_upper(p);
    if (i == 0 || b_v[i - 1].start != p)
        return NULL;
    return &b_v[i - 1];
}

struct sim_block *sim_block_holding(uintptr_t lo, uintptr_t hi)
{
    size_t i = b_upper(lo);
    if (i == 0 || hi <= lo)
        return NULL;
    struct sim_block *b = &b_v[i - 1];
    if (lo >= b->start && hi <= b->start + b->size)
        return b;
    return NULL;
}

struct sim_block *sim_block_overlapping(uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return NULL;
    size_t i = b_upper(hi - 1); /* blocks with start <= hi-1 are candidates; the last one */
    if (i == 0)
        return NULL;
    struct sim_block *b = &b_v[i - 1];
    if (b->start + b->real > lo)
        return b;
    return NULL;
}

void sim_block_del(uintptr_t start)
{
    size_t i = b_upper(start);
    if (i == 0 || b_v[i - 1].start != start)
        return;
    i--;
    memmove(&b_v[i], &b_v[i + 1], (b_n - i - 1) * sizeof *b_v);
    b_n--;
}

size_t sim_block_count(void)
{
    return b_n;
}

const struct sim_block *sim_block_at(size_t i)
{
    return i < b_n ? &b_v[i] : NULL;
}

void sim_block_clear(void)
{
    b_n = 0;
}

/* ------------------------------------------------------------------------------------------ */

uint64_t sim_next_serial(void)
{
    return sim_g.next_serial++;
}

struct sim_context *sim_ctx_current(void)
{
    struct sim_context *c = sim_tls.ctx;
    if (!c || sim_reg_type(c) != SIM_H_CONTEXT)
        return NULL;
    if (c->serial != sim_tls.ctx_serial || c->dying)
        return NULL;
    return c;
}

void sim_ctx_set_current(struct sim_context *c)
{
    sim_tls.ctx = c;
    sim_tls.ctx_serial = c ? c->serial : 0;
}

int sim_dtype_bits(int dtype)
{
    switch (dtype) {
    case SIM_DT_FLOAT: return 32;
    case SIM_DT_FLOAT16: return 16;
    case SIM_DT_INT8: return 8;
    case SIM_DT_INT32: return 32;
    case SIM_DT_UINT8: return 8;
    case SIM_DT_INT16: return 16;
    case SIM_DT_UINT16: return 16;
    case SIM_DT_UINT32: return 32;
    case SIM_DT_INT64: return 64;
    case SIM_DT_UINT64: return 64;
    case SIM_DT_DOUBLE: return 64;
    case SIM_DT_BOOL: return 8;
    case SIM_DT_COMPLEX64: return 64;
    case SIM_DT_COMPLEX128: return 128;
    case SIM_DT_BF16: return 16;
    case SIM_DT_INT4: return 4;
    case SIM_DT_UINT1: return 1;
    case SIM_DT_COMPLEX32: return 32;
    case SIM_DT_HIFLOAT8: return 8;
    case SIM_DT_FLOAT8_E5M2: return 8;
    case SIM_DT_FLOAT8_E4M3FN: return 8;
    case SIM_DT_FLOAT8_E8M0: return 8;
    case SIM_DT_FLOAT4_E2M1: return 4;
    case SIM_DT_FLOAT4_E1M2: return 4;
    default: return 0; /* UNDEFINED, STRING, FLOAT6 (packing unknown), unassigned values */
    }
}

const char *sim_memcpy_kind_name(int kind)
{
    static const char *const names[] = {
        "ACL_MEMCPY_HOST_TO_HOST", "ACL_MEMCPY_HOST_TO_DEVICE", "ACL_MEMCPY_DEVICE_TO_HOST",
        "ACL_MEMCPY_DEVICE_TO_DEVICE", "ACL_MEMCPY_DEFAULT", "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE",
        "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE", "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE",
    };
    if (kind < 0 || kind > 7)
        return "(invalid aclrtMemcpyKind)";
    return names[kind];
}

/* ------------------------------------------------------------------------------------------ */
/* Controls                                                                                   */

void aclsim_set_hooks(aclsim_prepare_hook prepare, aclsim_run_hook run)
{
    SIM_LOCK();
    /* other hooks may decide otherwise: forget what these decided */
    sim_g.decisions_changed += sim_g.prepare != prepare || sim_g.run != run;
    sim_g.prepare = prepare;
    sim_g.run = run;
    SIM_UNLOCK();
}

void aclsim_set_kernels(int on)
{
    SIM_LOCK();
    sim_g.decisions_changed += sim_g.kernels_off != !on;
    sim_g.kernels_off = !on;
    SIM_UNLOCK();
}

int aclsim_set_soc_name(const char *name)
{
    if (name && (name[0] == '\0' || strlen(name) >= SIM_NAME_CAP)) {
        sim_err("aclsim_set_soc_name: the name must be 1..%d characters", SIM_NAME_CAP - 1);
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    sim_g.decisions_changed += name ? !sim_g.soc_set || strcmp(sim_g.soc, name) != 0 : sim_g.soc_set;
    if (name) {
        snprintf(sim_g.soc, sizeof sim_g.soc, "%s", name);
        sim_g.soc_set = 1;
    } else {
        sim_g.soc[0] = '\0';
        sim_g.soc_set = 0;
    }
    SIM_UNLOCK();
    return SIM_OK;
}

static int ieq_prefix(const char *s, const char *tag, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (s[k] == '\0' || tolower((unsigned char)s[k]) != tag[k])
            return 0;
    return 1;
}

static int parse_uint(const char **p, long *out, long max)
{
    const char *q = *p;
    long v = 0;
    if (!isdigit((unsigned char)*q))
        return -1;
    while (isdigit((unsigned char)*q)) {
        v = v * 10 + (*q - '0');
        if (v > max)
            return -1;
        q++;
    }
    *p = q;
    *out = v;
    return 0;
}

/* "alpha.N" / "betaN" / "rc.N" -> offset from the release number */
static int parse_pre(const char **p, long *adjust)
{
    static const struct {
        const char *tag;
        long base;
    } tags[] = {{"alpha", -300}, {"beta", -200}, {"rc", -100}};
    for (size_t k = 0; k < sizeof tags / sizeof tags[0]; k++) {
        size_t n = strlen(tags[k].tag);
        if (ieq_prefix(*p, tags[k].tag, n)) {
            const char *q = *p + n;
            long num;
            if (*q == '.')
                q++;
            if (parse_uint(&q, &num, 99) != 0 || num < 1)
                return -1;
            *p = q;
            *adjust = tags[k].base + num;
            return 0;
        }
    }
    return -1;
}

/* CANN version -> aclsysGetVersionNum's number: major*10000000 + minor*100000 + patch*1000;
 * a pre-release alpha.N / beta.N / rc.N is the release number minus 300 / 200 / 100 plus N
 * (so 8.5.0-beta.1 -> 80499801 < 8.5.0 -> 80500000). Accepted: "X.Y.Z", "X.Y.Z-beta.1",
 * "X.Y.Z.rc1", and the old "X.Y.RC1" (patch 0). Returns 0 on success. */
int sim_version_num(const char *s, int32_t *out)
{
    const char *p = s;
    long major, minor, patch = 0, adjust = 0;
    if (!s || parse_uint(&p, &major, 200) != 0 || *p++ != '.' || parse_uint(&p, &minor, 99) != 0 ||
        *p++ != '.')
        return -1;
    if (isdigit((unsigned char)*p)) {
        if (parse_uint(&p, &patch, 99) != 0)
            return -1;
        if (*p == '.' || *p == '-') {
            p++;
            if (parse_pre(&p, &adjust) != 0)
                return -1;
        }
    } else if (parse_pre(&p, &adjust) != 0 || adjust < -100) {
        return -1; /* only "RCn" stands in for the patch field */
    }
    if (*p != '\0')
        return -1;
    *out = (int32_t)(major * 10000000L + minor * 100000L + patch * 1000L + adjust);
    return 0;
}

/* The release the simulator reports until one is set: the newest release the specs of its ops
 * describe, which the generated sim_ops.c states (aclsim_specs_release); 8.5.0 for a core built
 * without it. */
__attribute__((weak)) const char *aclsim_specs_release(void)
{
    return NULL;
}

static const char *default_version(void)
{
    const char *v = aclsim_specs_release();
    int32_t num;
    return v && strlen(v) < SIM_VERSION_CAP && sim_version_num(v, &num) == 0 ? v : "8.5.0";
}

void sim_version_copy_locked(char out[SIM_VERSION_CAP])
{
    snprintf(out, SIM_VERSION_CAP, "%s", sim_g.version[0] ? sim_g.version : default_version());
}

void sim_version_copy(char out[SIM_VERSION_CAP])
{
    SIM_LOCK();
    sim_version_copy_locked(out);
    SIM_UNLOCK();
}

int aclsim_set_version(const char *version)
{
    int32_t num;
    const char *v = version ? version : default_version();
    if (strlen(v) >= SIM_VERSION_CAP || sim_version_num(v, &num) != 0) {
        sim_err("aclsim_set_version: '%.80s' is not a CANN version such as 8.5.0, 9.0.0-beta.1 "
                "or 8.0.RC1",
                v);
        return SIM_ACL_INVALID_PARAM;
    }
    SIM_LOCK();
    sim_g.decisions_changed += strcmp(sim_g.version, v) != 0;
    snprintf(sim_g.version, sizeof sim_g.version, "%s", v);
    SIM_UNLOCK();
    return SIM_OK;
}

int aclsim_set_device_count(int count)
{
    int rc = SIM_OK;
    SIM_LOCK();
    if (count < 1 || count > SIM_MAX_DEVICES) {
        sim_err("aclsim_set_device_count: %d is outside 1..%d", count, SIM_MAX_DEVICES);
        rc = SIM_RT_PARAM_INVALID;
    } else {
        for (int d = 0; d < sim_g.device_count; d++)
            if (sim_g.dev[d].refcount > 0 || sim_g.dev[d].default_ctx) {
                sim_err("aclsim_set_device_count: device %d is set; reset it first", d);
                rc = SIM_RT_PARAM_INVALID;
                break;
            }
        if (rc == SIM_OK)
            sim_g.device_count = count;
    }
    SIM_UNLOCK();
    return rc;
}

void aclsim_get_counters(struct aclsim_counters *out)
{
    if (!out)
        return;
    SIM_LOCK();
    *out = sim_g.counters;
    SIM_UNLOCK();
}

void aclsim_free(void *ptr)
{
    free(ptr);
}
