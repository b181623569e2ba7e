// torch tensors read at C++ level for the compiled launch path (layoutgen.runtime.torch_cxx_reader builds
// this against the installed torch's headers).
//
// Through torch's Python C API a launch reads each tensor with two calls into torch (the DLPack exchange
// API's DLTensor export and `is_neg()`), asks `requires_grad` of each written one, and bumps its version
// through another (`torch._C._increment_version`): about 0.25 µs a tensor on the H200's host, more than a
// launch of five tensors may spend on everything. Here they are one call each. Nothing here decides
// anything: `read` fills the DLTensor that torch's exchange API fills (at::toDLPackNonOwning, the function
// behind it, makes the same calls) and gives the neg bit (DLPack has none) and `requires_grad` with it;
// `bump` does for one tensor what torch._C._increment_version does for each; `function_modes` answers what
// torch._C._is_torch_function_mode_enabled answers. The caller (fastlaunch/torch.c) passes only objects of the
// types it listed as torch.Tensor's own (THPVariable's layout), holds the GIL, and hands any call whose read
// fails to the Python path.
//
// Why the tensor's accessors are called here, inline from torch's headers, and not toDLPackNonOwning and
// bump_version themselves: a launch runs between two driver calls that push the host's caches and TLBs
// out, so each function of libtorch a read jumps to (toDLPackNonOwning, getDLDataType,
// torchDeviceToDLDevice, has_storage, bump_version: each on pages of its own in a library of hundreds of
// MB) costs its misses again on every launch. Inline, the read is a few cache lines of this library's code.
// getDLDataType and torchDeviceToDLDevice are pure functions of the dtype and the device: each answer is
// asked of torch once and kept (dtype_codes, device_codes), so the DLTensor is the one torch fills.
//
// The table's layout is this file's ABI with fastlaunch/interop.h (TorchReader there); change both together and
// raise kAbi.
#include <ATen/DLConvertor.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <cstdint>

namespace {

constexpr std::uint32_t kMagic = 0x4c475452;  // "LGTR"
constexpr std::uint32_t kAbi = 1;
constexpr int kNeg = 1, kRequiresGrad = 2, kInference = 4;  // read's bits
// The capsule's name: fastlaunch/module.c's use_torch_reader takes the table only in a capsule of this name.
constexpr const char *kCapsule = "layoutgen.runtime._torch_cxx_reader.TorchReader";

struct TorchReader {
    std::uint32_t magic, abi;
    // 0: `out` holds the tensor's DLTensor (shape and strides point into the tensor, valid while it is
    // unchanged) and `*bits` its neg bit (kNeg), requires_grad flag (kRequiresGrad) and whether it is an
    // inference tensor (kInference); -1: it cannot be read so (torch threw), nothing set.
    int (*read)(PyObject *tensor, DLTensor *out, int *bits);
    // 0: the version counter bumped (or, for an inference tensor, left as torch leaves it); -1: torch threw.
    int (*bump)(PyObject *tensor);
    // 1 where a torch function mode may intercept calls now, else 0.
    int (*function_modes)();
};

// getDLDataType's answer for each ScalarType, packed (code | bits << 8 | lanes << 16; lanes is 1, so 0 is
// "not asked yet"). A race writes the same answer twice.
std::atomic<std::uint32_t> dtype_codes[static_cast<int>(c10::ScalarType::NumOptions)];

// torchDeviceToDLDevice's answer for CPU (slot 0) and CUDA devices 0 to 62 (slots 1 to 63), packed
// (device_type << 32 | device_id, plus 1 << 63 once asked); any other device is asked every time.
std::atomic<std::uint64_t> device_codes[64];
constexpr std::uint64_t kAsked = std::uint64_t{1} << 63;

DLDataType dl_dtype(const at::Tensor &t) {
    const auto slot = static_cast<int>(t.scalar_type());
    const bool kept = slot >= 0 && slot < static_cast<int>(c10::ScalarType::NumOptions);
    std::uint32_t code = kept ? dtype_codes[slot].load(std::memory_order_relaxed) : 0;
    if (code == 0) {
        const DLDataType asked = at::getDLDataType(t);  // throws for what DLPack has no code for
        code = asked.code | std::uint32_t{asked.bits} << 8 | std::uint32_t{asked.lanes} << 16;
        if (kept && asked.lanes == 1)
            dtype_codes[slot].store(code, std::memory_order_relaxed);
    }
    return DLDataType{static_cast<std::uint8_t>(code & 0xff), static_cast<std::uint8_t>(code >> 8 & 0xff),
                      static_cast<std::uint16_t>(code >> 16)};
}

DLDevice dl_device(c10::Device device) {
    int slot = -1;
    if (device.is_cpu())
        slot = 0;
    else if (device.is_cuda() && device.index() >= 0 && device.index() < 63)
        slot = 1 + device.index();
    std::uint64_t code = slot >= 0 ? device_codes[slot].load(std::memory_order_relaxed) : 0;
    if (!(code & kAsked)) {
        const DLDevice asked = at::torchDeviceToDLDevice(device);  // throws for what DLPack cannot name
        code = kAsked | std::uint64_t{static_cast<std::uint32_t>(asked.device_type)} << 32
               | static_cast<std::uint32_t>(asked.device_id);
        if (slot >= 0)
            device_codes[slot].store(code, std::memory_order_relaxed);
    }
    return DLDevice{static_cast<DLDeviceType>(code >> 32 & 0x7fffffff), static_cast<std::int32_t>(code & 0xffffffff)};
}

int read(PyObject *tensor, DLTensor *out, int *bits) noexcept {
    try {
        const at::Tensor &t = THPVariable_Unpack(tensor);
        // at::toDLPackNonOwning's fields, from the same calls (data_ptr() refuses a tensor without storage
        // and materializes a copy-on-write one, as there)
        out->data = t.data_ptr();
        out->device = dl_device(t.device());
        out->ndim = static_cast<std::int32_t>(t.dim());
        out->dtype = dl_dtype(t);
        out->shape = const_cast<std::int64_t *>(t.sizes().data());
        out->strides = const_cast<std::int64_t *>(t.strides().data());
        out->byte_offset = 0;
        *bits = (t.is_neg() ? kNeg : 0) | (t.requires_grad() ? kRequiresGrad : 0) | (t.is_inference() ? kInference : 0);
        return 0;
    } catch (...) {
        return -1;
    }
}

int bump(PyObject *tensor) noexcept {
    try {
        c10::TensorImpl *impl = THPVariable_Unpack(tensor).unsafeGetTensorImpl();
        if (!impl->is_inference())  // torch._C._increment_version skips inference tensors
            impl->bump_version();   // what torch::autograd::impl::bump_version calls
        return 0;
    } catch (...) {
        return -1;
    }
}

int function_modes() noexcept { return at::impl::torch_function_mode_enabled() ? 1 : 0; }

const TorchReader table{kMagic, kAbi, read, bump, function_modes};

}  // namespace

// The table's address (torch_cxx_reader.py's own checks of its calls, through ctypes).
extern "C" __attribute__((visibility("default"))) const void *layoutgen_torch_reader() { return &table; }

// The table in a capsule: what _fastlaunch.use_torch_reader takes (a new reference; NULL with an error set).
extern "C" __attribute__((visibility("default"))) PyObject *layoutgen_torch_reader_capsule() {
    return PyCapsule_New(const_cast<TorchReader *>(&table), kCapsule, nullptr);
}
