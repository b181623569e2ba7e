// lg/debug.cuh: layoutgen's device library, debug build (`layoutgen generate --debug`): lg/lg.cuh's headers
// but the release build's tile, with each access checked. Its own types are in `lg::v0_1_0::debug`, the
// release build's in `lg::v0_1_0::release`: a debug and a release views header in one translation unit each
// keep their own (a name both declare is ambiguous there, never the first one's). lg/lg.cuh lists the headers.
// From here on the user's __syncthreads() is the checked barrier of lg/debug_barrier.cuh.
#ifndef LG_V0_1_0_DEBUG_CUH
#define LG_V0_1_0_DEBUG_CUH
#include "checked.cuh"
#include "copy.cuh"
#include "debug_tile.cuh"
#include "debug_shared.cuh"
#include "entry.cuh"
#include "fault.cuh"
#include "field.cuh"
#include "grid.cuh"
#include "site.cuh"
#include "thread.cuh"
#include "version.cuh"
#include "debug_barrier.cuh"  // last: its __syncthreads() is for the code after the library
#endif  // LG_V0_1_0_DEBUG_CUH
