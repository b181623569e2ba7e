// The launch floor: what a C program pays per launch of the benchmark's empty kernel, with no Python at all.
//
// bench_launch.py builds this with nvcc and keeps one process of it running beside its Python rows, so each
// launcher is compared with the floor of this machine at the same moment (on a virtual machine the driver's
// own cost dominates, differs from bare metal, and drifts: a slow spell moves every row, this one too). Same
// kernel shape as benchmarks/launch/spec.py: five pointers and two 64-bit sizes, 16 blocks of 128 threads,
// launched back to back on the legacy default stream, then one synchronize.
//
// Usage: floor CUBIN KERNEL. Reads requests from stdin, one a line, "<way> <calls>"; for each, launches
// <calls> times that way back to back, synchronizes, and answers "<way> <microseconds per call>" on stdout
// (flushed), until stdin ends. An unknown way or a failed call ends the program with a message on stderr.
// The ways:
//   cuLaunchKernel      this program's own empty kernel through the driver API: the floor
//   chevrons            the same kernel through <<<>>>
//   cubin               KERNEL of CUBIN as cuModuleLoadData loads it (the very function a launcher loads)
//   device_then_launch  that launch after cuCtxGetCurrent and cuCtxGetDevice (which device is current: what
//                       a compiled launcher asks first)
//   touch_only          32 KB of other reads, alone
//   touch_then_launch   those reads, then the launch: whether a launch costs more when other work ran since
//                       the last one
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" __global__ void empty(const float*, const float*, const float*, float*, float*, long long, long long) {}

namespace {

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

// Microseconds per call of `calls` calls of `launch` back to back, then one synchronize.
template <class Launch>
double per_call_us(long calls, Launch launch) {
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) launch();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    return took.count() / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s CUBIN KERNEL (requests \"<way> <calls>\" on stdin)\n", argv[0]);
        return 2;
    }
    float* buffers[5];
    for (float*& buffer : buffers) check(cudaMalloc(&buffer, 64 * 32 * 56 * sizeof(float)), "cudaMalloc");
    long long rows = 64, columns = 32;
    CUfunction own;
    check(cudaGetFuncBySymbol(&own, reinterpret_cast<const void*>(&empty)), "cudaGetFuncBySymbol");
    void* params[7] = {&buffers[0], &buffers[1], &buffers[2], &buffers[3], &buffers[4], &rows, &columns};

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

    // What a Python caller does to the driver's caches between two launches, roughly: it runs the
    // interpreter over some tens of KB. Here 32 KB of a 16 MB buffer, a new part each launch.
    std::vector<long long> other(2 << 20, 1);
    std::size_t at = 0;
    long long sink = 0;
    auto touch = [&] {
        for (int k = 0; k < 4096; k += 8) sink += other[(at + k) % other.size()];
        at += 4096;
    };
    auto launch = [&](CUfunction function) {
        check(cuLaunchKernel(function, kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    };

    char way[64];
    long calls;
    while (std::scanf("%63s %ld", way, &calls) == 2 && calls > 0) {
        double us;
        if (std::strcmp(way, "cuLaunchKernel") == 0) {
            us = per_call_us(calls, [&] { launch(own); });
        } else if (std::strcmp(way, "chevrons") == 0) {
            us = per_call_us(calls, [&] {
                empty<<<kBlocks, kThreads>>>(buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], rows, columns);
            });
        } else if (std::strcmp(way, "cubin") == 0) {
            us = per_call_us(calls, [&] { launch(loaded); });
        } else if (std::strcmp(way, "device_then_launch") == 0) {
            us = per_call_us(calls, [&] {
                CUcontext context;
                CUdevice device;
                check(cuCtxGetCurrent(&context), "cuCtxGetCurrent");
                check(cuCtxGetDevice(&device), "cuCtxGetDevice");
                launch(loaded);
            });
        } else if (std::strcmp(way, "touch_only") == 0) {
            us = per_call_us(calls, touch);
        } else if (std::strcmp(way, "touch_then_launch") == 0) {
            us = per_call_us(calls, [&] {
                touch();
                launch(loaded);
            });
        } else {
            std::fprintf(stderr, "unknown way %s\n", way);
            return 2;
        }
        std::printf("%s %.4f\n", way, us);
        std::fflush(stdout);
    }
    if (sink == 42) std::printf("\n");  // keeps the reads
    cuModuleUnload(module);
    for (float* buffer : buffers) cudaFree(buffer);
    return 0;
}
