// Pull window kernel for the CUDA backend: one sweep over the pages of a window.
//
// value[v] = min(value[v], min over the page's in-edges (u -> v) of value[u] + w(u, v))
//
// A warp takes one destination vertex: its lanes stride over the vertex's in-edges within
// the page and reduce with shuffles, so a hub's thousands of in-edges are shared by 32
// lanes instead of serialised on one thread (power-law load balance). Work items are
// (window page, destination vertex) pairs, flattened through `vertex_prefix`.
//
// All pages of the window are swept in one launch, so a vertex whose in-edges span two
// adjacent pages can be updated by two warps at once: updates are atomicMin, and min is
// idempotent. Non-negative floats order like their int bit patterns, so float distances
// use the int atomicMin on their bits (+inf included).
//
// The weak predictor's packed table is uint8[4][S] (rows attempt, on_success, on_failure,
// next) in shared memory; the high bit of a state byte (OWES) marks "skipped since its last
// attempt" (see seraph/predictors.py and docs/engine.md).

#define UNIT 0
#define ZERO 1
#define STORED 2
#define PRED_NONE 0
#define PRED_STRONG 1
#define PRED_WEAK 2
#define OWES 0x80
#define STATE_MASK 0x7F
#define MAX_STATES 128

enum { ATTEMPTED = 0, SUCCEEDED = 1, SKIPPED_STRONG = 2, SKIPPED_WEAK = 3 };

__device__ __forceinline__ int atomic_min_value(int* addr, int val) {
    return atomicMin(addr, val);
}

__device__ __forceinline__ float atomic_min_value(float* addr, float val) {
    return __int_as_float(atomicMin(reinterpret_cast<int*>(addr), __float_as_int(val)));
}

__device__ __forceinline__ int warp_min(int x) {
    for (int off = 16; off > 0; off >>= 1) x = min(x, __shfl_down_sync(0xffffffffu, x, off));
    return x;
}

__device__ __forceinline__ float warp_min(float x) {
    for (int off = 16; off > 0; off >>= 1) x = fminf(x, __shfl_down_sync(0xffffffffu, x, off));
    return x;
}

template <typename V>
__device__ __forceinline__ V candidate(V val, const float* weights, long long i, int mode, V inf);

template <>
__device__ __forceinline__ int candidate<int>(int val, const float*, long long, int mode, int inf) {
    if (mode == UNIT) return val == inf ? inf : val + 1;
    return val;
}

template <>
__device__ __forceinline__ float candidate<float>(float val, const float* weights, long long i,
                                                  int mode, float inf) {
    return mode == STORED ? val + weights[i] : val;
}

template <typename V>
__device__ void pull_window(
    const long long* __restrict__ pages, const long long* __restrict__ offsets,
    const long long* __restrict__ vertex_prefix, int num_window_pages,
    const long long* __restrict__ page_first, long long page_edges, long long num_edges,
    const long long* __restrict__ indptr, const int* __restrict__ indices,
    const float* __restrict__ weights, V* values, int mode, V inf, int predictor,
    V threshold, const unsigned char* __restrict__ table, int num_states,
    unsigned char* states, unsigned char* changed, long long* block_epoch, int block_shift,
    long long epoch, unsigned long long* counters, V* min_written) {
    __shared__ unsigned char s_table[4 * MAX_STATES];
    __shared__ unsigned long long s_count[4];
    __shared__ V s_min;
    if (threadIdx.x < 4) s_count[threadIdx.x] = 0;
    if (threadIdx.x == 0) s_min = inf;
    if (predictor == PRED_WEAK)
        for (int i = threadIdx.x; i < 4 * num_states; i += blockDim.x) s_table[i] = table[i];
    __syncthreads();

    const int lane = threadIdx.x & 31;
    const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const long long num_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long total = vertex_prefix[num_window_pages];
    int k = 0;
    for (long long item = warp; item < total; item += num_warps) {
        while (vertex_prefix[k + 1] <= item) ++k;  // items rise monotonically per warp
        const long long page = pages[k];
        const long long base = page * page_edges;
        const long long length = min(page_edges, num_edges - base);
        const long long v = page_first[page] + (item - vertex_prefix[k]);
        const long long row_lo = indptr[v], row_hi = indptr[v + 1];
        const long long lo = max(row_lo, base), hi = min(row_hi, base + length);
        if (lo >= hi) continue;
        const V old = values[v];
        if (predictor == PRED_STRONG && old <= threshold) {
            if (lane == 0) atomicAdd(&s_count[SKIPPED_STRONG], 1ull);
            continue;
        }
        unsigned char state = 0;
        if (predictor == PRED_WEAK) {
            state = states[v] & STATE_MASK;
            // A vertex split across pages always attempts (see the CPU kernel).
            const bool whole = row_lo >= base && row_hi <= base + length;
            if (whole && !s_table[state]) {
                if (lane == 0) {
                    states[v] = s_table[3 * num_states + state] | OWES;
                    atomicAdd(&s_count[SKIPPED_WEAK], 1ull);
                }
                continue;
            }
        }
        const long long shift = offsets[k] - base;
        V best = old;
        for (long long i = lo + lane; i < hi; i += 32) {
            const V cand = candidate<V>(values[indices[i + shift]], weights, i + shift, mode, inf);
            best = cand < best ? cand : best;
        }
        best = warp_min(best);
        if (lane != 0) continue;
        atomicAdd(&s_count[ATTEMPTED], 1ull);
        const bool success = best < old && best < atomic_min_value(&values[v], best);
        if (success) {
            changed[v] = 1;
            block_epoch[v >> block_shift] = epoch;
            atomicAdd(&s_count[SUCCEEDED], 1ull);
            atomic_min_value(&s_min, best);
        }
        if (predictor == PRED_WEAK)
            states[v] = s_table[(success ? 1 : 2) * num_states + state];
    }
    __syncthreads();
    if (threadIdx.x < 4 && s_count[threadIdx.x]) atomicAdd(&counters[threadIdx.x], s_count[threadIdx.x]);
    if (threadIdx.x == 0 && s_min < inf) atomic_min_value(min_written, s_min);
}

#define PULL_ARGS                                                                            \
    const long long *pages, const long long *offsets, const long long *vertex_prefix,        \
        int num_window_pages, const long long *page_first, long long page_edges,             \
        long long num_edges, const long long *indptr, const int *indices,                    \
        const float *weights
#define PULL_TAIL                                                                            \
    const unsigned char *table, int num_states, unsigned char *states, unsigned char *changed, \
        long long *block_epoch, int block_shift, long long epoch, unsigned long long *counters
#define PULL_CALL                                                                            \
    pages, offsets, vertex_prefix, num_window_pages, page_first, page_edges, num_edges,      \
        indptr, indices, weights, values, mode, inf, predictor, threshold, table, num_states, \
        states, changed, block_epoch, block_shift, epoch, counters, min_written

extern "C" __global__ void pull_window_i32(PULL_ARGS, int *values, int mode, int inf,
                                           int predictor, int threshold, PULL_TAIL,
                                           int *min_written) {
    pull_window<int>(PULL_CALL);
}

extern "C" __global__ void pull_window_f32(PULL_ARGS, float *values, int mode, float inf,
                                           int predictor, float threshold, PULL_TAIL,
                                           float *min_written) {
    pull_window<float>(PULL_CALL);
}
