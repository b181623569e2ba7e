// Host emulation of a CUDA block, for CPU tests of cooperative kernels: every thread of a block is a
// host thread (threadIdx is thread_local), __syncthreads() is a barrier across them (__syncwarp() and
// __shfl_xor_sync() one across each warp), shared memory is
// one buffer the block's threads share (blocks run one after another), and atomicAdd on float is a
// compare-and-swap loop. Only what the generated kernels and their views use is here; cp.async and
// the debug build's device code stay behind `__CUDA_ARCH__`, which the host does not define. The warp's
// m16n8k8 TF32 tensor-core product (mma.sync, inline PTX on the device) is emulated here for the project
// headers whose host path calls it (examples/vsn/include/vsn_tf32.cuh): host_mma_m16n8k8_tf32.
#pragma once
#include <barrier>
#include <cmath>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __host__  // lg/entry.cuh (the device library) marks its compile-time helpers __host__ __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__
#define __shared__
#define __align__(n) __attribute__((aligned(n)))
struct lg_dim3 { unsigned x = 0, y = 0, z = 0; };
static lg_dim3 blockIdx, blockDim, gridDim;
static thread_local lg_dim3 threadIdx;
static std::barrier<>* lg_host_barrier = nullptr;
static std::vector<std::barrier<>*> lg_warp_barriers;  // one a warp of the block running
static float lg_exchange[1024];  // what each lane offers a shuffle
// The dynamic shared memory of the block running (`extern __shared__ unsigned char lg_shared[]`).
alignas(16) unsigned char lg_shared[256 * 1024];

inline void __syncthreads() { lg_host_barrier->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { lg_warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
// A butterfly shuffle of the whole warp: every lane offers its value, then reads its partner's.
inline float __shfl_xor_sync(unsigned, float value, int lane_mask) {
    const unsigned t = threadIdx.x;
    lg_exchange[t] = value;
    __syncwarp();
    const float got = lg_exchange[(t & ~31u) | ((t & 31u) ^ static_cast<unsigned>(lane_mask))];
    __syncwarp();
    return got;
}
// c += A * B of one m16n8k8 TF32 mma.sync, the whole warp together. Every lane offers its fragments, the warp
// meets, each lane computes its four elements of C from the whole of A and B (the fragment layout of the PTX
// ISA, "Matrix Fragments for mma.m16n8k8", read backwards), and the warp meets again before the buffers are
// reused. Like the tensor core it reads only the TF32 bits of each operand (the low 13 bits of an f32 are
// ignored); the products of two TF32 values are exact in f32, only the order of the additions differs.
static unsigned lg_mma_a[1024][4], lg_mma_b[1024][2];
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
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, sizeof f); return f; }
inline float atomicAdd(float* address, float value) {
    unsigned* word = reinterpret_cast<unsigned*>(address);
    unsigned seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (;;) {
        float old;
        std::memcpy(&old, &seen, sizeof old);
        const float sum = old + value;
        unsigned want;
        std::memcpy(&want, &sum, sizeof want);
        if (__atomic_compare_exchange_n(word, &seen, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
    }
}

// Runs `kernel()` as `grid` blocks of `block` threads, the blocks one after another.
template <typename Kernel>
void lg_host_run(unsigned grid, unsigned block, Kernel kernel) {
    gridDim.x = grid;
    blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        std::barrier<> barrier(block);
        lg_host_barrier = &barrier;
        std::deque<std::barrier<>> warps;  // barriers cannot move: a deque keeps them where they are made
        lg_warp_barriers.clear();
        for (unsigned w = 0; w < (block + 31) / 32; ++w) {
            warps.emplace_back(static_cast<std::ptrdiff_t>(block - w * 32 < 32 ? block - w * 32 : 32));
            lg_warp_barriers.push_back(&warps.back());
        }
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([t, &kernel] { threadIdx.x = t; kernel(); });
        for (std::thread& thread : threads) thread.join();
    }
}
