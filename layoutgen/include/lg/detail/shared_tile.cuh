// lg/detail/shared_tile.cuh: the text of lg::SharedTile, for both builds. No guard: lg/tile.cuh includes it
// into `lg::v0_1_0::release` with LG_DETAIL_DEBUG 0 and lg/debug_tile.cuh into `lg::v0_1_0::debug` with
// LG_DETAIL_DEBUG 1 (the debug build's tile knows which tile of the kernel it is, checks each index and
// marks the rows a copy left out), so the two builds are two types with one source. Include those, not this.
#if !defined(LG_DETAIL_DEBUG)
#error "lg/detail/shared_tile.cuh is included by lg/tile.cuh and lg/debug_tile.cuh only"
#endif
// The debug build's copies take their caller's line (LG_SITE, lg/site.cuh) and hand it to the view's accessor, so
// that a copy from a narrower field is named at the user's `xs.load(...)`, not at this file's line; the release
// build's signatures have no such parameter.
#if LG_DETAIL_DEBUG
#define LG_DETAIL_CALLER , lg::site lg_site LG_SITE
#define LG_DETAIL_AT , lg_site
#else
#define LG_DETAIL_CALLER
#define LG_DETAIL_AT
#endif

// A tile of up to Capacity rows of a field's Width columns in shared memory, Pitch
// elements a row, that the Threads threads of a block (Scope block) or the 32 lanes of a
// warp (Scope warp, each warp its own tile) fill from a view and write back to one
// together: the copies are coalesced (consecutive threads move consecutive VectorBytes
// groups of a row, every load issued before the first store), and they go through the
// view's own vec<>() accessor, so the global addresses are the layout's and the debug
// build checks them. layoutgen chooses Pitch: rows at VectorBytes boundaries, an odd
// number of VectorBytes groups apart, so that a thread per row reading its row's groups
// meets no bank conflict. A barrier (__syncthreads(), or __syncwarp() for a warp's tile)
// must separate a copy from the reads and writes of the tile by other threads. A tile of
// Stages > 1 is a ring of that many such tiles, one after another: stage(i) is the
// (i % Stages)-th, on which the accessors and copies below work.
template <typename T, int Capacity, int Width, int Pitch, int VectorBytes, int Threads,
          TileScope Scope = TileScope::block, int Stages = 1>
struct SharedTile {
    static constexpr int capacity = Capacity;  // rows the tile holds
    static constexpr int width = Width;  // columns of each row
    static constexpr int pitch = Pitch;  // elements from one row of the tile to the next
    static constexpr int vector_bytes = VectorBytes;  // the width of each copy's accesses
    static constexpr int stages = Stages;  // tiles of the ring (1: a plain tile)
    static constexpr TileScope scope = Scope;
    static_assert(Width * sizeof(T) % VectorBytes == 0 && Pitch * sizeof(T) % VectorBytes == 0,
                  "a tile's rows are whole groups of its vector width");
    static_assert(Scope == TileScope::block || Threads == 32, "a warp's tile is copied by its 32 lanes");
    // One stage of the ring: a plain tile.
    using Stage = SharedTile<T, Capacity, Width, Pitch, VectorBytes, Threads, Scope, 1>;

    T* data;  // Stages * Capacity * Pitch elements of shared memory, 16-byte aligned (a warp's own, for a warp's tile)
#if LG_DETAIL_DEBUG
    int lg_tile;  // debug build: which shared tile of the kernel this is, and its name for messages
    const char* lg_where;
    // The rows each stage holds, plus one (0: never copied into, every row counts), as this thread's last copy
    // into it counted them: a copy is the whole block's (a warp's, for a warp's tile), every thread with the same
    // count, so each thread knows what the tile holds. A stage handed out by stage(i) counts in its ring's slot.
    int* lg_slot = nullptr;
    mutable int lg_loaded[Stages] = {};
    __device__ __forceinline__ int* lg_held(int i) const { return lg_slot ? lg_slot : lg_loaded + i % Stages; }
    __device__ __forceinline__ void lg_check(long long r, long long c, lg::site s = {nullptr, 0}) const {
        if (r < 0 || r >= Capacity || c < 0 || c >= Width)
            out_of_field(lg_where, -1 - lg_tile, r, c, Capacity, Width, s.file, s.line);
    }
    // An access of row `r` past the rows the tile holds that finds the copy's all-ones bytes there: recorded
    // (lg::unheld_read), reported where a NaN reaches an output.
    __device__ __forceinline__ void lg_unheld(int r, long long c, const void* at, int bytes, lg::site s) const {
        const int held = *lg_held(0) - 1;
        if (held >= 0 && r >= held && all_ones(at, bytes)) lg::unheld_read(lg_where, lg_tile, r, c, held, Capacity, s.file, s.line);
    }
    // A copy of `count` rows into the tile, before it: the rows past them are the tile's no longer (all-ones
    // bytes, each thread its share, as the copy's own), and this thread knows the tile holds `count`.
    __device__ __forceinline__ void lg_copied(int count) const {
        const int from = count < 0 ? 0 : count;
        *lg_held(0) = from + 1;
        for (long long q = copier(); q < static_cast<long long>(Capacity - from) * Width; q += Threads) {
            unsigned char* e = reinterpret_cast<unsigned char*>(data + (from + q / Width) * Pitch + q % Width);
            for (unsigned b = 0; b < sizeof(T); ++b) e[b] = 0xff;
        }
    }
#endif

    // Stage `i % Stages` of the ring (i >= 0); a plain tile is its own only stage, so a pipeline's body is
    // the same for any number of stages.
    __device__ __forceinline__ Stage stage(int i) const {
        Stage one{ data + (i % Stages) * (Capacity * Pitch) };
#if LG_DETAIL_DEBUG
        if (i < 0) out_of_field(lg_where, -1 - lg_tile, 0, i, Stages, -1);
        one.lg_tile = lg_tile;
        one.lg_where = lg_where;
        one.lg_slot = lg_held(i);
#endif
        return one;
    }

    // Element `c` of row `r` of the tile.
#if LG_DETAIL_DEBUG
    // The debug build's is a checked reference (lg/checked.cuh) whose address is a checked pointer with the tile's
    // footprint, so that a pointer taken from the tile (`const float* a = &xs(0, 0)`, which the debug build writes
    // as lg::checked_ptr) is checked at each access against the rows the tile holds now (a short last tile holds
    // fewer) and its columns 0..Width, Pitch apart. The element itself is checked here, as before.
    __device__ __forceinline__ checked_ref<T> operator()(int r, int c, lg::site lg_site LG_SITE) const {
        static_assert(Stages == 1, "a ring of tiles: index one stage of it, stage(i)(r, c)");
        lg_check(r, c);
        lg_unheld(r, c, data + r * Pitch + c, sizeof(T), lg_site);
        const int held = *lg_held(0) - 1;  // -1: never copied into, every row counts
        return checked_ref<T>(data + r * Pitch + c,
                              footprint{reinterpret_cast<const unsigned char*>(data), held < 0 ? Capacity : held, Pitch, 0,
                                        Width, 1, 0, Capacity, 0, static_cast<int>(sizeof(T)), -1 - lg_tile, lg_where,
                                        lg_site});  // start 1, len 0, size Capacity, inner 0: a tile's element
    }
#else
    __device__ __forceinline__ T& operator()(int r, int c) const {
        static_assert(Stages == 1, "a ring of tiles: index one stage of it, stage(i)(r, c)");
        return data[r * Pitch + c];
    }
#endif
    // The i-th group of BYTES bytes of row `r` of the tile (vec<8>(r, i): the pair of elements 2i, 2i + 1 of f32).
    template <int BYTES = VectorBytes>
    __device__ __forceinline__ Vec<T, BYTES / sizeof(T)>& vec(int r, int i) const {
        static_assert(Stages == 1, "a ring of tiles: index one stage of it, stage(i).vec(r, j)");
        static_assert(Pitch * sizeof(T) % BYTES == 0 && Width * sizeof(T) % BYTES == 0,
                      "the tile's rows are not whole groups of this width");
#if LG_DETAIL_DEBUG
        lg_check(r, (static_cast<long long>(i) + 1) * (BYTES / sizeof(T)) - 1);
        // (no caller's line here: the copies call vec() too, and the release build's signature stays; the CPU
        // run finds the line from the return address)
        lg_unheld(r, static_cast<long long>(i) * (BYTES / sizeof(T)), data + r * Pitch + i * (BYTES / sizeof(T)), BYTES,
                  lg::site{nullptr, 0});
#endif
        return reinterpret_cast<Vec<T, BYTES / sizeof(T)>*>(data + r * Pitch)[i];
    }

    // How a copy with `View` moves the rows: groups of `bytes`, as wide as both the tile and the view's
    // launcher allow; `groups` of them a row; `per_thread` a thread at the most.
    template <typename View>
    struct Copy {
        static constexpr int bytes = VectorBytes < View::vector_bytes ? VectorBytes : View::vector_bytes;
        static constexpr int groups = Width * int(sizeof(T)) / bytes;
        static constexpr int per_thread = (Capacity * groups + Threads - 1) / Threads;
    };
    // Which of the copy's Threads threads this one is: its index in the block, or its lane.
    __device__ __forceinline__ static int copier() {
        if constexpr (Scope == TileScope::warp)
            return static_cast<int>(threadIdx.x % 32);
        else
            return static_cast<int>(threadIdx.x);
    }
    // A copy of more rows than the tile holds: in the debug build it stops the thread, naming the tile.
    __device__ __forceinline__ void check_count([[maybe_unused]] int count) const {
        static_assert(Stages == 1, "a ring of tiles: copy to or from one stage of it, stage(i).load(...)");
#if LG_DETAIL_DEBUG
        if (count > Capacity) out_of_field(lg_where, -1 - lg_tile, count - 1, 0, Capacity, Width);
#endif
    }

    // Rows first..first+count of `view` into rows 0..count of the tile (count <= Capacity; none where count
    // <= 0), in groups as wide as both the tile and the view's launcher allow (declare vector=16 on a
    // parameter a tile of 16-byte groups is copied to or from, for 16-byte copies).
    template <typename View, typename Index>
    __device__ __forceinline__ void load(const View& view, Index first, int count LG_DETAIL_CALLER) const {
        check_count(count);
#if LG_DETAIL_DEBUG
        lg_copied(count);
#endif
        constexpr int bytes = Copy<View>::bytes, groups = Copy<View>::groups, per_thread = Copy<View>::per_thread;
        Vec<T, bytes / sizeof(T)> staged[per_thread];
#pragma unroll
        for (int k = 0; k < per_thread; ++k) {
            const int q = copier() + k * Threads;
            if (q < count * groups) staged[k] = view.template vec<bytes>(first + q / groups, q % groups LG_DETAIL_AT);
        }
#pragma unroll
        for (int k = 0; k < per_thread; ++k) {
            const int q = copier() + k * Threads;
            if (q < count * groups) vec<bytes>(q / groups, q % groups) = staged[k];
        }
    }
    // As load(), without waiting for the data: on sm_80 and later each group is a cp.async copy (global to
    // shared, not through registers), so the body can compute on another tile meanwhile; earlier archs,
    // and groups under 4 bytes, load() at once. Make the copies visible with lg::async_commit() after the
    // copies of a stage, lg::async_wait<N>() (all but the newest N stages have landed) and a barrier.
    template <typename View, typename Index>
    __device__ __forceinline__ void load_async(const View& view, Index first, int count LG_DETAIL_CALLER) const {
        constexpr int bytes = Copy<View>::bytes, groups = Copy<View>::groups;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        if constexpr (bytes >= 4) {
            check_count(count);
#if LG_DETAIL_DEBUG
            lg_copied(count);
#endif
            // A loop, not unrolled in full: a copy that does not wait needs no registers to stage it in, and a
            // pipeline keeps its registers for the tiles it computes on.
#pragma unroll 4
            for (int q = copier(); q < count * groups; q += Threads) {
                const void* from = &view.template vec<bytes>(first + q / groups, q % groups LG_DETAIL_AT);
                const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(&vec<bytes>(q / groups, q % groups)));
                if constexpr (bytes == 16)  // .cg: around L1, as the data is used once from shared memory
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
                else
                    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(from), "n"(bytes) : "memory");
            }
            return;
        }
#endif
        load(view, first, count LG_DETAIL_AT);
    }
    // Rows 0..count of the tile into rows first..first+count of `view`, in groups as load() makes them (a loop:
    // a store does not wait either).
    template <typename View, typename Index>
    __device__ __forceinline__ void store(const View& view, Index first, int count LG_DETAIL_CALLER) const {
        check_count(count);
        constexpr int bytes = Copy<View>::bytes, groups = Copy<View>::groups;
#pragma unroll 4
        for (int q = copier(); q < count * groups; q += Threads)
            view.template vec<bytes>(first + q / groups, q % groups LG_DETAIL_AT) = vec<bytes>(q / groups, q % groups);
    }
    // The same copies of the rows of a tile of a persistent grid (lg::Tile: rows t.row .. t.row + t.rows).
    template <typename View, typename Rows>
    __device__ __forceinline__ void load(const View& view, const Rows& rows LG_DETAIL_CALLER) const {
        load(view, rows.row, rows.rows LG_DETAIL_AT);
    }
    template <typename View, typename Rows>
    __device__ __forceinline__ void load_async(const View& view, const Rows& rows LG_DETAIL_CALLER) const {
        load_async(view, rows.row, rows.rows LG_DETAIL_AT);
    }
    template <typename View, typename Rows>
    __device__ __forceinline__ void store(const View& view, const Rows& rows LG_DETAIL_CALLER) const {
        store(view, rows.row, rows.rows LG_DETAIL_AT);
    }
};
#undef LG_DETAIL_CALLER
#undef LG_DETAIL_AT
