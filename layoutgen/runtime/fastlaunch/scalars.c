/* Scalars: exactly validate.check_scalar (schema/scalars.pack_scalar) for a Python float, int or bool; any
 * other value (a NumPy scalar, a subclass, NaN, a value out of range, a wrong kind) goes to the Python check,
 * whose error hands the call over. */
#include "fastlaunch.h"

#include <math.h>

enum { K_F32, K_F64, K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_BOOL };
static const char *const KIND_NAMES[] = {"f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"};
#define N_KINDS (int)(sizeof KIND_NAMES / sizeof KIND_NAMES[0])
/* each integer kind's range (K_I8 .. K_U32; the float kinds' entries are unused) */
static const long long LOW[] = {0, 0, -128, -32768, -2147483648LL, INT64_MIN, 0, 0, 0};
static const long long HIGH[] = {0, 0, 127, 32767, 2147483647LL, INT64_MAX, 255, 65535, 4294967295LL};

/* The kind of a scalar dtype's name (schema/scalars.py), or -1. */
int fl_scalar_kind(const char *name) {
    for (int k = 0; k < N_KINDS; k++)
        if (strcmp(name, KIND_NAMES[k]) == 0)
            return k;
    return -1;
}

/* 1: `slot` holds the value's 8-byte launch value; 0: the Python check must decide. */
int fl_fast_scalar(int kind, int finite, PyObject *v, uint64_t *slot) {
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
    if (kind < 0 || kind > K_U32 || n < LOW[kind] || n > HIGH[kind])
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
