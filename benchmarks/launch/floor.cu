// The launch floor: what a C program pays per launch of the benchmark's empty kernel, with no Python at all.
//
// bench_launch.py builds this with nvcc and runs it in the same run as its Python rows, so each launcher is
// compared with the floor of this machine (on a virtual machine the driver's own cost dominates, and differs
// from bare metal). Same kernel shape as benchmarks/launch/spec.py: five pointers and two 64-bit sizes, 16
// blocks of 128 threads, launched back to back on the legacy default stream, then one synchronize.
//
// Prints one line per way of launching: "<name> <microseconds per call>", the median of ROUNDS rounds. Given a
// cubin and a kernel name (`floor empty.cubin empty`), it also launches that kernel as loaded by
// cuModuleLoadData (the very function a launcher loads), and times the launch after the two driver calls a
// compiled launcher makes first (cuCtxGetCurrent and cuCtxGetDevice: which device is current), and after 32 KB
// of other reads (and those reads alone): whether a launch costs more when other work ran since the last one.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" __global__ void empty(const float*, const float*, const float*, float*, float*, long long, long long) {}

namespace {

constexpr int kCalls = 20000;
constexpr int kRounds = 7;
constexpr unsigned kBlocks = 16, kThreads = 128;

void check(CUresult status, const char* what) {
    if (status != CUDA_SUCCESS) {
        const char* message = nullptr;
        cuGetErrorString(status, &message);
        std::fprintf(stderr, "%s: %s\n", what, message ? message : "unknown error");
        std::exit(1);
    }
}

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

// Microseconds per call of `launch`, the median of kRounds rounds of kCalls calls (after a warm-up round).
template <class Launch>
double per_call_us(Launch launch) {
    std::vector<double> rounds;
    for (int round = -1; round < kRounds; ++round) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kCalls; ++i) launch();
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
        if (round >= 0) rounds.push_back(took.count() / kCalls);
    }
    std::sort(rounds.begin(), rounds.end());
    return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    float* buffers[5];
    for (float*& buffer : buffers) check(cudaMalloc(&buffer, 64 * 32 * 56 * sizeof(float)), "cudaMalloc");
    long long rows = 64, columns = 32;
    CUfunction function;
    check(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(&empty)), "cudaGetFuncBySymbol");
    void* params[7] = {&buffers[0], &buffers[1], &buffers[2], &buffers[3], &buffers[4], &rows, &columns};

    double driver = per_call_us([&] {
        check(cuLaunchKernel(function, kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    });
    double chevrons = per_call_us([&] {
        empty<<<kBlocks, kThreads>>>(buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], rows, columns);
    });
    std::printf("cuLaunchKernel %.3f\n", driver);
    std::printf("chevrons %.3f\n", chevrons);
    if (argc == 3) {
        std::ifstream file(argv[1], std::ios::binary);
        std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        if (image.empty()) {
            std::fprintf(stderr, "%s: no cubin read\n", argv[1]);
            return 1;
        }
        CUmodule module;
        CUfunction loaded;
        check(cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
        check(cuModuleGetFunction(&loaded, module, argv[2]), "cuModuleGetFunction");
        double cubin = per_call_us([&] {
            check(cuLaunchKernel(loaded, kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
        });
        double current = per_call_us([&] {
            CUcontext context;
            CUdevice device;
            check(cuCtxGetCurrent(&context), "cuCtxGetCurrent");
            check(cuCtxGetDevice(&device), "cuCtxGetDevice");
            check(cuLaunchKernel(loaded, kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
        });
        std::printf("cubin %.3f\n", cubin);
        std::printf("device_then_launch %.3f\n", current);
        // What a Python caller does to the driver's caches between two launches, roughly: it runs the
        // interpreter over some tens of KB. Here 32 KB of a 16 MB buffer, a new part each launch, read
        // between launches; timed alone and before each launch, the difference is what the launch itself
        // pays for running after other work instead of back to back.
        std::vector<long long> other(2 << 20, 1);
        std::size_t at = 0;
        long long sink = 0;
        auto touch = [&] {
            for (int k = 0; k < 4096; k += 8) sink += other[(at + k) % other.size()];
            at += 4096;
        };
        double touched = per_call_us(touch);
        double after_touch = per_call_us([&] {
            touch();
            check(cuLaunchKernel(loaded, kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
        });
        std::printf("touch_only %.3f\n", touched);
        std::printf("touch_then_launch %.3f\n", after_touch);
        if (sink == 42) std::printf("\n");  // keeps the reads
        cuModuleUnload(module);
    }
    for (float* buffer : buffers) cudaFree(buffer);
    return 0;
}
