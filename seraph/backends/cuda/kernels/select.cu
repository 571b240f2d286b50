// Vertex selections for the scheduler's sparse/dense decisions, counted where the values
// are, so that only a count (and, when it is small, a list) crosses PCIe.
//
// A vertex v is selected when the rule (values.cuh's StrongRule) does not prove it: a
// changed flag above 0 (a rule with unit 0), or a value the strong rule leaves open. Its
// edges are indptr[v + 1] - indptr[v] (the CSC's for in-edges, the CSR's for out-edges).
// Grid-stride loops, warp sums and one atomic per warp: a pass over n values and n + 1
// offsets at memory speed. The kernels' parameters (COUNT_SELECTED_PARAMS, ...) come from
// the header that seraph/backends/cuda/kernels/interface.py writes in front of this file.

template <typename T>
__device__ void count_unproven(const T* value, StrongRule<T> rule, const long long* indptr,
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
__device__ void list_unproven(const T* value, StrongRule<T> rule, long long n, int* out,
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

template <typename V>
__global__ void count_selected(COUNT_SELECTED_PARAMS) {
    count_unproven<V>(value, StrongRule<V>{threshold, light_codes, light_unit}, indptr, n,
                      totals);
}

template <typename V>
__global__ void list_selected(LIST_SELECTED_PARAMS) {
    list_unproven<V>(value, StrongRule<V>{threshold, light_codes, light_unit}, n, out,
                     claimed);
}

// counts[s] += the vertices whose weak predictor state is s (of num_states): each warp adds
// its lanes of a state at once, into its block's counts in shared memory, and each block
// adds its counts to the words. An atomic a vertex on the words would queue millions on the
// few states a diagram has.
__global__ void count_states(COUNT_STATES_PARAMS) {
    __shared__ unsigned int local[MAX_STATES];
    for (int s = threadIdx.x; s < num_states; s += blockDim.x) local[s] = 0;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    // Every lane of a warp runs the same number of iterations, so the matches are whole.
    const long long rounds = (n + stride - 1) / stride;
    for (long long r = 0; r < rounds; ++r) {
        const long long v = r * stride + blockIdx.x * (long long)blockDim.x + threadIdx.x;
        const int s = v < n ? (int)(states[v] & STATE_MASK) : -1;
        const unsigned same = __match_any_sync(0xffffffffu, s);
        if (s >= 0 && (threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&local[s], __popc(same));
    }
    __syncthreads();
    for (int s = threadIdx.x; s < num_states; s += blockDim.x)
        if (local[s]) atomicAdd(&counts[s], (unsigned long long)local[s]);
}

// For each of `pages`, the vertices a sweep of it attempts and the in-edges they hold
// there: those whose weak state attempts (`attempt`, the diagram's ATTEMPT row), and
// whatever their state those split across pages or hubs (more than `hub_edges` in-edges,
// summed by chunks). `shares` blocks take one page's vertices each, and each warp adds its
// sums with one atomic.
__global__ void count_awake(COUNT_AWAKE_PARAMS) {
    const long long k = blockIdx.x / shares;
    const long long page = pages[k];
    const long long lo = page * page_edges;
    const long long hi = lo + page_edges < num_edges ? lo + page_edges : num_edges;
    unsigned long long edges = 0, rows = 0;
    for (long long v = page_first[page] + (blockIdx.x % shares) * (long long)blockDim.x
             + threadIdx.x;
         v <= page_last[page]; v += (long long)shares * blockDim.x) {
        const long long row_lo = indptr[v], row_hi = indptr[v + 1];
        if (attempt[states[v] & STATE_MASK] || row_lo < lo || row_hi > hi ||
            row_hi - row_lo > hub_edges) {
            const long long first = row_lo > lo ? row_lo : lo;
            const long long last = row_hi < hi ? row_hi : hi;
            if (last > first) {
                edges += last - first;
                ++rows;
            }
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        edges += __shfl_down_sync(0xffffffffu, edges, off);
        rows += __shfl_down_sync(0xffffffffu, rows, off);
    }
    if ((threadIdx.x & 31) == 0 && rows) {
        atomicAdd(&counts[2 * k], edges);
        atomicAdd(&counts[2 * k + 1], rows);
    }
}
