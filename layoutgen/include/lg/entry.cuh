// lg/entry.cuh: what a kernel from a hand-written source (SourceKernel) asks of its entry: how many parameters it
// takes, whether parameter I is the type T (by value, or by const reference), and the call, made only where it
// fits (a kernel file's generated __global__ calls it; layoutgen/codegen/source_shim.py writes that call).
#ifndef LG_V0_1_0_ENTRY_CUH
#define LG_V0_1_0_ENTRY_CUH
#include "version.cuh"

namespace lg {
inline namespace v0_1_0 {
namespace entry {
template <typename F> struct Signature;
template <typename R, typename... A> struct Signature<R (*)(A...)> {
    static constexpr int count = sizeof...(A);
};
template <int I, typename... A> struct Nth { using type = void; };  // past the end: fits no parameter
template <typename A0, typename... A> struct Nth<0, A0, A...> { using type = A0; };
template <int I, typename A0, typename... A> struct Nth<I, A0, A...> { using type = typename Nth<I - 1, A...>::type; };
template <typename F, int I> struct Parameter;
template <typename R, typename... A, int I> struct Parameter<R (*)(A...), I> { using type = typename Nth<I, A...>::type; };
template <typename P, typename T> struct Same { static constexpr bool value = false; };
template <typename T> struct Same<T, T> { static constexpr bool value = true; };
template <typename T> struct Same<const T&, T> { static constexpr bool value = true; };
template <typename F> __host__ __device__ constexpr int arity() { return Signature<F>::count; }
template <typename F, int I, typename T> __host__ __device__ constexpr bool takes() {
    return Same<typename Parameter<F, I>::type, T>::value;
}
template <bool Fits, auto Entry, typename... V> __device__ __forceinline__ void call(const V&... views) {
    if constexpr (Fits) Entry(views...);
}
}  // namespace entry
}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_ENTRY_CUH
