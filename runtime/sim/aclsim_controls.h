/* aclsim_controls.h: simulator-only controls, the generic op protocol's argument kinds and
 * the executor view used by the Python prepare/run hooks.
 *
 * None of this exists in CANN. The file is plain cffi cdef text (no preprocessor lines); C
 * files get it through aclsim_core.h, which includes <stdint.h>, <stddef.h> and <stdbool.h>
 * first. Every function here is safe to call with a stale or bogus executor pointer: the
 * pointer is looked up in the registry of live executors before it is dereferenced.
 */

/* Argument kinds of the generic op protocol (sim_arg.kind). The numbers are part of the
 * protocol: generated C and the Python hooks both use them. What `handle` and `i` carry:
 *   TENSOR_*        handle = const aclTensor *          (the *_OPTIONAL kinds may be NULL)
 *   SCALAR*         handle = const aclScalar *
 *   BOOL, INT64     value in i (bool as 0/1); handle unused
 *   DOUBLE          handle = const double * (copied at prepare)
 *   STRING*         handle = const char * (NUL-terminated, copied at prepare)
 *   INT_ARRAY*      handle = const aclIntArray *
 *   FLOAT_ARRAY     handle = const aclFloatArray *
 *   BOOL_ARRAY      handle = const aclBoolArray *
 *   TENSOR_LIST_*   handle = const aclTensorList *  (TENSOR_LIST_OPTIONAL may be NULL)
 *   SCALAR_LIST     handle = const aclScalarList *
 *   TENSOR_INOUT    handle = const aclTensor *: an input the kernel also writes (a ...Ref)
 * TENSOR_OUT, TENSOR_OUT_OPTIONAL, TENSOR_LIST_OUT and TENSOR_INOUT mark tensors the kernel writes. A list's
 * elements are read with aclsim_view_item (count holds their number).
 */
typedef enum {
    SIM_ARG_TENSOR_IN = 0,
    SIM_ARG_TENSOR_OUT = 1,
    SIM_ARG_TENSOR_OPTIONAL = 2,
    SIM_ARG_TENSOR_OUT_OPTIONAL = 3,
    SIM_ARG_SCALAR = 4,
    SIM_ARG_SCALAR_OPTIONAL = 5,
    SIM_ARG_BOOL = 6,
    SIM_ARG_INT64 = 7,
    SIM_ARG_DOUBLE = 8,
    SIM_ARG_STRING = 9,
    SIM_ARG_STRING_OPTIONAL = 10,
    SIM_ARG_INT_ARRAY = 11,
    SIM_ARG_INT_ARRAY_OPTIONAL = 12,
    SIM_ARG_FLOAT_ARRAY = 13,
    SIM_ARG_BOOL_ARRAY = 14,
    SIM_ARG_TENSOR_LIST_IN = 15,
    SIM_ARG_TENSOR_LIST_OUT = 16,
    SIM_ARG_TENSOR_LIST_OPTIONAL = 17,
    SIM_ARG_SCALAR_LIST = 18,
    SIM_ARG_TENSOR_INOUT = 19
} sim_arg_kind;

/* Bits of aclsim_view_flags(): which out-pointers of XxxGetWorkspaceSize were NULL. The
 * prepare hook decides what that means for the op (the behaviour profile): return 161001 if
 * the library checks them; if it returns 0 anyway, sim_prepare reports 561103 because the real
 * library would then dereference a null pointer.
 * ACLSIM_NULL_REQUIRED_ARG: a required handle argument (tensor, scalar, ...) is NULL. The hook
 * sees it as a null argument of the view; if it returns 0, sim_prepare reports 161001 (the
 * core's own null check, as without a hook); a profile that records the implementation never
 * checks it returns 561103 itself, modelling the null dereference. */
enum {
    ACLSIM_NULL_WORKSPACE_SIZE_PTR = 1,
    ACLSIM_NULL_EXECUTOR_PTR = 2,
    ACLSIM_NULL_REQUIRED_ARG = 4
};

/* Message buffer size handed to the hooks. */
enum { ACLSIM_HOOK_MESSAGE_CAP = 1024 };

/* Hooks (registered by the Python runtime). Both run WITHOUT the simulator's lock held, so they
 * may call back into the library (view functions, aclrtMemcpy, ...). They return 0 or an aclnn
 * status and may write a NUL-terminated explanation into `message` (at most `message_cap`
 * bytes). prepare sets *workspace_size (it starts at 0). */
typedef int (*aclsim_prepare_hook)(const char *op, void *executor_view, uint64_t *workspace_size,
                                   char *message, size_t message_cap);
typedef int (*aclsim_run_hook)(const char *op, void *executor_view, void *workspace,
                               uint64_t workspace_size, char *message, size_t message_cap);

/* Live-object counters. streams and contexts include the implicit default ones that
 * aclrtSetDevice creates; allocated_bytes counts the padded size the device would reserve. */
struct aclsim_counters {
    int64_t tensors;
    int64_t scalars;
    int64_t int_arrays;
    int64_t executors;
    int64_t allocations;
    int64_t allocated_bytes;
    int64_t streams;
    int64_t contexts;
    int64_t queued_launches;
    int64_t float_arrays;
    int64_t bool_arrays;
    int64_t tensor_lists;
    int64_t scalar_lists;
};

/* One argument of an executor, as snapshotted by sim_prepare. Pointers stay valid while the
 * executor is live (for the duration of a hook call at least). Unused fields are zero. */
struct aclsim_arg_view {
    int kind;                    /* sim_arg_kind */
    const char *name;
    int is_null;                 /* optional argument passed as NULL */
    /* tensors */
    int64_t ndim;
    const int64_t *dims;
    const int64_t *strides;      /* in elements */
    int64_t storage_ndim;
    const int64_t *storage_dims;
    int64_t offset;              /* in elements, from data */
    int dtype;                   /* aclDataType of a tensor or scalar */
    int format;                  /* aclFormat */
    void *data;                  /* device address (base of storage) */
    /* scalars, strings and arrays */
    const void *value;           /* scalar bytes, string chars, or array elements */
    int64_t nbytes;              /* bytes at value (scalar size, strlen, array bytes) */
    int64_t count;               /* array elements (1 for a scalar) */
    /* attributes */
    int64_t i;                   /* BOOL / INT64 */
    double f;                    /* DOUBLE */
};

void aclsim_set_hooks(aclsim_prepare_hook prepare, aclsim_run_hook run);

/* Kernels on (1, the default) or off (0): off, GetWorkspaceSize skips the prepare hook (workspace
 * 0, no op-specific checks) and a launch computes nothing, so only the C protocol runs (for
 * benchmarks of the call path). The core's own checks still run. */
void aclsim_set_kernels(int on);

/* SoC name answered by aclrtGetSocName. NULL restores the default: $ACLNNGEN_SIM_SOC when set
 * and non-empty, else "Ascend910B2". Returns 0, or 100000 for an empty or too long name. */
int aclsim_set_soc_name(const char *name);

/* CANN version answered by aclsysGetVersionStr/Num ("8.5.0", "9.0.0-beta.1", "8.0.RC1").
 * NULL restores the default: aclsim_specs_release(). Returns 0, or 100000 for a string that
 * does not parse. (ACLNNGEN_SIM_CANN is applied by the Python backend, runtime/sim/backend.py.) */
int aclsim_set_version(const char *version);

/* The newest CANN release the specs of the built ops describe (the generated sim_ops.c defines
 * it); NULL for a core built without it, which then reports 8.5.0. */
const char *aclsim_specs_release(void);

/* Number of devices (1..64, default 1). Returns 0, or 107000 (out of range, or a device is set). */
int aclsim_set_device_count(int count);

void aclsim_get_counters(struct aclsim_counters *out);

/* Frees every handle, allocation, queued launch, stream and context and resets the init and
 * device state (queued work is discarded, not run). Configuration (hooks, SoC name, version,
 * device count) is kept. Returns 0, or 107000 when a hook is running (nothing is changed). */
int aclsim_reset(void);

/* Executor view. num_args returns -1 for a pointer that is not a live executor; arg returns 0,
 * or 161002 for a bad executor or index (out is then zeroed). */
const char *aclsim_view_op(const void *executor_view);
int aclsim_view_num_args(const void *executor_view);
int aclsim_view_arg(const void *executor_view, int index, struct aclsim_arg_view *out);
/* Element `item` of the list argument `index`: a tensor (kind TENSOR_IN, or TENSOR_OUT for an
 * output list) or a scalar (kind SCALAR), named "name[item]". Returns 0, or 161002 for a bad
 * executor, an argument that is no list, or an item out of range (out is then zeroed). */
int aclsim_view_item(const void *executor_view, int index, int item, struct aclsim_arg_view *out);
unsigned int aclsim_view_flags(const void *executor_view);
uint64_t aclsim_view_workspace_size(const void *executor_view);
/* The executor's serial number: unique in the process (never reused, also across aclsim_reset),
 * so a snapshot taken at prepare can be matched to the same executor at run; 0 when not live. */
uint64_t aclsim_view_serial(const void *executor_view);

/* Remembered decisions. The core hashes each executor's signature (the op, every argument but
 * its data's address, the NULL out-pointers, the SoC name, the version, $ACLNNGEN_SIM_PROFILE and
 * $ACLNNGEN_SIM_KERNELS). A prepare hook that calls aclsim_memo_keep_prepare before returning
 * lets the core answer that signature's later GetWorkspaceSize calls itself (status, workspace
 * size, message; `work` 0: an early return, whose launch computes nothing); a run hook that calls
 * aclsim_memo_keep_launch lets the core run the signature's later launches itself: `fn` (a
 * compiled kernel, aclk_fn) over the tensors args[tensor_args[k]] (data + offset * itemsize),
 * `n` elements in one piece, with copies of the argument arrays, unless an output partly
 * overlaps another tensor or $ACLNNGEN_SIM_KERNELS changed (then the run hook runs it). The
 * table holds at most aclsim_memo_set_capacity entries (default 256, least recently used out);
 * the SoC, version, hooks and kernels controls and aclsim_reset empty it; so does
 * aclsim_memo_clear (the hooks' own settings changed). keep_* return 0, or 161002 (not live, a
 * signature with no key, or arrays too long). */
void aclsim_memo_keep_prepare(const void *executor_view, int work, int64_t token);
int aclsim_memo_keep_launch(const void *executor_view, void *fn, const int *tensor_args,
                            const int *outputs, int ntensors, int64_t itemsize, int64_t n,
                            const double *doubles, int ndoubles, const int64_t *ints, int nints,
                            const char *const *strings, int nstrings);
void aclsim_memo_clear(void);
/* 0 turns remembering off (and empties the table); returns the previous capacity */
int aclsim_memo_set_capacity(int capacity);

struct aclsim_memo_stats {
    int64_t prepare_hooks;   /* prepare hook calls */
    int64_t run_hooks;       /* run hook calls */
    int64_t prepare_hits;    /* GetWorkspaceSize answered from memory */
    int64_t launch_hits;     /* launches run from memory */
    int64_t entries;
    int64_t capacity;
};
void aclsim_memo_get_stats(struct aclsim_memo_stats *out);

/* The GetWorkspaceSize calls answered from memory with status 0 (the hooks record the others),
 * oldest first: the executor's serial, the token the prepare hook kept, the workspace size and
 * the device address of each tensor (a list's elements in order). Returns how many were written
 * (at most cap; the newest 64 are kept); clear_records forgets them. */
enum { ACLSIM_MEMO_RECORD_TENSORS = 32 };
struct aclsim_memo_record {
    uint64_t serial;
    int64_t token;
    uint64_t workspace;
    int ndata;
    uintptr_t data[32];
};
int aclsim_memo_records(struct aclsim_memo_record *out, int cap);
void aclsim_memo_clear_records(void);

/* Release helpers for memory returned by aclGetViewShape/StorageShape/ViewStrides (which
 * the real library allocates with new[]); equivalent to free(). */
void aclsim_free(void *ptr);

