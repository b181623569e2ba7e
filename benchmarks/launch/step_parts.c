/* The pieces of a compiled launch from Python, each added to the one before, for benchmarks/bench_launch_steps.py
 * (built there with the C compiler, as an extension module named step_parts).
 *
 * setup(function, values) takes a CUfunction (as an int) and its seven 8-byte launch values; then each
 * function below launches it once (16 blocks of 128 threads, the benchmark's empty kernel), adding one piece
 * of what layoutgen's compiled path does around cuLaunchKernel:
 *   bare             the launch alone, on the legacy default stream, the GIL held
 *   gil_released     the same with the GIL released around it (as the compiled path does)
 *   device_read      and the current context's device read first (cuCtxGetDevice, as the compiled path
 *                    reads it)
 *   current_stream   and the launch on CuPy's current stream (cupy_backends' get_current_stream_ptr)
 *   device_stream    the same, read for the device read (get_stream_ptr(device): no cudaGetDevice), as the
 *                    compiled path reads it
 *   torch_stream     device_read, on torch's current stream (DLPack's exchange API: current_work_stream), as
 *                    the compiled path reads it for torch tensors; setup's third argument is torch.Tensor's
 *                    exchange API capsule, or None (then torch_stream is refused)
 * and c_loop(n) launches n times from C: the floor without Python, in this process; nothing() does nothing
 * (a Python call of a C function alone). libcuda is opened with dlopen, as fastlaunch/driver.c opens it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>

typedef int (*LaunchFn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
typedef int (*DeviceFn)(int *);
typedef intptr_t (*StreamFn)(void);
typedef intptr_t (*DeviceStreamFn)(int);
typedef int (*WorkStreamFn)(int, int, void **);

static LaunchFn launch_kernel;
static DeviceFn ctx_get_device;
static StreamFn current_stream;
static DeviceStreamFn device_stream;
static WorkStreamFn work_stream;
static void *function;
static uint64_t values[7];
static void *params[7];

static PyObject *setup(PyObject *module, PyObject *args) {
    unsigned long long handle;
    PyObject *given, *exchange = Py_None;
    if (!PyArg_ParseTuple(args, "KO!|O", &handle, &PyTuple_Type, &given, &exchange))
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
    ctx_get_device = (DeviceFn)dlsym(cuda, "cuCtxGetDevice");
    PyObject *stream = PyImport_ImportModule("cupy_backends.cuda.stream");
    PyObject *api = stream ? PyObject_GetAttrString(stream, "__pyx_capi__") : NULL;
    PyObject *capsule = api ? PyDict_GetItemString(api, "get_current_stream_ptr") : NULL;  /* borrowed */
    current_stream = capsule ? (StreamFn)PyCapsule_GetPointer(capsule, "intptr_t (void)") : NULL;
    capsule = api ? PyDict_GetItemString(api, "get_stream_ptr") : NULL;
    device_stream = capsule ? (DeviceStreamFn)PyCapsule_GetPointer(capsule, "intptr_t (int)") : NULL;
    /* dlpack.h 1.3's DLPackExchangeAPI: a header of 16 bytes, then five function pointers, the last one
     * current_work_stream */
    void **table = exchange != Py_None ? PyCapsule_GetPointer(exchange, "dlpack_exchange_api") : NULL;
    const uint32_t *version = (const uint32_t *)table;
    work_stream = table != NULL && version[0] == 1 && version[1] >= 3 ? (WorkStreamFn)table[2 + 4] : NULL;
    Py_XDECREF(api);
    Py_XDECREF(stream);
    if (launch_kernel == NULL || ctx_get_device == NULL || current_stream == NULL
        || device_stream == NULL || (exchange != Py_None && work_stream == NULL)) {
        PyErr_Clear();
        return PyErr_Format(PyExc_RuntimeError, "libcuda's calls, CuPy's stream functions or torch's "
                                                "current_work_stream not found");
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

static int device_read(int *device) { return ctx_get_device(device) != 0; }

static PyObject *bare(PyObject *module, PyObject *unused) { return result(launch_held(NULL)); }

static PyObject *gil_released(PyObject *module, PyObject *unused) { return result(launch_released(NULL)); }

static PyObject *with_device_read(PyObject *module, PyObject *unused) {
    int device = -1;
    return result(device_read(&device) ? 1 : launch_released(NULL));
}

static PyObject *on_current_stream(PyObject *module, PyObject *unused) {
    int device = -1;
    return result(device_read(&device) ? 1 : launch_released((void *)current_stream()));
}

static PyObject *on_device_stream(PyObject *module, PyObject *unused) {
    int device = -1;
    return result(device_read(&device) ? 1 : launch_released((void *)device_stream(device)));
}

static PyObject *on_torch_stream(PyObject *module, PyObject *unused) {
    int device = -1;
    void *stream = NULL;
    if (work_stream == NULL)
        return PyErr_Format(PyExc_RuntimeError, "setup was given no exchange API");
    return result(device_read(&device) || work_stream(2 /* kDLCUDA */, device, &stream) ? 1
                                                                                      : launch_released(stream));
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
    {"setup", setup, METH_VARARGS, "setup(function, values, exchange=None): the CUfunction and its 7 launch "
                                   "values, torch.Tensor's DLPack exchange API capsule"},
    {"bare", bare, METH_NOARGS, "one launch, the GIL held"},
    {"gil_released", gil_released, METH_NOARGS, "one launch, the GIL released around it"},
    {"device_read", with_device_read, METH_NOARGS, "the current device read, then gil_released"},
    {"current_stream", on_current_stream, METH_NOARGS, "device_read, on CuPy's current stream"},
    {"device_stream", on_device_stream, METH_NOARGS, "device_read, on CuPy's current stream of that device"},
    {"torch_stream", on_torch_stream, METH_NOARGS, "device_read, on torch's current stream of that device"},
    {"c_loop", c_loop, METH_O, "c_loop(n): n launches from C, the GIL held"},
    {"nothing", nothing, METH_NOARGS, "nothing: a call's own cost"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "step_parts", NULL, -1, methods};

PyMODINIT_FUNC PyInit_step_parts(void) { return PyModule_Create(&definition); }
