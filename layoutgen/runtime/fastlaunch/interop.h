/* The C interfaces of the libraries the extension calls: the driver's few types (declared as cuda.h declares
 * them; libcuda is loaded at run time), CuPy's current-stream functions, DLPack's C exchange API, and the
 * table of layoutgen's own C++ torch reader. Types only: fastlaunch.h includes it. */
#ifndef LAYOUTGEN_FASTLAUNCH_INTEROP_H
#define LAYOUTGEN_FASTLAUNCH_INTEROP_H

#include <Python.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------------------------------------
 * The driver: the few types and calls needed, declared as cuda.h declares them.
 */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUfunction;
typedef void *CUstream;
typedef CUresult (*LaunchKernelFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream, void **, void **);
typedef CUresult (*CtxGetDeviceFn)(CUdevice *);

/* CuPy's current stream: cupy_backends.cuda.stream's get_current_stream_ptr() and get_stream_ptr(device). */
typedef intptr_t (*CurrentStreamFn)(void);
typedef intptr_t (*DeviceStreamFn)(int);

/* ---------------------------------------------------------------------------------------------------------
 * DLPack's C exchange API (dlpack.h 1.3: `type(t).__dlpack_c_exchange_api__`, a capsule "dlpack_exchange_api").
 */
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef int (*DLTensorFromPyObjectFn)(void *, DLTensor *);
typedef struct DLPackExchangeAPIHeader {
    DLPackVersion version;
    struct DLPackExchangeAPIHeader *prev_api;
} DLPackExchangeAPIHeader;
typedef struct {
    DLPackExchangeAPIHeader header;
    void *managed_tensor_allocator, *managed_tensor_from_py_object_no_sync, *managed_tensor_to_py_object_no_sync;
    DLTensorFromPyObjectFn dltensor_from_py_object_no_sync;  /* may be NULL */
    void *current_work_stream;
} DLPackExchangeAPI;

enum { kDLCPU = 1, kDLCUDA = 2, kDLROCM = 10 };

/* DLPack's current work stream: the stream the framework runs its work on (torch.cuda.current_stream), on
 * which a consumer of its tensors launches. 0, or -1 with an exception set. */
typedef int (*CurrentWorkStreamFn)(int32_t device_type, int32_t device_id, void **out_stream);

/* torch's own C++ reads (runtime/_torch_cxx_reader.cpp, built against the installed torch by
 * torch_cxx_reader.py): its layout is that file's TorchReader (kAbi 1). Used only for the types listed in
 * dlpack_types, whose objects are THPVariables. */
enum { TORCH_READER_MAGIC = 0x4c475452, TORCH_READER_ABI = 1, TORCH_NEG = 1, TORCH_REQUIRES_GRAD = 2, TORCH_INFERENCE = 4 };
/* The name of the capsule that carries a TorchReader table (_torch_cxx_reader.cpp makes it): use_torch_reader
 * takes nothing else, so no importable name takes an address. */
#define TORCH_READER_CAPSULE "layoutgen.runtime._torch_cxx_reader.TorchReader"
typedef struct {
    uint32_t magic, abi;
    int (*read)(PyObject *tensor, DLTensor *out, int *bits);
    int (*bump)(PyObject *tensor);
    int (*function_modes)(void);
} TorchReader;

#endif
