/* sim_op.c: the generic two-phase op protocol, executors, stream queues and the executor view.
 *
 * Lifecycle of an executor:
 *   sim_prepare   -> live, "preparing" while the prepare hook runs, then ready
 *   sim_launch    -> queued on a stream (launched); a second launch fails unless repeatable
 *   stream sync   -> the run hook runs; afterwards a non-repeatable executor is freed
 *   aclDestroyAclOpExecutor -> (repeatable, or never launched) freed now, or after its queued
 *                              runs if it has any
 * Arguments are snapshotted at prepare, so descriptors may be destroyed right after launch.
 *
 * Streams are FIFO queues. A NULL stream is the default stream of the calling thread's current
 * context; aclrtSynchronizeStream(NULL) drains that one. Each launch records the device byte
 * ranges it reads and writes; freeing or copying over them before the launch has run fails.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIM_MAX_STRING_ARG = 65536 };

static int kind_valid(int k)
{
    return k >= SIM_ARG_TENSOR_IN && k <= SIM_ARG_TENSOR_INOUT;
}

static int kind_is_tensor_list(int k)
{
    return k == SIM_ARG_TENSOR_LIST_IN || k == SIM_ARG_TENSOR_LIST_OUT ||
           k == SIM_ARG_TENSOR_LIST_OPTIONAL;
}

static int kind_is_list(int k)
{
    return kind_is_tensor_list(k) || k == SIM_ARG_SCALAR_LIST;
}

static int kind_is_tensor(int k)
{
    return k == SIM_ARG_TENSOR_IN || k == SIM_ARG_TENSOR_OUT || k == SIM_ARG_TENSOR_OPTIONAL ||
           k == SIM_ARG_TENSOR_OUT_OPTIONAL || k == SIM_ARG_TENSOR_INOUT;
}

static int kind_writes(int k)
{
    return k == SIM_ARG_TENSOR_OUT || k == SIM_ARG_TENSOR_OUT_OPTIONAL ||
           k == SIM_ARG_TENSOR_LIST_OUT || k == SIM_ARG_TENSOR_INOUT;
}

static int kind_optional(int k)
{
    return k == SIM_ARG_TENSOR_OPTIONAL || k == SIM_ARG_TENSOR_OUT_OPTIONAL ||
           k == SIM_ARG_SCALAR_OPTIONAL || k == SIM_ARG_STRING_OPTIONAL ||
           k == SIM_ARG_INT_ARRAY_OPTIONAL || k == SIM_ARG_TENSOR_LIST_OPTIONAL;
}

static int kind_has_handle(int k)
{
    return k != SIM_ARG_BOOL && k != SIM_ARG_INT64;
}

/* registry type the handle must have; 0 for raw pointers (DOUBLE, STRING) */
static int kind_handle_type(int k)
{
    switch (k) {
    case SIM_ARG_TENSOR_IN:
    case SIM_ARG_TENSOR_OUT:
    case SIM_ARG_TENSOR_OPTIONAL:
    case SIM_ARG_TENSOR_OUT_OPTIONAL:
    case SIM_ARG_TENSOR_INOUT: return SIM_H_TENSOR;
    case SIM_ARG_SCALAR:
    case SIM_ARG_SCALAR_OPTIONAL: return SIM_H_SCALAR;
    case SIM_ARG_INT_ARRAY:
    case SIM_ARG_INT_ARRAY_OPTIONAL: return SIM_H_INT_ARRAY;
    case SIM_ARG_FLOAT_ARRAY: return SIM_H_FLOAT_ARRAY;
    case SIM_ARG_BOOL_ARRAY: return SIM_H_BOOL_ARRAY;
    case SIM_ARG_TENSOR_LIST_IN:
    case SIM_ARG_TENSOR_LIST_OUT:
    case SIM_ARG_TENSOR_LIST_OPTIONAL: return SIM_H_TENSOR_LIST;
    case SIM_ARG_SCALAR_LIST: return SIM_H_SCALAR_LIST;
    default: return 0;
    }
}

static const char *handle_type_name(int type)
{
    switch (type) {
    case SIM_H_TENSOR: return "aclTensor";
    case SIM_H_SCALAR: return "aclScalar";
    case SIM_H_INT_ARRAY: return "aclIntArray";
    case SIM_H_FLOAT_ARRAY: return "aclFloatArray";
    case SIM_H_BOOL_ARRAY: return "aclBoolArray";
    case SIM_H_TENSOR_LIST: return "aclTensorList";
    case SIM_H_SCALAR_LIST: return "aclScalarList";
    default: return "handle";
    }
}

/* Byte range [lo, hi) a tensor's elements span. 0: empty tensor (no range), 1: set, -1: the
 * extent overflows. Strides are in elements and non-negative (checked at creation). */
static int tensor_extent(const aclTensor *t, uintptr_t *lo, uintptr_t *hi)
{
    for (int64_t k = 0; k < t->ndim; k++)
        if (t->dims[k] == 0)
            return 0;
    uint64_t maxidx = (uint64_t)t->offset;
    for (int64_t k = 0; k < t->ndim; k++) {
        uint64_t term;
        if (__builtin_mul_overflow((uint64_t)(t->dims[k] - 1), (uint64_t)t->strides[k], &term) ||
            __builtin_add_overflow(maxidx, term, &maxidx))
            return -1;
    }
    int bits = sim_dtype_bits(t->dtype);
    if (bits == 0)
        bits = 8; /* unknown width: assume one byte per element */
    uint64_t lo_bits, hi_bits, end;
    if (__builtin_add_overflow(maxidx, 1, &end) ||
        __builtin_mul_overflow((uint64_t)t->offset, (uint64_t)bits, &lo_bits) ||
        __builtin_mul_overflow(end, (uint64_t)bits, &hi_bits))
        return -1;
    uint64_t lo_b = lo_bits / 8, hi_b = hi_bits / 8 + (hi_bits % 8 != 0);
    uintptr_t base = (uintptr_t)t->data;
    if (__builtin_add_overflow(base, (uintptr_t)lo_b, lo) ||
        __builtin_add_overflow(base, (uintptr_t)hi_b, hi))
        return -1;
    return 1;
}

/* Frees what a snapshot owns (a list's elements too), not the struct itself. */
static void xarg_free(struct sim_xarg *a)
{
    free(a->name);
    free(a->dims); /* with strides and storage_dims: one block (snapshot_tensor) */
    free(a->buf);
    if (a->items) {
        for (int64_t k = 0; k < a->count; k++)
            xarg_free(&a->items[k]);
        free(a->items);
    }
}

void sim_executor_free_locked(aclOpExecutor *ex)
{
    sim_reg_del(ex);
    sim_g.counters.executors--;
    sim_memo_key_free(ex->key);
    sim_memo_launch_release_locked(ex->launch);
    for (int i = 0; i < ex->nargs; i++)
        xarg_free(&ex->args[i]);
    free(ex->args);
    free(ex->ranges);
    free(ex->op);
    free(ex);
}

static void executor_release_if_done_locked(aclOpExecutor *ex)
{
    if (ex->pending || ex->running || ex->preparing)
        return;
    if (ex->destroyed || (ex->launched && !ex->repeatable))
        sim_executor_free_locked(ex);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int snapshot_tensor(struct sim_xarg *x, const aclTensor *t)
{
    size_t nd = (size_t)t->ndim, ns = (size_t)t->storage_ndim;
    /* one block for the three arrays (one allocation per argument, not three); freed through dims */
    x->dims = malloc((2 * nd + ns ? 2 * nd + ns : 1) * sizeof(int64_t));
    if (!x->dims)
        return -1;
    x->strides = x->dims + nd;
    x->storage_dims = x->dims + 2 * nd;
    memcpy(x->dims, t->dims, nd * sizeof(int64_t));
    memcpy(x->strides, t->strides, nd * sizeof(int64_t));
    memcpy(x->storage_dims, t->storage_dims, ns * sizeof(int64_t));
    x->ndim = t->ndim;
    x->storage_ndim = t->storage_ndim;
    x->offset = t->offset;
    x->dtype = t->dtype;
    x->format = t->format;
    x->data = t->data;
    return 0;
}

static void snapshot_scalar(struct sim_xarg *x, const aclScalar *s)
{
    x->dtype = s->dtype;
    x->sv = s->v;
    x->nbytes = s->nbytes;
    x->count = 1;
}

/* A list's elements, each snapshotted as a tensor or a scalar named "name[k]". Elements are
 * never NULL: aclCreateTensorList and aclCreateScalarList refuse NULL ones. */
static int snapshot_list(struct sim_xarg *x, const void *handle, const char *name)
{
    int scalars = x->kind == SIM_ARG_SCALAR_LIST;
    uint64_t n = scalars ? ((const aclScalarList *)handle)->n : ((const aclTensorList *)handle)->n;
    x->items = calloc(n ? n : 1, sizeof *x->items);
    if (!x->items)
        return -1;
    x->count = (int64_t)n;
    size_t len = strlen(name) + 24;
    for (uint64_t k = 0; k < n; k++) {
        struct sim_xarg *item = &x->items[k];
        item->kind = scalars ? SIM_ARG_SCALAR
                     : x->kind == SIM_ARG_TENSOR_LIST_OUT ? SIM_ARG_TENSOR_OUT
                                                          : SIM_ARG_TENSOR_IN;
        item->name = malloc(len);
        if (!item->name)
            return -1;
        snprintf(item->name, len, "%s[%llu]", name, (unsigned long long)k);
        if (scalars)
            snapshot_scalar(item, ((const aclScalarList *)handle)->v[k]);
        else if (snapshot_tensor(item, ((const aclTensorList *)handle)->v[k]) != 0)
            return -1;
    }
    return 0;
}

/* Copies one argument into x. Returns 0, or -1 when host memory ran out. */
static int snapshot_arg(struct sim_xarg *x, const sim_arg *a, const char *name)
{
    x->kind = (int)a->kind;
    x->name = dup_str(name);
    if (!x->name)
        return -1;
    if (kind_has_handle(x->kind) && !a->handle) {
        x->is_null = 1;
        return 0;
    }
    switch (x->kind) {
    case SIM_ARG_TENSOR_IN:
    case SIM_ARG_TENSOR_OUT:
    case SIM_ARG_TENSOR_OPTIONAL:
    case SIM_ARG_TENSOR_OUT_OPTIONAL:
    case SIM_ARG_TENSOR_INOUT:
        return snapshot_tensor(x, a->handle);
    case SIM_ARG_SCALAR:
    case SIM_ARG_SCALAR_OPTIONAL:
        snapshot_scalar(x, a->handle);
        return 0;
    case SIM_ARG_TENSOR_LIST_IN:
    case SIM_ARG_TENSOR_LIST_OUT:
    case SIM_ARG_TENSOR_LIST_OPTIONAL:
    case SIM_ARG_SCALAR_LIST:
        return snapshot_list(x, a->handle, name);
    case SIM_ARG_BOOL:
        x->i = a->i != 0;
        return 0;
    case SIM_ARG_INT64:
        x->i = a->i;
        return 0;
    case SIM_ARG_DOUBLE:
        memcpy(&x->f, a->handle, sizeof x->f);
        return 0;
    case SIM_ARG_STRING:
    case SIM_ARG_STRING_OPTIONAL: {
        size_t n = strnlen(a->handle, SIM_MAX_STRING_ARG); /* bounded by the caller's check */
        x->buf = malloc(n + 1);
        if (!x->buf)
            return -1;
        memcpy(x->buf, a->handle, n);
        ((char *)x->buf)[n] = '\0';
        x->nbytes = (int64_t)n;
        x->count = (int64_t)n;
        return 0;
    }
    default: { /* the three array kinds share struct aclIntArray */
        const struct aclIntArray *arr = a->handle;
        size_t elem = x->kind == SIM_ARG_FLOAT_ARRAY ? sizeof(float)
                      : x->kind == SIM_ARG_BOOL_ARRAY ? sizeof(bool)
                                                        : sizeof(int64_t);
        size_t bytes = (size_t)arr->n * elem;
        x->buf = malloc(bytes ? bytes : 1);
        if (!x->buf)
            return -1;
        if (bytes)
            memcpy(x->buf, arr->v, bytes);
        x->nbytes = (int64_t)bytes;
        x->count = (int64_t)arr->n;
        return 0;
    }
    }
}

/* Frees a snapshot that never got registered. */
static void executor_discard_unregistered(aclOpExecutor *ex)
{
    sim_g.counters.executors++; /* sim_executor_free_locked decrements */
    sim_executor_free_locked(ex);
}

/* 0. the argument table itself: a bad one is an internal error of the generated entry point */
static int check_arg_table(const char *opn, const sim_arg *args, int nargs)
{
    if (nargs < 0 || (nargs > 0 && !args)) {
        sim_err("%sGetWorkspaceSize: internal error: bad argument table", opn);
        return SIM_NN_INNER;
    }
    for (int i = 0; i < nargs; i++) {
        int k = (int)args[i].kind;
        if (!kind_valid(k)) {
            sim_err("%sGetWorkspaceSize: internal error: argument %d has unknown kind %d", opn, i,
                    k);
            return SIM_NN_INNER;
        }
        if (k == SIM_ARG_DOUBLE && !args[i].handle) {
            sim_err("%sGetWorkspaceSize: internal error: DOUBLE argument %d has no value", opn, i);
            return SIM_NN_INNER;
        }
    }
    return SIM_OK;
}

/* 1. null required handles, and strings that are not terminated */
/* The first required handle argument that is NULL, or -1. */
static int first_null_required(const sim_arg *args, int nargs)
{
    for (int i = 0; i < nargs; i++) {
        int k = (int)args[i].kind;
        if (kind_has_handle(k) && !kind_optional(k) && !args[i].handle)
            return i;
    }
    return -1;
}

static int null_required_error(const char *opn, const char *name, int i)
{
    char namebuf[32];
    snprintf(namebuf, sizeof namebuf, "argument %d", i);
    sim_err("%sGetWorkspaceSize: %s is a null pointer (ACLNN_ERR_PARAM_NULLPTR)", opn,
            name ? name : namebuf);
    return SIM_NN_PARAM_NULLPTR;
}

/* 1. required handles (refused here unless `defer_nulls`: the prepare hook then decides, see
 * ACLSIM_NULL_REQUIRED_ARG) and strings */
static int check_required_args(const char *opn, const sim_arg *args, int nargs, int defer_nulls)
{
    for (int i = 0; i < nargs; i++) {
        int k = (int)args[i].kind;
        if (!defer_nulls && kind_has_handle(k) && !kind_optional(k) && !args[i].handle)
            return null_required_error(opn, args[i].name, i);
        if ((k == SIM_ARG_STRING || k == SIM_ARG_STRING_OPTIONAL) && args[i].handle &&
            strnlen(args[i].handle, SIM_MAX_STRING_ARG) == SIM_MAX_STRING_ARG) {
            sim_err("%sGetWorkspaceSize: string %s is not terminated within %d bytes", opn,
                    args[i].name ? args[i].name : "argument", SIM_MAX_STRING_ARG);
            return SIM_NN_PARAM_INVALID;
        }
    }
    return SIM_OK;
}

/* 2. handles must be live and of the right type */
static int check_live_handles_locked(const char *opn, const sim_arg *args, int nargs)
{
    char namebuf[32];
    for (int i = 0; i < nargs; i++) {
        int type = kind_handle_type((int)args[i].kind);
        if (type && args[i].handle && sim_reg_type(args[i].handle) != type) {
            snprintf(namebuf, sizeof namebuf, "argument %d", i);
            sim_err("%sGetWorkspaceSize: %s (%p) is not a live %s", opn,
                    args[i].name ? args[i].name : namebuf, args[i].handle,
                    handle_type_name(type));
            return SIM_NN_PARAM_INVALID;
        }
    }
    return SIM_OK;
}

/* The byte range of one tensor with data, appended to v (nothing for an empty tensor), or the
 * status of its problem. */
static int tensor_range(const char *opn, const char *name, const aclTensor *t, int arg,
                        int writes, struct sim_range *v, int *n)
{
    uintptr_t lo, hi;
    int ext = tensor_extent(t, &lo, &hi);
    if (ext == 0)
        return SIM_OK;
    if (ext < 0) {
        sim_err("%sGetWorkspaceSize: the extent of %s (offset, dims and strides) overflows", opn,
                name);
        return SIM_NN_PARAM_INVALID;
    }
    if ((uintptr_t)t->data % 32 != 0) {
        sim_err("%sGetWorkspaceSize: the data address %p of %s is not 32-byte aligned", opn,
                t->data, name);
        return SIM_NN_PARAM_INVALID;
    }
    struct sim_block *b = sim_block_holding(lo, hi);
    if (!b) {
        if (sim_block_overlapping(lo, hi))
            sim_err("%sGetWorkspaceSize: %s spans bytes [%p, %p), which run past the end of its "
                    "device allocation",
                    opn, name, (void *)lo, (void *)hi);
        else
            sim_err("%sGetWorkspaceSize: the data of %s (%p) is not in a live device allocation "
                    "(aclrtMalloc); host memory cannot be used",
                    opn, name, t->data);
        return SIM_NN_PARAM_INVALID;
    }
    struct sim_range *r = &v[(*n)++];
    r->lo = lo;
    r->hi = hi;
    r->block_serial = b->serial;
    r->device = b->device;
    r->arg = arg;
    r->writes = writes;
    return SIM_OK;
}

/* 3. tensor data must lie in device memory: the byte range of each tensor with data, in
 * *ranges (calloc'ed, *nranges entries; NULL when nargs is 0), or an error (nothing to free) */
static int tensor_ranges_locked(const char *opn, const sim_arg *args, int nargs,
                                struct sim_range **ranges, int *nranges)
{
    *ranges = NULL;
    *nranges = 0;
    if (nargs == 0)
        return SIM_OK;
    size_t total = (size_t)nargs;
    for (int i = 0; i < nargs; i++)
        if (kind_is_tensor_list((int)args[i].kind) && args[i].handle)
            total += ((const aclTensorList *)args[i].handle)->n;
    struct sim_range *v = calloc(total, sizeof *v);
    if (!v) {
        sim_err("%sGetWorkspaceSize: out of host memory", opn);
        return SIM_NN_INNER;
    }
    int n = 0;
    for (int i = 0; i < nargs; i++) {
        int k = (int)args[i].kind;
        if (!args[i].handle || !(kind_is_tensor(k) || kind_is_tensor_list(k)))
            continue;
        const char *name = args[i].name ? args[i].name : "tensor";
        int rc = SIM_OK;
        if (kind_is_tensor(k)) {
            rc = tensor_range(opn, name, args[i].handle, i, kind_writes(k), v, &n);
        } else {
            const aclTensorList *l = args[i].handle;
            for (uint64_t e = 0; rc == SIM_OK && e < l->n; e++)
                rc = tensor_range(opn, name, l->v[e], i, kind_writes(k), v, &n);
        }
        if (rc != SIM_OK) {
            free(v);
            return rc;
        }
    }
    *ranges = v;
    *nranges = n;
    return SIM_OK;
}

/* 4. snapshot: a registered executor, "preparing", holding copies of the arguments and the
 * ranges (taken over: freed whatever happens) */
static int snapshot_executor_locked(const char *opid, const char *opn, const sim_arg *args,
                                    int nargs, struct sim_range *ranges, int nranges,
                                    unsigned flags, aclOpExecutor **out)
{
    char namebuf[32];
    aclOpExecutor *ex = calloc(1, sizeof *ex);
    if (ex) {
        ex->op = dup_str(opid); /* the full identity: the hooks need the package */
        ex->args = calloc((size_t)(nargs ? nargs : 1), sizeof *ex->args);
        ex->ranges = ranges;
        ex->nranges = nranges;
        ranges = NULL;
        ex->flags = flags;
        ex->serial = sim_next_serial();
    }
    free(ranges);
    int ok = ex && ex->op && ex->args;
    for (int i = 0; ok && i < nargs; i++) {
        snprintf(namebuf, sizeof namebuf, "arg%d", i);
        ex->nargs = i + 1;
        ok = snapshot_arg(&ex->args[i], &args[i], args[i].name ? args[i].name : namebuf) == 0;
    }
    if (ok && sim_reg_add(ex, SIM_H_EXECUTOR) != 0)
        ok = 0;
    if (!ok) {
        if (ex)
            executor_discard_unregistered(ex);
        sim_err("%sGetWorkspaceSize: out of host memory", opn);
        return SIM_NN_INNER;
    }
    sim_g.counters.executors++;
    ex->preparing = 1;
    sim_g.hooks_running++;
    *out = ex;
    return SIM_OK;
}

/* after the prepare hook decided (status st): the executor is handed out, or freed */
static int finish_prepare_locked(const char *opn, aclOpExecutor *ex, int st, const char *msg,
                                 uint64_t ws, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    sim_g.hooks_running--;
    ex->preparing = 0;
    if (st != SIM_OK) {
        if (msg[0])
            sim_err("%sGetWorkspaceSize: %s", opn, msg);
        else
            sim_err("%sGetWorkspaceSize: rejected by the op's checks (status %d)", opn, st);
    } else if (ex->flags & ACLSIM_NULL_REQUIRED_ARG) {
        /* the hook did not take it up: the core's own null check */
        for (int i = 0; i < ex->nargs; i++) {
            int k = ex->args[i].kind;
            if (ex->args[i].is_null && kind_has_handle(k) && !kind_optional(k)) {
                st = null_required_error(opn, ex->args[i].name, i);
                break;
            }
        }
    } else if (ex->flags) {
        sim_err("%sGetWorkspaceSize: %s is NULL and the op's behaviour profile does not check it; "
                "the real library would dereference a null pointer",
                opn, (ex->flags & ACLSIM_NULL_WORKSPACE_SIZE_PTR) ? "workspaceSize" : "executor");
        st = SIM_NN_INNER_NULLPTR;
    }
    if (st != SIM_OK) {
        sim_executor_free_locked(ex);
    } else {
        ex->workspace_size = ws;
        *workspaceSize = ws;
        *executor = ex;
    }
    return st;
}

/* 5. the prepare hook decides (called with the lock released: it may call back into the
 * library), then the executor is handed out or freed */
static int run_prepare_hook(const char *opid, const char *opn, aclOpExecutor *ex,
                            aclsim_prepare_hook hook, int kernels_off, uint64_t *workspaceSize,
                            aclOpExecutor **executor)
{
    char msg[ACLSIM_HOOK_MESSAGE_CAP];
    msg[0] = '\0';
    uint64_t ws = 0;
    int st = SIM_OK;
    if (!kernels_off) {
        sim_tls.in_hook++;
        st = hook(opid, ex, &ws, msg, sizeof msg);
        sim_tls.in_hook--;
    }
    msg[sizeof msg - 1] = '\0';

    SIM_LOCK();
    if (!kernels_off) {
        sim_memo_count_hook_locked(0);
        sim_memo_after_prepare_locked(ex, st, ws, msg);
    }
    st = finish_prepare_locked(opn, ex, st, msg, ws, workspaceSize, executor);
    pthread_cond_broadcast(&sim_cv);
    SIM_UNLOCK();
    return st;
}

aclnnStatus sim_prepare(const char *op, const sim_arg *args, int nargs, uint64_t *workspaceSize,
                        aclOpExecutor **executor)
{
    const char *opid = (op && op[0]) ? op : "(unnamed op)";
    const char *opn = sim_op_symbol(opid);

    int rc = check_arg_table(opn, args, nargs); /* 0 */
    SIM_LOCK();
    int hooked = sim_g.prepare && !sim_g.kernels_off;
    SIM_UNLOCK();
    if (rc == SIM_OK)
        rc = check_required_args(opn, args, nargs, hooked); /* 1 */
    if (rc != SIM_OK)
        return rc;
    unsigned flags = 0;
    if (first_null_required(args, nargs) >= 0)
        flags |= ACLSIM_NULL_REQUIRED_ARG;
    if (!workspaceSize)
        flags |= ACLSIM_NULL_WORKSPACE_SIZE_PTR;
    if (!executor)
        flags |= ACLSIM_NULL_EXECUTOR_PTR;

    SIM_LOCK();
    struct sim_range *ranges = NULL;
    int nranges = 0;
    rc = check_live_handles_locked(opn, args, nargs); /* 2 */
    if (rc == SIM_OK)
        rc = tensor_ranges_locked(opn, args, nargs, &ranges, &nranges); /* 3 */
    aclsim_prepare_hook hook = sim_g.prepare;
    int kernels_off = sim_g.kernels_off;
    if (rc == SIM_OK && !hook && !kernels_off) {
        sim_err("%sGetWorkspaceSize: no kernel is registered in the simulator (no prepare hook; "
                "ACLNN_ERR_INNER_FIND_KERNEL_ERROR)",
                opn);
        rc = SIM_NN_INNER_FIND_KERNEL;
    }
    aclOpExecutor *ex = NULL;
    if (rc == SIM_OK)
        rc = snapshot_executor_locked(opid, opn, args, nargs, ranges, nranges, flags, &ex); /* 4 */
    else
        free(ranges);
    if (rc == SIM_OK && !kernels_off) {
        /* 5, for a signature the hook answered before and let the core remember */
        char msg[ACLSIM_HOOK_MESSAGE_CAP];
        uint64_t ws = 0;
        int st = SIM_OK;
        ex->key = sim_memo_key_locked(ex);
        if (sim_memo_prepare_locked(ex, &st, &ws, msg, sizeof msg)) {
            rc = finish_prepare_locked(opn, ex, st, msg, ws, workspaceSize, executor);
            pthread_cond_broadcast(&sim_cv);
            SIM_UNLOCK();
            return rc;
        }
    }
    SIM_UNLOCK();
    if (rc != SIM_OK)
        return rc;

    return run_prepare_hook(opid, opn, ex, hook, kernels_off, workspaceSize, executor); /* 5 */
}

/* 1. the executor (live, prepared by this op, not run yet unless repeatable) and the workspace
 * (as large as announced, inside one live device allocation: *wb, its end in *whi) */
static int check_executor_and_workspace_locked(const char *opid, const char *opn,
                                               aclOpExecutor *ex, void *workspace,
                                               uint64_t workspaceSize, struct sim_block **wb,
                                               uintptr_t *whi)
{
    uintptr_t wlo = (uintptr_t)workspace;
    int use_ws = workspace && workspaceSize > 0;
    if (sim_reg_type(ex) != SIM_H_EXECUTOR || ex->destroyed) {
        sim_err("%s: executor %p is not live: it already ran, was destroyed, or never existed "
                "(an executor runs once unless aclSetAclOpExecutorRepeatable)",
                opn, (void *)ex);
        return SIM_NN_PARAM_INVALID;
    }
    if (ex->preparing) {
        sim_err("%s: executor %p is still being prepared", opn, (void *)ex);
        return SIM_NN_PARAM_INVALID;
    }
    if (strcmp(ex->op, opid) != 0) {
        sim_err("%s: executor %p was made by %sGetWorkspaceSize (op %s, not %s)", opn,
                (void *)ex, sim_op_symbol(ex->op), ex->op, opid);
        return SIM_NN_PARAM_INVALID;
    }
    if (ex->launched && !ex->repeatable) {
        sim_err("%s: executor already ran (launch it once, or call "
                "aclSetAclOpExecutorRepeatable first)",
                opn);
        return SIM_NN_PARAM_INVALID;
    }
    if (workspaceSize < ex->workspace_size) {
        sim_err("%s: workspaceSize %llu is smaller than the %llu bytes GetWorkspaceSize "
                "announced",
                opn, (unsigned long long)workspaceSize, (unsigned long long)ex->workspace_size);
        return SIM_NN_PARAM_INVALID;
    }
    if (ex->workspace_size > 0 && !workspace) {
        sim_err("%s: workspace is a null pointer but %llu bytes were announced", opn,
                (unsigned long long)ex->workspace_size);
        return SIM_NN_PARAM_NULLPTR;
    }
    if (use_ws && (__builtin_add_overflow(wlo, (uintptr_t)workspaceSize, whi) ||
                   !(*wb = sim_block_holding(wlo, *whi)))) {
        sim_err("%s: workspace [%p, +%llu) is not inside one live device allocation", opn,
                workspace, (unsigned long long)workspaceSize);
        return SIM_NN_PARAM_INVALID;
    }
    return SIM_OK;
}

/* 2. the stream: the one given, else the default stream of this thread's current context */
static int launch_stream_locked(const char *opn, aclrtStream stream, struct sim_stream **out)
{
    struct sim_context *ctx = sim_ctx_current();
    if (!ctx) {
        sim_err("%s: no current context in this thread; call aclrtSetDevice or "
                "aclrtSetCurrentContext in this thread first",
                opn);
        return SIM_RT_CONTEXT_NULL;
    }
    struct sim_stream *s = stream ? (struct sim_stream *)stream : ctx->default_stream;
    if (stream && sim_reg_type(s) != SIM_H_STREAM) {
        sim_err("%s: stream %p is not a live stream", opn, stream);
        return SIM_NN_RUNTIME_ERROR;
    }
    if (s->ctx->dying) {
        sim_err("%s: the stream's context is being destroyed", opn);
        return SIM_NN_RUNTIME_ERROR;
    }
    *out = s;
    return SIM_OK;
}

/* 3. the operands' memory is the memory they were prepared with, on the stream's device, and so
 * is the workspace */
static int check_operands_locked(const char *opn, const aclOpExecutor *ex,
                                 const struct sim_block *wb, const struct sim_stream *s)
{
    for (int i = 0; i < ex->nranges; i++) {
        const struct sim_range *r = &ex->ranges[i];
        struct sim_block *b = sim_block_holding(r->lo, r->hi);
        if (!b || b->serial != r->block_serial) {
            sim_err("%s: the device memory of %s was freed after GetWorkspaceSize", opn,
                    ex->args[r->arg].name);
            return SIM_NN_PARAM_INVALID;
        }
        if (r->device != s->ctx->device) {
            sim_err("%s: %s is on device %d but the stream belongs to device %d", opn,
                    ex->args[r->arg].name, r->device, s->ctx->device);
            return SIM_NN_PARAM_INVALID;
        }
    }
    if (wb && wb->device != s->ctx->device) {
        sim_err("%s: the workspace is on device %d but the stream belongs to device %d", opn,
                wb->device, s->ctx->device);
        return SIM_NN_PARAM_INVALID;
    }
    return SIM_OK;
}

/* 4. queue the launch on its stream and on the global list of queued launches */
static int enqueue_launch_locked(const char *opn, aclOpExecutor *ex, struct sim_stream *s,
                                 void *workspace, uint64_t workspaceSize,
                                 const struct sim_block *wb, uintptr_t whi)
{
    struct sim_launch *e = calloc(1, sizeof *e);
    if (!e) {
        sim_err("%s: out of host memory", opn);
        return SIM_NN_INNER;
    }
    e->stream = s;
    e->ex = ex;
    e->workspace = workspace;
    e->workspace_size = workspaceSize;
    if (wb) {
        e->has_ws = 1;
        e->ws.lo = (uintptr_t)workspace;
        e->ws.hi = whi;
        e->ws.block_serial = wb->serial;
        e->ws.device = wb->device;
        e->ws.arg = -1;
        e->ws.writes = 1;
    }
    if (s->tail)
        s->tail->next = e;
    else
        s->head = e;
    s->tail = e;
    e->gnext = sim_g.pending;
    if (sim_g.pending)
        sim_g.pending->gprev = e;
    sim_g.pending = e;
    ex->launched = 1;
    ex->pending++;
    sim_g.counters.queued_launches++;
    return SIM_OK;
}

aclnnStatus sim_launch(const char *op, void *workspace, uint64_t workspaceSize,
                       aclOpExecutor *executor, aclrtStream stream)
{
    const char *opid = (op && op[0]) ? op : "(unnamed op)";
    const char *opn = sim_op_symbol(opid);
    if (!executor) {
        sim_err("%s: executor is a null pointer (ACLNN_ERR_PARAM_NULLPTR)", opn);
        return SIM_NN_PARAM_NULLPTR;
    }
    SIM_LOCK();
    struct sim_block *wb = NULL;
    uintptr_t whi = 0;
    struct sim_stream *s = NULL;
    int rc = check_executor_and_workspace_locked(opid, opn, executor, workspace, workspaceSize,
                                                 &wb, &whi); /* 1 */
    if (rc == SIM_OK)
        rc = launch_stream_locked(opn, stream, &s); /* 2 */
    if (rc == SIM_OK)
        rc = check_operands_locked(opn, executor, wb, s); /* 3 */
    if (rc == SIM_OK)
        rc = enqueue_launch_locked(opn, executor, s, workspace, workspaceSize, wb, whi); /* 4 */
    SIM_UNLOCK();
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* queues                                                                                     */

static int ranges_conflict(const struct sim_range *r, uintptr_t lo, uintptr_t hi,
                           uint64_t block_serial, int writing)
{
    if (!writing && !r->writes)
        return 0; /* two readers never conflict */
    if (block_serial)
        return r->block_serial == block_serial;
    return r->lo < hi && lo < r->hi;
}

int sim_range_busy_locked(uintptr_t lo, uintptr_t hi, uint64_t block_serial, int writing,
                          const struct sim_launch **who)
{
    for (const struct sim_launch *e = sim_g.pending; e; e = e->gnext) {
        if (e == sim_tls.running)
            continue; /* a kernel may copy its own operands */
        for (int i = 0; i < e->ex->nranges; i++)
            if (ranges_conflict(&e->ex->ranges[i], lo, hi, block_serial, writing)) {
                *who = e;
                return 1;
            }
        if (e->has_ws && ranges_conflict(&e->ws, lo, hi, block_serial, writing)) {
            *who = e;
            return 1;
        }
    }
    return 0;
}

static void unlink_launch_locked(struct sim_launch *e)
{
    struct sim_stream *s = e->stream;
    s->head = e->next;
    if (!s->head)
        s->tail = NULL;
    if (e->gprev)
        e->gprev->gnext = e->gnext;
    else
        sim_g.pending = e->gnext;
    if (e->gnext)
        e->gnext->gprev = e->gprev;
    sim_g.counters.queued_launches--;
}

int sim_drain_locked(struct sim_stream *s, const char *who)
{
    uint64_t serial = s->serial;
    if (s->draining) {
        if (pthread_equal(s->drainer, pthread_self())) {
            sim_err("%s: called from inside a kernel running on this same stream", who);
            return SIM_RT_PARAM_INVALID;
        }
        if (sim_tls.in_hook) {
            sim_err("%s: another thread is running this stream's kernels and this call comes "
                    "from inside a kernel; it cannot wait for them",
                    who);
            return SIM_RT_PARAM_INVALID;
        }
        while (s->draining) {
            pthread_cond_wait(&sim_cv, &sim_mu);
            if (sim_reg_type(s) != SIM_H_STREAM || s->serial != serial) {
                sim_err("%s: the stream was destroyed while waiting for it", who);
                return SIM_RT_PARAM_INVALID;
            }
        }
    }
    s->draining = 1;
    s->drainer = pthread_self();
    int first = SIM_OK;
    struct sim_launch *e;
    while ((e = s->head) != NULL) {
        aclOpExecutor *ex = e->ex;
        aclsim_run_hook run = sim_g.run;
        char msg[ACLSIM_HOOK_MESSAGE_CAP];
        msg[0] = '\0';
        int st;
        ex->running++;
        sim_g.hooks_running++;
        int kernels_off = sim_g.kernels_off, hooked = 0;
        int no_work = ex->remembered && ex->no_work;
        struct sim_memo_launch *remembered = kernels_off ? NULL
                                                         : sim_memo_launch_acquire_locked(ex);
        SIM_UNLOCK();
        if (kernels_off || no_work) {
            st = SIM_OK; /* a benchmark of the protocol, or an early return: nothing computed */
        } else if (remembered &&
                   sim_memo_launch_run(remembered, ex, e->workspace, e->workspace_size)) {
            st = SIM_OK; /* the signature's compiled kernel, as the run hook left it */
        } else if (run) {
            const struct sim_launch *saved = sim_tls.running;
            sim_tls.running = e;
            sim_tls.in_hook++;
            st = run(ex->op, ex, e->workspace, e->workspace_size, msg, sizeof msg);
            sim_tls.in_hook--;
            sim_tls.running = saved;
            msg[sizeof msg - 1] = '\0';
            hooked = 1;
        } else {
            st = SIM_NN_INNER_FIND_KERNEL;
            snprintf(msg, sizeof msg, "no kernel is registered in the simulator (no run hook)");
        }
        SIM_LOCK();
        sim_memo_launch_release_locked(remembered);
        if (hooked)
            sim_memo_count_hook_locked(1);
        sim_g.hooks_running--;
        unlink_launch_locked(e);
        ex->running--;
        ex->pending--;
        if (st != SIM_OK && first == SIM_OK) {
            first = SIM_RT_AICORE_EXCEPTION;
            sim_err("%s: kernel %s failed (status %d): %s", who, sim_op_symbol(ex->op), st,
                    msg[0] ? msg : "no message");
        }
        executor_release_if_done_locked(ex);
        free(e);
    }
    s->draining = 0;
    pthread_cond_broadcast(&sim_cv);
    return first;
}

void sim_discard_all_launches_locked(void)
{
    struct sim_launch *e = sim_g.pending;
    while (e) {
        struct sim_launch *next = e->gnext;
        e->stream->head = e->stream->tail = NULL;
        e->ex->pending--;
        free(e);
        e = next;
    }
    sim_g.pending = NULL;
    sim_g.counters.queued_launches = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* executor API (acl_meta.h)                                                                  */

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor)
{
    if (!executor) {
        sim_err("aclSetAclOpExecutorRepeatable: executor is a null pointer");
        return SIM_NN_INNER_NULLPTR; /* the documented code for this case */
    }
    SIM_LOCK();
    int rc = SIM_OK;
    if (sim_reg_type(executor) != SIM_H_EXECUTOR || executor->destroyed || executor->preparing) {
        sim_err("aclSetAclOpExecutorRepeatable: %p is not a live executor", (void *)executor);
        rc = SIM_NN_PARAM_INVALID;
    } else if (executor->launched && !executor->repeatable) {
        sim_err("aclSetAclOpExecutorRepeatable: the executor was already launched; make it "
                "repeatable right after GetWorkspaceSize");
        rc = SIM_NN_PARAM_INVALID;
    } else {
        executor->repeatable = 1;
    }
    SIM_UNLOCK();
    return rc;
}

/* Meant for repeatable executors. A non-repeatable one that was never launched may be destroyed
 * too (to abandon it); once launched it belongs to the library, so destroying it is refused (on
 * the real library that would free it twice). */
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor)
{
    if (!executor) {
        sim_err("aclDestroyAclOpExecutor: executor is a null pointer");
        return SIM_NN_INNER_NULLPTR; /* the documented code for this case */
    }
    SIM_LOCK();
    int rc = SIM_OK;
    if (sim_reg_type(executor) != SIM_H_EXECUTOR || executor->destroyed || executor->preparing) {
        sim_err("aclDestroyAclOpExecutor: %p is not a live executor (a non-repeatable executor "
                "is released by its launch)",
                (void *)executor);
        rc = SIM_NN_PARAM_INVALID;
    } else if (executor->launched && !executor->repeatable) {
        sim_err("aclDestroyAclOpExecutor: the executor is not repeatable and was launched, which "
                "releases it; destroy only repeatable executors");
        rc = SIM_NN_PARAM_INVALID;
    } else {
        executor->destroyed = 1; /* freed now, or once its queued runs are done */
        executor_release_if_done_locked(executor);
    }
    SIM_UNLOCK();
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* executor view (simulator-only)                                                             */

static aclOpExecutor *view_lookup(const void *v)
{
    return sim_reg_type(v) == SIM_H_EXECUTOR ? (aclOpExecutor *)v : NULL;
}

const char *aclsim_view_op(const void *executor_view)
{
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    const char *op = ex ? ex->op : NULL;
    SIM_UNLOCK();
    return op;
}

int aclsim_view_num_args(const void *executor_view)
{
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    int n = ex ? ex->nargs : -1;
    SIM_UNLOCK();
    return n;
}

unsigned int aclsim_view_flags(const void *executor_view)
{
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    unsigned f = ex ? ex->flags : 0;
    SIM_UNLOCK();
    return f;
}

uint64_t aclsim_view_serial(const void *executor_view)
{
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    uint64_t serial = ex ? ex->serial : 0;
    SIM_UNLOCK();
    return serial;
}

uint64_t aclsim_view_workspace_size(const void *executor_view)
{
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    uint64_t w = ex ? ex->workspace_size : 0;
    SIM_UNLOCK();
    return w;
}

static void fill_view(const struct sim_xarg *x, struct aclsim_arg_view *out)
{
    out->kind = x->kind;
    out->name = x->name;
    out->is_null = x->is_null;
    out->ndim = x->ndim;
    out->dims = x->dims;
    out->strides = x->strides;
    out->storage_ndim = x->storage_ndim;
    out->storage_dims = x->storage_dims;
    out->offset = x->offset;
    out->dtype = x->dtype;
    out->format = x->format;
    out->data = x->data;
    if (!x->is_null) {
        if (x->kind == SIM_ARG_SCALAR || x->kind == SIM_ARG_SCALAR_OPTIONAL)
            out->value = x->sv.b;
        else if (x->buf)
            out->value = x->buf;
    }
    out->nbytes = x->nbytes;
    out->count = x->count;
    out->i = x->i;
    out->f = x->f;
}

int aclsim_view_item(const void *executor_view, int index, int item, struct aclsim_arg_view *out)
{
    if (!out)
        return SIM_NN_PARAM_NULLPTR;
    memset(out, 0, sizeof *out);
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    const struct sim_xarg *x = ex && index >= 0 && index < ex->nargs ? &ex->args[index] : NULL;
    if (!x || !kind_is_list(x->kind) || x->is_null || item < 0 || item >= x->count) {
        SIM_UNLOCK();
        sim_err("aclsim_view_item: %s", !ex  ? "not a live executor"
                                        : !x ? "index out of range"
                                             : "not a list argument, or item out of range");
        return SIM_NN_PARAM_INVALID;
    }
    fill_view(&x->items[item], out);
    SIM_UNLOCK();
    return SIM_OK;
}

int aclsim_view_arg(const void *executor_view, int index, struct aclsim_arg_view *out)
{
    if (!out)
        return SIM_NN_PARAM_NULLPTR;
    memset(out, 0, sizeof *out);
    SIM_LOCK();
    aclOpExecutor *ex = view_lookup(executor_view);
    if (!ex || index < 0 || index >= ex->nargs) {
        SIM_UNLOCK();
        sim_err("aclsim_view_arg: %s", ex ? "index out of range" : "not a live executor");
        return SIM_NN_PARAM_INVALID;
    }
    fill_view(&ex->args[index], out);
    SIM_UNLOCK();
    return SIM_OK;
}
