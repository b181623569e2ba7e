// The VSN forward in f32 with R rows a thread (register blocking). gates = softmax(W x + b), y = gates * x,
// x the first 40 of 56 floats a row of the window, gates and y 40 floats a row.
//
// Why: the kernel by hand loads one W value from shared memory (a broadcast LDS.128, whose 16 bytes still
// reach every lane: 512 bytes of shared-memory bandwidth a warp) per FMA of one row, so shared memory
// (128 bytes a clock an SM, a quarter of the FMA rate) bounds it. Here each W group loaded feeds the FMAs of
// R rows: 1/R of the shared traffic. The loop runs over groups of 4 inputs outermost (the 4 x values of each
// row then sit in registers), over the 40 outputs inside, so a thread holds 40 R accumulators and 4 R x
// values, not all of x: about 48 R + 20 registers. Every logit is b[i] + W[i][0] x[0] + ... + W[i][39] x[39]
// fused in that order, as by hand, so gates and y are bitwise those of the kernel by hand.
//
// Tiles of R * T rows; thread t owns rows t, t + T, ..., t + (R - 1) T of a tile (consecutive lanes read
// consecutive rows: no bank conflict). All global loads of a stage are cp.async copies issued together, W and
// b with the first stage (one round trip, where the kernel by hand waits for W and b before issuing x).
// Resident blocks loop over every gridDim.x-th tile with STAGES tiles of x in flight: STAGES = 1 and one
// block a tile is Grid.tiles; STAGES = 2 on a persistent grid overlaps the next tile's load with this one.
// y goes out through the tile of x (each thread overwrites its own rows), then the gates through the same tile.
#pragma once
#include "vsn_variant_common.cuh"

namespace vsn_variants {

template <int R, int T, int STAGES>
struct FwdRows {
    static constexpr int tile = R * T;  // rows a tile
    static constexpr int w_bytes = 40 * PITCH * 4;  // W, rows as in global memory
    static constexpr int b_bytes = 176;  // b, 40 floats padded to a 16-byte boundary
    static constexpr int x_bytes = tile * PITCH * 4;  // one stage: a tile of x, then of y, then of gates
    static constexpr int shared_bytes = w_bytes + b_bytes + STAGES * x_bytes;
};

template <int R, int T, int STAGES>
__device__ __forceinline__ void fwd_rows(const float* __restrict__ window, const float* __restrict__ W,
                                         const float* __restrict__ b, float* __restrict__ gates,
                                         float* __restrict__ y, long long B, long long K) {
    using C = FwdRows<R, T, STAGES>;
    unsigned char* const smem = vsn_smem;
    float* const ws = reinterpret_cast<float*>(smem);
    float* const bs = reinterpret_cast<float*>(smem + C::w_bytes);
    float* const xs0 = reinterpret_cast<float*>(smem + C::w_bytes + C::b_bytes);
    require_launch(T, C::shared_bytes);
    const int tid = threadIdx.x;
    const long long rows = B * K;
    const long long tiles = (rows + C::tile - 1) / C::tile;
    auto count_of = [&](long long tile) {
        return rows - tile * C::tile < C::tile ? static_cast<int>(rows - tile * C::tile) : C::tile;
    };

    for (int q = tid; q < 400; q += T) copy16_async(ws + (q / 10) * PITCH + (q % 10) * 4, W + q * 4);
    if (tid < 10) copy16_async(bs + 4 * tid, b + 4 * tid);
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        const long long tile = blockIdx.x + static_cast<long long>(s) * gridDim.x;
        if (tile < tiles) tile_in_async<56, T>(xs0 + s * C::tile * PITCH, window, tile * C::tile, count_of(tile), tid);
        async_commit();  // always: every thread counts the same stages
    }

    int stage = 0;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        float* const xs = xs0 + stage * C::tile * PITCH;
        const long long row0 = tile * C::tile;
        const int count = count_of(tile);
        async_wait<STAGES - 1>();
        __syncthreads();

        float acc[R][40];
#pragma unroll
        for (int j = 0; j < 10; ++j) {
            const Group bv = group_at(bs, j);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[r][4 * j + e] = bv.v[e];
        }
#pragma unroll 1
        for (int c = 0; c < 10; ++c) {
            float xr[R][4];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const Group v = group_at(xs + (tid + r * T) * PITCH, c);
#pragma unroll
                for (int e = 0; e < 4; ++e) xr[r][e] = v.v[e];
            }
#pragma unroll
            for (int i = 0; i < 40; ++i) {
                const Group w = group_at(ws + i * PITCH, c);  // the same address in every thread: a broadcast
#pragma unroll
                for (int e = 0; e < 4; ++e)
#pragma unroll
                    for (int r = 0; r < R; ++r) acc[r][i] = fmaf(w.v[e], xr[r][e], acc[r][i]);
            }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {  // softmax, with the kernel by hand's operations in its order
            float z_max = -__int_as_float(0x7f800000);
#pragma unroll
            for (int i = 0; i < 40; ++i) z_max = fmaxf(z_max, acc[r][i]);
            float total = 0.0f;
#pragma unroll
            for (int i = 0; i < 40; ++i) {
                acc[r][i] = expf(acc[r][i] - z_max);
                total += acc[r][i];
            }
            const float inv_total = 1.0f / total;
#pragma unroll
            for (int i = 0; i < 40; ++i) acc[r][i] *= inv_total;
        }
        // Rows past `count` hold stale data: computed, never stored.
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                Group& v = group_at(xs + (tid + r * T) * PITCH, j);
                Group out = v;
#pragma unroll
                for (int e = 0; e < 4; ++e) out.v[e] = acc[r][4 * j + e] * out.v[e];
                v = out;
            }
        __syncthreads();
        tile_out<T>(y, xs, row0, count, tid);
        __syncthreads();
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                Group out;
#pragma unroll
                for (int e = 0; e < 4; ++e) out.v[e] = acc[r][4 * j + e];
                group_at(xs + (tid + r * T) * PITCH, j) = out;
            }
        __syncthreads();
        tile_out<T>(gates, xs, row0, count, tid);
        __syncthreads();  // the tile is read out: it takes the stage after next
        const long long next = tile + static_cast<long long>(STAGES) * gridDim.x;
        if (next < tiles) tile_in_async<56, T>(xs, window, next * C::tile, count_of(next), tid);
        async_commit();
        stage = stage + 1 == STAGES ? 0 : stage + 1;
    }
}

}  // namespace vsn_variants
