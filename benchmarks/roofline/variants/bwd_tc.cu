// Persistent warps on tensor cores (3xTF32 mma.sync for grad_x and grad_W, W in registers), 2 stages of 32 rows a warp.
// Same arguments as vsn_bwd_hand (benchmarks/roofline/vsn_bwd_hand.cu), but 64 threads a block; see bwd_tc.cuh.
#include "bwd_tc.cuh"

extern "C" __global__ void __launch_bounds__(64) vsn_bwd_tc(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ gates,
    const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_W,
    float* __restrict__ grad_b, long long B, long long K)
{
    vsn_variants::bwd_tc<2, 2>(window, W, gates, grad_y, grad_x, grad_W, grad_b, B, K);
}
