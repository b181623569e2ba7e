/* The pieces of a compiled launch from Python, each added to the one before, for benchmarks/bench_launch_steps.py
 * (built there with the C compiler, as an extension module named step_parts).
 *
 * setup(function, values) takes a CUfunction (as an int) and its seven 8-byte launch values; then each
 * function below launches it once (16 blocks of 128 threads, the benchmark's empty kernel), adding one piece
 * of what layoutgen's compiled path does around cuLaunchKernel:
 *   bare             the launch alone, on the legacy default stream, the GIL held
 *   gil_released     the same with the GIL released around it (as the compiled path does)
 *   device_read      and the current context's device read first (cuCtxGetCurrent, cuCtxGetDevice)
 *   current_stream   and the launch on CuPy's current stream (cupy_backends' get_current_stream_ptr)
 * and c_loop(n) launches n times from C: the floor without Python, in this process; nothing() does nothing
 * (a Python call of a C function alone). libcuda is opened with dlopen, as _fastlaunch.c opens it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>

typedef int (*LaunchFn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
typedef int (*ContextFn)(void **);
typedef int (*DeviceFn)(int *);
typedef intptr_t (*StreamFn)(void);

static LaunchFn launch_kernel;
static ContextFn ctx_get_current;
static DeviceFn ctx_get_device;
static StreamFn current_stream;
static void *function;
static uint64_t values[7];
static void *params[7];

static PyObject *setup(PyObject *module, PyObject *args) {
    unsigned long long handle;
    PyObject *given;
    if (!PyArg_ParseTuple(args, "KO!", &handle, &PyTuple_Type, &given))
        return NULL;
    if (PyTuple_GET_SIZE(given) != 7)
        return PyErr_Format(PyExc_ValueError, "7 launch values, got %zd", PyTuple_GET_SIZE(given));
    for (int k = 0; k < 7; k++) {
        values[k] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(given, k));
        params[k] = &values[k];
    }
    if (PyErr_Occurred())
        return NULL;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (cuda == NULL)
        return PyErr_Format(PyExc_OSError, "libcuda.so.1: %s", dlerror());
    launch_kernel = (LaunchFn)dlsym(cuda, "cuLaunchKernel");
    ctx_get_current = (ContextFn)dlsym(cuda, "cuCtxGetCurrent");
    ctx_get_device = (DeviceFn)dlsym(cuda, "cuCtxGetDevice");
    PyObject *stream = PyImport_ImportModule("cupy_backends.cuda.stream");
    PyObject *api = stream ? PyObject_GetAttrString(stream, "__pyx_capi__") : NULL;
    PyObject *capsule = api ? PyDict_GetItemString(api, "get_current_stream_ptr") : NULL;  /* borrowed */
    current_stream = capsule ? (StreamFn)PyCapsule_GetPointer(capsule, "intptr_t (void)") : NULL;
    Py_XDECREF(api);
    Py_XDECREF(stream);
    if (launch_kernel == NULL || ctx_get_current == NULL || ctx_get_device == NULL || current_stream == NULL) {
        PyErr_Clear();
        return PyErr_Format(PyExc_RuntimeError, "libcuda's calls or CuPy's get_current_stream_ptr not found");
    }
    function = (void *)(uintptr_t)handle;
    Py_RETURN_NONE;
}

static PyObject *result(int status) {
    if (status != 0)
        return PyErr_Format(PyExc_RuntimeError, "CUDA error %d", status);
    Py_RETURN_NONE;
}

static int launch_held(void *stream) { return launch_kernel(function, 16, 1, 1, 128, 1, 1, 0, stream, params, NULL); }

static int launch_released(void *stream) {
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = launch_held(stream);
    Py_END_ALLOW_THREADS
    return status;
}

static int device_read(void) {
    void *context = NULL;
    int device = -1;
    return ctx_get_current(&context) != 0 || context == NULL || ctx_get_device(&device) != 0;
}

static PyObject *bare(PyObject *module, PyObject *unused) { return result(launch_held(NULL)); }

static PyObject *gil_released(PyObject *module, PyObject *unused) { return result(launch_released(NULL)); }

static PyObject *with_device_read(PyObject *module, PyObject *unused) {
    return result(device_read() ? 1 : launch_released(NULL));
}

static PyObject *on_current_stream(PyObject *module, PyObject *unused) {
    return result(device_read() ? 1 : launch_released((void *)current_stream()));
}

static PyObject *c_loop(PyObject *module, PyObject *count) {
    long n = PyLong_AsLong(count);
    if (n < 0 && PyErr_Occurred())
        return NULL;
    int status = 0;
    for (long i = 0; i < n && status == 0; i++)
        status = launch_held(NULL);
    return result(status);
}

static PyObject *nothing(PyObject *module, PyObject *unused) { Py_RETURN_NONE; }

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(function, values): the CUfunction and its 7 launch values"},
    {"bare", bare, METH_NOARGS, "one launch, the GIL held"},
    {"gil_released", gil_released, METH_NOARGS, "one launch, the GIL released around it"},
    {"device_read", with_device_read, METH_NOARGS, "the current device read, then gil_released"},
    {"current_stream", on_current_stream, METH_NOARGS, "device_read, on CuPy's current stream"},
    {"c_loop", c_loop, METH_O, "c_loop(n): n launches from C, the GIL held"},
    {"nothing", nothing, METH_NOARGS, "nothing: a call's own cost"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "step_parts", NULL, -1, methods};

PyMODINIT_FUNC PyInit_step_parts(void) { return PyModule_Create(&definition); }
