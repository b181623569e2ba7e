// lg/debug_tile.cuh: the debug build's shared tile, `lg::v0_1_0::debug::SharedTile`: the release tile's source
// (lg/detail/shared_tile.cuh, lg/tile.cuh's) with its checks. Each index is checked against the tile, a copy of more rows
// than it holds stops the thread, and the rows a copy leaves out hold all-ones bytes (a NaN of every floating
// type), whose reads are recorded (lg::unheld_read) and named where a NaN reaches an output. An element is a
// checked reference (lg/checked.cuh), so a pointer taken from the tile is a checked pointer with the tile's
// footprint: the rows it holds, its columns, its pitch.
#ifndef LG_V0_1_0_DEBUG_TILE_CUH
#define LG_V0_1_0_DEBUG_TILE_CUH
#include "checked.cuh"
#include "copy.cuh"
#include "fault.cuh"
#include "field.cuh"
#include "site.cuh"

namespace lg {
inline namespace v0_1_0 {
inline namespace debug {

// What the debug build writes into the rows of a shared tile that a copy into it left out (the rows past the
// count of a short last tile): all-ones bytes, a NaN of every floating type, so that a value computed from them
// shows in the outputs; the accessors tell a read of such an element by these bytes.
__device__ __forceinline__ bool all_ones(const void* at, int bytes) {
    const unsigned char* b = static_cast<const unsigned char*>(at);
    for (int i = 0; i < bytes; ++i)
        if (b[i] != 0xff) return false;
    return true;
}

#define LG_DETAIL_DEBUG 1
#include "detail/shared_tile.cuh"
#undef LG_DETAIL_DEBUG

}  // inline namespace debug
}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_DEBUG_TILE_CUH
