// Persistent: blocks of 64 threads loop over tiles of 256 rows, 4 rows a thread, the next tile in flight.
// Same arguments as vsn_fwd_hand (benchmarks/roofline/vsn_fwd_hand.cu); see fwd_rows.cuh for the algorithm.
#include "fwd_rows.cuh"

extern "C" __global__ void __launch_bounds__(64) vsn_fwd_r4_pipe64(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    vsn_variants::fwd_rows<4, 64, 2>(window, W, b, gates, y, B, K);
}
