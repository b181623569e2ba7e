// vsn_fwd_hand (benchmarks/roofline/vsn_fwd_hand.cu) with one change: W, b and the tile's x come in with
// cp.async copies all issued before the first wait, one round trip to memory, where the kernel by hand (and
// the generated one, which waits once more: see the report's SASS diff) waits for W and b before it issues
// the loads of x. Everything after the loads is the kernel by hand's, so its outputs are bitwise the same.
#include "vsn_variant_common.cuh"
using vsn_variants::Group;
using vsn_variants::copy16_async;
using vsn_variants::tile_in_async;
using vsn_variants::async_commit;
using vsn_variants::async_wait;
using vsn_variants::f32_tile_forward;

extern "C" __global__ void __launch_bounds__(128) vsn_fwd_onetrip(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    unsigned char* const smem = vsn_smem;
    float* const ws = reinterpret_cast<float*>(smem);            // 40 rows of W
    float* const bs = reinterpret_cast<float*>(smem + 7040);     // b
    float* const xs = reinterpret_cast<float*>(smem + 7216);     // 128 rows of x, then of gates, then of y
    const long long rows = B * K;
    const long long tile_row = static_cast<long long>(blockIdx.x) * 128;
    const int tile_rows = rows - tile_row < 128 ? static_cast<int>(rows - tile_row) : 128;
    // W, b and the tile's x rows: every copy issued before any is waited for (one round trip to memory).
    for (int q = threadIdx.x; q < 400; q += 128) copy16_async(ws + (q / 10) * 44 + (q % 10) * 4, W + q * 4);
    if (threadIdx.x < 10) copy16_async(bs + 4 * threadIdx.x, b + 4 * threadIdx.x);
    tile_in_async<56, 128>(xs, window, tile_row, tile_rows, threadIdx.x);
    async_commit();
    async_wait<0>();
    __syncthreads();
    f32_tile_forward(ws, bs, xs, gates, y, tile_row, tile_rows);
}
