// A hand-written entry that indexes the field's first element as packed rows of its width.
#include "sanitizer_bad.cuh"

namespace views = lg::views::sanitizer_bad;
using Snap = views::Window_snap_view<const float, 4, lg::Packing::strided>;
using Out = views::Packed_view<float, 4, lg::Packing::strided>;

__device__ void copy_features(Snap x, Out y) {
    const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= x.rows()) return;
    constexpr int F = Snap::width;
    const float* base = &x.at(0, 0);
    for (int c = 0; c < F; ++c) y.at(row, c) = base[row * F + c];
}
