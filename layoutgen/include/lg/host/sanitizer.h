// The footprint sanitizer of `layoutgen check --execute`, for kernels compiled for the host against
// lg/host/runtime.h with AddressSanitizer (-fsanitize=address).
//
// Every parameter's array gets an allocation of its own, exactly the layout's size. What lies outside the
// parameter's footprint (the other fields' columns of each row, rows outside a named range) is poisoned,
// and so are the shared buffer's padding (a tile's pitch past its width, the gaps between arrays, the bytes
// past the launch's size). So every access is checked however it is spelled: through a view, a raw pointer
// taken from one, a `float*` handed to a helper, a macro, a cast to float4. The views' own checks (the debug
// build's lg_check: row and column against the field) report through lg::out_of_field below, which the
// debug build on the GPU implements with the same fields. Granularity: AddressSanitizer poisons 8-byte
// granules, a prefix of one at most: the columns just before a field that starts inside a granule (an f32
// field at an odd column) stay readable, and are left to the views' checks.
//
// Every finding is one line on stderr, `LGSAN` then tab-separated key=value pairs, read by layoutgen. A bad
// access is reported once per place (the address of the access) and the run goes on, so that every bad line
// of a kernel is found in one run (built with -fsanitize-recover=address, run with halt_on_error=0); after
// max_findings places, and at a finding the run cannot go on from (a view's check, a barrier, a crash), the
// process ends. The outputs have a shadow besides (lg/host/shadow.h): a read of an element nothing wrote and two
// plain writes of one element that nothing orders are found at their line.
#pragma once
#include <execinfo.h>
#include <sanitizer/asan_interface.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

namespace lg_san {
// A parameter's array and its footprint, or an array of the shared buffer (`shared` true: its rows are
// the tile's rows over every warp and stage, or one row of `width` bytes for a plain array).
struct Region {
    const char* param;  // the parameter or shared array
    const char* view;  // its view (`Window.snap`), or what the shared array is
    int access;  // 0 in, 1 out, 2 inout, 3 shared
    int itemsize;
    char kind;  // 'f' float, 'i' signed, 'u' unsigned, 'b' bf16 bits, 'h' f16 bits
    long long layout_rows, row_stride, offset, width;  // in elements
    long long axis_size, axis_start, axis_len, axis_inner;  // rows of a named range; axis_size 0: every row
    long long shared_start;  // shared: its first byte in the buffer
    unsigned char* base = nullptr;
    std::atomic<std::uint64_t>* shadow = nullptr;  // an output's: who wrote each element (lg/host/shadow.h)

    long long elements() const { return layout_rows * row_stride; }
    bool row_in(long long r) const {
        if (axis_size == 0) return true;
        const long long entry = r / axis_inner % axis_size;
        return entry >= axis_start && entry < axis_start + axis_len;
    }
    // The row in the field's own numbering (the layout's row where every row is the field's).
    long long field_row(long long r) const {
        if (axis_size == 0) return r;
        return r / (axis_inner * axis_size) * (axis_len * axis_inner) + (r / axis_inner % axis_size - axis_start) * axis_inner
               + r % axis_inner;
    }
    long long field_rows() const { return axis_size == 0 ? layout_rows : layout_rows / axis_size * axis_len; }
};

struct Launch {
    const char* kernel;
    Region* regions;
    int count;
    long long shared_bytes;
    unsigned seed;
};
inline Launch* current = nullptr;

inline void say(const char* text) {
    const ssize_t n = write(2, text, std::strlen(text));
    (void)n;
}

// The block and thread of the calling thread, and where it was: `pc` (the access, or the return address of
// a check's call), then the calls around it, for layoutgen to read back with addr2line to the user's line.
inline void context(char* out, std::size_t size, const void* pc) {
    void* frames[24];
    const int n = backtrace(frames, 24);
    int used = std::snprintf(out, size, "\tkernel=%s\tblock=%u\tthread=%u\tpc=%p\tcalls=",
                             current ? current->kernel : "?", blockIdx.x, threadIdx.x, pc);
    for (int i = 0; i < n && used > 0 && static_cast<std::size_t>(used) + 24 < size; ++i)
        used += std::snprintf(out + used, size - used, i ? ",%p" : "%p", frames[i]);
}

// Which region holds `address`, and its row and column there (-1 where none).
inline int locate(const void* address, long long* row, long long* col) {
    if (!current) return -1;
    for (int i = 0; i < current->count; ++i) {
        const Region& r = current->regions[i];
        const unsigned char* a = static_cast<const unsigned char*>(address);
        const long long bytes = r.elements() * r.itemsize;
        if (r.base && a >= r.base && a < r.base + bytes) {
            const long long e = (a - r.base) / r.itemsize;
            *row = e / r.row_stride;
            *col = e % r.row_stride;
            return i;
        }
    }
    return -1;
}

[[noreturn]] inline void stop() {
    std::fflush(stderr);
    _exit(3);
}

// The places of the bad accesses reported so far: each is reported once (every thread and every row meets the
// same bad line), and the run ends after max_findings of them (a loop unrolled over a bad pointer has a place
// per unrolled access; layoutgen reports each line once, and a few lines per kernel).
inline constexpr int max_findings = 256;
struct Findings {
    std::mutex mutex;
    const void* places[max_findings];
    int count = 0;
};
inline Findings findings;

// Whether `place` is reported for the first time (then it is counted).
inline bool first_at(const void* place) {
    std::lock_guard<std::mutex> lock(findings.mutex);
    for (int i = 0; i < findings.count; ++i)
        if (findings.places[i] == place) return false;
    if (findings.count == max_findings) return false;
    findings.places[findings.count++] = place;
    return true;
}

// After a bad access's finding: the run goes on (the access is made, as on the GPU), until max_findings.
inline void go_on() {
    bool full;
    {
        std::lock_guard<std::mutex> lock(findings.mutex);
        full = findings.count == max_findings;
    }
    if (full) stop();
}

// AddressSanitizer's report: an access outside every footprint, or a crash (a deadly signal: no access). Its pc
// is the return address of the check's call (a crash's: the faulting instruction); one place is reported once
// (AddressSanitizer's suppress_equal_pcs does so too).
inline void on_asan_report(const char* report) {
    long long row = 0, col = 0;
    void* address = __asan_get_report_address();
    const bool crash = __asan_get_report_access_size() == 0;
    if (!crash && !first_at(__asan_get_report_pc())) return go_on();
    const int i = locate(address, &row, &col);
    char where[768], line[1536];
    context(where, sizeof where, __asan_get_report_pc());
    if (crash) {  // "ERROR: AddressSanitizer: FPE on unknown address ..."
        const char* what = std::strstr(report, "AddressSanitizer: ");
        what = what ? what + 18 : "a deadly signal";
        const std::size_t n = std::strcspn(what, " \n\t(");  // FPE, SEGV, BUS, ILL
        std::snprintf(line, sizeof line, "LGSAN\tkind=crash\twhat=%.*s%s\n", static_cast<int>(n), what, where);
    } else if (i < 0) {
        std::snprintf(line, sizeof line, "LGSAN\tkind=address\twrite=%d\tbytes=%zu\tdescription=%s%s\n",
                      __asan_get_report_access_type(), __asan_get_report_access_size(), __asan_get_report_description(), where);
    } else {
        const Region& r = current->regions[i];
        std::snprintf(line, sizeof line,
                      "LGSAN\tkind=footprint\tregion=%d\twrite=%d\tbytes=%zu\trow=%lld\tcol=%lld\tfield_row=%lld%s\n", i,
                      __asan_get_report_access_type(), __asan_get_report_access_size(), row, col,
                      r.row_in(row) ? r.field_row(row) : -1, where);
    }
    say(line);
    if (crash) stop();
    go_on();
}

inline std::vector<unsigned char*> allocations;

// The first read of the launch, through a shared tile's accessor, of a row past those the tile holds (its
// copy's all-ones bytes still there; lg::unheld_read below): named where a NaN reaches an output, as its cause.
struct Unheld {
    std::atomic<int> hit{0};
    int tile = 0;
    long long row = 0, col = 0, held = 0, capacity = 0;
    char where[768] = "";  // the reader's block, thread and calls (context() below): addr2line finds its line
};
inline Unheld unheld;

// What an output element holds before the kernel writes it: a NaN whose payload arithmetic does not make (a
// float) or all-ones bytes (an integer); what is left of it afterwards was never written. The shared buffer
// is all-ones bytes instead, so that a NaN computed from it tells itself apart.
inline void unwritten(unsigned char* at, int itemsize, char kind) {
    std::memset(at, 0xff, itemsize);
    if (kind == 'f' && itemsize == 4) {
        const std::uint32_t bits = 0x7fc0deadu;
        std::memcpy(at, &bits, 4);
    } else if (kind == 'f' && itemsize == 8) {
        const std::uint64_t bits = 0x7ff8deaddeaddeadull;
        std::memcpy(at, &bits, 8);
    }
}
inline bool is_unwritten(const unsigned char* at, int itemsize, char kind) {
    unsigned char want[8];
    unwritten(want, itemsize, kind);
    return std::memcmp(at, want, itemsize) == 0;
}

}  // namespace lg_san
#include "shadow.h"  // the outputs' shadow: unwritten reads and racing writes at their line (uses what is above)
namespace lg_san {

// Allocate, fill and poison every parameter's array: inputs random finite values, outputs unwritten().
inline void prepare(Launch& launch) {
    current = &launch;
    make_shadows(launch);
    __asan_set_error_report_callback(on_asan_report);
    std::mt19937 random(launch.seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int i = 0; i < launch.count; ++i) {
        Region& r = launch.regions[i];
        if (r.access == 3) {
            r.base = lg_shared + r.shared_start;
            continue;
        }
        const long long n = r.elements(), bytes = n * r.itemsize;
        const long long rounded = (bytes + 63) / 64 * 64;
        unsigned char* a = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
        allocations.push_back(a);
        r.base = a;
        if (rounded > bytes) ASAN_POISON_MEMORY_REGION(a + bytes, rounded - bytes);  // past the array: no one's
        for (long long e = 0; e < n; ++e) {
            unsigned char* at = a + e * r.itemsize;
            if (r.access == 1) {
                unwritten(at, r.itemsize, r.kind);
            } else if (r.kind == 'f' && r.itemsize == 4) {
                const float v = uniform(random);
                std::memcpy(at, &v, 4);
            } else if (r.kind == 'f' && r.itemsize == 8) {
                const double v = uniform(random);
                std::memcpy(at, &v, 8);
            } else if (r.kind == 'b' || r.kind == 'h') {  // a 16-bit float near 1: the top bits of 0x3f80 or 0x3c00
                const std::uint16_t v = static_cast<std::uint16_t>((r.kind == 'b' ? 0x3f00 : 0x3800) + (random() & 0xff));
                std::memcpy(at, &v, 2);
            } else {  // an integer: small and non-negative, as counts and positions are
                const std::uint64_t v = random() % 64;
                std::memcpy(at, &v, r.itemsize);
            }
        }
        // Poison what is outside the footprint, row by row.
        for (long long row = 0; row < r.layout_rows; ++row) {
            unsigned char* first = a + row * r.row_stride * r.itemsize;
            if (!r.row_in(row)) {
                ASAN_POISON_MEMORY_REGION(first, r.row_stride * r.itemsize);
                continue;
            }
            if (r.offset > 0) ASAN_POISON_MEMORY_REGION(first, r.offset * r.itemsize);
            const long long end = r.offset + r.width;
            if (end < r.row_stride) ASAN_POISON_MEMORY_REGION(first + end * r.itemsize, (r.row_stride - end) * r.itemsize);
        }
    }
}

// Before each block: the shared buffer is all-ones bytes (NaN for floats: what a block reads before it writes
// shows in its outputs), its padding and everything past the launch's size poisoned.
inline void reset_shared(unsigned) {
    ASAN_UNPOISON_MEMORY_REGION(lg_shared, sizeof lg_shared);
    std::memset(lg_shared, 0xff, sizeof lg_shared);
    long long end = 0;  // what the arrays before cover
    for (int i = 0; i < current->count; ++i) {
        const Region& r = current->regions[i];
        if (r.access != 3) continue;
        if (r.shared_start > end) ASAN_POISON_MEMORY_REGION(lg_shared + end, r.shared_start - end);
        for (long long row = 0; row < r.layout_rows && r.width < r.row_stride; ++row)
            ASAN_POISON_MEMORY_REGION(r.base + (row * r.row_stride + r.width) * r.itemsize,
                                      (r.row_stride - r.width) * r.itemsize);
        end = r.shared_start + r.elements() * r.itemsize;
    }
    ASAN_POISON_MEMORY_REGION(lg_shared + end, sizeof lg_shared - end);
}

// After the launch: each output's footprint holds no unwritten() element and no other NaN (computed from
// memory nothing wrote: every input was finite). After a bad access a NaN may come from what it read, so
// then only unwritten elements are looked for; so too after a read of an output element nothing wrote (its
// poison is the NaN), and an element that holds the poison although a checked write reached it was written
// with a NaN computed from that read, not left unwritten.
inline int finish(const Launch& launch) {
    const bool accessed_badly = findings.count > 0 || unwritten_reads.load() != 0;
    for (int i = 0; i < launch.count; ++i) {
        const Region& r = launch.regions[i];
        if (r.access != 1 && r.access != 2) continue;
        for (long long row = 0; row < r.layout_rows; ++row) {
            if (!r.row_in(row)) continue;
            for (long long c = r.offset; c < r.offset + r.width; ++c) {
                const unsigned char* at = r.base + (row * r.row_stride + c) * r.itemsize;
                const bool ones = is_unwritten(at, r.itemsize, r.kind) && !shadow_written(r, row * r.row_stride + c);
                bool nan = false;
                if (r.kind == 'f' && r.itemsize == 4) {
                    float v;
                    std::memcpy(&v, at, 4);
                    nan = std::isnan(v);
                } else if (r.kind == 'f' && r.itemsize == 8) {
                    double v;
                    std::memcpy(&v, at, 8);
                    nan = std::isnan(v);
                } else if (r.kind == 'h' || r.kind == 'b') {  // every exponent bit set, a mantissa bit too
                    std::uint16_t v;
                    std::memcpy(&v, at, 2);
                    const std::uint16_t exponent = r.kind == 'h' ? 0x7c00u : 0x7f80u;
                    nan = (v & exponent) == exponent && (v & ~exponent & 0x7fffu) != 0;
                }
                if ((ones && r.access == 1) || (nan && !ones && !accessed_badly)) {
                    char line[1024];
                    if (!ones && unheld.hit.load())  // the NaN's likely cause: a read past a tile's rows
                        std::snprintf(line, sizeof line, "LGSAN\tkind=unheld\tregion=%d\trow=%lld\tcol=%lld\tfield_row=%lld"
                                      "\ttile=%d\ttile_row=%lld\ttile_col=%lld\theld=%lld\tcapacity=%lld%s\n", i, row, c,
                                      r.field_row(row), unheld.tile, unheld.row, unheld.col, unheld.held, unheld.capacity,
                                      unheld.where);
                    else
                        std::snprintf(line, sizeof line, "LGSAN\tkind=%s\tregion=%d\trow=%lld\tcol=%lld\tfield_row=%lld\tkernel=%s\n",
                                      ones ? "unwritten" : "nan", i, row, c, r.field_row(row), launch.kernel);
                    say(line);
                    return 3;
                }
            }
        }
    }
    say("LGSAN\tkind=done\n");
    return 0;
}
}  // namespace lg_san

// The runtime's barrier findings (lg/host/runtime.h).
[[noreturn]] void lg_host_violation(const char* kind, const char* what, const void* pc) {
    char where[768], line[1024];
    lg_san::context(where, sizeof where, pc);
    std::snprintf(line, sizeof line, "LGSAN\tkind=%s\twhat=%s%s\n", kind, what, where);
    lg_san::say(line);
    lg_san::stop();
}

// The views' checks of the debug build (layoutgen/templates/views.cuh.j2 defines them for the GPU when
// LG_DEBUG_DEFINED is not defined yet): the same names and arguments, reported as a finding. The checked
// pointers and references of that header (its lg::footprint) report through out_of_footprint.
#define LG_DEBUG_DEFINED
namespace lg {
__attribute__((noinline)) inline void out_of_field(const char* where, int param, long long row, long long col,
                                                   long long rows, long long width, const char* = nullptr, int = 0) {
    char ctx[768], line[1536];
    lg_san::context(ctx, sizeof ctx, __builtin_return_address(0));
    std::snprintf(line, sizeof line, "LGSAN\tkind=field\twhere=%s\tparam=%d\trow=%lld\tcol=%lld\trows=%lld\twidth=%lld%s\n",
                  where, param, row, col, rows, width, ctx);
    lg_san::say(line);
    lg_san::stop();
}

// A read through a shared tile's accessor of a row past those it holds (views.cuh.j2's SharedTile::lg_unheld):
// the first is kept, not reported: it is the cause finish() names where a NaN reaches an output.
__attribute__((noinline)) inline void unheld_read(const char*, int tile, long long row, long long col, long long held,
                                                  long long capacity, const char*, int) {
    int expected = 0;
    if (!lg_san::unheld.hit.compare_exchange_strong(expected, 1)) return;
    lg_san::unheld.tile = tile;
    lg_san::unheld.row = row;
    lg_san::unheld.col = col;
    lg_san::unheld.held = held;
    lg_san::unheld.capacity = capacity;
    // The caller's line from the return address, as out_of_field's: g++ evaluates __builtin_LINE() in the
    // accessors' lg::site default argument at the declaration, not at the call.
    lg_san::context(lg_san::unheld.where, sizeof lg_san::unheld.where, __builtin_return_address(0));
}

// A checked pointer's access outside its parameter's footprint: the finding AddressSanitizer would make of
// it (kind=pointer: the same words as kind=footprint), found exactly, whatever the granule, before it.
// `access`: 0 a read, 1 a write, 2 either (a vector type's element, reached through a reference). Once per
// place; then the access is made, as the debug build on the GPU makes it (AddressSanitizer reports the same
// place where the bytes are poisoned: layoutgen reports a line once).
__attribute__((noinline)) inline void out_of_footprint(const char*, int param, long long row, long long col,
                                                       long long field_row, long long, long long, long long,
                                                       int access, const char*, int) {
    if (!lg_san::first_at(__builtin_return_address(0))) return lg_san::go_on();
    char ctx[768], line[1536];
    lg_san::context(ctx, sizeof ctx, __builtin_return_address(0));
    std::snprintf(line, sizeof line, "LGSAN\tkind=pointer\tregion=%d\twrite=%d\tbytes=0\trow=%lld\tcol=%lld\tfield_row=%lld%s\n",
                  param, access, row, col, field_row, ctx);
    lg_san::say(line);
    lg_san::go_on();
}
}  // namespace lg
