// layoutgen's host runtime of CUDA blocks: the generated kernels of a spec, compiled for the CPU by
// `layoutgen check --execute`. Every thread of a block is a host thread (threadIdx is thread_local; the
// blocks of a launch run one after another), __syncthreads() and __syncwarp() are barriers that know which
// threads of the block have returned, warp shuffles and votes exchange through the warp's barrier, atomics
// are the compiler's, shared memory is one buffer the block's threads share (and a static __shared__ array one
// static array: LG_STATIC_SHARED below), cp.async copies synchronously
// (the views header's fallback below sm_80) and the warp's m16n8k8 TF32 mma.sync is emulated
// (host_mma_m16n8k8_tf32). A barrier some threads never reach, or two barriers reached by different threads
// at once, is reported through lg_host_violation (lg/host/sanitizer.h) instead of hanging.
#pragma once
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__
#define __shared__
#define __constant__
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
static dim3 blockIdx, blockDim, gridDim;
static thread_local dim3 threadIdx;
static constexpr int warpSize = 32;

// CUDA's vector types, laid out and aligned as on the device (a cast of a float pointer to float4* reads 16 bytes).
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// The dynamic shared memory of the block running (`extern __shared__ unsigned char lg_shared[]`).
alignas(64) unsigned char lg_shared[256 * 1024];

// A static `__shared__` array: the host program's files say LG_STATIC_SHARED for a `__shared__` that is not
// `extern` (layoutgen/project/host_shared.py), so the array is static: one for the kernel, which is one for the
// block, as the blocks run one after another and their threads all see it. LG_SHARED_RESET registers it to be
// filled with all-ones bytes (NaN) when first reached and before every later block, as the dynamic buffer is:
// what a block reads of it before writing shows in its outputs. (CUDA allows no initializer on a __shared__
// variable, so a static's once-only initialization loses nothing.)
#define LG_STATIC_SHARED static
namespace lg_host {
struct SharedStatics {
    std::mutex mutex;
    std::vector<std::pair<void*, std::size_t>> arrays;
};
inline SharedStatics shared_statics;
struct SharedStaticReset {
    SharedStaticReset(void* at, std::size_t bytes) {
        std::memset(at, 0xff, bytes);
        std::lock_guard<std::mutex> lock(shared_statics.mutex);
        shared_statics.arrays.emplace_back(at, bytes);
    }
};
inline void reset_shared_statics() {
    for (const auto& [at, bytes] : shared_statics.arrays) std::memset(at, 0xff, bytes);
}
}  // namespace lg_host
#define LG_SHARED_CAT2(a, b) a##b
#define LG_SHARED_CAT(a, b) LG_SHARED_CAT2(a, b)
#define LG_SHARED_RESET(name) \
    static lg_host::SharedStaticReset LG_SHARED_CAT(lg_shared_reset_, __COUNTER__){&(name), sizeof(name)}

// Reported by lg/host/sanitizer.h: a barrier or a thread's exit that breaks the block's rules. Never returns.
[[noreturn]] void lg_host_violation(const char* kind, const char* what, const void* pc);

namespace lg_host {
// One barrier of a block: the block's (every thread) or a warp's (its lanes). `site` is where its first
// thread arrived: a thread arriving at another call of __syncthreads() meanwhile is a divergent barrier.
// Each barrier has its own lock and wakes only its own threads (a warp's barrier met wakes 32 lanes, not the
// whole block), and a waiting thread first yields a while before it sleeps: with more threads than cores the
// others arrive in that while. One lock and one sleep for all made the warp-heavy kernels' runs ten times slower.
struct Barrier {
    std::mutex mutex;
    std::condition_variable moved;
    int expected = 0, arrived = 0, exited = 0;
    // How many times the barrier was met: to a thread, the barriers it has passed (lg/host/shadow.h tells two
    // writes that a barrier orders by it).
    std::atomic<unsigned long long> generation{0};
    const void* site = nullptr;
};
inline constexpr int yields_before_sleep = 64;
struct BlockState {
    explicit BlockState(unsigned warps) : warps(warps) {}
    Barrier block;
    std::vector<Barrier> warps;  // made at their final size: a barrier cannot move
};
inline BlockState* state = nullptr;

[[noreturn]] inline void violation(std::unique_lock<std::mutex>& lock, const char* kind, const char* what, const void* pc) {
    lock.release();  // the other threads stay where they are: the process ends with this report
    lg_host_violation(kind, what, pc);
}

inline void arrive(Barrier& b, const char* name, const void* pc) {
    std::unique_lock<std::mutex> lock(b.mutex);
    if (b.exited) violation(lock, "barrier", name, pc);  // a thread this barrier waits for has returned
    if (b.arrived == 0)
        b.site = pc;
    else if (b.site != pc)
        violation(lock, "divergent", name, pc);
    const unsigned long long generation = b.generation.load(std::memory_order_relaxed);
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        b.generation.store(generation + 1, std::memory_order_release);  // what every thread wrote before, seen after
        b.moved.notify_all();
        return;
    }
    lock.unlock();
    for (int i = 0; i < yields_before_sleep; ++i) {
        if (b.generation.load(std::memory_order_acquire) != generation) return;
        std::this_thread::yield();
    }
    lock.lock();
    b.moved.wait(lock, [&] { return b.generation.load(std::memory_order_acquire) != generation; });
}

// A thread returned from the kernel: any barrier of its block or warp that waits for it now never completes.
inline void exited(unsigned t) {
    for (auto [b, name] : {std::pair<Barrier*, const char*>{&state->block, "__syncthreads()"},
                           std::pair<Barrier*, const char*>{&state->warps[t / 32], "__syncwarp()"}}) {
        std::unique_lock<std::mutex> lock(b->mutex);
        ++b->exited;
        if (b->arrived) violation(lock, "barrier-exit", name, b->site);
    }
}

// What each thread offers a shuffle or a vote: 8 bytes a thread.
inline std::uint64_t exchange[1024];
}  // namespace lg_host

__attribute__((noinline)) inline void __syncthreads() {
    lg_host::arrive(lg_host::state->block, "__syncthreads()", __builtin_return_address(0));
}
__attribute__((noinline)) inline void __syncwarp(unsigned = 0xffffffffu) {
    lg_host::arrive(lg_host::state->warps[threadIdx.x / 32], "__syncwarp()", __builtin_return_address(0));
}
inline int __syncthreads_count(int p) {
    const unsigned t = threadIdx.x;
    lg_host::exchange[t] = p != 0;
    __syncthreads();
    int n = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) n += static_cast<int>(lg_host::exchange[i]);
    __syncthreads();
    return n;
}
inline int __syncthreads_or(int p) { return __syncthreads_count(p) != 0; }
inline int __syncthreads_and(int p) { return __syncthreads_count(p) == static_cast<int>(blockDim.x); }

// The debug build's checked references and pointers (lg/checked.cuh, of whichever library version): a shuffle
// moves the value a reference reads, __ldg reads through the pointer's check. They are told by the member
// types they declare (lg_checked_value, lg_checked_pointee), not by name: their names are versioned.
namespace lg_host {
template <typename T, typename = void> struct value { using type = T; };
template <typename T> struct value<T, std::void_t<typename T::lg_checked_value>> {
    using type = typename T::lg_checked_value;
};
template <typename T> using value_t = typename value<T>::type;
}  // namespace lg_host

namespace lg_host {
// Every lane offers `value`; lane `from(lane)` of the warp is read back (its own value where out of range).
template <typename T, typename From>
inline T shuffle(T value, int width, From from) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    const unsigned t = threadIdx.x, warp = t & ~31u, lane = t & 31u;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    exchange[t] = bits;
    __syncwarp();
    const unsigned base = lane / width * width;  // the segment of `width` lanes this lane is in
    const int src = from(static_cast<int>(lane - base));
    const std::uint64_t got = exchange[warp + base + (src >= 0 && src < width ? src : lane - base)];
    __syncwarp();
    T out;
    std::memcpy(&out, &got, sizeof(T));
    return out;
}
}  // namespace lg_host
template <typename T> inline lg_host::value_t<T> __shfl_sync(unsigned, T v, int src, int width = 32) {
    return lg_host::shuffle(static_cast<lg_host::value_t<T>>(v), width, [&](int) { return ((src % width) + width) % width; });
}
template <typename T> inline lg_host::value_t<T> __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    return lg_host::shuffle(static_cast<lg_host::value_t<T>>(v), width, [&](int l) { return l ^ mask; });
}
template <typename T> inline lg_host::value_t<T> __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    return lg_host::shuffle(static_cast<lg_host::value_t<T>>(v), width, [&](int l) { return l + static_cast<int>(delta); });
}
template <typename T> inline lg_host::value_t<T> __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    return lg_host::shuffle(static_cast<lg_host::value_t<T>>(v), width, [&](int l) { return l - static_cast<int>(delta); });
}
inline unsigned __ballot_sync(unsigned, int p) {
    const unsigned t = threadIdx.x, warp = t & ~31u;
    lg_host::exchange[t] = p != 0;
    __syncwarp();
    unsigned bits = 0;
    const unsigned lanes = blockDim.x - warp < 32 ? blockDim.x - warp : 32;
    for (unsigned l = 0; l < lanes; ++l) bits |= static_cast<unsigned>(lg_host::exchange[warp + l]) << l;
    __syncwarp();
    return bits;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) {
    const unsigned warp = threadIdx.x & ~31u, lanes = blockDim.x - warp < 32 ? blockDim.x - warp : 32;
    return __ballot_sync(m, p) == (lanes == 32 ? 0xffffffffu : (1u << lanes) - 1);
}
inline unsigned __activemask() { return 0xffffffffu; }

// Atomics: the compiler's, on the same addresses (so the sanitizer checks them like any access).
template <typename T> inline T lg_atomic_update(T* address, T (*op)(T, T), T value) {
    T seen = __atomic_load_n(address, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(address, &seen, op(seen, value), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return seen;
}
inline float atomicAdd(float* a, float v) {
    static_assert(sizeof(float) == sizeof(unsigned));
    unsigned* word = reinterpret_cast<unsigned*>(a);
    unsigned seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (;;) {
        float old, sum;
        std::memcpy(&old, &seen, sizeof old);
        sum = old + v;
        unsigned want;
        std::memcpy(&want, &sum, sizeof want);
        if (__atomic_compare_exchange_n(word, &seen, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
    }
}
inline double atomicAdd(double* a, double v) {
    unsigned long long* word = reinterpret_cast<unsigned long long*>(a);
    unsigned long long seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (;;) {
        double old, sum;
        std::memcpy(&old, &seen, sizeof old);
        sum = old + v;
        unsigned long long want;
        std::memcpy(&want, &sum, sizeof want);
        if (__atomic_compare_exchange_n(word, &seen, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
    }
}
inline int atomicAdd(int* a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned* a, unsigned v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);
}
inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
inline unsigned atomicSub(unsigned* a, unsigned v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
template <typename T> inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }
inline float atomicExch(float* a, float v) {
    unsigned bits, old;
    std::memcpy(&bits, &v, 4);
    old = __atomic_exchange_n(reinterpret_cast<unsigned*>(a), bits, __ATOMIC_RELAXED);
    float out;
    std::memcpy(&out, &old, 4);
    return out;
}
template <typename T> inline T atomicCAS(T* a, T compare, T value) {
    __atomic_compare_exchange_n(a, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}
template <typename T> inline T atomicMax(T* a, T v) {
    return lg_atomic_update<T>(a, [](T x, T y) { return x > y ? x : y; }, v);
}
template <typename T> inline T atomicMin(T* a, T v) {
    return lg_atomic_update<T>(a, [](T x, T y) { return x < y ? x : y; }, v);
}
template <typename T> inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }
template <typename T> inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }
template <typename T> inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }
inline unsigned atomicInc(unsigned* a, unsigned v) {
    return lg_atomic_update<unsigned>(a, [](unsigned x, unsigned y) { return x >= y ? 0u : x + 1; }, v);
}
inline unsigned atomicDec(unsigned* a, unsigned v) {
    return lg_atomic_update<unsigned>(a, [](unsigned x, unsigned y) { return x == 0 || x > y ? y : x - 1; }, v);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Device math the host lacks under these names.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, sizeof f); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, sizeof i); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, sizeof f); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, sizeof i); return i; }
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename P, typename T = typename P::lg_checked_pointee>
inline std::remove_const_t<T> __ldg(const P& p) { return *p; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }

// c += A * B of one m16n8k8 TF32 mma.sync, the whole warp together. Every lane offers its fragments, the warp
// meets, each lane computes its four elements of C from the whole of A and B (the fragment layout of the PTX
// ISA, "Matrix Fragments for mma.m16n8k8", read backwards), and the warp meets again before the buffers are
// reused. Like the tensor core it reads only the TF32 bits of each operand (the low 13 bits of an f32 are
// ignored); the products of two TF32 values are exact in f32, only the order of the additions differs.
inline unsigned lg_mma_a[1024][4], lg_mma_b[1024][2];
inline void host_mma_m16n8k8_tf32(float c[4], const unsigned a[4], const unsigned b[2]) {
    const unsigned t = threadIdx.x, warp = t & ~31u, lane = t & 31u;
    for (int i = 0; i < 4; ++i) lg_mma_a[t][i] = a[i] & 0xffffe000u;
    for (int i = 0; i < 2; ++i) lg_mma_b[t][i] = b[i] & 0xffffe000u;
    __syncwarp();
    auto value = [](unsigned bits) { float f; std::memcpy(&f, &bits, sizeof f); return f; };
    // A[row][k] is held by lane 4 * (row % 8) + k % 4, in register (row >= 8) + 2 * (k >= 4);
    // B[k][n] by lane 4 * n + k % 4, in register k >= 4.
    auto A = [&](unsigned row, unsigned k) { return value(lg_mma_a[warp + 4 * (row % 8) + k % 4][(row >= 8) + 2 * (k >= 4)]); };
    auto B = [&](unsigned k, unsigned n) { return value(lg_mma_b[warp + 4 * n + k % 4][k >= 4]); };
    const unsigned g = lane / 4, q = lane % 4;
    for (int i = 0; i < 4; ++i) {
        const unsigned row = g + (i >= 2 ? 8 : 0), col = 2 * q + (i & 1);
        float sum = c[i];
        for (unsigned k = 0; k < 8; ++k) sum += A(row, k) * B(k, col);
        c[i] = sum;
    }
    __syncwarp();
}

namespace lg_host {
// Runs `kernel()` as `grid` blocks of `block` threads, the blocks one after another; `before_block(b)` runs
// before each block's threads start (the sanitizer resets the shared memory there).
template <typename Kernel, typename Before>
void run(unsigned grid, unsigned block, Kernel kernel, Before before_block) {
    gridDim.x = grid;
    blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        before_block(b);
        reset_shared_statics();
        BlockState s((block + 31) / 32);
        s.block.expected = static_cast<int>(block);
        for (unsigned w = 0; w < s.warps.size(); ++w)
            s.warps[w].expected = static_cast<int>(block - w * 32 < 32 ? block - w * 32 : 32);
        state = &s;
        std::vector<std::thread> threads;
        threads.reserve(block);
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([t, &kernel] {
                threadIdx.x = t;
                kernel();
                exited(t);
            });
        for (std::thread& thread : threads) thread.join();
        state = nullptr;
    }
}
}  // namespace lg_host
