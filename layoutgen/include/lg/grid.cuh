// lg/grid.cuh: what the cooperative grids' prologues hand a kernel's body: the tiles of a persistent grid
// (lg::TileOf, lg::TilesOf: a kernel's file names them lg::Tile and lg::Tiles for its own index type) and the
// places of its dynamic shared memory.
#ifndef LG_V0_1_0_GRID_CUH
#define LG_V0_1_0_GRID_CUH
#include "version.cuh"

namespace lg {
inline namespace v0_1_0 {

// A tile of a persistent grid (lg::Tile): rows `row` .. `row + rows` of the grid's parameter (`rows` is the
// tile's capacity, fewer in the last tile, none past it), the `index`-th of the tiles its block
// (Grid.persistent) or its warp (Grid.persistent_warps) owns.
template <typename Index>
struct TileOf {
    Index row;
    int rows;
    int index;
};

// The tiles (lg::Tiles) one block (Grid.persistent) or one warp (Grid.persistent_warps) owns, for a
// range-for: tile `first`, then every `step`-th. nth(i) is the i-th of them: with no rows past the last, so that a pipeline
// can load the tile a few steps ahead without a test (a copy of no rows copies nothing).
template <typename Index>
struct TilesOf {
    Index total_rows;
    int capacity;
    long long first, step;

    __device__ __forceinline__ TileOf<Index> nth(int i) const {
        const long long row = (first + i * step) * capacity;
        const long long rest = total_rows - row;
        return rest <= 0 ? TileOf<Index>{ total_rows, 0, i }
                         : TileOf<Index>{ static_cast<Index>(row), rest < capacity ? static_cast<int>(rest) : capacity, i };
    }

    struct iterator {
        long long tile, step, total_rows;
        int capacity, index;
        __device__ __forceinline__ TileOf<Index> operator*() const {
            const long long row = tile * capacity;
            const long long rest = total_rows - row;
            return TileOf<Index>{ static_cast<Index>(row), rest < capacity ? static_cast<int>(rest) : capacity, index };
        }
        __device__ __forceinline__ iterator& operator++() {
            tile += step;
            ++index;
            return *this;
        }
        __device__ __forceinline__ bool operator!=(const iterator& end) const { return tile < end.tile; }
    };
    __device__ __forceinline__ iterator begin() const { return iterator{ first, step, total_rows, capacity, 0 }; }
    __device__ __forceinline__ iterator end() const {
        return iterator{ (total_rows + capacity - 1) / capacity, 0, total_rows, capacity, 0 };
    }
};

// Where the next array of a kernel's dynamic shared memory starts after one that ends at byte `end`: the next
// 16-byte boundary (the launcher sizes the buffer by the same rule).
__device__ __forceinline__ constexpr long long shared_start(long long end) { return (end + 15) / 16 * 16; }
// The warp of the block this thread is in: where its own copy of a tile scoped to a warp lies.
__device__ __forceinline__ unsigned warp_in_block() { return threadIdx.x / 32; }
}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_GRID_CUH
