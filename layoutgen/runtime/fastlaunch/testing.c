/* The test and benchmark hooks: compiled only with -DLAYOUTGEN_TEST_HOOKS (tests/fastlaunch_build.py builds
 * that variant of the extension for the tests and benchmarks); the shipped module has none of them. */
#include "fastlaunch.h"

#ifdef LAYOUTGEN_TEST_HOOKS

#include <time.h>

/* set_hook(callable | None, device=None): call callable(launch, blocks, block, shared, stream, handle,
 * parameters) instead of cuLaunchKernel (its False: the driver refused it), and device() for the driver's
 * current device. */
PyObject *fl_set_hook(PyObject *module, PyObject *args) {
    FastState *st = PyModule_GetState(module);
    PyObject *callable, *device = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &callable, &device))
        return NULL;
    if ((callable != Py_None && !PyCallable_Check(callable)) || (device != Py_None && !PyCallable_Check(device))) {
        PyErr_SetString(PyExc_TypeError, "the hooks must be callable or None");
        return NULL;
    }
    Py_XSETREF(st->hook, callable == Py_None ? NULL : Py_NewRef(callable));
    Py_XSETREF(st->device_hook, device == Py_None ? NULL : Py_NewRef(device));
    Py_RETURN_NONE;
}

PyObject *fl_get_hook(PyObject *module, PyObject *unused) {
    FastState *st = PyModule_GetState(module);
    return Py_NewRef(st->hook ? st->hook : Py_None);
}

/* read_cost(array, n) -> (nanoseconds, how): what a launch spends reading `array`, the mean of n reads as a
 * launch makes them (benchmarks/bench_launch_parts.py, bench_launch_cpu.py); ValueError where its type has no
 * C-level read. */
PyObject *fl_read_cost(PyObject *module, PyObject *args) {
    static const char *const how[] = {"fields", "attributes", "dlpack", "attributes", "reader"};
    FastState *st = PyModule_GetState(module);
    PyObject *a;
    long n;
    if (!PyArg_ParseTuple(args, "Ol", &a, &n))
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1");
        return NULL;
    }
    int torch_modes = -1;
    Kind *kind = NULL;
    PyObject *reader = NULL;
    int mode = fl_mode_of(st, a, &torch_modes, &kind, &reader);
    if (mode < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "no C-level read of a %.200s", Py_TYPE(a)->tp_name);
        return NULL;
    }
    int read_as = mode;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long k = 0; k < n; k++) {
        Read r;
        fl_clear_read(&r);
        int ok = fl_read_array(st, a, mode, kind, reader, &r);
        read_as = r.mode;
        fl_release_read(&r);
        if (!ok) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "a %.200s that is not read at C level", Py_TYPE(a)->tp_name);
            return NULL;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double ns = ((double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec)) / (double)n;
    return Py_BuildValue("(ds)", ns, how[read_as]);
}

/* kinds() -> {array type: 'fields' | 'dlpack'}: the kinds read at C level. */
PyObject *fl_kinds_read(PyObject *module, PyObject *unused) {
    FastState *st = PyModule_GetState(module);
    PyObject *out = PyDict_New();
    for (int k = 0; out != NULL && k < st->n_kinds; k++) {
        PyObject *mode = PyUnicode_FromString(st->kinds[k].mode == MODE_CUPY_FIELDS ? "fields" : "dlpack");
        if (mode == NULL || PyDict_SetItem(out, (PyObject *)st->kinds[k].type, mode) < 0)
            Py_CLEAR(out);
        Py_XDECREF(mode);
    }
    return out;
}

/* type_lookup(type, name) -> what an instance's attribute lookup finds for `name` in type's MRO (fl_type_lookup,
 * which decides whether a tensor type finds torch's own descriptors), or None. */
PyObject *fl_type_lookup_py(PyObject *module, PyObject *args) {
    PyObject *type, *name;
    if (!PyArg_ParseTuple(args, "O!U", &PyType_Type, &type, &name))
        return NULL;
    PyObject *found = fl_type_lookup((PyTypeObject *)type, name);
    if (found == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return found;
}

#else
typedef int fl_testing_hooks_not_built;  /* ISO C: a translation unit declares something */
#endif
