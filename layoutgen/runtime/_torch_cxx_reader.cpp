// torch tensors read at C++ level for the compiled launch path (layoutgen.runtime.torch_cxx_reader builds
// this against the installed torch's headers).
//
// Through torch's Python C API a launch reads each tensor with two calls into torch (the DLPack exchange
// API's DLTensor export and `is_neg()`), asks `requires_grad` of each written one, and bumps its version
// through another (`torch._C._increment_version`): about 0.25 µs a tensor on the H200's host, more than a
// launch of five tensors may spend on everything. Here they are one call of a few nanoseconds. Nothing here
// decides anything: `read` fills the DLTensor that torch's exchange API fills (at::toDLPackNonOwning, the
// function behind it) and gives the neg bit (DLPack has none) and `requires_grad` with it; `bump` does for
// one tensor what torch._C._increment_version does for each; `function_modes` answers what
// torch._C._is_torch_function_mode_enabled answers. The caller (_fastlaunch.c) passes only objects of the
// types it listed as torch.Tensor's own (THPVariable's layout), holds the GIL, and hands any call whose read
// fails to the Python path.
//
// The table's layout is this file's ABI with _fastlaunch.c (TorchReader there); change both together and
// raise kAbi.
#include <ATen/DLConvertor.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>

namespace {

constexpr std::uint32_t kMagic = 0x4c475452;  // "LGTR"
constexpr std::uint32_t kAbi = 1;
constexpr int kNeg = 1, kRequiresGrad = 2;  // read's bits

struct TorchReader {
    std::uint32_t magic, abi;
    // 0: `out` holds the tensor's DLTensor (shape and strides point into the tensor, valid while it is
    // unchanged) and `*bits` its neg bit (kNeg) and requires_grad flag (kRequiresGrad); -1: it cannot be read
    // so (torch threw), nothing set.
    int (*read)(PyObject *tensor, DLTensor *out, int *bits);
    // 0: the version counter bumped (or, for an inference tensor, left as torch leaves it); -1: torch threw.
    int (*bump)(PyObject *tensor);
    // 1 where a torch function mode may intercept calls now, else 0.
    int (*function_modes)();
};

int read(PyObject *tensor, DLTensor *out, int *bits) noexcept {
    try {
        const at::Tensor &t = THPVariable_Unpack(tensor);
        at::toDLPackNonOwning(t, out);
        *bits = (t.is_neg() ? kNeg : 0) | (t.requires_grad() ? kRequiresGrad : 0);
        return 0;
    } catch (...) {
        return -1;
    }
}

int bump(PyObject *tensor) noexcept {
    try {
        const at::Tensor &t = THPVariable_Unpack(tensor);
        if (!t.is_inference())  // torch._C._increment_version skips inference tensors
            torch::autograd::impl::bump_version(t);
        return 0;
    } catch (...) {
        return -1;
    }
}

int function_modes() noexcept { return at::impl::torch_function_mode_enabled() ? 1 : 0; }

const TorchReader table{kMagic, kAbi, read, bump, function_modes};

}  // namespace

extern "C" __attribute__((visibility("default"))) const void *layoutgen_torch_reader() { return &table; }
