/* The call plans' C helper: creates the descriptors, runs both phases, destroys the descriptors,
 * synchronises and (for host arrays) copies in and out, in one C call (runtime/callplan.py).
 * It calls the runtime only through the function pointers of the plan, so it works unchanged
 * against the real CANN libraries and the simulator. Every path frees what it allocated and
 * destroys what it created, in the order the Python path does (runtime/call.py). */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "callplan.h"

#define MAX_ITEMS 64
#define VERSION_CAP 256

_Static_assert(ACLNNGEN_NFNS == 12, "callplan.h sizes fns[] by hand for cffi");

typedef void *(*create_tensor_fn)(const int64_t *, uint64_t, int32_t, const int64_t *, int64_t, int32_t,
                                  const int64_t *, uint64_t, void *);
typedef int32_t (*destroy_fn)(const void *);
typedef void *(*create_scalar_fn)(void *, int32_t);
typedef int32_t (*destroy_executor_fn)(void *);
typedef int32_t (*malloc_fn)(void **, size_t, int32_t);
typedef int32_t (*free_fn)(void *);
typedef int32_t (*memcpy_fn)(void *, size_t, const void *, size_t, int32_t);
typedef int32_t (*synchronize_fn)(void *);
typedef const char *(*text_fn)(void);
typedef int32_t (*version_fn)(char *, char *);
typedef int32_t (*launch_fn)(void *, uint64_t, void *, void *);

#define FN(plan, type, which) ((type)(plan)->fns[which])

static void fail(const struct aclnngen_plan *plan, struct aclnngen_result *r, int32_t stage, int32_t item,
                 int32_t status) {
    r->stage = stage;
    r->item = item;
    r->status = status;
    r->message[0] = '\0';
    text_fn recent = FN(plan, text_fn, ACLNNGEN_FN_RECENT_ERROR);
    const char *text = recent != NULL ? recent() : NULL;  /* read (and cleared) before any cleanup */
    if (text != NULL) {
        strncpy(r->message, text, sizeof r->message - 1);
        r->message[sizeof r->message - 1] = '\0';
    }
}

/* whether the library still answers what the plan was made for (a test may change the SoC or
 * the version between calls; the Python path then decides again) */
static int current(const struct aclnngen_plan *plan) {
    const char *soc = FN(plan, text_fn, ACLNNGEN_FN_SOC_NAME)();
    if (soc == NULL || strcmp(soc, plan->soc) != 0) return 0;
    if (plan->npackages == 0) return 1;
    version_fn ask = FN(plan, version_fn, ACLNNGEN_FN_VERSION);
    for (int32_t k = 0; k < plan->npackages; k++) {
        char version[VERSION_CAP];
        version[0] = '\0';
        if (ask(plan->version_packages[k], version) != 0) continue;
        version[VERSION_CAP - 1] = '\0';
        const char *c = version;
        while (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r') c++;
        if (*c == '\0') continue;  /* an empty answer: the next package is asked, as in Python */
        return strcmp(version, plan->version) == 0;
    }
    return 0;
}

/* descriptors in reverse order of creation, as the Python path destroys them */
static void destroy_handles(const struct aclnngen_plan *plan, void *const *handles, int32_t n) {
    for (int32_t k = n - 1; k >= 0; k--) {
        if (handles[k] == NULL) continue;
        int32_t which = plan->items[k].kind == ACLNNGEN_SCALAR ? ACLNNGEN_FN_DESTROY_SCALAR : ACLNNGEN_FN_DESTROY_TENSOR;
        FN(plan, destroy_fn, which)(handles[k]);
    }
}

static void free_blocks(const struct aclnngen_plan *plan, void *const *blocks, int32_t n, void *workspace) {
    free_fn release = FN(plan, free_fn, ACLNNGEN_FN_FREE);
    for (int32_t k = 0; k < n; k++)
        if (blocks[k] != NULL) release(blocks[k]);
    if (workspace != NULL) release(workspace);
}

static _Thread_local struct aclnngen_result last;

const struct aclnngen_result *aclnngen_last_result(void) { return &last; }

int32_t aclnngen_call(const struct aclnngen_plan *plan, void *const *host, uint64_t *data) {
    struct aclnngen_result *r = &last;
    r->stage = ACLNNGEN_DONE;
    r->item = -1;
    r->status = 0;
    r->message[0] = '\0';
    int32_t n = plan->nitems;
    if (n > MAX_ITEMS || plan->nargs > MAX_ITEMS) {
        r->stage = ACLNNGEN_STALE;  /* never planned so; the Python path calls instead */
        return r->stage;
    }
    if (!current(plan)) {
        r->stage = ACLNNGEN_STALE;
        return r->stage;
    }
    aclnngen_value args[MAX_ITEMS];
    memcpy(args, plan->args, (size_t)plan->nargs * sizeof args[0]);
    void *handles[MAX_ITEMS] = {0};
    void *blocks[MAX_ITEMS] = {0};  /* device memory this call allocated */
    void *workspace = NULL;
    malloc_fn allocate = FN(plan, malloc_fn, ACLNNGEN_FN_MALLOC);
    memcpy_fn copy = FN(plan, memcpy_fn, ACLNNGEN_FN_MEMCPY);
    int32_t rc;
    for (int32_t k = 0; k < n; k++) {
        const struct aclnngen_item *it = &plan->items[k];
        void *handle;
        if (it->kind == ACLNNGEN_SCALAR) {
            handle = FN(plan, create_scalar_fn, ACLNNGEN_FN_CREATE_SCALAR)(it->value, it->dtype);
            if (handle == NULL) {
                fail(plan, r, ACLNNGEN_CREATE_SCALAR, k, 0);
                goto undo;
            }
        } else {
            void *address = plan->host ? NULL : (void *)(uintptr_t)data[k];
            if (it->kind == ACLNNGEN_OUTPUT || plan->host) {
                rc = allocate(&blocks[k], (size_t)it->nbytes, plan->malloc_policy);
                if (rc != 0) {
                    blocks[k] = NULL;
                    fail(plan, r, ACLNNGEN_MALLOC, k, rc);
                    goto undo;
                }
                if (it->kind == ACLNNGEN_INPUT) {
                    rc = copy(blocks[k], (size_t)it->nbytes, host[k], (size_t)it->nbytes, plan->memcpy_to_device);
                    if (rc != 0) {
                        fail(plan, r, ACLNNGEN_COPY_IN, k, rc);
                        goto undo;
                    }
                }
                address = blocks[k];
            }
            handle = FN(plan, create_tensor_fn, ACLNNGEN_FN_CREATE_TENSOR)(
                it->dims, (uint64_t)it->ndim, it->dtype, it->strides, it->offset, it->format, it->storage, 1, address);
            if (handle == NULL) {
                fail(plan, r, ACLNNGEN_CREATE_TENSOR, k, 0);
                goto undo;
            }
        }
        handles[k] = handle;
        args[it->param].p = handle;
    }
    uint64_t size = 0;
    void *executor = NULL;
    rc = aclnngen_get_workspace_size(plan->get_workspace_size, args, &size, &executor);
    if (rc != 0) {
        fail(plan, r, ACLNNGEN_GET_WORKSPACE_SIZE, -1, rc);
        goto undo;
    }
    if (size > 0) {
        rc = allocate(&workspace, (size_t)size, plan->malloc_policy);
        if (rc != 0) {
            workspace = NULL;
            fail(plan, r, ACLNNGEN_WORKSPACE, -1, rc);
            destroy_handles(plan, handles, n);
            FN(plan, destroy_executor_fn, ACLNNGEN_FN_DESTROY_EXECUTOR)(executor);
            free_blocks(plan, blocks, n, NULL);
            return r->stage;
        }
    }
    rc = ((launch_fn)plan->launch)(workspace, size, executor, NULL);
    if (rc != 0) fail(plan, r, ACLNNGEN_LAUNCH, -1, rc);
    destroy_handles(plan, handles, n);  /* right after the launch, as op-plugin does */
    if (rc != 0) {
        FN(plan, destroy_executor_fn, ACLNNGEN_FN_DESTROY_EXECUTOR)(executor);  /* never launched */
        free_blocks(plan, blocks, n, workspace);
        return r->stage;
    }
    rc = FN(plan, synchronize_fn, ACLNNGEN_FN_SYNCHRONIZE)(NULL);
    if (rc != 0) {
        fail(plan, r, ACLNNGEN_SYNCHRONIZE, -1, rc);
        free_blocks(plan, blocks, n, workspace);
        return r->stage;
    }
    for (int32_t k = 0; k < n; k++) {
        const struct aclnngen_item *it = &plan->items[k];
        if (it->kind != ACLNNGEN_OUTPUT) continue;
        if (plan->host) {
            rc = copy(host[k], (size_t)it->nbytes, blocks[k], (size_t)it->nbytes, plan->memcpy_to_host);
            if (rc != 0) {
                fail(plan, r, ACLNNGEN_COPY_OUT, k, rc);
                free_blocks(plan, blocks, n, workspace);
                return r->stage;
            }
        } else {
            data[k] = (uint64_t)(uintptr_t)blocks[k];  /* the caller's now */
            blocks[k] = NULL;
        }
    }
    free_blocks(plan, blocks, n, workspace);
    return ACLNNGEN_DONE;

undo:
    destroy_handles(plan, handles, n);
    free_blocks(plan, blocks, n, NULL);
    return r->stage;
}
