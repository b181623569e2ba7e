// lg/debug_shared.cuh: the debug build's shared memory at a block's start: all-ones bytes (a NaN of every floating
// type), static `__shared__` arrays and the dynamic buffer alike, as the CPU run of `check --execute` fills them
// before each block (lg/host/runtime.h, lg/host/sanitizer.h). So a value a kernel computes from shared memory nothing
// of the block wrote (a static array summed over more threads than the block has) is a NaN in its output, which the
// launcher's scan names (LG612, in the words of the CPU run's LG654); on the GPU such memory holds whatever the block
// before left there, most often finite.
//
// A generated kernel of the debug build calls lg::fill_shared_with_ones() first, before any thread can return
// (layoutgen/templates/kernel.cu.j2); every thread of the block fills its share, then the block meets once.
//
// Where the shared memory lies: the shared window of a block is addressed from 0; the dynamic buffer begins where
// the static arrays end (the address of any `extern __shared__` array), and the static arrays take at most
// %total_smem_size - %dynamic_smem_size bytes below it (the register counts allocation units of 128 bytes, so the
// span may reach below the first static array: into the region reserved for NVIDIA's system software, which is left
// out by its own registers, or below 0, which is cut). The CPU run has its own: nothing here fills anything there.
#ifndef LG_V0_1_0_DEBUG_SHARED_CUH
#define LG_V0_1_0_DEBUG_SHARED_CUH
#include "version.cuh"

namespace lg {
inline namespace v0_1_0 {
inline namespace debug {

#if defined(__CUDACC__)
// The start of the dynamic buffer (every `extern __shared__` array of a kernel has this address).
extern __shared__ __align__(16) unsigned char shared_after_statics[];

__device__ __noinline__ void fill_shared_with_ones() {
    unsigned total = 0, dynamic = 0, reserved_begin = 0, reserved_end = 0;
    asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(total));
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic));
#if __CUDA_ARCH__ >= 800
    asm volatile("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(reserved_begin));
    asm volatile("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(reserved_end));
#endif
    const long long statics_end = static_cast<long long>(__cvta_generic_to_shared(shared_after_statics));
    const long long low = statics_end - (static_cast<long long>(total) - dynamic) > 0
                              ? statics_end - (static_cast<long long>(total) - dynamic) : 0;
    const long long high = statics_end + dynamic;
    const long long thread =
        threadIdx.x + static_cast<long long>(blockDim.x) * (threadIdx.y + blockDim.y * threadIdx.z);
    const long long threads = static_cast<long long>(blockDim.x) * blockDim.y * blockDim.z;
    for (long long at = low + thread; at < high; at += threads)
        if (at < reserved_begin || at >= reserved_end)
            *static_cast<unsigned char*>(__cvta_shared_to_generic(static_cast<size_t>(at))) = 0xff;
    __syncthreads_count(1);  // the hardware's barrier: every thread of the block is here (none has returned yet)
}
#else
inline void fill_shared_with_ones() {}  // the CPU run fills the block's shared memory before its threads start
#endif

}  // inline namespace debug
}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_DEBUG_SHARED_CUH
