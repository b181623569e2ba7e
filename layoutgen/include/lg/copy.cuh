// lg/copy.cuh: what both builds' shared tiles (lg/tile.cuh, lg/debug_tile.cuh) share: who copies a tile, and
// the stages of asynchronous copies (cp.async on sm_80 and later).
#ifndef LG_V0_1_0_COPY_CUH
#define LG_V0_1_0_COPY_CUH
#include "version.cuh"

namespace lg {
inline namespace v0_1_0 {

// Who copies a shared tile and owns its buffer: the whole block, or each warp its own (its 32 lanes copy it).
enum class TileScope { block, warp };

// The stages of a tile's load_async(): commit the copies issued since the last commit as one stage; wait
// until all but the newest N stages have landed (then a barrier, before other threads read them).
__device__ __forceinline__ void async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N = 0>
__device__ __forceinline__ void async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_COPY_CUH
