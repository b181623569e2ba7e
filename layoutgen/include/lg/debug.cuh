// lg/debug.cuh: layoutgen's device library, debug build (`layoutgen generate --debug`): lg/lg.cuh's headers
// but the release build's tile, with each access checked. Its own types are in `lg::v0_1_0::debug`, the
// release build's in `lg::v0_1_0::release`: a debug and a release views header in one translation unit each
// keep their own (a name both declare is ambiguous there, never the first one's). lg/lg.cuh lists the headers.
#ifndef LG_V0_1_0_DEBUG_CUH
#define LG_V0_1_0_DEBUG_CUH
#include "checked.cuh"
#include "copy.cuh"
#include "debug_tile.cuh"
#include "entry.cuh"
#include "fault.cuh"
#include "field.cuh"
#include "grid.cuh"
#include "site.cuh"
#include "thread.cuh"
#include "version.cuh"
#endif  // LG_V0_1_0_DEBUG_CUH
