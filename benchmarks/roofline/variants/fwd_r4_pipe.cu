// Persistent: blocks of 32 threads loop over tiles of 128 rows, 4 rows a thread, the next tile in flight.
// Same arguments as vsn_fwd_hand (benchmarks/roofline/vsn_fwd_hand.cu); see fwd_rows.cuh for the algorithm.
#include "fwd_rows.cuh"

extern "C" __global__ void __launch_bounds__(32) vsn_fwd_r4_pipe(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    vsn_variants::fwd_rows<4, 32, 2>(window, W, b, gates, y, B, K);
}
