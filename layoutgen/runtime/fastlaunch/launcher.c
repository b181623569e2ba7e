/* The Launcher's call: one kernel's compiled launch, from the user's arguments to cuLaunchKernel (its type,
 * plans and teaching: launcher_type.c). */
#include "fastlaunch.h"


static int unwrap(const FastState *st, PyObject **a) {
    if (Py_TYPE(*a) != st->array_type || st->array_data <= 0)
        return 1;
    PyObject *inner = *(PyObject **)((char *)*a + st->array_data);  /* NULL where the slot is empty */
    if (inner == NULL)
        return 0;
    *a = inner;
    return 1;
}

/* 1: launched (or nothing to launch); 0: the Python path must run the call; -1: the call's error (the hook's,
 * the version bump's after the launch, or one that is no Exception, from Python code it ran). */
static int launch_call(Launcher *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    FastState *st = self->state;
    if (st->s_stream == NULL)
        return 0;  /* the module's state was cleared (the interpreter's end): the Python path */
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *stream = Py_None;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyObject *keyword = PyTuple_GET_ITEM(kwnames, 0);
        if (PyTuple_GET_SIZE(kwnames) != 1 || (keyword != st->s_stream && PyUnicode_Compare(keyword, st->s_stream) != 0)) {
            PyErr_Clear();  /* a str compared with a str: nothing to keep */
            return 0;  /* a keyword the Python path refuses (TypeError) */
        }
        stream = args[nargs];
    }
    int n = self->n_arrays, n_scalars = self->n_scalars;  /* fixed: a Launcher is initialised once */
    if (nargs != n + n_scalars)
        return 0;  /* LG601 */
    long device;
    if (!fl_current_device(st, &device))
        return PyErr_Occurred() ? -1 : 0;
    uint64_t values[MAX_VALUES];
    for (int k = 0; k < n_scalars; k++) {
        PyObject *v = args[n + k];
        if (!fl_fast_scalar(self->scalar_kinds[k], self->scalar_finite[k], v, &values[k])) {
            PyObject *got = PyObject_CallFunction(self->scalar_check, "iO", k, v);  /* LG620..LG622: hand over */
            int ok = got != NULL && PyLong_Check(got);
            if (ok) {
                values[k] = PyLong_AsUnsignedLongLongMask(got);
                ok = !PyErr_Occurred();
            }
            Py_XDECREF(got);
            if (!ok)
                return fl_swallow() ? 0 : -1;
        }
    }
    PyObject *arrays[MAX_ARRAYS];  /* held: an Array's slot may be set again while Python code runs */
    Read reads[MAX_ARRAYS];
    int n_read = 0, n_held = 0, torch_modes = -1, result = 0, n_torch = 0;
    for (int i = 0; i < n; i++) {
        PyObject *a = args[i];
        if (!unwrap(st, &a))
            goto out;
        arrays[n_held++] = Py_NewRef(a);
        Kind *kind = NULL;
        PyObject *reader = NULL;
        int mode = fl_mode_of(st, a, &torch_modes, &kind, &reader);
        if (mode < 0)
            goto out;
        n_torch += mode == MODE_DLPACK || mode == MODE_TORCH_ATTRS;
        fl_clear_read(&reads[i]);
        n_read = i + 1;
        if (!fl_read_array(st, a, mode, kind, reader, &reads[i]))
            goto out;
    }
    Plan *plan = NULL;
    if (fl_plan_matches(&self->plans[self->last], device, reads, n)) {
        plan = &self->plans[self->last];
    } else {
        for (int k = 0; k < MAX_PLANS && plan == NULL && !PyErr_Occurred(); k++)
            if (k != self->last && fl_plan_matches(&self->plans[k], device, reads, n)) {
                plan = &self->plans[k];
                self->last = k;
            }
    }
    if (plan == NULL)
        goto out;
    for (int i = 0; i < n; i++)  /* LG606 on the Python path; a null pointer: LG634 (or an empty array's) */
        if (reads[i].ptr & plan->masks[i] || reads[i].ptr == 0)
            goto out;
    for (int k = 0; k < plan->n_pairs; k++) {  /* LG614: Extents.first_overlap */
        const Pair *q = &plan->pairs[k];
        long long offset = (long long)reads[q->j].ptr - (long long)reads[q->i].ptr;
        if (-q->size_j < offset && offset < q->size_i && !(q->same_start && offset == 0))
            goto out;
    }
    /* What the launch needs of the plan, copied (its Launch held) before any Python code runs: a check, a
     * stream or a hook may run another thread, which may teach this launcher a plan in this one's place. */
    PyObject *launch_obj = Py_NewRef(plan->launch);
    PyObject *replay = Py_XNewRef(FL_HOOK(st));
    CUfunction function = plan->function;
    unsigned blocks = plan->blocks, block = plan->block, shared = plan->shared;
    int n_written = plan->n_written, written[MAX_ARRAYS];
    memcpy(written, plan->written, sizeof written);
    uint64_t buffer[MAX_VALUES];
    int count = 0;
    for (int i = 0; i < n; i++)
        buffer[count++] = reads[i].ptr;
    for (int k = 0; k < n_scalars; k++)
        buffer[count++] = values[k];
    for (int k = 0; k < plan->n_symbols; k++)
        buffer[count++] = plan->symbols[k];
    plan = NULL;  /* Python code runs from here on */
    if (n_written && !fl_writes_allowed(st, arrays, reads, written, n_written))
        goto handover_held;
    int launched = 1;
    if (blocks) {
        uint64_t cu_stream = 0;
        if (replay == NULL && !fl_load_driver(st))
            goto handover_held;
        PyObject *on = Py_NewRef(stream);  /* what the hook is told the launch is on */
        if (stream == Py_None && n_torch) {
            /* torch's current stream where every array is a torch tensor; over torch tensors and others the
             * Python path compares the two libraries' current streams (LG616 where they differ) */
            if (n_torch < n || !fl_torch_stream(st, device, replay != NULL, self->name, &on, &cu_stream)) {
                Py_DECREF(on);
                goto handover_held;
            }
        } else if ((replay == NULL || stream != Py_None) && !fl_stream_of(st, stream, self->name, device, &cu_stream)) {
            Py_DECREF(on);
            goto handover_held;  /* LG616 */
        }
        launched = fl_launch_packed(st, replay, launch_obj, function, blocks, block, shared, on, cu_stream, buffer,
                                    count);
        Py_DECREF(on);
        if (launched == 0)
            goto handover_held;  /* nothing ran: the Python path launches again and reports LG609 */
    }
    if (launched == 1 && blocks && n_written)  /* torch's in-place rule: bump the version counters of what it wrote */
        launched = fl_bump_versions(st, arrays, written, n_written);
    Py_DECREF(launch_obj);
    Py_XDECREF(replay);
    result = launched;
    goto out;
handover_held:
    Py_DECREF(launch_obj);
    Py_XDECREF(replay);
out:
    for (int i = 0; i < n_read; i++)
        fl_release_read(&reads[i]);
    for (int i = 0; i < n_held; i++)
        Py_DECREF(arrays[i]);
    if (result == 0 && PyErr_Occurred())  /* an exception that is no Exception, from Python code run here */
        result = -1;
    return result;
}

static int try_launch(Launcher *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    int got = launch_call(self, args, nargsf, kwnames);
    if (got == 1)
        self->hits++;
    else if (got == 0)
        self->handovers++;
    return got;
}

/* Whether a call passes exactly the arrays and scalars by position, and at most `stream=` by keyword: the
 * calls launch_call binds itself. */
static int bound_by_position(Launcher *self, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != self->n_arrays + self->n_scalars)
        return 0;
    if (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)
        return 1;
    PyObject *keyword = PyTuple_GET_ITEM(kwnames, 0), *stream = self->state->s_stream;
    return PyTuple_GET_SIZE(kwnames) == 1 && stream != NULL
           && (keyword == stream || PyUnicode_Compare(keyword, stream) == 0);
}

PyObject *fl_launcher_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Launcher *self = (Launcher *)callable;
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "a Launcher must be initialised before it is called");
        return NULL;
    }
    /* Standing in the generated function's name, a call that function would bind otherwise (arrays given by
     * keyword, a wrong count) is that function's: it binds them, or raises its TypeError, and calls back. */
    PyObject *binding = self->binding;
    if (binding != NULL && !bound_by_position(self, nargsf, kwnames)) {
        PyErr_Clear();  /* a str compared with a str: nothing to keep */
        Py_INCREF(binding);
        PyObject *got = PyObject_Vectorcall(binding, args, nargsf, kwnames);
        Py_DECREF(binding);
        return got;
    }
    int got = try_launch(self, args, nargsf, kwnames);
    if (got < 0)
        return NULL;
    if (got > 0)
        Py_RETURN_NONE;
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);  /* the Python path, from the start */
}

/* attempt(*arguments, stream=None) -> True: launched; False: the call would go to the Python path (tests). */
PyObject *fl_launcher_attempt(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (((Launcher *)self)->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "a Launcher must be initialised before it is called");
        return NULL;
    }
    int got = try_launch((Launcher *)self, args, (size_t)nargs, kwnames);
    if (got < 0)
        return NULL;
    return PyBool_FromLong(got);
}

