// variable_selection_fwd written by hand with literal strides, as the
// original pipeline did (with the right stride, 56): the baseline that the
// generated kernel must match in time and registers.
extern "C" __global__ void __launch_bounds__(128) vsn_fwd_hand(
    const float* __restrict__ window,
    const float* __restrict__ W,
    const float* __restrict__ b,
    float* __restrict__ gates,
    float* __restrict__ y,
    long long B,
    long long K)
{
    const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= B * K) return;
    const float* x = window + row * 56;
    float xv[40];
#pragma unroll
    for (int j = 0; j < 40; ++j) xv[j] = x[j];

    float z[40];
    float z_max = -__int_as_float(0x7f800000);
#pragma unroll
    for (int i = 0; i < 40; ++i) {
        float acc = b[i];
#pragma unroll
        for (int j = 0; j < 40; ++j) acc = fmaf(W[i * 40 + j], xv[j], acc);
        z[i] = acc;
        z_max = fmaxf(z_max, acc);
    }
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < 40; ++i) {
        z[i] = expf(z[i] - z_max);
        total += z[i];
    }
    const float inv_total = 1.0f / total;
#pragma unroll
    for (int i = 0; i < 40; ++i) {
        const float g = z[i] * inv_total;
        gates[row * 40 + i] = g;
        y[row * 40 + i] = g * xv[i];
    }
}
