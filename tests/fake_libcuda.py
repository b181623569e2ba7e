"""A stand-in ``libcuda.so.1`` for the compiled launch path's driver calls, on machines without a GPU.

The compiled path (``runtime/fastlaunch/driver.c``) loads libcuda once per process
(``dlopen``), so each test that drives it through this library runs in a
process of its own (:func:`run`), with the library first on
``LD_LIBRARY_PATH``. The library answers what the extension asks of the
driver (``cuGetProcAddress_v2``, ``cuCtxGetCurrent``, ``cuCtxGetDevice`` and
the two ``cuLaunchKernel`` entry points, the legacy-stream one and the
per-thread-default-stream one, ``_ptsz``) and records every launch (or,
``fake_set_recording(0)``, only counts them: benchmarks/bench_launch_cpu.py) and every
``cuGetProcAddress_v2`` request; the test process sets the current context
and reads the records through ctypes (:data:`SETUP`). A launch can also run
a "host function" first, as a stream's queue does when it is full: a thread
of the library's own calls a Python callback (which needs the GIL) and the
launch waits up to two seconds for it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

SOURCE = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
#define MAX_PARAMS 64
#define MAX_RECORDS 64

typedef struct {
    void *function;
    unsigned grid[3], block[3], shared;
    uint64_t stream;
    int per_thread;  /* launched through cuLaunchKernel_ptsz */
    int n_params;
    uint64_t params[MAX_PARAMS];
    int host_function_ran;  /* -1: none asked for; 0: it could not run in 2 s; 1: it ran */
} Launch;

static Launch launches[MAX_RECORDS];
static int n_launches = 0;
static char requests[MAX_RECORDS][96];
static int n_requests = 0;
static void *context = (void *)0x1234;
static int context_device = 0, context_status = 0, launch_status = 0, n_params = 0;
static int recording = 1;          /* 0: launches are counted, not recorded (a benchmark's millions) */
static long long n_counted = 0;
static void (*host_function)(void) = NULL;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int host_done = 0;

void fake_set_context(void *ctx, int device, int status) { context = ctx; context_device = device; context_status = status; }
void fake_set_launch(int status, int params) { launch_status = status; n_params = params; }
void fake_set_recording(int on) { recording = on; }
long long fake_counted(void) { return n_counted; }
void fake_set_host_function(void (*fn)(void)) { host_function = fn; }
int fake_launches(void) { return n_launches; }
const Launch *fake_launch(int k) { return &launches[k]; }
int fake_requests(void) { return n_requests; }
const char *fake_request(int k) { return requests[k]; }

CUresult cuCtxGetCurrent(void **ctx) {
    if (context_status) return context_status;
    *ctx = context;
    return 0;
}

CUresult cuCtxGetDevice(int *device) {
    if (context_status) return context_status;
    if (context == NULL) return 201;  /* CUDA_ERROR_INVALID_CONTEXT */
    *device = context_device;
    return 0;
}

static void *run_host_function(void *unused) {
    host_function();
    pthread_mutex_lock(&lock);
    host_done = 1;
    pthread_cond_signal(&done);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static CUresult launch(int per_thread, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    n_counted++;
    if (!recording) return launch_status;
    if (n_launches >= MAX_RECORDS) return 1;
    Launch *l = &launches[n_launches++];
    memset(l, 0, sizeof *l);
    l->function = f;
    l->grid[0] = gx; l->grid[1] = gy; l->grid[2] = gz;
    l->block[0] = bx; l->block[1] = by; l->block[2] = bz;
    l->shared = shared;
    l->stream = (uint64_t)(uintptr_t)stream;
    l->per_thread = per_thread;
    l->n_params = n_params;
    for (int k = 0; k < n_params && k < MAX_PARAMS; k++)
        memcpy(&l->params[k], params[k], 8);
    l->host_function_ran = -1;
    if (host_function != NULL) {  /* the queue is full: this launch waits for a host function to finish */
        pthread_t thread;
        struct timespec until;
        host_done = 0;
        pthread_create(&thread, NULL, run_host_function, NULL);
        pthread_detach(thread);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 2;
        pthread_mutex_lock(&lock);
        while (!host_done && pthread_cond_timedwait(&done, &lock, &until) == 0)
            ;
        l->host_function_ran = host_done;
        pthread_mutex_unlock(&lock);
    }
    return launch_status;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
    return launch(0, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    return launch(1, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

/* As the driver: the entry point of `symbol` for `version`, the per-thread one where flags say so (2). */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
    if (n_requests < MAX_RECORDS)
        snprintf(requests[n_requests++], sizeof requests[0], "%s %d %llu", symbol, version,
                 (unsigned long long)flags);
    *pfn = NULL;
    if (strcmp(symbol, "cuLaunchKernel") == 0 && (flags & 2) && version < 7000) {
        /* as the real driver answers: the per-thread entry points date from CUDA 7.0 */
        if (status != NULL)
            *status = 2;  /* CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT */
        return 0;
    }
    if (strcmp(symbol, "cuLaunchKernel") == 0)
        *pfn = (flags & 2) ? (void *)cuLaunchKernel_ptsz : (void *)cuLaunchKernel;
    else if (strcmp(symbol, "cuCtxGetCurrent") == 0)
        *pfn = (void *)cuCtxGetCurrent;
    else if (strcmp(symbol, "cuCtxGetDevice") == 0)
        *pfn = (void *)cuCtxGetDevice;
    if (status != NULL)
        *status = *pfn != NULL ? 0 : 1;
    return *pfn != NULL ? 0 : 500;  /* CUDA_ERROR_NOT_FOUND */
}
"""

#: What a test's script runs first: ``FAKE``, the library (its records through ``launches()``), ``report``, and
#: stand-ins for CuPy's current-stream C functions and a DLPack exchange table (capsules of ctypes functions).
SETUP = r"""
import ctypes, json, sys

class Launch(ctypes.Structure):
    _fields_ = [("function", ctypes.c_void_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_uint64), ("per_thread", ctypes.c_int),
                ("n_params", ctypes.c_int), ("params", ctypes.c_uint64 * 64), ("host_function_ran", ctypes.c_int)]

FAKE = ctypes.CDLL("libcuda.so.1")
FAKE.fake_launch.restype = ctypes.POINTER(Launch)
FAKE.fake_request.restype = ctypes.c_char_p
FAKE.fake_set_context.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
FAKE.fake_counted.restype = ctypes.c_longlong

def launches():
    out = []
    for k in range(FAKE.fake_launches()):
        l = FAKE.fake_launch(k).contents
        out.append({"function": l.function, "grid": list(l.grid), "block": list(l.block), "shared": l.shared,
                    "stream": l.stream, "per_thread": l.per_thread, "params": list(l.params[:l.n_params]),
                    "host_function_ran": l.host_function_ran})
    return out

def requests():
    return [FAKE.fake_request(k).decode() for k in range(FAKE.fake_requests())]

def report(**values):
    print("REPORT " + json.dumps(values))

new_capsule = ctypes.pythonapi.PyCapsule_New
new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

def address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value

StreamFn = ctypes.CFUNCTYPE(ctypes.c_ssize_t)                        # get_current_stream_ptr()
DeviceStreamFn = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_int)    # get_stream_ptr(device)
WorkStreamFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))

def stand_in_cupy_streams(current, of_device):
    # CuPy's C functions of its current stream (cupy_backends.cuda.stream's Cython C API) replaced by ctypes ones
    import cupy_backends.cuda.stream as backends_stream
    backends_stream.__pyx_capi__ = {"get_current_stream_ptr": new_capsule(address(current), b"intptr_t (void)", None),
                                    "get_stream_ptr": new_capsule(address(of_device), b"intptr_t (int)", None)}

class Exchange(ctypes.Structure):  # dlpack.h 1.3's DLPackExchangeAPI: the last of its five calls is current_work_stream
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p),
                ("calls", ctypes.c_void_p * 5)]

def exchange_capsule(table):
    return new_capsule(ctypes.addressof(table), b"dlpack_exchange_api", None)
"""


def build(folder: Path) -> Path:
    """The fake library, compiled into ``folder`` as ``libcuda.so.1`` (skips the test without a C compiler)."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) to build the fake libcuda with")
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "fake_libcuda.c"
    source.write_text(SOURCE, encoding="utf-8")
    library = folder / "libcuda.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o", str(library),
                    str(source), "-lpthread"], check=True)
    return library


def run(folder: Path, script: str, env: dict[str, str] | None = None, timeout: float = 120) -> dict[str, Any]:
    """Run ``script`` (after :data:`SETUP`) in a new Python process whose libcuda is the fake one built in
    ``folder``; what it passed to ``report``. The process must exit cleanly."""
    build(folder)
    environment = {**os.environ, **(env or {})}
    environment["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("LD_LIBRARY_PATH")]))
    environment.pop("LAYOUTGEN_PYTHON_LAUNCH", None)
    done = subprocess.run([sys.executable, "-c", SETUP + script], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=timeout)
    reports = [line[len("REPORT "):] for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert done.returncode == 0 and len(reports) == 1, f"rc {done.returncode}\n{done.stdout}\n{done.stderr}"
    return json.loads(reports[0])
