// lg/debug_barrier.cuh: the debug build's __syncthreads() on the GPU, checked as the CPU run's is (LG652 there,
// LG642 here, in the same words): a thread that returned while the others wait at a barrier, and a thread that
// reached another __syncthreads() than the threads waiting at one, are reported at the barrier's line instead of
// passing in silence. From this header on (lg/debug.cuh includes it; the code after a debug views header: the
// kernel's body, its helpers, a hand-written entry, an existing kernel's debug copy), `__syncthreads()` is
// lg::syncthreads_checked with the caller's file and line (through the generated files' #line directives, as
// lg/site.cuh's LG_SITE) and column (two barriers on one line are two barriers; NVRTC has no __COUNTER__). The
// library's own code has no __syncthreads() (a tile's copy asks its caller for the barrier), so only the user's
// barriers are checked.
//
// Why hardware barriers and no software one: a barrier in shared memory needs its state zeroed before a block's
// first barrier, and nothing runs before the user's code in every kernel this build covers (an existing
// kernel's debug copy is its own __global__). The hardware barrier needs no state and never hangs on a thread
// that returned: it waits for the non-exited threads only, and an exiting thread releases a barrier that waits
// for it alone (PTX ISA, `barrier` and `exit`); threads at two different `bar.sync 0`s meet at one barrier
// (sm_70 and later). So each checked barrier is a reduction over the threads that arrive: how many arrived
// (fewer than the block: some thread returned; which one: the first index missing, by halving with more
// reductions), and whether all arrived at the same call. A thread that neither arrives nor returns (a loop
// that waits on what the barrier's threads would write) hangs as in the release build.
//
// The fault is lg/fault.cuh's record, `access` -2 (a thread returned while others wait: `thread` is the one that
// returned, the line the barrier's) or -3 (another barrier: `thread` is the one that reached it, the line its
// own); the threads of the block then exit, as after any fault of this build, and the launcher reports it
// (layoutgen/runtime/debug.py). The CPU run (lg/host/runtime.h) has its own __syncthreads(): nothing here is
// compiled for the host.
#ifndef LG_V0_1_0_DEBUG_BARRIER_CUH
#define LG_V0_1_0_DEBUG_BARRIER_CUH
#include "fault.cuh"
#include "version.cuh"

#if defined(__CUDACC__)
namespace lg {
inline namespace v0_1_0 {
inline namespace debug {

// What a barrier fault's record says in its `access` word (layoutgen/runtime/debug.py reads the same numbers).
enum : int { barrier_returned = -2, barrier_other = -3 };  // (a checked pointer's are 0 and up, an accessor's -1)

// The call of the checked barrier that each thread of the block is at, for the one round of a barrier: its file
// (the literal of its expansion of __FILE__) and its line and column. Every thread writes its own, the first
// reduction orders the writes before the reads, the second orders the reads before the next round's writes;
// whichever write lands last is the one every thread compares its own with.
__shared__ const char* barrier_file;
__shared__ long long barrier_place;

__device__ __noinline__ void syncthreads_checked(const char* file, int line, int column) {
    const int thread = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    const int threads = static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
    const long long place = static_cast<long long>(line) << 32 | static_cast<unsigned>(column);
    barrier_file = file;
    barrier_place = place;
    const int arrived = __syncthreads_count(1);  // the block's threads that have not returned
    const bool one_call = __syncthreads_and(barrier_file == file && barrier_place == place) != 0;
    if (arrived == threads && one_call) return;
    if (!one_call) {  // the same answer in every thread: each that is at another call than the last writer's reports
        if ((barrier_file != file || barrier_place != place) && claim_fault(file, line)) {
            lg_fault.access = barrier_other;
            lg_fault.thread = thread;
            printf("layoutgen: block %u, thread %d reached another __syncthreads() (%s:%d) than the threads waiting at "
                   "one\n", blockIdx.x, thread, file, line);
        }
        asm volatile("exit;");
    }
    // Some thread returned: the first missing index is the least m with at most m arrived threads at or below it.
    int low = 0, high = threads - 1;
    while (low < high) {
        const int middle = (low + high) / 2;
        if (__syncthreads_count(thread <= middle) <= middle)
            high = middle;
        else
            low = middle + 1;
    }
    if (claim_fault(file, line)) {
        lg_fault.access = barrier_returned;
        lg_fault.thread = low;
        printf("layoutgen: block %u, thread %d returned while other threads wait at __syncthreads() (%s:%d)\n",
               blockIdx.x, low, file, line);
    }
    asm volatile("exit;");
}

}  // inline namespace debug
}  // inline namespace v0_1_0
}  // namespace lg

// The user's __syncthreads() from here on. A second library version's header keeps the first one's.
#if !defined(__syncthreads)
#define __syncthreads() ::lg::v0_1_0::debug::syncthreads_checked(__FILE__, __LINE__, __builtin_COLUMN())
#endif
#endif  // defined(__CUDACC__)
#endif  // LG_V0_1_0_DEBUG_BARRIER_CUH
