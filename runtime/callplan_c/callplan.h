/* The call plans' C helper (callplan.c): one aclnn call, descriptors to synchronisation, in one
 * C call. This text is also the cffi declaration of the helper (generated/ffi/_callplan.py), so
 * it holds plain declarations only. Every runtime function comes in as a pointer taken from the
 * loaded CANN (or simulator) library: the helper links to neither. */

/* fns[]: the runtime functions, by position */
enum aclnngen_fn {
    ACLNNGEN_FN_CREATE_TENSOR, ACLNNGEN_FN_DESTROY_TENSOR, ACLNNGEN_FN_CREATE_SCALAR,
    ACLNNGEN_FN_DESTROY_SCALAR, ACLNNGEN_FN_DESTROY_EXECUTOR, ACLNNGEN_FN_MALLOC, ACLNNGEN_FN_FREE,
    ACLNNGEN_FN_MEMCPY, ACLNNGEN_FN_SYNCHRONIZE, ACLNNGEN_FN_RECENT_ERROR, ACLNNGEN_FN_SOC_NAME,
    ACLNNGEN_FN_VERSION, ACLNNGEN_NFNS
};

/* what an item of the plan is: a tensor read, a tensor written (allocated here), an aclScalar */
enum aclnngen_kind { ACLNNGEN_INPUT, ACLNNGEN_OUTPUT, ACLNNGEN_SCALAR };

/* where a call stopped; the Python side raises the error the same step raises on its own path */
enum aclnngen_stage {
    ACLNNGEN_DONE, ACLNNGEN_STALE, ACLNNGEN_MALLOC, ACLNNGEN_COPY_IN, ACLNNGEN_CREATE_TENSOR,
    ACLNNGEN_CREATE_SCALAR, ACLNNGEN_GET_WORKSPACE_SIZE, ACLNNGEN_WORKSPACE, ACLNNGEN_LAUNCH,
    ACLNNGEN_SYNCHRONIZE, ACLNNGEN_COPY_OUT
};

/* one argument of the op's GetWorkspaceSize, whatever its C type */
typedef union { void *p; int64_t i; double d; } aclnngen_value;

struct aclnngen_item {
    int32_t param;      /* its position in the prototype */
    int32_t kind;       /* enum aclnngen_kind */
    int32_t dtype;      /* aclDataType */
    int32_t format;     /* aclFormat */
    int64_t ndim;
    const int64_t *dims;
    const int64_t *strides;
    int64_t offset;     /* in elements */
    const int64_t *storage;  /* the 1-D storage dim: elements */
    uint64_t nbytes;    /* bytes of the storage: allocations and copies */
    void *value;        /* a scalar's value, in its dtype */
};

struct aclnngen_plan {
    void *fns[12];        /* ACLNNGEN_NFNS */
    void *get_workspace_size;
    void *launch;
    int32_t nargs;        /* the op's parameters (workspaceSize and executor come after them) */
    int32_t nitems;       /* at most 64 */
    const struct aclnngen_item *items;
    const aclnngen_value *args;  /* the arguments known from the plan: attributes, NULLs */
    int32_t host;         /* 1: data[] are host arrays, copied in and out around the call */
    int32_t malloc_policy;
    int32_t memcpy_to_device;
    int32_t memcpy_to_host;
    const char *soc;      /* the SoC name the plan was made for */
    int32_t npackages;    /* 0: no version call; else the packages asked, in order, as the Python path */
    char *const *version_packages;  /* asks them: the first that answers gives the version */
    const char *version;  /* what it answered when the plan was made */
};

struct aclnngen_result {
    int32_t stage;    /* enum aclnngen_stage */
    int32_t item;     /* the item it concerns, or -1 */
    int32_t status;
    char message[1024];  /* aclGetRecentErrMsg() right after the failure */
};

/* Item k's tensor data: host[k] (host arrays, plan->host) or the device address data[k]; for a
 * device call, data[k] of an output receives the device address allocated here (the caller's
 * from then on). Returns the stage reached (ACLNNGEN_DONE on success); the details of a failure
 * are the calling thread's aclnngen_last_result(). */
int32_t aclnngen_call(const struct aclnngen_plan *plan, void *const *host, uint64_t *data);
const struct aclnngen_result *aclnngen_last_result(void);

/* the op's GetWorkspaceSize with the plan's arguments: rendered per argument-type signature */
int32_t aclnngen_get_workspace_size(void *fn, const aclnngen_value *args, uint64_t *workspace_size,
                                    void **executor);
