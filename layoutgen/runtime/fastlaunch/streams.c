/* The stream a launch goes on: CuPy's current one (its C functions), torch's current one (its exchange
 * API), a stream object's handle, or driver.stream_handle's answer where none of those applies. */
#include "fastlaunch.h"

#define STREAM_PER_THREAD 2  /* cudaStreamPerThread: where CuPy's current-stream pointer is ambiguous */

/* CuPy's current stream: cupy_backends.cuda.stream.get_current_stream_ptr, the C function that
 * cupy.cuda.stream's (and CuPy's own launches) call, taken from the module's Cython C API; and
 * get_stream_ptr(device), the same of a device named, which a launch that has read the current device calls
 * (get_current_stream_ptr asks the CUDA runtime for that device again: cudaGetDevice, a call into another
 * library on every launch). Found once; an exception that stays set (an interrupted import) leaves it to be
 * looked for again. */
void fl_load_current_stream(FastState *st) {
    st->current_stream_tried = 1;
    PyObject *module = PyImport_ImportModule("cupy_backends.cuda.stream");
    PyObject *api = module ? PyObject_GetAttrString(module, "__pyx_capi__") : NULL;
    PyObject *capsule = api && PyDict_Check(api) ? PyDict_GetItemString(api, "get_current_stream_ptr") : NULL;
    if (capsule != NULL && PyCapsule_CheckExact(capsule)) {
        const char *signature = PyCapsule_GetName(capsule);
        if (signature != NULL && strcmp(signature, "intptr_t (void)") == 0)  /* exactly the C type it is called as */
            st->current_stream = (CurrentStreamFn)PyCapsule_GetPointer(capsule, signature);
    }
    capsule = st->current_stream && PyDict_Check(api) ? PyDict_GetItemString(api, "get_stream_ptr") : NULL;
    if (capsule != NULL && PyCapsule_CheckExact(capsule)) {
        const char *signature = PyCapsule_GetName(capsule);
        if (signature != NULL && strcmp(signature, "intptr_t (int)") == 0)
            st->device_stream = (DeviceStreamFn)PyCapsule_GetPointer(capsule, signature);
    }
    Py_XDECREF(api);
    Py_XDECREF(module);
    if (!fl_swallow())
        st->current_stream_tried = 0;
}

/* A handle as driver.stream_handle accepts one: an int, 0 <= handle < 2**64. */
static int as_handle(PyObject *handle, uint64_t *out) {
    int ok = handle != NULL && PyLong_CheckExact(handle);
    if (ok) {
        unsigned long long v = PyLong_AsUnsignedLongLong(handle);
        ok = !(v == (unsigned long long)-1 && PyErr_Occurred());
        *out = v;
    }
    Py_XDECREF(handle);
    fl_swallow();
    return ok;
}

/* The CUstream of `stream` as driver.stream_handle reads it: None (CuPy's current stream: of `device`,
 * the current one, where it is known, else -1), CuPy's and torch's streams here; any other (and None where
 * CuPy's pointer is ambiguous) through stream_handle itself. 0: the Python path decides (LG616 for what is no
 * stream). */
int fl_stream_of(FastState *st, PyObject *stream, PyObject *name, long device, uint64_t *out) {
    if (stream == Py_None) {
        if (!st->current_stream_tried) {
            fl_load_current_stream(st);
            if (PyErr_Occurred())
                return 0;
        }
        if (st->current_stream != NULL) {
            intptr_t ptr = device >= 0 && device <= INT_MAX && st->device_stream ? st->device_stream((int)device)
                                                                                 : st->current_stream();
            if (ptr == -1 && PyErr_Occurred()) {
                fl_swallow();
                return 0;
            }
            /* With CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1, CuPy's C pointer of the null stream made current is
             * the per-thread one while cupy.cuda.get_current_stream().ptr is 0: stream_handle decides. */
            if (ptr != STREAM_PER_THREAD && ptr >= 0) {
                *out = (uint64_t)ptr;
                return 1;
            }
        }
    } else if (st->stream_readers != NULL) {
        PyObject *reader = PyDict_GetItemWithError(st->stream_readers, (PyObject *)Py_TYPE(stream));  /* borrowed */
        if (reader == NULL && !fl_swallow())
            return 0;
        for (int k = 0; reader != NULL && k < N_C_READS; k++)  /* compared, never called */
            if (reader == st->c_stream_readers[k] && st->c_stream_attrs[k] != NULL)
                return as_handle(PyObject_GetAttr(stream, st->c_stream_attrs[k]), out);
    }
    if (st->stream_handle == NULL)
        return 0;
    PyObject *read = Py_NewRef(st->stream_handle);
    PyObject *handle = PyObject_CallFunctionObjArgs(read, stream, name, NULL);
    Py_DECREF(read);
    return as_handle(handle, out);
}

/* torch's current stream on `device`, what a launch over torch tensors alone runs on when given none
 * (driver.launch_stream): through torch's exchange API (current_work_stream, as DLPack asks a consumer of a
 * framework's tensors to launch); else, and under a hook (whose tests give torch's stream in Python), through
 * driver.torch_stream, whose stream object `*on` becomes. 0: the Python path decides. */
int fl_torch_stream(FastState *st, long device, int hooked, PyObject *name, PyObject **on, uint64_t *out) {
    if (!hooked && st->torch_work_stream != NULL && device >= 0 && device <= INT32_MAX) {
        void *handle = NULL;
        if (st->torch_work_stream(kDLCUDA, (int32_t)device, &handle) != 0) {
            fl_swallow();
            return 0;
        }
        *out = (uint64_t)(uintptr_t)handle;
        return 1;
    }
    PyObject *index = st->torch_stream_read != NULL ? PyLong_FromLong(device) : NULL;
    PyObject *current = index != NULL ? fl_call_held(st->torch_stream_read, index) : NULL;
    Py_XDECREF(index);
    if (current == NULL) {
        fl_swallow();
        return 0;
    }
    Py_SETREF(*on, current);
    return fl_stream_of(st, current, name, device, out);
}
