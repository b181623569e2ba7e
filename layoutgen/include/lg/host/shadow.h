// The shadow of the outputs in `layoutgen check --execute` (lg/host/sanitizer.h includes it): which elements of
// each Out and InOut parameter were written, and by whom, so that a read of an output element nothing wrote
// yet (LG656) and two plain writes of one element that nothing orders (LG657) are found at their line.
//
// Every checked access (lg::footprint::check of lg/checked.cuh: the views' accessors, the pointers taken from
// them, a hand-written entry's checked pointers, the checked atomics) calls lg_san::accessed() through
// LG_HOST_ACCESS, defined here; the device build has no such macro and its check() no such call. An access
// the checks do not see (a view's vec<N>, a tile's generated copy, a pointer converted to a raw one) is
// neither a read nor a write here: a read is a finding only where the element still holds the poison that
// sanitizer.h's prepare() put there, so an element written by a path the shadow does not see is not reported
// (false alarms are worse than misses; the one left: an integer element such a path set to -1, the poison's
// all-ones bytes, then read through a view), and such writes take no part in the race check.
//
// Races: the host runtime runs a block's threads as OS threads at once and the blocks of a launch one after
// another (lg/host/runtime.h), so each element's record is one 64-bit atomic word, updated with one
// exchange. A plain write records its block, thread and the barrier generations it writes in (its block's
// __syncthreads() count and its warp's __syncwarp() count, shuffles included: a thread's own count of the
// barriers it has passed, the same for every thread between two barriers). A plain write races the plain
// write before it where that was another block's (nothing orders two blocks: the host runtime has no
// grid-wide barrier), or another thread's of the same block in the same __syncthreads() interval and, for two
// lanes of one warp, the same __syncwarp() interval. Atomics never race (with atomics or with the plain
// write before: that is a miss, not an alarm) and leave the plain writer recorded.
//
// Access codes (the third argument of lg::footprint::check): 0 a read, 1 a write, 2 either (a reference or a
// vector element handed out: unknown, so neither here), 3 a compound assignment or ++/-- (a read, then a
// plain write), 4 an atomic that reads the old value (atomicAdd, atomicMax, atomicCAS...: a read, then an
// atomic write), 5 atomicExch (an atomic write). An atomic on an output element nothing wrote is a read of it:
// the classic accumulation into an output nobody zeroed.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>

namespace lg_san {
// One element's record. The generations are kept modulo their fields' sizes: two writes 2^20 block barriers
// (or 2^16 warp barriers) apart read as one interval, a false race no kernel at the CPU run's sizes reaches.
namespace shadow_bits {
inline constexpr std::uint64_t written = 1ull << 63;  // any write, plain or atomic
inline constexpr std::uint64_t plain = 1ull << 62;  // the fields below are the last plain writer's
inline constexpr int block_shift = 46, thread_shift = 36, generation_shift = 16;
inline constexpr std::uint64_t block_mask = 0xffff, thread_mask = 0x3ff, generation_mask = 0xfffff, warp_mask = 0xffff;
}  // namespace shadow_bits

// A plain writer: its block, thread, block barrier generation and warp barrier generation.
struct Writer {
    std::uint64_t block, thread, generation, warp_generation;
};

inline std::uint64_t pack(const Writer& w) {
    using namespace shadow_bits;
    return written | plain | (w.block & block_mask) << block_shift | (w.thread & thread_mask) << thread_shift
           | (w.generation & generation_mask) << generation_shift | (w.warp_generation & warp_mask);
}
inline Writer unpack(std::uint64_t word) {
    using namespace shadow_bits;
    return {word >> block_shift & block_mask, word >> thread_shift & thread_mask,
            word >> generation_shift & generation_mask, word & warp_mask};
}

// Whether a plain write by `now` races the plain write recorded as `before` (both packed: pack()).
inline bool races(std::uint64_t before, std::uint64_t now) {
    if (!(before & shadow_bits::plain)) return false;
    const Writer a = unpack(before), b = unpack(now);
    if (a.block != b.block) return true;  // nothing orders two blocks
    if (a.thread == b.thread || a.generation != b.generation) return false;  // one thread, or a __syncthreads() between
    return a.thread / 32 != b.thread / 32 || a.warp_generation == b.warp_generation;  // a __syncwarp() orders one warp
}

// The calling thread as a writer (the host runtime's block state: its barriers' generations).
inline Writer writer_now() {
    const lg_host::BlockState& s = *lg_host::state;
    return {blockIdx.x, threadIdx.x, s.block.generation.load(std::memory_order_acquire),
            s.warps[threadIdx.x / 32].generation.load(std::memory_order_acquire)};
}

inline bool reads(int access) { return access == 0 || access == 3 || access == 4; }
inline bool plain_write(int access) { return access == 1 || access == 3; }
inline bool atomic_write(int access) { return access == 4 || access == 5; }

// Whether unwritten reads were reported: finish() then names no NaN (it came from what was read).
inline std::atomic<int> unwritten_reads{0};

// One finding at the user's line: once per place and kind (`kind` 1 an unwritten read, 2 a race: a `+=` may make
// both), the place being the calls that led here (the checks are not always inlined, so the return address
// alone would be one place for every access of a kernel).
__attribute__((noinline)) inline void shadow_finding(const char* head, std::uint64_t kind) {
    void* frames[24];
    const int n = backtrace(frames, 24);
    std::uint64_t place = 1469598103934665603ull ^ kind;  // FNV-1a over the return addresses
    for (int i = 1; i < n; ++i) place = (place ^ reinterpret_cast<std::uintptr_t>(frames[i])) * 1099511628211ull;
    if (!first_at(reinterpret_cast<const void*>(place | 1))) return go_on();
    char where[768], line[1536];
    context(where, sizeof where, n > 2 ? frames[2] : nullptr);
    std::snprintf(line, sizeof line, "%s%s\n", head, where);
    say(line);
    go_on();
}

// Element `e` of region `i` (inside its footprint) met by an access.
inline void shadow_element(int i, Region& r, long long e, int access) {
    std::atomic<std::uint64_t>& word = r.shadow[e];
    const long long row = e / r.row_stride, col = e % r.row_stride;
    char head[512];
    if (reads(access) && r.access == 1 && !(word.load(std::memory_order_acquire) & shadow_bits::written)
        && is_unwritten(r.base + e * r.itemsize, r.itemsize, r.kind)) {
        unwritten_reads.store(1);
        std::snprintf(head, sizeof head, "LGSAN\tkind=unwritten-read\tregion=%d\taccess=%d\trow=%lld\tcol=%lld"
                      "\tfield_row=%lld", i, access, row, col, r.field_row(row));
        shadow_finding(head, 1);
    }
    if (plain_write(access)) {
        const std::uint64_t now = pack(writer_now());
        const std::uint64_t before = word.exchange(now, std::memory_order_acq_rel);
        if (races(before, now)) {
            const Writer other = unpack(before);
            std::snprintf(head, sizeof head, "LGSAN\tkind=race\tregion=%d\trow=%lld\tcol=%lld\tfield_row=%lld"
                          "\tother_block=%llu\tother_thread=%llu", i, row, col, r.field_row(row),
                          static_cast<unsigned long long>(other.block), static_cast<unsigned long long>(other.thread));
            shadow_finding(head, 2);
        }
    } else if (atomic_write(access)) {
        word.fetch_or(shadow_bits::written, std::memory_order_acq_rel);
    }
}

// A checked access of `bytes` bytes at `at` through a pointer into parameter `param`'s array `array`.
__attribute__((noinline)) inline void accessed(const void* array, int param, const void* at, long long bytes,
                                               int access) {
    if (!current || !lg_host::state || access == 2 || param < 0 || param >= current->count) return;
    Region& r = current->regions[param];
    if (!r.shadow || r.base != array) return;  // not an output (or not this launch's array)
    const long long first = static_cast<const unsigned char*>(at) - r.base;
    if (first < 0 || bytes <= 0 || first + bytes > r.elements() * r.itemsize) return;  // LG650's, not ours
    for (long long e = first / r.itemsize; e <= (first + bytes - 1) / r.itemsize; ++e) {
        const long long row = e / r.row_stride, col = e % r.row_stride;
        if (r.row_in(row) && col >= r.offset && col < r.offset + r.width) shadow_element(param, r, e, access);
    }
}

// The shadow of each output of the launch, every element unwritten (prepare() calls it).
inline void make_shadows(Launch& launch) {
    for (int i = 0; i < launch.count; ++i) {
        Region& r = launch.regions[i];
        if (r.access == 1 || r.access == 2) r.shadow = new std::atomic<std::uint64_t>[r.elements()]();
    }
}

// Whether an element holding the poison was written by an access the shadow saw (then it is a NaN computed
// from the poison, not an element left unwritten).
inline bool shadow_written(const Region& r, long long e) {
    return r.shadow && (r.shadow[e].load() & shadow_bits::written);
}
}  // namespace lg_san

// The hook of lg::footprint::check (lg/checked.cuh) in the CPU run; the device build does not define it.
#define LG_HOST_ACCESS(array, param, at, bytes, access) ::lg_san::accessed(array, param, at, bytes, access)
