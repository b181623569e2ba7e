// The host runtime's cuda_fp16.h (`layoutgen check --execute` puts this folder first on the include path):
// __half and __half2 as lg/host/float16.h makes them, and the conversions of CUDA's header by their names.
// CUDA's own header cannot be compiled for the host without the CUDA compiler's headers (crt/, nv/target).
#pragma once
#include "lg/host/float16.h"

LG_HOST_FLOAT16(__half, __half2, half_to_float, float_to_half)
typedef __half half;
typedef __half2 half2;
struct __half_raw {
    unsigned short x;
};

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(d); }
inline float __half2float(__half h) { return float(h); }
inline __half __int2half_rn(int i) { return __half(i); }
inline int __half2int_rn(__half h) { return static_cast<int>(std::nearbyint(float(h))); }
inline int __half2int_rz(__half h) { return static_cast<int>(float(h)); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
inline __half __short_as_half(short s) { return __ushort_as_half(static_cast<unsigned short>(s)); }
inline __half2 __float2half2_rn(float f) { return {__half(f), __half(f)}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__half(a), __half(b)}; }
inline __half2 __half2half2(__half h) { return {h, h}; }
inline float2 __half22float2(__half2 h) { return {float(h.x), float(h.y)}; }
inline __half2 __float22half2_rn(float2 f) { return {__half(f.x), __half(f.y)}; }
