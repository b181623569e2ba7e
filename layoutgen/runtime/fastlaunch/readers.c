/* Kinds of arrays and the one read of an argument: which way each array is read (its kind's mode, or its
 * Python fast reader's), the read itself, and whether a C-level read agrees with the Python reader's. */
#include "fastlaunch.h"

/* List a kind: where another call (Python code ran since the caller looked) listed it first, or the list is
 * full, nothing. The references are the list's. */
void fl_list_kind(FastState *st, const Kind *kind) {
    if (fl_find_kind(st, kind->type) != NULL || st->n_kinds >= MAX_KINDS)
        return;
    Py_INCREF(kind->type);
    Py_XINCREF(kind->pointer_type);
    st->kinds[st->n_kinds++] = *kind;
}

static int read_fields(FastState *st, PyObject *a, Kind *kind, Read *r) { return fl_read_cupy_fields(a, kind, r); }

const CRead fl_c_reads[N_C_READS] = {
    [C_READ_FIELDS] = {"fields", MODE_CUPY_FIELDS, MODE_CUPY_ATTRS, 0, "ptr", read_fields, fl_register_cupy},
    [C_READ_DLPACK] = {"dlpack", MODE_DLPACK, MODE_TORCH_ATTRS, 1, "cuda_stream", fl_read_dlpack, fl_register_torch},
};

int fl_c_read_of(const FastState *st, PyObject *reader) {
    for (int k = 0; reader != NULL && k < N_C_READS; k++)
        if (st->c_readers[k] == reader)
            return k;
    return -1;
}

int fl_c_read_of_mode(int mode) {
    for (int k = 0; k < N_C_READS; k++)
        if (fl_c_reads[k].mode == mode)
            return k;
    return -1;
}

/* A Python int as an address: 0 where it is none (negative, too large, not an int). */
int fl_as_address(PyObject *value, uint64_t *out) {
    if (value == NULL || !PyLong_Check(value))
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (v >> 63)  /* overlap arithmetic is signed 64-bit */
        return 0;
    *out = v;
    return 1;
}

int fl_equal(PyObject *x, PyObject *y) {
    if (x == y)
        return 1;
    if (x == NULL || y == NULL)
        return 0;
    int eq = PyObject_RichCompareBool(x, y, Py_EQ);
    if (eq < 0) {
        fl_swallow();
        return 0;
    }
    return eq;
}

/* Python ints in a tuple (torch.Size is one) equal to `values`. */
int fl_ints_equal(PyObject *tuple, const int64_t *values, int n) {
    if (tuple == NULL || !PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != n)
        return 0;
    for (int k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyLong_Check(item))
            return 0;
        long long v = PyLong_AsLongLong(item);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (v != values[k])
            return 0;
    }
    return 1;
}

/* Read one argument in `mode` as launch.py's readers read it; 0 where it cannot be (an error is cleared, but
 * for one that stays set). Where a C-level read does not apply to this array (more dims than read here,
 * another MemoryPointer type, a tensor DLPack does not export as read here), its attributes are read, as the
 * Python reader reads them. */
int fl_read_array(FastState *st, PyObject *a, int mode, Kind *kind, PyObject *reader, Read *r) {
    r->type = Py_TYPE(a);
    r->mode = mode;
    r->requires_grad = -1;
    r->inference = -1;
    int row = mode == MODE_CUPY_FIELDS || mode == MODE_DLPACK ? fl_c_read_of_mode(mode) : -1;
    if (row >= 0) {  /* a framework's own C read */
        if (fl_c_reads[row].read(st, a, kind, r))
            return 1;
        if (PyErr_Occurred())
            return 0;
        Py_CLEAR(r->dtype);
        r->mode = mode = fl_c_reads[row].attrs_mode;
    }
    if (mode == MODE_CUPY_ATTRS) {
        PyObject *data = PyObject_GetAttr(a, st->s_data);
        if (data == NULL)
            goto fail;
        PyObject *ptr = PyObject_GetAttr(data, st->s_ptr);
        int ok = fl_as_address(ptr, &r->ptr);
        Py_XDECREF(ptr);
        if (ok)
            r->f[3] = PyObject_GetAttr(data, st->s_device_id);
        Py_DECREF(data);
        if (!ok || r->f[3] == NULL)
            goto fail;
        if ((r->f[0] = PyObject_GetAttr(a, st->s_shape)) == NULL
            || (r->f[1] = PyObject_GetAttr(a, st->s_strides)) == NULL
            || (r->f[2] = PyObject_GetAttr(a, st->s_dtype)) == NULL)
            goto fail;
        return 1;
    }
    if (mode == MODE_TORCH_ATTRS) {
        PyObject *ptr = PyObject_CallMethodNoArgs(a, st->s_data_ptr);
        int ok = fl_as_address(ptr, &r->ptr);
        Py_XDECREF(ptr);
        if (!ok)
            goto fail;
        if ((r->f[0] = PyObject_GetAttr(a, st->s_shape)) == NULL
            || (r->f[1] = PyObject_CallMethodNoArgs(a, st->s_stride)) == NULL
            || (r->f[2] = PyObject_GetAttr(a, st->s_dtype)) == NULL
            || (r->f[3] = PyObject_GetAttr(a, st->s_device)) == NULL
            || (r->f[4] = PyObject_CallMethodNoArgs(a, st->s_is_neg)) == NULL)
            goto fail;
        return 1;
    }
    PyObject *got = fl_call_held(reader, a);  /* the reader is borrowed from the readers' dict */
    if (got == NULL || !PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
        Py_XDECREF(got);
        goto fail;
    }
    r->f[0] = Py_NewRef(PyTuple_GET_ITEM(got, 0));
    int ok = fl_as_address(PyTuple_GET_ITEM(got, 1), &r->ptr);
    Py_DECREF(got);
    if (!ok)
        goto fail;
    return 1;
fail:
    fl_swallow();
    return 0;
}

/* The mode `a` is read in, its kind where listed, its reader: -1 where it has no fast reader (or an error
 * stays set). `*torch_modes` is read once a call, where a tensor needs it. */
int fl_mode_of(FastState *st, PyObject *a, int *torch_modes, Kind **kind, PyObject **reader) {
    *kind = fl_find_kind(st, Py_TYPE(a));
    if (*kind != NULL) {
        if ((*kind)->mode == MODE_DLPACK) {
            if (*torch_modes < 0 && (*torch_modes = fl_torch_modes_on(st)) < 0)
                return -1;
            return *torch_modes ? MODE_TORCH_ATTRS : MODE_DLPACK;  /* under a mode: read as Python does */
        }
        return (*kind)->mode;
    }
    *reader = st->readers ? PyDict_GetItemWithError(st->readers, (PyObject *)Py_TYPE(a)) : NULL;  /* borrowed */
    if (*reader == NULL) {  /* a kind the Python path has not read yet, or one it validates every call */
        fl_swallow();
        return -1;
    }
    int row = fl_c_read_of(st, *reader);
    return row >= 0 ? fl_c_reads[row].attrs_mode : MODE_READER;
}

/* Whether the C-level read `r` of an array holds what its Python reader read (`sig`, `ptr`): cupy_reader's
 * (type, shape, strides, dtype, device_id) or torch_reader's (type, shape, stride(), dtype, device, is_neg()),
 * every field: a plan taught with a validated read is keyed on the C read only where the two are one. */
int fl_read_agrees(FastState *st, const Read *r, PyObject *sig, uint64_t ptr) {
    if (r->ptr != ptr || !PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) < 1 || PyTuple_GET_ITEM(sig, 0) != (PyObject *)r->type)
        return 0;
    if (r->mode == MODE_CUPY_FIELDS) {
        PyObject *device_id = PyTuple_GET_SIZE(sig) == 5 ? PyTuple_GET_ITEM(sig, 4) : NULL;
        return PyTuple_GET_SIZE(sig) == 5 && fl_ints_equal(PyTuple_GET_ITEM(sig, 1), r->shape, r->ndim)
               && fl_ints_equal(PyTuple_GET_ITEM(sig, 2), r->strides, r->ndim) && PyTuple_GET_ITEM(sig, 3) == r->dtype
               && PyLong_CheckExact(device_id) && PyLong_AsLongLong(device_id) == r->device && !PyErr_Occurred();
    }
    return r->mode == MODE_DLPACK && PyTuple_GET_SIZE(sig) == 6
           && fl_ints_equal(PyTuple_GET_ITEM(sig, 1), r->shape, r->ndim)
           && fl_ints_equal(PyTuple_GET_ITEM(sig, 2), r->strides, r->ndim) && PyTuple_GET_ITEM(sig, 5) == Py_False
           && fl_torch_dtype_is(st, PyTuple_GET_ITEM(sig, 3), r)
           && fl_torch_device_is(st, PyTuple_GET_ITEM(sig, 4), r->device);
}
