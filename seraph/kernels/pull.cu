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
// Two entry points share the sweep: `pull_window_*` sweeps the window once, and
// `pull_persistent_*` (launched cooperatively, grid no larger than the co-resident blocks)
// sweeps it again and again, one page at a time with a grid-wide sync after each page.
// The window's first `mandatory` pages (those not yet swept this round: the strong rules
// need every active page swept in every round) are always swept; after them the kernel
// stops as soon as the copy into the incoming slot has landed, after a whole pass over the window
// that changed nothing, or after `max_sweeps` passes. The copy stream writes the load's
// sequence number into `landed_seq[slot]` right after the page's bytes, so the kernel
// sees the landing without a host round-trip, and at most one page's sweep overruns it.
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

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

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
struct SweepShared {
    unsigned char table[4 * MAX_STATES];
    unsigned long long count[4];
    V min;
};

template <typename V>
__device__ void init_shared(SweepShared<V>& sh, const unsigned char* table, int num_states,
                            int predictor, V inf) {
    if (threadIdx.x < 4) sh.count[threadIdx.x] = 0;
    if (threadIdx.x == 0) sh.min = inf;
    if (predictor == PRED_WEAK)
        for (int i = threadIdx.x; i < 4 * num_states; i += blockDim.x) sh.table[i] = table[i];
    __syncthreads();
}

// Adds the block's counts and minimum to the global ones and zeroes them for the next sweep.
template <typename V>
__device__ void flush_shared(SweepShared<V>& sh, unsigned long long* counters, V* min_written,
                             V inf) {
    __syncthreads();
    if (threadIdx.x < 4 && sh.count[threadIdx.x]) {
        atomicAdd(&counters[threadIdx.x], sh.count[threadIdx.x]);
        sh.count[threadIdx.x] = 0;
    }
    if (threadIdx.x == 0 && sh.min < inf) {
        atomic_min_value(min_written, sh.min);
        sh.min = inf;
    }
    __syncthreads();
}

// One sweep over the (page, destination vertex) items of window pages
// [first_page, end_page), a warp per item.
template <typename V>
__device__ void sweep_window(
    SweepShared<V>& sh, const long long* __restrict__ pages,
    const long long* __restrict__ offsets, const long long* __restrict__ vertex_prefix,
    const long long* __restrict__ page_first, long long page_edges,
    long long num_edges, const long long* __restrict__ indptr, const int* __restrict__ indices,
    const float* __restrict__ weights, V* values, int mode, V inf, int predictor, V threshold,
    int num_states, unsigned char* states, unsigned char* changed, long long* block_epoch,
    int block_shift, long long epoch, int first_page, int end_page) {
    const int lane = threadIdx.x & 31;
    const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const long long num_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long end = vertex_prefix[end_page];
    int k = first_page;
    for (long long item = vertex_prefix[first_page] + warp; item < end; item += num_warps) {
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
            if (lane == 0) atomicAdd(&sh.count[SKIPPED_STRONG], 1ull);
            continue;
        }
        unsigned char state = 0;
        if (predictor == PRED_WEAK) {
            state = states[v] & STATE_MASK;
            // A vertex split across pages always attempts (see the CPU kernel).
            const bool whole = row_lo >= base && row_hi <= base + length;
            if (whole && !sh.table[state]) {
                if (lane == 0) {
                    states[v] = sh.table[3 * num_states + state] | OWES;
                    atomicAdd(&sh.count[SKIPPED_WEAK], 1ull);
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
        atomicAdd(&sh.count[ATTEMPTED], 1ull);
        const bool success = best < old && best < atomic_min_value(&values[v], best);
        if (success) {
            changed[v] = 1;
            block_epoch[v >> block_shift] = epoch;
            atomicAdd(&sh.count[SUCCEEDED], 1ull);
            atomic_min_value(&sh.min, best);
        }
        if (predictor == PRED_WEAK)
            states[v] = sh.table[(success ? 1 : 2) * num_states + state];
    }
}

#define PULL_ARGS                                                                            \
    const long long *pages, const long long *offsets, const long long *vertex_prefix,        \
        int num_window_pages, const long long *page_first, long long page_edges,             \
        long long num_edges, const long long *indptr, const int *indices,                    \
        const float *weights
#define PULL_TAIL                                                                            \
    const unsigned char *table, int num_states, unsigned char *states, unsigned char *changed, \
        long long *block_epoch, int block_shift, long long epoch, unsigned long long *counters
#define SWEEP_CALL(EPOCH, FIRST, END)                                                        \
    sh, pages, offsets, vertex_prefix, page_first, page_edges, num_edges,                    \
        indptr, indices, weights, values, mode, inf, predictor, threshold, num_states, states, \
        changed, block_epoch, block_shift, EPOCH, FIRST, END

template <typename V>
__device__ void pull_once(PULL_ARGS, V* values, int mode, V inf, int predictor, V threshold,
                          PULL_TAIL, V* min_written) {
    __shared__ SweepShared<V> sh;
    init_shared(sh, table, num_states, predictor, inf);
    sweep_window<V>(SWEEP_CALL(epoch, 0, num_window_pages));
    flush_shared(sh, counters, min_written, inf);
}

// control: [0] passes begun, [1] pages swept in the last of them, [2] stop. Pass s marks
// the blocks it changes with epoch + s, so the scheduler can tell which changes a page has
// already pulled.
template <typename V>
__device__ void pull_persistent(PULL_ARGS, V* values, int mode, V inf, int predictor,
                                V threshold, PULL_TAIL, V* min_written, int max_sweeps,
                                const long long* landed_seq, int incoming_slot,
                                long long expected_seq, int mandatory, int* control) {
    __shared__ SweepShared<V> sh;
    __shared__ int stop;
    cg::grid_group grid = cg::this_grid();
    init_shared(sh, table, num_states, predictor, inf);
    unsigned long long pass_start = 0;  // successes before this pass (block 0 thread 0)
    for (long long unit = 0;; ++unit) {
        const int pass = (int)(unit / num_window_pages);
        const int page = (int)(unit % num_window_pages);
        sweep_window<V>(SWEEP_CALL(epoch + pass, page, page + 1));
        flush_shared(sh, counters, min_written, inf);
        grid.sync();  // every block's updates and counts of this page are visible
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            const bool pass_end = page + 1 == num_window_pages;
            const unsigned long long succeeded = counters[SUCCEEDED];
            const bool landed = incoming_slot >= 0 && unit + 1 >= mandatory &&
                *((volatile const long long*)&landed_seq[incoming_slot]) >= expected_seq;
            control[0] = pass + 1;
            control[1] = page + 1;
            control[2] = landed || (pass_end && (succeeded == pass_start ||
                                                 pass + 1 == max_sweeps));
            if (pass_end) pass_start = succeeded;
        }
        grid.sync();  // every block reads the same decision
        if (threadIdx.x == 0) stop = *((volatile int*)&control[2]);
        __syncthreads();
        if (stop) break;
    }
}

#define ENTRY_POINTS(SUFFIX, V)                                                              \
    extern "C" __global__ void pull_window_##SUFFIX(PULL_ARGS, V *values, int mode, V inf,   \
                                                    int predictor, V threshold, PULL_TAIL,   \
                                                    V *min_written) {                        \
        pull_once<V>(pages, offsets, vertex_prefix, num_window_pages, page_first,            \
                     page_edges, num_edges, indptr, indices, weights, values, mode, inf,     \
                     predictor, threshold, table, num_states, states, changed, block_epoch,  \
                     block_shift, epoch, counters, min_written);                             \
    }                                                                                        \
    extern "C" __global__ void pull_persistent_##SUFFIX(                                     \
        PULL_ARGS, V *values, int mode, V inf, int predictor, V threshold, PULL_TAIL,        \
        V *min_written, int max_sweeps, const long long *landed_seq, int incoming_slot,      \
        long long expected_seq, int mandatory, int *control) {                               \
        pull_persistent<V>(pages, offsets, vertex_prefix, num_window_pages, page_first,      \
                           page_edges, num_edges, indptr, indices, weights, values, mode,    \
                           inf, predictor, threshold, table, num_states, states, changed,    \
                           block_epoch, block_shift, epoch, counters, min_written,           \
                           max_sweeps, landed_seq, incoming_slot, expected_seq, mandatory,   \
                           control);                                                         \
    }

ENTRY_POINTS(i32, int)
ENTRY_POINTS(f32, float)
