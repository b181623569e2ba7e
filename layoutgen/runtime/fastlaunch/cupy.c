/* CuPy arrays: their fields, as cupy/_core/core.pxd and cupy/cuda/memory.pxd declare them (CuPy 13, 14).
 * Cython lays a cdef class out as PyObject_HEAD, its vtable pointer, then the fields in declaration order.
 * Reading them costs nothing; `a.shape` and `a.strides` each build a tuple (~50 ns). The layout is not
 * taken on trust: a type is read this way only where its attributes are CuPy's own descriptors (no Python
 * class redefines them: reading one reads the field) and once one of its arrays, read through its
 * attributes, was found to hold exactly these values here (fl_register_cupy); each call checks the pointer's
 * type, and each plan's fields are those its arrays' attributes gave (plans.c's plan_arg).
 */
#include "fastlaunch.h"

typedef struct {
    Py_ssize_t *begin, *end, *capacity;  /* std::vector<Py_ssize_t> (libstdc++ and libc++) */
} CxxVector;

typedef struct {
    PyObject_HEAD
    void *vtab;
    PyObject *weakref;
    Py_ssize_t size;
    CxxVector shape, strides;  /* strides in bytes */
    int c_contiguous, f_contiguous, index_32_bits;
    PyObject *dtype;
    PyObject *data;  /* cupy.cuda.memory.MemoryPointer */
    PyObject *base;
} CupyArray;

typedef struct {
    PyObject_HEAD
    void *vtab;
    intptr_t ptr;
    int device_id;
    PyObject *mem;
} CupyPointer;

int fl_read_cupy_fields(PyObject *a, const Kind *kind, Read *r) {
    const CupyArray *c = (const CupyArray *)a;
    PyObject *data = c->data;
    if (data == NULL || Py_TYPE(data) != kind->pointer_type || c->dtype == NULL)
        return 0;
    Py_ssize_t ndim = c->shape.end - c->shape.begin;
    if (ndim < 0 || ndim > MAX_DIMS || c->strides.end - c->strides.begin != ndim || (ndim && !c->shape.begin)
        || (ndim && !c->strides.begin))
        return 0;
    intptr_t ptr = ((const CupyPointer *)data)->ptr;
    if (ptr < 0)
        return 0;
    r->ndim = (int)ndim;
    for (Py_ssize_t k = 0; k < ndim; k++) {
        r->shape[k] = c->shape.begin[k];
        r->strides[k] = c->strides.begin[k];
    }
    r->ptr = (uint64_t)ptr;
    r->device = ((const CupyPointer *)data)->device_id;
    r->dtype = Py_NewRef(c->dtype);
    return 1;
}

/* Whether reading attribute `name` of a `type` instance reads what a C-defined (static) type's descriptor
 * gives: no Python class in its MRO redefines it, and the type looks attributes up as that one does (no
 * __getattribute__ or __getattr__ of a subclass). */
static int reads_descriptor(PyTypeObject *type, PyObject *name) {
    PyObject *d = PyObject_GetAttr((PyObject *)type, name);
    int ok = d != NULL && (Py_IS_TYPE(d, &PyGetSetDescr_Type) || Py_IS_TYPE(d, &PyMemberDescr_Type));
    if (ok) {
        PyTypeObject *owner = PyDescr_TYPE(d);
        ok = !(owner->tp_flags & Py_TPFLAGS_HEAPTYPE) && PyType_IsSubtype(type, owner)
             && type->tp_getattro == owner->tp_getattro;
    }
    Py_XDECREF(d);
    return ok;
}

/* Register a's type as read through its fields where reading its attributes reads CuPy's descriptors and
 * a, read through its attributes (`sig`, `ptr`), holds exactly those values there. The checks before any
 * pointer in the object is followed: the type is large enough, its `data` and `dtype` fields are the very
 * objects its attributes return, its vectors' lengths are the shape's. 1, or 0 where an error stays set. */
int fl_register_cupy(FastState *st, PyObject *a, PyObject *sig, uint64_t ptr) {
    PyTypeObject *type = Py_TYPE(a);
    if (fl_find_kind(st, type) != NULL || st->n_kinds >= MAX_KINDS || type->tp_basicsize < (Py_ssize_t)sizeof(CupyArray)
        || !PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) != 5)
        return 1;
    const CupyArray *c = (const CupyArray *)a;
    PyObject *shape = PyTuple_GET_ITEM(sig, 1), *data = NULL, *dtype = NULL;
    int ok = reads_descriptor(type, st->s_data) && reads_descriptor(type, st->s_dtype)
             && reads_descriptor(type, st->s_shape) && reads_descriptor(type, st->s_strides)
             && (data = PyObject_GetAttr(a, st->s_data)) != NULL && (dtype = PyObject_GetAttr(a, st->s_dtype)) != NULL
             && c->data == data && c->dtype == dtype && Py_TYPE(data)->tp_basicsize >= (Py_ssize_t)sizeof(CupyPointer)
             && reads_descriptor(Py_TYPE(data), st->s_ptr) && reads_descriptor(Py_TYPE(data), st->s_device_id)
             && PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) >= 1
             && c->shape.end - c->shape.begin == PyTuple_GET_SIZE(shape);
    if (ok) {
        Kind kind = {type, MODE_CUPY_FIELDS, Py_TYPE(data), NULL, 0, 0, 0, 0};
        Read r;
        fl_clear_read(&r);
        r.type = type;
        r.mode = MODE_CUPY_FIELDS;
        if (fl_read_cupy_fields(a, &kind, &r) && fl_read_agrees(st, &r, sig, ptr))  /* the vectors followed only now */
            fl_list_kind(st, &kind);
        fl_release_read(&r);
    }
    Py_XDECREF(data);
    Py_XDECREF(dtype);
    return fl_swallow();
}
