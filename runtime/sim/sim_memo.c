/* sim_memo.c: what the hooks decided, remembered per executor signature.
 *
 * A call of the simulated library enters Python twice (the prepare and run hooks, kernels.py).
 * Their decisions are a function of the executor's signature: the op, each argument's kind,
 * layout, dtype, format and value (everything but its data's address), the NULL out-pointers,
 * the SoC name, the version and the two settings the hooks read from the environment. The core
 * hashes that signature itself; a hook that offers its answer (aclsim_memo_keep_*) lets the core
 * answer the signature's later calls without Python. What the hooks also depend on and the core
 * cannot see (the chosen behaviour profile, the registered ops, the kernels' source) is theirs to
 * invalidate: they call aclsim_memo_clear when it changes.
 *
 * Above sim_state.c (the lock, the SoC and version), below sim_op.c (which calls in at prepare,
 * launch and executor release) and sim_runtime.c (aclsim_reset empties the table). Every function
 * named *_locked runs with sim_mu held; a remembered kernel runs without it (its arguments are
 * reference-counted), like a hook.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SIM_MEMO_DEFAULT_CAPACITY = 256,
    SIM_MEMO_RECORDS = 64,
    SIM_MEMO_SCRIBBLE_LIMIT = 1 << 20 /* the bytes of a workspace the run hook scribbles on */
};

typedef void (*sim_kernel_fn)(void *const *tensors, int64_t start, int64_t count,
                              const double *doubles, const int64_t *ints,
                              const char *const *strings);

struct sim_memo_key {
    uint64_t hash;
    size_t len;
    unsigned char *bytes;
};

struct sim_memo_launch {
    int refs;
    sim_kernel_fn fn;
    int ntensors;
    int *tensor_args;
    int *outputs;
    int64_t itemsize;
    int64_t n;
    double *doubles;
    int64_t *ints;
    char **strings;     /* owned copies */
    const char **views; /* the pointer array the kernel reads */
    int nstrings;
    char *mode;         /* $ACLNNGEN_SIM_KERNELS when kept (NULL: unset) */
};

struct sim_memo_entry {
    struct sim_memo_key key; /* bytes NULL: a free slot */
    uint64_t used;           /* LRU tick */
    int status;
    uint64_t workspace;
    char *message;
    int work;
    int64_t token;
    struct sim_memo_launch *launch;
};

static struct sim_memo_entry *table;
static int capacity = SIM_MEMO_DEFAULT_CAPACITY, table_size;
static uint64_t tick, seen_changes;
static struct aclsim_memo_stats stats;
static struct aclsim_memo_record records[SIM_MEMO_RECORDS];
static int records_next, records_count;

/* ------------------------------------------------------------------------------------------ */
/* the signature                                                                              */

struct buf {
    unsigned char *p;
    size_t len, cap;
    int failed;
};

static void put(struct buf *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_i64(struct buf *b, int64_t v)
{
    put(b, &v, sizeof v);
}

/* a string and its end, or a mark for NULL (distinct from "") */
static void put_str(struct buf *b, const char *s)
{
    if (!s) {
        put_i64(b, -1);
        return;
    }
    size_t n = strlen(s);
    put_i64(b, (int64_t)n);
    put(b, s, n);
}

static int is_scalar(int k)
{
    return k == SIM_ARG_SCALAR || k == SIM_ARG_SCALAR_OPTIONAL;
}

/* everything of an argument a hook may read, but its data's address */
static void put_arg(struct buf *b, const struct sim_xarg *x)
{
    put_i64(b, x->kind);
    put_str(b, x->name);
    put_i64(b, x->is_null);
    if (x->is_null)
        return;
    put_i64(b, x->ndim);
    put(b, x->dims, (size_t)x->ndim * sizeof(int64_t));
    put(b, x->strides, (size_t)x->ndim * sizeof(int64_t));
    put_i64(b, x->storage_ndim);
    put(b, x->storage_dims, (size_t)x->storage_ndim * sizeof(int64_t));
    put_i64(b, x->offset);
    put_i64(b, x->dtype);
    put_i64(b, x->format);
    put_i64(b, x->nbytes);
    put_i64(b, x->count);
    put_i64(b, x->i);
    put(b, &x->f, sizeof x->f);
    if (is_scalar(x->kind))
        put(b, x->sv.b, x->nbytes > 0 && x->nbytes <= 16 ? (size_t)x->nbytes : 0);
    else if (x->buf)
        put(b, x->buf, (size_t)x->nbytes);
    if (x->items)
        for (int64_t k = 0; k < x->count; k++)
            put_arg(b, &x->items[k]);
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

struct sim_memo_key *sim_memo_key_locked(const aclOpExecutor *ex)
{
    char version[SIM_VERSION_CAP];
    struct buf b = {0};
    put_str(&b, ex->op);
    put_i64(&b, ex->flags);
    /* what aclrtGetSocName answers from (its default is a constant) */
    put_str(&b, sim_g.soc_set ? sim_g.soc : NULL);
    put_str(&b, getenv("ACLNNGEN_SIM_SOC"));
    sim_version_copy_locked(version);
    put_str(&b, version);
    /* the hooks read these on every call */
    put_str(&b, getenv("ACLNNGEN_SIM_PROFILE"));
    put_str(&b, getenv("ACLNNGEN_SIM_KERNELS"));
    put_i64(&b, ex->nargs);
    for (int i = 0; i < ex->nargs; i++)
        put_arg(&b, &ex->args[i]);
    struct sim_memo_key *k = b.failed ? NULL : malloc(sizeof *k);
    if (!k) {
        free(b.p);
        return NULL;
    }
    k->bytes = b.p;
    k->len = b.len;
    k->hash = fnv1a(b.p, b.len);
    return k;
}

void sim_memo_key_free(struct sim_memo_key *k)
{
    if (k) {
        free(k->bytes);
        free(k);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the table                                                                                  */

static void launch_release(struct sim_memo_launch *l)
{
    if (!l || --l->refs > 0)
        return;
    for (int i = 0; i < l->nstrings; i++)
        free(l->strings[i]);
    free(l->strings);
    free(l->views);
    free(l->tensor_args);
    free(l->outputs);
    free(l->doubles);
    free(l->ints);
    free(l->mode);
    free(l);
}

void sim_memo_launch_release_locked(struct sim_memo_launch *l)
{
    launch_release(l);
}

static void entry_free(struct sim_memo_entry *e)
{
    free(e->key.bytes);
    free(e->message);
    launch_release(e->launch);
    memset(e, 0, sizeof *e);
}

void sim_memo_clear_locked(void)
{
    for (int i = 0; i < table_size; i++)
        entry_free(&table[i]);
    free(table);
    table = NULL;
    table_size = 0;
    stats.entries = 0;
}

/* a control the decisions depend on changed since the table was filled: forget it */
static void check_changes_locked(void)
{
    if (seen_changes != sim_g.decisions_changed) {
        sim_memo_clear_locked();
        seen_changes = sim_g.decisions_changed;
    }
}

static struct sim_memo_entry *find_locked(const struct sim_memo_key *k)
{
    if (!k)
        return NULL;
    check_changes_locked();
    for (int i = 0; i < table_size; i++) {
        struct sim_memo_entry *e = &table[i];
        if (e->key.bytes && e->key.hash == k->hash && e->key.len == k->len &&
            memcmp(e->key.bytes, k->bytes, k->len) == 0)
            return e;
    }
    return NULL;
}

/* a slot for a new entry: a free one, else the least recently used (emptied); NULL when
 * remembering is off or host memory ran out */
static struct sim_memo_entry *slot_locked(void)
{
    if (capacity <= 0)
        return NULL;
    if (!table) {
        table = calloc((size_t)capacity, sizeof *table);
        if (!table)
            return NULL;
        table_size = capacity;
    }
    struct sim_memo_entry *oldest = &table[0];
    for (int i = 0; i < table_size; i++) {
        if (!table[i].key.bytes)
            return &table[i];
        if (table[i].used < oldest->used)
            oldest = &table[i];
    }
    entry_free(oldest);
    stats.entries--;
    return oldest;
}

/* ------------------------------------------------------------------------------------------ */
/* prepare                                                                                    */

static void record_locked(const aclOpExecutor *ex, int64_t token, uint64_t workspace)
{
    struct aclsim_memo_record *r = &records[records_next];
    memset(r, 0, sizeof *r);
    r->serial = ex->serial;
    r->token = token;
    r->workspace = workspace;
    for (int i = 0; i < ex->nargs; i++) {
        const struct sim_xarg *x = &ex->args[i];
        if (x->is_null)
            continue;
        if (x->kind == SIM_ARG_TENSOR_IN || x->kind == SIM_ARG_TENSOR_OUT ||
            x->kind == SIM_ARG_TENSOR_OPTIONAL || x->kind == SIM_ARG_TENSOR_OUT_OPTIONAL ||
            x->kind == SIM_ARG_TENSOR_INOUT) {
            if (r->ndata < ACLSIM_MEMO_RECORD_TENSORS)
                r->data[r->ndata++] = (uintptr_t)x->data;
        } else if (x->kind == SIM_ARG_TENSOR_LIST_IN || x->kind == SIM_ARG_TENSOR_LIST_OUT ||
                   x->kind == SIM_ARG_TENSOR_LIST_OPTIONAL) {
            for (int64_t k = 0; k < x->count && r->ndata < ACLSIM_MEMO_RECORD_TENSORS; k++)
                r->data[r->ndata++] = (uintptr_t)x->items[k].data;
        }
    }
    records_next = (records_next + 1) % SIM_MEMO_RECORDS;
    if (records_count < SIM_MEMO_RECORDS)
        records_count++;
}

int sim_memo_prepare_locked(aclOpExecutor *ex, int *status, uint64_t *workspace, char *msg,
                            size_t cap)
{
    struct sim_memo_entry *e = find_locked(ex->key);
    if (!e)
        return 0;
    e->used = ++tick;
    *status = e->status;
    *workspace = e->workspace;
    snprintf(msg, cap, "%s", e->message ? e->message : "");
    ex->remembered = 1;
    ex->no_work = !e->work;
    if (e->launch) {
        e->launch->refs++;
        ex->launch = e->launch;
    }
    if (e->status == SIM_OK)
        record_locked(ex, e->token, e->workspace);
    stats.prepare_hits++;
    return 1;
}

void sim_memo_after_prepare_locked(aclOpExecutor *ex, int status, uint64_t workspace,
                                   const char *msg)
{
    if (!ex->keep_prepare || !ex->key || find_locked(ex->key))
        return;
    struct sim_memo_entry *e = slot_locked();
    if (!e)
        return;
    unsigned char *bytes = malloc(ex->key->len ? ex->key->len : 1);
    char *text = malloc(strlen(msg) + 1);
    if (!bytes || !text) {
        free(bytes);
        free(text);
        return;
    }
    memcpy(bytes, ex->key->bytes, ex->key->len);
    strcpy(text, msg);
    e->key.bytes = bytes;
    e->key.len = ex->key->len;
    e->key.hash = ex->key->hash;
    e->used = ++tick;
    e->status = status;
    e->workspace = workspace;
    e->message = text;
    e->work = ex->keep_work;
    e->token = ex->keep_token;
    stats.entries++;
}

void sim_memo_count_hook_locked(int run)
{
    if (run)
        stats.run_hooks++;
    else
        stats.prepare_hooks++;
}

/* ------------------------------------------------------------------------------------------ */
/* launch                                                                                     */

struct sim_memo_launch *sim_memo_launch_acquire_locked(const aclOpExecutor *ex)
{
    struct sim_memo_launch *l = ex->launch;
    if (l)
        l->refs++;
    return l;
}

static const struct sim_xarg *tensor_of(const aclOpExecutor *ex, const struct sim_memo_launch *l,
                                        int k)
{
    int i = l->tensor_args[k];
    return i >= 0 && i < ex->nargs ? &ex->args[i] : NULL;
}

/* an output partly overlapping another tensor (an exact alias is elementwise-safe): the hook
 * then decides, as for a call it never saw */
static int partial_overlap(const uintptr_t *at, const uint64_t *size, const int *outputs, int n)
{
    for (int a = 0; a < n; a++) {
        if (!outputs[a])
            continue;
        for (int b = 0; b < n; b++)
            if (b != a && (at[b] != at[a] || size[b] != size[a]) && at[a] < at[b] + size[b] &&
                at[b] < at[a] + size[a])
                return 1;
    }
    return 0;
}

static int same_mode(const char *kept)
{
    const char *now = getenv("ACLNNGEN_SIM_KERNELS");
    if (!kept || !now)
        return !kept && !now;
    return strcmp(kept, now) == 0;
}

int sim_memo_launch_run(struct sim_memo_launch *l, const aclOpExecutor *ex, void *workspace,
                        uint64_t workspace_size)
{
    enum { SMALL = 16 };
    uintptr_t at_small[SMALL];
    uint64_t size_small[SMALL];
    uintptr_t *at = l->ntensors <= SMALL ? at_small : malloc((size_t)l->ntensors * sizeof *at);
    uint64_t *size =
        l->ntensors <= SMALL ? size_small : malloc((size_t)l->ntensors * sizeof *size);
    int ran = 0;
    if (at && size && same_mode(l->mode)) {
        int ok = 1;
        for (int k = 0; ok && k < l->ntensors; k++) {
            const struct sim_xarg *x = tensor_of(ex, l, k);
            if (!x || x->is_null) {
                ok = 0;
                break;
            }
            int64_t count = 1;
            for (int64_t d = 0; d < x->ndim; d++)
                count *= x->dims[d];
            at[k] = (uintptr_t)x->data + (uintptr_t)(x->offset * l->itemsize);
            size[k] = (uint64_t)(count * l->itemsize);
        }
        if (ok && !partial_overlap(at, size, l->outputs, l->ntensors)) {
            if (workspace && workspace_size) /* the kernel owns its workspace, as the hook does */
                memset(workspace, 0x5a,
                       workspace_size < SIM_MEMO_SCRIBBLE_LIMIT ? workspace_size
                                                                : SIM_MEMO_SCRIBBLE_LIMIT);
            l->fn((void *const *)at, 0, l->n, l->doubles, l->ints, l->views);
            ran = 1;
        }
    }
    if (at != at_small)
        free(at);
    if (size != size_small)
        free(size);
    if (ran) {
        SIM_LOCK();
        stats.launch_hits++;
        SIM_UNLOCK();
    }
    return ran;
}

/* ------------------------------------------------------------------------------------------ */
/* controls                                                                                   */

static aclOpExecutor *live_executor_locked(const void *v)
{
    return sim_reg_type(v) == SIM_H_EXECUTOR ? (aclOpExecutor *)v : NULL;
}

void aclsim_memo_keep_prepare(const void *executor_view, int work, int64_t token)
{
    SIM_LOCK();
    aclOpExecutor *ex = live_executor_locked(executor_view);
    if (ex && ex->preparing) {
        ex->keep_prepare = 1;
        ex->keep_work = work != 0;
        ex->keep_token = token;
    }
    SIM_UNLOCK();
}

static void *copy_of(const void *p, size_t n)
{
    void *d = malloc(n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

int aclsim_memo_keep_launch(const void *executor_view, void *fn, const int *tensor_args,
                            const int *outputs, int ntensors, int64_t itemsize, int64_t n,
                            const double *doubles, int ndoubles, const int64_t *ints, int nints,
                            const char *const *strings, int nstrings)
{
    if (!fn || ntensors < 0 || ndoubles < 0 || nints < 0 || nstrings < 0 || itemsize <= 0 ||
        n < 0 || (ntensors && (!tensor_args || !outputs)) || (ndoubles && !doubles) ||
        (nints && !ints) || (nstrings && !strings))
        return SIM_NN_PARAM_INVALID;
    struct sim_memo_launch *l = calloc(1, sizeof *l);
    if (!l)
        return SIM_NN_PARAM_INVALID;
    l->refs = 1;
    l->fn = (sim_kernel_fn)fn;
    l->ntensors = ntensors;
    l->itemsize = itemsize;
    l->n = n;
    l->nstrings = nstrings;
    l->tensor_args = copy_of(tensor_args, (size_t)ntensors * sizeof(int));
    l->outputs = copy_of(outputs, (size_t)ntensors * sizeof(int));
    l->doubles = copy_of(doubles, (size_t)ndoubles * sizeof(double));
    l->ints = copy_of(ints, (size_t)nints * sizeof(int64_t));
    l->strings = calloc((size_t)(nstrings ? nstrings : 1), sizeof *l->strings);
    l->views = calloc((size_t)(nstrings ? nstrings : 1), sizeof *l->views);
    const char *mode = getenv("ACLNNGEN_SIM_KERNELS");
    l->mode = mode ? copy_of(mode, strlen(mode) + 1) : NULL;
    int ok = l->tensor_args && l->outputs && l->doubles && l->ints && l->strings && l->views &&
             (!mode || l->mode);
    for (int i = 0; ok && i < nstrings; i++) {
        l->strings[i] = strings[i] ? copy_of(strings[i], strlen(strings[i]) + 1) : NULL;
        ok = !strings[i] || l->strings[i];
        l->views[i] = l->strings[i];
    }
    int rc = SIM_NN_PARAM_INVALID;
    SIM_LOCK();
    aclOpExecutor *ex = ok ? live_executor_locked(executor_view) : NULL;
    struct sim_memo_entry *e = ex ? find_locked(ex->key) : NULL;
    if (e) {
        launch_release(e->launch);
        e->launch = l;
        l = NULL;
        rc = SIM_OK;
    }
    launch_release(l);
    SIM_UNLOCK();
    return rc;
}

void aclsim_memo_clear(void)
{
    SIM_LOCK();
    sim_memo_clear_locked();
    SIM_UNLOCK();
}

int aclsim_memo_set_capacity(int cap)
{
    SIM_LOCK();
    int before = capacity;
    sim_memo_clear_locked();
    capacity = cap > 0 ? cap : 0;
    SIM_UNLOCK();
    return before;
}

void aclsim_memo_get_stats(struct aclsim_memo_stats *out)
{
    if (!out)
        return;
    SIM_LOCK();
    *out = stats;
    out->capacity = capacity;
    SIM_UNLOCK();
}

int aclsim_memo_records(struct aclsim_memo_record *out, int cap)
{
    if (!out || cap <= 0)
        return 0;
    SIM_LOCK();
    int n = records_count < cap ? records_count : cap;
    int first = (records_next - n + SIM_MEMO_RECORDS) % SIM_MEMO_RECORDS;
    for (int i = 0; i < n; i++)
        out[i] = records[(first + i) % SIM_MEMO_RECORDS];
    SIM_UNLOCK();
    return n;
}

void aclsim_memo_clear_records(void)
{
    SIM_LOCK();
    records_count = 0;
    records_next = 0;
    SIM_UNLOCK();
}
