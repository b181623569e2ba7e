#!/usr/bin/env bash
# Everything that needs the GPU, in one call: the GPU tests, then every benchmark, each logged.
#
#   OUT=/tmp/gpu-logs benchmarks/on_gpu.sh [pytest arguments...]
#   STEPS="roofline launch" benchmarks/on_gpu.sh
#
# STEPS (default "tests roofline launch torch program"): any of tests, python_tests (the GPU tests again with
# LAYOUTGEN_PYTHON_LAUNCH=1: launchers on the Python path), roofline, launch, launch_parts, launch_steps, torch, program,
# copies.
#
# Runs from the repository root with the tree on PYTHONPATH (the GPU machine installs nothing).
# It first builds the compiled launch path in place when a C compiler and Python's headers are
# there (else a prebuilt extension, if any, is used; else launchers take the Python path and
# `python3 -m layoutgen.runtime` says so). Each step has its own time limit, so one that hangs
# leaves the rest their time; logs go to $OUT/<step>.log and the last lines of each to stdout.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=.
OUT=${OUT:-/tmp/layoutgen-gpu}
mkdir -p "$OUT"

step() {  # step NAME SECONDS COMMAND...: run one step under a time limit, log it, show its tail
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc in $((SECONDS - start)) s"
    tail -n "${TAIL:-25}" "$OUT/$name.log"
}

build_extension() {
    local include suffix
    include=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
    suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
    if [ -f "$include/Python.h" ]; then
        # every file of the extension, link-time optimised as setup.py builds it (else without)
        gcc -shared -fPIC -O2 -flto -I"$include" layoutgen/runtime/fastlaunch/*.c \
            -o "layoutgen/runtime/_fastlaunch$suffix" -ldl \
            || gcc -shared -fPIC -O2 -I"$include" layoutgen/runtime/fastlaunch/*.c \
                -o "layoutgen/runtime/_fastlaunch$suffix" -ldl
    else
        echo "no Python.h under $include: the extension is not built here"
    fi
    python3 -m layoutgen.runtime
}

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; python3 --version
  python3 -c "from cupy_backends.cuda.libs import nvrtc; import cupy; print('NVRTC', nvrtc.getVersion(), 'CuPy', cupy.__version__)"
} >"$OUT/device.log" 2>&1
export -f build_extension
step extension 120 bash -c build_extension
for name in ${STEPS:-tests roofline launch torch program}; do
    if [ "$name" = tests ]; then
        step tests "${TESTS_S:-300}" python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider tests/gpu "$@"
    elif [ "$name" = python_tests ]; then  # the GPU tests again, launchers on the Python path
        LAYOUTGEN_PYTHON_LAUNCH=1 step python_tests "${TESTS_S:-300}" python3 -m pytest -m gpu -q -rfEs \
            -p no:cacheprovider tests/gpu "$@"
    else
        step "bench_$name" "${BENCH_S:-150}" python3 "benchmarks/bench_$name.py"
    fi
done
