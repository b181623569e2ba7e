// The f32 VSN backward that was the kernel by hand (benchmarks/roofline/vsn_bwd_hand.cu) before the
// tensor-core design: resident blocks over tiles of 128 rows, a thread a row for grad_x, 4x4 blocks of grad_W.
// Kept as the bitwise baseline of the f32 variants of this folder (registry.py: baseline).
struct alignas(16) Group { float v[4]; };

template <int STRIDE>
__device__ __forceinline__ void tile_in(float* tile, const float* src, long long first, int count) {
    Group staged[10];
#pragma unroll
    for (int k = 0; k < 10; ++k) {
        const int q = threadIdx.x + k * 128;
        if (q < count * 10) staged[k] = reinterpret_cast<const Group*>(src + (first + q / 10) * STRIDE)[q % 10];
    }
#pragma unroll
    for (int k = 0; k < 10; ++k) {
        const int q = threadIdx.x + k * 128;
        if (q < count * 10) reinterpret_cast<Group*>(tile + (q / 10) * 44)[q % 10] = staged[k];
    }
}

extern "C" __global__ void __launch_bounds__(128, 3) vsn_bwd_f32(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ gates,
    const float* __restrict__ grad_y, float* __restrict__ grad_x, float* __restrict__ grad_W,
    float* __restrict__ grad_b, long long B, long long K)
{
    extern __shared__ __align__(16) unsigned char vsn_smem[];
    float* const wt = reinterpret_cast<float*>(vsn_smem);                   // 40 rows: W transposed
    float* const xs = reinterpret_cast<float*>(vsn_smem + 7040);            // 128 rows of x
    float* const gs = reinterpret_cast<float*>(vsn_smem + 7040 + 22528);    // gates, then dz
    float* const ys = reinterpret_cast<float*>(vsn_smem + 7040 + 45056);    // grad_y, then grad_x
    const long long rows = B * K;
    const int t = threadIdx.x;
    for (int q = t; q < 1600; q += blockDim.x) wt[(q % 40) * 44 + q / 40] = W[(q / 40) * 40 + q % 40];
    const int bi = (t % 10) * 4, bj = (t / 10) * 4;
    float dw[4][4] = {};
    float db[4] = {};
    const long long tiles = (rows + 127) / 128;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const long long row = tile * 128;
        const int count = rows - row < 128 ? static_cast<int>(rows - row) : 128;
        __syncthreads();
        tile_in<56>(xs, window, row, count);
        tile_in<40>(gs, gates, row, count);
        tile_in<40>(ys, grad_y, row, count);
        __syncthreads();
        if (t < count) {
            float dz[40];
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group xv = reinterpret_cast<const Group*>(xs + t * 44)[j];
                const Group gv = reinterpret_cast<const Group*>(gs + t * 44)[j];
                const Group yv = reinterpret_cast<const Group*>(ys + t * 44)[j];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    dz[4 * j + e] = yv.v[e] * xv.v[e];
                    dot = fmaf(gv.v[e], dz[4 * j + e], dot);
                }
            }
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                const Group gv = reinterpret_cast<const Group*>(gs + t * 44)[j];
#pragma unroll
                for (int e = 0; e < 4; ++e) dz[4 * j + e] = gv.v[e] * (dz[4 * j + e] - dot);
            }
#pragma unroll 1
            for (int j = 0; j < 10; ++j) {
                const Group gv = reinterpret_cast<const Group*>(gs + t * 44)[j];
                const Group yv = reinterpret_cast<const Group*>(ys + t * 44)[j];
                Group dx;
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    dx.v[e] = yv.v[e] * gv.v[e];
#pragma unroll
                    for (int i = 0; i < 10; ++i) {
                        const Group w = reinterpret_cast<const Group*>(wt + (4 * j + e) * 44)[i];
#pragma unroll
                        for (int k = 0; k < 4; ++k) dx.v[e] = fmaf(w.v[k], dz[4 * i + k], dx.v[e]);
                    }
                }
                reinterpret_cast<Group*>(ys + t * 44)[j] = dx;
            }
#pragma unroll
            for (int j = 0; j < 10; ++j) {
                Group v;
#pragma unroll
                for (int e = 0; e < 4; ++e) v.v[e] = dz[4 * j + e];
                reinterpret_cast<Group*>(gs + t * 44)[j] = v;
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 10; ++k) {
            const int q = t + k * 128;
            if (q < count * 10) reinterpret_cast<Group*>(grad_x + (row + q / 10) * 40)[q % 10] = reinterpret_cast<const Group*>(ys + (q / 10) * 44)[q % 10];
        }
        if (t < 100) {
            for (int r = 0; r < count; ++r) {
                const Group d = reinterpret_cast<const Group*>(gs + r * 44)[bi / 4];
                const Group xv = reinterpret_cast<const Group*>(xs + r * 44)[bj / 4];
#pragma unroll
                for (int a = 0; a < 4; ++a)
#pragma unroll
                    for (int c = 0; c < 4; ++c) dw[a][c] = fmaf(d.v[a], xv.v[c], dw[a][c]);
            }
        } else if (t < 110) {
            const int i = t - 100;
            for (int r = 0; r < count; ++r) {
                const Group d = reinterpret_cast<const Group*>(gs + r * 44)[i];
#pragma unroll
                for (int a = 0; a < 4; ++a) db[a] += d.v[a];
            }
        }
    }
    if (t < 100) {
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int c = 0; c < 4; ++c) atomicAdd(&grad_W[(bi + a) * 40 + bj + c], dw[a][c]);
    } else if (t < 110) {
#pragma unroll
        for (int a = 0; a < 4; ++a) atomicAdd(&grad_b[4 * (t - 100) + a], db[a]);
    }
}
