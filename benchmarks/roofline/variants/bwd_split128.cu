// Persistent: tiles of 128 rows, one at a time; grad_x 4 rows x 8 columns a thread, grad_W 8x8 blocks in 6 row groups.
// Same arguments as vsn_bwd_hand (benchmarks/roofline/vsn_bwd_hand.cu), but 160 threads a block; see bwd_split.cuh.
#include "bwd_split.cuh"

extern "C" __global__ void __launch_bounds__(160, 2) vsn_bwd_split128(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ gates,
    const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_W,
    float* __restrict__ grad_b, long long B, long long K)
{
    vsn_variants::bwd_split<128, 1>(window, W, gates, grad_y, grad_x, grad_W, grad_b, B, K);
}
