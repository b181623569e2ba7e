// Persistent: tiles of 64 rows, the next two in flight (cp.async, 3 stages); grad_x 4x8, grad_W 8x8 in 3 groups.
// Same arguments as vsn_bwd_hand (benchmarks/roofline/vsn_bwd_hand.cu), but 80 threads a block; see bwd_split.cuh.
#include "bwd_split.cuh"

extern "C" __global__ void __launch_bounds__(80, 2) vsn_bwd_split64_pipe3(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ gates,
    const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_W,
    float* __restrict__ grad_b, long long B, long long K)
{
    vsn_variants::bwd_split<64, 3>(window, W, gates, grad_y, grad_x, grad_W, grad_b, B, K);
}
