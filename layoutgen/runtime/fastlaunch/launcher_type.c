/* The Launcher type: one kernel's plans (taught by the Python path), its initialisation once, and the
 * stand-in for the generated launcher function's name (a heap type of the module, made from
 * fl_launcher_spec; each Launcher reaches the module's state through its type). Its call: launcher.c. */
#include "fastlaunch.h"

/* add(device, arrays, sigs, ptrs, masks, pairs, blocks, block, shared, symbols, written, launch, function):
 * keep one plan the Python path validated `arrays` to; `sigs` and `ptrs` are its readers' reads of them. */
static PyObject *Launcher_add(Launcher *self, PyObject *args) {
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "a Launcher must be initialised before it is taught a plan");
        return NULL;
    }
    Plan fresh;
    memset(&fresh, 0, sizeof fresh);
    if (!fl_plan_from(self->state, &fresh, self->n_arrays, self->n_scalars, args))
        return NULL;
    int slot = -1;
    for (int k = 0; k < MAX_PLANS && slot < 0; k++) {  /* the same signatures learnt again replace their plan */
        PyObject *known = Py_XNewRef(self->plans[k].sigs);  /* held: the comparison runs Python code */
        if (known != NULL && self->plans[k].used && self->plans[k].device == fresh.device
            && fl_equal(known, fresh.sigs))
            slot = k;
        Py_XDECREF(known);
        if (PyErr_Occurred()) {
            fl_release_plan(&fresh);
            return NULL;
        }
    }
    if (slot < 0) {
        slot = self->next;
        self->next = (self->next + 1) % MAX_PLANS;
    }
    self->last = slot;
    fl_swap_plan(&self->plans[slot], &fresh);  /* in whole before the old one is let go */
    Py_RETURN_NONE;
}

static PyObject *Launcher_clear(Launcher *self, PyObject *unused) {
    for (int k = 0; k < MAX_PLANS; k++)
        fl_swap_plan(&self->plans[k], NULL);
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
    static const char *const names[] = {"name", "n_arrays", "scalars", "fallback", "scalar_check", NULL};
    PyObject *name, *scalars, *fallback, *scalar_check;
    int n_arrays;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UiO!OO", (char **)names, &name, &n_arrays, &PyTuple_Type,
                                     &scalars, &fallback, &scalar_check))
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
        if ((kinds[k] = fl_scalar_kind(dtype)) < 0) {
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
    self->vectorcall = fl_launcher_vectorcall;
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
    Py_VISIT(Py_TYPE(self));  /* a heap type: its instances hold it */
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
        fl_swap_plan(&self->plans[k], NULL);
    return 0;
}

static void Launcher_dealloc(Launcher *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Launcher_clear_refs(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);  /* a heap type's instance held it */
}

static PyObject *Launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    FastState *st = fl_state_of_type(type);
    if (st == NULL)
        return NULL;
    Launcher *self = (Launcher *)PyType_GenericNew(type, args, kwds);
    if (self != NULL) {
        self->state = st;
        self->vectorcall = fl_launcher_vectorcall;  /* before __init__: a call of a half-made one hands over */
    }
    return (PyObject *)self;
}

static PyMethodDef Launcher_methods[] = {
    {"attempt", (PyCFunction)(void (*)(void))fl_launcher_attempt, METH_FASTCALL | METH_KEYWORDS,
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

static PyMemberDef Launcher_members[] = {  /* the offsets a heap type's spec gives as members */
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Launcher, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(Launcher, dict), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot Launcher_slots[] = {
    {Py_tp_doc, "One kernel's validated plans and its compiled launch; call it as the kernel's launcher."},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_new, Launcher_new},
    {Py_tp_init, Launcher_init},
    {Py_tp_dealloc, Launcher_dealloc},
    {Py_tp_traverse, Launcher_traverse},
    {Py_tp_clear, Launcher_clear_refs},
    {Py_tp_methods, Launcher_methods},
    {Py_tp_getset, Launcher_getset},
    {Py_tp_members, Launcher_members},
    {Py_tp_descr_get, Launcher_descr_get},
    {Py_tp_repr, Launcher_repr},
    {0, NULL},
};

PyType_Spec fl_launcher_spec = {
    .name = "layoutgen.runtime._fastlaunch.Launcher",
    .basicsize = sizeof(Launcher),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Launcher_slots,
};
