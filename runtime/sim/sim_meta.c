/* sim_meta.c: aclTensor, aclScalar, the arrays and lists, and their getters (acl_meta.h).
 *
 * Creation copies everything it is given (the caller's arrays may be freed right after) and
 * never reads tensor data. Failures return NULL (creators) or a status (the rest):
 *   NULL tensor / out-pointer, NULL array with a non-zero count      161001 (creators: NULL)
 *   negative dim/stride/offset, unknown handle, wrong owner          161002 (creators: NULL)
 * A NULL handle passed to a destroy function is accepted (returns 0, like deleting nullptr).
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

static int64_t *dup_i64(const int64_t *v, uint64_t n)
{
    int64_t *out = malloc((n ? n : 1) * sizeof *out);
    if (out && n)
        memcpy(out, v, n * sizeof *out);
    return out;
}

/* A tensor's dims, strides and storage dims live in one block (dims points at its start, the
 * others into it): one allocation per descriptor rather than three, freed through t->dims. */
static int64_t *dims_block(const int64_t *dims, const int64_t *strides, uint64_t n,
                           const int64_t *storage, uint64_t ns)
{
    int64_t *out = malloc((2 * n + ns ? 2 * n + ns : 1) * sizeof *out);
    if (!out)
        return NULL;
    if (n) {
        memcpy(out, dims, n * sizeof *out);
        memcpy(out + n, strides, n * sizeof *out);
    }
    if (ns)
        memcpy(out + 2 * n, storage, ns * sizeof *out);
    return out;
}

static void sim_tensor_free(aclTensor *t)
{
    if (!t)
        return;
    free(t->dims); /* the block of dims_block */
    free(t);
}

/* Validates and copies a tensor description into t (fields replaced only on success). */
static int tensor_fill(aclTensor *t, const char *fn, const int64_t *viewDims, uint64_t viewDimsNum,
                       int dataType, const int64_t *stride, int64_t offset, int format,
                       const int64_t *storageDims, uint64_t storageDimsNum, void *data)
{
    if (!viewDims && viewDimsNum > 0) {
        sim_err("%s: viewDims is NULL but viewDimsNum is %llu", fn, (unsigned long long)viewDimsNum);
        return SIM_NN_PARAM_NULLPTR;
    }
    if (!stride && viewDimsNum > 0) {
        sim_err("%s: stride is NULL but the tensor has %llu dims", fn,
                (unsigned long long)viewDimsNum);
        return SIM_NN_PARAM_NULLPTR;
    }
    if (!storageDims && storageDimsNum > 0) {
        sim_err("%s: storageDims is NULL but storageDimsNum is %llu", fn,
                (unsigned long long)storageDimsNum);
        return SIM_NN_PARAM_NULLPTR;
    }
    if (viewDimsNum > SIM_MAX_RANK || storageDimsNum > SIM_MAX_RANK) {
        sim_err("%s: %llu dims exceed the simulator's limit of %d", fn,
                (unsigned long long)(viewDimsNum > storageDimsNum ? viewDimsNum : storageDimsNum),
                SIM_MAX_RANK);
        return SIM_NN_PARAM_INVALID;
    }
    for (uint64_t k = 0; k < viewDimsNum; k++) {
        if (viewDims[k] < 0) {
            sim_err("%s: viewDims[%llu] is %lld; dims must be >= 0", fn, (unsigned long long)k,
                    (long long)viewDims[k]);
            return SIM_NN_PARAM_INVALID;
        }
        if (stride[k] < 0) {
            sim_err("%s: stride[%llu] is %lld; strides must be >= 0", fn, (unsigned long long)k,
                    (long long)stride[k]);
            return SIM_NN_PARAM_INVALID;
        }
    }
    for (uint64_t k = 0; k < storageDimsNum; k++)
        if (storageDims[k] < 0) {
            sim_err("%s: storageDims[%llu] is %lld; dims must be >= 0", fn, (unsigned long long)k,
                    (long long)storageDims[k]);
            return SIM_NN_PARAM_INVALID;
        }
    if (offset < 0) {
        sim_err("%s: offset is %lld; it must be >= 0", fn, (long long)offset);
        return SIM_NN_PARAM_INVALID;
    }
    int64_t *dims = dims_block(viewDims, stride, viewDimsNum, storageDims, storageDimsNum);
    if (!dims) {
        sim_err("%s: out of host memory", fn);
        return SIM_NN_INNER;
    }
    free(t->dims); /* the block of dims_block */
    t->ndim = (int64_t)viewDimsNum;
    t->dims = dims;
    t->strides = dims + viewDimsNum;
    t->storage_ndim = (int64_t)storageDimsNum;
    t->storage_dims = dims + 2 * viewDimsNum;
    t->offset = offset;
    t->dtype = dataType;
    t->format = format;
    t->data = data;
    return SIM_OK;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData)
{
    aclTensor *t = calloc(1, sizeof *t);
    if (!t) {
        sim_err("aclCreateTensor: out of host memory");
        return NULL;
    }
    if (tensor_fill(t, "aclCreateTensor", viewDims, viewDimsNum, (int)dataType, stride, offset,
                    (int)format, storageDims, storageDimsNum, tensorData) != SIM_OK) {
        sim_tensor_free(t);
        return NULL;
    }
    SIM_LOCK();
    int ok = sim_reg_add(t, SIM_H_TENSOR) == 0;
    if (ok)
        sim_g.counters.tensors++;
    SIM_UNLOCK();
    if (!ok) {
        sim_tensor_free(t);
        sim_err("aclCreateTensor: out of host memory");
        return NULL;
    }
    return t;
}

aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum,
                          aclDataType dataType, const int64_t *stride, int64_t offset,
                          aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                          void *tensorDataAddr)
{
    if (!tensor) {
        sim_err("aclInitTensor: tensor is NULL");
        return SIM_NN_PARAM_NULLPTR;
    }
    SIM_LOCK();
    int rc;
    if (sim_reg_type(tensor) != SIM_H_TENSOR) {
        sim_err("aclInitTensor: %p is not a live aclTensor", (void *)tensor);
        rc = SIM_NN_PARAM_INVALID;
    } else {
        rc = tensor_fill(tensor, "aclInitTensor", viewDims, viewDimsNum, (int)dataType, stride,
                         offset, (int)format, storageDims, storageDimsNum, tensorDataAddr);
    }
    SIM_UNLOCK();
    return rc;
}

/* Bytes of a scalar of this dtype; 0 when a scalar of it cannot be made. */
static int scalar_bytes(int dtype)
{
    int bits = sim_dtype_bits(dtype);
    return (bits >= 8 && bits % 8 == 0) ? bits / 8 : 0;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType)
{
    if (!value) {
        sim_err("aclCreateScalar: value is NULL");
        return NULL;
    }
    int nbytes = scalar_bytes((int)dataType);
    if (nbytes == 0) {
        sim_err("aclCreateScalar: %d is not a numeric aclDataType a scalar can hold",
                (int)dataType);
        return NULL;
    }
    aclScalar *s = calloc(1, sizeof *s);
    if (!s) {
        sim_err("aclCreateScalar: out of host memory");
        return NULL;
    }
    s->dtype = (int)dataType;
    s->nbytes = nbytes;
    memcpy(s->v.b, value, (size_t)nbytes);
    SIM_LOCK();
    int ok = sim_reg_add(s, SIM_H_SCALAR) == 0;
    if (ok)
        sim_g.counters.scalars++;
    SIM_UNLOCK();
    if (!ok) {
        free(s);
        sim_err("aclCreateScalar: out of host memory");
        return NULL;
    }
    return s;
}

/* Shared body of the three array creators. */
static void *array_create(const char *fn, const void *value, uint64_t size, size_t elem,
                          int type)
{
    if (!value && size > 0) {
        sim_err("%s: value is NULL but size is %llu", fn, (unsigned long long)size);
        return NULL;
    }
    if (size > ((uint64_t)1 << 40) / elem) {
        sim_err("%s: size %llu is too large", fn, (unsigned long long)size);
        return NULL;
    }
    /* all three array structs are { uint64_t n; T *v; } */
    struct aclIntArray *a = calloc(1, sizeof(struct aclIntArray));
    void *copy = malloc(size ? size * elem : 1);
    if (!a || !copy) {
        free(a);
        free(copy);
        sim_err("%s: out of host memory", fn);
        return NULL;
    }
    if (size)
        memcpy(copy, value, size * elem);
    a->n = size;
    a->v = copy;
    SIM_LOCK();
    int ok = sim_reg_add(a, type) == 0;
    if (ok) {
        if (type == SIM_H_INT_ARRAY)
            sim_g.counters.int_arrays++;
        else if (type == SIM_H_FLOAT_ARRAY)
            sim_g.counters.float_arrays++;
        else
            sim_g.counters.bool_arrays++;
    }
    SIM_UNLOCK();
    if (!ok) {
        free(copy);
        free(a);
        sim_err("%s: out of host memory", fn);
        return NULL;
    }
    return a;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)
{
    return array_create("aclCreateIntArray", value, size, sizeof(int64_t), SIM_H_INT_ARRAY);
}

aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size)
{
    return array_create("aclCreateFloatArray", value, size, sizeof(float), SIM_H_FLOAT_ARRAY);
}

aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size)
{
    return array_create("aclCreateBoolArray", value, size, sizeof(bool), SIM_H_BOOL_ARRAY);
}

/* Lists take ownership of their elements: destroying the list destroys them, and they cannot
 * be destroyed on their own meanwhile. */
aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size)
{
    if (!value && size > 0) {
        sim_err("aclCreateTensorList: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    if (size > ((uint64_t)1 << 32)) {
        sim_err("aclCreateTensorList: size %llu is too large", (unsigned long long)size);
        return NULL;
    }
    aclTensorList *l = calloc(1, sizeof *l);
    aclTensor **v = malloc((size ? size : 1) * sizeof *v);
    if (!l || !v) {
        free(l);
        free(v);
        sim_err("aclCreateTensorList: out of host memory");
        return NULL;
    }
    SIM_LOCK();
    for (uint64_t k = 0; k < size; k++) {
        const aclTensor *t = value[k];
        const char *why = NULL;
        if (!t)
            why = "is NULL";
        else if (sim_reg_type(t) != SIM_H_TENSOR)
            why = "is not a live aclTensor";
        else if (t->owner)
            why = "already belongs to an aclTensorList";
        for (uint64_t j = 0; !why && j < k; j++)
            if (v[j] == t)
                why = "appears twice";
        if (why) {
            SIM_UNLOCK();
            sim_err("aclCreateTensorList: element %llu %s", (unsigned long long)k, why);
            free(v);
            free(l);
            return NULL;
        }
        v[k] = (aclTensor *)t;
    }
    if (sim_reg_add(l, SIM_H_TENSOR_LIST) != 0) {
        SIM_UNLOCK();
        free(v);
        free(l);
        sim_err("aclCreateTensorList: out of host memory");
        return NULL;
    }
    for (uint64_t k = 0; k < size; k++)
        v[k]->owner = l;
    l->n = size;
    l->v = v;
    sim_g.counters.tensor_lists++;
    SIM_UNLOCK();
    return l;
}

aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size)
{
    if (!value && size > 0) {
        sim_err("aclCreateScalarList: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    if (size > ((uint64_t)1 << 32)) {
        sim_err("aclCreateScalarList: size %llu is too large", (unsigned long long)size);
        return NULL;
    }
    aclScalarList *l = calloc(1, sizeof *l);
    aclScalar **v = malloc((size ? size : 1) * sizeof *v);
    if (!l || !v) {
        free(l);
        free(v);
        sim_err("aclCreateScalarList: out of host memory");
        return NULL;
    }
    SIM_LOCK();
    for (uint64_t k = 0; k < size; k++) {
        const aclScalar *s = value[k];
        const char *why = NULL;
        if (!s)
            why = "is NULL";
        else if (sim_reg_type(s) != SIM_H_SCALAR)
            why = "is not a live aclScalar";
        else if (s->owner)
            why = "already belongs to an aclScalarList";
        for (uint64_t j = 0; !why && j < k; j++)
            if (v[j] == s)
                why = "appears twice";
        if (why) {
            SIM_UNLOCK();
            sim_err("aclCreateScalarList: element %llu %s", (unsigned long long)k, why);
            free(v);
            free(l);
            return NULL;
        }
        v[k] = (aclScalar *)s;
    }
    if (sim_reg_add(l, SIM_H_SCALAR_LIST) != 0) {
        SIM_UNLOCK();
        free(v);
        free(l);
        sim_err("aclCreateScalarList: out of host memory");
        return NULL;
    }
    for (uint64_t k = 0; k < size; k++)
        v[k]->owner = l;
    l->n = size;
    l->v = v;
    sim_g.counters.scalar_lists++;
    SIM_UNLOCK();
    return l;
}

/* Frees a meta handle (registry entry already removed or about to be) and fixes counters. */
void sim_free_handle_locked(void *p, int type)
{
    switch (type) {
    case SIM_H_TENSOR:
        sim_tensor_free(p);
        sim_g.counters.tensors--;
        break;
    case SIM_H_SCALAR:
        free(p);
        sim_g.counters.scalars--;
        break;
    case SIM_H_INT_ARRAY:
    case SIM_H_FLOAT_ARRAY:
    case SIM_H_BOOL_ARRAY: {
        struct aclIntArray *a = p;
        free(a->v);
        free(a);
        if (type == SIM_H_INT_ARRAY)
            sim_g.counters.int_arrays--;
        else if (type == SIM_H_FLOAT_ARRAY)
            sim_g.counters.float_arrays--;
        else
            sim_g.counters.bool_arrays--;
        break;
    }
    case SIM_H_TENSOR_LIST: {
        aclTensorList *l = p;
        for (uint64_t k = 0; k < l->n; k++) {
            sim_reg_del(l->v[k]);
            sim_free_handle_locked(l->v[k], SIM_H_TENSOR);
        }
        free(l->v);
        free(l);
        sim_g.counters.tensor_lists--;
        break;
    }
    case SIM_H_SCALAR_LIST: {
        aclScalarList *l = p;
        for (uint64_t k = 0; k < l->n; k++) {
            sim_reg_del(l->v[k]);
            sim_free_handle_locked(l->v[k], SIM_H_SCALAR);
        }
        free(l->v);
        free(l);
        sim_g.counters.scalar_lists--;
        break;
    }
    default:
        break;
    }
}

static const char *type_name(int type)
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

static aclnnStatus destroy_handle(const char *fn, const void *p, int type)
{
    if (!p)
        return SIM_OK;
    SIM_LOCK();
    int rc = SIM_OK;
    if (sim_reg_type(p) != type) {
        sim_err("%s: %p is not a live %s (destroyed twice?)", fn, p, type_name(type));
        rc = SIM_NN_PARAM_INVALID;
    } else if (type == SIM_H_TENSOR && ((const aclTensor *)p)->owner) {
        sim_err("%s: the aclTensor belongs to an aclTensorList; destroying the list destroys it",
                fn);
        rc = SIM_NN_PARAM_INVALID;
    } else if (type == SIM_H_SCALAR && ((const aclScalar *)p)->owner) {
        sim_err("%s: the aclScalar belongs to an aclScalarList; destroying the list destroys it",
                fn);
        rc = SIM_NN_PARAM_INVALID;
    } else {
        sim_reg_del(p);
        sim_free_handle_locked((void *)p, type);
    }
    SIM_UNLOCK();
    return rc;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor)
{
    return destroy_handle("aclDestroyTensor", tensor, SIM_H_TENSOR);
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar)
{
    return destroy_handle("aclDestroyScalar", scalar, SIM_H_SCALAR);
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array)
{
    return destroy_handle("aclDestroyIntArray", array, SIM_H_INT_ARRAY);
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray *array)
{
    return destroy_handle("aclDestroyFloatArray", array, SIM_H_FLOAT_ARRAY);
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray *array)
{
    return destroy_handle("aclDestroyBoolArray", array, SIM_H_BOOL_ARRAY);
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array)
{
    return destroy_handle("aclDestroyTensorList", array, SIM_H_TENSOR_LIST);
}

aclnnStatus aclDestroyScalarList(const aclScalarList *array)
{
    return destroy_handle("aclDestroyScalarList", array, SIM_H_SCALAR_LIST);
}

/* ------------------------------------------------------------------------------------------ */
/* getters                                                                                    */

/* Looks the tensor up; on success returns with the lock HELD. */
static int getter_enter(const char *fn, const aclTensor *t, const void *out1, const void *out2)
{
    if (!t || !out1 || !out2) {
        sim_err("%s: %s is NULL", fn, !t ? "tensor" : "an output pointer");
        return SIM_NN_PARAM_NULLPTR;
    }
    SIM_LOCK();
    if (sim_reg_type(t) != SIM_H_TENSOR) {
        SIM_UNLOCK();
        sim_err("%s: %p is not a live aclTensor", fn, (const void *)t);
        return SIM_NN_PARAM_INVALID;
    }
    return SIM_OK;
}

/* Hands out a malloc'd copy (the caller frees it; aclsim_free or libc free). */
static aclnnStatus get_dims(const char *fn, const aclTensor *t, int which, int64_t **out,
                            uint64_t *num)
{
    int rc = getter_enter(fn, t, out, num);
    if (rc != SIM_OK)
        return rc;
    const int64_t *src = which == 0 ? t->dims : which == 1 ? t->strides : t->storage_dims;
    uint64_t n = (uint64_t)(which == 2 ? t->storage_ndim : t->ndim);
    int64_t *copy = dup_i64(src, n);
    SIM_UNLOCK();
    if (!copy) {
        sim_err("%s: out of host memory", fn);
        return SIM_NN_INNER;
    }
    *out = copy;
    *num = n;
    return SIM_OK;
}

aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum)
{
    return get_dims("aclGetViewShape", tensor, 0, viewDims, viewDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue, uint64_t *stridesNum)
{
    return get_dims("aclGetViewStrides", tensor, 1, stridesValue, stridesNum);
}

aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                               uint64_t *storageDimsNum)
{
    return get_dims("aclGetStorageShape", tensor, 2, storageDims, storageDimsNum);
}

aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset)
{
    int rc = getter_enter("aclGetViewOffset", tensor, offset, offset);
    if (rc != SIM_OK)
        return rc;
    *offset = tensor->offset;
    SIM_UNLOCK();
    return SIM_OK;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format)
{
    int rc = getter_enter("aclGetFormat", tensor, format, format);
    if (rc != SIM_OK)
        return rc;
    *format = (aclFormat)tensor->format;
    SIM_UNLOCK();
    return SIM_OK;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType)
{
    int rc = getter_enter("aclGetDataType", tensor, dataType, dataType);
    if (rc != SIM_OK)
        return rc;
    *dataType = (aclDataType)tensor->dtype;
    SIM_UNLOCK();
    return SIM_OK;
}
