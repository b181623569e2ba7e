// fwd_tc with the fast 3xTF32 split of x (truncation, 2 instructions instead of about 10).
// Same arguments as vsn_fwd_hand (benchmarks/roofline/vsn_fwd_hand.cu); see fwd_tc.cuh for the algorithm.
#include "fwd_tc.cuh"

extern "C" __global__ void __launch_bounds__(128) vsn_fwd_tc_fast(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    vsn_variants::fwd_tc<4, 3, true>(window, W, b, gates, y, B, K);
}
