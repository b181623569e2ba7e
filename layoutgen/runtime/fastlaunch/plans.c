/* A kernel's plans: each built from a call the Python path validated (fl_plan_from), matched against a
 * call's reads (fl_plan_matches), and swapped in whole (fl_swap_plan). */
#include "fastlaunch.h"

int fl_as_u64(PyObject *v, uint64_t *out) {
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *out = x;
    return 1;
}

/* An unsigned int of the driver's (a grid, a block, bytes of shared memory): never cut to its low bits. */
int fl_as_uint(PyObject *v, unsigned *out) {
    unsigned long x = PyLong_AsUnsignedLong(v);
    if (x == (unsigned long)-1 && PyErr_Occurred())
        return 0;
    if (x > UINT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a launch's grid, block and shared memory are unsigned 32-bit ints");
        return 0;
    }
    *out = (unsigned)x;
    return 1;
}

/* Whether the read `r` has the signature of argument `i` of `plan` (whose signatures the caller holds). */
static int arg_matches(const Plan *plan, int i, const Read *r) {
    PyObject *sig = PyTuple_GET_ITEM(plan->sigs, i);
    const PlanArg *p = &plan->args[i];
    if (r->mode == MODE_CUPY_FIELDS || r->mode == MODE_DLPACK) {
        if (p->mode != r->mode || !PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) < 1
            || PyTuple_GET_ITEM(sig, 0) != (PyObject *)r->type || p->ndim != r->ndim || p->device != r->device)
            return 0;
        for (int k = 0; k < r->ndim; k++)
            if (p->shape[k] != r->shape[k] || p->strides[k] != r->strides[k])
                return 0;
        if (r->mode == MODE_DLPACK)  /* torch dtypes are singletons: where DLPack's is ambiguous, the same one */
            return p->dl_dtype == r->dl_dtype && p->dtype == r->dtype;
        if (p->dtype == r->dtype)  /* numpy's builtin dtypes are singletons: mostly the same object */
            return 1;
        PyObject *dtype = Py_XNewRef(p->dtype);  /* held: the comparison may let the plan go */
        int eq = fl_equal(dtype, r->dtype);
        Py_XDECREF(dtype);
        return eq;
    }
    if (r->mode == MODE_READER)
        return fl_equal(sig, r->f[0]);
    Py_ssize_t fields = r->mode == MODE_CUPY_ATTRS ? 4 : 5;
    if (!PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) != fields + 1 || PyTuple_GET_ITEM(sig, 0) != (PyObject *)r->type)
        return 0;
    for (Py_ssize_t k = 0; k < fields; k++)
        if (!fl_equal(PyTuple_GET_ITEM(sig, k + 1), r->f[k]))
            return 0;
    return 1;
}

/* Whether `plan` matches the reads. A comparison may run Python code (a reader's signature's __eq__), and
 * so another thread, which may teach this launcher a plan in this one's place: its signatures are held while
 * they are compared, and a plan replaced meanwhile is no match. */
int fl_plan_matches(const Plan *plan, long device, const Read *reads, int n) {
    if (!plan->used || plan->device != device)
        return 0;
    PyObject *sigs = Py_NewRef(plan->sigs);
    int ok = 1;
    for (int i = 0; ok && i < n; i++)
        ok = plan->sigs == sigs && arg_matches(plan, i, &reads[i]);
    ok = ok && plan->used && plan->sigs == sigs;
    Py_DECREF(sigs);
    return ok;
}

/* Let a plan go that no Launcher slot holds any more: letting its references go runs Python code (their
 * finalizers, and any thread those let run), which must find every slot whole. */
void fl_release_plan(Plan *p) {
    Py_CLEAR(p->sigs);
    Py_CLEAR(p->launch);
    for (int i = 0; i < MAX_ARRAYS; i++)
        Py_CLEAR(p->args[i].dtype);
    PyMem_Free(p->pairs);
    p->pairs = NULL;
    p->used = 0;
}

/* Put `fresh` (or nothing, NULL) in `slot`, then let the plan it held go. */
void fl_swap_plan(Plan *slot, const Plan *fresh) {
    Plan old = *slot;
    if (fresh != NULL)
        *slot = *fresh;
    else
        memset(slot, 0, sizeof *slot);
    fl_release_plan(&old);
}

/* The C-level read of argument `a` for a plan: kept only where its kind is read at C level, `reader` is
 * that kind's reader, no torch function mode answered the reader's reads, and the read agrees with what
 * the reader read (`sig`, `ptr`); else mode -1 (the plan's argument is matched on `sig` alone, by a read in
 * the Python reader's way). 1, or 0 where an error stays set. */
static int plan_arg(FastState *st, PyObject *a, PyObject *sig, uint64_t ptr, PyObject *reader, PlanArg *p) {
    Kind *kind = fl_find_kind(st, Py_TYPE(a));
    int row = kind != NULL ? fl_c_read_of_mode(kind->mode) : -1;
    p->mode = -1;
    if (row < 0 || reader != st->c_readers[row])
        return 1;
    if (fl_c_reads[row].modes_answer) {
        int on = fl_torch_modes_on(st);
        if (on != 0)
            return on > 0;
    }
    Read r;
    fl_clear_read(&r);
    r.type = Py_TYPE(a);
    r.mode = kind->mode;
    int ok = fl_c_reads[row].read(st, a, kind, &r);
    if (ok && fl_read_agrees(st, &r, sig, ptr)) {
        p->mode = kind->mode;
        p->ndim = r.ndim;
        memcpy(p->shape, r.shape, sizeof p->shape);
        memcpy(p->strides, r.strides, sizeof p->strides);
        p->dtype = r.dtype;  /* the reference moves to the plan */
        r.dtype = NULL;
        p->dl_dtype = r.dl_dtype;
        p->device = r.device;
    }
    fl_release_read(&r);
    return fl_swallow();
}

/* Build `fresh` (zeroed by the caller) from Launcher.add's arguments: (device, arrays, sigs, ptrs, masks,
 * pairs, blocks, block, shared, symbols, written, launch, function), one plan the Python path validated
 * `arrays` to, `sigs` and `ptrs` its readers' reads of them, for a kernel of `n` arrays and `n_scalars`
 * scalars. 1, or 0 with an error set (and nothing held in `fresh`). */
int fl_plan_from(FastState *st, Plan *fresh, int n, int n_scalars, PyObject *args) {
    long device;
    PyObject *arrays, *sigs, *ptrs, *masks, *pairs, *symbols, *written, *launch, *function, *grid[3];
    if (!PyArg_ParseTuple(args, "lO!O!O!O!O!OOOO!O!OO", &device, &PyTuple_Type, &arrays, &PyTuple_Type, &sigs,
                          &PyTuple_Type, &ptrs, &PyTuple_Type, &masks, &PyTuple_Type, &pairs, &grid[0], &grid[1],
                          &grid[2], &PyTuple_Type, &symbols, &PyTuple_Type, &written, &launch, &function))
        return 0;
    Py_ssize_t n_symbols = PyTuple_GET_SIZE(symbols), n_written = PyTuple_GET_SIZE(written);
    if (n_written && (st->bump == NULL || st->grad_enabled == NULL)) {  /* use_torch() first: the Python path keeps it */
        PyErr_SetString(PyExc_ValueError, "a plan that writes torch tensors needs torch's calls (use_torch)");
        return 0;
    }
    if (PyTuple_GET_SIZE(arrays) != n || PyTuple_GET_SIZE(sigs) != n || PyTuple_GET_SIZE(ptrs) != n
        || PyTuple_GET_SIZE(masks) != n || n + n_scalars + n_symbols > MAX_VALUES || n_written > n) {
        PyErr_SetString(PyExc_ValueError, "a plan must have one array, signature, pointer and mask per parameter");
        return 0;
    }
    if (!fl_as_uint(grid[0], &fresh->blocks) || !fl_as_uint(grid[1], &fresh->block)
        || !fl_as_uint(grid[2], &fresh->shared))
        return 0;
    for (int i = 0; i < n; i++)
        if (!fl_as_u64(PyTuple_GET_ITEM(masks, i), &fresh->masks[i]))
            return 0;
    for (Py_ssize_t k = 0; k < n_symbols; k++)
        if (!fl_as_u64(PyTuple_GET_ITEM(symbols, k), &fresh->symbols[k]))
            return 0;
    for (Py_ssize_t k = 0; k < n_written; k++) {
        long i = PyLong_AsLong(PyTuple_GET_ITEM(written, k));
        if (i < 0 || i >= n) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a written index must name an array of the kernel");
            return 0;
        }
        fresh->written[k] = (int)i;
    }
    uint64_t fn;
    if (!fl_as_u64(function, &fn))
        return 0;
    Py_ssize_t n_pairs = PyTuple_GET_SIZE(pairs);
    fresh->pairs = PyMem_Calloc(n_pairs ? n_pairs : 1, sizeof(Pair));
    if (fresh->pairs == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    for (Py_ssize_t k = 0; k < n_pairs; k++) {
        Pair *q = &fresh->pairs[k];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(pairs, k), "iiLLp", &q->i, &q->j, &q->size_i, &q->size_j,
                              &q->same_start) || q->i < 0 || q->j < 0 || q->i >= n || q->j >= n) {
            fl_release_plan(fresh);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a pair must name two arrays of the kernel");
            return 0;
        }
    }
    /* Kinds first seen here are confirmed against the Python readers' reads, then each array is read as a
     * call will read it, and kept where it agrees with them. */
    for (int i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(arrays, i), *sig = PyTuple_GET_ITEM(sigs, i);
        PyObject *reader = st->readers ? PyDict_GetItemWithError(st->readers, (PyObject *)Py_TYPE(a)) : NULL;
        uint64_t ptr;
        int ok = reader != NULL ? 1 : fl_swallow();
        if (ok && reader != NULL && fl_as_address(PyTuple_GET_ITEM(ptrs, i), &ptr)) {
            Py_INCREF(reader);  /* compared only, but Python code runs below */
            int row = fl_c_read_of(st, reader);
            if (row >= 0)
                ok = fl_c_reads[row].confirm(st, a, sig, ptr);
            ok = ok && plan_arg(st, a, sig, ptr, reader, &fresh->args[i]);
            Py_DECREF(reader);
        }
        if (!ok) {
            fl_release_plan(fresh);
            return 0;
        }
    }
    fresh->used = 1;
    fresh->device = device;
    fresh->n_pairs = (int)n_pairs;
    fresh->n_symbols = (int)n_symbols;
    fresh->n_written = (int)n_written;
    fresh->function = (CUfunction)(uintptr_t)fn;
    fresh->sigs = Py_NewRef(sigs);
    fresh->launch = Py_NewRef(launch);
    return 1;
}
