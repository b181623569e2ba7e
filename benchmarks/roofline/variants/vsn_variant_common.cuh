// Helpers every VSN kernel variant of this folder uses: 16-byte groups, cp.async copies of [rows, 40] f32
// tiles into shared memory (pitch 44 floats: 11 groups of 16 bytes, an odd number, so that a thread per row
// reading its row's groups meets no bank conflict), a guard on the dynamic shared memory the launch gave,
// and the TF32 tensor-core pieces (round to TF32, m16n8k8 mma). On the host (tests through
// tests/host/cuda_block_shim.h and host_shim.h beside this file, no __CUDA_ARCH__) each device-only piece has
// a plain C++ equivalent: copies happen at once, waits do nothing, the mma is emulated across the warp.
#pragma once

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

// A launch with other than the kernel's block size, or less dynamic shared memory than it carves, stops here
// (a trap: the launch fails) instead of computing garbage.
__device__ __forceinline__ void require_launch([[maybe_unused]] unsigned threads, [[maybe_unused]] unsigned bytes) {
#if defined(__CUDA_ARCH__)
    unsigned have;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(have));
    if (have < bytes || blockDim.x != threads) __trap();
#endif
}

// ---- TF32 tensor cores (mma.sync m16n8k8, row.col, f32 accumulate) ----------------------------------
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8" .tf32), g = lane / 4, t = lane % 4:
//   A 16x8 (row major): a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//   B 8x8 (column major): b0 = B[t][g], b1 = B[t+4][g]
//   C 16x8: c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]

__device__ __forceinline__ float bits_float(unsigned u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
#endif
}
__device__ __forceinline__ unsigned float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    unsigned u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
#endif
}
// `f` rounded to TF32 (10 mantissa bits, to nearest, ties away from zero), as the bits of an f32.
__device__ __forceinline__ unsigned tf32_bits(float f) {
#if defined(__CUDA_ARCH__)
    unsigned u;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(f));
    return u;
#else
    unsigned u;
    __builtin_memcpy(&u, &f, sizeof u);
    return (u + 0x1000u) & 0xffffe000u;  // finite inputs only, which is all the kernels give it
#endif
}
// The 3xTF32 split: f = hi + lo to about 22 bits, each part rounded to TF32 (cvt.rna: about 5 instructions
// each on sm_90). FAST: hi is f truncated to TF32 (one AND), lo the exact rest (one FADD), passed as f32 bits
// that the tensor core truncates to TF32 itself: about 21 bits, 2 instructions instead of about 10.
template <bool FAST = false>
__device__ __forceinline__ void split_tf32(float f, unsigned& hi, unsigned& lo) {
    if constexpr (FAST) {
        hi = float_bits(f) & 0xffffe000u;
        lo = float_bits(f - bits_float(hi));
    } else {
        hi = tf32_bits(f);
        lo = tf32_bits(f - bits_float(hi));
    }
}

#if !defined(__CUDA_ARCH__)
inline void vsn_variants_host_mma(float c[4], const unsigned a[4], const unsigned b[2]);  // host_shim.h
#endif

// c += A * B for one m16n8k8 tile, the whole warp together.
__device__ __forceinline__ void mma_tf32(float c[4], const unsigned a[4], const unsigned b[2]) {
#if defined(__CUDA_ARCH__)
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    vsn_variants_host_mma(c, a, b);
#endif
}
// c += A * B to about f32 accuracy: the three products of the split that matter, the small ones first.
__device__ __forceinline__ void mma_3xtf32(float c[4], const unsigned ah[4], const unsigned al[4],
                                           const unsigned bh[2], const unsigned bl[2]) {
    mma_tf32(c, al, bh);
    mma_tf32(c, ah, bl);
    mma_tf32(c, ah, bh);
}

__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

}  // namespace vsn_variants
