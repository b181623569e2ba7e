/* The driver: libcuda's entry points (found at run time), the current device, the launch itself. */
#include "fastlaunch.h"

#include <dlfcn.h>
#include <stdio.h>

typedef CUresult (*GetProcAddressFn)(const char *, void **, int, uint64_t, int *);  /* cuGetProcAddress_v2 */
typedef CUresult (*GetProcAddressV1Fn)(const char *, void **, int, uint64_t);      /* cuGetProcAddress */

/* cuda.bindings resolves every driver entry point with this flag where the variable is set (to anything:
 * os.getenv's truth), else with CU_GET_PROC_ADDRESS_DEFAULT: stream handle 0 is then the per-thread default
 * stream, else the legacy one. The Python path's PackedLaunch launches through cuda.bindings, so this does. */
#define PTDS_ENV "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"
#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

/* The entry points cuda.bindings (13.x) takes: the same names, CUDA versions and flags, so that both paths
 * call the very same functions. Where the driver has no cuGetProcAddress (before CUDA 11.3), the plain
 * symbols, which are those versions, and cuLaunchKernel_ptsz for the per-thread default stream. */
int fl_load_driver(FastState *st) {
    if (st->driver_tried)
        return st->launch_kernel != NULL && st->ctx_get_device != NULL;
    st->driver_tried = 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        snprintf(st->driver_error, sizeof st->driver_error, "dlopen(libcuda.so.1): %s", dlerror());
        return 0;
    }
    const char *ptds = getenv(PTDS_ENV);
    int per_thread = st->per_thread_stream = ptds != NULL && ptds[0] != 0;
    uint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    GetProcAddressFn get_v2 = (GetProcAddressFn)dlsym(lib, "cuGetProcAddress_v2");
    GetProcAddressV1Fn get_v1 = get_v2 ? NULL : (GetProcAddressV1Fn)dlsym(lib, "cuGetProcAddress");
    const char *const names[] = {"cuLaunchKernel", "cuCtxGetDevice"};
    const char *const symbols[] = {per_thread ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", "cuCtxGetDevice"};
    /* cuLaunchKernel's per-thread-stream entry point dates from CUDA 7.0: asked for at 4000 with that flag, the
     * driver finds nothing */
    const int versions[] = {per_thread ? 7000 : 4000, 2000};
    void *found[2];
    for (int k = 0; k < 2; k++) {
        found[k] = NULL;
        CUresult got = 0;
        if (get_v2 != NULL)
            got = get_v2(names[k], &found[k], versions[k], flags, NULL);
        else if (get_v1 != NULL)
            got = get_v1(names[k], &found[k], versions[k], flags);
        else
            found[k] = dlsym(lib, symbols[k]);
        if (got != 0 || found[k] == NULL) {
            const char *why = get_v2 || get_v1 ? "not found by cuGetProcAddress" : dlerror();
            snprintf(st->driver_error, sizeof st->driver_error, "%s (CUDA %d): %s (%d)", names[k], versions[k],
                     why ? why : "not found", got);
            return 0;
        }
    }
    st->launch_kernel = (LaunchKernelFn)found[0];
    st->ctx_get_device = (CtxGetDeviceFn)found[1];
    st->driver_error[0] = 0;
    return 1;
}

/* Whether libcuda's calls were found, in words (the module's driver()). */
PyObject *fl_driver_text(FastState *st) {
    fl_load_driver(st);
    if (st->driver_error[0])
        return PyUnicode_FromString(st->driver_error);
    return PyUnicode_FromString(st->per_thread_stream ? "libcuda loaded (the per-thread default stream's entry "
                                                        "points, " PTDS_ENV " is set)" : "libcuda loaded");
}

/* The current device: the driver's current context's (what CuPy's getDevice, cudaGetDevice, reports
 * whenever a context is current). 0 where there is none (no context on this thread, the driver not
 * initialised, a forked child's): the Python path decides then. One driver call: cuCtxGetDevice fails with
 * CUDA_ERROR_INVALID_CONTEXT where no context is current, so asking cuCtxGetCurrent first tells nothing
 * more (and costs a launch ~0.015x the C floor on the H200's host). */
int fl_current_device(FastState *st, long *device) {
    PyObject *device_hook = FL_DEVICE_HOOK(st);
    if (device_hook != NULL) {  /* the test build's stand-in (testing.c) */
        PyObject *got = fl_call_held(device_hook, NULL);
        int ok = got != NULL && PyLong_CheckExact(got);
        if (ok) {
            *device = PyLong_AsLong(got);
            ok = !PyErr_Occurred();
        }
        Py_XDECREF(got);
        fl_swallow();
        return ok;
    }
    if (!fl_load_driver(st))
        return 0;
    CUdevice ordinal = -1;
    if (st->ctx_get_device(&ordinal) != 0 || ordinal < 0)
        return 0;
    *device = ordinal;
    return 1;
}

/* The driver's launch, or (the test build) the hook's `replay`: 1 launched, 0 refused by the driver (nothing
 * ran: the Python path reports LG609), -1 the hook's error. */
int fl_launch_packed(FastState *st, PyObject *replay, PyObject *launch_obj, CUfunction function, unsigned blocks,
                     unsigned block, unsigned shared, PyObject *stream, uint64_t cu_stream, uint64_t *buffer,
                     int count) {
#ifdef LAYOUTGEN_TEST_HOOKS
    if (replay != NULL) {  /* the stream object, and its handle where read here (None: the stream is None) */
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)buffer, (Py_ssize_t)count * 8);
        PyObject *handle = stream == Py_None ? Py_NewRef(Py_None) : PyLong_FromUnsignedLongLong(cu_stream);
        PyObject *got = bytes == NULL || handle == NULL ? NULL : PyObject_CallFunction(
            replay, "OIIIOOO", launch_obj, blocks, block, shared, stream, handle, bytes);
        Py_XDECREF(bytes);
        Py_XDECREF(handle);
        if (got == NULL)
            return -1;
        int refused = got == Py_False;  /* the hook's word for a launch the driver refused */
        Py_DECREF(got);
        return !refused;
    }
#else
    (void)replay;
    (void)launch_obj;
    (void)stream;
#endif
    void *slots[MAX_VALUES];
    for (int k = 0; k < count; k++)
        slots[k] = &buffer[k];
    LaunchKernelFn launch_kernel = st->launch_kernel;
    CUresult status;
    /* Without the GIL, as cuda.bindings calls it: the call may wait (a full queue, CUDA_LAUNCH_BLOCKING=1) for
     * work that needs the GIL (a host function that runs Python). Everything it reads is this call's own. */
    Py_BEGIN_ALLOW_THREADS
    status = launch_kernel(function, blocks, 1, 1, block, 1, 1, shared, (CUstream)(uintptr_t)cu_stream, slots,
                           NULL);
    Py_END_ALLOW_THREADS
    return status == 0;
}
