// The VSN backward in f32, its two GEMMs register-blocked and split over the block's threads.
//   dz = g * (gy * x - <g, gy * x>),  grad_x = gy * g + dz W,  grad_W += dz^T x,  grad_b += sum of dz.
//
// Why: the kernel by hand computes grad_x a thread a row (one W value from shared memory, delivered to every
// lane, per FMA: shared-memory bound) and grad_W with 100 of its 128 threads (4x4 blocks: 8 floats loaded per
// 16 FMAs) while the other 28 wait. Here a tile of TR rows is worked on by T = 5 TR / 4 threads in three
// phases, each shared-memory-light:
//   A. a thread a row (TR threads): dz into the tile of gates, gy * g into the tile of grad_y, in place;
//   B. grad_x: thread (cg, rq) owns 4 rows (rq + k TR / 4) x 8 columns (8 cg ..): per 4 inputs i it loads
//      4 groups of dz and 8 of W for 128 FMAs (0.375 floats a FMA, by hand 1); the columns of a warp are
//      the same (a broadcast), its rows consecutive (no bank conflict);
//   C. grad_W: G = T / 25 groups of 25 threads, each thread an 8x8 block of grad_W over every G-th row of the
//      tile (16 floats loaded per 64 FMAs); the T - 25 G threads left sum grad_b. The 64 sums of each thread
//      stay in registers over all the block's tiles; the G partial blocks are added in shared memory at the
//      end, and the block adds its 1600 + 40 sums to grad_W and grad_b with atomics, once.
// grad_x is gy * g plus dz[i] W[i][j] over i = 0..39 fused in that order, as by hand: bitwise the same.
// Resident blocks loop over every gridDim.x-th tile, x, gates and grad_y of the next STAGES - 1 tiles in
// flight (cp.async); STAGES = 1 loads one tile at a time (W with the first).
#pragma once
#include "vsn_variant_common.cuh"

namespace vsn_variants {

template <int TR, int STAGES>
struct BwdSplit {
    static constexpr int tile = TR;
    static constexpr int quads = TR / 4;  // row quads: threads of one column group in phase B
    static constexpr int threads = 5 * quads;  // 5 column groups of 8
    static constexpr int groups = threads / 25;  // grad_W: groups of 25 threads (5 x 5 blocks of 8 x 8)
    static constexpr int db_threads = threads - 25 * groups;
    static constexpr int db_cols = db_threads > 0 ? 40 / db_threads : 0;
    static_assert(TR % 4 == 0 && db_threads > 0 && 40 % db_threads == 0 && db_cols % 4 == 0, "tile size");
    static constexpr int w_bytes = 40 * PITCH * 4;
    static constexpr int t_bytes = TR * PITCH * 4;  // one tile of [TR, 40] in shared memory
    static constexpr int stage_bytes = 3 * t_bytes;  // x, gates (then dz), grad_y (then grad_x)
    static constexpr int shared_bytes = w_bytes + STAGES * stage_bytes;
    static_assert(groups * 1600 * 4 <= STAGES * stage_bytes, "the reduction of grad_W reuses the stages");
};

template <int TR, int STAGES>
__device__ __forceinline__ void bwd_split(const float* __restrict__ window, const float* __restrict__ W,
                                          const float* __restrict__ gates, const float* __restrict__ grad_y,
                                          float* __restrict__ grad_x, float* __restrict__ grad_W,
                                          float* __restrict__ grad_b, long long B, long long K) {
    using C = BwdSplit<TR, STAGES>;
    constexpr int T = C::threads, Q = C::quads, G = C::groups;
    float* const ws = reinterpret_cast<float*>(vsn_smem);
    float* const stages = reinterpret_cast<float*>(vsn_smem + C::w_bytes);
    require_launch(T, C::shared_bytes);
    const int tid = threadIdx.x;
    const long long rows = B * K;
    const long long tiles = (rows + TR - 1) / TR;
    auto count_of = [&](long long tile) {
        return rows - tile * TR < TR ? static_cast<int>(rows - tile * TR) : TR;
    };
    auto load_stage = [&](float* st, long long tile) {
        const long long first = tile * TR;
        const int count = count_of(tile);
        tile_in_async<56, T>(st, window, first, count, tid);
        tile_in_async<40, T>(st + TR * PITCH, gates, first, count, tid);
        tile_in_async<40, T>(st + 2 * TR * PITCH, grad_y, first, count, tid);
    };

    for (int q = tid; q < 400; q += T) copy16_async(ws + (q / 10) * PITCH + (q % 10) * 4, W + q * 4);
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        const long long tile = blockIdx.x + static_cast<long long>(s) * gridDim.x;
        if (tile < tiles) load_stage(stages + s * 3 * TR * PITCH, tile);
        async_commit();
    }

    // Phase C's roles, fixed for the kernel.
    const int grp = tid / 25, bi = (tid % 25) / 5, bk = tid % 5;  // grad_W block rows 8 bi.., columns 8 bk..
    const int db0 = (tid - 25 * G) * C::db_cols;  // grad_b columns of a thread past the groups
    float dw[8][8] = {};
    float db[C::db_cols] = {};
    // Phase B's: 4 rows, 8 columns.
    const int cg = tid / Q, rq = tid % Q;

    int stage = 0;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        float* const xs = stages + stage * 3 * TR * PITCH;
        float* const gs = xs + TR * PITCH;  // gates, then dz
        float* const ys = gs + TR * PITCH;  // grad_y, then gy * g, then grad_x
        const long long row0 = tile * TR;
        const int count = count_of(tile);
        async_wait<STAGES - 1>();
        __syncthreads();
        if (tid < TR) {  // A (rows past `count` hold stale data: computed, never used)
            // Two passes over the row (the second recomputes gy * x) rather than 40 registers of it.
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = group_at(xs + tid * PITCH, j), gv = group_at(gs + tid * PITCH, j);
                const Group yv = group_at(ys + tid * PITCH, j);
#pragma unroll
                for (int e = 0; e < 4; ++e) dot = fmaf(gv.v[e], yv.v[e] * xv.v[e], dot);
            }
            asm volatile("" ::: "memory");  // load the row again rather than keep 120 registers of it
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = group_at(xs + tid * PITCH, j), gv = group_at(gs + tid * PITCH, j);
                const Group yv = group_at(ys + tid * PITCH, j);
                Group d, init;
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    d.v[e] = gv.v[e] * (yv.v[e] * xv.v[e] - dot);
                    init.v[e] = yv.v[e] * gv.v[e];
                }
                group_at(gs + tid * PITCH, j) = d;
                group_at(ys + tid * PITCH, j) = init;
            }
        }
        __syncthreads();
        {  // B
            float acc[4][8];
#pragma unroll
            for (int k = 0; k < 4; ++k)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const Group v = group_at(ys + (rq + k * Q) * PITCH, 2 * cg + h);
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[k][4 * h + e] = v.v[e];
                }
#pragma unroll 1
            for (int c = 0; c < 10; ++c) {
                float d[4][4];
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const Group v = group_at(gs + (rq + k * Q) * PITCH, c);
#pragma unroll
                    for (int e = 0; e < 4; ++e) d[k][e] = v.v[e];
                }
#pragma unroll
                for (int ii = 0; ii < 4; ++ii) {
                    const Group w0 = group_at(ws + (4 * c + ii) * PITCH, 2 * cg);
                    const Group w1 = group_at(ws + (4 * c + ii) * PITCH, 2 * cg + 1);
#pragma unroll
                    for (int k = 0; k < 4; ++k)
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            acc[k][e] = fmaf(w0.v[e], d[k][ii], acc[k][e]);
                            acc[k][4 + e] = fmaf(w1.v[e], d[k][ii], acc[k][4 + e]);
                        }
                }
            }
#pragma unroll
            for (int k = 0; k < 4; ++k)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    Group v;
#pragma unroll
                    for (int e = 0; e < 4; ++e) v.v[e] = acc[k][4 * h + e];
                    group_at(ys + (rq + k * Q) * PITCH, 2 * cg + h) = v;
                }
        }
        __syncthreads();
        tile_out<T>(grad_x, ys, row0, count, tid);
        if (tid < 25 * G) {  // C
#pragma unroll 1
            for (int r = grp; r < count; r += G) {
                const Group d0 = group_at(gs + r * PITCH, 2 * bi), d1 = group_at(gs + r * PITCH, 2 * bi + 1);
                const Group x0 = group_at(xs + r * PITCH, 2 * bk), x1 = group_at(xs + r * PITCH, 2 * bk + 1);
                const float d[8] = {d0.v[0], d0.v[1], d0.v[2], d0.v[3], d1.v[0], d1.v[1], d1.v[2], d1.v[3]};
                const float x[8] = {x0.v[0], x0.v[1], x0.v[2], x0.v[3], x1.v[0], x1.v[1], x1.v[2], x1.v[3]};
#pragma unroll
                for (int a = 0; a < 8; ++a)
#pragma unroll
                    for (int c = 0; c < 8; ++c) dw[a][c] = fmaf(d[a], x[c], dw[a][c]);
            }
        } else {
            for (int r = 0; r < count; ++r)
#pragma unroll
                for (int h = 0; h < C::db_cols / 4; ++h) {
                    const Group d = group_at(gs + r * PITCH + db0, h);
#pragma unroll
                    for (int e = 0; e < 4; ++e) db[4 * h + e] += d.v[e];
                }
        }
        __syncthreads();  // the stage is read out: it takes the tile STAGES further on
        const long long next = tile + static_cast<long long>(STAGES) * gridDim.x;
        if (next < tiles) load_stage(xs, next);
        async_commit();
        stage = stage + 1 == STAGES ? 0 : stage + 1;
    }

    async_wait<0>();
    __syncthreads();
    float* const partial = stages;  // G partial grad_W, 1600 floats each
    if (tid < 25 * G) {
#pragma unroll
        for (int a = 0; a < 8; ++a)
#pragma unroll
            for (int c = 0; c < 8; ++c) partial[grp * 1600 + (8 * bi + a) * 40 + 8 * bk + c] = dw[a][c];
    } else {
#pragma unroll
        for (int c = 0; c < C::db_cols; ++c) atomicAdd(&grad_b[db0 + c], db[c]);
    }
    __syncthreads();
    for (int o = tid; o < 1600; o += T) {
        float sum = partial[o];
#pragma unroll
        for (int g = 1; g < G; ++g) sum += partial[g * 1600 + o];
        atomicAdd(&grad_W[o], sum);
    }
}

}  // namespace vsn_variants
