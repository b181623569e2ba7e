// lg/checked_cast.cuh: a debug views header includes this last. From here on, reinterpret_cast is
// lg::reinterpret_checked (lg/checked.cuh), so that a cast of a checked pointer to a vector type in the code
// after the header (`reinterpret_cast<const float4*>(&x.at(r, c))` in a kernel's body) compiles and keeps its
// footprint; every other cast is the language's own. No guard: a second debug header defines it again, the same.
#define reinterpret_cast lg::reinterpret_checked
