// Persistent: blocks of 128 threads loop over tiles of 256 rows, 2 rows a thread, the next tile in flight.
// Same arguments as vsn_fwd_hand (benchmarks/roofline/vsn_fwd_hand.cu); see fwd_rows.cuh for the algorithm.
#include "fwd_rows.cuh"

extern "C" __global__ void __launch_bounds__(128) vsn_fwd_r2_pipe(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    vsn_variants::fwd_rows<2, 128, 2>(window, W, b, gates, y, B, K);
}
