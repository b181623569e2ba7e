"""Names with a meaning in C, C++, CUDA or Python, and which of them NVRTC refuses where generated code puts names.

Used by tests/test_generated_names.py (the pool its property test draws from)
and, run as a script, to rebuild ``layoutgen/schema/cuda_names.py``:

    .venv/bin/python tests/nvrtc_names.py > layoutgen/schema/cuda_names.py

The script sweeps every identifier of the CUDA headers it can find (the
``nvidia-cuda-runtime`` wheel, ``/usr/local/cuda/include`` where present),
NVRTC's built-in headers and the C and C++ standard libraries through NVRTC:
each as the name of an ``extern "C"`` kernel (where kernel names land) and as
a local variable (which only a macro can break). It takes a few minutes.
"""

from __future__ import annotations

import builtins
import keyword
import os
import pickle
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from layoutgen.schema.names import RESERVED  # noqa: E402

#: C11 and POSIX library functions, types and macros, the C++ library names a kernel might meet, and
#: CUDA's device API that templates call (math, atomics, warp functions, types).
C_AND_CUDA_NAMES = """
    abort abs acos acosf acosh acoshf acoshl acosl alignof asctime asin asinf asinh asinhf asinhl asinl assert
    at_quick_exit atan atan2 atan2f atan2l atanf atanh atanhf atanhl atanl atexit atof atoi atol atoll bsearch
    btowc calloc cbrt cbrtf cbrtl ceil ceilf ceill clearerr clock clock_t complex copysign copysignf copysignl
    cos cosf cosh coshf coshl cosl ctime difftime div div_t double_t erf erfc erfcf erfcl erff erfl errno exit
    exp exp2 exp2f exp2l expf expl expm1 expm1f expm1l fabs fabsf fabsl fclose fdim fdimf fdiml feof ferror
    fflush fgetc fgetpos fgets floor floorf floorl float_t fma fmaf fmal fmax fmaxf fmaxl fmin fminf fminl fmod
    fmodf fmodl fopen fpclassify fprintf fputc fputs fread free freopen frexp frexpf frexpl fscanf fseek fsetpos
    ftell fwrite getc getchar getenv gets gmtime hypot hypotf hypotl ilogb ilogbf ilogbl imaxabs imaxdiv int16_t
    int32_t int64_t int8_t intmax_t intptr_t isalnum isalpha isblank iscntrl isdigit isfinite isgraph isgreater
    isgreaterequal isinf isless islessequal islessgreater islower isnan isnormal isprint ispunct isspace
    isunordered isupper isxdigit j0 j1 jn labs ldexp ldexpf ldexpl ldiv ldiv_t lgamma lgammaf lgammal llabs
    lldiv lldiv_t llrint llrintf llrintl llround llroundf llroundl localeconv localtime log log10 log10f log10l
    log1p log1pf log1pl log2 log2f log2l logb logbf logbl logf logl longjmp lrint lrintf lrintl lround lroundf
    lroundl main malloc mblen mbstowcs mbtowc memchr memcmp memcpy memmove memset mktime modf modff modfl nan
    nanf nanl nearbyint nearbyintf nearbyintl nextafter nextafterf nextafterl nexttoward nexttowardf
    nexttowardl offsetof perror pow powf powl printf ptrdiff_t putc putchar puts qsort quick_exit raise rand
    realloc remainder remainderf remainderl remove remquo remquof remquol rename rewind rint rintf rintl round
    roundf roundl scalbln scalblnf scalblnl scalbn scalbnf scalbnl scanf setbuf setjmp setlocale setvbuf
    signal signbit sin sinf sinh sinhf sinhl sinl size_t snprintf sprintf sqrt sqrtf sqrtl srand sscanf stderr
    stdin stdout strcat strchr strcmp strcoll strcpy strcspn strerror strftime strlen strncat strncmp strncpy
    strpbrk strrchr strspn strstr strtod strtof strtok strtol strtold strtoll strtoul strtoull strxfrm system
    tan tanf tanh tanhf tanhl tanl tgamma tgammaf tgammal time time_t tmpfile tmpnam tolower toupper trunc
    truncf truncl uint16_t uint32_t uint64_t uint8_t uintmax_t uintptr_t ungetc va_arg va_copy va_end va_list
    va_start vfprintf vprintf vsnprintf vsprintf wchar_t wcslen wctomb y0 y1 yn
    NULL EOF BUFSIZ CHAR_BIT CHAR_MAX INT_MAX INT_MIN LLONG_MAX UINT_MAX FLT_MAX FLT_MIN FLT_EPSILON DBL_MAX
    DBL_MIN DBL_EPSILON HUGE_VAL HUGE_VALF INFINITY NAN EXIT_FAILURE EXIT_SUCCESS RAND_MAX SEEK_SET M_PI
    std cuda cub thrust nv cooperative_groups initializer_list nullptr_t numeric_limits move forward swap
    min max array vector tuple pair span optional variant string
    atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd atomicOr atomicXor
    clock64 dim3 uint3 float2 float4 int2 int4 double2 char4 uchar4 half half2 nv_bfloat16 nv_bfloat162 nv_half
    make_float2 make_float4 make_int2 make_int4 rsqrt rsqrtf rcbrt rcbrtf sincos sincosf sincospi sinpi cospi
    erfinv erfcinv normcdf normcdfinv exp10 exp10f fdividef saturate hexp hlog hsqrt tex1D tex2D surf2Dwrite
    printf malloc free memcpy memset assert trap cudaError_t cudaStream_t cudaSuccess
"""


def standard_names() -> set[str]:
    """C, C++ and CUDA keywords, Python keywords and built-ins, and the C and CUDA library names above."""
    return {*RESERVED, *keyword.kwlist, *keyword.softkwlist, *dir(builtins), *C_AND_CUDA_NAMES.split()}


def ordinary(name: str) -> bool:
    """A name no keyword list or naming rule of layoutgen refuses before the lists of CUDA's names."""
    return (name not in RESERVED and not keyword.iskeyword(name) and not name.startswith("__")
            and not re.match(r"_[A-Z]|lg$|lg_|LG_|_lg_", name))


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text))


def cuda_header_names() -> set[str]:
    """Every identifier in the CUDA headers NVRTC compiles with (the wheel's, and a toolkit's where present)."""
    from layoutgen.runtime import paths

    names: set[str] = set()
    for folder in (*paths.cuda_include_dirs(), Path("/usr/local/cuda/include")):
        if folder.is_dir():
            for path in folder.rglob("*.h*"):
                if path.is_file():
                    names |= _identifiers(path.read_text(encoding="utf-8", errors="replace"))
    return names


def nvrtc_builtin_names() -> set[str]:
    """Identifiers in NVRTC's built-in headers (the strings of libnvrtc-builtins), where ``strings`` exists."""
    found: set[str] = set()
    libs = [p for d in map(Path, sys.path) if (d / "nvidia").is_dir() for p in (d / "nvidia").rglob("libnvrtc-builtins*")]
    for lib in libs:
        try:
            text = subprocess.run(["strings", "-n", "3", str(lib)], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            continue
        found |= {n for n in _identifiers(text) if not n.startswith("_Z")}
    return found


# -- the sweep (script only) --------------------------------------------------------------------------------

_FP = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
# What generated code and templates call that the compiler lowers to functions of its own (`printf` to
# `vprintf`): a kernel of such a name crashes or hangs NVRTC, so every prelude of the sweep calls them.
_USES = '__device__ __noinline__ void lg_uses(const char* s) { printf("%s", s); assert(s); }\n'


def _as_kernel(names: list[str]) -> str:
    return "".join(f'extern "C" __global__ void {n}(float* lg_p) {{ }}\n' for n in names)


def _as_local(names: list[str]) -> str:
    body = "".join(f"    int {n} = {i}; (void){n};\n" for i, n in enumerate(names))
    return 'extern "C" __global__ void lg_k(int* lg_p) {\n' + body + "}\n"


def compile_in_child(request: Any) -> tuple[Any, ...] | None:
    """Compile a ``CompileRequest`` in a child process: ``()`` when it compiles, NVRTC's diagnostics when it
    does not, None when NVRTC crashed or hung (60 s, then the child is killed): some names make it do that."""
    from layoutgen.runtime.nvrtc import CompileError, compile_cubin

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        signal.alarm(60)
        try:
            compile_cubin(request)
            result: tuple[Any, ...] = ()
        except CompileError as exc:
            result = exc.diagnostics
        os.write(write, pickle.dumps(result))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return pickle.loads(data) if data else None


def _refused_lines(source: str, first: int, count: int) -> tuple[set[int], bool] | None:
    """The 0-based name lines NVRTC reports errors at, and whether it reported others; None: NVRTC crashed."""
    from layoutgen.runtime.nvrtc import CompileRequest

    diagnostics = compile_in_child(CompileRequest(source=source, name="t.cu"))
    if diagnostics is None:
        return None
    lines = {d.site.line - 1 - first for d in diagnostics if d.site and d.site.path == "t.cu"}
    return {n for n in lines if 0 <= n < count}, any(not (d.site and d.site.path == "t.cu") for d in diagnostics)


def refused(names: list[str], render: Callable[[list[str]], str], prelude: str = "", crashed: set[str] | None = None) -> set[str]:
    """The names among ``names`` that NVRTC refuses when ``render`` (names -> source) places them."""
    if not names:
        return set()
    source = prelude + render(names)
    first = prelude.count("\n") + (1 if render is _as_local else 0)
    outcome = _refused_lines(source, first, len(names))
    if outcome is None or (not outcome[0] and outcome[1]):  # a crash, or errors nowhere in particular
        if len(names) == 1:
            if outcome is None and crashed is not None:
                crashed.add(names[0])
            return set(names)
        mid = len(names) // 2
        return refused(names[:mid], render, prelude, crashed) | refused(names[mid:], render, prelude, crashed)
    bad = {names[n] for n in outcome[0]}
    if not bad:
        return set()
    return bad | refused([n for n in names if n not in bad], render, prelude, crashed)


def _confirmed(names: Iterable[str], render: Callable[[list[str]], str], prelude: str) -> set[str]:
    """Each name of ``names`` compiled alone: a batch can blame a line for an error its neighbour caused."""
    return {n for n in names if refused([n], render, prelude)}


def sweep() -> tuple[set[str], set[str], set[str]]:
    """(macros, names NVRTC refuses for an ``extern "C"`` kernel, names that crash or hang NVRTC as one)."""
    pool = cuda_header_names() | nvrtc_builtin_names() | standard_names()
    candidates = sorted(n for n in pool if len(n) < 64 and ordinary(n))
    macros: set[str] = set()
    kernels: set[str] = set()
    crashed: set[str] = set()
    for prelude in (_USES, _FP + _USES):  # some names are refused only where the fp16 and bf16 headers are in
        found_macros: set[str] = set()
        found_kernels: set[str] = set()
        for i in range(0, len(candidates), 500):
            chunk = candidates[i:i + 500]
            found_macros |= refused(chunk, _as_local, prelude)
            found_kernels |= refused(chunk, _as_kernel, prelude, crashed)
        confirmed = _confirmed(found_macros, _as_local, prelude)
        macros |= confirmed
        kernels |= _confirmed(found_kernels - confirmed, _as_kernel, prelude)
    return macros, (kernels - macros) | crashed, crashed


def _lines(names: Iterable[str], width: int = 112) -> str:
    out, line = [], "   "
    for n in sorted(names):
        if len(line) + len(n) + 1 > width:
            out.append(line)
            line = "   "
        line += " " + n
    return "\n".join([*out, line])


def main() -> None:
    macros, kernels, crashed = sweep()
    print('"""Names CUDA C++ gives a fixed meaning where generated code puts user names.')
    print()
    print("Made by ``tests/nvrtc_names.py`` (NVRTC 13): each identifier of the CUDA headers, NVRTC's")
    print("built-in headers and the C library, compiled as a local variable and as an ``extern \"C\"``")
    print("kernel. Regenerate it with that script after moving to a new CUDA major version.")
    print('"""')
    print()
    print("#: Macros: a name among these is replaced wherever it is written.")
    print('CUDA_MACROS: frozenset[str] = frozenset("""')
    print(_lines(macros))
    print('""".split())')
    print()
    print("#: Names NVRTC declares at global scope, or will not take for a kernel: an ``extern \"C\"``")
    print("#: kernel (whose name is global) cannot be called one of these.")
    print('CUDA_GLOBALS: frozenset[str] = frozenset("""')
    print(_lines(kernels))
    print('""".split())')
    print()
    print(f"#: Kernel names that crash NVRTC itself, or make it hang: {', '.join(sorted(crashed)) or 'none'}.")
    print(f"NVRTC_CRASHES: frozenset[str] = frozenset({sorted(crashed)!r})")


if __name__ == "__main__":
    main()
