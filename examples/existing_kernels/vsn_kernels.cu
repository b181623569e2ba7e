// The VSN pipeline's kernels as the team wrote them before layoutgen: raw pointers, feature counts
// in #defines, launched from Python with hand-packed arguments. The window buffer is [B, K, 56]:
// columns 0..40 of each row are market features, columns 40..56 per-batch context.
//
// The seed bug is here, unchanged: the VSN forward and backward step through `x` (the window's
// features) 40 floats a row, the feature count, where the window's rows are 56 apart. Row 0 lines
// up; every later row reads a mix of features, context and the next row. examples/existing_kernels/
// seed_bug.py declares these kernels as they are; vsn_kernels_fixed.cu is the fix.
#define VSN_FEATURE_DIM 40  // market features per snapshot
#define VSN_CONTEXT_DIM 16  // per-batch context columns
#define VSN_ROW_DIM 56      // a window row: features, then context
#define VSN_BLOCK 128

// Each batch's context, repeated over its K snapshots: columns 40..56 of every window row.
extern "C" __global__ void __launch_bounds__(VSN_BLOCK)
context_broadcast(const float* __restrict__ context, float* __restrict__ window, int n_rows, int n_snap) {
    const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= n_rows) return;
    const float* src = context + (idx / n_snap) * VSN_CONTEXT_DIM;
    float* dst = window + idx * 56 + 40;
#pragma unroll
    for (int c = 0; c < VSN_CONTEXT_DIM; ++c) dst[c] = src[c];
}

// gates = softmax(W x + b) over the 40 features, y = gates * x: a thread per row, W staged in shared memory.
extern "C" __global__ void __launch_bounds__(VSN_BLOCK)
vsn_forward(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ b,
            float* __restrict__ gates, float* __restrict__ y, int n_rows) {
    __shared__ float Ws[VSN_FEATURE_DIM * VSN_FEATURE_DIM];
    __shared__ float bs[VSN_FEATURE_DIM];
    for (int i = threadIdx.x; i < VSN_FEATURE_DIM * VSN_FEATURE_DIM; i += blockDim.x) Ws[i] = W[i];
    if (threadIdx.x < VSN_FEATURE_DIM) bs[threadIdx.x] = b[threadIdx.x];
    __syncthreads();
    const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    const float* xr = x + row * VSN_FEATURE_DIM;  // the bug: rows of the window are 56 apart
    float xv[VSN_FEATURE_DIM], z[VSN_FEATURE_DIM];
#pragma unroll
    for (int j = 0; j < VSN_FEATURE_DIM; ++j) xv[j] = xr[j];
    float z_max = -__int_as_float(0x7f800000);  // -infinity
#pragma unroll
    for (int i = 0; i < VSN_FEATURE_DIM; ++i) {
        float acc = bs[i];
#pragma unroll
        for (int j = 0; j < VSN_FEATURE_DIM; ++j) acc = fmaf(Ws[i * VSN_FEATURE_DIM + j], xv[j], acc);
        z[i] = acc;
        z_max = fmaxf(z_max, acc);
    }
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < VSN_FEATURE_DIM; ++i) {
        z[i] = __expf(z[i] - z_max);
        total += z[i];
    }
    const float inv_total = 1.0f / total;
    float* gr = gates + row * VSN_FEATURE_DIM;
    float* yr = y + row * VSN_FEATURE_DIM;
#pragma unroll
    for (int i = 0; i < VSN_FEATURE_DIM; ++i) {
        const float g = z[i] * inv_total;
        gr[i] = g;
        yr[i] = g * x[row * VSN_FEATURE_DIM + i];  // the bug again
    }
}

// The VSN backward through the gates: grad_z = g * (dg - sum(g * dg)) with dg = grad_y * x, and
// grad_x = grad_y * g + grad_z W. grad_W = grad_z^T x and grad_b = sum(grad_z) are a GEMM and a
// reduction over grad_z, done elsewhere.
extern "C" __global__ void __launch_bounds__(VSN_BLOCK)
vsn_backward(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ gates,
             const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_z,
             int n_rows) {
    __shared__ float Ws[VSN_FEATURE_DIM * VSN_FEATURE_DIM];
    for (int i = threadIdx.x; i < VSN_FEATURE_DIM * VSN_FEATURE_DIM; i += blockDim.x) Ws[i] = W[i];
    __syncthreads();
    const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    const long long at = row * VSN_FEATURE_DIM;
    float g[VSN_FEATURE_DIM], dz[VSN_FEATURE_DIM];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < VSN_FEATURE_DIM; ++i) {
        g[i] = gates[at + i];
        dz[i] = grad_y[at + i] * x[row * VSN_FEATURE_DIM + i];  // the bug a third time
        s = fmaf(g[i], dz[i], s);
    }
#pragma unroll
    for (int i = 0; i < VSN_FEATURE_DIM; ++i) {
        dz[i] = g[i] * (dz[i] - s);
        grad_z[at + i] = dz[i];
    }
#pragma unroll
    for (int j = 0; j < VSN_FEATURE_DIM; ++j) {
        float acc = grad_y[at + j] * g[j];
#pragma unroll
        for (int i = 0; i < VSN_FEATURE_DIM; ++i) acc = fmaf(dz[i], Ws[i * VSN_FEATURE_DIM + j], acc);
        grad_x[at + j] = acc;
    }
}
