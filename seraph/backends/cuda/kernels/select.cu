// Vertex selections for the scheduler's sparse/dense decisions, counted where the values
// are, so that only a count (and, when it is small, a list) crosses PCIe.
//
// A vertex v is selected when the rule (values.cuh's StrongRule) does not prove it: a
// changed flag above 0 (a rule with unit 0), or a value the strong rule leaves open. Its
// edges are indptr[v + 1] - indptr[v] (the CSC's for in-edges, the CSR's for out-edges).
// Grid-stride loops, warp sums and one atomic per warp: a pass over n values and n + 1
// offsets at memory speed.

template <typename T>
__device__ void count_selected(const T* value, StrongRule<T> rule, const long long* indptr,
                               long long n, unsigned long long* totals) {
    unsigned long long vertices = 0, edges = 0;
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        if (!rule.proven(value[v], v)) {
            ++vertices;
            edges += indptr[v + 1] - indptr[v];
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        vertices += __shfl_down_sync(0xffffffffu, vertices, off);
        edges += __shfl_down_sync(0xffffffffu, edges, off);
    }
    if ((threadIdx.x & 31) == 0 && vertices) {
        atomicAdd(&totals[0], vertices);
        atomicAdd(&totals[1], edges);
    }
}

// The selected vertices, in no particular order: each warp claims room for its own with
// one atomic. `out` has room for every selected vertex; `claimed` starts at zero. Vertex
// ids fit an int: they are the CSC's int32 indices.
template <typename T>
__device__ void list_selected(const T* value, StrongRule<T> rule, long long n, int* out,
                              unsigned long long* claimed) {
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    // Every lane of a warp runs the same number of iterations, so the ballots are whole.
    const long long rounds = (n + stride - 1) / stride;
    for (long long r = 0; r < rounds; ++r) {
        const long long v = r * stride + blockIdx.x * (long long)blockDim.x + threadIdx.x;
        const bool selected = v < n && !rule.proven(value[v], v);
        const unsigned ballot = __ballot_sync(0xffffffffu, selected);
        if (!ballot) continue;
        unsigned long long base = 0;
        if (lane == 0) base = atomicAdd(claimed, (unsigned long long)__popc(ballot));
        base = __shfl_sync(0xffffffffu, base, 0);
        if (selected) out[base + __popc(ballot & ((1u << lane) - 1))] = (int)v;
    }
}

#define SELECT_ENTRY_POINTS(SUFFIX, T)                                                       \
    extern "C" __global__ void count_selected_##SUFFIX(                                      \
        const T *value, T threshold, const unsigned char *light_codes, float light_unit,     \
        const long long *indptr, long long n, unsigned long long *totals) {                  \
        count_selected<T>(value, StrongRule<T>{threshold, light_codes, light_unit}, indptr,  \
                          n, totals);                                                        \
    }                                                                                        \
    extern "C" __global__ void list_selected_##SUFFIX(                                       \
        const T *value, T threshold, const unsigned char *light_codes, float light_unit,     \
        long long n, int *out, unsigned long long *claimed) {                                \
        list_selected<T>(value, StrongRule<T>{threshold, light_codes, light_unit}, n, out,   \
                         claimed);                                                           \
    }

SELECT_ENTRY_POINTS(u8, unsigned char)
SELECT_ENTRY_POINTS(i32, int)
SELECT_ENTRY_POINTS(f32, float)
