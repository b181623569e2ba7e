// The 16-bit floats of the host runtime (lg/host/cuda/cuda_fp16.h and cuda_bf16.h stand in for CUDA's headers
// in `layoutgen check --execute`): their bits, the conversions from and to float rounded as the device rounds
// them (to nearest, ties to even), and the operators and intrinsics kernels use, made once for both types by
// LG_HOST_FLOAT16 below. Arithmetic is done in float and rounded back, as the device's half arithmetic gives
// the correctly rounded result of each operation (float holds every sum and product of two 16-bit values
// closely enough that rounding it once more is exact).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace lg_host {
inline float float_of_bits(std::uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline std::uint32_t bits_of_float(float f) { std::uint32_t u; std::memcpy(&u, &f, 4); return u; }

// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits.
inline float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return float_of_bits(sign | 0x7f800000u | (mant << 13));  // Inf, NaN (payload kept)
    if (exp == 0) return float_of_bits(sign | bits_of_float(std::ldexp(static_cast<float>(mant), -24)));  // 0, subnormal
    return float_of_bits(sign | ((exp + 112) << 23) | (mant << 13));
}
inline std::uint16_t float_to_half(float value) {
    std::uint32_t f = bits_of_float(value);
    const std::uint32_t sign = f & 0x80000000u;
    f ^= sign;
    std::uint16_t out;
    if (f >= (127u + 16u) << 23) {  // 2^16 and up: Inf, or NaN (quiet)
        out = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (f < 113u << 23) {  // below 2^-14: a subnormal or zero, rounded by the float addition itself
        const std::uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
        out = static_cast<std::uint16_t>(bits_of_float(float_of_bits(f) + float_of_bits(magic)) - magic);
    } else {  // rebias the exponent and round the 13 bits dropped to nearest, ties to even
        f += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + ((f >> 13) & 1u);
        out = static_cast<std::uint16_t>(f >> 13);  // a carry past 0x7bff makes Inf, as it should
    }
    return static_cast<std::uint16_t>(out | (sign >> 16));
}
// bfloat16: the top 16 bits of a float.
inline float bfloat16_to_float(std::uint16_t b) { return float_of_bits(static_cast<std::uint32_t>(b) << 16); }
inline std::uint16_t float_to_bfloat16(float value) {
    const std::uint32_t f = bits_of_float(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);  // NaN stays NaN (quiet)
    return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}
}  // namespace lg_host

// The type T (bits to float with TO, float to bits with FROM), its pair T2, and the intrinsics whose names
// carry no type (__hadd, __hmul, ... take either 16-bit type, as CUDA's overloads do).
#define LG_HOST_FLOAT16(T, T2, TO, FROM)                                                                           \
    struct alignas(2) T {                                                                                           \
        unsigned short __x;                                                                                         \
        T() = default;                                                                                              \
        T(float f) : __x(lg_host::FROM(f)) {}                                                                      \
        T(double d) : __x(lg_host::FROM(static_cast<float>(d))) {}                                                 \
        T(int i) : __x(lg_host::FROM(static_cast<float>(i))) {}                                                    \
        T(unsigned i) : __x(lg_host::FROM(static_cast<float>(i))) {}                                               \
        T(long long i) : __x(lg_host::FROM(static_cast<float>(i))) {}                                              \
        T(unsigned long long i) : __x(lg_host::FROM(static_cast<float>(i))) {}                                     \
        T(short i) : __x(lg_host::FROM(static_cast<float>(i))) {}                                                  \
        T(unsigned short i) : __x(lg_host::FROM(static_cast<float>(i))) {}                                         \
        operator float() const { return lg_host::TO(__x); }                                                         \
    };                                                                                                              \
    struct alignas(4) T2 {                                                                                          \
        T x, y;                                                                                                     \
    };                                                                                                              \
    inline T operator+(const T& a, const T& b) { return T(float(a) + float(b)); }                                 \
    inline T operator-(const T& a, const T& b) { return T(float(a) - float(b)); }                                 \
    inline T operator*(const T& a, const T& b) { return T(float(a) * float(b)); }                                 \
    inline T operator/(const T& a, const T& b) { return T(float(a) / float(b)); }                                 \
    inline T operator-(const T& a) { T r = a; r.__x ^= 0x8000u; return r; }                                       \
    inline T operator+(const T& a) { return a; }                                                                    \
    inline T& operator+=(T& a, const T& b) { return a = a + b; }                                                    \
    inline T& operator-=(T& a, const T& b) { return a = a - b; }                                                    \
    inline T& operator*=(T& a, const T& b) { return a = a * b; }                                                    \
    inline T& operator/=(T& a, const T& b) { return a = a / b; }                                                    \
    inline bool operator==(const T& a, const T& b) { return float(a) == float(b); }                                \
    inline bool operator!=(const T& a, const T& b) { return float(a) != float(b); }                                \
    inline bool operator<(const T& a, const T& b) { return float(a) < float(b); }                                  \
    inline bool operator<=(const T& a, const T& b) { return float(a) <= float(b); }                                \
    inline bool operator>(const T& a, const T& b) { return float(a) > float(b); }                                  \
    inline bool operator>=(const T& a, const T& b) { return float(a) >= float(b); }                                \
    inline T2 operator+(const T2& a, const T2& b) { return {a.x + b.x, a.y + b.y}; }                               \
    inline T2 operator-(const T2& a, const T2& b) { return {a.x - b.x, a.y - b.y}; }                               \
    inline T2 operator*(const T2& a, const T2& b) { return {a.x * b.x, a.y * b.y}; }                               \
    inline T2 operator/(const T2& a, const T2& b) { return {a.x / b.x, a.y / b.y}; }                               \
    inline T2& operator+=(T2& a, const T2& b) { return a = a + b; }                                                 \
    inline T2& operator*=(T2& a, const T2& b) { return a = a * b; }                                                 \
    inline T __hadd(T a, T b) { return a + b; }                                                                     \
    inline T __hsub(T a, T b) { return a - b; }                                                                     \
    inline T __hmul(T a, T b) { return a * b; }                                                                     \
    inline T __hdiv(T a, T b) { return a / b; }                                                                     \
    inline T __hneg(T a) { return -a; }                                                                             \
    inline T __habs(T a) { a.__x &= 0x7fffu; return a; }                                                           \
    inline T __hfma(T a, T b, T c) { return T(std::fma(float(a), float(b), float(c))); }                           \
    inline T __hmax(T a, T b) { return T(std::fmax(float(a), float(b))); }                                        \
    inline T __hmin(T a, T b) { return T(std::fmin(float(a), float(b))); }                                        \
    inline bool __heq(T a, T b) { return a == b; }                                                                  \
    inline bool __hne(T a, T b) { return a != b; }                                                                  \
    inline bool __hlt(T a, T b) { return a < b; }                                                                   \
    inline bool __hle(T a, T b) { return a <= b; }                                                                  \
    inline bool __hgt(T a, T b) { return a > b; }                                                                   \
    inline bool __hge(T a, T b) { return a >= b; }                                                                  \
    inline bool __hisnan(T a) { return std::isnan(float(a)); }                                                      \
    inline int __hisinf(T a) { return std::isinf(float(a)) ? (float(a) < 0 ? -1 : 1) : 0; }                      \
    inline T hsqrt(T a) { return T(std::sqrt(float(a))); }                                                         \
    inline T hrsqrt(T a) { return T(1.0f / std::sqrt(float(a))); }                                                 \
    inline T hexp(T a) { return T(std::exp(float(a))); }                                                           \
    inline T hlog(T a) { return T(std::log(float(a))); }                                                           \
    inline T2 __hadd2(T2 a, T2 b) { return a + b; }                                                                 \
    inline T2 __hsub2(T2 a, T2 b) { return a - b; }                                                                 \
    inline T2 __hmul2(T2 a, T2 b) { return a * b; }                                                                 \
    inline T2 __hfma2(T2 a, T2 b, T2 c) { return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }                \
    inline T __low2half(T2 a) { return a.x; }                                                                       \
    inline T __high2half(T2 a) { return a.y; }                                                                      \
    inline T2 __halves2half2(T a, T b) { return {a, b}; }                                                           \
    inline float __low2float(T2 a) { return float(a.x); }                                                           \
    inline float __high2float(T2 a) { return float(a.y); }                                                          \
    inline T atomicAdd(T* at, T v) {                                                                                \
        unsigned short seen = __atomic_load_n(&at->__x, __ATOMIC_RELAXED);                                          \
        for (;;) {                                                                                                  \
            T old;                                                                                                  \
            old.__x = seen;                                                                                         \
            const unsigned short want = (old + v).__x;                                                              \
            if (__atomic_compare_exchange_n(&at->__x, &seen, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))      \
                return old;                                                                                         \
        }                                                                                                           \
    }
