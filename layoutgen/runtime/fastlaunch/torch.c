/* torch tensors: read through the C++ reader (runtime/_torch_cxx_reader.cpp) or DLPack's C exchange API
 * (a plain C function fills a DLTensor in ~40 ns, against ~350 ns for data_ptr(), shape, stride(), dtype,
 * device and is_neg() through Python's C API); their neg bit, requires_grad, inference state and version
 * counters; whether a torch function mode is on; torch's own descriptors found through public API. */
#include "fastlaunch.h"

/* The exchange API table of a tensor type, or NULL (none, another major version). */
const DLPackExchangeAPI *fl_exchange_table(FastState *st, PyTypeObject *type) {
    PyObject *capsule = PyObject_GetAttr((PyObject *)type, st->s_exchange);
    const DLPackExchangeAPI *table = NULL;
    if (capsule != NULL && PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
        DLPackExchangeAPIHeader *h = PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
        for (int hops = 0; h != NULL && hops < 16; h = h->prev_api, hops++)  /* the first table of 1.3 or later */
            if (h->version.major == 1 && h->version.minor >= 3) {
                table = (const DLPackExchangeAPI *)h;
                break;
            }
    }
    Py_XDECREF(capsule);  /* the table lives as long as the process (dlpack.h); the capsule is held by the type */
    fl_swallow();  /* what stays set fails the caller */
    return table;
}

/* The exchange API's DLTensor export of a tensor type, or NULL (no table, or no such export in it). */
DLTensorFromPyObjectFn fl_exchange_api(FastState *st, PyTypeObject *type) {
    const DLPackExchangeAPI *table = fl_exchange_table(st, type);
    return table != NULL ? table->dltensor_from_py_object_no_sync : NULL;
}

/* What an instance's attribute lookup finds for `name` in `type`'s MRO (a new reference; NULL: nothing, or
 * an error set): each class's own dict in MRO order, the walk CPython's attribute lookup makes. Public API
 * only; it costs a dict look-up a class, so the answer is kept per type version (fl_own_descriptors). */
PyObject *fl_type_lookup(PyTypeObject *type, PyObject *name) {
    PyObject *mro = type->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro))
        return NULL;
    Py_INCREF(mro);
    PyObject *found = NULL;
    for (Py_ssize_t k = 0; found == NULL && k < PyTuple_GET_SIZE(mro); k++) {
        PyObject *base = PyTuple_GET_ITEM(mro, k);
        if (!PyType_Check(base))
            continue;
#if PY_VERSION_HEX >= 0x030C0000
        PyObject *dict = PyType_GetDict((PyTypeObject *)base);  /* static builtin types keep theirs elsewhere */
#else
        PyObject *dict = Py_XNewRef(((PyTypeObject *)base)->tp_dict);
#endif
        if (dict == NULL) {
            if (PyErr_Occurred())
                break;
            continue;
        }
        found = Py_XNewRef(PyDict_GetItemWithError(dict, name));  /* str keys: no Python code runs */
        Py_DECREF(dict);
        if (found == NULL && PyErr_Occurred())
            break;
    }
    Py_DECREF(mro);
    return found;
}

/* Whether `type` finds exactly `descr` for `name`. */
static int finds(PyTypeObject *type, PyObject *name, PyObject *descr) {
    PyObject *found = fl_type_lookup(type, name);
    int same = found != NULL && found == descr;
    Py_XDECREF(found);
    fl_swallow();
    return same;
}

/* use_torch's registration of torch.Tensor's is_neg and requires_grad descriptors, where they are the C kinds
 * read directly (`tensor`: torch.Tensor, or NULL: none). 0 where an error stays set. */
int fl_use_torch_descriptors(FastState *st, PyTypeObject *tensor) {
    st->descriptors_generation++;  /* what fl_own_descriptors kept was found against the old ones */
    Py_CLEAR(st->is_neg_descr);
    Py_CLEAR(st->requires_grad_descr);
    st->is_neg_fn = NULL;
    st->requires_grad_get = NULL;
    st->requires_grad_closure = NULL;
    if (tensor == NULL)
        return 1;
    PyObject *d = fl_type_lookup(tensor, st->s_is_neg);
    if (d != NULL && Py_IS_TYPE(d, &PyMethodDescr_Type)
        && (((PyMethodDescrObject *)d)->d_method->ml_flags & ~METH_COEXIST) == METH_NOARGS) {
        st->is_neg_fn = ((PyMethodDescrObject *)d)->d_method->ml_meth;
        st->is_neg_descr = Py_NewRef(d);
    }
    Py_XDECREF(d);
    d = PyErr_Occurred() ? NULL : fl_type_lookup(tensor, st->s_requires_grad);
    if (d != NULL && Py_IS_TYPE(d, &PyGetSetDescr_Type) && ((PyGetSetDescrObject *)d)->d_getset->get != NULL) {
        st->requires_grad_get = ((PyGetSetDescrObject *)d)->d_getset->get;
        st->requires_grad_closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
        st->requires_grad_descr = Py_NewRef(d);
    }
    Py_XDECREF(d);
    return !PyErr_Occurred();
}

/* Which of torch's own descriptors (use_torch's is_neg and requires_grad) a kind's type finds, not a
 * replacement a class or a monkeypatch put in their place: OWN_IS_NEG | OWN_REQUIRES_GRAD. Two MRO walks,
 * kept while the type's version tag is the one they were made under, as CPython's own attribute caches keep
 * theirs: CPython gives a type a new tag (or none, 0) whenever it or one of its bases changes, and never
 * gives a tag twice; use_torch, which may register other descriptors, starts a new generation. */
static int find_own_descriptors(FastState *st, Kind *kind);

static inline int own_descriptors(FastState *st, Kind *kind) {
    PyTypeObject *type = kind->type;
    if (kind->own_generation == st->descriptors_generation && kind->own_tag != 0
        && type->tp_version_tag == kind->own_tag && PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
        return kind->own;
    return find_own_descriptors(st, kind);
}

/* own_descriptors' walks, where what it kept is of another version of the type (or of the descriptors). */
static int find_own_descriptors(FastState *st, Kind *kind) {
    PyTypeObject *type = kind->type;
#if PY_VERSION_HEX >= 0x030C0000
    PyUnstable_Type_AssignVersionTag(type);  /* a type nothing looked an attribute up on since it changed */
#endif
    /* the tag read before the walks: no Python code runs in them, so they see the type of this tag */
    unsigned int tag = PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
    int own = (st->is_neg_fn != NULL && finds(type, st->s_is_neg, st->is_neg_descr) ? OWN_IS_NEG : 0)
              | (st->requires_grad_get != NULL && finds(type, st->s_requires_grad, st->requires_grad_descr)
                     ? OWN_REQUIRES_GRAD : 0);
    kind->own_tag = tag;  /* without one (tags ran out, or none given yet), nothing is kept */
    kind->own_generation = st->descriptors_generation;
    kind->own = own;
    return own;
}

/* t.is_neg() as a new reference (NULL: an error). Where t's type (the kind's) finds torch's own C
 * descriptor (not one a class or a monkeypatch put in its place), its C function is called directly: the
 * same function the method call reaches, which dispatches to no __torch_function__ for the exact types read
 * here outside a mode. An attribute set on the instance itself could shadow is_neg for the Python call; the
 * tensor's own bit is read here, which is the bit the kernel would see. */
static PyObject *tensor_is_neg(FastState *st, Kind *kind, PyObject *t) {
    if (st->is_neg_fn != NULL && (own_descriptors(st, kind) & OWN_IS_NEG))
        return st->is_neg_fn(t, NULL);
    return PyObject_CallMethodNoArgs(t, st->s_is_neg);
}

/* t.requires_grad as a new reference (NULL: an error): torch's own getter called directly where t's type is
 * a listed kind that finds it, else the attribute read. */
PyObject *fl_tensor_requires_grad(FastState *st, PyObject *t) {
    Kind *kind = fl_find_kind(st, Py_TYPE(t));
    if (st->requires_grad_get != NULL && kind != NULL && kind->mode == MODE_DLPACK
        && (own_descriptors(st, kind) & OWN_REQUIRES_GRAD))
        return st->requires_grad_get(t, st->requires_grad_closure);
    return PyObject_GetAttr(t, st->s_requires_grad);
}

static int is_ambiguous(const FastState *st, uint32_t dl_dtype) {
    for (int k = 0; k < st->n_ambiguous; k++)
        if (st->ambiguous[k] == dl_dtype)
            return 1;
    return 0;
}

/* The DLTensor view of `t` (valid while t is unchanged) and its neg bit checked: 0 where it cannot be read. */
int fl_read_dlpack(FastState *st, PyObject *t, Kind *kind, Read *r) {
    DLTensor d;
    memset(&d, 0, sizeof d);
    int bits = -1;  /* the neg bit and requires_grad, where the C++ reader read them */
    const TorchReader *cxx_reader = st->cxx_reader;
    if (cxx_reader != NULL && kind->listed) {
        if (cxx_reader->read(t, &d, &bits) != 0)
            return 0;  /* torch threw: the Python path reads it (and raises what it raises) */
    } else if (kind->from((void *)t, &d) != 0) {
        fl_swallow();
        return 0;
    }
    if (d.ndim < 0 || d.ndim > MAX_DIMS || (d.ndim && (d.shape == NULL || d.strides == NULL)))
        return 0;
    r->ndim = d.ndim;
    for (int k = 0; k < d.ndim; k++) {
        r->shape[k] = d.shape[k];
        r->strides[k] = d.strides[k];
    }
    uint64_t ptr = (uint64_t)(uintptr_t)d.data + d.byte_offset;
    if (ptr >> 63)
        return 0;
    r->ptr = ptr;
    r->device = ((int64_t)d.device.device_type << 32) | (uint32_t)d.device.device_id;
    r->dl_dtype = d.dtype.code | (uint32_t)d.dtype.bits << 8 | (uint32_t)d.dtype.lanes << 16;
    if (is_ambiguous(st, r->dl_dtype) && (r->dtype = PyObject_GetAttr(t, st->s_dtype)) == NULL)
        goto fail;
    /* DLPack has no neg bit: is_neg() is the one read of it torch's Python API offers (the Python path
     * refuses it, LG608). The C++ reader's bit is what torch's own is_neg() answers: taken while t's type
     * finds that descriptor, else the replacement is called, as the Python path calls it. */
    if (bits >= 0 && !(bits & TORCH_NEG)) {
        int own = own_descriptors(st, kind);
        if (own & OWN_IS_NEG) {
            if (own & OWN_REQUIRES_GRAD)
                r->requires_grad = (bits & TORCH_REQUIRES_GRAD) != 0;  /* what torch's own getter answers */
            r->inference = (bits & TORCH_INFERENCE) != 0;
            return 1;
        }
    }
    PyObject *neg = tensor_is_neg(st, kind, t);
    int plain = neg == Py_False;
    Py_XDECREF(neg);
    if (!plain)
        goto fail;
    return 1;
fail:
    fl_swallow();
    return 0;
}

/* Whether `type` is one of dlpack_types (torch.Tensor's own, read through DLPack or the C++ reader). */
int fl_is_listed(FastState *st, PyTypeObject *type) {
    PyObject *types = st->dlpack_types;
    int listed = 0;
    for (Py_ssize_t k = 0; types != NULL && k < PyTuple_GET_SIZE(types); k++)
        listed |= PyTuple_GET_ITEM(types, k) == (PyObject *)type;
    return listed;
}

/* Register t's type as read through DLPack where it is one of dlpack_types and its DLPack read agrees with
 * its Python read (`sig`, `ptr`). 1, or 0 where an error stays set. */
int fl_register_torch(FastState *st, PyObject *t, PyObject *sig, uint64_t ptr) {
    PyTypeObject *type = Py_TYPE(t);
    if (fl_find_kind(st, type) != NULL || st->n_kinds >= MAX_KINDS || st->dlpack_types == NULL)
        return 1;
    int listed = fl_is_listed(st, type);
    Kind kind = {type, MODE_DLPACK, NULL, listed ? fl_exchange_api(st, type) : NULL, listed, 0, 0, 0};
    if (kind.from == NULL)
        return !PyErr_Occurred();
    Read r;
    fl_clear_read(&r);
    r.type = type;
    r.mode = MODE_DLPACK;
    if (fl_read_dlpack(st, t, &kind, &r) && fl_read_agrees(st, &r, sig, ptr))
        fl_list_kind(st, &kind);
    fl_release_read(&r);
    return fl_swallow();
}

/* Whether the DLPack dtype of a read (and, where ambiguous, its torch dtype) is torch dtype `dtype`: the one
 * use_torch was told it exports as. A tensor's dtype changes in place (`t.data = ...`): a plan keyed on a read
 * must be keyed on the dtype validated. */
int fl_torch_dtype_is(FastState *st, PyObject *dtype, const Read *r) {
    if (st->dl_dtypes == NULL || (r->dtype != NULL && r->dtype != dtype))
        return 0;
    PyObject *code = PyDict_GetItemWithError(st->dl_dtypes, dtype);  /* borrowed; a dict of torch's own objects */
    if (code == NULL || !PyLong_Check(code)) {
        PyErr_Clear();
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(code);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return v == r->dl_dtype;
}

/* Whether torch's `device` (its type and index, None: 0) is the DLPack device `dl` (type << 32 | id). */
int fl_torch_device_is(FastState *st, PyObject *device, int64_t dl) {
    PyObject *kind_name = PyObject_GetAttr(device, st->s_type);
    PyObject *index = kind_name ? PyObject_GetAttr(device, st->s_index) : NULL;
    long id = index == Py_None ? 0 : index != NULL && PyLong_Check(index) ? PyLong_AsLong(index) : -1;
    int dl_type = (int)(dl >> 32), dl_id = (int)(uint32_t)dl;
    int ok = index != NULL && !PyErr_Occurred() && PyUnicode_Check(kind_name) && id == dl_id
             && ((PyUnicode_Compare(kind_name, st->s_cuda) == 0 && (dl_type == kDLCUDA || dl_type == kDLROCM))
                 || (PyUnicode_Compare(kind_name, st->s_cpu) == 0 && dl_type == kDLCPU));
    Py_XDECREF(kind_name);
    Py_XDECREF(index);
    return ok;
}

/* Whether a torch function mode may intercept tensors' reads now (it may make data_ptr() & co. answer
 * anything): 1 on, or not known; 0 off; -1 an error that stays set. */
int fl_torch_modes_on(FastState *st) {
    if (st->mode_enabled == NULL)
        return 1;
    if (st->cxx_reader != NULL && st->cxx_calls)
        return st->cxx_reader->function_modes();
    PyObject *on = fl_call_held(st->mode_enabled, NULL);
    int result = on != Py_False;
    Py_XDECREF(on);
    return on == NULL && !fl_swallow() ? -1 : result;
}

/* The written tensors' inference and autograd state, as the Python path checks them (LG635, LG618): 1 where
 * the launch may go on, 0 where the Python path must decide (an error is cleared, but for one that stays). */
int fl_writes_allowed(FastState *st, PyObject *const *arrays, const Read *reads, const int *written,
                      int n_written) {
    /* LG635: an inference tensor written outside inference mode */
    int inference = 0;
    for (int k = 0; !inference && k < n_written; k++) {
        inference = reads[written[k]].inference;
        if (inference < 0) {  /* not read with the rest: asked */
            PyObject *is = PyObject_CallMethodNoArgs(arrays[written[k]], st->s_is_inference);
            inference = is == NULL ? -1 : PyObject_IsTrue(is);
            Py_XDECREF(is);
        }
    }
    if (inference == 1) {  /* allowed in inference mode, as torch allows it */
        PyObject *on = st->inference_enabled ? fl_call_held(st->inference_enabled, NULL) : NULL;
        inference = on == NULL ? -1 : PyObject_IsTrue(on) == 1 ? 0 : -1;
        Py_XDECREF(on);
    }
    if (inference) {  /* refused, or a read failed */
        fl_swallow();
        return 0;
    }
    /* LG618 (TorchWrites.check): a written tensor that requires grad, in grad mode. Each tensor's flag is read
     * first (a getter), the grad mode (a call) only where one is set: the same calls refused, a call fewer
     * where none is (an output's usual state). */
    int wanted = 0;
    for (int k = 0; !wanted && k < n_written; k++) {
        if (reads[written[k]].requires_grad >= 0) {  /* read with the rest, while no Python code ran since */
            wanted = reads[written[k]].requires_grad;
            continue;
        }
        PyObject *wants = fl_tensor_requires_grad(st, arrays[written[k]]);
        wanted = wants == NULL ? -1 : PyObject_IsTrue(wants);
        Py_XDECREF(wants);
    }
    if (wanted == 1) {  /* one requires grad: launched under torch.no_grad() (an optimizer's step) */
        PyObject *on = st->grad_enabled ? fl_call_held(st->grad_enabled, NULL) : NULL;
        wanted = on == NULL ? -1 : PyObject_IsTrue(on);
        Py_XDECREF(on);
    }
    if (wanted) {  /* refused in grad mode, or a read failed */
        fl_swallow();
        return 0;
    }
    return 1;
}

/* bump((the written tensors,)) as TorchWrites.record does: 1, or -1 with the error. The C++ reader bumps
 * those of the listed types in turn; from the first it cannot (another type, or torch threw), the rest go
 * to bump, which raises torch's own error where there is one. */
int fl_bump_versions(FastState *st, PyObject *const *arrays, const int *written, int n_written) {
    int first = 0;
    for (; st->cxx_reader != NULL && st->cxx_calls && first < n_written; first++) {
        PyObject *t = arrays[written[first]];
        const Kind *kind = fl_find_kind(st, Py_TYPE(t));
        if (kind == NULL || kind->mode != MODE_DLPACK || !kind->listed || st->cxx_reader->bump(t) != 0)
            break;
    }
    if (first == n_written)
        return 1;
    PyObject *tensors = PyTuple_New(n_written - first);
    if (tensors == NULL)
        return -1;
    for (int k = first; k < n_written; k++)
        PyTuple_SET_ITEM(tensors, k - first, Py_NewRef(arrays[written[k]]));
    PyObject *ok = st->bump == NULL ? NULL : fl_call_held(st->bump, tensors);
    if (ok == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "layoutgen: torch's version counters could not be bumped");
    Py_DECREF(tensors);
    Py_XDECREF(ok);
    return ok == NULL ? -1 : 1;
}
