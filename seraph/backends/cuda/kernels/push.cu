// Push rounds for the CUDA backend's sparse phases (the device counterpart of
// seraph/push.py's rounds): every out-edge (u -> v) of the frontier relaxes
//
//     value[v] = min(value[v], value[u] + w(u, v))
//
// and the vertices a round lowers are the next frontier. The out-edges are read where they
// are: the host's pinned CSR mapped into the device's address space (zero-copy), or the
// device's own copy of a resident symmetric graph. A round is edge-balanced, so a hub's
// million out-edges are spread over the grid, not left to one warp: `ends` holds the
// frontier's out-degree prefix sums (frontier_ends, then a scan), and the thread taking
// round edge e finds its vertex by binary search, so consecutive threads read consecutive
// edges of a row (coalesced reads over PCIe).
//
// A lowered vertex is claimed once per round by setting its byte in `claimed` (the
// backend's changed flags, all zero between rounds) with a word-wide atomicOr, and listed
// with one append per warp. The list holds `capacity` vertices; claims beyond it are
// counted, not listed, and the backend hands such a round back to a dense one. A lowered
// vertex also gets its block marked and its weak predictor state reset, as a pull's
// success does, and the round's smallest written value is kept: every vertex still
// waiting holds one of the round's writes, so it is the waiting vertices' minimum.

// out-degree of each frontier vertex into ends[1..count]; ends[0] = 0.
extern "C" __global__ void frontier_ends(const int* frontier, long long count,
                                         const long long* out_indptr, long long* ends) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (first == 0) ends[0] = 0;
    for (long long i = first; i < count; i += stride) {
        const int u = frontier[i];
        ends[i + 1] = out_indptr[u + 1] - out_indptr[u];
    }
}

// The frontier position owning round edge e: the last i with ends[i] <= e.
__device__ __forceinline__ long long owner(const long long* ends, long long count, long long e) {
    long long lo = 0, hi = count - 1;
    while (lo < hi) {
        const long long mid = (lo + hi + 1) >> 1;
        if (ends[mid] <= e) lo = mid; else hi = mid - 1;
    }
    return lo;
}

template <typename V>
__device__ void push_frontier(const int* frontier, long long count, const long long* ends,
                              const long long* out_indptr, const int* __restrict__ indices,
                              const float* __restrict__ weights, V* values, int mode, V inf,
                              unsigned int* claimed, int* next, long long capacity,
                              unsigned char* states, unsigned char initial_state,
                              long long* block_epoch, int block_shift, long long epoch,
                              unsigned long long* claims, V* min_written) {
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long total = ends[count];
    // Every lane of a warp runs the same number of iterations, so the ballots are whole.
    const long long rounds = (total + stride - 1) / stride;
    V lowest = inf;
    for (long long r = 0; r < rounds; ++r) {
        const long long e = r * stride + blockIdx.x * (long long)blockDim.x + threadIdx.x;
        bool listed = false;
        int v = 0;
        if (e < total) {
            const long long i = owner(ends, count, e);
            const int u = frontier[i];
            const long long edge = out_indptr[u] + (e - ends[i]);
            v = indices[edge];
            const V cand = candidate<V>(values[u], weights, edge, mode, inf);
            if (less_value(cand, values[v]) &&
                less_value(cand, atomic_min_value(&values[v], cand))) {
                block_epoch[v >> block_shift] = epoch;
                if (states) states[v] = initial_state | (states[v] & OWES);
                lowest = min_value(lowest, cand);
                const unsigned int bit = 1u << (8 * (v & 3));
                listed = !(atomicOr(&claimed[v >> 2], bit) & bit);
            }
        }
        const unsigned ballot = __ballot_sync(0xffffffffu, listed);
        if (!ballot) continue;
        unsigned long long base = 0;
        if (lane == 0) base = atomicAdd(claims, (unsigned long long)__popc(ballot));
        base = __shfl_sync(0xffffffffu, base, 0);
        const unsigned long long at = base + __popc(ballot & ((1u << lane) - 1));
        if (listed && at < (unsigned long long)capacity) next[at] = v;
    }
    lowest = group_min(lowest, 32, 0xffffffffu);
    if (lane == 0 && less_value(lowest, inf)) atomic_min_value(min_written, lowest);
}

#define PUSH_ENTRY_POINT(SUFFIX, V)                                                          \
    extern "C" __global__ void push_frontier_##SUFFIX(                                       \
        const int *frontier, long long count, const long long *ends,                         \
        const long long *out_indptr, const int *indices, const float *weights, V *values,    \
        int mode, V inf, unsigned int *claimed, int *next, long long capacity,               \
        unsigned char *states, unsigned char initial_state, long long *block_epoch,          \
        int block_shift, long long epoch, unsigned long long *claims, V *min_written) {      \
        push_frontier<V>(frontier, count, ends, out_indptr, indices, weights, values, mode,  \
                         inf, claimed, next, capacity, states, initial_state, block_epoch,   \
                         block_shift, epoch, claims, min_written);                           \
    }

PUSH_ENTRY_POINT(i32, int)
PUSH_ENTRY_POINT(f32, float)
