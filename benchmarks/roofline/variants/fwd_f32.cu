// The f32 VSN forward that was the kernel by hand (benchmarks/roofline/vsn_fwd_hand.cu) before the
// tensor-core design: a block per tile of 128 rows, a thread a row, W broadcast from shared memory.
// Kept as the bitwise baseline of the f32 variants of this folder (registry.py: baseline); its loads are
// here, the tile's arithmetic and stores are f32_tile_forward (vsn_variant_common.cuh).
#include "vsn_variant_common.cuh"
using vsn_variants::Group;
using vsn_variants::f32_tile_forward;

extern "C" __global__ void __launch_bounds__(128) vsn_fwd_f32(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    float* const ws = reinterpret_cast<float*>(vsn_smem);            // 40 rows of W
    float* const bs = reinterpret_cast<float*>(vsn_smem + 7040);     // b
    float* const xs = reinterpret_cast<float*>(vsn_smem + 7216);     // 128 rows of x, then of gates, then of y
    const long long rows = B * K;
    const long long tile_row = static_cast<long long>(blockIdx.x) * 128;
    const int tile_rows = rows - tile_row < 128 ? static_cast<int>(rows - tile_row) : 128;
    {
        Group staged[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int q = threadIdx.x + k * 128;
            if (q < 400) staged[k] = reinterpret_cast<const Group*>(W + (q / 10) * 40)[q % 10];
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int q = threadIdx.x + k * 128;
            if (q < 400) reinterpret_cast<Group*>(ws + (q / 10) * 44)[q % 10] = staged[k];
        }
    }
    {
        Group staged[1];
        const int q = threadIdx.x;
        if (q < 10) staged[0] = reinterpret_cast<const Group*>(b)[q];
        if (q < 10) reinterpret_cast<Group*>(bs)[q] = staged[0];
    }
    {
        Group staged[10];
#pragma unroll
        for (int k = 0; k < 10; ++k) {
            const int q = threadIdx.x + k * 128;
            if (q < tile_rows * 10) staged[k] = reinterpret_cast<const Group*>(window + (tile_row + q / 10) * 56)[q % 10];
        }
#pragma unroll
        for (int k = 0; k < 10; ++k) {
            const int q = threadIdx.x + k * 128;
            if (q < tile_rows * 10) reinterpret_cast<Group*>(xs + (q / 10) * 44)[q % 10] = staged[k];
        }
    }
    __syncthreads();
    f32_tile_forward(ws, bs, xs, gates, y, tile_row, tile_rows);
}
