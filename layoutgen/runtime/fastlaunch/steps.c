/* Steps: a program runner's prepared launches (runtime/program.py), launched in one call (a heap type of the
 * module, made from fl_steps_spec). */
#include "fastlaunch.h"

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
    FastState *state;  /* its module's (the type holds the module, and each Steps its type) */
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
            || !fl_as_u64(function, &fn) || !fl_as_uint(grid[0], &step->blocks) || !fl_as_uint(grid[1], &step->block)
            || !fl_as_uint(grid[2], &step->shared))
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
            if (!fl_as_u64(PyTuple_GET_ITEM(constants, k), &step->constants[k]))
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
    FastState *st = self->state;
    if (nargs != 2 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != self->n_buffers || self->steps == NULL) {
        PyErr_SetString(PyExc_TypeError, "launch(pointers, stream) takes a tuple of one pointer per buffer");
        return NULL;
    }
    PyObject *stream = args[1];
    uint64_t pointers[MAX_VALUES];
    for (int b = 0; b < self->n_buffers; b++)
        if (!fl_as_u64(PyTuple_GET_ITEM(args[0], b), &pointers[b]))
            return NULL;
    PyObject *replay = Py_XNewRef(FL_HOOK(st));
    uint64_t cu_stream = 0;
    int done = 0;
    if ((replay == NULL && !fl_load_driver(st))
        || ((replay == NULL || stream != Py_None) && !fl_stream_of(st, stream, self->name, -1, &cu_stream))) {
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
        int got = fl_launch_packed(st, replay, step->launch, step->function, step->blocks, step->block,
                                   step->shared, stream, cu_stream, buffer, count);
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
    Py_VISIT(Py_TYPE(self));  /* a heap type: its instances hold it */
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
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Steps_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);  /* a heap type's instance held it */
}

static PyObject *Steps_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    FastState *st = fl_state_of_type(type);
    if (st == NULL)
        return NULL;
    Steps *self = (Steps *)PyType_GenericNew(type, args, kwds);
    if (self != NULL)
        self->state = st;
    return (PyObject *)self;
}

static PyMethodDef Steps_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Steps_launch, METH_FASTCALL,
     "launch(pointers, stream) -> the number of steps launched, in order"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Steps_slots[] = {
    {Py_tp_doc, "A program's prepared launches, launched in order in one call."},
    {Py_tp_new, Steps_new},
    {Py_tp_init, Steps_init},
    {Py_tp_dealloc, Steps_dealloc},
    {Py_tp_traverse, Steps_traverse},
    {Py_tp_clear, Steps_clear},
    {Py_tp_methods, Steps_methods},
    {0, NULL},
};

PyType_Spec fl_steps_spec = {
    .name = "layoutgen.runtime._fastlaunch.Steps",
    .basicsize = sizeof(Steps),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Steps_slots,
};
