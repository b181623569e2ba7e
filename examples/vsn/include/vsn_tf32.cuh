// The VSN kernels' tensor-core arithmetic: f32 products on TF32 tensor cores to about f32 accuracy (3xTF32).
//
// A project header (pyproject.toml: [tool.layoutgen] include = ["examples/vsn/include"]): the kernel templates
// include it in their preamble, and the kernels by hand (benchmarks/roofline/vsn_*_hand.cu) include the same,
// so the two differ in how they address memory only. Nothing here touches memory: it is arithmetic on
// registers, one warp's mma.sync m16n8k8 at a time.
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8" with .tf32), g = lane / 4, t = lane % 4:
//   A 16x8 (row major):    a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//   B 8x8 (column major):  b0 = B[t][g], b1 = B[t+4][g]
//   C 16x8:                c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
// On the host (layoutgen/include/lg/host/runtime.h, no __CUDA_ARCH__) the mma is the runtime's emulation of the same
// fragments, host_mma_m16n8k8_tf32; rounding to TF32 is plain C++ there.
#pragma once

#if !defined(__CUDA_ARCH__)
void host_mma_m16n8k8_tf32(float c[4], const unsigned a[4], const unsigned b[2]);  // the host harness's
#elif __CUDA_ARCH__ < 800
#error "vsn_tf32.cuh: mma.sync m16n8k8 with TF32 needs sm_80 or later"
#endif

namespace vsn {

__device__ __forceinline__ float bits_float(unsigned u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
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

// The 3xTF32 split: f = hi + lo to about 22 bits, each part rounded to TF32.
__device__ __forceinline__ void split_tf32(float f, unsigned& hi, unsigned& lo) {
    hi = tf32_bits(f);
    lo = tf32_bits(f - bits_float(hi));
}

// c += A * B for one m16n8k8 tile, the whole warp together (every lane, converged: mma.sync.aligned).
__device__ __forceinline__ void mma_tf32(float c[4], const unsigned a[4], const unsigned b[2]) {
#if defined(__CUDA_ARCH__)
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    host_mma_m16n8k8_tf32(c, a, b);
#endif
}

// c += A * B to about f32 accuracy: the three products of the split that matter, the small ones first (the
// lo * lo term, 2^-22 relative, is left out).
__device__ __forceinline__ void mma_3xtf32(float c[4], const unsigned ah[4], const unsigned al[4],
                                           const unsigned bh[2], const unsigned bl[2]) {
    mma_tf32(c, al, bh);
    mma_tf32(c, ah, bl);
    mma_tf32(c, ah, bh);
}

// A butterfly step of a sum or a max across the lanes of a warp.
__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

}  // namespace vsn
