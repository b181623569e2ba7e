// variable_selection_bwd written by hand with literal strides: the same algorithm as the generated kernel
// (examples/vsn/variable_selection_bwd.cu.j2, Grid.persistent_warps with warp tiles), every address computed in
// place. x rows are 56 floats apart, gates / grad_y / grad_x rows 40; each warp of a block of 4 has a tile of 32
// rows of x, of gates and of grad_y in shared memory, 44 floats a row, and after its last tile its sums of grad_W
// and grad_b in rows of its own. The tensor-core arithmetic is the VSN's project header, the same as the
// generated kernel's. The baseline the generated kernel must match in time, registers and grad_x bits.
#include "vsn_tf32.cuh"

struct alignas(16) Group { float v[4]; };
struct alignas(8) Pair { float v[2]; };

// One 16-byte copy from global to shared memory that does not wait (cp.async.cg: around L1).
__device__ __forceinline__ void copy16_async(Group& shared_dst, const Group& global_src) {
#if defined(__CUDA_ARCH__)
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(&shared_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(&global_src) : "memory");
#else
    shared_dst = global_src;
#endif
}

// Rows from .. from + count of a [rows, STRIDE] array, columns 0..40, into a warp's tile, by its 32 lanes.
template <int STRIDE>
__device__ __forceinline__ void tile_in(float* tile, const float* src, long long from, int count, int lane) {
#pragma unroll 4
    for (int c = lane; c < count * 10; c += 32)
        copy16_async(reinterpret_cast<Group*>(tile + (c / 10) * 44)[c % 10],
                     reinterpret_cast<const Group*>(src + (from + c / 10) * STRIDE)[c % 10]);
}

extern "C" __global__ void __launch_bounds__(128) vsn_bwd_hand(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ gates,
    const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_W,
    float* __restrict__ grad_b, long long B, long long K)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float* const xs = reinterpret_cast<float*>(smem + warp * 5632);            // 32 rows of x
    float* const gs = reinterpret_cast<float*>(smem + 22528 + warp * 5632);    // gates, then dz
    float* const ys = reinterpret_cast<float*>(smem + 45056 + warp * 5632);    // grad_y, then gy * g, then grad_x
    float* const warp_dw = reinterpret_cast<float*>(smem + 67584);             // [4, 40, 40]: each warp's grad_W
    float* const warp_db = reinterpret_cast<float*>(smem + 93184);             // [4, 40]: each warp's grad_b
    const long long rows = B * K;
    const long long first = static_cast<long long>(blockIdx.x) * 4 + warp, step = static_cast<long long>(gridDim.x) * 4;
    const int g = lane / 4, q = lane % 4;
    auto load = [&](int index) {  // the warp's index-th tile into its tiles; a tile past the last copies nothing
        const long long row = (first + index * step) * 32;
        const long long rest = rows - row;
        const long long from = rest <= 0 ? rows : row;
        const int count = rest <= 0 ? 0 : rest < 32 ? static_cast<int>(rest) : 32;
        tile_in<56>(xs, window, from, count, lane);
        tile_in<40>(gs, gates, from, count, lane);
        tile_in<40>(ys, grad_y, from, count, lane);
    };
    load(0);
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
    unsigned wh[5][5][2], wl[5][5][2];
#pragma unroll
    for (int nt = 0; nt < 5; ++nt)
#pragma unroll
        for (int ks = 0; ks < 5; ++ks)
#pragma unroll
            for (int h = 0; h < 2; ++h) vsn::split_tf32(W[(8 * ks + q + 4 * h) * 40 + 8 * nt + g], wh[nt][ks][h], wl[nt][ks][h]);
    float dw[3][5][4] = {};
    float db[3][4] = {};

    const long long tiles = (rows + 31) / 32;
    int index = 0;
    for (long long tile = first; tile < tiles; tile += step, ++index) {
        const long long row0 = tile * 32;
        const int count = rows - row0 < 32 ? static_cast<int>(rows - row0) : 32;
#if defined(__CUDA_ARCH__)
        asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
        __syncwarp();
        {
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = reinterpret_cast<const Group*>(xs + lane * 44)[j];
                const Group gv = reinterpret_cast<const Group*>(gs + lane * 44)[j];
                const Group yv = reinterpret_cast<const Group*>(ys + lane * 44)[j];
#pragma unroll
                for (int e = 0; e < 4; ++e) dot = fmaf(gv.v[e], yv.v[e] * xv.v[e], dot);
            }
            asm volatile("" ::: "memory");
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = reinterpret_cast<const Group*>(xs + lane * 44)[j];
                const Group gv = reinterpret_cast<const Group*>(gs + lane * 44)[j];
                const Group yv = reinterpret_cast<const Group*>(ys + lane * 44)[j];
                Group d, init;
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    d.v[e] = gv.v[e] * (yv.v[e] * xv.v[e] - dot);
                    init.v[e] = yv.v[e] * gv.v[e];
                }
                reinterpret_cast<Group*>(gs + lane * 44)[j] = d;
                reinterpret_cast<Group*>(ys + lane * 44)[j] = init;
            }
        }
        __syncwarp();
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
            const int top = 16 * mt + g, low = top + 8;
            float c[5][4];
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const Pair init = reinterpret_cast<const Pair*>(ys + (h ? low : top) * 44)[4 * nt + q];
                    c[nt][2 * h] = init.v[0];
                    c[nt][2 * h + 1] = init.v[1];
                }
#pragma unroll
            for (int ks = 0; ks < 5; ++ks) {
                const int col = 8 * ks + q;
                const float a[4] = {gs[top * 44 + col], gs[low * 44 + col], gs[top * 44 + col + 4], gs[low * 44 + col + 4]};
                unsigned ah[4], al[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) vsn::split_tf32(a[i], ah[i], al[i]);
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) vsn::mma_3xtf32(c[nt], ah, al, wh[nt][ks], wl[nt][ks]);
            }
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    Pair out;
                    out.v[0] = c[nt][2 * h];
                    out.v[1] = c[nt][2 * h + 1];
                    reinterpret_cast<Pair*>(ys + (h ? low : top) * 44)[4 * nt + q] = out;
                }
        }
#pragma unroll 1
        for (int ks = 0; ks < 4; ++ks) {
            const int ra = 8 * ks + q, rb = ra + 4;
            const bool va = ra < count, vb = rb < count;
            unsigned xh[5][2], xl[5][2];
#pragma unroll
            for (int nt = 0; nt < 5; ++nt) {
                vsn::split_tf32(va ? xs[ra * 44 + 8 * nt + g] : 0.0f, xh[nt][0], xl[nt][0]);
                vsn::split_tf32(vb ? xs[rb * 44 + 8 * nt + g] : 0.0f, xh[nt][1], xl[nt][1]);
            }
            const unsigned ones[2] = {va && lane < 4 ? 0x3f800000u : 0u, vb && lane < 4 ? 0x3f800000u : 0u};
#pragma unroll
            for (int mt = 0; mt < 3; ++mt) {
                const int i0 = 16 * mt + g, i1 = i0 + 8;
                const float a[4] = {va ? gs[ra * 44 + i0] : 0.0f, va && i1 < 40 ? gs[ra * 44 + i1] : 0.0f,
                                    vb ? gs[rb * 44 + i0] : 0.0f, vb && i1 < 40 ? gs[rb * 44 + i1] : 0.0f};
                unsigned ah[4], al[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) vsn::split_tf32(a[i], ah[i], al[i]);
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) vsn::mma_3xtf32(dw[mt][nt], ah, al, xh[nt], xl[nt]);
                vsn::mma_tf32(db[mt], al, ones);
                vsn::mma_tf32(db[mt], ah, ones);
            }
        }
        __syncwarp();
#pragma unroll 4
        for (int c = lane; c < count * 10; c += 32)
            reinterpret_cast<Group*>(grad_x + (row0 + c / 10) * 40)[c % 10] = reinterpret_cast<const Group*>(ys + (c / 10) * 44)[c % 10];
        __syncwarp();
        load(index + 1);
#if defined(__CUDA_ARCH__)
        asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
    }

#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
#pragma unroll
    for (int mt = 0; mt < 3; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int i = 16 * mt + g + 8 * (e / 2);
            if (i < 40) {
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) warp_dw[(warp * 40 + i) * 40 + 8 * nt + 2 * q + e % 2] = dw[mt][nt][e];
                if (q == 0 && e % 2 == 0) warp_db[warp * 40 + i] = db[mt][e];
            }
        }
    __syncthreads();
    for (int o = threadIdx.x; o < 1640; o += blockDim.x) {
        const float* const sums = o < 1600 ? warp_dw + o : warp_db + (o - 1600);
        const int apart = o < 1600 ? 1600 : 40;
        float sum = sums[0];
#pragma unroll
        for (int w = 1; w < 4; ++w) sum += sums[w * apart];
        atomicAdd(o < 1600 ? &grad_W[(o / 40) * 40 + o % 40] : &grad_b[o - 1600], sum);
    }
}
