// bwd_tc with the fast 3xTF32 split of dz and x (truncation, 2 instructions instead of about 10).
// Same arguments as vsn_bwd_hand (benchmarks/roofline/vsn_bwd_hand.cu), but 64 threads a block; see bwd_tc.cuh.
#include "bwd_tc.cuh"

extern "C" __global__ void __launch_bounds__(64) vsn_bwd_tc_fast(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ gates,
    const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_W,
    float* __restrict__ grad_b, long long B, long long K)
{
    vsn_variants::bwd_tc<2, 2, true>(window, W, gates, grad_y, grad_x, grad_W, grad_b, B, K);
}
