// The VSN backward on tensor cores (3xTF32 mma.sync m16n8k8, about f32 accuracy, as in fwd_tc.cuh):
//   dz = g * (gy * x - <g, gy * x>),  grad_x = gy * g + dz W,  grad_W += dz^T x,  grad_b += sum of dz.
//
// Why: both GEMMs of the f32 kernels read their operands from shared memory once per FMA (or per few);
// here W's fragments stay in registers for the whole kernel and each dz, x value is delivered from shared
// memory once per GEMM, as a fragment.
//
// Warps work alone (as fwd_tc.cuh): each has STAGES stages of x, gates and grad_y for a warp tile of 32 rows
// (pitch 44) and loops over every (gridDim.x WARPS)-th warp tile, the next STAGES - 1 in flight (cp.async).
// Per tile:
//   A. a lane a row: dz over the gates (in place), gy * g over grad_y (in place);
//   B. grad_x = gy * g + dz W: 2 m-tiles (rows) x 5 n-tiles x 5 k-steps, A = dz, B[i][j] = W[i][j] from
//      registers, C starting from gy * g; the result over grad_y, then out;
//   C. grad_W += dz^T x: M = 40 inputs i of dz (3 m-tiles, rows 40..47 zero), N = 40 columns k of x, K = the
//      tile's 32 rows (4 k-steps); A[i][r] = dz[r][i], B[r][k] = x[r][k], rows past the tile's count zero in
//      both (stale shared memory may hold anything). grad_b rides along as a sixth n-tile of B whose column
//      40 is all ones: C[i][40] = sum over rows of dz[r][i]. The 60 + 12 accumulators of a lane stay in
//      registers over all tiles; the warps of a block add theirs in shared memory at the end, and the block
//      adds its 1640 sums with atomics, once.
// FAST_SPLIT splits dz and x by truncation (see split_tf32 in vsn_variant_common.cuh); W's is always rounded.
#pragma once
#include "vsn_variant_common.cuh"

namespace vsn_variants {

template <int WARPS, int STAGES>
struct BwdTc {
    static constexpr int buffer = 32 * PITCH;  // floats of one [32, 40] buffer
    static constexpr int stage_floats = 3 * buffer;  // x, gates (then dz), grad_y (then gy * g, then grad_x)
    static constexpr int warp_floats = STAGES * stage_floats;
    static constexpr int shared_bytes = WARPS * warp_floats * 4;
    static_assert(1640 <= warp_floats, "the sums of each warp fit in its own stages");
};

template <int WARPS, int STAGES, bool FAST_SPLIT = false>
__device__ __forceinline__ void bwd_tc(const float* __restrict__ window, const float* __restrict__ W,
                                       const float* __restrict__ gates, const float* __restrict__ grad_y,
                                       float* __restrict__ grad_x, float* __restrict__ grad_W,
                                       float* __restrict__ grad_b, long long B, long long K) {
    using C = BwdTc<WARPS, STAGES>;
    constexpr int P = PITCH, N = C::buffer;
    require_launch(32 * WARPS, C::shared_bytes);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    float* const mine = reinterpret_cast<float*>(vsn_smem) + warp * C::warp_floats;
    const long long rows = B * K;
    const long long tiles = (rows + 31) / 32;
    const long long first = static_cast<long long>(blockIdx.x) * WARPS + warp;
    const long long step = static_cast<long long>(gridDim.x) * WARPS;
    auto count_of = [&](long long tile) { return rows - tile * 32 < 32 ? static_cast<int>(rows - tile * 32) : 32; };
    auto load_stage = [&](float* st, long long tile) {
        const int count = count_of(tile);
        tile_in_async<56, 32>(st, window, tile * 32, count, lane);
        tile_in_async<40, 32>(st + N, gates, tile * 32, count, lane);
        tile_in_async<40, 32>(st + 2 * N, grad_y, tile * 32, count, lane);
    };

#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        const long long tile = first + s * step;
        if (tile < tiles) load_stage(mine + s * C::stage_floats, tile);
        async_commit();
    }
    // B of grad_x = dz W, n-tile nt, k-step ks: b0 = W[8 ks + t][8 nt + g], b1 = W[8 ks + t + 4][8 nt + g].
    unsigned wh[5][5][2], wl[5][5][2];
#pragma unroll
    for (int nt = 0; nt < 5; ++nt)
#pragma unroll
        for (int ks = 0; ks < 5; ++ks)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                split_tf32(W[(8 * ks + t + 4 * h) * 40 + 8 * nt + g], wh[nt][ks][h], wl[nt][ks][h]);
    float dw[3][5][4] = {};  // grad_W[16 mt + g (+ 8)][8 nt + 2 t (+ 1)], as C fragments
    float db[3][4] = {};  // column 40 of the ones n-tile: grad_b[16 mt + g (+ 8)] in the lanes of t = 0

    int stage = 0;
    for (long long tile = first; tile < tiles; tile += step) {
        float* const xs = mine + stage * C::stage_floats;
        float* const gs = xs + N;
        float* const ys = gs + N;
        const int count = count_of(tile);
        async_wait<STAGES - 1>();
        __syncwarp();
        {  // A: lane = row (rows past `count`: stale data, computed, masked in C, never stored)
            float* const xr = xs + lane * P;
            float* const gr = gs + lane * P;
            float* const yr = ys + lane * P;
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = group_at(xr, j), gv = group_at(gr, j), yv = group_at(yr, j);
#pragma unroll
                for (int e = 0; e < 4; ++e) dot = fmaf(gv.v[e], yv.v[e] * xv.v[e], dot);
            }
            asm volatile("" ::: "memory");  // load the row again rather than keep 120 registers of it
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = group_at(xr, j), gv = group_at(gr, j), yv = group_at(yr, j);
                Group d, init;
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    d.v[e] = gv.v[e] * (yv.v[e] * xv.v[e] - dot);
                    init.v[e] = yv.v[e] * gv.v[e];
                }
                group_at(gr, j) = d;
                group_at(yr, j) = init;
            }
        }
        __syncwarp();
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {  // B
            float c[5][4];
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float* const at = ys + (16 * mt + g + 8 * h) * P + 8 * nt + 2 * t;
                    c[nt][2 * h] = at[0];
                    c[nt][2 * h + 1] = at[1];
                }
#pragma unroll
            for (int ks = 0; ks < 5; ++ks) {
                const float* const top = gs + (16 * mt + g) * P + 8 * ks + t;
                const float a[4] = {top[0], top[8 * P], top[4], top[8 * P + 4]};
                unsigned ah[4], al[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) split_tf32<FAST_SPLIT>(a[i], ah[i], al[i]);
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) mma_3xtf32(c[nt], ah, al, wh[nt][ks], wl[nt][ks]);
            }
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float* const at = ys + (16 * mt + g + 8 * h) * P + 8 * nt + 2 * t;  // this lane's own elements
                    at[0] = c[nt][2 * h];
                    at[1] = c[nt][2 * h + 1];
                }
        }
#pragma unroll 1
        for (int ks = 0; ks < 4; ++ks) {  // C: rows 8 ks .. 8 ks + 7 of the tile
            const int ra = 8 * ks + t, rb = ra + 4;  // the rows of this lane's k indices
            const bool va = ra < count, vb = rb < count;
            unsigned xh[5][2], xl[5][2];
#pragma unroll
            for (int nt = 0; nt < 5; ++nt) {
                split_tf32<FAST_SPLIT>(va ? xs[ra * P + 8 * nt + g] : 0.0f, xh[nt][0], xl[nt][0]);
                split_tf32<FAST_SPLIT>(vb ? xs[rb * P + 8 * nt + g] : 0.0f, xh[nt][1], xl[nt][1]);
            }
            const unsigned ones[2] = {va && g == 0 ? 0x3f800000u : 0u, vb && g == 0 ? 0x3f800000u : 0u};  // 1.0f
#pragma unroll
            for (int mt = 0; mt < 3; ++mt) {
                const int i0 = 16 * mt + g, i1 = i0 + 8;  // i0 < 40 always; i1 < 40 but in the last m-tile
                const float a[4] = {va ? gs[ra * P + i0] : 0.0f, va && i1 < 40 ? gs[ra * P + i1] : 0.0f,
                                    vb ? gs[rb * P + i0] : 0.0f, vb && i1 < 40 ? gs[rb * P + i1] : 0.0f};
                unsigned ah[4], al[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) split_tf32<FAST_SPLIT>(a[i], ah[i], al[i]);
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) mma_3xtf32(dw[mt][nt], ah, al, xh[nt], xl[nt]);
                mma_tf32(db[mt], al, ones);  // ones are exact in TF32: no low part
                mma_tf32(db[mt], ah, ones);
            }
        }
        __syncwarp();
        tile_out<32>(grad_x, ys, tile * 32, count, lane);
        __syncwarp();  // the stage is read out: it takes the tile STAGES further on
        const long long next = tile + STAGES * step;
        if (next < tiles) load_stage(xs, next);
        async_commit();
        stage = stage + 1 == STAGES ? 0 : stage + 1;
    }

    async_wait<0>();
    __syncthreads();
    float* const sums = reinterpret_cast<float*>(vsn_smem);  // 1640 a warp: grad_W, then grad_b
    float* const own = sums + warp * 1640;
#pragma unroll
    for (int mt = 0; mt < 3; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int i = 16 * mt + g + 8 * (e / 2);
            if (i < 40) {
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) own[i * 40 + 8 * nt + 2 * t + e % 2] = dw[mt][nt][e];
                if (t == 0 && e % 2 == 0) own[1600 + i] = db[mt][e];
            }
        }
    __syncthreads();
    for (int o = threadIdx.x; o < 1640; o += 32 * WARPS) {
        float sum = sums[o];
#pragma unroll
        for (int w = 1; w < WARPS; ++w) sum += sums[w * 1640 + o];
        atomicAdd(o < 1600 ? &grad_W[o] : &grad_b[o - 1600], sum);
    }
}

}  // namespace vsn_variants
