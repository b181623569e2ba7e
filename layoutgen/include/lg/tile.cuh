// lg/tile.cuh: tiles of a field's rows in shared memory (lg::SharedTile) and their copies: coalesced, through
// the views' own accessors, and asynchronous (cp.async) where the arch has it. The release build's tile is
// `lg::v0_1_0::release::SharedTile`; the debug build's (lg/debug_tile.cuh) another type of the same source.
#ifndef LG_V0_1_0_TILE_CUH
#define LG_V0_1_0_TILE_CUH
#include "copy.cuh"
#include "field.cuh"

namespace lg {
inline namespace v0_1_0 {

inline namespace release {
#define LG_DETAIL_DEBUG 0
#include "detail/shared_tile.cuh"
#undef LG_DETAIL_DEBUG
}  // inline namespace release

}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_TILE_CUH
