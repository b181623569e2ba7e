// What the variants of this folder need on the host beyond tests/host/cuda_block_shim.h: the warp's
// m16n8k8 TF32 mma, emulated. Every lane offers its fragments, the warp meets at its barrier, each lane
// computes its four elements of C from the whole A and B (the fragment layout of vsn_variant_common.cuh,
// read backwards), and the warp meets again before the buffers are reused. Like the tensor core, it reads
// only the TF32 bits of each operand (the low 13 bits of an f32 are ignored). The products of two TF32 values
// are exact in f32; only the order of the additions differs from the tensor core's.
#pragma once
#include "cuda_block_shim.h"

namespace vsn_variants {
inline unsigned lg_mma_a[1024][4], lg_mma_b[1024][2];

inline float host_bits_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

inline void vsn_variants_host_mma(float c[4], const unsigned a[4], const unsigned b[2]) {
    const unsigned t = threadIdx.x, warp = t & ~31u, lane = t & 31u;
    for (int i = 0; i < 4; ++i) lg_mma_a[t][i] = a[i] & 0xffffe000u;
    for (int i = 0; i < 2; ++i) lg_mma_b[t][i] = b[i] & 0xffffe000u;
    __syncwarp();
    // A[row][k] is held by lane 4 * (row % 8) + k % 4, in register (row >= 8) + 2 * (k >= 4).
    auto A = [&](unsigned row, unsigned k) {
        return host_bits_float(lg_mma_a[warp + 4 * (row % 8) + k % 4][(row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)]);
    };
    // B[k][n] is held by lane 4 * n + k % 4, in register k >= 4.
    auto B = [&](unsigned k, unsigned n) { return host_bits_float(lg_mma_b[warp + 4 * n + k % 4][k >= 4 ? 1 : 0]); };
    const unsigned g = lane / 4, q = lane % 4;
    for (int i = 0; i < 4; ++i) {
        const unsigned row = g + (i >= 2 ? 8 : 0), col = 2 * q + (i & 1);
        float sum = c[i];
        for (unsigned k = 0; k < 8; ++k) sum += A(row, k) * B(k, col);
        c[i] = sum;
    }
    __syncwarp();
}
}  // namespace vsn_variants
