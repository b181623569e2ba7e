// The VSN forward, hand-written: gates = softmax(W x + b) over the 40 features, y = gates * x.
// It reads its input through the generated views of spec `own_kernel`, so the row stride of
// `Window.snap` (56, not 40) is the view's, never a number written here. Build it with layoutgen
// (examples/own_kernel/spec.py), or with nvcc against the generated header:
//     nvcc -arch=sm_90 -c -I generated/own_kernel examples/own_kernel/vsn_forward.cu
#include "own_kernel.cuh"

namespace views = lg::views::own_kernel;
using Snap = views::Window_snap_view<const float, 4, lg::Packing::strided>;
using Weights = views::Weights_view<const float, 4, lg::Packing::strided>;
using Bias = views::Bias_view<const float, 4, lg::Packing::strided>;
using Features = views::Features_view<float, 4, lg::Packing::strided>;

__device__ void vsn_forward(Snap x, Weights W, Bias b, Features gates, Features y) {
    const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= x.rows()) return;
    constexpr int F = Snap::width;  // 40 columns: the view's width, not a literal
    const auto in = x.row(row);  // a row object: `x.row(0) + row * 40` does not compile
    float xv[F], g[F];
    float z_max = -__int_as_float(0x7f800000);  // -infinity
#pragma unroll
    for (int j = 0; j < F; ++j) xv[j] = in[j];
    for (int i = 0; i < F; ++i) {
        float acc = b(i);
#pragma unroll
        for (int j = 0; j < F; ++j) acc = fmaf(W(i, j), xv[j], acc);
        g[i] = acc;
        z_max = fmaxf(z_max, acc);
    }
    float total = 0.0f;
    for (int i = 0; i < F; ++i) {
        g[i] = expf(g[i] - z_max);
        total += g[i];
    }
    const float inv_total = 1.0f / total;
    const auto gates_row = gates.row(row);
    const auto y_row = y.row(row);
    for (int i = 0; i < F; ++i) {
        gates_row[i] = g[i] * inv_total;
        y_row[i] = g[i] * inv_total * xv[i];
    }
}
