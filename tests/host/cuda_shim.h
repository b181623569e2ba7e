// Host emulation of the CUDA a generated kernel uses, for CPU tests: each
// call of the kernel function is one thread (blockIdx, threadIdx set by the
// caller); device qualifiers vanish; math comes from <cmath>.
#pragma once
#include <cmath>
#define __global__
#define __device__
#define __host__  // lg/entry.cuh (the device library) marks its compile-time helpers __host__ __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__
struct lg_dim3 { unsigned x = 0, y = 0, z = 0; };
static lg_dim3 blockIdx, blockDim, threadIdx;
