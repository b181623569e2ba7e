// lg/thread.cuh: what the bodies of the grids of one thread per row, element or vector (and Grid.general)
// use to compute their own indices from one thread index: lg::divmod, lg::aligned.
#ifndef LG_V0_1_0_THREAD_CUH
#define LG_V0_1_0_THREAD_CUH
#include "version.cuh"

namespace lg {
inline namespace v0_1_0 {
// n / d and n % d (n >= 0, d > 0), for the index arithmetic of a thread's work: a row from a thread's index,
// a series from a row (`r / K`, K bound at launch). The indices of a grid of threads are `long long` wherever a
// layout has a symbolic dim, and a 64-bit division by a value known only at launch is a called routine of some
// 70 instructions; as 32-bit unsigned arithmetic it is a dozen inline. So the 32-bit division runs wherever both
// fit (every launch of fewer than 2^32 elements: the test is uniform across the grid in practice, a branch that
// costs three instructions), the 64-bit one only where they do not.
struct QuotRem {
    long long quot;
    long long rem;
};
__device__ __forceinline__ QuotRem divmod(long long n, long long d) {
    if (((static_cast<unsigned long long>(n) | static_cast<unsigned long long>(d)) >> 32) == 0) {
        const unsigned q = static_cast<unsigned>(n) / static_cast<unsigned>(d);
        return QuotRem{ q, static_cast<long long>(static_cast<unsigned>(n) - q * static_cast<unsigned>(d)) };
    }
    return QuotRem{ n / d, n % d };
}

// Whether the first element of every one of `p` (element references from the views: `x.at(0, 0)`, `x(b, s, h, 0)`)
// is aligned for BYTES-byte accesses: for a body that can move BYTES bytes at once where a dim bound at launch
// allows it (a head of D elements is 16-byte aligned when D is a multiple of 4) and element by element where it
// does not. The address is read, nothing is accessed.
template <int BYTES, typename... Element>
__device__ __forceinline__ bool aligned(const Element&... p) {
    // (a C cast: the debug build's reinterpret_cast is lg::reinterpret_checked, for pointers only)
    return (((unsigned long long)static_cast<const void*>(&p) % BYTES == 0) && ...);
}

}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_THREAD_CUH
