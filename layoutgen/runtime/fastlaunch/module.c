/* The module layoutgen.runtime._fastlaunch: its state (FastState, fastlaunch.h), multi-phase init, and the
 * module functions runtime/fastpath.py calls: configure, use_torch, use_torch_reader, and the read-only
 * queries (read, scalar_slot, driver, current_stream, stream_of). The test build adds testing.c's. */
#include "fastlaunch.h"

/* `callable()`, held while it runs: a module-wide callable (a hook, torch's) may be replaced meanwhile. */
PyObject *fl_call_held(PyObject *callable, PyObject *arg) {
    Py_INCREF(callable);
    PyObject *got = arg == NULL ? PyObject_CallNoArgs(callable) : PyObject_CallOneArg(callable, arg);
    Py_DECREF(callable);
    return got;
}

static FastState *state_of(PyObject *module) { return (FastState *)PyModule_GetState(module); }

FastState *fl_state_of_type(PyTypeObject *type) {
    PyObject *module = PyType_GetModuleByDef(type, &fl_module_def);  /* borrowed */
    return module != NULL ? state_of(module) : NULL;
}

/* configure(readers, c_reads, stream_handle, stream_readers, array_type, array_data): what every Launcher reads
 * with (runtime/fastpath.py, once). `c_reads`: {Framework.c_read: (its fast reader, its stream reader)} for the
 * frameworks read here at C level (fl_c_reads' rows; a row not given is read through its reader, as any). */
static PyObject *configure(PyObject *module, PyObject *args) {
    FastState *st = state_of(module);
    PyObject *r, *reads, *sh, *sr, *at, *ad;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!O", &PyDict_Type, &r, &PyDict_Type, &reads, &sh, &PyDict_Type, &sr,
                          &PyType_Type, &at, &ad))
        return NULL;
    /* typed.Array keeps its array in a __slots__ member: read at the member's offset */
    if (!PyObject_TypeCheck(ad, &PyMemberDescr_Type) || ((PyMemberDescrObject *)ad)->d_member->type != T_OBJECT_EX
        || ((PyMemberDescrObject *)ad)->d_member->offset <= 0
        || ((PyMemberDescrObject *)ad)->d_member->offset + (Py_ssize_t)sizeof(PyObject *) > ((PyTypeObject *)at)->tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "`array_data` must be the object slot of `array_type`");
        return NULL;
    }
    PyObject *given[N_C_READS][2] = {{NULL}};  /* borrowed from `reads`, checked before anything is kept */
    for (int k = 0; k < N_C_READS; k++) {
        PyObject *pair = PyDict_GetItemString(reads, fl_c_reads[k].name);
        if (pair == NULL)
            continue;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError, "`c_reads[%s]` must be (fast reader, stream reader)", fl_c_reads[k].name);
            return NULL;
        }
        given[k][0] = PyTuple_GET_ITEM(pair, 0);
        given[k][1] = PyTuple_GET_ITEM(pair, 1);
    }
    Py_XSETREF(st->readers, Py_NewRef(r));
    Py_XSETREF(st->stream_handle, Py_NewRef(sh));
    Py_XSETREF(st->stream_readers, Py_NewRef(sr));
    for (int k = 0; k < N_C_READS; k++) {
        Py_XSETREF(st->c_readers[k], Py_XNewRef(given[k][0]));
        Py_XSETREF(st->c_stream_readers[k], Py_XNewRef(given[k][1]));
    }
    Py_XSETREF(st->array_type, (PyTypeObject *)Py_NewRef(at));
    st->array_data = ((PyMemberDescrObject *)ad)->d_member->offset;
    Py_RETURN_NONE;
}

/* use_torch(grad_enabled, mode_enabled | None, bump, dlpack_types, ambiguous, torch_stream, dl_dtypes,
 * inference_enabled): torch's calls (once). */
static PyObject *use_torch(PyObject *module, PyObject *args) {
    FastState *st = state_of(module);
    PyObject *ge, *me, *bu, *types, *amb, *ts, *dd, *ie;
    if (!PyArg_ParseTuple(args, "OOOO!O!OO!O", &ge, &me, &bu, &PyTuple_Type, &types, &PyTuple_Type, &amb, &ts,
                          &PyDict_Type, &dd, &ie))
        return NULL;
    if (PyTuple_GET_SIZE(amb) > MAX_AMBIGUOUS) {
        PyErr_SetString(PyExc_ValueError, "too many ambiguous DLPack dtypes");
        return NULL;
    }
    uint32_t ambiguous[MAX_AMBIGUOUS];
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(amb); k++) {
        unsigned long v = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(amb, k));
        if (PyErr_Occurred())
            return NULL;
        ambiguous[k] = (uint32_t)v;
    }
    memcpy(st->ambiguous, ambiguous, sizeof ambiguous[0] * (size_t)PyTuple_GET_SIZE(amb));
    st->n_ambiguous = (int)PyTuple_GET_SIZE(amb);
    Py_XSETREF(st->grad_enabled, Py_NewRef(ge));
    Py_XSETREF(st->mode_enabled, me == Py_None ? NULL : Py_NewRef(me));
    Py_XSETREF(st->bump, Py_NewRef(bu));
    Py_XSETREF(st->dlpack_types, Py_NewRef(types));
    Py_XSETREF(st->torch_stream_read, Py_NewRef(ts));
    Py_XSETREF(st->dl_dtypes, PyDict_Copy(dd));  /* a copy: no caller changes it under a read */
    Py_XSETREF(st->inference_enabled, Py_NewRef(ie));
    if (st->dl_dtypes == NULL)
        return NULL;
    st->torch_work_stream = NULL;  /* torch.Tensor's, where its exchange API has one */
    PyTypeObject *tensor = PyTuple_GET_SIZE(types) > 0 && PyType_Check(PyTuple_GET_ITEM(types, 0))
                               ? (PyTypeObject *)PyTuple_GET_ITEM(types, 0) : NULL;
    if (tensor != NULL) {
        const DLPackExchangeAPI *table = fl_exchange_table(st, tensor);
        if (PyErr_Occurred())
            return NULL;
        st->torch_work_stream = table != NULL ? (CurrentWorkStreamFn)table->current_work_stream : NULL;
    }
    if (!fl_use_torch_descriptors(st, tensor))
        return NULL;
    Py_RETURN_NONE;
}

/* use_torch_reader(capsule, calls): read the listed torch types through the C++ reader whose table the capsule
 * carries (named TORCH_READER_CAPSULE: made by layoutgen_torch_reader_capsule() of a library torch_cxx_reader.py
 * built), and where `calls`, bump their versions and ask for function modes through it too;
 * use_torch_reader(None, False): through the exchange API and torch's Python calls again. Nothing else is
 * taken: an address (an int) could point anywhere. */
static PyObject *use_torch_reader(PyObject *module, PyObject *args) {
    FastState *st = state_of(module);
    PyObject *capsule;
    int calls;
    if (!PyArg_ParseTuple(args, "Op", &capsule, &calls))
        return NULL;
    if (capsule == Py_None) {
        st->cxx_reader = NULL;
        st->cxx_calls = 0;
        Py_CLEAR(st->cxx_capsule);
        Py_RETURN_NONE;
    }
    if (!PyCapsule_IsValid(capsule, TORCH_READER_CAPSULE)) {
        PyErr_SetString(PyExc_TypeError, "use_torch_reader() takes the torch reader's capsule (\"" TORCH_READER_CAPSULE
                                         "\") or None");
        return NULL;
    }
    const TorchReader *table = PyCapsule_GetPointer(capsule, TORCH_READER_CAPSULE);
    if (table == NULL)
        return NULL;
    if (table->magic != TORCH_READER_MAGIC || table->abi != TORCH_READER_ABI || table->read == NULL
        || table->bump == NULL || table->function_modes == NULL) {
        PyErr_Format(PyExc_ValueError, "not a torch reader table of ABI %d", TORCH_READER_ABI);
        return NULL;
    }
    Py_INCREF(capsule);
    st->cxx_reader = table;
    st->cxx_calls = calls;
    Py_XSETREF(st->cxx_capsule, capsule);
    Py_RETURN_NONE;
}

static PyObject *ints_tuple(const int64_t *values, int n) {
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t != NULL && k < n; k++) {
        PyObject *v = PyLong_FromLongLong(values[k]);
        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

/* read(array) -> how a call reads it at C level, where its kind is read here; None else (tests, fastpath):
 *   CuPy: ("cupy", ptr, shape, strides in bytes, dtype, device_id)
 *   torch: ("dlpack", ptr, shape, strides, (code, bits, lanes), (device type, id)); None for a neg view */
static PyObject *read_one(PyObject *module, PyObject *a) {
    FastState *st = state_of(module);
    /* readers[type]: its __missing__ finds the reader of a type first seen (a borrowed look-up would not) */
    PyObject *reader = st->readers ? PyObject_GetItem(st->readers, (PyObject *)Py_TYPE(a)) : NULL;
    if (reader == NULL && !fl_swallow())
        return NULL;
    int row = fl_c_read_of(st, reader);
    if (fl_find_kind(st, Py_TYPE(a)) == NULL && row == C_READ_FIELDS) {  /* confirmed as add() would */
        PyObject *got = PyObject_CallOneArg(reader, a);
        uint64_t ptr;
        int ok = 1;
        if (got != NULL && PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2 && fl_as_address(PyTuple_GET_ITEM(got, 1), &ptr))
            ok = fl_c_reads[row].confirm(st, a, PyTuple_GET_ITEM(got, 0), ptr);
        Py_XDECREF(got);
        if (!ok || !fl_swallow()) {
            Py_DECREF(reader);
            return NULL;
        }
    }
    Py_XDECREF(reader);
    Kind *kind = fl_find_kind(st, Py_TYPE(a));
    Kind probe;
    if (kind == NULL) {  /* any DLPack producer, unlisted */
        probe = (Kind){Py_TYPE(a), MODE_DLPACK, NULL, fl_exchange_api(st, Py_TYPE(a)), fl_is_listed(st, Py_TYPE(a)),
                       0, 0, 0};
        if (PyErr_Occurred())
            return NULL;
        kind = probe.from ? &probe : NULL;
    }
    if (kind == NULL)
        Py_RETURN_NONE;
    Read r;
    fl_clear_read(&r);
    if (!fl_read_array(st, a, kind->mode, kind, NULL, &r) || (r.mode != MODE_CUPY_FIELDS && r.mode != MODE_DLPACK)) {
        fl_release_read(&r);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *shape = ints_tuple(r.shape, r.ndim), *strides = ints_tuple(r.strides, r.ndim), *got = NULL;
    if (shape != NULL && strides != NULL) {
        if (kind->mode == MODE_CUPY_FIELDS)
            got = Py_BuildValue("(sKOOOL)", "cupy", (unsigned long long)r.ptr, shape, strides, r.dtype,
                                (long long)r.device);
        else
            got = Py_BuildValue("(sKOO(iii)(ii)O)", "dlpack", (unsigned long long)r.ptr, shape, strides,
                                (int)(r.dl_dtype & 0xff), (int)(r.dl_dtype >> 8 & 0xff), (int)(r.dl_dtype >> 16),
                                (int)(r.device >> 32), (int)(uint32_t)r.device,
                                r.requires_grad < 0 ? Py_None : r.requires_grad ? Py_True : Py_False);
    }
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    fl_release_read(&r);
    return got;
}

/* scalar_slot(dtype, finite, value) -> the launch value the compiled path gives `value`, or None where it
 * asks the Python check (tests: equal to validate.check_scalar wherever it is not None). */
static PyObject *scalar_slot(PyObject *module, PyObject *args) {
    const char *dtype;
    int finite;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "spO", &dtype, &finite, &value))
        return NULL;
    int kind = fl_scalar_kind(dtype);
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "no scalar dtype %s", dtype);
        return NULL;
    }
    uint64_t slot;
    if (!fl_fast_scalar(kind, finite, value, &slot))
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(slot);
}

static PyObject *driver(PyObject *module, PyObject *unused) { return fl_driver_text(state_of(module)); }

/* stream_of(stream, kernel="") -> the CUstream a compiled launch on `stream` is made on (read here, or by
 * driver.stream_handle where this leaves it to it), or None where the call would be handed over (tests). */
static PyObject *stream_read(PyObject *module, PyObject *args) {
    PyObject *stream, *name = NULL;
    if (!PyArg_ParseTuple(args, "O|U", &stream, &name))
        return NULL;
    PyObject *kernel = name != NULL ? Py_NewRef(name) : PyUnicode_FromString("");
    if (kernel == NULL)
        return NULL;
    uint64_t handle = 0;
    int ok = fl_stream_of(state_of(module), stream, kernel, -1, &handle);
    Py_DECREF(kernel);
    if (PyErr_Occurred())
        return NULL;
    if (!ok)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(handle);
}

static PyObject *cupy_stream(PyObject *module, PyObject *unused) {
    FastState *st = state_of(module);
    if (!st->current_stream_tried)
        fl_load_current_stream(st);
    return PyUnicode_FromString(st->current_stream ? "cupy_backends.cuda.stream.get_current_stream_ptr"
                                                   : "driver.stream_handle (CuPy's C function was not found)");
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS, "configure(readers, c_reads, stream_handle, stream_readers, "
     "array_type, array_data): c_reads maps each C read ('fields', 'dlpack') to (fast reader, stream reader)"},
    {"use_torch", use_torch, METH_VARARGS,
     "use_torch(grad_enabled, mode_enabled, bump, dlpack_types, ambiguous, torch_stream, dl_dtypes, "
     "inference_enabled)"},
    {"use_torch_reader", use_torch_reader, METH_VARARGS, "use_torch_reader(capsule | None, calls): read torch's "
     "listed tensor types through the C++ reader's table the capsule carries (torch_cxx_reader.py), and where "
     "calls, bump versions and ask for function modes through it"},
    {"read", read_one, METH_O, "read(array) -> how the compiled path reads it, or None: ('cupy', ptr, shape, "
     "strides, dtype, device_id) or ('dlpack', ptr, shape, strides, (code, bits, lanes), (device_type, "
     "device_id), requires_grad as read with them, None where it is not)"},
    {"scalar_slot", scalar_slot, METH_VARARGS, "scalar_slot(dtype, finite, value) -> its launch value, or None"},
    {"driver", driver, METH_NOARGS, "whether libcuda's calls were found, in words"},
    {"current_stream", cupy_stream, METH_NOARGS, "where the current CuPy stream is read, in words"},
    {"stream_of", stream_read, METH_VARARGS, "stream_of(stream, kernel='') -> the CUstream a compiled launch on "
     "`stream` is made on, or None where the call is handed to the Python path (tests)"},
    FL_TEST_METHODS
    {NULL, NULL, 0, NULL},
};

/* Every reference the state holds, for the garbage collector (visit) and for clearing (clear). */
#define STATE_REFERENCES(DO, st)                                                                                \
    DO((st)->readers); DO((st)->stream_handle); DO((st)->stream_readers); DO((st)->array_type);                 \
    DO((st)->grad_enabled); DO((st)->mode_enabled); DO((st)->bump); DO((st)->dlpack_types);                     \
    DO((st)->dl_dtypes); DO((st)->inference_enabled); DO((st)->torch_stream_read); DO((st)->is_neg_descr);      \
    DO((st)->requires_grad_descr); DO((st)->cxx_capsule); DO((st)->launcher_type); DO((st)->steps_type);       \
    DO((st)->s_data); DO((st)->s_ptr); DO((st)->s_device_id); DO((st)->s_shape); DO((st)->s_strides);           \
    DO((st)->s_dtype); DO((st)->s_data_ptr); DO((st)->s_stride); DO((st)->s_device); DO((st)->s_is_neg);        \
    DO((st)->s_requires_grad); DO((st)->s_stream); DO((st)->s_type);                                            \
    DO((st)->s_index); DO((st)->s_cuda); DO((st)->s_cpu); DO((st)->s_exchange); DO((st)->s_is_inference);

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
    FastState *st = state_of(module);
    if (st == NULL)
        return 0;
    STATE_REFERENCES(Py_VISIT, st)
    for (int k = 0; k < N_C_READS; k++) {
        Py_VISIT(st->c_readers[k]);
        Py_VISIT(st->c_stream_readers[k]);
        Py_VISIT(st->c_stream_attrs[k]);
    }
    for (int k = 0; k < st->n_kinds; k++) {
        Py_VISIT(st->kinds[k].type);
        Py_VISIT(st->kinds[k].pointer_type);
    }
#ifdef LAYOUTGEN_TEST_HOOKS
    Py_VISIT(st->hook);
    Py_VISIT(st->device_hook);
#endif
    return 0;
}

static int module_clear(PyObject *module) {
    FastState *st = state_of(module);
    if (st == NULL)
        return 0;
    st->cxx_reader = NULL;  /* its capsule (the library's lifetime) is let go below */
    st->is_neg_fn = NULL;
    st->requires_grad_get = NULL;
    STATE_REFERENCES(Py_CLEAR, st)
    for (int k = 0; k < N_C_READS; k++) {
        Py_CLEAR(st->c_readers[k]);
        Py_CLEAR(st->c_stream_readers[k]);
        Py_CLEAR(st->c_stream_attrs[k]);
    }
    int n = st->n_kinds;
    st->n_kinds = 0;  /* nothing finds a kind from here on */
    for (int k = 0; k < n; k++) {
        Py_CLEAR(st->kinds[k].type);
        Py_CLEAR(st->kinds[k].pointer_type);
    }
#ifdef LAYOUTGEN_TEST_HOOKS
    Py_CLEAR(st->hook);
    Py_CLEAR(st->device_hook);
#endif
    return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

/* Py_mod_exec: the state made (PyModule_ExecDef zeroed it), the types added. */
static int module_exec(PyObject *module) {
    FastState *st = state_of(module);
    snprintf(st->driver_error, sizeof st->driver_error, "not loaded yet");
    st->array_data = -1;
    st->descriptors_generation = 1;
#define INTERN(var, text) if ((st->var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_data, "data");
    INTERN(s_ptr, "ptr");
    INTERN(s_device_id, "device_id");
    INTERN(s_shape, "shape");
    INTERN(s_strides, "strides");
    INTERN(s_dtype, "dtype");
    INTERN(s_data_ptr, "data_ptr");
    INTERN(s_stride, "stride");
    INTERN(s_device, "device");
    INTERN(s_is_neg, "is_neg");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_stream, "stream");
    INTERN(s_type, "type");
    INTERN(s_index, "index");
    INTERN(s_cuda, "cuda");
    INTERN(s_cpu, "cpu");
    INTERN(s_exchange, "__dlpack_c_exchange_api__");
    INTERN(s_is_inference, "is_inference");
#undef INTERN
    for (int k = 0; k < N_C_READS; k++)
        if ((st->c_stream_attrs[k] = PyUnicode_InternFromString(fl_c_reads[k].stream_attr)) == NULL)
            return -1;
    if ((st->launcher_type = PyType_FromModuleAndSpec(module, &fl_launcher_spec, NULL)) == NULL
        || (st->steps_type = PyType_FromModuleAndSpec(module, &fl_steps_spec, NULL)) == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "Launcher", st->launcher_type) < 0
        || PyModule_AddObjectRef(module, "Steps", st->steps_type) < 0
        || PyModule_AddIntConstant(module, "MAX_ARRAYS", MAX_ARRAYS) < 0
        || PyModule_AddIntConstant(module, "MAX_VALUES", MAX_VALUES) < 0
        || PyModule_AddIntConstant(module, "MAX_DIMS", MAX_DIMS) < 0)
        return -1;
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_USED},  /* plans, kinds and state are read and written under the GIL */
#endif
    {0, NULL},
};

PyModuleDef fl_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_fastlaunch",
    .m_doc = "The compiled hot path of layoutgen's launchers.",
    .m_size = sizeof(FastState),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__fastlaunch(void) { return PyModuleDef_Init(&fl_module_def); }
