// lg/fault.cuh: the debug build's fault records on the GPU and the functions that fill them: the first access of
// a launch outside its field (lg::Fault in `lg_fault`, from an accessor's check or a checked pointer's), and the
// first read of a shared tile's row that its copy left out (lg::Unheld in `lg_unheld`). The launcher reads
// them after each launch (layoutgen/runtime/debug.py describes lg::Fault word for word).
//
// Not versioned: these are the contract between the debug build and what reports its faults. The records are
// `extern "C"` globals that the runtime finds by name, so every library in a translation unit must write the
// same ones; the CPU run of `check --execute` defines LG_DEBUG_DEFINED and these functions itself
// (lg/host/sanitizer.h), reporting through its own channel. Changing a record's words changes the runtime's
// reader with it.
#ifndef LG_DEBUG_DEFINED
#define LG_DEBUG_DEFINED
// Debug build: the first access of a launch that falls outside its field.
// The launcher reads it after the launch, reports it and clears it.
namespace lg {
struct Fault {
    unsigned long long hit;  // 0 until an access falls outside its field
    long long param, row, col, rows, width;
    long long block, thread;  // who met it (the CPU run of `check --execute` reports the same)
    long long access;  // -1: an accessor's index check; 0 a read, 1 a write, 2 either: through a checked pointer;
                       // -2 a thread returned while others wait at a barrier, -3 a thread reached another barrier
                       // (lg/debug_barrier.cuh: `thread` is that thread, `line` the barrier's)
    long long line;  // the user's line of the access or of the pointer's taking (0: not known), in `file`
    long long offset, row_stride;  // a checked pointer's footprint: the field's first column, its rows' stride
    char file[256];
    char name[128];  // a shared tile's pointer (param < 0): the tile as the debug build names it, `kernel.xs (a tile of x)`
};
}  // namespace lg
extern "C" {
__device__ lg::Fault lg_fault;
}
namespace lg {
// Claims the fault record for this thread's first fault of the launch: who met it, and where.
__device__ __forceinline__ bool claim_fault(const char* file, int line) {
    if (atomicCAS(&lg_fault.hit, 0ull, 1ull) != 0ull) return false;
    lg_fault.block = blockIdx.x;
    lg_fault.thread = threadIdx.x;
    lg_fault.line = file ? line : 0;
    int n = 0;
    for (; file && file[n] && n < 255; ++n) lg_fault.file[n] = file[n];
    lg_fault.file[n] = 0;
    return true;
}
// Records the first fault, prints it, and ends the offending thread before it
// touches memory outside the field.
__device__ __noinline__ void out_of_field(const char* where, int param, long long row, long long col,
                                          long long rows, long long width, const char* file = nullptr, int line = 0) {
    if (claim_fault(file, line)) {
        lg_fault.param = param;
        lg_fault.row = row;
        lg_fault.col = col;
        lg_fault.rows = rows;
        lg_fault.width = width;
        lg_fault.access = -1;
        if (width < 0)  // one index of an accessor: `row` is its position, `col` the index, `rows` its extent
            printf("layoutgen: %s: index %lld of the accessor is %lld, outside 0..%lld, in block %u, thread %u\n",
                   where, row, col, rows, blockIdx.x, threadIdx.x);
        else
            printf("layoutgen: %s: row %lld, column %lld is outside the field (%lld rows, %lld columns), in block %u, "
                   "thread %u\n", where, row, col, rows, width, blockIdx.x, threadIdx.x);
    }
    asm volatile("exit;");
}
// The record of a checked pointer's access outside its footprint, for the claimed fault (both reports below).
__device__ __forceinline__ void record_footprint(int param, long long row, long long col, long long rows,
                                                 long long offset, long long width, long long row_stride, int access) {
    lg_fault.param = param;
    lg_fault.row = row;
    lg_fault.col = col;
    lg_fault.rows = rows;
    lg_fault.width = width;
    lg_fault.access = access;
    lg_fault.offset = offset;
    lg_fault.row_stride = row_stride;
}
// A checked pointer's access outside its footprint (lg::footprint::check): row `row`, column `col` of the
// array (`field_row`: the field's row, -1 where the row is not the field's). The same record; the launcher
// words it as the CPU run's LG650.
__device__ __noinline__ void out_of_footprint(const char* where, int param, long long row, long long col,
                                              long long field_row, long long offset, long long width,
                                              long long row_stride, int access, const char* file, int line) {
    if (claim_fault(file, line)) {
        record_footprint(param, row, col, field_row, offset, width, row_stride, access);
        printf("layoutgen: %s: array row %lld, column %lld is outside the field's columns %lld..%lld (rows %lld "
               "elements apart), in block %u, thread %u\n", where, row, col, offset, offset + width, row_stride,
               blockIdx.x, threadIdx.x);
    }
    asm volatile("exit;");
}
// The same of a pointer taken from a shared tile (`param` -1 - the tile's index): the record holds the rows the
// tile held in `rows`, its capacity in `offset` (its columns start at 0; `row_stride` is its pitch) and its name
// in `name`. A function of its own, so that a parameter's report (above) stays as small as it was: the debug
// build calls one of them from every checked access.
__device__ __noinline__ void out_of_tile(const char* where, int param, long long row, long long col, long long held,
                                         long long capacity, long long width, long long pitch, int access,
                                         const char* file, int line) {
    if (claim_fault(file, line)) {
        record_footprint(param, row, col, held, capacity, width, pitch, access);
        int n = 0;
        for (; where && where[n] && n < 127; ++n) lg_fault.name[n] = where[n];
        lg_fault.name[n] = 0;
        printf("layoutgen: %s: row %lld, column %lld is outside the %lld rows the tile holds and its %lld "
               "columns (pitch %lld), in block %u, thread %u\n", where, row, col, held, width, pitch, blockIdx.x,
               threadIdx.x);
    }
    asm volatile("exit;");
}
// The first read of a launch, through a shared tile's accessor, of a row past those the tile holds (a short last
// tile: rows `held`.. of its `capacity`) that still held what the copy left there. Not a fault on its own: a
// kernel may compute rows it never stores (a tensor-core tile's rows past the count). The record names the read
// where the launch's NaN scan finds a NaN in an output, in the CPU run's LG655 words (layoutgen/runtime/debug.py's
// UnheldRecord reads it word for word).
struct Unheld {
    unsigned long long hit;  // 0 until such a read
    long long tile, row, col, held, capacity;
    long long block, thread, line;  // who read it, and the user's line of the read in `file`
    char file[256];
    char tile_name[128];  // the tile as the debug build names it: `kernel.xs (a tile of x)`
};
}  // namespace lg
extern "C" {
__device__ lg::Unheld lg_unheld;
}
namespace lg {
__device__ __noinline__ void unheld_read(const char* where, int tile, long long row, long long col, long long held,
                                         long long capacity, const char* file, int line) {
    if (atomicCAS(&lg_unheld.hit, 0ull, 1ull) != 0ull) return;
    lg_unheld.tile = tile;
    lg_unheld.row = row;
    lg_unheld.col = col;
    lg_unheld.held = held;
    lg_unheld.capacity = capacity;
    lg_unheld.block = blockIdx.x;
    lg_unheld.thread = threadIdx.x;
    lg_unheld.line = file ? line : 0;
    int n = 0;
    for (; file && file[n] && n < 255; ++n) lg_unheld.file[n] = file[n];
    lg_unheld.file[n] = 0;
    for (n = 0; where && where[n] && n < 127; ++n) lg_unheld.tile_name[n] = where[n];
    lg_unheld.tile_name[n] = 0;
}
}  // namespace lg
#endif  // LG_DEBUG_DEFINED
