/* aclsim_core.h: the generic op protocol of the simulator, for generated op entry points.
 *
 * A generated `sim_ops.c` includes only this header and writes, per op, a pair of entry points
 * with the op's exact CANN prototypes that describe their arguments and forward:
 *
 *     aclnnStatus aclnnFooGetWorkspaceSize(const aclTensor *self, const aclScalar *alpha,
 *                                          aclTensor *out, uint64_t *workspaceSize,
 *                                          aclOpExecutor **executor)
 *     {
 *         const sim_arg args[] = {
 *             {SIM_ARG_TENSOR_IN, "self", self, 0},
 *             {SIM_ARG_SCALAR, "alpha", alpha, 0},
 *             {SIM_ARG_TENSOR_OUT, "out", out, 0},
 *         };
 *         return sim_prepare("aclnnFoo", args, 3, workspaceSize, executor);
 *     }
 *     aclnnStatus aclnnFoo(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
 *                          aclrtStream stream)
 *     {
 *         return sim_launch("aclnnFoo", workspace, workspaceSize, executor, stream);
 *     }
 *
 * The CANN declarations come from ACLSIM_ABI_HEADER: by default the hand-written stand-in
 * "aclsim_abi.h"; the build passes -DACLSIM_ABI_HEADER="acl_runtime.h" (and the generated
 * directory with -I) to use the generated declarations instead. Either way the header must be
 * plain declarations that rely on <stdint.h>, <stddef.h> and <stdbool.h>, included here first.
 */
#ifndef ACLSIM_CORE_H
#define ACLSIM_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef ACLSIM_ABI_HEADER
#define ACLSIM_ABI_HEADER "aclsim_abi.h"
#endif
#include ACLSIM_ABI_HEADER

#include "aclsim_controls.h"

/* Op identity. An op is its package and its symbol: two generated packages may both define
 * aclnnXxx (each in its own op library, loaded RTLD_LOCAL), and the hooks must tell them apart.
 * The build defines ACLSIM_PACKAGE as the package's import name (a quoted string); generated
 * entry points pass ACLSIM_OP_ID("aclnnXxx") = "package:aclnnXxx". Without it the package part is
 * empty (":aclnnXxx") and the hooks look the symbol up by name. Messages show the symbol only. */
#ifndef ACLSIM_PACKAGE
#define ACLSIM_PACKAGE ""
#endif
#define ACLSIM_OP_ID(symbol) ACLSIM_PACKAGE ":" symbol

typedef struct {
    sim_arg_kind kind;
    const char *name;   /* the parameter's name, used in error messages and by the hooks */
    const void *handle; /* see sim_arg_kind */
    int64_t i;          /* BOOL / INT64 attribute value */
} sim_arg;

/* First phase. Checks, in order:
 *   1. a NULL required handle                  -> 161001 naming the parameter
 *   2. a handle that is not live (or wrong type) -> 161002
 *   3. each non-empty tensor: data 32-byte aligned, strided extent inside ONE live aclrtMalloc
 *      block (host memory is never read)       -> 161002
 * then snapshots all arguments into a new executor and asks the prepare hook (none -> 561003).
 * NULL workspaceSize/executor pointers are reported to the hook (aclsim_view_flags); the hook's
 * status wins; if it accepts them, the result is 561103. */
aclnnStatus sim_prepare(const char *op, const sim_arg *args, int nargs, uint64_t *workspaceSize,
                        aclOpExecutor **executor);

/* Second phase. Checks, in order:
 *   NULL executor                                                -> 161001
 *   executor not live (already ran / destroyed), made by another op's first phase, or launched
 *   before (and not aclSetAclOpExecutorRepeatable)               -> 161002 "executor already ran"
 *   workspaceSize below the announced size                       -> 161002
 *   NULL workspace while a non-zero size was announced           -> 161001
 *   workspace range not inside one live device block             -> 161002
 *   no current context in the calling thread                     -> 107002
 *   stream not live, or its context is being destroyed            -> 361001
 *   a tensor's block freed since prepare, or on another device    -> 161002
 * then queues the run on `stream` (NULL: the default stream of the thread's current context).
 * The run hook is called when the stream is synchronised (aclrtSynchronizeStream, or
 * aclrtDestroyStream / aclrtResetDevice / aclrtDestroyContext / aclFinalize, which run queued
 * work first); a failing run makes that call return 507015 with the hook's message. */
aclnnStatus sim_launch(const char *op, void *workspace, uint64_t workspaceSize,
                       aclOpExecutor *executor, aclrtStream stream);

#endif /* ACLSIM_CORE_H */
