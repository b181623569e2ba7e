// Helpers every VSN kernel variant of this folder uses: 16-byte groups, cp.async copies of [rows, 40] f32
// tiles into shared memory (pitch 44 floats: 11 groups of 16 bytes, an odd number, so that a thread per row
// reading its row's groups meets no bank conflict), a guard on the dynamic shared memory the launch gave,
// and the TF32 tensor-core pieces (round to TF32, m16n8k8 mma). On the host (tests through
// tests/host/cuda_block_shim.h, no __CUDA_ARCH__) each device-only piece has a plain C++ equivalent:
// copies happen at once, waits do nothing, the mma is the shim's emulation across the warp.
#pragma once
#include "vsn_tf32.cuh"

// The block's dynamic shared memory, carved by each kernel (the host harness defines it).
extern __shared__ __align__(16) unsigned char vsn_smem[];

namespace vsn_variants {

struct alignas(16) Group { float v[4]; };

constexpr int PITCH = 44;  // floats from one row of a shared tile to the next

__device__ __forceinline__ Group& group_at(float* base, int index) { return reinterpret_cast<Group*>(base)[index]; }
__device__ __forceinline__ const Group& group_at(const float* base, int index) {
    return reinterpret_cast<const Group*>(base)[index];
}

// One 16-byte copy from global to shared memory that does not wait (cp.async.cg: around L1, the data is
// read once, from shared memory).
__device__ __forceinline__ void copy16_async(float* shared_dst, const float* global_src) {
#if defined(__CUDA_ARCH__)
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(global_src) : "memory");
#else
    group_at(shared_dst, 0) = group_at(global_src, 0);
#endif
}
// The copies this thread issued since the last commit are one stage.
__device__ __forceinline__ void async_commit() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// All but the newest N stages of this thread have landed (a barrier must follow before other threads read).
template <int N>
__device__ __forceinline__ void async_wait() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Rows first..first+count of a [rows, STRIDE] f32 array, columns 0..40, into rows 0..count of a shared tile,
// by the THREADS threads whose index is `tid` (consecutive threads copy consecutive 16-byte groups).
template <int STRIDE, int THREADS>
__device__ __forceinline__ void tile_in_async(float* tile, const float* src, long long first, int count, int tid) {
#pragma unroll 4
    for (int q = tid; q < count * 10; q += THREADS)
        copy16_async(tile + (q / 10) * PITCH + (q % 10) * 4, src + (first + q / 10) * STRIDE + (q % 10) * 4);
}
// Rows 0..count of a shared tile into rows first..first+count of a [rows, 40] f32 array.
template <int THREADS>
__device__ __forceinline__ void tile_out(float* dst, const float* tile, long long first, int count, int tid) {
#pragma unroll 4
    for (int q = tid; q < count * 10; q += THREADS)
        group_at(dst + (first + q / 10) * 40, q % 10) = group_at(tile + (q / 10) * PITCH, q % 10);
}

// The f32 forward of one tile of 128 rows, a thread a row, once W (ws: 40 rows), b (bs) and the tile's x (xs)
// are in shared memory at PITCH floats a row: gates = softmax(W x + b), then y = gates * x, each staged
// through xs and stored coalesced. The f32 kernel by hand of before (fwd_f32.cu) and its variant that loads
// in one round trip (fwd_onetrip.cu) share it, so their outputs are bitwise the same.
__device__ __forceinline__ void f32_tile_forward(const float* ws, const float* bs, float* xs, float* gates, float* y,
                                                 long long tile_row, int tile_rows) {
    const int r = threadIdx.x;
    float xv[40], g[40];
    if (r < tile_rows) {
#pragma unroll
        for (int j = 0; j < 10; ++j) {
            const Group v = group_at(xs + r * PITCH, j);
#pragma unroll
            for (int e = 0; e < 4; ++e) xv[4 * j + e] = v.v[e];
        }
        float z_max = -__int_as_float(0x7f800000);
#pragma unroll
        for (int i = 0; i < 40; ++i) {
            float acc = bs[i];
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group w = group_at(ws + i * PITCH, j);
#pragma unroll
                for (int e = 0; e < 4; ++e) acc = fmaf(w.v[e], xv[4 * j + e], acc);
            }
            g[i] = acc;
            z_max = fmaxf(z_max, acc);
        }
        float total = 0.0f;
#pragma unroll
        for (int i = 0; i < 40; ++i) {
            g[i] = expf(g[i] - z_max);
            total += g[i];
        }
        const float inv_total = 1.0f / total;
#pragma unroll
        for (int i = 0; i < 40; ++i) g[i] *= inv_total;
    }
    // Each output's row through the tile (this thread's row), then out in 16-byte groups by the whole block.
    auto store = [&](float* out, bool times_x) {
        __syncthreads();
        if (r < tile_rows) {
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                Group v;
#pragma unroll
                for (int e = 0; e < 4; ++e) v.v[e] = times_x ? g[4 * j + e] * xv[4 * j + e] : g[4 * j + e];
                group_at(xs + r * PITCH, j) = v;
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 10; ++k) {
            const int q = threadIdx.x + k * 128;
            if (q < tile_rows * 10) group_at(out + (tile_row + q / 10) * 40, q % 10) = group_at(xs + (q / 10) * PITCH, q % 10);
        }
    };
    store(gates, false);
    store(y, true);
}

// A launch with other than the kernel's block size, or less dynamic shared memory than it carves, stops here
// (a trap: the launch fails) instead of computing garbage.
__device__ __forceinline__ void require_launch([[maybe_unused]] unsigned threads, [[maybe_unused]] unsigned bytes) {
#if defined(__CUDA_ARCH__)
    unsigned have;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(have));
    if (have < bytes || blockDim.x != threads) __trap();
#endif
}

// ---- TF32 tensor cores: the kernels by hand's own arithmetic (examples/vsn/include/vsn_tf32.cuh, on every
// compile's include path), and one split of the variants' own.
using vsn::bits_float;
using vsn::mma_3xtf32;
using vsn::mma_tf32;
using vsn::shfl_xor;
using vsn::tf32_bits;

__device__ __forceinline__ unsigned float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    unsigned u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
#endif
}
// The 3xTF32 split: vsn::split_tf32 (each part rounded to TF32 with cvt.rna: about 5 instructions each on
// sm_90), or FAST: hi is f truncated to TF32 (one AND), lo the exact rest (one FADD), passed as f32 bits that
// the tensor core truncates to TF32 itself: about 21 bits, 2 instructions instead of about 10.
template <bool FAST = false>
__device__ __forceinline__ void split_tf32(float f, unsigned& hi, unsigned& lo) {
    if constexpr (FAST) {
        hi = float_bits(f) & 0xffffe000u;
        lo = float_bits(f - bits_float(hi));
    } else {
        vsn::split_tf32(f, hi, lo);
    }
}

}  // namespace vsn_variants
