// What every kernel file shares: the arithmetic of a relaxation, the edge operators and
// the strong rule. seraph/backends/cuda/kernels/interface.py's source_code puts this text
// in front of a kernel file's own, after the header it writes (the width codes' base, the
// predictor codes and state bits, and each kernel's parameters and declaration), before
// the CUDA backend compiles it (so cupy's cache, keyed on the source text, sees a change
// here).
//
// Non-negative floats order like their int bit patterns, so float distances use the int
// atomicMin on their bits (+inf included).

// Value arithmetic and comparisons that keep subnormal floats. CuPy compiles every kernel
// with -ftz=true (cupy.cuda.compiler appends it after the caller's options, so it cannot
// be turned off), under which float +, *, < and min flush subnormals to zero. The CPU
// backend keeps them, and the backends' answers must be equal bit for bit: a weight of
// 1e-45 gives a distance of 1e-45, not 0. So the kernels add, multiply, compare and take
// minima of values only through these: for floats, PTX without .ftz; for ints, the plain
// operators.
__device__ __forceinline__ float add_value(float a, float b) {
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ float mul_value(float a, float b) {
    float r;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ bool less_value(float a, float b) {
    int r;
    asm("{\n\t.reg .pred p;\n\tsetp.lt.f32 p, %1, %2;\n\tselp.s32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(a), "f"(b));
    return r;
}

template <typename T>
__device__ __forceinline__ bool less_value(T a, T b) {
    return a < b;
}

__device__ __forceinline__ float min_value(float a, float b) {
    float r;
    asm("min.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ int min_value(int a, int b) { return min(a, b); }

__device__ __forceinline__ int atomic_min_value(int* addr, int val) {
    return atomicMin(addr, val);
}

__device__ __forceinline__ float atomic_min_value(float* addr, float val) {
    return __int_as_float(atomicMin(reinterpret_cast<int*>(addr), __float_as_int(val)));
}

// The edge operators (seraph/operators.py), one functor each: its value type V and the
// value a relaxation of edge i offers its head, from the tail's value `val`. The relaxing
// kernels are templates over the functor (pull_window<Distance>, ...), instantiated for
// each operator by interface.py's name expressions, so an offer compiles to its own
// arithmetic with no branch on the operator. Every offer keeps infinity infinite.

// d + 1 (BFS levels).
struct Hop {
    using V = int;
    static __device__ __forceinline__ V offer(V val, const float* weights, long long i, V inf) {
        return val == inf ? inf : val + 1;
    }
};

// d (CC labels).
struct Label {
    using V = int;
    static __device__ __forceinline__ V offer(V val, const float* weights, long long i, V inf) {
        return val;
    }
};

// d + weights[i] (SSSP distances; inf + w is inf).
struct Distance {
    using V = float;
    static __device__ __forceinline__ V offer(V val, const float* weights, long long i, V inf) {
        return add_value(val, weights[i]);
    }
};

// The larger of d and the weight's width code (the widest path): WIDTH_CODE_BASE minus the
// float's bits, which orders widths the other way round; INT_MAX (infinity) stays the max.
struct Width {
    using V = int;
    static __device__ __forceinline__ V offer(V val, const float* weights, long long i, V inf) {
        return max(val, WIDTH_CODE_BASE - __float_as_int(weights[i]));
    }
};

// x[u] / outdeg[u], summed (PageRank's share of a rank): a summing program's operand, which
// its own step (or, where it recomputes, the sweep that moves its sum) keeps per vertex, so
// that an edge's term is its tail's operand (gather.cu: recompute_window).
struct Share {
    using V = double;
    static __device__ __forceinline__ V term(const V* operand, int u) { return operand[u]; }
};

// Whether an in-edge of weight w, in a row listed lightest first (a weighted store's CSC),
// can no longer offer less than `best`: its weight alone reaches it, values being at least
// 0, and so does every heavier in-edge after it in the row (docs/design.md, "Rows ordered
// by weight").
template <typename V>
__device__ __forceinline__ bool weight_reaches(float w, V best) {
    return !less_value(w, (float)best);
}

// Min over the first `width` lanes of a lane group (lanes of other groups may be elsewhere:
// `mask` names this group's); the result is in the group's lane 0.
template <typename V>
__device__ __forceinline__ V group_min(V x, int width, unsigned mask) {
    for (int off = width >> 1; off > 0; off >>= 1)
        x = min_value(x, __shfl_down_sync(mask, x, off, width));
    return x;
}

// The strong rule's test (seraph/lightest.py's `proven`): a vertex is proven final when
// value <= threshold, plus, for SSSP, the lightest in-edge's lower bound codes[v] * unit
// (unit 0: none). The bound is rounded as the CPU's float32 arithmetic rounds it: a fused
// multiply-add would round once, above the float32 product that the codes were checked
// against, and could prove a vertex the argument does not cover (add_value and mul_value
// are separate PTX instructions, never fused).
template <typename V>
struct StrongRule {
    V threshold;
    const unsigned char* codes;
    float unit;

    __device__ __forceinline__ bool proven(V value, long long v) const {
        if (less_value(0.0f, unit))
            return !less_value(add_value((float)threshold, mul_value((float)codes[v], unit)),
                               (float)value);
        return !less_value(threshold, value);
    }
};
