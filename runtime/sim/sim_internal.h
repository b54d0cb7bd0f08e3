/* sim_internal.h: state shared by the simulator's C files. Not part of any interface.
 *
 * Locking: one global mutex (sim_mu) guards every structure below. Hooks are always called
 * with it released. Every pointer received from a caller is looked up in a registry (handles
 * by exact address, device blocks by range) before it is dereferenced.
 *
 * Layers: calls between the C files go one way, down. sim_state.c (state, errors, registries,
 * controls) is the bottom; sim_meta.c (tensors, scalars, arrays) and sim_op.c (the two-phase
 * protocol, executors, queues) call only into it; sim_runtime.c (devices, memory, streams, and
 * aclsim_reset, which frees what every layer holds) is the top. tests/e2e/test_architecture.py
 * parses the files and fails on a call that goes up.
 */
#ifndef ACLSIM_INTERNAL_H
#define ACLSIM_INTERNAL_H

#include "aclsim_core.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

/* Declared by the real acl_meta.h; repeated so a generated header without them still works. */
aclnnStatus aclDestroyFloatArray(const aclFloatArray *array);
aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);

/* Status codes (values from cann-abi.md 1.1 and 2.4). Own names, so they never clash with
 * whatever the ABI header defines. */
enum {
    SIM_OK = 0,
    SIM_ACL_INVALID_PARAM = 100000,
    SIM_ACL_UNINITIALIZE = 100001,
    SIM_ACL_REPEAT_INITIALIZE = 100002,
    SIM_ACL_INVALID_FILE = 100003,
    SIM_ACL_REPEAT_FINALIZE = 100037,
    SIM_RT_PARAM_INVALID = 107000,
    SIM_RT_CONTEXT_NULL = 107002,
    SIM_RT_MEMORY_ALLOCATION = 207001,
    SIM_RT_AICORE_EXCEPTION = 507015,
    SIM_NN_PARAM_NULLPTR = 161001,
    SIM_NN_PARAM_INVALID = 161002,
    SIM_NN_RUNTIME_ERROR = 361001,
    SIM_NN_INNER = 561000,
    SIM_NN_INNER_FIND_KERNEL = 561003,
    SIM_NN_INNER_NULLPTR = 561103
};

/* aclDataType values used by the core (numbers, so the core does not depend on enumerator
 * names in the ABI header). */
enum {
    SIM_DT_UNDEFINED = -1, SIM_DT_FLOAT = 0, SIM_DT_FLOAT16 = 1, SIM_DT_INT8 = 2, SIM_DT_INT32 = 3,
    SIM_DT_UINT8 = 4, SIM_DT_INT16 = 6, SIM_DT_UINT16 = 7, SIM_DT_UINT32 = 8, SIM_DT_INT64 = 9,
    SIM_DT_UINT64 = 10, SIM_DT_DOUBLE = 11, SIM_DT_BOOL = 12, SIM_DT_STRING = 13,
    SIM_DT_COMPLEX64 = 16, SIM_DT_COMPLEX128 = 17, SIM_DT_BF16 = 27, SIM_DT_INT4 = 29,
    SIM_DT_UINT1 = 30, SIM_DT_COMPLEX32 = 33, SIM_DT_HIFLOAT8 = 34, SIM_DT_FLOAT8_E5M2 = 35,
    SIM_DT_FLOAT8_E4M3FN = 36, SIM_DT_FLOAT8_E8M0 = 37, SIM_DT_FLOAT6_E3M2 = 38,
    SIM_DT_FLOAT6_E2M3 = 39, SIM_DT_FLOAT4_E2M1 = 40, SIM_DT_FLOAT4_E1M2 = 41
};

enum {
    SIM_MAX_DEVICES = 64,
    SIM_MAX_RANK = 1024,            /* simulator limit on dims per tensor (sanity bound) */
    SIM_ERR_CAP = 4096,             /* per-thread pending error text */
    SIM_NAME_CAP = 128,             /* SoC name buffer */
    SIM_VERSION_CAP = 64,
    SIM_POISON_DEFAULT = 1 << 20,   /* blocks up to this size are poisoned whole at malloc/free */
    SIM_POISON_PREFIX = 4096        /* larger blocks: only this prefix (one page, no RSS cost) */
};

/* Handle types in the registry. */
enum {
    SIM_H_NONE = 0, SIM_H_TENSOR, SIM_H_SCALAR, SIM_H_INT_ARRAY, SIM_H_FLOAT_ARRAY,
    SIM_H_BOOL_ARRAY, SIM_H_TENSOR_LIST, SIM_H_SCALAR_LIST, SIM_H_EXECUTOR, SIM_H_STREAM,
    SIM_H_CONTEXT
};

struct aclTensor {
    int64_t ndim;
    int64_t *dims;
    int64_t *strides;
    int64_t storage_ndim;
    int64_t *storage_dims;
    int64_t offset;
    int dtype;
    int format;
    void *data;
    const struct aclTensorList *owner; /* list that owns it, or NULL */
};

union sim_scalar_bytes {
    unsigned char b[16];
    int64_t i;
    double d;
};

struct aclScalar {
    int dtype;
    int64_t nbytes;
    union sim_scalar_bytes v;
    const struct aclScalarList *owner;
};

/* One layout for all three array kinds: aclFloatArray and aclBoolArray handles point to a
 * struct aclIntArray whose v holds float or bool elements (those two structs stay incomplete). */
struct aclIntArray { uint64_t n; void *v; };
struct aclTensorList { uint64_t n; aclTensor **v; };
struct aclScalarList { uint64_t n; aclScalar **v; };

struct sim_stream;

struct sim_context {
    int device;
    int is_default;
    int dying;
    uint64_t serial;
    struct sim_stream *default_stream;
};

struct sim_launch;

struct sim_stream {
    struct sim_context *ctx;
    int is_default;
    uint64_t serial;
    struct sim_launch *head, *tail;
    int draining;
    pthread_t drainer;
};

/* A device byte range an executor reads or writes, with the block it lay in at prepare. */
struct sim_range {
    uintptr_t lo, hi;
    uint64_t block_serial;
    int device;
    int arg;
    int writes;
};

struct sim_xarg {
    int kind;
    char *name;
    int is_null;
    int64_t ndim;
    int64_t *dims;
    int64_t *strides;
    int64_t storage_ndim;
    int64_t *storage_dims;
    int64_t offset;
    int dtype;
    int format;
    void *data;
    union sim_scalar_bytes sv;
    void *buf;        /* owned copy: string chars or array elements */
    int64_t nbytes;
    int64_t count;
    int64_t i;
    double f;
    struct sim_xarg *items; /* a list's elements (count of them), owned */
};

struct aclOpExecutor {
    char *op;
    uint64_t serial;
    int nargs;
    struct sim_xarg *args;
    int nranges;
    struct sim_range *ranges;
    uint64_t workspace_size;
    unsigned flags;
    int preparing;
    int repeatable;
    int launched;
    int destroyed;
    int pending;      /* queue entries referring to it */
    int running;      /* entries currently in the run hook */
    /* remembered decisions (sim_memo.c): the executor's signature, and what prepare offered or
     * found remembered */
    struct sim_memo_key *key;
    int keep_prepare;               /* the prepare hook offered its answer */
    int keep_work;                  /* ... and whether the launch has work */
    int64_t keep_token;             /* ... and the hook's token for its record */
    int remembered;                 /* prepare was answered from memory */
    int no_work;                    /* remembered: an early return, the launch computes nothing */
    struct sim_memo_launch *launch; /* remembered launch (a reference), or NULL */
};

struct sim_launch {
    struct sim_launch *next;          /* stream FIFO */
    struct sim_launch *gprev, *gnext; /* global list of queued launches */
    struct sim_stream *stream;
    aclOpExecutor *ex;
    void *workspace;
    uint64_t workspace_size;
    int has_ws;
    struct sim_range ws;
};

struct sim_block {
    uintptr_t start;
    size_t size;      /* requested bytes: the range tensors and copies may use */
    size_t real;      /* padded bytes actually reserved */
    uint64_t serial;
    int device;
};

struct sim_device {
    int refcount;
    struct sim_context *default_ctx;
};

struct sim_state {
    int initialized;
    int device_count;
    struct sim_device dev[SIM_MAX_DEVICES];
    uint64_t next_serial;
    struct aclsim_counters counters;
    aclsim_prepare_hook prepare;
    aclsim_run_hook run;
    int soc_set;
    char soc[SIM_NAME_CAP];
    char version[SIM_VERSION_CAP];
    struct sim_launch *pending; /* head of the global queued-launch list */
    int hooks_running;          /* hook calls in progress, all threads */
    int kernels_off;            /* aclsim_set_kernels(0): hooks skipped, only the C protocol runs */
    uint64_t decisions_changed; /* bumped by every control a remembered decision depends on */
};

/* Bytes of a block of `size` bytes to poison (ACLNNGEN_SIM_POISON, see sim_runtime.c). */
size_t sim_poison_bytes(size_t size);

struct sim_tls {
    struct sim_context *ctx; /* current context, validated by registry lookup + serial */
    uint64_t ctx_serial;
    int in_hook;             /* depth of hook calls on this thread */
    const struct sim_launch *running; /* launch whose run hook this thread is in */
};

extern pthread_mutex_t sim_mu;
extern pthread_cond_t sim_cv;
extern struct sim_state sim_g;
extern _Thread_local struct sim_tls sim_tls;

/* The symbol part of an op identity "package:aclnnXxx" (ACLSIM_OP_ID), for messages. */
static inline const char *sim_op_symbol(const char *id)
{
    const char *colon = strrchr(id, ':');
    return colon ? colon + 1 : id;
}

#define SIM_LOCK() pthread_mutex_lock(&sim_mu)
#define SIM_UNLOCK() pthread_mutex_unlock(&sim_mu)

/* errors (thread-local, stacked newest first, cleared by aclGetRecentErrMsg) */
void sim_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_err_clear(void);

/* registry of live handles */
int sim_reg_add(const void *p, int type);
int sim_reg_type(const void *p);
void sim_reg_del(const void *p);
size_t sim_reg_count(void);
void *sim_reg_at(size_t i, int *type);
/* one registry entry, as sim_reg_take_all hands it out */
struct sim_hentry {
    uintptr_t key;
    int type;
};
/* empties the registry and returns what it held (malloc'ed, *n entries; free it), or NULL when
 * host memory ran out (the registry is unchanged) */
struct sim_hentry *sim_reg_take_all(size_t *n);

/* device blocks */
int sim_block_add(const struct sim_block *b);
struct sim_block *sim_block_exact(uintptr_t p);
/* block whose requested range contains [lo, hi) (hi > lo), or NULL */
struct sim_block *sim_block_holding(uintptr_t lo, uintptr_t hi);
/* any block whose reserved range overlaps [lo, hi), or NULL */
struct sim_block *sim_block_overlapping(uintptr_t lo, uintptr_t hi);
void sim_block_del(uintptr_t start);
/* the blocks in address order: count, i-th (NULL past the end), and forgetting them all */
size_t sim_block_count(void);
const struct sim_block *sim_block_at(size_t i);
void sim_block_clear(void);

uint64_t sim_next_serial(void);
struct sim_context *sim_ctx_current(void);
void sim_ctx_set_current(struct sim_context *c);

void sim_version_copy_locked(char out[SIM_VERSION_CAP]);

/* CANN version string -> aclsysGetVersionNum value; 0 on success */
int sim_version_num(const char *s, int32_t *out);
/* the version aclsysGetVersionStr answers (the one set, else the default) */
void sim_version_copy(char out[SIM_VERSION_CAP]);

/* dtype width in bits; 0 when unknown */
int sim_dtype_bits(int dtype);
const char *sim_memcpy_kind_name(int kind);

/* streams and queued work (sim_op.c) */
int sim_drain_locked(struct sim_stream *s, const char *who);
int sim_range_busy_locked(uintptr_t lo, uintptr_t hi, uint64_t block_serial, int writing,
                          const struct sim_launch **who);
void sim_executor_free_locked(aclOpExecutor *ex);
void sim_discard_all_launches_locked(void);

/* remembered decisions (sim_memo.c, above sim_state.c, below sim_op.c): an executor's signature
 * is hashed at prepare; a signature whose prepare hook answer (and, later, compiled launch) the
 * hooks offered is answered without them */
struct sim_memo_key;
struct sim_memo_launch;
/* the signature of a snapshotted executor (NULL when host memory ran out) */
struct sim_memo_key *sim_memo_key_locked(const aclOpExecutor *ex);
void sim_memo_key_free(struct sim_memo_key *k);
/* a remembered prepare answer for ex->key: 1 (status, workspace, message set; ex->launch and
 * ex->no_work filled in), or 0 */
int sim_memo_prepare_locked(aclOpExecutor *ex, int *status, uint64_t *workspace, char *msg,
                            size_t cap);
/* after the prepare hook: remembers its answer when it offered it */
void sim_memo_after_prepare_locked(aclOpExecutor *ex, int status, uint64_t workspace,
                                   const char *msg);
/* runs ex's remembered launch (called without the lock, with a reference taken by
 * sim_memo_launch_acquire_locked); 1 when it ran, 0 when the hook must run it */
struct sim_memo_launch *sim_memo_launch_acquire_locked(const aclOpExecutor *ex);
int sim_memo_launch_run(struct sim_memo_launch *l, const aclOpExecutor *ex, void *workspace,
                        uint64_t workspace_size);
void sim_memo_launch_release_locked(struct sim_memo_launch *l);
void sim_memo_count_hook_locked(int run);
void sim_memo_clear_locked(void);

/* meta object release (sim_meta.c), no registry change */
void sim_free_handle_locked(void *p, int type);

#endif /* ACLSIM_INTERNAL_H */
