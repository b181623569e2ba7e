// lg/lg.cuh: layoutgen's device library, release build: everything a generated views header and its kernels
// use (`#include <lg/lg.cuh>`, with the folder `layoutgen includes` prints on the include path; layoutgen's
// own compiles put it there). The debug build's is lg/debug.cuh. One concept a header:
//
//   lg/version.cuh      the library's version and its namespace, `lg::v0_1_0` (why: see there)
//   lg/field.cuh        lg::Field (a field's rows as a kernel indexes them), lg::Row, lg::Vec
//   lg/copy.cuh         who copies a shared tile (lg::TileScope); lg::async_commit, lg::async_wait
//   lg/tile.cuh         lg::SharedTile (tiles of rows in shared memory) and their copies
//   lg/thread.cuh      lg::divmod, lg::aligned: a one-thread grid's own index arithmetic
//   lg/grid.cuh         the tiles of a persistent grid (lg::Tile, lg::Tiles), dynamic shared memory's places
//   lg/entry.cuh        what a hand-written kernel's entry is asked (SourceKernel)
//   lg/debug_tile.cuh   the debug build's lg::SharedTile        (lg/debug.cuh)
//   lg/checked.cuh      the debug build's checked pointers and views   (lg/debug.cuh)
//   lg/debug_barrier.cuh the debug build's checked __syncthreads()   (lg/debug.cuh)
//   lg/debug_shared.cuh the debug build's shared memory at a block's start: all-ones   (lg/debug.cuh)
//   lg/site.cuh, lg/fault.cuh   the debug build's contract with what reports its faults (not versioned)
//   lg/checked_cast.cuh  the debug build's reinterpret_cast, for the code after a debug views header
#ifndef LG_V0_1_0_LG_CUH
#define LG_V0_1_0_LG_CUH
#include "copy.cuh"
#include "entry.cuh"
#include "field.cuh"
#include "grid.cuh"
#include "thread.cuh"
#include "tile.cuh"
#include "version.cuh"
#endif  // LG_V0_1_0_LG_CUH
