// The VSN forward on tensor cores: z = x W^T + b as mma.sync m16n8k8 TF32 with the 3xTF32 split (x = xh + xl,
// W = Wh + Wl, z += xl Wh + xh Wl + xh Wh: about f32 accuracy, the xl Wl term, 2^-22 relative, left out).
//
// Why: the f32 kernels deliver W from shared memory to every lane for every row (or every R rows); here W
// sits in registers for the whole kernel (its 3xTF32 fragments: 100 registers a lane) and shared memory
// delivers each x value once, as an A fragment. What is left is the copy traffic itself.
//
// Warps work alone: each has STAGES buffers of 32 rows of x (pitch 44: the A fragment loads, rows g and
// columns t of a warp, hit 32 different banks) and one of gates, and loops over every (gridDim.x WARPS)-th
// warp tile of 32 rows with the next STAGES - 1 tiles in flight (cp.async); only __syncwarp() orders them.
// Per tile: two m-tiles of 16 rows x 5 n-tiles of 8 outputs x 5 k-steps of 8 inputs, 3 mma each (150). The
// softmax runs on the accumulators: row g's 40 logits are in lanes 4g..4g+3 (2 of each n-tile), so its
// max and sum take two xor shuffles. gates go out through the gates buffer, y = gates * x over x in place.
// Accuracy differs from the f32 kernels (not bitwise); the tolerances are the same (1e-5 relative, norm).
// FAST_SPLIT splits x by truncation (see split_tf32 in vsn_variant_common.cuh); W's split is always rounded.
#pragma once
#include "vsn_variant_common.cuh"

namespace vsn_variants {

struct alignas(8) Pair { float v[2]; };

template <int WARPS, int STAGES>
struct FwdTc {
    static constexpr int rows = 32;  // a warp tile
    static constexpr int buffer = rows * PITCH;  // floats of one buffer
    static constexpr int warp_floats = (STAGES + 1) * buffer;
    static constexpr int shared_bytes = WARPS * warp_floats * 4;
};

template <int WARPS, int STAGES, bool FAST_SPLIT = false>
__device__ __forceinline__ void fwd_tc(const float* __restrict__ window, const float* __restrict__ W,
                                       const float* __restrict__ b, float* __restrict__ gates,
                                       float* __restrict__ y, long long B, long long K) {
    using C = FwdTc<WARPS, STAGES>;
    require_launch(32 * WARPS, C::shared_bytes);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    float* const mine = reinterpret_cast<float*>(vsn_smem) + warp * C::warp_floats;
    float* const gs = mine + STAGES * C::buffer;
    const long long rows = B * K;
    const long long tiles = (rows + 31) / 32;
    const long long first = static_cast<long long>(blockIdx.x) * WARPS + warp;
    const long long step = static_cast<long long>(gridDim.x) * WARPS;
    auto count_of = [&](long long tile) { return rows - tile * 32 < 32 ? static_cast<int>(rows - tile * 32) : 32; };

#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        const long long tile = first + s * step;
        if (tile < tiles) tile_in_async<56, 32>(mine + s * C::buffer, window, tile * 32, count_of(tile), lane);
        async_commit();
    }
    // B[k][n] = W[n][k] of n-tile nt, k-step ks: b0 = W[8 nt + g][8 ks + t], b1 = W[8 nt + g][8 ks + t + 4].
    unsigned wh[5][5][2], wl[5][5][2];
#pragma unroll
    for (int nt = 0; nt < 5; ++nt)
#pragma unroll
        for (int ks = 0; ks < 5; ++ks)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                split_tf32(W[(8 * nt + g) * 40 + 8 * ks + t + 4 * h], wh[nt][ks][h], wl[nt][ks][h]);
    float bias[5][2];  // columns 8 nt + 2 t and + 1: where this lane's accumulators are
#pragma unroll
    for (int nt = 0; nt < 5; ++nt) {
        bias[nt][0] = b[8 * nt + 2 * t];
        bias[nt][1] = b[8 * nt + 2 * t + 1];
    }

    int stage = 0;
    for (long long tile = first; tile < tiles; tile += step) {
        float* const xs = mine + stage * C::buffer;
        const long long row0 = tile * 32;
        const int count = count_of(tile);
        async_wait<STAGES - 1>();
        __syncwarp();
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {  // rows 16 mt + g (c0, c1) and 16 mt + g + 8 (c2, c3)
            float c[5][4];
#pragma unroll
            for (int nt = 0; nt < 5; ++nt) {
                c[nt][0] = c[nt][2] = bias[nt][0];
                c[nt][1] = c[nt][3] = bias[nt][1];
            }
#pragma unroll
            for (int ks = 0; ks < 5; ++ks) {
                const float* const top = xs + (16 * mt + g) * PITCH + 8 * ks + t;
                const float* const low = top + 8 * PITCH;
                const float a[4] = {top[0], low[0], top[4], low[4]};  // A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]
                unsigned ah[4], al[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) split_tf32<FAST_SPLIT>(a[i], ah[i], al[i]);
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) mma_3xtf32(c[nt], ah, al, wh[nt][ks], wl[nt][ks]);
            }
            float m[2] = {-__int_as_float(0x7f800000), -__int_as_float(0x7f800000)};
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) m[h] = fmaxf(m[h], fmaxf(c[nt][2 * h], c[nt][2 * h + 1]));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                m[h] = fmaxf(m[h], shfl_xor(m[h], 1));
                m[h] = fmaxf(m[h], shfl_xor(m[h], 2));
            }
            float total[2] = {0.0f, 0.0f};
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    c[nt][i] = expf(c[nt][i] - m[i / 2]);
                    total[i / 2] += c[nt][i];
                }
            float inv[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                total[h] += shfl_xor(total[h], 1);
                total[h] += shfl_xor(total[h], 2);
                inv[h] = 1.0f / total[h];
            }
            __syncwarp();  // every lane has read its A fragments of these rows: y may overwrite them
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int at = (16 * mt + g + 8 * h) * PITCH + 8 * nt + 2 * t;
                    Pair gate, out;
                    Pair& x = *reinterpret_cast<Pair*>(xs + at);
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        gate.v[e] = c[nt][2 * h + e] * inv[h];
                        out.v[e] = gate.v[e] * x.v[e];
                    }
                    *reinterpret_cast<Pair*>(gs + at) = gate;
                    x = out;
                }
        }
        __syncwarp();
        tile_out<32>(y, xs, row0, count, lane);
        tile_out<32>(gates, gs, row0, count, lane);
        __syncwarp();  // both buffers are read out
        const long long next = tile + STAGES * step;
        if (next < tiles) tile_in_async<56, 32>(xs, window, next * 32, count_of(next), lane);
        async_commit();
        stage = stage + 1 == STAGES ? 0 : stage + 1;
    }
}

}  // namespace vsn_variants
