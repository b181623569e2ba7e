// variable_selection_fwd written by hand with literal strides: the same algorithm as the generated kernel
// (examples/vsn/variable_selection_fwd.cu.j2, Grid.persistent_warps with warp tiles), every address computed in
// place. Rows of the window are 56 floats apart, rows of gates and y 40; each warp of a block of 4 has a ring of
// 3 tiles of 32 rows of x and one of gates in shared memory, 44 floats a row. The tensor-core arithmetic is the
// VSN's project header, the same as the generated kernel's (it addresses no memory). The baseline the generated
// kernel must match in time, registers and output bits (benchmarks/bench_roofline.py).
#include "vsn_tf32.cuh"

struct alignas(16) Group { float v[4]; };
struct alignas(8) Pair { float v[2]; };

// One 16-byte copy from global to shared memory that does not wait (cp.async.cg: around L1).
__device__ __forceinline__ void copy16_async(Group& shared_dst, const Group& global_src) {
#if defined(__CUDA_ARCH__)
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(&shared_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(&global_src) : "memory");
#else
    shared_dst = global_src;
#endif
}

extern "C" __global__ void __launch_bounds__(128) vsn_fwd_hand(
    const float* __restrict__ window, const float* __restrict__ W, const float* __restrict__ b,
    float* __restrict__ gates, float* __restrict__ y, long long B, long long K)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float* const xs = reinterpret_cast<float*>(smem + warp * 16896);          // 3 stages of 32 rows of x
    float* const gs = reinterpret_cast<float*>(smem + 67584 + warp * 5632);   // 32 rows of gates
    const long long rows = B * K;
    const long long first = static_cast<long long>(blockIdx.x) * 4 + warp, step = static_cast<long long>(gridDim.x) * 4;
    const int g = lane / 4, q = lane % 4;
    // Rows row .. row + count of the window into a stage; a tile past the last copies nothing.
    auto load = [&](float* stage, int index) {
        const long long row = (first + index * step) * 32;
        const long long rest = rows - row;
        const long long from = rest <= 0 ? rows : row;
        const int count = rest <= 0 ? 0 : rest < 32 ? static_cast<int>(rest) : 32;
#pragma unroll 4
        for (int c = lane; c < count * 10; c += 32)
            copy16_async(reinterpret_cast<Group*>(stage + (c / 10) * 44)[c % 10],
                         reinterpret_cast<const Group*>(window + (from + c / 10) * 56)[c % 10]);
    };
#pragma unroll
    for (int s = 0; s < 3; ++s) {
        load(xs + s * 1408, s);
#if defined(__CUDA_ARCH__)
        asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
    }
    unsigned wh[5][5][2], wl[5][5][2];
#pragma unroll
    for (int nt = 0; nt < 5; ++nt)
#pragma unroll
        for (int ks = 0; ks < 5; ++ks)
#pragma unroll
            for (int h = 0; h < 2; ++h) vsn::split_tf32(W[(8 * nt + g) * 40 + 8 * ks + q + 4 * h], wh[nt][ks][h], wl[nt][ks][h]);
    float bias[5][2];
#pragma unroll
    for (int nt = 0; nt < 5; ++nt) {
        bias[nt][0] = b[8 * nt + 2 * q];
        bias[nt][1] = b[8 * nt + 2 * q + 1];
    }

    const long long tiles = (rows + 31) / 32;
    int index = 0;
    for (long long tile = first; tile < tiles; tile += step, ++index) {
        const long long row0 = tile * 32;
        const int count = rows - row0 < 32 ? static_cast<int>(rows - row0) : 32;
        float* const xt = xs + (index % 3) * 1408;
#if defined(__CUDA_ARCH__)
        asm volatile("cp.async.wait_group 2;\n" ::: "memory");
#endif
        __syncwarp();
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
            const int top = 16 * mt + g, low = top + 8;
            float c[5][4];
#pragma unroll
            for (int nt = 0; nt < 5; ++nt) {
                c[nt][0] = c[nt][2] = bias[nt][0];
                c[nt][1] = c[nt][3] = bias[nt][1];
            }
#pragma unroll
            for (int ks = 0; ks < 5; ++ks) {
                const int col = 8 * ks + q;
                const float a[4] = {xt[top * 44 + col], xt[low * 44 + col], xt[top * 44 + col + 4], xt[low * 44 + col + 4]};
                unsigned ah[4], al[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) vsn::split_tf32(a[i], ah[i], al[i]);
#pragma unroll
                for (int nt = 0; nt < 5; ++nt) vsn::mma_3xtf32(c[nt], ah, al, wh[nt][ks], wl[nt][ks]);
            }
            float m[2] = {-__int_as_float(0x7f800000), -__int_as_float(0x7f800000)};
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) m[h] = fmaxf(m[h], fmaxf(c[nt][2 * h], c[nt][2 * h + 1]));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                m[h] = fmaxf(m[h], vsn::shfl_xor(m[h], 1));
                m[h] = fmaxf(m[h], vsn::shfl_xor(m[h], 2));
            }
            float total[2] = {0.0f, 0.0f};
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    c[nt][i] = expf(c[nt][i] - m[i / 2]);
                    total[i / 2] += c[nt][i];
                }
            float inv[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                total[h] += vsn::shfl_xor(total[h], 1);
                total[h] += vsn::shfl_xor(total[h], 2);
                inv[h] = 1.0f / total[h];
            }
            __syncwarp();
#pragma unroll
            for (int nt = 0; nt < 5; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = h ? low : top;
                    Pair& xv = reinterpret_cast<Pair*>(xt + r * 44)[4 * nt + q];
                    Pair gate, out;
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        gate.v[e] = c[nt][2 * h + e] * inv[h];
                        out.v[e] = gate.v[e] * xv.v[e];
                    }
                    reinterpret_cast<Pair*>(gs + r * 44)[4 * nt + q] = gate;
                    xv = out;
                }
        }
        __syncwarp();
#pragma unroll 4
        for (int c = lane; c < count * 10; c += 32)
            reinterpret_cast<Group*>(y + (row0 + c / 10) * 40)[c % 10] = reinterpret_cast<const Group*>(xt + (c / 10) * 44)[c % 10];
#pragma unroll 4
        for (int c = lane; c < count * 10; c += 32)
            reinterpret_cast<Group*>(gates + (row0 + c / 10) * 40)[c % 10] = reinterpret_cast<const Group*>(gs + (c / 10) * 44)[c % 10];
        __syncwarp();
        load(xt, index + 3);
#if defined(__CUDA_ARCH__)
        asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
    }
}
