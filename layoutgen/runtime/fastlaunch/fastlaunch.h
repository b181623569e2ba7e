/* layoutgen.runtime._fastlaunch: the compiled hot path of a generated launcher, in rooms.
 *
 * A generated launcher function calls its kernel's Launcher with the user's arguments. The Launcher holds
 * the plans the Python path validated (runtime/launch.py): for each, every argument's kind, shape, strides,
 * dtype and device, the alignment masks, the pairs of arguments that must not overlap, the blocks, the
 * symbols' values, the CUfunction and the Launch object. A call unwraps typed `Array`s, asks the driver for
 * the current device, checks the scalars, reads each array at C level (a CuPy array's own fields, a torch
 * tensor through the C++ reader or DLPack's C exchange API), finds the plan its reads match, checks what a
 * plan leaves to check on every call (alignment, overlap, the autograd state of written torch tensors),
 * finds the stream, packs the 8-byte parameters and calls cuLaunchKernel.
 *
 * It never refuses anything itself: where any of this does not hold (an unknown kind of array, a new
 * shape, a misaligned pointer, an overlap, a scalar it does not take as is, no current context, a stream
 * it cannot read, a launch the driver refuses), it launches nothing and calls the Python path with the
 * call's own arguments, which runs the call from the start and raises the diagnostic with its code and
 * message. So both paths refuse exactly the same calls, and every message is built in one place. Every
 * read that could go wrong (a PyObject* that is NULL, a layout that is not the one expected, a pointer
 * dlsym did not find) is a hand-over, never a crash.
 *
 * Python code runs inside a call (readers, a stream's __cuda_stream__, torch, the finalizers of what a plan
 * lets go, and any thread those let run): so a Launcher is initialised once, a plan is swapped in whole before
 * the one it replaces is let go, and what a call needs of a plan is copied before Python code can run. A
 * read's error hands the call over; an exception that is no Exception (KeyboardInterrupt) is the call's own.
 *
 * The rooms (one concept each; this header is what they share):
 *   module.c     the module: its state (FastState below), multi-phase init, configure/use_torch/queries
 *   driver.c     libcuda's entry points (dlopen, cuGetProcAddress), the current device, the launch itself
 *   streams.c    which CUstream a launch goes on (CuPy's current one, torch's, a stream object's)
 *   readers.c    kinds of arrays and the one read of an argument (dispatching to the two below)
 *   cupy.c       CuPy arrays read through their struct fields
 *   torch.c      torch tensors read through the C++ reader or DLPack, their neg bit, autograd, versions
 *   scalars.c    plain Python scalars packed as validate.check_scalar packs them
 *   plans.c      a kernel's taught plans: built from what the Python path validated, matched, swapped
 *   launcher.c   the Launcher's call: one kernel's compiled launch
 *   launcher_type.c  the Launcher type: its plans, taught by the Python path, and its initialisation
 *   steps.c      the Steps type: a program runner's prepared launches in one call
 *   interop.h    the C interfaces of libcuda, CuPy, DLPack and the C++ torch reader (types only)
 *   testing.c    the test and benchmark hooks, compiled only with -DLAYOUTGEN_TEST_HOOKS (tests build it)
 *
 * All mutable state is the module's (FastState, reached from the module, or from a Launcher or Steps
 * through its type): no file keeps a mutable static (tests/test_architecture.py checks it). Only CPython's
 * public C API is used. The module declares that it needs the GIL (Py_MOD_GIL_USED): the plans, the kinds
 * and the state are read and written under it.
 *
 * libcuda is loaded at run time (dlopen, then cuGetProcAddress as cuda.bindings resolves its entry points);
 * no CUDA header or library is needed to build this, only a C compiler and Python's headers. The GIL is held
 * throughout but for cuLaunchKernel, which may wait: for room in a full stream queue, or (CUDA_LAUNCH_BLOCKING=1)
 * for the kernels before it, behind which a host function may be waiting for the GIL (CuPy's
 * Stream.launch_host_func runs Python). cuda.bindings releases it there too.
 */
#ifndef LAYOUTGEN_FASTLAUNCH_H
#define LAYOUTGEN_FASTLAUNCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>  /* PyMemberDef (Python 3.11) */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The rooms call each other directly: their functions and tables are the extension's own (hidden), not
 * symbols another library could interpose, which a call through the PLT would allow (and pay for on every
 * launch). PyInit__fastlaunch (PyMODINIT_FUNC) is exported all the same. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(hidden)
#endif

#define MAX_ARRAYS 32   /* arrays of a kernel the compiled path takes; more: the Python path */
#define MAX_VALUES 128  /* 8-byte launch values (pointers, scalars, symbols) */
#define MAX_PLANS 8     /* plans kept per kernel; the Python path keeps 256 and teaches this one on a miss */
#define MAX_DIMS 8      /* ranks read at C level; an array of more dims is read through its attributes */
#define MAX_KINDS 16    /* kinds of arrays (Python types) read at C level */
#define MAX_AMBIGUOUS 64  /* DLPack dtypes more than one torch dtype exports as */

#include "interop.h"  /* the driver's, DLPack's and the torch reader's C interfaces */

/* ---------------------------------------------------------------------------------------------------------
 * Kinds: how each type of array is read here, and one argument as read.
 */
enum {
    MODE_CUPY_FIELDS,  /* a CuPy array's struct fields */
    MODE_CUPY_ATTRS,   /* a CuPy array's attributes (a layout not confirmed; many dims, another pointer type) */
    MODE_DLPACK,       /* a torch tensor through DLPack (or the C++ reader), is_neg() besides */
    MODE_TORCH_ATTRS,  /* a torch tensor's methods and attributes (a subclass that may dispatch, a mode, a
                        * tensor DLPack does not export as read here) */
    MODE_READER,       /* any other kind with a Python fast reader: reader(a) -> (signature, pointer) */
};

/* The frameworks whose arrays are read here at C level, one row each of fl_c_reads (readers.c), named as
 * runtime/arrays.py's Framework.c_read names them; configure() gives each row its Python fast reader and
 * stream reader. */
enum { C_READ_FIELDS, C_READ_DLPACK, N_C_READS };

/* Which of torch's own descriptors (use_torch's is_neg and requires_grad) a kind's type finds. */
enum { OWN_IS_NEG = 1, OWN_REQUIRES_GRAD = 2 };

typedef struct {
    PyTypeObject *type;           /* a strong reference: a type listed here is never freed, its address never reused */
    int mode;                     /* MODE_CUPY_FIELDS or MODE_DLPACK; any other kind is not listed */
    PyTypeObject *pointer_type;   /* CuPy: the MemoryPointer type its fields were confirmed with (a reference) */
    DLTensorFromPyObjectFn from;  /* torch: the exchange API's DLTensor export */
    int listed;                   /* torch: one of dlpack_types (a THPVariable: cxx_reader may read it) */
    /* torch: which of torch's own descriptors the type found (OWN_*), while its version tag is own_tag and
     * the descriptors' registration own_generation: see fl_own_descriptors */
    unsigned int own_tag, own_generation;
    int own;
} Kind;

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

/* ---------------------------------------------------------------------------------------------------------
 * The module's state: everything the rooms share, in one place (one per module object; multi-phase init).
 * The references are the state's (module.c's traverse and clear visit every one). What configure(),
 * use_torch() and use_torch_reader() give is set from Python once per process (runtime/fastpath.py); what
 * the driver and CuPy give is found on first use; the kinds grow as the Python path teaches plans.
 */
typedef struct FastState {
    /* libcuda (driver.c): its entry points, looked for once (driver_tried); driver_error says why not */
    LaunchKernelFn launch_kernel;
    CtxGetDeviceFn ctx_get_device;
    int driver_tried;
    int per_thread_stream;  /* the entry points are the per-thread default stream's */
    char driver_error[256];

    /* CuPy's current-stream C functions (streams.c), looked for once (current_stream_tried) */
    CurrentStreamFn current_stream;
    DeviceStreamFn device_stream;
    int current_stream_tried;

    /* configure() (runtime/fastpath.py, once): shared by every Launcher */
    PyObject *readers;         /* launch._FAST_READERS: array type -> its Python reader */
    PyObject *stream_handle;   /* driver.stream_handle(stream, kernel) -> CUstream (LG616) */
    PyObject *stream_readers;  /* driver._STREAM_READERS: stream type -> its Python reader */
    /* each fl_c_reads row's framework: its Python fast reader (whose reads are done here at C level) and its
     * stream reader (whose read, one attribute, is done here), or NULL */
    PyObject *c_readers[N_C_READS];
    PyObject *c_stream_readers[N_C_READS];
    PyObject *c_stream_attrs[N_C_READS];  /* the attribute each stream reader reads (interned) */
    PyTypeObject *array_type;  /* typed.Array: unwrapped here as typed.unwrap does */
    Py_ssize_t array_data;     /* ... from its `data` slot, at this offset (-1: not configured) */

    /* use_torch() (once a torch tensor is taught; torch is imported by then) */
    PyObject *grad_enabled;       /* torch.is_grad_enabled */
    PyObject *mode_enabled;       /* torch._C._is_torch_function_mode_enabled, or NULL */
    PyObject *bump;               /* what TorchWrites.record calls with a tuple of tensors */
    PyObject *dlpack_types;       /* tuple: tensor types read through DLPack (their reads never dispatch) */
    PyObject *dl_dtypes;          /* dict: torch dtype -> the DLPack dtype it exports as (code | bits << 8 | ...) */
    PyObject *inference_enabled;  /* torch.is_inference_mode_enabled */
    PyObject *torch_stream_read;  /* driver.torch_stream(device) -> TorchCurrentStream */
    CurrentWorkStreamFn torch_work_stream;  /* torch.Tensor's exchange API's current_work_stream, or NULL */
    uint32_t ambiguous[MAX_AMBIGUOUS];      /* DLPack dtypes more than one torch dtype exports as */
    int n_ambiguous;
    /* torch.Tensor's is_neg and requires_grad, where they are C descriptors: called here without the
     * method-call machinery (~40 ns a tensor) while the tensor's type still finds them (fl_own_descriptors). */
    PyObject *is_neg_descr;
    PyCFunction is_neg_fn;
    PyObject *requires_grad_descr;
    getter requires_grad_get;
    void *requires_grad_closure;
    unsigned int descriptors_generation;  /* a new one whenever use_torch registers descriptors */

    /* use_torch_reader(): the C++ reader's table (NULL: the exchange API and is_neg()) */
    const TorchReader *cxx_reader;
    PyObject *cxx_capsule;  /* the capsule cxx_reader came in: held, so its library stays loaded */
    int cxx_calls;          /* its bump and function_modes agree with this torch's calls (torch_cxx_reader.py) */

    /* the kinds read at C level (readers.c), listed once confirmed against the Python readers */
    Kind kinds[MAX_KINDS];
    int n_kinds;

    /* this module's types (launcher.c, steps.c) */
    PyObject *launcher_type;
    PyObject *steps_type;

    /* interned attribute names (immutable once made) */
    PyObject *s_data, *s_ptr, *s_device_id, *s_shape, *s_strides, *s_dtype, *s_data_ptr, *s_stride, *s_device,
        *s_is_neg, *s_requires_grad, *s_stream, *s_type, *s_index, *s_cuda, *s_cpu, *s_exchange,
        *s_is_inference;

#ifdef LAYOUTGEN_TEST_HOOKS
    /* testing.c's set_hook(): stand in for cuLaunchKernel and the driver's current device (tests only) */
    PyObject *hook;
    PyObject *device_hook;
#endif
} FastState;

/* The launch hook and the device hook: NULL (compiled away) in the shipped build. */
#ifdef LAYOUTGEN_TEST_HOOKS
#define FL_HOOK(st) ((st)->hook)
#define FL_DEVICE_HOOK(st) ((st)->device_hook)
#else
#define FL_HOOK(st) ((PyObject *)NULL)
#define FL_DEVICE_HOOK(st) ((PyObject *)NULL)
#endif

extern PyModuleDef fl_module_def;

/* The state of the module that made `type` (a Launcher's or Steps' type): NULL with an error where none. */
FastState *fl_state_of_type(PyTypeObject *type);

/* ---------------------------------------------------------------------------------------------------------
 * Plans (plans.c).
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

/* ---------------------------------------------------------------------------------------------------------
 * The functions one room offers the others.
 */
/* module.c */
PyObject *fl_call_held(PyObject *callable, PyObject *arg);

/* driver.c */
int fl_load_driver(FastState *st);
int fl_current_device(FastState *st, long *device);
int fl_launch_packed(FastState *st, PyObject *replay, PyObject *launch_obj, CUfunction function, unsigned blocks,
                     unsigned block, unsigned shared, PyObject *stream, uint64_t cu_stream, uint64_t *buffer,
                     int count);
PyObject *fl_driver_text(FastState *st);

/* streams.c */
void fl_load_current_stream(FastState *st);
int fl_stream_of(FastState *st, PyObject *stream, PyObject *name, long device, uint64_t *out);
int fl_torch_stream(FastState *st, long device, int hooked, PyObject *name, PyObject **on, uint64_t *out);

/* readers.c */
void fl_list_kind(FastState *st, const Kind *kind);
int fl_as_address(PyObject *value, uint64_t *out);
int fl_equal(PyObject *x, PyObject *y);
int fl_ints_equal(PyObject *tuple, const int64_t *values, int n);
int fl_read_array(FastState *st, PyObject *a, int mode, Kind *kind, PyObject *reader, Read *r);
int fl_mode_of(FastState *st, PyObject *a, int *torch_modes, Kind **kind, PyObject **reader);
int fl_read_agrees(FastState *st, const Read *r, PyObject *sig, uint64_t ptr);

/* cupy.c */
int fl_read_cupy_fields(PyObject *a, const Kind *kind, Read *r);
int fl_register_cupy(FastState *st, PyObject *a, PyObject *sig, uint64_t ptr);

/* torch.c */
const DLPackExchangeAPI *fl_exchange_table(FastState *st, PyTypeObject *type);
DLTensorFromPyObjectFn fl_exchange_api(FastState *st, PyTypeObject *type);
PyObject *fl_type_lookup(PyTypeObject *type, PyObject *name);
int fl_use_torch_descriptors(FastState *st, PyTypeObject *tensor);
int fl_read_dlpack(FastState *st, PyObject *t, Kind *kind, Read *r);
int fl_is_listed(FastState *st, PyTypeObject *type);
int fl_register_torch(FastState *st, PyObject *t, PyObject *sig, uint64_t ptr);
int fl_torch_dtype_is(FastState *st, PyObject *dtype, const Read *r);
int fl_torch_device_is(FastState *st, PyObject *device, int64_t dl);
PyObject *fl_tensor_requires_grad(FastState *st, PyObject *t);
int fl_torch_modes_on(FastState *st);
int fl_writes_allowed(FastState *st, PyObject *const *arrays, const Read *reads, const int *written,
                      int n_written);
int fl_bump_versions(FastState *st, PyObject *const *arrays, const int *written, int n_written);

/* readers.c: the frameworks read at C level, one row each (index: C_READ_*) */
typedef struct {
    const char *name;    /* Framework.c_read: "fields", "dlpack" */
    int mode, attrs_mode;  /* its kinds' mode, and the mode its arrays are read in where that read does not apply */
    int modes_answer;    /* a torch function mode may answer its arrays' reads: no C read is kept under one */
    const char *stream_attr;  /* what its stream reader reads of a stream: the CUstream */
    int (*read)(FastState *st, PyObject *a, Kind *kind, Read *r);  /* the C read; 0: read as attrs_mode */
    int (*confirm)(FastState *st, PyObject *a, PyObject *sig, uint64_t ptr);  /* list a's type once its C read
                                                                              * agrees with the Python read */
} CRead;
extern const CRead fl_c_reads[N_C_READS];
int fl_c_read_of(const FastState *st, PyObject *reader);  /* the row whose fast reader `reader` is, or -1 */
int fl_c_read_of_mode(int mode);  /* the row whose kinds are read in `mode`, or -1 */

/* scalars.c */
int fl_scalar_kind(const char *name);
int fl_fast_scalar(int kind, int finite, PyObject *v, uint64_t *slot);

/* plans.c */
int fl_as_u64(PyObject *v, uint64_t *out);
int fl_as_uint(PyObject *v, unsigned *out);
int fl_plan_matches(const Plan *plan, long device, const Read *reads, int n);
void fl_release_plan(Plan *p);
void fl_swap_plan(Plan *slot, const Plan *fresh);
int fl_plan_from(FastState *st, Plan *fresh, int n, int n_scalars, PyObject *args);

/* launcher.c, launcher_type.c: one kernel's compiled call and its plans */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    FastState *state;    /* its module's (the type holds the module, and each Launcher its type) */
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
PyObject *fl_launcher_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames);
PyObject *fl_launcher_attempt(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* launcher_type.c, steps.c: the types' specs (module.c makes them with PyType_FromModuleAndSpec) */
extern PyType_Spec fl_launcher_spec;
extern PyType_Spec fl_steps_spec;

#ifdef LAYOUTGEN_TEST_HOOKS
/* testing.c: the module functions only the test build has (module.c lists them) */
PyObject *fl_set_hook(PyObject *module, PyObject *args);
PyObject *fl_get_hook(PyObject *module, PyObject *unused);
PyObject *fl_read_cost(PyObject *module, PyObject *args);
PyObject *fl_kinds_read(PyObject *module, PyObject *unused);
PyObject *fl_type_lookup_py(PyObject *module, PyObject *args);
#define FL_TEST_METHODS                                                                                         \
    {"set_hook", fl_set_hook, METH_VARARGS, "set_hook(callable | None, device=None): call callable(launch, "  \
     "blocks, block, shared, stream, handle, parameters) instead of cuLaunchKernel (False: the driver refused " \
     "it) and device() for the current device (tests)"},                                                       \
    {"get_hook", fl_get_hook, METH_NOARGS, "the launch hook set, or None"},                                   \
    {"kinds", fl_kinds_read, METH_NOARGS, "{array type: 'fields' | 'dlpack'}: the kinds read at C level"},    \
    {"read_cost", fl_read_cost, METH_VARARGS, "read_cost(array, n) -> (nanoseconds, how): the mean cost of n " \
     "reads of `array` as a launch reads it (benchmarks)"},                                                     \
    {"type_lookup", fl_type_lookup_py, METH_VARARGS, "type_lookup(type, name) -> what an instance's lookup of " \
     "`name` finds in type's MRO, or None (tests)"},
#else
#define FL_TEST_METHODS
#endif

/* ---------------------------------------------------------------------------------------------------------
 * The small helpers every room calls on the hot path, inline.
 */

/* A read that failed: its error is cleared (the Python path runs the call, and raises what it raises), unless
 * it is no Exception (KeyboardInterrupt, SystemExit), which stays set: it is the call's. 1: cleared (or none).
 * Every caller calls nothing more of Python's once an error stays set, and fails the call with it. */
static inline int fl_swallow(void) {
    PyObject *error = PyErr_Occurred();
    if (error != NULL && !PyErr_GivenExceptionMatches(error, PyExc_Exception))
        return 0;
    PyErr_Clear();
    return 1;
}

static inline Kind *fl_find_kind(FastState *st, PyTypeObject *type) {
    for (int k = 0; k < st->n_kinds; k++)
        if (st->kinds[k].type == type)
            return &st->kinds[k];
    return NULL;
}

/* A Read as nothing read yet: what fl_release_read and the checks look at before a read sets it. Its shape
 * and strides (128 bytes) are left as they are: a read writes them up to ndim and nothing reads further, so
 * zeroing them on every launch (a memset of each Read) was work for nothing. */
static inline void fl_clear_read(Read *r) {
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

static inline void fl_release_read(Read *r) {
    Py_CLEAR(r->dtype);
    for (int k = 0; k < 5; k++)
        Py_CLEAR(r->f[k]);
}

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#endif
