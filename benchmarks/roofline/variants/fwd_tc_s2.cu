// Persistent warps on tensor cores (3xTF32 mma.sync, W in registers), 32 rows a warp tile, 2 stages in flight.
// Same arguments as vsn_fwd_hand (benchmarks/roofline/vsn_fwd_hand.cu); see fwd_tc.cuh for the algorithm.
#include "fwd_tc.cuh"

extern "C" __global__ void __launch_bounds__(128) vsn_fwd_tc_s2(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    vsn_variants::fwd_tc<4, 2>(window, W, b, gates, y, B, K);
}
