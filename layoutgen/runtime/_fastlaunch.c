/* The compiled hot path of a generated launcher (layoutgen.runtime._fastlaunch).
 *
 * A generated launcher function calls its kernel's Launcher with the user's arguments. The Launcher holds
 * the plans the Python path validated (runtime/launch.py): for each, every argument's kind, shape, strides,
 * dtype and device, the alignment masks, the pairs of arguments that must not overlap, the blocks, the
 * symbols' values, the CUfunction and the Launch object. A call unwraps typed `Array`s, asks the driver for
 * the current device, checks the scalars, reads each array at C level (a CuPy array's own fields, a torch
 * tensor through DLPack's C exchange API), finds the plan its reads match, checks what a plan leaves to
 * check on every call (alignment, overlap, the autograd state of written torch tensors), finds the stream,
 * packs the 8-byte parameters and calls cuLaunchKernel.
 *
 * It never refuses anything itself: where any of this does not hold (an unknown kind of array, a new
 * shape, a misaligned pointer, an overlap, a scalar it does not take as is, no current context, a stream
 * it cannot read, a launch the driver refuses), it launches nothing and calls the Python path with the
 * call's own arguments, which runs the call from the start and raises the diagnostic with its code and
 * message. So both paths refuse exactly the same calls, and every message is built in one place. Every
 * read that could go wrong (a PyObject* that is NULL, a layout that is not the one expected, a pointer
 * dlsym did not find) is a hand-over, never a crash.
 *
 * Program runners launch their prepared steps through a Steps object (one call for all the launches).
 *
 * libcuda is loaded at run time (dlopen, then cuGetProcAddress as cuda.bindings resolves its entry points);
 * no CUDA header or library is needed to build this, only a C compiler and Python's headers. The GIL is held
 * throughout but for cuLaunchKernel, which may wait: for room in a full stream queue, or (CUDA_LAUNCH_BLOCKING=1)
 * for the kernels before it, behind which a host function may be waiting for the GIL (CuPy's
 * Stream.launch_host_func runs Python). cuda.bindings releases it there too.
 *
 * Python code runs inside a call (readers, a stream's __cuda_stream__, torch, the finalizers of what a plan
 * lets go, and any thread those let run): so a Launcher is initialised once, a plan is swapped in whole before
 * the one it replaces is let go, and what a call needs of a plan is copied before Python code can run. A
 * read's error hands the call over; an exception that is no Exception (KeyboardInterrupt) is the call's own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>  /* PyMemberDef (Python 3.11) */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------------------------
 * The driver: the few types and calls needed, declared as cuda.h declares them.
 */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUfunction;
typedef void *CUstream;
typedef CUresult (*LaunchKernelFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream, void **, void **);
typedef CUresult (*CtxGetDeviceFn)(CUdevice *);
typedef CUresult (*GetProcAddressFn)(const char *, void **, int, uint64_t, int *);  /* cuGetProcAddress_v2 */
typedef CUresult (*GetProcAddressV1Fn)(const char *, void **, int, uint64_t);      /* cuGetProcAddress */

#define MAX_ARRAYS 32   /* arrays of a kernel the compiled path takes; more: the Python path */
#define MAX_VALUES 128  /* 8-byte launch values (pointers, scalars, symbols) */
#define MAX_PLANS 8     /* plans kept per kernel; the Python path keeps 256 and teaches this one on a miss */
#define MAX_DIMS 8      /* ranks read at C level; an array of more dims is read through its attributes */
#define MAX_KINDS 16    /* kinds of arrays (Python types) read at C level */
#define STREAM_PER_THREAD 2  /* cudaStreamPerThread: where CuPy's current-stream pointer is ambiguous */
/* cuda.bindings resolves every driver entry point with this flag where the variable is set (to anything:
 * os.getenv's truth), else with CU_GET_PROC_ADDRESS_DEFAULT: stream handle 0 is then the per-thread default
 * stream, else the legacy one. The Python path's PackedLaunch launches through cuda.bindings, so this does. */
#define PTDS_ENV "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"
#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

static LaunchKernelFn launch_kernel = NULL;
static CtxGetDeviceFn ctx_get_device = NULL;
static int driver_tried = 0;
static int per_thread_stream = 0;  /* the entry points are the per-thread default stream's */
static char driver_error[256] = "not loaded yet";

/* The entry points cuda.bindings (13.x) takes: the same names, CUDA versions and flags, so that both paths
 * call the very same functions. Where the driver has no cuGetProcAddress (before CUDA 11.3), the plain
 * symbols, which are those versions, and cuLaunchKernel_ptsz for the per-thread default stream. */
static int load_driver(void) {
    if (driver_tried)
        return launch_kernel != NULL && ctx_get_device != NULL;
    driver_tried = 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        snprintf(driver_error, sizeof driver_error, "dlopen(libcuda.so.1): %s", dlerror());
        return 0;
    }
    const char *ptds = getenv(PTDS_ENV);
    per_thread_stream = ptds != NULL && ptds[0] != 0;
    uint64_t flags = per_thread_stream ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    GetProcAddressFn get_v2 = (GetProcAddressFn)dlsym(lib, "cuGetProcAddress_v2");
    GetProcAddressV1Fn get_v1 = get_v2 ? NULL : (GetProcAddressV1Fn)dlsym(lib, "cuGetProcAddress");
    const char *names[] = {"cuLaunchKernel", "cuCtxGetDevice"};
    const char *symbols[] = {per_thread_stream ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", "cuCtxGetDevice"};
    /* cuLaunchKernel's per-thread-stream entry point dates from CUDA 7.0: asked for at 4000 with that flag, the
     * driver finds nothing */
    const int versions[] = {per_thread_stream ? 7000 : 4000, 2000};
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
            snprintf(driver_error, sizeof driver_error, "%s (CUDA %d): %s (%d)", names[k], versions[k],
                     why ? why : "not found", got);
            return 0;
        }
    }
    launch_kernel = (LaunchKernelFn)found[0];
    ctx_get_device = (CtxGetDeviceFn)found[1];
    driver_error[0] = 0;
    return 1;
}

/* ---------------------------------------------------------------------------------------------------------
 * What configure() gave (runtime/fastpath.py, once): shared by every Launcher.
 */
static PyObject *readers = NULL;         /* launch._FAST_READERS: array type -> its Python reader */
static PyObject *cupy_reader = NULL;     /* the readers whose reads are done here at C level */
static PyObject *torch_reader = NULL;
static PyObject *stream_handle = NULL;   /* driver.stream_handle(stream, kernel) -> CUstream (LG616) */
static PyObject *stream_readers = NULL;  /* driver._STREAM_READERS: stream type -> its Python reader */
static PyObject *cupy_handle = NULL;     /* the stream readers whose read is one attribute, done here */
static PyObject *torch_handle = NULL;
static PyTypeObject *array_type = NULL;  /* typed.Array: unwrapped here as typed.unwrap does */
static Py_ssize_t array_data = -1;       /* ... from its `data` slot, at this offset */

/* Set by use_torch() once a torch tensor is taught (torch is imported by then). */
static PyObject *grad_enabled = NULL;    /* torch.is_grad_enabled */
static PyObject *mode_enabled = NULL;    /* torch._C._is_torch_function_mode_enabled, or NULL */
static PyObject *bump = NULL;            /* what TorchWrites.record calls with a tuple of tensors */
static PyObject *dlpack_types = NULL;    /* tuple: tensor types read through DLPack (their reads never dispatch) */
static PyObject *dl_dtypes = NULL;       /* dict: torch dtype -> the DLPack dtype it exports as (code | bits << 8 | ...) */
static PyObject *inference_enabled = NULL;  /* torch.is_inference_mode_enabled */
static uint32_t ambiguous[64];           /* DLPack dtypes more than one torch dtype exports as */
/* torch.Tensor.is_neg and .requires_grad, where they are C descriptors: called here without the method-call
 * machinery (~40 ns a tensor) while the tensor's type still finds them (see tensor_is_neg). */
static PyObject *is_neg_descr = NULL;
static PyCFunction is_neg_fn = NULL;
static PyObject *requires_grad_descr = NULL;
static getter requires_grad_get = NULL;
static void *requires_grad_closure = NULL;
static int n_ambiguous = 0;

static PyObject *hook = NULL;         /* set_hook(): stands in for cuLaunchKernel (tests) */
static PyObject *device_hook = NULL;  /* ... and for the driver's current device */

static PyObject *s_data, *s_ptr, *s_device_id, *s_shape, *s_strides, *s_dtype, *s_size, *s_data_ptr, *s_stride,
    *s_device, *s_is_neg, *s_requires_grad, *s_stream, *s_cuda_stream, *s_type, *s_index, *s_cuda, *s_cpu,
    *s_exchange, *s_is_inference;

/* A read that failed: its error is cleared (the Python path runs the call, and raises what it raises), unless
 * it is no Exception (KeyboardInterrupt, SystemExit), which stays set: it is the call's. 1: cleared (or none).
 * Every caller calls nothing more of Python's once an error stays set, and fails the call with it. */
static int swallow(void) {
    PyObject *error = PyErr_Occurred();
    if (error != NULL && !PyErr_GivenExceptionMatches(error, PyExc_Exception))
        return 0;
    PyErr_Clear();
    return 1;
}

/* `callable()`, held while it runs: a module-wide callable (a hook, torch's) may be replaced meanwhile. */
static PyObject *call_held(PyObject *callable, PyObject *arg) {
    Py_INCREF(callable);
    PyObject *got = arg == NULL ? PyObject_CallNoArgs(callable) : PyObject_CallOneArg(callable, arg);
    Py_DECREF(callable);
    return got;
}

/* ---------------------------------------------------------------------------------------------------------
 * CuPy arrays: their fields, as cupy/_core/core.pxd and cupy/cuda/memory.pxd declare them (CuPy 13, 14).
 * Cython lays a cdef class out as PyObject_HEAD, its vtable pointer, then the fields in declaration order.
 * Reading them costs nothing; `a.shape` and `a.strides` each build a tuple (~50 ns). The layout is not
 * taken on trust: a type is read this way only where its attributes are CuPy's own descriptors (no Python
 * class redefines them: reading one reads the field) and once one of its arrays, read through its
 * attributes, was found to hold exactly these values here (register_cupy); each call checks the pointer's
 * type, and each plan's fields are those its arrays' attributes gave (plan_arg).
 */
typedef struct {
    Py_ssize_t *begin, *end, *capacity;  /* std::vector<Py_ssize_t> (libstdc++ and libc++) */
} CxxVector;

typedef struct {
    PyObject_HEAD
    void *vtab;
    PyObject *weakref;
    Py_ssize_t size;
    CxxVector shape, strides;  /* strides in bytes */
    int c_contiguous, f_contiguous, index_32_bits;
    PyObject *dtype;
    PyObject *data;  /* cupy.cuda.memory.MemoryPointer */
    PyObject *base;
} CupyArray;

typedef struct {
    PyObject_HEAD
    void *vtab;
    intptr_t ptr;
    int device_id;
    PyObject *mem;
} CupyPointer;

/* CuPy's current stream: cupy_backends.cuda.stream.get_current_stream_ptr, the C function that
 * cupy.cuda.stream's (and CuPy's own launches) call, taken from the module's Cython C API; and
 * get_stream_ptr(device), the same of a device named, which a launch that has read the current device calls
 * (get_current_stream_ptr asks the CUDA runtime for that device again: cudaGetDevice, a call into another
 * library on every launch). */
typedef intptr_t (*CurrentStreamFn)(void);
typedef intptr_t (*DeviceStreamFn)(int);
static CurrentStreamFn current_stream = NULL;
static DeviceStreamFn device_stream = NULL;
static int current_stream_tried = 0;

/* Found once; an exception that stays set (an interrupted import) leaves it to be looked for again. */
static void load_current_stream(void) {
    current_stream_tried = 1;
    PyObject *module = PyImport_ImportModule("cupy_backends.cuda.stream");
    PyObject *api = module ? PyObject_GetAttrString(module, "__pyx_capi__") : NULL;
    PyObject *capsule = api && PyDict_Check(api) ? PyDict_GetItemString(api, "get_current_stream_ptr") : NULL;
    if (capsule != NULL && PyCapsule_CheckExact(capsule)) {
        const char *signature = PyCapsule_GetName(capsule);
        if (signature != NULL && strcmp(signature, "intptr_t (void)") == 0)  /* exactly the C type it is called as */
            current_stream = (CurrentStreamFn)PyCapsule_GetPointer(capsule, signature);
    }
    capsule = current_stream && PyDict_Check(api) ? PyDict_GetItemString(api, "get_stream_ptr") : NULL;
    if (capsule != NULL && PyCapsule_CheckExact(capsule)) {
        const char *signature = PyCapsule_GetName(capsule);
        if (signature != NULL && strcmp(signature, "intptr_t (int)") == 0)
            device_stream = (DeviceStreamFn)PyCapsule_GetPointer(capsule, signature);
    }
    Py_XDECREF(api);
    Py_XDECREF(module);
    if (!swallow())
        current_stream_tried = 0;
}

/* Whether reading attribute `name` of a `type` instance reads what a C-defined (static) type's descriptor
 * gives: no Python class in its MRO redefines it, and the type looks attributes up as that one does (no
 * __getattribute__ or __getattr__ of a subclass). */
static int reads_descriptor(PyTypeObject *type, PyObject *name) {
    PyObject *d = PyObject_GetAttr((PyObject *)type, name);
    int ok = d != NULL && (Py_IS_TYPE(d, &PyGetSetDescr_Type) || Py_IS_TYPE(d, &PyMemberDescr_Type));
    if (ok) {
        PyTypeObject *owner = PyDescr_TYPE(d);
        ok = !(owner->tp_flags & Py_TPFLAGS_HEAPTYPE) && PyType_IsSubtype(type, owner)
             && type->tp_getattro == owner->tp_getattro;
    }
    Py_XDECREF(d);
    return ok;
}

/* ---------------------------------------------------------------------------------------------------------
 * torch tensors through DLPack's C exchange API (dlpack.h 1.3: `type(t).__dlpack_c_exchange_api__`, a
 * capsule "dlpack_exchange_api"): a plain C function fills a DLTensor in ~40 ns, against ~350 ns for
 * data_ptr(), shape, stride(), dtype, device and is_neg() through Python's C API.
 */
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef int (*DLTensorFromPyObjectFn)(void *, DLTensor *);
typedef struct DLPackExchangeAPIHeader {
    DLPackVersion version;
    struct DLPackExchangeAPIHeader *prev_api;
} DLPackExchangeAPIHeader;
typedef struct {
    DLPackExchangeAPIHeader header;
    void *managed_tensor_allocator, *managed_tensor_from_py_object_no_sync, *managed_tensor_to_py_object_no_sync;
    DLTensorFromPyObjectFn dltensor_from_py_object_no_sync;  /* may be NULL */
    void *current_work_stream;
} DLPackExchangeAPI;

enum { kDLCPU = 1, kDLCUDA = 2, kDLROCM = 10 };

/* DLPack's current work stream: the stream the framework runs its work on (torch.cuda.current_stream), on
 * which a consumer of its tensors launches. 0, or -1 with an exception set. */
typedef int (*CurrentWorkStreamFn)(int32_t device_type, int32_t device_id, void **out_stream);

/* The exchange API table of a tensor type, or NULL (none, another major version). */
static const DLPackExchangeAPI *exchange_table(PyTypeObject *type) {
    PyObject *capsule = PyObject_GetAttr((PyObject *)type, s_exchange);
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
    swallow();  /* what stays set fails the caller */
    return table;
}

/* The exchange API's DLTensor export of a tensor type, or NULL (no table, or no such export in it). */
static DLTensorFromPyObjectFn exchange_api(PyTypeObject *type) {
    const DLPackExchangeAPI *table = exchange_table(type);
    return table != NULL ? table->dltensor_from_py_object_no_sync : NULL;
}

/* torch's own C++ reads (runtime/_torch_cxx_reader.cpp, built against the installed torch by
 * torch_cxx_reader.py): the DLTensor the exchange API fills, with the neg bit and requires_grad, in one call
 * of a few nanoseconds instead of two calls into torch's Python C API and a getter; the version bump of one
 * tensor; whether a torch function mode is on. Its layout is that file's TorchReader (kAbi 1). Used only for the types listed
 * in dlpack_types, whose objects are THPVariables. */
enum { TORCH_READER_MAGIC = 0x4c475452, TORCH_READER_ABI = 1, TORCH_NEG = 1, TORCH_REQUIRES_GRAD = 2, TORCH_INFERENCE = 4 };
/* The name of the capsule that carries a TorchReader table (_torch_cxx_reader.cpp makes it): use_torch_reader
 * takes nothing else, so no importable name takes an address. */
#define TORCH_READER_CAPSULE "layoutgen.runtime._torch_cxx_reader.TorchReader"
typedef struct {
    uint32_t magic, abi;
    int (*read)(PyObject *tensor, DLTensor *out, int *bits);
    int (*bump)(PyObject *tensor);
    int (*function_modes)(void);
} TorchReader;
static const TorchReader *cxx_reader = NULL;  /* use_torch_reader(); NULL: the exchange API and is_neg() */
static PyObject *cxx_capsule = NULL;  /* the capsule cxx_reader came in: held, so its library stays loaded */
static CurrentWorkStreamFn torch_work_stream = NULL;  /* use_torch(): torch.Tensor's exchange API's, or NULL */
static PyObject *torch_stream_read = NULL;  /* use_torch(): driver.torch_stream(device) -> TorchCurrentStream */
static int cxx_calls = 0;  /* its bump and function_modes agree with this torch's calls (torch_cxx_reader.py) */

/* ---------------------------------------------------------------------------------------------------------
 * Kinds: how each type of array is read here.
 */
enum {
    MODE_CUPY_FIELDS,  /* a CuPy array's struct fields */
    MODE_CUPY_ATTRS,   /* a CuPy array's attributes (a layout not confirmed; many dims, another pointer type) */
    MODE_DLPACK,       /* a torch tensor through DLPack, is_neg() besides */
    MODE_TORCH_ATTRS,  /* a torch tensor's methods and attributes (a subclass that may dispatch, a mode, a
                        * tensor DLPack does not export as read here) */
    MODE_READER,       /* any other kind with a Python fast reader: reader(a) -> (signature, pointer) */
};

typedef struct {
    PyTypeObject *type;           /* a strong reference: a type listed here is never freed, its address never reused */
    int mode;                     /* MODE_CUPY_FIELDS or MODE_DLPACK; any other kind is not listed */
    PyTypeObject *pointer_type;   /* CuPy: the MemoryPointer type its fields were confirmed with */
    DLTensorFromPyObjectFn from;  /* torch: the exchange API's DLTensor export */
    int listed;                   /* torch: one of dlpack_types (a THPVariable: cxx_reader may read it) */
    /* torch: which of torch's own descriptors the type found (OWN_*), while its version tag is own_tag and
     * the descriptors' registration own_generation: see own_descriptors */
    unsigned int own_tag, own_generation;
    int own;
} Kind;

static Kind kinds[MAX_KINDS];
static int n_kinds = 0;

static Kind *find_kind(PyTypeObject *type) {
    for (int k = 0; k < n_kinds; k++)
        if (kinds[k].type == type)
            return &kinds[k];
    return NULL;
}

/* One argument as read. C modes fill dims/ptr/dtype/device; attribute modes f[] (new references). */
typedef struct {
    int mode;
    PyTypeObject *type;
    uint64_t ptr;
    int ndim;
    int64_t shape[MAX_DIMS], strides[MAX_DIMS];
    PyObject *dtype;    /* CuPy fields: the dtype (a reference); DLPack: the torch dtype where ambiguous, else NULL */
    uint32_t dl_dtype;  /* DLPack: code | bits << 8 | lanes << 16 */
    int64_t device;     /* CuPy: device_id; DLPack: device_type << 32 | device_id */
    int requires_grad;  /* DLPack through the C++ reader: t.requires_grad as torch's own getter reads it; else -1 */
    int inference;      /* DLPack through the C++ reader: t.is_inference(); else -1 */
    PyObject *f[5];     /* CuPy attrs: shape, strides, dtype, device_id; torch: + device, is_neg; reader: signature */
} Read;

/* A Read as nothing read yet: what release_read and the checks look at before a read sets it. Its shape and
 * strides (128 bytes) are left as they are: a read writes them up to ndim and nothing reads further, so
 * zeroing them on every launch (a memset of each Read) was work for nothing. */
static void clear_read(Read *r) {
    r->mode = 0;
    r->type = NULL;
    r->ptr = 0;
    r->ndim = 0;
    r->dtype = NULL;
    r->dl_dtype = 0;
    r->device = 0;
    r->requires_grad = -1;
    r->inference = -1;
    for (int k = 0; k < 5; k++)
        r->f[k] = NULL;
}

static void release_read(Read *r) {
    Py_CLEAR(r->dtype);
    for (int k = 0; k < 5; k++)
        Py_CLEAR(r->f[k]);
}

/* A Python int as an address: 0 where it is none (negative, too large, not an int). */
static int as_address(PyObject *value, uint64_t *out) {
    if (value == NULL || !PyLong_Check(value))
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (v >> 63)  /* overlap arithmetic below is signed 64-bit */
        return 0;
    *out = v;
    return 1;
}

static int read_cupy_fields(PyObject *a, const Kind *kind, Read *r) {
    const CupyArray *c = (const CupyArray *)a;
    PyObject *data = c->data;
    if (data == NULL || Py_TYPE(data) != kind->pointer_type || c->dtype == NULL)
        return 0;
    Py_ssize_t ndim = c->shape.end - c->shape.begin;
    if (ndim < 0 || ndim > MAX_DIMS || c->strides.end - c->strides.begin != ndim || (ndim && !c->shape.begin)
        || (ndim && !c->strides.begin))
        return 0;
    intptr_t ptr = ((const CupyPointer *)data)->ptr;
    if (ptr < 0)
        return 0;
    r->ndim = (int)ndim;
    for (Py_ssize_t k = 0; k < ndim; k++) {
        r->shape[k] = c->shape.begin[k];
        r->strides[k] = c->strides.begin[k];
    }
    r->ptr = (uint64_t)ptr;
    r->device = ((const CupyPointer *)data)->device_id;
    r->dtype = Py_NewRef(c->dtype);
    return 1;
}

static int is_ambiguous(uint32_t dl_dtype) {
    for (int k = 0; k < n_ambiguous; k++)
        if (ambiguous[k] == dl_dtype)
            return 1;
    return 0;
}

/* t.is_neg() and t.requires_grad, as a new reference (NULL: an error). Where t's type finds torch's own C
 * descriptor (not one a class or a monkeypatch put in its place), its C function is called directly: the
 * same function the method call reaches, which dispatches to no __torch_function__ for the exact types read
 * here outside a mode. An attribute set on the instance itself could shadow is_neg for the Python call; the
 * tensor's own bit is read here, which is the bit the kernel would see. */
static PyObject *tensor_is_neg(PyObject *t) {
    if (is_neg_fn != NULL && _PyType_Lookup(Py_TYPE(t), s_is_neg) == is_neg_descr)
        return is_neg_fn(t, NULL);
    return PyObject_CallMethodNoArgs(t, s_is_neg);
}

static PyObject *tensor_requires_grad(PyObject *t) {
    if (requires_grad_get != NULL && _PyType_Lookup(Py_TYPE(t), s_requires_grad) == requires_grad_descr)
        return requires_grad_get(t, requires_grad_closure);
    return PyObject_GetAttr(t, s_requires_grad);
}

/* Which of torch's own descriptors (set_torch's is_neg and requires_grad) a listed kind's type finds, not a
 * replacement a class or a monkeypatch put in their place: OWN_IS_NEG | OWN_REQUIRES_GRAD. Two type lookups,
 * kept while the type's version tag is the one they were made under, as CPython's own attribute caches keep
 * theirs: CPython gives a type a new tag (or none, 0) whenever it or one of its bases changes, and never
 * gives a tag twice; set_torch, which may register other descriptors, starts a new generation. */
enum { OWN_IS_NEG = 1, OWN_REQUIRES_GRAD = 2 };
static unsigned int descriptors_generation = 1;

static int own_descriptors(Kind *kind) {
    PyTypeObject *type = kind->type;
    if (kind->own_generation == descriptors_generation && kind->own_tag != 0 && type->tp_version_tag == kind->own_tag
        && PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
        return kind->own;
    int own = (is_neg_fn != NULL && _PyType_Lookup(type, s_is_neg) == is_neg_descr ? OWN_IS_NEG : 0)
              | (requires_grad_get != NULL && _PyType_Lookup(type, s_requires_grad) == requires_grad_descr
                     ? OWN_REQUIRES_GRAD : 0);
    /* the lookups give the type a tag where it has none; without one (tags ran out), nothing is kept */
    kind->own_tag = PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
    kind->own_generation = descriptors_generation;
    kind->own = own;
    return own;
}

/* The DLTensor view of `t` (valid while t is unchanged) and its neg bit checked: 0 where it cannot be read. */
static int read_dlpack(PyObject *t, Kind *kind, Read *r) {
    DLTensor d;
    memset(&d, 0, sizeof d);
    int bits = -1;  /* the neg bit and requires_grad, where the C++ reader read them */
    if (cxx_reader != NULL && kind->listed) {
        if (cxx_reader->read(t, &d, &bits) != 0)
            return 0;  /* torch threw: the Python path reads it (and raises what it raises) */
    } else if (kind->from((void *)t, &d) != 0) {
        swallow();
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
    if (is_ambiguous(r->dl_dtype) && (r->dtype = PyObject_GetAttr(t, s_dtype)) == NULL)
        goto fail;
    /* DLPack has no neg bit: is_neg() is the one read of it torch's Python API offers (the Python path
     * refuses it, LG608). The C++ reader's bit is what torch's own is_neg() answers: taken while t's type
     * finds that descriptor, else the replacement is called, as the Python path calls it. */
    if (bits >= 0 && !(bits & TORCH_NEG)) {
        int own = own_descriptors(kind);
        if (own & OWN_IS_NEG) {
            if (own & OWN_REQUIRES_GRAD)
                r->requires_grad = (bits & TORCH_REQUIRES_GRAD) != 0;  /* what torch's own getter answers */
            r->inference = (bits & TORCH_INFERENCE) != 0;
            return 1;
        }
    }
    PyObject *neg = tensor_is_neg(t);
    int plain = neg == Py_False;
    Py_XDECREF(neg);
    if (!plain)
        goto fail;
    return 1;
fail:
    swallow();
    return 0;
}

/* Read one argument in `mode` as launch.py's readers read it; 0 where it cannot be (an error is cleared, but
 * for one that stays set). Where a C-level read does not apply to this array (more dims than read here,
 * another MemoryPointer type, a tensor DLPack does not export as read here), its attributes are read, as the
 * Python reader reads them. */
static int read_array(PyObject *a, int mode, Kind *kind, PyObject *reader, Read *r) {
    r->type = Py_TYPE(a);
    r->mode = mode;
    r->requires_grad = -1;
    r->inference = -1;
    if (mode == MODE_CUPY_FIELDS) {
        if (read_cupy_fields(a, kind, r))
            return 1;
        r->mode = mode = MODE_CUPY_ATTRS;
    } else if (mode == MODE_DLPACK) {
        if (read_dlpack(a, kind, r))
            return 1;
        if (PyErr_Occurred())
            return 0;
        Py_CLEAR(r->dtype);
        r->mode = mode = MODE_TORCH_ATTRS;
    }
    if (mode == MODE_CUPY_ATTRS) {
        PyObject *data = PyObject_GetAttr(a, s_data);
        if (data == NULL)
            goto fail;
        PyObject *ptr = PyObject_GetAttr(data, s_ptr);
        int ok = as_address(ptr, &r->ptr);
        Py_XDECREF(ptr);
        if (ok)
            r->f[3] = PyObject_GetAttr(data, s_device_id);
        Py_DECREF(data);
        if (!ok || r->f[3] == NULL)
            goto fail;
        if ((r->f[0] = PyObject_GetAttr(a, s_shape)) == NULL || (r->f[1] = PyObject_GetAttr(a, s_strides)) == NULL
            || (r->f[2] = PyObject_GetAttr(a, s_dtype)) == NULL)
            goto fail;
        return 1;
    }
    if (mode == MODE_TORCH_ATTRS) {
        PyObject *ptr = PyObject_CallMethodNoArgs(a, s_data_ptr);
        int ok = as_address(ptr, &r->ptr);
        Py_XDECREF(ptr);
        if (!ok)
            goto fail;
        if ((r->f[0] = PyObject_GetAttr(a, s_shape)) == NULL || (r->f[1] = PyObject_CallMethodNoArgs(a, s_stride)) == NULL
            || (r->f[2] = PyObject_GetAttr(a, s_dtype)) == NULL || (r->f[3] = PyObject_GetAttr(a, s_device)) == NULL
            || (r->f[4] = PyObject_CallMethodNoArgs(a, s_is_neg)) == NULL)
            goto fail;
        return 1;
    }
    PyObject *got = call_held(reader, a);  /* the reader is borrowed from the readers' dict */
    if (got == NULL || !PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
        Py_XDECREF(got);
        goto fail;
    }
    r->f[0] = Py_NewRef(PyTuple_GET_ITEM(got, 0));
    int ok = as_address(PyTuple_GET_ITEM(got, 1), &r->ptr);
    Py_DECREF(got);
    if (!ok)
        goto fail;
    return 1;
fail:
    swallow();
    return 0;
}

static int equal(PyObject *x, PyObject *y) {
    if (x == y)
        return 1;
    if (x == NULL || y == NULL)
        return 0;
    int eq = PyObject_RichCompareBool(x, y, Py_EQ);
    if (eq < 0) {
        swallow();
        return 0;
    }
    return eq;
}

/* Python ints in a tuple (torch.Size is one) equal to `values`. */
static int ints_equal(PyObject *tuple, const int64_t *values, int n) {
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

/* ---------------------------------------------------------------------------------------------------------
 * Plans.
 */
typedef struct {
    int i, j;
    long long size_i, size_j;
    int same_start;
} Pair;

typedef struct {  /* one argument of a plan as its C-mode read found it (mode < 0: taught in another mode) */
    int mode;
    int ndim;
    int64_t shape[MAX_DIMS], strides[MAX_DIMS];
    PyObject *dtype;  /* CuPy: the dtype; DLPack: the torch dtype where ambiguous (NULL else); a reference */
    uint32_t dl_dtype;
    int64_t device;
} PlanArg;

typedef struct {
    int used;
    long device;
    PyObject *sigs;  /* tuple: the Python reader's signature of each array (type first) */
    PlanArg args[MAX_ARRAYS];
    uint64_t masks[MAX_ARRAYS];
    int n_pairs;
    Pair *pairs;
    unsigned blocks, block, shared;
    int n_symbols;
    uint64_t symbols[MAX_VALUES];
    int n_written;
    int written[MAX_ARRAYS];  /* the written parameters that got torch tensors (validate.TorchWrites.indices) */
    PyObject *launch;  /* the Launch object (what a test hook is given) */
    CUfunction function;
} Plan;

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
        int eq = equal(dtype, r->dtype);
        Py_XDECREF(dtype);
        return eq;
    }
    if (r->mode == MODE_READER)
        return equal(sig, r->f[0]);
    Py_ssize_t fields = r->mode == MODE_CUPY_ATTRS ? 4 : 5;
    if (!PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) != fields + 1 || PyTuple_GET_ITEM(sig, 0) != (PyObject *)r->type)
        return 0;
    for (Py_ssize_t k = 0; k < fields; k++)
        if (!equal(PyTuple_GET_ITEM(sig, k + 1), r->f[k]))
            return 0;
    return 1;
}

/* Whether `plan` matches the reads. A comparison may run Python code (a reader's signature's __eq__), and
 * so another thread, which may teach this launcher a plan in this one's place: its signatures are held while
 * they are compared, and a plan replaced meanwhile is no match. */
static int matches(const Plan *plan, long device, const Read *reads, int n) {
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
static void release_plan(Plan *p) {
    Py_CLEAR(p->sigs);
    Py_CLEAR(p->launch);
    for (int i = 0; i < MAX_ARRAYS; i++)
        Py_CLEAR(p->args[i].dtype);
    PyMem_Free(p->pairs);
    p->pairs = NULL;
    p->used = 0;
}

/* Put `fresh` (or nothing, NULL) in `slot`, then let the plan it held go. */
static void swap_plan(Plan *slot, const Plan *fresh) {
    Plan old = *slot;
    if (fresh != NULL)
        *slot = *fresh;
    else
        memset(slot, 0, sizeof *slot);
    release_plan(&old);
}

/* ---------------------------------------------------------------------------------------------------------
 * Scalars: exactly validate.check_scalar (schema/scalars.pack_scalar) for a Python float, int or bool; any
 * other value (a NumPy scalar, a subclass, NaN, a value out of range, a wrong kind) goes to the Python check,
 * whose error hands the call over.
 */
enum { K_F32, K_F64, K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_BOOL };
static const char *const KIND_NAMES[] = {"f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"};
#define N_KINDS (int)(sizeof KIND_NAMES / sizeof KIND_NAMES[0])

static int kind_of(const char *name) {
    for (int k = 0; k < N_KINDS; k++)
        if (strcmp(name, KIND_NAMES[k]) == 0)
            return k;
    return -1;
}

/* 1: `slot` holds the value's 8-byte launch value; 0: the Python check must decide. */
static int fast_scalar(int kind, int finite, PyObject *v, uint64_t *slot) {
    *slot = 0;
    if (kind == K_BOOL) {  /* struct.pack("=?", value): one byte */
        if (v != Py_True && v != Py_False)
            return 0;
        unsigned char b = v == Py_True;  /* the slot's first byte in memory, on either byte order */
        memcpy(slot, &b, 1);
        return 1;
    }
    if (kind == K_F32 || kind == K_F64) {
        double x;
        if (PyFloat_CheckExact(v)) {
            x = PyFloat_AS_DOUBLE(v);
        } else if (PyLong_CheckExact(v)) {  /* float(int): correctly rounded, OverflowError past every double */
            x = PyLong_AsDouble(v);
            if (x == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        } else {
            return 0;
        }
        if (isnan(x) || (finite && isinf(x)))  /* NaN: how it packs depends on the Python version; LG622 */
            return 0;
        if (kind == K_F64) {
            memcpy(slot, &x, 8);
            return 1;
        }
        float y = (float)x;
        if (isinf(y) && !isinf(x))  /* PyFloat_Pack4's overflow: LG621 */
            return 0;
        memcpy(slot, &y, 4);
        return 1;
    }
    if (!PyLong_CheckExact(v))
        return 0;
    if (kind == K_U64) {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        memcpy(slot, &u, 8);
        return 1;
    }
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (n == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    static const long long low[] = {0, 0, -128, -32768, -2147483648LL, INT64_MIN, 0, 0, 0};
    static const long long high[] = {0, 0, 127, 32767, 2147483647LL, INT64_MAX, 255, 65535, 4294967295LL};
    if (n < low[kind] || n > high[kind])
        return 0;
    switch (kind) {
    case K_I8: { int8_t c = (int8_t)n; memcpy(slot, &c, 1); break; }
    case K_I16: { int16_t c = (int16_t)n; memcpy(slot, &c, 2); break; }
    case K_I32: { int32_t c = (int32_t)n; memcpy(slot, &c, 4); break; }
    case K_I64: { int64_t c = (int64_t)n; memcpy(slot, &c, 8); break; }
    case K_U8: { uint8_t c = (uint8_t)n; memcpy(slot, &c, 1); break; }
    case K_U16: { uint16_t c = (uint16_t)n; memcpy(slot, &c, 2); break; }
    case K_U32: { uint32_t c = (uint32_t)n; memcpy(slot, &c, 4); break; }
    default: return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------------------
 * The device and the stream.
 */

/* The current device: the driver's current context's (what CuPy's getDevice, cudaGetDevice, reports
 * whenever a context is current). 0 where there is none (no context on this thread, the driver not
 * initialised, a forked child's): the Python path decides then. One driver call: cuCtxGetDevice fails with
 * CUDA_ERROR_INVALID_CONTEXT where no context is current, so asking cuCtxGetCurrent first tells nothing
 * more (and costs a launch ~0.015x the C floor on the H200's host). */
static int current_device(long *device) {
    if (device_hook != NULL) {
        PyObject *got = call_held(device_hook, NULL);
        int ok = got != NULL && PyLong_CheckExact(got);
        if (ok) {
            *device = PyLong_AsLong(got);
            ok = !PyErr_Occurred();
        }
        Py_XDECREF(got);
        swallow();
        return ok;
    }
    if (!load_driver())
        return 0;
    CUdevice ordinal = -1;
    if (ctx_get_device(&ordinal) != 0 || ordinal < 0)
        return 0;
    *device = ordinal;
    return 1;
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
    swallow();
    return ok;
}

/* The CUstream of `stream` as driver.stream_handle reads it: None (CuPy's current stream: of `device`,
 * the current one, where it is known, else -1), CuPy's and torch's streams here; any other (and None where
 * CuPy's pointer is ambiguous) through stream_handle itself. 0: the Python path decides (LG616 for what is no
 * stream). */
static int stream_of(PyObject *stream, PyObject *name, long device, uint64_t *out) {
    if (stream == Py_None) {
        if (!current_stream_tried) {
            load_current_stream();
            if (PyErr_Occurred())
                return 0;
        }
        if (current_stream != NULL) {
            intptr_t ptr = device >= 0 && device <= INT_MAX && device_stream ? device_stream((int)device)
                                                                             : current_stream();
            if (ptr == -1 && PyErr_Occurred()) {
                swallow();
                return 0;
            }
            /* With CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1, CuPy's C pointer of the null stream made current is
             * the per-thread one while cupy.cuda.get_current_stream().ptr is 0: stream_handle decides. */
            if (ptr != STREAM_PER_THREAD && ptr >= 0) {
                *out = (uint64_t)ptr;
                return 1;
            }
        }
    } else if (stream_readers != NULL) {
        PyObject *reader = PyDict_GetItemWithError(stream_readers, (PyObject *)Py_TYPE(stream));  /* borrowed */
        if (reader == NULL && !swallow())
            return 0;
        if (reader != NULL && (reader == cupy_handle || reader == torch_handle))  /* compared, never called */
            return as_handle(PyObject_GetAttr(stream, reader == cupy_handle ? s_ptr : s_cuda_stream), out);
    }
    if (stream_handle == NULL)
        return 0;
    PyObject *read = Py_NewRef(stream_handle);
    PyObject *handle = PyObject_CallFunctionObjArgs(read, stream, name, NULL);
    Py_DECREF(read);
    return as_handle(handle, out);
}

/* torch's current stream on `device`, what a launch over torch tensors alone runs on when given none
 * (driver.launch_stream): through torch's exchange API (current_work_stream, as DLPack asks a consumer of a
 * framework's tensors to launch); else, and under a hook (whose tests give torch's stream in Python), through
 * driver.torch_stream, whose stream object `*on` becomes. 0: the Python path decides. */
static int torch_stream(long device, int hooked, PyObject *name, PyObject **on, uint64_t *out) {
    if (!hooked && torch_work_stream != NULL && device >= 0 && device <= INT32_MAX) {
        void *handle = NULL;
        if (torch_work_stream(kDLCUDA, (int32_t)device, &handle) != 0) {
            swallow();
            return 0;
        }
        *out = (uint64_t)(uintptr_t)handle;
        return 1;
    }
    PyObject *index = torch_stream_read != NULL ? PyLong_FromLong(device) : NULL;
    PyObject *current = index != NULL ? call_held(torch_stream_read, index) : NULL;
    Py_XDECREF(index);
    if (current == NULL) {
        swallow();
        return 0;
    }
    Py_SETREF(*on, current);
    return stream_of(current, name, device, out);
}

/* The driver's launch, or the hook's: 1 launched, 0 refused by the driver (nothing ran: the Python path
 * reports LG609), -1 the hook's error. */
static int launch_packed(PyObject *replay, PyObject *launch_obj, CUfunction function, unsigned blocks,
                         unsigned block, unsigned shared, PyObject *stream, uint64_t cu_stream, uint64_t *buffer,
                         int count) {
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
    void *slots[MAX_VALUES];
    for (int k = 0; k < count; k++)
        slots[k] = &buffer[k];
    CUresult status;
    /* Without the GIL, as cuda.bindings calls it: the call may wait (a full queue, CUDA_LAUNCH_BLOCKING=1) for
     * work that needs the GIL (a host function that runs Python). Everything it reads is this call's own. */
    Py_BEGIN_ALLOW_THREADS
    status = launch_kernel(function, blocks, 1, 1, block, 1, 1, shared, (CUstream)(uintptr_t)cu_stream, slots,
                           NULL);
    Py_END_ALLOW_THREADS
    return status == 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * The Launcher: one kernel's plans and its compiled call.
 */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;      /* the kernel's name (stream_handle names it in LG616) */
    PyObject *fallback;  /* the Python path: KernelLauncher._python_path(*arguments, stream=...) */
    PyObject *scalar_check;  /* (index, value) -> the value's launch value, or a LaunchError */
    PyObject *binding;   /* the generated launcher function, where this stands in its name (bind_signature) */
    PyObject *dict;      /* its __name__, __doc__, __wrapped__ (KernelLauncher.public) */
    int n_arrays, n_scalars;
    int scalar_kinds[MAX_VALUES];
    int scalar_finite[MAX_VALUES];
    Plan plans[MAX_PLANS];
    int last, next;
    unsigned long long hits, handovers;
} Launcher;

static int unwrap(PyObject **a) {
    if (Py_TYPE(*a) != array_type)
        return 1;
    PyObject *inner = *(PyObject **)((char *)*a + array_data);  /* NULL where the slot is empty */
    if (inner == NULL)
        return 0;
    *a = inner;
    return 1;
}

/* bump((the written tensors,)) as TorchWrites.record does: 1, or -1 with the error. The C++ reader bumps
 * those of the listed types in turn; from the first it cannot (another type, or torch threw), the rest go
 * to bump, which raises torch's own error where there is one. */
static int bump_versions(PyObject *const *arrays, const int *written, int n_written) {
    int first = 0;
    for (; cxx_reader != NULL && cxx_calls && first < n_written; first++) {
        PyObject *t = arrays[written[first]];
        const Kind *kind = find_kind(Py_TYPE(t));
        if (kind == NULL || kind->mode != MODE_DLPACK || !kind->listed || cxx_reader->bump(t) != 0)
            break;
    }
    if (first == n_written)
        return 1;
    PyObject *tensors = PyTuple_New(n_written - first);
    if (tensors == NULL)
        return -1;
    for (int k = first; k < n_written; k++)
        PyTuple_SET_ITEM(tensors, k - first, Py_NewRef(arrays[written[k]]));
    PyObject *ok = bump == NULL ? NULL : call_held(bump, tensors);
    if (ok == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "layoutgen: torch's version counters could not be bumped");
    Py_DECREF(tensors);
    Py_XDECREF(ok);
    return ok == NULL ? -1 : 1;
}

/* Whether a torch function mode may intercept tensors' reads now (it may make data_ptr() & co. answer
 * anything): 1 on, or not known; 0 off; -1 an error that stays set. */
static int torch_modes_on(void) {
    if (mode_enabled == NULL)
        return 1;
    if (cxx_reader != NULL && cxx_calls)
        return cxx_reader->function_modes();
    PyObject *on = call_held(mode_enabled, NULL);
    int result = on != Py_False;
    Py_XDECREF(on);
    return on == NULL && !swallow() ? -1 : result;
}

/* The mode `a` is read in, its kind where listed, its reader: -1 where it has no fast reader (or an error
 * stays set). `*torch_modes` is read once a call, where a tensor needs it. */
static int mode_of(PyObject *a, int *torch_modes, Kind **kind, PyObject **reader) {
    *kind = find_kind(Py_TYPE(a));
    if (*kind != NULL) {
        if ((*kind)->mode == MODE_DLPACK) {
            if (*torch_modes < 0 && (*torch_modes = torch_modes_on()) < 0)
                return -1;
            return *torch_modes ? MODE_TORCH_ATTRS : MODE_DLPACK;  /* under a mode: read as Python does */
        }
        return (*kind)->mode;
    }
    *reader = readers ? PyDict_GetItemWithError(readers, (PyObject *)Py_TYPE(a)) : NULL;  /* borrowed */
    if (*reader == NULL) {  /* a kind the Python path has not read yet, or one it validates every call */
        swallow();
        return -1;
    }
    return *reader == cupy_reader ? MODE_CUPY_ATTRS : *reader == torch_reader ? MODE_TORCH_ATTRS : MODE_READER;
}

/* 1: launched (or nothing to launch); 0: the Python path must run the call; -1: the call's error (the hook's,
 * the version bump's after the launch, or one that is no Exception, from Python code it ran). */
static int launch_call(Launcher *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *stream = Py_None;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyObject *keyword = PyTuple_GET_ITEM(kwnames, 0);
        if (PyTuple_GET_SIZE(kwnames) != 1 || (keyword != s_stream && PyUnicode_Compare(keyword, s_stream) != 0)) {
            PyErr_Clear();  /* a str compared with a str: nothing to keep */
            return 0;  /* a keyword the Python path refuses (TypeError) */
        }
        stream = args[nargs];
    }
    int n = self->n_arrays, n_scalars = self->n_scalars;  /* fixed: a Launcher is initialised once */
    if (nargs != n + n_scalars)
        return 0;  /* LG601 */
    long device;
    if (!current_device(&device))
        return PyErr_Occurred() ? -1 : 0;
    uint64_t values[MAX_VALUES];
    for (int k = 0; k < n_scalars; k++) {
        PyObject *v = args[n + k];
        if (!fast_scalar(self->scalar_kinds[k], self->scalar_finite[k], v, &values[k])) {
            PyObject *got = PyObject_CallFunction(self->scalar_check, "iO", k, v);  /* LG620..LG622: hand over */
            int ok = got != NULL && PyLong_Check(got);
            if (ok) {
                values[k] = PyLong_AsUnsignedLongLongMask(got);
                ok = !PyErr_Occurred();
            }
            Py_XDECREF(got);
            if (!ok)
                return swallow() ? 0 : -1;
        }
    }
    PyObject *arrays[MAX_ARRAYS];  /* held: an Array's slot may be set again while Python code runs */
    Read reads[MAX_ARRAYS];
    int n_read = 0, n_held = 0, torch_modes = -1, result = 0, n_torch = 0;
    for (int i = 0; i < n; i++) {
        PyObject *a = args[i];
        if (!unwrap(&a))
            goto out;
        arrays[n_held++] = Py_NewRef(a);
        Kind *kind = NULL;
        PyObject *reader = NULL;
        int mode = mode_of(a, &torch_modes, &kind, &reader);
        if (mode < 0)
            goto out;
        n_torch += mode == MODE_DLPACK || mode == MODE_TORCH_ATTRS;
        clear_read(&reads[i]);
        n_read = i + 1;
        if (!read_array(a, mode, kind, reader, &reads[i]))
            goto out;
    }
    Plan *plan = NULL;
    if (matches(&self->plans[self->last], device, reads, n)) {
        plan = &self->plans[self->last];
    } else {
        for (int k = 0; k < MAX_PLANS && plan == NULL && !PyErr_Occurred(); k++)
            if (k != self->last && matches(&self->plans[k], device, reads, n)) {
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
    PyObject *replay = hook ? Py_NewRef(hook) : NULL;
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
    if (n_written) {  /* LG635 on the Python path: an inference tensor written outside inference mode */
        int inference = 0;
        for (int k = 0; !inference && k < n_written; k++) {
            inference = reads[written[k]].inference;
            if (inference < 0) {  /* not read with the rest: asked */
                PyObject *is = PyObject_CallMethodNoArgs(arrays[written[k]], s_is_inference);
                inference = is == NULL ? -1 : PyObject_IsTrue(is);
                Py_XDECREF(is);
            }
        }
        if (inference == 1) {  /* allowed in inference mode, as torch allows it */
            PyObject *on = inference_enabled ? call_held(inference_enabled, NULL) : NULL;
            inference = on == NULL ? -1 : PyObject_IsTrue(on) == 1 ? 0 : -1;
            Py_XDECREF(on);
        }
        if (inference) {  /* refused, or a read failed: the Python path decides */
            swallow();
            goto handover_held;
        }
    }
    if (n_written) {  /* LG618 on the Python path (TorchWrites.check): a written tensor that requires grad, in
                       * grad mode. Each tensor's flag is read first (a getter), the grad mode (a call) only
                       * where one is set: the same calls refused, a call fewer where none is (an output's usual
                       * state). */
        int wanted = 0;
        for (int k = 0; !wanted && k < n_written; k++) {
            if (reads[written[k]].requires_grad >= 0) {  /* read with the rest, while no Python code ran since */
                wanted = reads[written[k]].requires_grad;
                continue;
            }
            PyObject *wants = tensor_requires_grad(arrays[written[k]]);
            wanted = wants == NULL ? -1 : PyObject_IsTrue(wants);
            Py_XDECREF(wants);
        }
        if (wanted == 1) {  /* one requires grad: launched under torch.no_grad() (an optimizer's step) */
            PyObject *on = grad_enabled ? call_held(grad_enabled, NULL) : NULL;
            wanted = on == NULL ? -1 : PyObject_IsTrue(on);
            Py_XDECREF(on);
        }
        if (wanted) {  /* refused in grad mode, or a read failed: the Python path decides */
            swallow();
            goto handover_held;
        }
    }
    int launched = 1;
    if (blocks) {
        uint64_t cu_stream = 0;
        if (replay == NULL && !load_driver())
            goto handover_held;
        PyObject *on = Py_NewRef(stream);  /* what the hook is told the launch is on */
        if (stream == Py_None && n_torch) {
            /* torch's current stream where every array is a torch tensor; over torch tensors and others the
             * Python path compares the two libraries' current streams (LG616 where they differ) */
            if (n_torch < n || !torch_stream(device, replay != NULL, self->name, &on, &cu_stream)) {
                Py_DECREF(on);
                goto handover_held;
            }
        } else if ((replay == NULL || stream != Py_None) && !stream_of(stream, self->name, device, &cu_stream)) {
            Py_DECREF(on);
            goto handover_held;  /* LG616 */
        }
        launched = launch_packed(replay, launch_obj, function, blocks, block, shared, on, cu_stream, buffer,
                                 count);
        Py_DECREF(on);
        if (launched == 0)
            goto handover_held;  /* nothing ran: the Python path launches again and reports LG609 */
    }
    if (launched == 1 && blocks && n_written)  /* torch's in-place rule: bump the version counters of what it wrote */
        launched = bump_versions(arrays, written, n_written);
    Py_DECREF(launch_obj);
    Py_XDECREF(replay);
    result = launched;
    goto out;
handover_held:
    Py_DECREF(launch_obj);
    Py_XDECREF(replay);
out:
    for (int i = 0; i < n_read; i++)
        release_read(&reads[i]);
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
    PyObject *keyword = PyTuple_GET_ITEM(kwnames, 0);
    return PyTuple_GET_SIZE(kwnames) == 1 && (keyword == s_stream || PyUnicode_Compare(keyword, s_stream) == 0);
}

static PyObject *Launcher_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
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
static PyObject *Launcher_attempt(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (((Launcher *)self)->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "a Launcher must be initialised before it is called");
        return NULL;
    }
    int got = try_launch((Launcher *)self, args, (size_t)nargs, kwnames);
    if (got < 0)
        return NULL;
    return PyBool_FromLong(got);
}

static int as_u64(PyObject *v, uint64_t *out) {
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *out = x;
    return 1;
}

/* An unsigned int of the driver's (a grid, a block, bytes of shared memory): never cut to its low bits. */
static int as_uint(PyObject *v, unsigned *out) {
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

/* Whether torch's `device` (its type and index, None: 0) is the DLPack device `dl` (type << 32 | id). */
static int torch_device_is(PyObject *device, int64_t dl) {
    PyObject *kind_name = PyObject_GetAttr(device, s_type), *index = kind_name ? PyObject_GetAttr(device, s_index) : NULL;
    long id = index == Py_None ? 0 : index != NULL && PyLong_Check(index) ? PyLong_AsLong(index) : -1;
    int dl_type = (int)(dl >> 32), dl_id = (int)(uint32_t)dl;
    int ok = index != NULL && !PyErr_Occurred() && PyUnicode_Check(kind_name) && id == dl_id
             && ((PyUnicode_Compare(kind_name, s_cuda) == 0 && (dl_type == kDLCUDA || dl_type == kDLROCM))
                 || (PyUnicode_Compare(kind_name, s_cpu) == 0 && dl_type == kDLCPU));
    Py_XDECREF(kind_name);
    Py_XDECREF(index);
    return ok;
}

/* Whether the DLPack dtype of a read (and, where ambiguous, its torch dtype) is torch dtype `dtype`: the one
 * use_torch was told it exports as. A tensor's dtype changes in place (`t.data = ...`): a plan keyed on a read
 * must be keyed on the dtype validated. */
static int torch_dtype_is(PyObject *dtype, const Read *r) {
    if (dl_dtypes == NULL || (r->dtype != NULL && r->dtype != dtype))
        return 0;
    PyObject *code = PyDict_GetItemWithError(dl_dtypes, dtype);  /* borrowed; a dict of torch's own objects */
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

/* Whether the C-level read `r` of an array holds what its Python reader read (`sig`, `ptr`): cupy_reader's
 * (type, shape, strides, dtype, device_id) or torch_reader's (type, shape, stride(), dtype, device, is_neg()),
 * every field: a plan taught with a validated read is keyed on the C read only where the two are one. */
static int read_agrees(const Read *r, PyObject *sig, uint64_t ptr) {
    if (r->ptr != ptr || !PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) < 1 || PyTuple_GET_ITEM(sig, 0) != (PyObject *)r->type)
        return 0;
    if (r->mode == MODE_CUPY_FIELDS) {
        PyObject *device_id = PyTuple_GET_SIZE(sig) == 5 ? PyTuple_GET_ITEM(sig, 4) : NULL;
        return PyTuple_GET_SIZE(sig) == 5 && ints_equal(PyTuple_GET_ITEM(sig, 1), r->shape, r->ndim)
               && ints_equal(PyTuple_GET_ITEM(sig, 2), r->strides, r->ndim) && PyTuple_GET_ITEM(sig, 3) == r->dtype
               && PyLong_CheckExact(device_id) && PyLong_AsLongLong(device_id) == r->device && !PyErr_Occurred();
    }
    return r->mode == MODE_DLPACK && PyTuple_GET_SIZE(sig) == 6 && ints_equal(PyTuple_GET_ITEM(sig, 1), r->shape, r->ndim)
           && ints_equal(PyTuple_GET_ITEM(sig, 2), r->strides, r->ndim) && PyTuple_GET_ITEM(sig, 5) == Py_False
           && torch_dtype_is(PyTuple_GET_ITEM(sig, 3), r) && torch_device_is(PyTuple_GET_ITEM(sig, 4), r->device);
}

/* List a kind: where another call (Python code ran since the caller looked) listed it first, or the list is
 * full, nothing. The references are the list's. */
static void list_kind(const Kind *kind) {
    if (find_kind(kind->type) != NULL || n_kinds >= MAX_KINDS)
        return;
    Py_INCREF(kind->type);
    Py_XINCREF(kind->pointer_type);
    kinds[n_kinds++] = *kind;
}

/* Register a's type as read through its fields where reading its attributes reads CuPy's descriptors and
 * a, read through its attributes (`sig`, `ptr`), holds exactly those values there. The checks before any
 * pointer in the object is followed: the type is large enough, its `data` and `dtype` fields are the very
 * objects its attributes return, its vectors' lengths are the shape's. 1, or 0 where an error stays set. */
static int register_cupy(PyObject *a, PyObject *sig, uint64_t ptr) {
    PyTypeObject *type = Py_TYPE(a);
    if (find_kind(type) != NULL || n_kinds >= MAX_KINDS || type->tp_basicsize < (Py_ssize_t)sizeof(CupyArray)
        || !PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) != 5)
        return 1;
    const CupyArray *c = (const CupyArray *)a;
    PyObject *shape = PyTuple_GET_ITEM(sig, 1), *data = NULL, *dtype = NULL;
    int ok = reads_descriptor(type, s_data) && reads_descriptor(type, s_dtype) && reads_descriptor(type, s_shape)
             && reads_descriptor(type, s_strides) && (data = PyObject_GetAttr(a, s_data)) != NULL
             && (dtype = PyObject_GetAttr(a, s_dtype)) != NULL && c->data == data && c->dtype == dtype
             && Py_TYPE(data)->tp_basicsize >= (Py_ssize_t)sizeof(CupyPointer)
             && reads_descriptor(Py_TYPE(data), s_ptr) && reads_descriptor(Py_TYPE(data), s_device_id)
             && PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) >= 1 && c->shape.end - c->shape.begin == PyTuple_GET_SIZE(shape);
    if (ok) {
        Kind kind = {type, MODE_CUPY_FIELDS, Py_TYPE(data), NULL};
        Read r;
        clear_read(&r);
        r.type = type;
        r.mode = MODE_CUPY_FIELDS;
        if (read_cupy_fields(a, &kind, &r) && read_agrees(&r, sig, ptr))  /* the vectors followed only now */
            list_kind(&kind);
        release_read(&r);
    }
    Py_XDECREF(data);
    Py_XDECREF(dtype);
    return swallow();
}

/* Whether `type` is one of dlpack_types (torch.Tensor's own, read through DLPack or the C++ reader). */
static int is_listed(PyTypeObject *type) {
    int listed = 0;
    for (Py_ssize_t k = 0; dlpack_types != NULL && k < PyTuple_GET_SIZE(dlpack_types); k++)
        listed |= PyTuple_GET_ITEM(dlpack_types, k) == (PyObject *)type;
    return listed;
}

/* Register t's type as read through DLPack where it is one of dlpack_types and its DLPack read agrees with
 * its Python read (`sig`, `ptr`). 1, or 0 where an error stays set. */
static int register_torch(PyObject *t, PyObject *sig, uint64_t ptr) {
    PyTypeObject *type = Py_TYPE(t);
    if (find_kind(type) != NULL || n_kinds >= MAX_KINDS || dlpack_types == NULL)
        return 1;
    int listed = is_listed(type);
    Kind kind = {type, MODE_DLPACK, NULL, listed ? exchange_api(type) : NULL, listed};
    if (kind.from == NULL)
        return !PyErr_Occurred();
    Read r;
    clear_read(&r);
    r.type = type;
    r.mode = MODE_DLPACK;
    if (read_dlpack(t, &kind, &r) && read_agrees(&r, sig, ptr))
        list_kind(&kind);
    release_read(&r);
    return swallow();
}

/* The C-level read of argument `a` for a plan: kept only where its kind is read at C level, `reader` is
 * that kind's reader, no torch function mode answered the reader's reads, and the read agrees with what
 * the reader read (`sig`, `ptr`); else mode -1 (the plan's argument is matched on `sig` alone, by a read in
 * the Python reader's way). 1, or 0 where an error stays set. */
static int plan_arg(PyObject *a, PyObject *sig, uint64_t ptr, PyObject *reader, PlanArg *p) {
    Kind *kind = find_kind(Py_TYPE(a));
    p->mode = -1;
    if (kind == NULL || reader != (kind->mode == MODE_CUPY_FIELDS ? cupy_reader : torch_reader))
        return 1;
    if (kind->mode == MODE_DLPACK) {
        int on = torch_modes_on();
        if (on != 0)
            return on > 0;
    }
    Read r;
    clear_read(&r);
    r.type = Py_TYPE(a);
    r.mode = kind->mode;
    int ok = kind->mode == MODE_CUPY_FIELDS ? read_cupy_fields(a, kind, &r) : read_dlpack(a, kind, &r);
    if (ok && read_agrees(&r, sig, ptr)) {
        p->mode = kind->mode;
        p->ndim = r.ndim;
        memcpy(p->shape, r.shape, sizeof p->shape);
        memcpy(p->strides, r.strides, sizeof p->strides);
        p->dtype = r.dtype;  /* the reference moves to the plan */
        r.dtype = NULL;
        p->dl_dtype = r.dl_dtype;
        p->device = r.device;
    }
    release_read(&r);
    return swallow();
}

/* add(device, arrays, sigs, ptrs, masks, pairs, blocks, block, shared, symbols, written, launch, function):
 * keep one plan the Python path validated `arrays` to; `sigs` and `ptrs` are its readers' reads of them. */
static PyObject *Launcher_add(Launcher *self, PyObject *args) {
    long device;
    PyObject *arrays, *sigs, *ptrs, *masks, *pairs, *symbols, *written, *launch, *function, *grid[3];
    if (!PyArg_ParseTuple(args, "lO!O!O!O!O!OOOO!O!OO", &device, &PyTuple_Type, &arrays, &PyTuple_Type, &sigs,
                          &PyTuple_Type, &ptrs, &PyTuple_Type, &masks, &PyTuple_Type, &pairs, &grid[0], &grid[1],
                          &grid[2], &PyTuple_Type, &symbols, &PyTuple_Type, &written, &launch, &function))
        return NULL;
    int n = self->n_arrays;
    Py_ssize_t n_symbols = PyTuple_GET_SIZE(symbols), n_written = PyTuple_GET_SIZE(written);
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "a Launcher must be initialised before it is taught a plan");
        return NULL;
    }
    if (n_written && (bump == NULL || grad_enabled == NULL)) {  /* use_torch() first: the Python path keeps it */
        PyErr_SetString(PyExc_ValueError, "a plan that writes torch tensors needs torch's calls (use_torch)");
        return NULL;
    }
    if (PyTuple_GET_SIZE(arrays) != n || PyTuple_GET_SIZE(sigs) != n || PyTuple_GET_SIZE(ptrs) != n
        || PyTuple_GET_SIZE(masks) != n || n + self->n_scalars + n_symbols > MAX_VALUES || n_written > n) {
        PyErr_SetString(PyExc_ValueError, "a plan must have one array, signature, pointer and mask per parameter");
        return NULL;
    }
    Plan fresh;
    memset(&fresh, 0, sizeof fresh);
    if (!as_uint(grid[0], &fresh.blocks) || !as_uint(grid[1], &fresh.block) || !as_uint(grid[2], &fresh.shared))
        return NULL;
    for (int i = 0; i < n; i++)
        if (!as_u64(PyTuple_GET_ITEM(masks, i), &fresh.masks[i]))
            return NULL;
    for (Py_ssize_t k = 0; k < n_symbols; k++)
        if (!as_u64(PyTuple_GET_ITEM(symbols, k), &fresh.symbols[k]))
            return NULL;
    for (Py_ssize_t k = 0; k < n_written; k++) {
        long i = PyLong_AsLong(PyTuple_GET_ITEM(written, k));
        if (i < 0 || i >= n) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a written index must name an array of the kernel");
            return NULL;
        }
        fresh.written[k] = (int)i;
    }
    uint64_t fn;
    if (!as_u64(function, &fn))
        return NULL;
    Py_ssize_t n_pairs = PyTuple_GET_SIZE(pairs);
    fresh.pairs = PyMem_Calloc(n_pairs ? n_pairs : 1, sizeof(Pair));
    if (fresh.pairs == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < n_pairs; k++) {
        Pair *q = &fresh.pairs[k];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(pairs, k), "iiLLp", &q->i, &q->j, &q->size_i, &q->size_j,
                              &q->same_start) || q->i < 0 || q->j < 0 || q->i >= n || q->j >= n) {
            PyMem_Free(fresh.pairs);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a pair must name two arrays of the kernel");
            return NULL;
        }
    }
    /* Kinds first seen here are confirmed against the Python readers' reads, then each array is read as a
     * call will read it, and kept where it agrees with them. */
    for (int i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(arrays, i), *sig = PyTuple_GET_ITEM(sigs, i);
        PyObject *reader = readers ? PyDict_GetItemWithError(readers, (PyObject *)Py_TYPE(a)) : NULL;
        uint64_t ptr;
        int ok = reader != NULL ? 1 : swallow();
        if (ok && reader != NULL && as_address(PyTuple_GET_ITEM(ptrs, i), &ptr)) {
            Py_INCREF(reader);  /* compared only, but Python code runs below */
            if (reader == cupy_reader)
                ok = register_cupy(a, sig, ptr);
            else if (reader == torch_reader)
                ok = register_torch(a, sig, ptr);
            ok = ok && plan_arg(a, sig, ptr, reader, &fresh.args[i]);
            Py_DECREF(reader);
        }
        if (!ok) {
            release_plan(&fresh);
            return NULL;
        }
    }
    fresh.used = 1;
    fresh.device = device;
    fresh.n_pairs = (int)n_pairs;
    fresh.n_symbols = (int)n_symbols;
    fresh.n_written = (int)n_written;
    fresh.function = (CUfunction)(uintptr_t)fn;
    fresh.sigs = Py_NewRef(sigs);
    fresh.launch = Py_NewRef(launch);
    int slot = -1;
    for (int k = 0; k < MAX_PLANS && slot < 0; k++) {  /* the same signatures learnt again replace their plan */
        PyObject *known = Py_XNewRef(self->plans[k].sigs);  /* held: the comparison runs Python code */
        if (known != NULL && self->plans[k].used && self->plans[k].device == device && equal(known, sigs))
            slot = k;
        Py_XDECREF(known);
        if (PyErr_Occurred()) {
            release_plan(&fresh);
            return NULL;
        }
    }
    if (slot < 0) {
        slot = self->next;
        self->next = (self->next + 1) % MAX_PLANS;
    }
    self->last = slot;
    swap_plan(&self->plans[slot], &fresh);  /* in whole before the old one is let go */
    Py_RETURN_NONE;
}

static PyObject *Launcher_clear(Launcher *self, PyObject *unused) {
    for (int k = 0; k < MAX_PLANS; k++)
        swap_plan(&self->plans[k], NULL);
    Py_RETURN_NONE;
}

static PyObject *Launcher_plans(Launcher *self, void *unused) {
    int count = 0;
    for (int k = 0; k < MAX_PLANS; k++)
        count += self->plans[k].used;
    return PyLong_FromLong(count);
}

static PyObject *Launcher_hits(Launcher *self, void *unused) { return PyLong_FromUnsignedLongLong(self->hits); }

static PyObject *Launcher_handovers(Launcher *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->handovers);
}

static int Launcher_init(Launcher *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"name", "n_arrays", "scalars", "fallback", "scalar_check", NULL};
    PyObject *name, *scalars, *fallback, *scalar_check;
    int n_arrays;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UiO!OO", names, &name, &n_arrays, &PyTuple_Type, &scalars,
                                     &fallback, &scalar_check))
        return -1;
    if (self->fallback != NULL) {  /* a call in flight reads its counts, kinds and callables as they are */
        PyErr_SetString(PyExc_TypeError, "a Launcher is initialised once");
        return -1;
    }
    Py_ssize_t n_scalars = PyTuple_GET_SIZE(scalars);
    if (n_arrays < 0 || n_arrays > MAX_ARRAYS || n_arrays + n_scalars > MAX_VALUES) {
        PyErr_Format(PyExc_ValueError, "the compiled path takes at most %d arrays and %d values", MAX_ARRAYS,
                     MAX_VALUES);
        return -1;
    }
    if (!PyCallable_Check(fallback) || !PyCallable_Check(scalar_check)) {
        PyErr_SetString(PyExc_TypeError, "`fallback` and `scalar_check` must be callable");
        return -1;
    }
    /* Built into locals first: reading a scalar's `finite` runs its __bool__, which may call __init__ again
     * (and teach the Launcher plans of its own counts): only a Launcher still not initialised once all Python
     * code here has run takes these values, in whole. */
    int kinds[MAX_VALUES], finites[MAX_VALUES];
    for (Py_ssize_t k = 0; k < n_scalars; k++) {  /* each scalar: (dtype name, finite) */
        const char *dtype;
        int finite;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(scalars, k), "sp", &dtype, &finite))
            return -1;
        if ((kinds[k] = kind_of(dtype)) < 0) {
            PyErr_Format(PyExc_ValueError, "no scalar dtype %s", dtype);
            return -1;
        }
        finites[k] = finite;
    }
    if (self->fallback != NULL) {  /* initialised meanwhile, by the Python code above */
        PyErr_SetString(PyExc_TypeError, "a Launcher is initialised once");
        return -1;
    }
    memcpy(self->scalar_kinds, kinds, sizeof kinds[0] * (size_t)n_scalars);
    memcpy(self->scalar_finite, finites, sizeof finites[0] * (size_t)n_scalars);
    /* no Python code runs from here on: the fields are NULL (a Launcher is initialised once) */
    self->name = Py_NewRef(name);
    self->scalar_check = Py_NewRef(scalar_check);
    self->n_arrays = n_arrays;
    self->n_scalars = (int)n_scalars;
    self->vectorcall = Launcher_vectorcall;
    self->fallback = Py_NewRef(fallback);  /* last: what says the Launcher is initialised */
    return 0;
}

/* bind_signature(function): stand in the name of `function`, which takes the arrays and scalars in this one's
 * order (KernelLauncher.public), once. */
static PyObject *Launcher_bind_signature(Launcher *self, PyObject *function) {
    if (!PyCallable_Check(function) || self->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "bind_signature() takes the generated launcher function, once the "
                                         "Launcher is initialised");
        return NULL;
    }
    if (self->binding != NULL) {  /* a call in flight may be running the one it has */
        PyErr_SetString(PyExc_TypeError, "a Launcher stands in one function's name, once");
        return NULL;
    }
    self->binding = Py_NewRef(function);
    Py_RETURN_NONE;
}

/* As a class attribute it is what it is (a static method): the function it stands for binds no `self`
 * either, as it is never given one. Being a descriptor also makes it a routine to inspect and pydoc, whose
 * help() then shows the signature it wraps. */
static PyObject *Launcher_descr_get(PyObject *self, PyObject *instance, PyObject *owner) {
    return Py_NewRef(self);
}

static PyObject *Launcher_repr(Launcher *self) {
    if (self->name == NULL)
        return PyUnicode_FromString("<layoutgen compiled launcher (not initialised)>");
    return PyUnicode_FromFormat("<layoutgen compiled launcher of kernel %U>", self->name);
}

static int Launcher_traverse(Launcher *self, visitproc visit, void *arg) {
    Py_VISIT(self->name);
    Py_VISIT(self->fallback);
    Py_VISIT(self->scalar_check);
    Py_VISIT(self->binding);
    Py_VISIT(self->dict);
    for (int k = 0; k < MAX_PLANS; k++) {
        Py_VISIT(self->plans[k].sigs);
        Py_VISIT(self->plans[k].launch);
        for (int i = 0; i < MAX_ARRAYS; i++)
            Py_VISIT(self->plans[k].args[i].dtype);
    }
    return 0;
}

static int Launcher_clear_refs(Launcher *self) {
    Py_CLEAR(self->name);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->scalar_check);
    Py_CLEAR(self->binding);
    Py_CLEAR(self->dict);
    for (int k = 0; k < MAX_PLANS; k++)
        swap_plan(&self->plans[k], NULL);
    return 0;
}

static void Launcher_dealloc(Launcher *self) {
    PyObject_GC_UnTrack(self);
    Launcher_clear_refs(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Launcher *self = (Launcher *)PyType_GenericNew(type, args, kwds);
    if (self != NULL)
        self->vectorcall = Launcher_vectorcall;  /* before __init__: a call of a half-made one hands over */
    return (PyObject *)self;
}

static PyMethodDef Launcher_methods[] = {
    {"attempt", (PyCFunction)(void (*)(void))Launcher_attempt, METH_FASTCALL | METH_KEYWORDS,
     "attempt(*arguments, stream=None) -> bool: True where launched, False where the Python path would run"},
    {"add", (PyCFunction)Launcher_add, METH_VARARGS,
     "add(device, arrays, sigs, ptrs, masks, pairs, blocks, block, shared, symbols, written, launch, function): "
     "keep a plan"},
    {"clear", (PyCFunction)Launcher_clear, METH_NOARGS, "forget every plan"},
    {"bind_signature", (PyCFunction)Launcher_bind_signature, METH_O,
     "bind_signature(function): stand in the name of the generated launcher function (which takes the arrays, "
     "then the scalars); calls not bound by position are that function's (once)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Launcher_getset[] = {
    {"plans", (getter)Launcher_plans, NULL, "plans kept", NULL},
    {"hits", (getter)Launcher_hits, NULL, "calls launched (or found empty) by the compiled path", NULL},
    {"handovers", (getter)Launcher_handovers, NULL, "calls handed to the Python path", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "layoutgen.runtime._fastlaunch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "One kernel's validated plans and its compiled launch; call it as the kernel's launcher.",
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = Launcher_new,
    .tp_init = (initproc)Launcher_init,
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_traverse = (traverseproc)Launcher_traverse,
    .tp_clear = (inquiry)Launcher_clear_refs,
    .tp_methods = Launcher_methods,
    .tp_getset = Launcher_getset,
    .tp_descr_get = Launcher_descr_get,
    .tp_repr = (reprfunc)Launcher_repr,
    .tp_dictoffset = offsetof(Launcher, dict),
};

/* ---------------------------------------------------------------------------------------------------------
 * Steps: a program runner's prepared launches (runtime/program.py), launched in one call.
 */
typedef struct {
    CUfunction function;
    unsigned blocks, block, shared;
    int n_pointers, n_constants;
    int pointers[MAX_ARRAYS];        /* the buffer each pointer parameter gets */
    uint64_t constants[MAX_VALUES];  /* the scalars' launch values, then the symbols */
    PyObject *launch;                /* the Launch object (what a test hook is given) */
} Step;

typedef struct {
    PyObject_HEAD
    PyObject *name;
    int n_steps, n_buffers;
    Step *steps;
} Steps;

/* Steps(name, n_buffers, [(launch, function, blocks, block, shared, buffer indices, constants), ...]) */
static int Steps_init(Steps *self, PyObject *args, PyObject *kwds) {
    PyObject *name, *list;
    int n_buffers;
    if (!PyArg_ParseTuple(args, "UiO!", &name, &n_buffers, &PyTuple_Type, &list))
        return -1;
    if (self->steps != NULL) {  /* the steps held (their launches) would be lost, or freed under a launch */
        PyErr_SetString(PyExc_TypeError, "Steps are initialised once");
        return -1;
    }
    if (n_buffers < 0 || n_buffers > MAX_VALUES) {
        PyErr_Format(PyExc_ValueError, "a program's steps take at most %d buffers", MAX_VALUES);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(list);
    Step *steps = PyMem_Calloc(n ? n : 1, sizeof(Step));
    if (steps == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        Step *step = &steps[s];
        PyObject *launch, *function, *grid[3], *indices, *constants;
        uint64_t fn;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(list, s), "OOOOOO!O!", &launch, &function, &grid[0], &grid[1],
                              &grid[2], &PyTuple_Type, &indices, &PyTuple_Type, &constants)
            || !as_u64(function, &fn) || !as_uint(grid[0], &step->blocks) || !as_uint(grid[1], &step->block)
            || !as_uint(grid[2], &step->shared))
            goto fail;
        Py_ssize_t n_pointers = PyTuple_GET_SIZE(indices), n_constants = PyTuple_GET_SIZE(constants);
        if (n_pointers > MAX_ARRAYS || n_pointers + n_constants > MAX_VALUES) {
            PyErr_SetString(PyExc_ValueError, "a step has more values than the compiled path takes");
            goto fail;
        }
        for (Py_ssize_t k = 0; k < n_pointers; k++) {
            long b = PyLong_AsLong(PyTuple_GET_ITEM(indices, k));
            if (b < 0 || b >= n_buffers) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "a step's buffer index must name a buffer of the program");
                goto fail;
            }
            step->pointers[k] = (int)b;
        }
        for (Py_ssize_t k = 0; k < n_constants; k++)
            if (!as_u64(PyTuple_GET_ITEM(constants, k), &step->constants[k]))
                goto fail;
        step->n_pointers = (int)n_pointers;
        step->n_constants = (int)n_constants;
        step->function = (CUfunction)(uintptr_t)fn;
        step->launch = Py_NewRef(launch);
        continue;
    fail:
        for (Py_ssize_t k = 0; k < s; k++)
            Py_XDECREF(steps[k].launch);
        PyMem_Free(steps);
        return -1;
    }
    /* A buffer index's __index__ and a value's __int__ are Python code, which may have initialised these Steps
     * meanwhile: the steps built here are let go, never those (nor put over them, leaking theirs). */
    if (self->steps != NULL) {
        for (Py_ssize_t k = 0; k < n; k++)
            Py_XDECREF(steps[k].launch);
        PyMem_Free(steps);
        PyErr_SetString(PyExc_TypeError, "Steps are initialised once");
        return -1;
    }
    Py_XSETREF(self->name, Py_NewRef(name));
    self->n_steps = (int)n;
    self->n_buffers = n_buffers;
    self->steps = steps;
    return 0;
}

/* launch(pointers, stream) -> how many steps were launched, in order: all of them, or up to the first the
 * driver refused (or every step before any where the stream could not be read): the Python path launches
 * the rest, and reports the refusal. */
static PyObject *Steps_launch(Steps *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != self->n_buffers || self->steps == NULL) {
        PyErr_SetString(PyExc_TypeError, "launch(pointers, stream) takes a tuple of one pointer per buffer");
        return NULL;
    }
    PyObject *stream = args[1];
    uint64_t pointers[MAX_VALUES];
    for (int b = 0; b < self->n_buffers; b++)
        if (!as_u64(PyTuple_GET_ITEM(args[0], b), &pointers[b]))
            return NULL;
    PyObject *replay = hook ? Py_NewRef(hook) : NULL;
    uint64_t cu_stream = 0;
    int done = 0;
    if ((replay == NULL && !load_driver()) || ((replay == NULL || stream != Py_None)
                                               && !stream_of(stream, self->name, -1, &cu_stream))) {
        if (PyErr_Occurred()) {  /* an exception that is no Exception, from the stream's code */
            Py_XDECREF(replay);
            return NULL;
        }
        goto out;
    }
    for (; done < self->n_steps; done++) {
        Step *step = &self->steps[done];
        if (!step->blocks)
            continue;
        uint64_t buffer[MAX_VALUES];
        int count = 0;
        for (int k = 0; k < step->n_pointers; k++)
            buffer[count++] = pointers[step->pointers[k]];
        for (int k = 0; k < step->n_constants; k++)
            buffer[count++] = step->constants[k];
        int got = launch_packed(replay, step->launch, step->function, step->blocks, step->block, step->shared,
                                stream, cu_stream, buffer, count);
        if (got < 0) {
            Py_XDECREF(replay);
            return NULL;
        }
        if (got == 0)
            break;
    }
out:
    Py_XDECREF(replay);
    return PyLong_FromLong(done);
}

static int Steps_traverse(Steps *self, visitproc visit, void *arg) {
    Py_VISIT(self->name);
    for (int k = 0; self->steps != NULL && k < self->n_steps; k++)
        Py_VISIT(self->steps[k].launch);
    return 0;
}

static int Steps_clear(Steps *self) {
    Py_CLEAR(self->name);
    for (int k = 0; self->steps != NULL && k < self->n_steps; k++)
        Py_CLEAR(self->steps[k].launch);
    PyMem_Free(self->steps);
    self->steps = NULL;
    self->n_steps = 0;
    return 0;
}

static void Steps_dealloc(Steps *self) {
    PyObject_GC_UnTrack(self);
    Steps_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Steps_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Steps_launch, METH_FASTCALL,
     "launch(pointers, stream) -> the number of steps launched, in order"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StepsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "layoutgen.runtime._fastlaunch.Steps",
    .tp_basicsize = sizeof(Steps),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A program's prepared launches, launched in order in one call.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Steps_init,
    .tp_dealloc = (destructor)Steps_dealloc,
    .tp_traverse = (traverseproc)Steps_traverse,
    .tp_clear = (inquiry)Steps_clear,
    .tp_methods = Steps_methods,
};

/* ---------------------------------------------------------------------------------------------------------
 * Module functions.
 */

/* configure(readers, cupy_reader, torch_reader, stream_handle, stream_readers, cupy_handle, torch_handle,
 *           array_type, array_data): what every Launcher reads with (runtime/fastpath.py, once). */
static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *r, *cr, *tr, *sh, *sr, *ch, *th, *at, *ad;
    if (!PyArg_ParseTuple(args, "O!OOOO!OOO!O", &PyDict_Type, &r, &cr, &tr, &sh, &PyDict_Type, &sr, &ch, &th,
                          &PyType_Type, &at, &ad))
        return NULL;
    /* typed.Array keeps its array in a __slots__ member: read at the member's offset */
    if (!PyObject_TypeCheck(ad, &PyMemberDescr_Type) || ((PyMemberDescrObject *)ad)->d_member->type != 16
        || ((PyMemberDescrObject *)ad)->d_member->offset <= 0
        || ((PyMemberDescrObject *)ad)->d_member->offset + (Py_ssize_t)sizeof(PyObject *) > ((PyTypeObject *)at)->tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "`array_data` must be the object slot of `array_type`");  /* T_OBJECT_EX */
        return NULL;
    }
    Py_XSETREF(readers, Py_NewRef(r));
    Py_XSETREF(cupy_reader, Py_NewRef(cr));
    Py_XSETREF(torch_reader, Py_NewRef(tr));
    Py_XSETREF(stream_handle, Py_NewRef(sh));
    Py_XSETREF(stream_readers, Py_NewRef(sr));
    Py_XSETREF(cupy_handle, Py_NewRef(ch));
    Py_XSETREF(torch_handle, Py_NewRef(th));
    Py_XSETREF(array_type, (PyTypeObject *)Py_NewRef(at));
    array_data = ((PyMemberDescrObject *)ad)->d_member->offset;
    Py_RETURN_NONE;
}

/* use_torch(grad_enabled, mode_enabled | None, bump, dlpack_types, ambiguous, torch_stream, dl_dtypes,
 * inference_enabled): torch's calls (once). */
static PyObject *use_torch(PyObject *module, PyObject *args) {
    PyObject *ge, *me, *bu, *types, *amb, *ts, *dd, *ie;
    if (!PyArg_ParseTuple(args, "OOOO!O!OO!O", &ge, &me, &bu, &PyTuple_Type, &types, &PyTuple_Type, &amb, &ts,
                          &PyDict_Type, &dd, &ie))
        return NULL;
    if (PyTuple_GET_SIZE(amb) > (Py_ssize_t)(sizeof ambiguous / sizeof ambiguous[0])) {
        PyErr_SetString(PyExc_ValueError, "too many ambiguous DLPack dtypes");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(amb); k++) {
        unsigned long v = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(amb, k));
        if (PyErr_Occurred())
            return NULL;
        ambiguous[k] = (uint32_t)v;
    }
    n_ambiguous = (int)PyTuple_GET_SIZE(amb);
    Py_XSETREF(grad_enabled, Py_NewRef(ge));
    Py_XSETREF(mode_enabled, me == Py_None ? NULL : Py_NewRef(me));
    Py_XSETREF(bump, Py_NewRef(bu));
    Py_XSETREF(dlpack_types, Py_NewRef(types));
    Py_XSETREF(torch_stream_read, Py_NewRef(ts));
    Py_XSETREF(dl_dtypes, PyDict_Copy(dd));  /* a copy: no caller changes it under a read */
    Py_XSETREF(inference_enabled, Py_NewRef(ie));
    if (dl_dtypes == NULL)
        return NULL;
    torch_work_stream = NULL;  /* torch.Tensor's, where its exchange API has one */
    if (PyTuple_GET_SIZE(types) > 0 && PyType_Check(PyTuple_GET_ITEM(types, 0))) {
        const DLPackExchangeAPI *table = exchange_table((PyTypeObject *)PyTuple_GET_ITEM(types, 0));
        if (PyErr_Occurred())
            return NULL;
        torch_work_stream = table != NULL ? (CurrentWorkStreamFn)table->current_work_stream : NULL;
    }
    /* torch.Tensor's is_neg and requires_grad descriptors, where they are the C kinds read directly */
    descriptors_generation++;  /* what own_descriptors kept was found against the old ones */
    Py_CLEAR(is_neg_descr);
    Py_CLEAR(requires_grad_descr);
    is_neg_fn = NULL;
    requires_grad_get = NULL;
    if (PyTuple_GET_SIZE(types) > 0 && PyType_Check(PyTuple_GET_ITEM(types, 0))) {
        PyTypeObject *tensor = (PyTypeObject *)PyTuple_GET_ITEM(types, 0);
        PyObject *d = _PyType_Lookup(tensor, s_is_neg);  /* borrowed */
        if (d != NULL && Py_IS_TYPE(d, &PyMethodDescr_Type)
            && (((PyMethodDescrObject *)d)->d_method->ml_flags & ~METH_COEXIST) == METH_NOARGS) {
            is_neg_descr = Py_NewRef(d);
            is_neg_fn = ((PyMethodDescrObject *)d)->d_method->ml_meth;
        }
        d = _PyType_Lookup(tensor, s_requires_grad);
        if (d != NULL && Py_IS_TYPE(d, &PyGetSetDescr_Type) && ((PyGetSetDescrObject *)d)->d_getset->get != NULL) {
            requires_grad_descr = Py_NewRef(d);
            requires_grad_get = ((PyGetSetDescrObject *)d)->d_getset->get;
            requires_grad_closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
        }
    }
    Py_RETURN_NONE;
}

/* use_torch_reader(capsule, calls): read the listed torch types through the C++ reader whose table the capsule
 * carries (named TORCH_READER_CAPSULE: made by layoutgen_torch_reader_capsule() of a library torch_cxx_reader.py
 * built), and where `calls`, bump their versions and ask for function modes through it too;
 * use_torch_reader(None, False): through the exchange API and torch's Python calls again. Nothing else is
 * taken: an address (an int) could point anywhere. */
static PyObject *use_torch_reader(PyObject *module, PyObject *args) {
    PyObject *capsule;
    int calls;
    if (!PyArg_ParseTuple(args, "Op", &capsule, &calls))
        return NULL;
    if (capsule == Py_None) {
        cxx_reader = NULL;
        cxx_calls = 0;
        Py_CLEAR(cxx_capsule);
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
    cxx_reader = table;
    cxx_calls = calls;
    Py_XSETREF(cxx_capsule, capsule);
    Py_RETURN_NONE;
}

static PyObject *set_hook(PyObject *module, PyObject *args) {
    PyObject *callable, *device = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &callable, &device))
        return NULL;
    if ((callable != Py_None && !PyCallable_Check(callable)) || (device != Py_None && !PyCallable_Check(device))) {
        PyErr_SetString(PyExc_TypeError, "the hooks must be callable or None");
        return NULL;
    }
    Py_XSETREF(hook, callable == Py_None ? NULL : Py_NewRef(callable));
    Py_XSETREF(device_hook, device == Py_None ? NULL : Py_NewRef(device));
    Py_RETURN_NONE;
}

static PyObject *get_hook(PyObject *module, PyObject *unused) { return Py_NewRef(hook ? hook : Py_None); }

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
    /* readers[type]: its __missing__ finds the reader of a type first seen (a borrowed look-up would not) */
    PyObject *reader = readers ? PyObject_GetItem(readers, (PyObject *)Py_TYPE(a)) : NULL;
    if (reader == NULL && !swallow())
        return NULL;
    if (find_kind(Py_TYPE(a)) == NULL && reader != NULL && reader == cupy_reader) {  /* confirmed as add() would */
        PyObject *got = PyObject_CallOneArg(reader, a);
        uint64_t ptr;
        int ok = 1;
        if (got != NULL && PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2 && as_address(PyTuple_GET_ITEM(got, 1), &ptr))
            ok = register_cupy(a, PyTuple_GET_ITEM(got, 0), ptr);
        Py_XDECREF(got);
        if (!ok || !swallow()) {
            Py_DECREF(reader);
            return NULL;
        }
    }
    Py_XDECREF(reader);
    Kind *kind = find_kind(Py_TYPE(a));
    Kind probe;
    if (kind == NULL) {  /* any DLPack producer, unlisted */
        probe = (Kind){Py_TYPE(a), MODE_DLPACK, NULL, exchange_api(Py_TYPE(a)), is_listed(Py_TYPE(a))};
        if (PyErr_Occurred())
            return NULL;
        kind = probe.from ? &probe : NULL;
    }
    if (kind == NULL)
        Py_RETURN_NONE;
    Read r;
    clear_read(&r);
    if (!read_array(a, kind->mode, kind, NULL, &r) || (r.mode != MODE_CUPY_FIELDS && r.mode != MODE_DLPACK)) {
        release_read(&r);
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
    release_read(&r);
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
    int kind = kind_of(dtype);
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "no scalar dtype %s", dtype);
        return NULL;
    }
    uint64_t slot;
    if (!fast_scalar(kind, finite, value, &slot))
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(slot);
}

static PyObject *driver(PyObject *module, PyObject *unused) {
    load_driver();
    if (driver_error[0])
        return PyUnicode_FromString(driver_error);
    return PyUnicode_FromString(per_thread_stream ? "libcuda loaded (the per-thread default stream's entry points, "
                                                    PTDS_ENV " is set)" : "libcuda loaded");
}

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
    int ok = stream_of(stream, kernel, -1, &handle);
    Py_DECREF(kernel);
    if (PyErr_Occurred())
        return NULL;
    if (!ok)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(handle);
}

static PyObject *cupy_stream(PyObject *module, PyObject *unused) {
    if (!current_stream_tried)
        load_current_stream();
    return PyUnicode_FromString(current_stream ? "cupy_backends.cuda.stream.get_current_stream_ptr"
                                               : "driver.stream_handle (CuPy's C function was not found)");
}

/* read_cost(array, n) -> (nanoseconds, how): what a launch spends reading `array`, the mean of n reads as a
 * launch makes them (benchmarks/bench_launch_parts.py); ValueError where its type has no C-level read. */
static PyObject *read_cost(PyObject *module, PyObject *args) {
    static const char *how[] = {"fields", "attributes", "dlpack", "attributes", "reader"};
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
    int mode = mode_of(a, &torch_modes, &kind, &reader);
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
        clear_read(&r);
        int ok = read_array(a, mode, kind, reader, &r);
        read_as = r.mode;
        release_read(&r);
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

static PyObject *kinds_read(PyObject *module, PyObject *unused) {
    PyObject *out = PyDict_New();
    for (int k = 0; out != NULL && k < n_kinds; k++) {
        PyObject *mode = PyUnicode_FromString(kinds[k].mode == MODE_CUPY_FIELDS ? "fields" : "dlpack");
        if (mode == NULL || PyDict_SetItem(out, (PyObject *)kinds[k].type, mode) < 0)
            Py_CLEAR(out);
        Py_XDECREF(mode);
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS, "configure(readers, cupy_reader, torch_reader, stream_handle, "
     "stream_readers, cupy_handle, torch_handle, array_type, array_data)"},
    {"use_torch", use_torch, METH_VARARGS,
     "use_torch(grad_enabled, mode_enabled, bump, dlpack_types, ambiguous, torch_stream, dl_dtypes, "
     "inference_enabled)"},
    {"use_torch_reader", use_torch_reader, METH_VARARGS, "use_torch_reader(capsule | None, calls): read torch's "
     "listed tensor types through the C++ reader's table the capsule carries (torch_cxx_reader.py), and where "
     "calls, bump versions and ask for function modes through it"},
    {"set_hook", set_hook, METH_VARARGS, "set_hook(callable | None, device=None): call callable(launch, blocks, "
     "block, shared, stream, handle, parameters) instead of cuLaunchKernel (False: the driver refused it) and "
     "device() for the current device (tests)"},
    {"get_hook", get_hook, METH_NOARGS, "the launch hook set, or None"},
    {"read", read_one, METH_O, "read(array) -> how the compiled path reads it, or None: ('cupy', ptr, shape, "
     "strides, dtype, device_id) or ('dlpack', ptr, shape, strides, (code, bits, lanes), (device_type, "
     "device_id), requires_grad as read with them, None where it is not)"},
    {"scalar_slot", scalar_slot, METH_VARARGS, "scalar_slot(dtype, finite, value) -> its launch value, or None"},
    {"driver", driver, METH_NOARGS, "whether libcuda's calls were found, in words"},
    {"current_stream", cupy_stream, METH_NOARGS, "where the current CuPy stream is read, in words"},
    {"stream_of", stream_read, METH_VARARGS, "stream_of(stream, kernel='') -> the CUstream a compiled launch on "
     "`stream` is made on, or None where the call is handed to the Python path (tests)"},
    {"kinds", kinds_read, METH_NOARGS, "{array type: 'fields' | 'dlpack'}: the kinds read at C level"},
    {"read_cost", read_cost, METH_VARARGS, "read_cost(array, n) -> (nanoseconds, how): the mean cost of n reads of "
     "`array` as a launch reads it (benchmarks)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fastlaunch", "The compiled hot path of layoutgen's launchers.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__fastlaunch(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_data, "data");
    INTERN(s_ptr, "ptr");
    INTERN(s_device_id, "device_id");
    INTERN(s_shape, "shape");
    INTERN(s_strides, "strides");
    INTERN(s_dtype, "dtype");
    INTERN(s_size, "size");
    INTERN(s_data_ptr, "data_ptr");
    INTERN(s_stride, "stride");
    INTERN(s_device, "device");
    INTERN(s_is_neg, "is_neg");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_stream, "stream");
    INTERN(s_cuda_stream, "cuda_stream");
    INTERN(s_type, "type");
    INTERN(s_index, "index");
    INTERN(s_cuda, "cuda");
    INTERN(s_cpu, "cpu");
    INTERN(s_exchange, "__dlpack_c_exchange_api__");
    INTERN(s_is_inference, "is_inference");
#undef INTERN
    if (PyType_Ready(&LauncherType) < 0 || PyType_Ready(&StepsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Launcher", (PyObject *)&LauncherType) < 0
        || PyModule_AddObjectRef(m, "Steps", (PyObject *)&StepsType) < 0
        || PyModule_AddIntConstant(m, "MAX_ARRAYS", MAX_ARRAYS) < 0
        || PyModule_AddIntConstant(m, "MAX_VALUES", MAX_VALUES) < 0
        || PyModule_AddIntConstant(m, "MAX_DIMS", MAX_DIMS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
