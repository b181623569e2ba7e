/* The compiled hot path of a generated launcher (layoutgen.runtime._fastlaunch).
 *
 * A Launcher holds, for one kernel, the plans the Python path validated: each
 * is the signature of every argument (its type, shape, strides, dtype, device:
 * what runtime/launch.py keys its plan cache on), the alignment masks, the
 * pairs of arguments that must not overlap, the blocks, the symbols' values,
 * the CUfunction and the Launch object. A call reads each argument at C level,
 * finds the plan its signatures match, checks what a cached plan leaves to
 * check on every call (alignment, overlap, the autograd state of written torch
 * tensors), packs the 8-byte parameters and calls cuLaunchKernel.
 *
 * It never refuses anything itself: where any of this does not hold (an
 * unknown kind of array, a new shape, a misaligned pointer, an overlap, a
 * stream it cannot read, a launch the driver refuses), it launches nothing and
 * returns False, and the Python path runs the same call from the start and
 * raises the diagnostic with its code and message. So both paths refuse
 * exactly the same calls, and every message is built in one place.
 *
 * libcuda is loaded at run time (dlopen/dlsym); no CUDA header or library is
 * needed to build this, only a C compiler and Python's headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

/* The few driver types the call needs, declared as cuda.h declares them. */
typedef int CUresult;
typedef void *CUfunction;
typedef void *CUstream;
typedef CUresult (*LaunchKernelFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream, void **, void **);

#define MAX_ARRAYS 32   /* arrays of a kernel the compiled path takes; more: the Python path */
#define MAX_VALUES 128  /* 8-byte launch values (pointers, scalars, symbols) */
#define MAX_PLANS 8     /* plans kept per kernel; the Python path keeps 256 and teaches this one on a miss */

enum { MODE_CUPY = 0, MODE_TORCH = 1, MODE_READER = 2 };

typedef struct {
    int i, j;
    long long size_i, size_j;
    int same_start;
} Pair;

typedef struct {
    int used;
    long device;
    PyObject *sigs;  /* tuple: one signature tuple per array */
    uint64_t masks[MAX_ARRAYS];
    int n_pairs;
    Pair *pairs;
    unsigned blocks, block, shared;
    int n_symbols;
    uint64_t symbols[MAX_VALUES];
    PyObject *written;  /* TorchWrites, or NULL */
    PyObject *launch;   /* the Launch object (what a test hook is given) */
    CUfunction function;
} Plan;

typedef struct {
    PyObject_HEAD
    PyObject *name;           /* the kernel's name (TorchWrites.check names it) */
    PyObject *params;         /* its ParamSpecs */
    PyObject *kinds;          /* launch._FAST_READERS: array type -> its reader */
    PyObject *cupy_reader;    /* the readers whose reads are done here at C level */
    PyObject *torch_reader;
    PyObject *stream_handle;  /* driver.stream_handle(stream, kernel) -> CUstream */
    int n_arrays, n_scalars;
    Plan plans[MAX_PLANS];
    int last, next;
    unsigned long long hits, handovers;
} Launcher;

/* One argument as read: new references (released by release_read). */
typedef struct {
    PyTypeObject *type;
    int mode;
    PyObject *f[5];  /* CuPy: shape, strides, dtype, device_id; torch: + device, is_neg; reader: its signature */
    uint64_t ptr;
} Read;

static PyObject *hook = NULL;  /* set_hook(): a callable that stands in for cuLaunchKernel (tests) */
static LaunchKernelFn launch_kernel = NULL;
static int driver_tried = 0;
static char driver_error[256] = "not loaded yet";

static PyObject *s_data, *s_ptr, *s_device_id, *s_shape, *s_strides, *s_dtype, *s_data_ptr, *s_stride, *s_device,
    *s_is_neg, *s_check, *s_record;

static int load_driver(void) {
    if (driver_tried)
        return launch_kernel != NULL;
    driver_tried = 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        snprintf(driver_error, sizeof driver_error, "dlopen(libcuda.so.1): %s", dlerror());
        return 0;
    }
    launch_kernel = (LaunchKernelFn)dlsym(lib, "cuLaunchKernel");
    if (launch_kernel == NULL) {
        snprintf(driver_error, sizeof driver_error, "dlsym(cuLaunchKernel): %s", dlerror());
        return 0;
    }
    driver_error[0] = 0;
    return 1;
}

static void release_read(Read *r) {
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

/* Read one argument the way launch.py's fast readers do; 0 where it cannot be (an error is cleared). */
static int read_array(PyObject *a, int mode, PyObject *reader, Read *r) {
    r->type = Py_TYPE(a);
    r->mode = mode;
    if (mode == MODE_CUPY) {
        PyObject *data = PyObject_GetAttr(a, s_data);
        if (data == NULL)
            goto fail;
        PyObject *ptr = PyObject_GetAttr(data, s_ptr);
        r->f[3] = PyObject_GetAttr(data, s_device_id);
        Py_DECREF(data);
        int ok = as_address(ptr, &r->ptr);
        Py_XDECREF(ptr);
        if (!ok || r->f[3] == NULL)
            goto fail;
        if ((r->f[0] = PyObject_GetAttr(a, s_shape)) == NULL || (r->f[1] = PyObject_GetAttr(a, s_strides)) == NULL
            || (r->f[2] = PyObject_GetAttr(a, s_dtype)) == NULL)
            goto fail;
        return 1;
    }
    if (mode == MODE_TORCH) {
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
    /* any other kind with a fast reader: reader(a) -> (signature, pointer) */
    PyObject *got = PyObject_CallOneArg(reader, a);
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
    PyErr_Clear();
    return 0;
}

static int equal(PyObject *x, PyObject *y) {
    if (x == y)
        return 1;
    int eq = PyObject_RichCompareBool(x, y, Py_EQ);
    if (eq < 0) {
        PyErr_Clear();
        return 0;
    }
    return eq;
}

/* Whether the arguments as read have the signatures of ``plan``. */
static int matches(const Plan *plan, long device, const Read *reads, int n) {
    if (!plan->used || plan->device != device)
        return 0;
    for (int i = 0; i < n; i++) {
        PyObject *sig = PyTuple_GET_ITEM(plan->sigs, i);
        const Read *r = &reads[i];
        if (r->mode == MODE_READER) {
            if (!equal(sig, r->f[0]))
                return 0;
            continue;
        }
        Py_ssize_t fields = r->mode == MODE_CUPY ? 4 : 5;
        if (!PyTuple_Check(sig) || PyTuple_GET_SIZE(sig) != fields + 1 || PyTuple_GET_ITEM(sig, 0) != (PyObject *)r->type)
            return 0;
        for (Py_ssize_t k = 0; k < fields; k++)
            if (!equal(PyTuple_GET_ITEM(sig, k + 1), r->f[k]))
                return 0;
    }
    return 1;
}

static void clear_plan(Plan *p) {
    Py_CLEAR(p->sigs);
    Py_CLEAR(p->written);
    Py_CLEAR(p->launch);
    PyMem_Free(p->pairs);
    p->pairs = NULL;
    p->used = 0;
}

/* launch(device, arrays, values, stream) -> True: launched (or nothing to launch); False: the Python path must run. */
static PyObject *Launcher_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "launch(device, arrays, values, stream) takes 4 arguments");
        return NULL;
    }
    PyObject *device_obj = args[0], *arrays = args[1], *values = args[2], *stream = args[3];
    Read reads[MAX_ARRAYS];
    int n_read = 0, launched = 0;
    PyObject *result = NULL;
    if (device_obj == Py_None || !PyLong_Check(device_obj) || !PyTuple_Check(arrays)
        || PyTuple_GET_SIZE(arrays) != self->n_arrays)
        goto handover;
    long device = PyLong_AsLong(device_obj);
    if (device == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto handover;
    }
    Py_ssize_t n_values_given = 0;
    if (self->n_scalars) {
        if (!PyList_Check(values) || PyList_GET_SIZE(values) != self->n_scalars)
            goto handover;
        n_values_given = self->n_scalars;
    }
    int n = self->n_arrays;
    for (int i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(arrays, i);
        PyObject *kind = PyDict_GetItemWithError(self->kinds, (PyObject *)Py_TYPE(a));  /* borrowed reader */
        if (kind == NULL) {  /* a kind the Python path has not read yet, or one it validates every call */
            PyErr_Clear();
            goto handover;
        }
        memset(&reads[i], 0, sizeof reads[i]);
        n_read = i + 1;
        int mode = kind == self->cupy_reader ? MODE_CUPY : kind == self->torch_reader ? MODE_TORCH : MODE_READER;
        if (!read_array(a, mode, kind, &reads[i]))
            goto handover;
    }
    Plan *plan = NULL;
    if (matches(&self->plans[self->last], device, reads, n)) {
        plan = &self->plans[self->last];
    } else {
        for (int k = 0; k < MAX_PLANS; k++) {
            if (matches(&self->plans[k], device, reads, n)) {
                plan = &self->plans[k];
                self->last = k;
                break;
            }
        }
    }
    if (plan == NULL)
        goto handover;
    for (int i = 0; i < n; i++)  /* LG606 on the Python path */
        if (reads[i].ptr & plan->masks[i])
            goto handover;
    for (int k = 0; k < plan->n_pairs; k++) {  /* LG614: Extents.first_overlap */
        const Pair *q = &plan->pairs[k];
        long long offset = (long long)reads[q->j].ptr - (long long)reads[q->i].ptr;
        if (-q->size_j < offset && offset < q->size_i && !(q->same_start && offset == 0))
            goto handover;
    }
    /* What the launch needs of the plan, copied (and its objects held) before any Python code runs: a
     * reader, a check or a stream of another thread may teach this launcher a plan that replaces this one. */
    PyObject *written = plan->written ? Py_NewRef(plan->written) : NULL;
    PyObject *launch_obj = Py_NewRef(plan->launch);
    PyObject *replay = hook ? Py_NewRef(hook) : NULL;
    CUfunction function = plan->function;
    unsigned blocks = plan->blocks, block = plan->block, shared = plan->shared;
    /* The parameters: pointers, scalars' values, symbols; each 8 bytes (the driver copies them at the call). */
    uint64_t buffer[MAX_VALUES];
    void *slots[MAX_VALUES];
    int count = 0;
    for (int i = 0; i < n; i++)
        buffer[count++] = reads[i].ptr;
    count += (int)n_values_given;
    for (int k = 0; k < plan->n_symbols; k++)
        buffer[count++] = plan->symbols[k];
    for (Py_ssize_t k = 0; k < n_values_given; k++) {
        unsigned long long v = PyLong_AsUnsignedLongLongMask(PyList_GET_ITEM(values, k));  /* as ctypes c_uint64 */
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto handover_held;
        }
        buffer[n + k] = v;
    }
    for (int k = 0; k < count; k++)
        slots[k] = &buffer[k];
    if (written != NULL) {  /* LG618 on the Python path */
        PyObject *ok = PyObject_CallMethodObjArgs(written, s_check, self->name, self->params, arrays, NULL);
        if (ok == NULL) {
            PyErr_Clear();
            goto handover_held;
        }
        Py_DECREF(ok);
    }
    if (blocks == 0)
        goto launched_held;
    if (replay != NULL) {
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)buffer, (Py_ssize_t)count * 8);
        PyObject *got = bytes == NULL ? NULL : PyObject_CallFunction(replay, "OIIIOO", launch_obj, blocks, block,
                                                                     shared, stream, bytes);
        Py_XDECREF(bytes);
        if (got == NULL)
            goto failed_held;  /* the hook's error is the call's */
        Py_DECREF(got);
    } else {
        if (!load_driver())
            goto handover_held;
        PyObject *handle = PyObject_CallFunctionObjArgs(self->stream_handle, stream, self->name, NULL);  /* LG616 */
        uint64_t cu_stream = 0;
        int ok = handle != NULL && PyLong_Check(handle);
        if (ok) {
            cu_stream = PyLong_AsUnsignedLongLong(handle);
            ok = !PyErr_Occurred();
        }
        Py_XDECREF(handle);
        if (!ok) {
            PyErr_Clear();
            goto handover_held;
        }
        CUresult err = launch_kernel(function, blocks, 1, 1, block, 1, 1, shared, (CUstream)(uintptr_t)cu_stream,
                                     slots, NULL);
        if (err != 0)  /* nothing ran: the Python path launches again and reports LG609 */
            goto handover_held;
    }
    if (written != NULL) {  /* torch's in-place rule: the version counters of what the kernel wrote */
        PyObject *ok = PyObject_CallMethodObjArgs(written, s_record, arrays, NULL);
        if (ok == NULL)
            goto failed_held;
        Py_DECREF(ok);
    }
launched_held:
    launched = 1;
failed_held:
    Py_XDECREF(written);
    Py_DECREF(launch_obj);
    Py_XDECREF(replay);
    goto done;
handover_held:
    Py_XDECREF(written);
    Py_DECREF(launch_obj);
    Py_XDECREF(replay);
    goto handover;
handover:
    self->handovers++;
    result = Py_NewRef(Py_False);
    goto out;
done:
    if (launched) {
        self->hits++;
        result = Py_NewRef(Py_True);
    }
out:
    for (int i = 0; i < n_read; i++)
        release_read(&reads[i]);
    return result;
}

static int as_u64(PyObject *v, uint64_t *out) {
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *out = x;
    return 1;
}

/* add(device, sigs, masks, pairs, blocks, block, shared, symbols, written, launch, function): keep one plan. */
static PyObject *Launcher_add(Launcher *self, PyObject *args) {
    long device;
    PyObject *sigs, *masks, *pairs, *symbols, *written, *launch, *function;
    unsigned int blocks, block, shared;
    if (!PyArg_ParseTuple(args, "lO!O!O!IIIO!OOO", &device, &PyTuple_Type, &sigs, &PyTuple_Type, &masks,
                          &PyTuple_Type, &pairs, &blocks, &block, &shared, &PyTuple_Type, &symbols, &written,
                          &launch, &function))
        return NULL;
    int n = self->n_arrays;
    Py_ssize_t n_symbols = PyTuple_GET_SIZE(symbols);
    if (PyTuple_GET_SIZE(sigs) != n || PyTuple_GET_SIZE(masks) != n
        || n + self->n_scalars + n_symbols > MAX_VALUES) {
        PyErr_SetString(PyExc_ValueError, "a plan must have one signature and one mask per array");
        return NULL;
    }
    Plan fresh;
    memset(&fresh, 0, sizeof fresh);
    for (int i = 0; i < n; i++)
        if (!as_u64(PyTuple_GET_ITEM(masks, i), &fresh.masks[i]))
            return NULL;
    for (Py_ssize_t k = 0; k < n_symbols; k++)
        if (!as_u64(PyTuple_GET_ITEM(symbols, k), &fresh.symbols[k]))
            return NULL;
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
    fresh.used = 1;
    fresh.device = device;
    fresh.n_pairs = (int)n_pairs;
    fresh.blocks = blocks;
    fresh.block = block;
    fresh.shared = shared;
    fresh.n_symbols = (int)n_symbols;
    fresh.function = (CUfunction)(uintptr_t)fn;
    fresh.sigs = Py_NewRef(sigs);
    fresh.written = written == Py_None ? NULL : Py_NewRef(written);
    fresh.launch = Py_NewRef(launch);
    int slot = self->next;
    for (int k = 0; k < MAX_PLANS; k++)  /* the same signatures learnt again replace their plan */
        if (self->plans[k].used && self->plans[k].device == device && equal(self->plans[k].sigs, sigs))
            slot = k;
    if (slot == self->next)
        self->next = (self->next + 1) % MAX_PLANS;
    clear_plan(&self->plans[slot]);
    self->plans[slot] = fresh;
    self->last = slot;
    Py_RETURN_NONE;
}

static PyObject *Launcher_clear(Launcher *self, PyObject *unused) {
    for (int k = 0; k < MAX_PLANS; k++)
        clear_plan(&self->plans[k]);
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
    static char *names[] = {"name", "params", "n_scalars", "readers", "stream_handle", "cupy_reader", "torch_reader",
                            NULL};
    PyObject *name, *params, *kinds, *stream_handle, *cupy_reader, *torch_reader;
    int n_scalars;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO!iO!OOO", names, &name, &PyTuple_Type, &params, &n_scalars,
                                     &PyDict_Type, &kinds, &stream_handle, &cupy_reader, &torch_reader))
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(params);
    if (n > MAX_ARRAYS || n_scalars < 0 || n + n_scalars > MAX_VALUES) {
        PyErr_Format(PyExc_ValueError, "the compiled path takes at most %d arrays", MAX_ARRAYS);
        return -1;
    }
    Py_XSETREF(self->name, Py_NewRef(name));
    Py_XSETREF(self->params, Py_NewRef(params));
    Py_XSETREF(self->kinds, Py_NewRef(kinds));
    Py_XSETREF(self->stream_handle, Py_NewRef(stream_handle));
    Py_XSETREF(self->cupy_reader, Py_NewRef(cupy_reader));
    Py_XSETREF(self->torch_reader, Py_NewRef(torch_reader));
    self->n_arrays = (int)n;
    self->n_scalars = n_scalars;
    return 0;
}

static int Launcher_traverse(Launcher *self, visitproc visit, void *arg) {
    Py_VISIT(self->name);
    Py_VISIT(self->params);
    Py_VISIT(self->kinds);
    Py_VISIT(self->stream_handle);
    Py_VISIT(self->cupy_reader);
    Py_VISIT(self->torch_reader);
    for (int k = 0; k < MAX_PLANS; k++) {
        Py_VISIT(self->plans[k].sigs);
        Py_VISIT(self->plans[k].written);
        Py_VISIT(self->plans[k].launch);
    }
    return 0;
}

static int Launcher_clear_refs(Launcher *self) {
    Py_CLEAR(self->name);
    Py_CLEAR(self->params);
    Py_CLEAR(self->kinds);
    Py_CLEAR(self->stream_handle);
    Py_CLEAR(self->cupy_reader);
    Py_CLEAR(self->torch_reader);
    for (int k = 0; k < MAX_PLANS; k++)
        clear_plan(&self->plans[k]);
    return 0;
}

static void Launcher_dealloc(Launcher *self) {
    PyObject_GC_UnTrack(self);
    Launcher_clear_refs(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL,
     "launch(device, arrays, values, stream) -> bool: True where launched, False where the Python path must run"},
    {"add", (PyCFunction)Launcher_add, METH_VARARGS,
     "add(device, sigs, masks, pairs, blocks, block, shared, symbols, written, launch, function): keep a plan"},
    {"clear", (PyCFunction)Launcher_clear, METH_NOARGS, "forget every plan"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Launcher_getset[] = {
    {"plans", (getter)Launcher_plans, NULL, "plans kept", NULL},
    {"hits", (getter)Launcher_hits, NULL, "calls launched (or found empty) by the compiled path", NULL},
    {"handovers", (getter)Launcher_handovers, NULL, "calls handed to the Python path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "layoutgen.runtime._fastlaunch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One kernel's validated plans and its compiled launch.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Launcher_init,
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_traverse = (traverseproc)Launcher_traverse,
    .tp_clear = (inquiry)Launcher_clear_refs,
    .tp_methods = Launcher_methods,
    .tp_getset = Launcher_getset,
};

static PyObject *set_hook(PyObject *module, PyObject *callable) {
    if (callable != Py_None && !PyCallable_Check(callable)) {
        PyErr_SetString(PyExc_TypeError, "the hook must be callable or None");
        return NULL;
    }
    Py_XSETREF(hook, callable == Py_None ? NULL : Py_NewRef(callable));
    Py_RETURN_NONE;
}

static PyObject *get_hook(PyObject *module, PyObject *unused) { return Py_NewRef(hook ? hook : Py_None); }

/* read(array, mode) -> (signature, pointer) as the C path reads it (mode 0: CuPy, 1: torch); None where it cannot. */
static PyObject *read_one(PyObject *module, PyObject *args) {
    PyObject *a;
    int mode;
    if (!PyArg_ParseTuple(args, "Oi", &a, &mode))
        return NULL;
    if (mode != MODE_CUPY && mode != MODE_TORCH) {
        PyErr_SetString(PyExc_ValueError, "mode must be 0 (CuPy) or 1 (torch)");
        return NULL;
    }
    Read r;
    memset(&r, 0, sizeof r);
    if (!read_array(a, mode, NULL, &r)) {
        release_read(&r);
        Py_RETURN_NONE;
    }
    int fields = mode == MODE_CUPY ? 4 : 5;
    PyObject *sig = PyTuple_New(fields + 1);
    if (sig != NULL) {
        PyTuple_SET_ITEM(sig, 0, Py_NewRef((PyObject *)r.type));
        for (int k = 0; k < fields; k++) {
            PyTuple_SET_ITEM(sig, k + 1, r.f[k]);
            r.f[k] = NULL;
        }
    }
    release_read(&r);
    if (sig == NULL)
        return NULL;
    return Py_BuildValue("(NK)", sig, (unsigned long long)r.ptr);
}

static PyObject *driver(PyObject *module, PyObject *unused) {
    load_driver();
    return PyUnicode_FromString(driver_error[0] ? driver_error : "libcuda loaded");
}

static PyMethodDef module_methods[] = {
    {"set_hook", set_hook, METH_O, "set_hook(callable | None): call callable(launch, blocks, block, shared, stream, "
     "parameters) instead of cuLaunchKernel (tests)"},
    {"get_hook", get_hook, METH_NOARGS, "the hook set, or None"},
    {"read", read_one, METH_VARARGS, "read(array, mode) -> (signature, pointer) or None"},
    {"driver", driver, METH_NOARGS, "whether libcuda's cuLaunchKernel was found, in words"},
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
    INTERN(s_data_ptr, "data_ptr");
    INTERN(s_stride, "stride");
    INTERN(s_device, "device");
    INTERN(s_is_neg, "is_neg");
    INTERN(s_check, "check");
    INTERN(s_record, "record");
#undef INTERN
    if (PyType_Ready(&LauncherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Launcher", (PyObject *)&LauncherType) < 0
        || PyModule_AddIntConstant(m, "CUPY", MODE_CUPY) < 0 || PyModule_AddIntConstant(m, "TORCH", MODE_TORCH) < 0
        || PyModule_AddIntConstant(m, "MAX_ARRAYS", MAX_ARRAYS) < 0
        || PyModule_AddIntConstant(m, "MAX_VALUES", MAX_VALUES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
