// lg/checked.cuh: the debug build's checked pointers and references, and its checked views.
//
// The pointers a kernel takes from its parameters, checked. On the GPU and in the CPU run of
// `check --execute` alike, `&x.at(r, c)`, `&x(i, c)`, `&x.row(r)[c]` and `x.raw_pointer()` are an
// lg::checked_ptr: it carries the parameter's footprint (its array, the field's rows, row stride, first
// column and width, and the named range of rows where the view has one) and behaves as the raw pointer for
// arithmetic, subscripts, comparisons, ++/--, differences and casts (reinterpret_cast, C-style and
// static_cast to another pointer type keep the footprint); every read and write through it is checked
// against the footprint and the first one outside is reported (lg::out_of_footprint) in the words of the
// CPU run's LG650. The accessors hand out an lg::checked_ref, a reference that checks each read and write,
// so that `&` of one is a checked pointer. A shared tile's accessor (lg/detail/shared_tile.cuh) hands one out too,
// with the tile's footprint (its data, the rows it holds, its pitch and width: footprint::tile() below), so that
// `&xs(r, c)` is a checked pointer on the GPU (the CPU run leaves a tile to AddressSanitizer).
//
// The user's pointer types stay checked too: the debug build writes each pointer declarator over an element type
// (`const float* p`, a __device__ helper's `float*` parameter, `(const float4*)e`, `static_cast<const float*>`) as
// lg::checked_ptr (layoutgen/codegen/checked_types.py), so a pointer stored or passed on keeps its footprint, and
// a raw pointer made one (a local or shared array, nullptr) checks nothing. The limit: what that rewrite leaves
// raw (several declarators in one declaration, a volatile pointee, a struct's member, a function of a header
// taking `float*`, a function template deducing `T*`) converts to a plain pointer, unchecked on the GPU (the CPU
// run still checks it, through AddressSanitizer).
#ifndef LG_V0_1_0_CHECKED_CUH
#define LG_V0_1_0_CHECKED_CUH
#include "fault.cuh"
#include "field.cuh"
#include "site.cuh"

namespace lg {
inline namespace v0_1_0 {
inline namespace debug {
#if !defined(__CUDACC__)
// On the host (the CPU run, host-compiled tests) a tile's pointer reports through out_of_footprint, which the host's
// fault functions define (lg/host/sanitizer.h): the CPU run leaves tiles to AddressSanitizer and never gets here.
// In the versioned namespace, so that two library versions in one unit are two functions (lg/fault.cuh's device one
// is the record's, shared by every version as out_of_footprint is).
inline void out_of_tile(const char* where, int param, long long row, long long col, long long held, long long capacity,
                        long long width, long long pitch, int access, const char* file, int line) {
    out_of_footprint(where, param, row, col, held, capacity, width, pitch, access, file, line);
}
#endif
// (lg::site and LG_SITE, where the user's code took a pointer or called an accessor: lg/site.cuh.)

// Integer types: what a pointer may be offset or subscripted by.
template <typename I> struct is_index { static constexpr bool value = false; };
template <> struct is_index<bool> { static constexpr bool value = true; };
template <> struct is_index<char> { static constexpr bool value = true; };
template <> struct is_index<signed char> { static constexpr bool value = true; };
template <> struct is_index<unsigned char> { static constexpr bool value = true; };
template <> struct is_index<short> { static constexpr bool value = true; };
template <> struct is_index<unsigned short> { static constexpr bool value = true; };
template <> struct is_index<int> { static constexpr bool value = true; };
template <> struct is_index<unsigned> { static constexpr bool value = true; };
template <> struct is_index<long> { static constexpr bool value = true; };
template <> struct is_index<unsigned long> { static constexpr bool value = true; };
template <> struct is_index<long long> { static constexpr bool value = true; };
template <> struct is_index<unsigned long long> { static constexpr bool value = true; };
template <bool B, typename T = void> struct enable_if {};
template <typename T> struct enable_if<true, T> { using type = T; };
template <typename I> using if_index = typename enable_if<is_index<I>::value, int>::type;

// What a pointer taken from one parameter may touch, in elements of its array.
struct footprint {
    const unsigned char* array;  // the array's first byte (not the field's)
    long long rows;  // the field's rows
    long long row_stride, offset, width;  // elements from one row to the next; the field's first column, its columns
    long long start, len, size, inner;  // a named range of rows (entries start..start+len of an axis of `size`,
                                        // `inner` rows each); len 0: every row of the array is the field's
    int itemsize, param;  // a shared tile's `param`: -1 - its index among the kernel's shared arrays
    const char* where;  // `kernel.param (View)`, for the device's printf
    site taken;  // where the pointer was taken from the view
    // A shared tile's footprint (lg::SharedTile's accessor, lg/detail/shared_tile.cuh) has no named range, and says
    // what it is in that range's fields, so that every footprint keeps one size (a larger one costs registers in
    // every checked access of the debug build): `len` 0 and `inner` 0 (no range has 0 rows an entry), `start` 1 for
    // an element its accessor handed out, checked there (row below the capacity, column below the width; a read
    // past the rows the tile holds is recorded, not refused, as a tensor-core tile computes rows it never stores),
    // so nothing more is checked here, 2 for a pointer taken from one (`&xs(r, c)`), checked here; `size` the
    // tile's capacity. `rows` the rows the tile held when the pointer was taken, `row_stride` its pitch, columns
    // 0..width, `array` the first element of the tile (of its stage).
    __device__ __forceinline__ int tile() const { return len == 0 && inner == 0 ? static_cast<int>(start) : 0; }

    // The field's row of row `r` of the array, or -1 where that row is not one of the field's.
    __device__ __forceinline__ long long field_row(long long r) const {
        if (r < 0) return -1;
        if (len == 0) return r < rows ? r : -1;
        const long long entry = r / inner % size;
        if (entry < start || entry >= start + len) return -1;
        const long long f = r / (inner * size) * (len * inner) + (entry - start) * inner + r % inner;
        return f < rows ? f : -1;
    }
    // Whether element `e` of the array (from its first) is the field's; its row and column either way.
    __device__ __forceinline__ bool holds(long long e, long long& row, long long& col, long long& frow) const {
        row = e >= 0 ? e / row_stride : -1 - (-1 - e) / row_stride;  // rounded down
        col = e - row * row_stride;
        frow = field_row(row);
        return frow >= 0 && col >= offset && col < offset + width;
    }
    // Check an access of `bytes` bytes at `at`: 0 a read, 1 a write, 2 either (a reference handed out), 3 a
    // compound assignment (a read, then a write), 4 an atomic that reads the old value, 5 atomicExch.
    // A shared tile's pointer reports the rows the tile holds and its capacity where a parameter's reports the
    // field's row and first column (lg/fault.cuh's out_of_footprint says so; a tile's columns start at 0).
    __device__ __forceinline__ void check(const void* at, long long bytes, int access) const {
#ifdef LG_HOST_ACCESS  // the CPU run's shadow of outputs (lg/host/shadow.h): unwritten reads, racing writes
        // A tile is AddressSanitizer's there (its pitch's padding poisoned; a NaN from rows past those it holds
        // named where it reaches an output), whose findings name it already: the CPU run's stay as they were.
        if (tile() != 0) return;
        LG_HOST_ACCESS(array, param, at, bytes, access);
#endif
        const int t = tile();
        if (t == 1) return;
        const long long first = static_cast<const unsigned char*>(at) - array;
        const long long lo = first >= 0 ? first / itemsize : -1 - (-1 - first) / itemsize;
        const long long hi = (first + bytes - 1) >= 0 ? (first + bytes - 1) / itemsize : -1 - (-first - bytes) / itemsize;
        long long row, col, frow;
        if (!holds(lo, row, col, frow) || (hi != lo && !holds(hi, row, col, frow))) {
            if (t)
                out_of_tile(where, param, row, col, rows, size, width, row_stride, access > 2 ? 1 : access, taken.file,
                            taken.line);
            else
                out_of_footprint(where, param, row, col, frow, offset, width, row_stride, access > 2 ? 1 : access,
                                 taken.file, taken.line);
        }
    }
    // The footprint of a pointer taken from an element with this one (`&` of a checked reference): a tile's
    // element's becomes a tile's pointer's, checked from then on.
    __device__ __forceinline__ footprint pointer() const {
        footprint f = *this;
        if (f.tile() == 1) f.start = 2;
        return f;
    }
};

template <typename T> class checked_ref;
template <typename T> struct is_const { static constexpr bool value = false; };
template <typename T> struct is_const<const T> { static constexpr bool value = true; };
template <typename T> struct plain { using type = T; };
template <typename T> struct plain<const T> { using type = T; };

// Which rows of its array a view's rows are (lg::AllRows, lg::AxisRows), as a footprint counts them.
template <typename M> struct row_range {
    static constexpr long long start = 0, len = 0, size = 0, inner = 1;
};
template <long long Start, long long Len, long long Size, long long Inner>
struct row_range<AxisRows<Start, Len, Size, Inner>> {
    static constexpr long long start = Start, len = Len, size = Size, inner = Inner;
};
template <typename F> struct field_rows;
template <typename Rows, typename T, int Width, int RowStride, int Offset, int VectorBytes, Packing Pack,
          typename Index, typename Scale, typename RowMap>
struct field_rows<Field<Rows, T, Width, RowStride, Offset, VectorBytes, Pack, Index, Scale, RowMap>> {
    using type = row_range<RowMap>;
};

// A pointer taken from a parameter: the raw pointer's behaviour, every access checked against its footprint.
template <typename T>
class checked_ptr {
  public:
    using element_type = T;
    using lg_checked_pointee = T;  // how lg/host/runtime.h tells a checked pointer (its __ldg)
    T* p;
    footprint f;
    // Whether U* converts to T* as the language converts raw pointers (the constructors' conditions, written
    // without <type_traits>, which NVRTC does not have).
    template <typename U> struct converts {
        __device__ static char test(T*);
        __device__ static long test(...);
        static constexpr bool value = sizeof(test(static_cast<U*>(nullptr))) == 1;
    };

    __device__ __forceinline__ checked_ptr(T* at, const footprint& fp) : p(at), f(fp) {}
    // The user's pointer types are this type in the debug build (codegen/checked_types.py writes
    // `const float* p` as `lg::checked_ptr<const float> p`), so it is made wherever a raw pointer is:
    // declared without a value (left indeterminate, as the raw pointer is; and trivial, as __shared__ wants),
    checked_ptr() = default;
    // from a raw pointer or nullptr: one no parameter's footprint covers (a local or shared array, a pointer the
    // kernel was passed raw), checked against nothing, as it was before the rewrite;
    __device__ __forceinline__ checked_ptr(T* at) : p(at), f(unchecked()) {}
    // from a checked pointer that converts as the raw one does (`float` to `const float`): the same footprint;
    template <typename U, typename enable_if<converts<U>::value, int>::type = 0>
    __device__ __forceinline__ checked_ptr(const checked_ptr<U>& q) : p(q.p), f(q.f) {}
    // and, cast explicitly, from one of another pointee (`(lg::checked_ptr<const float4>)p`, static_cast<>):
    // the same footprint, which counts bytes; from a raw pointer of another type (`(const float4*)shared`):
    // unchecked, as that raw pointer is.
    template <typename U, typename enable_if<!converts<U>::value, int>::type = 0>
    __device__ __forceinline__ explicit checked_ptr(const checked_ptr<U>& q) : p((T*)q.p), f(q.f) {}
    template <typename U>
    __device__ __forceinline__ explicit checked_ptr(U* at) : p((T*)at), f(unchecked()) {}
    // from an integer (`(const float4*)address`): an address, unchecked.
    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ explicit checked_ptr(I address)
        : p((T*)static_cast<unsigned long long>(address)), f(unchecked()) {}  // (as the raw cast: sign-extended)
    // A raw pointer where one is asked for (a function of a header, a __global__'s argument): unchecked there.
    __device__ __forceinline__ operator T*() const { return p; }
    template <typename V>
    __device__ __forceinline__ explicit operator V*() const { return (V*)p; }

    __device__ __forceinline__ decltype(auto) operator*() const { return at(p); }
    __device__ __forceinline__ T* operator->() const {
        f.check(p, sizeof(T), 2);
        return p;
    }
    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ decltype(auto) operator[](I i) const { return at(p + i); }

    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ checked_ptr operator+(I i) const { return checked_ptr(p + i, f); }
    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ friend checked_ptr operator+(I i, const checked_ptr& q) { return checked_ptr(q.p + i, q.f); }
    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ checked_ptr operator-(I i) const { return checked_ptr(p - i, f); }
    // Two checked pointers' difference (a template: a raw pointer is subtracted as the language does, after the
    // conversion to T*, not made a checked pointer first, which would make `p - raw` ambiguous).
    template <typename U>
    __device__ __forceinline__ long long operator-(const checked_ptr<U>& q) const { return p - q.p; }
    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ checked_ptr& operator+=(I i) { p += i; return *this; }
    template <typename I, if_index<I> = 0>
    __device__ __forceinline__ checked_ptr& operator-=(I i) { p -= i; return *this; }
    __device__ __forceinline__ checked_ptr& operator++() { ++p; return *this; }
    __device__ __forceinline__ checked_ptr& operator--() { --p; return *this; }
    __device__ __forceinline__ checked_ptr operator++(int) { checked_ptr old = *this; ++p; return old; }
    __device__ __forceinline__ checked_ptr operator--(int) { checked_ptr old = *this; --p; return old; }

  private:
    // The footprint of a pointer no parameter's covers: every element of it holds (rows of one element, at
    // least as many as addresses), so its accesses check nothing. `param` -1 and `array` null tell it apart
    // for whatever looks at a footprint (lg::footprint::check's callers in the CPU run).
    __device__ __forceinline__ static footprint unchecked() {
        return {nullptr, 0x7fffffffffffffffLL, 1, 0, 1, 0, 0, 0, 1, 1, -1, nullptr, {nullptr, 0}};
    }
    // Scalars: a checked reference (a read and a write told apart); a vector type: its members are reached
    // through the reference, so the whole element is checked at once.
    __device__ __forceinline__ decltype(auto) at(T* e) const {
        if constexpr (__is_class(T) || __is_union(T)) {
            f.check(e, sizeof(T), is_const<T>::value ? 0 : 2);
            return static_cast<T&>(*e);
        } else {
            return checked_ref<T>(e, f);
        }
    }
};

// A reference into a parameter that checks each read and write: what the debug build's accessors hand out.
// Only a temporary assigns through it (`x.at(r, c) = v`, `p[i] += v`): `auto v = x.at(r, c);` is a copy of
// the reference, and `v = 0` on it does not compile, as it would write the array where the release
// build's `v` is a float of its own.
template <typename T>
class checked_ref {
  public:
    using lg_checked_value = typename plain<T>::type;  // how lg/host/runtime.h tells a checked reference (shuffles)
    T* p;
    footprint f;

    __device__ __forceinline__ checked_ref(T* at, const footprint& fp) : p(at), f(fp) {}
    checked_ref& operator=(const checked_ref&) & = delete;
    __device__ __forceinline__ operator T&() const {
        f.check(p, sizeof(T), 0);
        return *p;
    }
    __device__ __forceinline__ checked_ptr<T> operator&() const { return checked_ptr<T>(p, f.pointer()); }
    template <typename V>
    __device__ __forceinline__ T& operator=(V&& v) && {
        f.check(p, sizeof(T), 1);
        return *p = static_cast<V&&>(v);
    }
#define LG_COMPOUND(op)                                 \
    template <typename V>                               \
    __device__ __forceinline__ T& operator op(V&& v) && { \
        f.check(p, sizeof(T), 3);                       \
        return *p op static_cast<V&&>(v);               \
    }
    LG_COMPOUND(+=) LG_COMPOUND(-=) LG_COMPOUND(*=) LG_COMPOUND(/=) LG_COMPOUND(%=)
    LG_COMPOUND(&=) LG_COMPOUND(|=) LG_COMPOUND(^=) LG_COMPOUND(<<=) LG_COMPOUND(>>=)
#undef LG_COMPOUND
    __device__ __forceinline__ T& operator++() && { f.check(p, sizeof(T), 3); return ++*p; }
    __device__ __forceinline__ T& operator--() && { f.check(p, sizeof(T), 3); return --*p; }
    __device__ __forceinline__ T operator++(int) && { f.check(p, sizeof(T), 3); return (*p)++; }
    __device__ __forceinline__ T operator--(int) && { f.check(p, sizeof(T), 3); return (*p)--; }
};

template <typename A, typename B> struct is_same { static constexpr bool value = false; };
template <typename A> struct is_same<A, A> { static constexpr bool value = true; };
template <typename T> struct is_checked_ptr { static constexpr bool value = false; };
template <typename T> struct is_checked_ptr<checked_ptr<T>> { static constexpr bool value = true; };
template <typename T> struct is_checked_ptr<const checked_ptr<T>> { static constexpr bool value = true; };
template <typename T> struct is_checked_ptr<checked_ptr<T>&> { static constexpr bool value = true; };
template <typename T> struct is_checked_ptr<const checked_ptr<T>&> { static constexpr bool value = true; };
template <typename T> struct pointee { using type = void; };
template <typename T> struct pointee<T*> { using type = T; };
template <typename T> struct pointee<T* const> { using type = T; };

// reinterpret_cast in the code after the views header (the kernel's body, its helpers, a hand-written
// entry): a cast of a checked pointer to another pointer type keeps its footprint (the cast the language
// has cannot take a class), every other cast is the language's own.
template <typename To, typename From>
__host__ __device__ __forceinline__ decltype(auto) reinterpret_checked(From&& from) {
    if constexpr (is_checked_ptr<From>::value && !is_same<typename pointee<To>::type, void>::value) {
        return checked_ptr<typename pointee<To>::type>(reinterpret_cast<To>(from.p), from.f);
    } else if constexpr (is_checked_ptr<From>::value) {
        return reinterpret_cast<To>(from.p);
    } else {
        return reinterpret_cast<To>(static_cast<From&&>(from));
    }
}

// const_cast of a pointer in the user's code (codegen/checked_types.py writes `const_cast<float*>(p)` as
// lg::const_checked<float*>(p), since `p` may be a checked pointer there, which the language's cast cannot take):
// a checked pointer keeps its footprint, every other operand is the language's own cast.
template <typename To, typename From>
__host__ __device__ __forceinline__ decltype(auto) const_checked(From&& from) {
    if constexpr (is_checked_ptr<From>::value) {
        return checked_ptr<typename pointee<To>::type>(const_cast<To>(from.p), from.f);
    } else {
        return const_cast<To>(static_cast<From&&>(from));
    }
}

// Atomics on a checked pointer (`atomicAdd(&total(c), v)`): checked as a write, then the device's own
// (found by argument-dependent lookup, ahead of the conversion to a raw pointer). `access`: 4 where the atomic
// reads the old value (an atomicAdd into an output nothing wrote reads its poison: LG656 in the CPU run), 5
// for atomicExch, which only writes.
#define LG_CHECKED_ATOMIC(name, access)                                                \
    template <typename T, typename... V>                                                \
    __device__ __forceinline__ auto name(const checked_ptr<T>& at, V... values) {      \
        at.f.check(at.p, sizeof(T), access);                                            \
        return ::name(at.p, values...);                                                 \
    }
LG_CHECKED_ATOMIC(atomicAdd, 4) LG_CHECKED_ATOMIC(atomicSub, 4) LG_CHECKED_ATOMIC(atomicExch, 5)
LG_CHECKED_ATOMIC(atomicMin, 4) LG_CHECKED_ATOMIC(atomicMax, 4) LG_CHECKED_ATOMIC(atomicCAS, 4)
LG_CHECKED_ATOMIC(atomicAnd, 4) LG_CHECKED_ATOMIC(atomicOr, 4) LG_CHECKED_ATOMIC(atomicXor, 4)
LG_CHECKED_ATOMIC(atomicInc, 4) LG_CHECKED_ATOMIC(atomicDec, 4)
#undef LG_CHECKED_ATOMIC

// A row that checks each column against its field before the access (`x.row(r)`), handing out checked
// references, at the line where the row was taken.
template <typename View, typename Base>
struct CheckedRow : Base {
    const View* view;
    long long r;
    site taken;
    __device__ __forceinline__ CheckedRow(const View* v, long long row, Base first, site s)
        : Base(first), view(v), r(row), taken(s) {}
    __device__ __forceinline__ checked_ref<typename Base::element_type> operator[](typename Base::column_type c) const {
        view->lg_check(r, c, taken);
        return checked_ref<typename Base::element_type>(&Base::operator[](c), view->lg_footprint(taken));
    }
    template <int BYTES = Base::vector_bytes>
    __device__ __forceinline__ decltype(auto) vec(int i) const {
        view->lg_check(r, (static_cast<long long>(i) + 1) * (BYTES / sizeof(typename Base::element_type)) - 1, taken);
        return Base::template vec<BYTES>(i);
    }
};

// The debug build's view of a field: a generated view struct `View` derives from CheckedField<View, an
// lg::Field>, and each accessor of the field is checked first (row() checks the row, its [c] and vec() the
// column, at() both), at the caller's line; an element is a checked reference, so that its address is a
// checked pointer. The view struct adds its rows() (from the layout's symbols) and its operator(), which
// checks each index against its extent (lg_index) before at().
template <typename View, typename Base>
struct CheckedField : Base {
    using T = typename Base::element_type;
    using Index = typename Base::index_type;
    using Column = typename Base::column_type;

    int lg_param;  // which parameter of the kernel this view is
    const char* lg_where;  // its name for messages: `kernel.param (Layout.field)`

    __device__ __forceinline__ const View& lg_view() const { return static_cast<const View&>(*this); }
    __device__ __forceinline__ void lg_check(long long r, long long c, site s = {nullptr, 0}) const {
        const long long width = Base::width * this->scale.value();  // elements: columns count `unit` each
        if (r < 0 || r >= lg_view().rows() || c < 0 || c >= width)
            out_of_field(lg_where, lg_param, r, c, lg_view().rows(), width, s.file, s.line);
    }
    // One index of operator() against its extent: parts out of range are caught even where the
    // flattened row and column would still fall inside the field.
    __device__ __forceinline__ void lg_index(int axis, long long i, long long extent, site s) const {
        if (i < 0 || i >= extent) out_of_field(lg_where, lg_param, axis, i, extent, -1, s.file, s.line);
    }
    // What a pointer taken from this view may touch (lg::checked_ptr), taken at `s`.
    __device__ __forceinline__ footprint lg_footprint(site s) const {
        using Range = typename field_rows<Base>::type;
        const long long unit = this->scale.value();
        return {reinterpret_cast<const unsigned char*>(this->base), static_cast<long long>(lg_view().rows()),
                Base::row_stride * unit, Base::offset * unit, Base::width * unit, Range::start, Range::len, Range::size,
                Range::inner, static_cast<int>(sizeof(T)), lg_param, lg_where, s};
    }
    __device__ __forceinline__ CheckedRow<View, typename Base::Row> row(Index r, site lg_site LG_SITE) const {
        lg_check(r, 0, lg_site);
        return {&lg_view(), r, Base::row(r), lg_site};
    }
    __device__ __forceinline__ checked_ref<T> at(Index r, Column c, site lg_site LG_SITE) const {
        lg_check(r, c, lg_site);
        return checked_ref<T>(&Base::at(r, c), lg_footprint(lg_site));
    }
    // decltype(auto), not the vector's type: NVRTC 13.0 takes the default argument's __builtin_LINE() at this
    // declaration, not at the caller, where the return type depends on BYTES (measured on an H100; 13.5 does not).
    template <int BYTES = Base::vector_bytes>
    __device__ __forceinline__ decltype(auto) vec(Index r, int i, site lg_site LG_SITE) const {
        lg_check(r, (static_cast<long long>(i) + 1) * (BYTES / sizeof(T)) - 1, lg_site);
        return Base::template vec<BYTES>(r, i);
    }
    // The field's first element, for a parameter declared contiguous=True: a checked pointer.
    __device__ __forceinline__ checked_ptr<T> raw_pointer(site lg_site LG_SITE) const {
        return checked_ptr<T>(Base::raw_pointer(), lg_footprint(lg_site));
    }
};

}  // inline namespace debug
}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_CHECKED_CUH
