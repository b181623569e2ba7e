// lg/field.cuh: a field of a layout as a kernel indexes it (lg::Field), its rows (lg::Row) and aligned
// vectors (lg::Vec). Every generated view struct derives from lg::Field, with the field's width, row stride
// and offset as template arguments. Part of layoutgen's device library (lg/lg.cuh lists the headers).
#ifndef LG_V0_1_0_FIELD_CUH  // each version once, however many folders hold it (lg/version.cuh)
#define LG_V0_1_0_FIELD_CUH
#include "version.cuh"

namespace lg {
inline namespace v0_1_0 {  // layoutgen 0.1.0: another version's library is another namespace (lg/version.cuh)

// An aligned group of N elements, for vector loads and stores.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
    T v[N];
};

// Vec<T, N> of a field of `const T` is a `const Vec<T, N>`: loads only.
template <typename T, int N> struct VecOf { using type = Vec<T, N>; };
template <typename T, int N> struct VecOf<const T, N> { using type = const Vec<T, N>; };

// How a field's geometry scales: static (every number below is the count of
// elements) or by a symbol bound at launch (a row of `q: [32, D]` fields counts
// columns of D elements; Width, RowStride and Offset are then multiples of D,
// and a column index is 64-bit, as such a row can hold 2^31 elements or more).
struct Unscaled {
    using Column = int;
    __device__ __forceinline__ static constexpr int value() { return 1; }
};
struct Scaled {
    using Column = long long;
    long long unit;  // the symbol's value
    __device__ __forceinline__ long long value() const { return unit; }
};

// Which rows of the layout a field's rows are: all of them, or the rows whose
// index on a named axis of Size entries lies in Start..Start+Len (each entry of
// that axis holds Inner rows; the products are 64-bit).
struct AllRows {
    template <typename I> __device__ __forceinline__ static I map(I r) { return r; }
};
template <long long Start, long long Len, long long Size, long long Inner>
struct AxisRows {
    template <typename I> __device__ __forceinline__ static I map(I r) {
        return static_cast<I>(r / (Len * Inner) * (Size * Inner) + Start * Inner + r % (Len * Inner));
    }
};

template <typename> inline constexpr bool dependent_false = false;

// Whether a view may hand out a raw pointer to its field: only for a parameter
// declared contiguous=True, whose rows are packed (row stride == width).
enum class Packing { strided, contiguous };

// One row of a field, as `x.row(r)` hands it out: its columns, indexed with [c]
// (c < width) and in aligned groups with vec<BYTES>(i). A row is not a pointer:
// the next row is the field's row stride further on, which no offset from this
// row knows, so arithmetic on a row (`x.row(0) + r * x.width`, the bug this
// library exists to prevent) stops the compile with the message of `Rows`, the
// view's tag, which names its real row stride.
template <typename Rows, typename T, typename Column, int Width, int VectorBytes>
class Row {
  public:
    using element_type = T;
    using column_type = Column;
    static constexpr int vector_bytes = VectorBytes;

    __device__ __forceinline__ explicit Row(T* first) : first_(first) {}
    // Element `c` of the row.
    __device__ __forceinline__ T& operator[](Column c) const { return first_[c]; }
    // The i-th group of BYTES bytes of the row.
    template <int BYTES = VectorBytes>
    __device__ __forceinline__ typename VecOf<T, BYTES / sizeof(T)>::type& vec(int i) const {
        static_assert(BYTES <= VectorBytes, "vec<N>: the launcher checks this parameter's alignment for "
                      "narrower accesses only; declare vector=N on the parameter (see the instantiation below)");
        static_assert(Width * sizeof(T) % BYTES == 0, "the field is not a whole number of such accesses");
        return reinterpret_cast<typename VecOf<T, BYTES / sizeof(T)>::type*>(first_)[i];
    }

    // Arithmetic on a row does not compile (see above); these exist for their message only.
    template <typename I> __device__ friend Row operator+(const Row& row, I) { return refused<I>(row); }
    template <typename I> __device__ friend Row operator+(I, const Row& row) { return refused<I>(row); }
    template <typename I> __device__ friend Row operator-(const Row& row, I) { return refused<I>(row); }
    template <typename I> __device__ Row& operator+=(I) { refused<I>(*this); return *this; }
    template <typename I> __device__ Row& operator-=(I) { refused<I>(*this); return *this; }
    template <typename I = int> __device__ T& operator*() const { refused<I>(*this); return first_[0]; }

  private:
    template <typename I> __device__ static Row refused(const Row& row) {
        Rows::template not_a_pointer<I>();
        return row;
    }
    T* first_;
};

// The rows of one field: Width columns starting at column Offset of rows
// RowStride elements apart. Index is `int` where every index of the layout
// fits in 32 bits, `long long` otherwise. Every element access goes through
// row(), which hands out a Row, never a pointer; only raw_pointer() does, for a
// parameter declared contiguous=True. `Rows` is the view's tag (its message for
// arithmetic on a row); VectorBytes is the widest access the kernel's launcher
// checks the array's alignment for: the parameter's `vector=` (or the kernel's,
// with Grid.vectors), else one element.
template <typename Rows, typename T, int Width, int RowStride, int Offset, int VectorBytes, Packing Pack,
          typename Index, typename Scale = Unscaled, typename RowMap = AllRows>
struct Field {
    static constexpr int width = Width;  // columns of the field
    static constexpr int row_stride = RowStride;  // elements from one row to the next
    static constexpr int offset = Offset;  // the field's first column in a row
    static constexpr int vector_bytes = VectorBytes;  // widest access the launcher checks alignment for
    using Row = v0_1_0::Row<Rows, T, typename Scale::Column, Width, VectorBytes>;
    using element_type = T;
    using index_type = Index;  // a row's index
    using column_type = typename Scale::Column;  // a column's index

    T* base;  // the first element of the whole array, not of the field
    Scale scale;  // what one column counts (1 unless the row has symbolic fields)

    // Row `r` of the field: row(r)[c] for c < width.
    __device__ __forceinline__ Row row(Index r) const {
        return Row(base + RowMap::map(r) * (RowStride * scale.value()) + Offset * scale.value());
    }
    // Element `c` of the field in row `r`: one index off the array's first element, so that the compiler folds
    // the constant parts of many accesses into one address (row(r)[c] adds the row and the column apart).
    __device__ __forceinline__ T& at(Index r, typename Scale::Column c) const {
        return base[RowMap::map(r) * (RowStride * scale.value()) + Offset * scale.value() + c];
    }
    // The i-th group of BYTES bytes of row `r`.
    template <int BYTES = VectorBytes>
    __device__ __forceinline__ typename VecOf<T, BYTES / sizeof(T)>::type& vec(Index r, int i) const {
        return row(r).template vec<BYTES>(i);
    }
    // The field's first element as a plain pointer, for a call into a library that takes one:
    // only a parameter declared contiguous=True has it, as its rows are packed (element
    // r * width + c is row r, column c).
    __device__ __forceinline__ T* raw_pointer() const {
        static_assert(Pack == Packing::contiguous, "raw_pointer(): this parameter's rows are not declared "
                      "packed; declare contiguous=True on it (the binding check then refuses a strided view), "
                      "or index through the view");
        return base + Offset * scale.value();
    }
};

}  // inline namespace v0_1_0
}  // namespace lg
#endif  // LG_V0_1_0_FIELD_CUH
