// The summing kernels for the CUDA backend (docs/design.md, "Summing programs"), the CPU's
// seraph/backends/cpu/gather.py.
//
// gather_sum, an iterating program's one pass over a window of pages:
//     into[v] += sum over the window's in-edges (u -> v) of operand[u]
// recompute_window<Op>, a recomputing program's sweep (seraph/spec.py, Recompute): each
// attempted vertex's sum is recomputed from the operands, not added to, and written when it
// moved by more than eps of the sum it replaces; its operand then follows.
//
// Work items are (window page, destination vertex) pairs, flattened through
// `vertex_prefix`, as pull.cu's are. A light item (at most `heavy_edges` in-edges in the
// page) goes to a group of `light_lanes` lanes, a heavy one to a whole warp, and a hub
// (more than `hub_edges` in-edges: seraph/hubs.py) is summed by its chunks, a warp each,
// instead of its items (for_each_item). The lanes of a group stride over the item's
// in-edges and add in double. A sum, unlike pull.cu's min, must count each edge exactly
// once: each (page, vertex) item and chunk is taken by exactly one group, and the pieces of
// a vertex summed by several groups of one launch (a vertex split across two pages of the
// window, a hub's chunks) meet in atomicAdds on the vertex.
//
// The parameters (GATHER_SUM_PARAMS, ...) and the constants come from the header that
// seraph/backends/cuda/kernels/interface.py writes in front of this file.

// The sum of x over the `width` lanes of a group, in its first lane.
__device__ __forceinline__ double group_sum(double x, int width, unsigned mask) {
    for (int off = width >> 1; off > 0; off >>= 1) x += __shfl_down_sync(mask, x, off, width);
    return x;
}

// A work item: in-edges [lo, hi) of vertex v (edge ids; `shift` maps one to its place in
// `indices`), in one page of the window or one of v's hub chunks (`chunk`, else -1).
struct SumItem {
    long long v, lo, hi, shift, chunk;
    long long slot;  // a recomputing sweep's partial sum of v's page piece (page_sums)
    bool whole;      // every in-edge of v is in this item
    bool hub;        // v's in-edges go by its chunks, not by its page items
};

// The window's items, in three parts for power-law in-degrees: light page items to groups
// of light_lanes lanes, so that a warp sums several at once; then each warp scans 32 items
// at a time and sums each heavy one it finds with all 32 lanes; then the hub chunks, a warp
// each. body(item, the lane's place in its group, the group's width, its lanes' mask) runs
// on every lane of the group.
template <typename Body>
__device__ __forceinline__ void for_each_item(
    const long long* pages, const long long* offsets, const long long* vertex_prefix,
    const long long* chunk_prefix, int num_window_pages, const long long* page_first,
    long long page_edges, long long num_edges, const long long* indptr,
    const long long* page_chunks, const long long* hub_chunks, long long hub_edges,
    int light_lanes, long long heavy_edges, Body body) {
    const int lane = threadIdx.x & 31;
    const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long num_threads = (long long)gridDim.x * blockDim.x;
    const long long end = vertex_prefix[num_window_pages];
    // k (the item's window page) rises with the items a thread takes; each part starts it
    // again.
    int k = 0;
    auto item_at = [&](long long item) {
        while (vertex_prefix[k + 1] <= item) ++k;
        const long long page = pages[k];
        const long long base = page * page_edges;
        const long long length = min(page_edges, num_edges - base);
        SumItem it;
        it.v = page_first[page] + (item - vertex_prefix[k]);
        const long long row_lo = indptr[it.v], row_hi = indptr[it.v + 1];
        it.lo = max(row_lo, base);
        it.hi = min(row_hi, base + length);
        it.shift = offsets[k] - base;
        it.chunk = -1;
        // A page shares a vertex with the page before (slot 0) and after (slot 1).
        it.slot = 2 * page + (row_lo < base ? 0 : 1);
        it.whole = row_lo >= base && row_hi <= base + length;
        it.hub = row_hi - row_lo > hub_edges;
        return it;
    };

    const int glane = lane & (light_lanes - 1);
    const unsigned group_mask = light_lanes == 32 ? 0xffffffffu
        : ((1u << light_lanes) - 1) << (lane & ~(light_lanes - 1));
    for (long long item = thread / light_lanes; item < end; item += num_threads / light_lanes) {
        const SumItem it = item_at(item);
        if (it.lo >= it.hi || it.hub || it.hi - it.lo > heavy_edges) continue;
        body(it, glane, light_lanes, group_mask);
    }

    k = 0;
    for (long long first = (thread >> 5) * 32; first < end; first += num_threads) {
        SumItem mine{};
        bool heavy = false;
        if (first + lane < end) {
            mine = item_at(first + lane);
            heavy = !mine.hub && mine.hi - mine.lo > heavy_edges;
        }
        for (unsigned found = __ballot_sync(0xffffffffu, heavy); found; found &= found - 1) {
            const int src = __ffs(found) - 1;
            SumItem it;
            it.v = __shfl_sync(0xffffffffu, mine.v, src);
            it.lo = __shfl_sync(0xffffffffu, mine.lo, src);
            it.hi = __shfl_sync(0xffffffffu, mine.hi, src);
            it.shift = __shfl_sync(0xffffffffu, mine.shift, src);
            it.slot = __shfl_sync(0xffffffffu, mine.slot, src);
            it.whole = __shfl_sync(0xffffffffu, (int)mine.whole, src);
            it.chunk = -1;
            it.hub = false;
            body(it, lane, 32, 0xffffffffu);
        }
    }

    // Hub chunks (seraph/hubs.py: rows of vertex, first edge, end edge).
    k = 0;
    const long long chunks_end = chunk_prefix[num_window_pages];
    for (long long c = thread >> 5; c < chunks_end; c += num_threads >> 5) {
        while (chunk_prefix[k + 1] <= c) ++k;
        const long long page = pages[k];
        SumItem it;
        it.chunk = page_chunks[page] + (c - chunk_prefix[k]);
        it.v = hub_chunks[3 * it.chunk];
        it.lo = hub_chunks[3 * it.chunk + 1];
        it.hi = hub_chunks[3 * it.chunk + 2];
        it.shift = offsets[k] - page * page_edges;
        it.slot = -1;
        it.whole = false;  // a hub is always attempted, like a vertex split across pages
        it.hub = true;
        body(it, lane, 32, 0xffffffffu);
    }
}

#define WINDOW_ITEMS                                                                      \
    pages, offsets, vertex_prefix, chunk_prefix, num_window_pages, page_first, page_edges, \
        num_edges, indptr, page_chunks, hub_chunks, hub_edges, light_lanes, heavy_edges

// The item's in-edges' operands, summed in double by its group, in the group's first lane.
template <typename V>
__device__ __forceinline__ double item_sum(const SumItem& it, int glane, int width,
                                           unsigned mask, const int* __restrict__ indices,
                                           const V* operand) {
    double total = 0.0;
    for (long long i = it.lo + glane; i < it.hi; i += width) total += operand[indices[i + it.shift]];
    return group_sum(total, width, mask);
}

template <typename V>
__global__ void gather_sum(GATHER_SUM_PARAMS) {
    for_each_item(WINDOW_ITEMS, [&](const SumItem& it, int glane, int width, unsigned mask) {
        const double total = item_sum(it, glane, width, mask, indices, operand);
        if (glane == 0) atomicAdd(&into[it.v], total);
    });
}

// One sweep of a recomputing program over the window. An attempt sets the item's sum (the
// vertex's value when the item holds all its in-edges, else the page's or chunk's partial
// sum of it) to the sum of the operands of its in-edges, where that moved by more than eps
// times the sum it replaces; the vertex's value then moves by the same change (an atomic
// where other items of it may meet) and its operand by factor * scale[v] times it, and its
// source block is marked with `epoch`. The weak predictor (its packed table, as pull.cu
// reads it) skips only a vertex whose in-edges are all in one item. Counts go to counters
// (pull.cu's columns) and edges_read, and the sum of |change| over the sums written to
// `moved`, through the block's shared tallies.
template <typename Op>
__global__ void recompute_window(RECOMPUTE_WINDOW_PARAMS) {
    using V = typename Op::V;
    __shared__ unsigned long long tally[NUM_COUNTERS + 1];  // counters, then edges read
    __shared__ double written;
    if (threadIdx.x <= NUM_COUNTERS) tally[threadIdx.x] = 0;
    if (threadIdx.x == 0) written = 0;
    __syncthreads();
    for_each_item(WINDOW_ITEMS, [&](const SumItem& it, int glane, int width, unsigned mask) {
        const long long v = it.v;
        int state = 0;
        if (predictor & PRED_WEAK) {
            // Read once and broadcast, so the group's lanes never part before a shuffle.
            state = __shfl_sync(mask, glane == 0 ? (int)(states[v] & STATE_MASK) : 0, 0, width);
            if (it.whole && !table[state]) {
                if (glane == 0) {
                    states[v] = table[3 * num_states + state] | OWES;
                    atomicAdd(&tally[SKIPPED_WEAK], 1ull);
                }
                return;
            }
        }
        V total = 0;
        for (long long i = it.lo + glane; i < it.hi; i += width)
            total += Op::term(operand, indices[i + it.shift]);
        total = group_sum(total, width, mask);
        if (glane != 0) return;
        V* const held = it.whole ? &values[v] : it.chunk >= 0 ? &chunk_sums[it.chunk]
                                                              : &page_sums[it.slot];
        const V old = *held;
        const V change = total - old;
        const bool success = fabs(change) > eps * old;
        atomicAdd(&tally[ATTEMPTED], 1ull);
        atomicAdd(&tally[NUM_COUNTERS], (unsigned long long)(it.hi - it.lo));
        if (success) {
            const V moved = factor * scale[v] * change;
            *held = total;
            if (it.whole) {
                operand[v] += moved;
            } else {
                atomicAdd(&values[v], change);
                atomicAdd(&operand[v], moved);
            }
            block_epoch[v >> block_shift] = epoch;
            atomicAdd(&tally[SUCCEEDED], 1ull);
            atomicAdd(&written, (double)fabs(change));
        }
        if (predictor & PRED_WEAK) states[v] = table[(success ? 1 : 2) * num_states + state];
    });
    __syncthreads();
    if (threadIdx.x < NUM_COUNTERS && tally[threadIdx.x])
        atomicAdd(&counters[threadIdx.x], tally[threadIdx.x]);
    if (threadIdx.x == NUM_COUNTERS && tally[threadIdx.x])
        atomicAdd(edges_read, tally[threadIdx.x]);
    if (threadIdx.x == 0 && written != 0) atomicAdd(moved, written);
}

// A recomputing program's values are set (seraph/backends/base.py, split_sums_from_values):
// the piece of each vertex cut into pieces that holds its first in-edge starts with its whole
// value, the others with 0. Of a page's two partial sums only the second (its last vertex)
// can be a first piece, where that vertex's in-edges start in the page and go on past it;
// of a hub's chunks, the one starting at its row's first edge.
template <typename Op>
__global__ void split_sums_from_values(SPLIT_SUMS_FROM_VALUES_PARAMS) {
    const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long num_threads = (long long)gridDim.x * blockDim.x;
    for (long long p = thread; p < num_pages; p += num_threads) {
        const long long base = p * page_edges;
        const long long w = page_last[p];
        const bool starts_here =
            indptr[w] >= base && indptr[w + 1] > min(base + page_edges, num_edges);
        page_sums[2 * p] = 0;
        page_sums[2 * p + 1] = starts_here ? values[w] : 0;
    }
    for (long long c = thread; c < num_chunks; c += num_threads) {
        const long long v = hub_chunks[3 * c];
        chunk_sums[c] = hub_chunks[3 * c + 1] == indptr[v] ? values[v] : 0;
    }
}

// An iterating walk's step (seraph/backends/base.py, walk_step) once the sums' total gave
// `jump`: the new values, the next operand (of V, the shares' type) and the sums back at 0,
// in one pass; each block's share of the change `sum |values' - values|` goes to `partial`,
// which the host adds up in block order.
template <typename V>
__global__ void walk_step(WALK_STEP_PARAMS) {
    // Vertices a thread loads before it stores: the vectors may alias, as far as nvcc
    // knows, so it would not start a vertex's loads before the last one's stores.
    constexpr int UNROLL = 4;
    __shared__ double warp_totals[32];
    const double everywhere = vertex < 0 ? jump / (double)n : 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double change = 0;
    for (long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x; first < n;
         first += UNROLL * stride) {
        double sum[UNROLL], old[UNROLL], share[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const long long v = first + k * stride;
            if (v < n) {
                sum[k] = sums[v];
                old[k] = values[v];
                share[k] = scale[v];
            }
        }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const long long v = first + k * stride;
            if (v < n) {
                const double x = damping * sum[k] + (v == vertex ? jump : everywhere);
                change += fabs(old[k] - x);
                values[v] = x;
                operand[v] = (V)(x * share[k]);
                sums[v] = 0;
            }
        }
    }
    change = group_sum(change, 32, 0xffffffffu);
    if ((threadIdx.x & 31) == 0) warp_totals[threadIdx.x >> 5] = change;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += warp_totals[w];
        partial[blockIdx.x] = total;
    }
}

// A recomputing walk's totals (seraph/backends/base.py, walk_totals), a pair a block in
// `partial`: the values' total, and their total over the vertices whose scale is 0. The host
// adds the pairs up in block order, so that the totals do not hang on the order in which
// the blocks end.
template <typename Op>
__global__ void walk_totals(WALK_TOTALS_PARAMS) {
    using V = typename Op::V;
    __shared__ double warp_totals[2][32];
    double all = 0, dangling = 0;
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        const double x = (double)values[v];
        all += x;
        if (scale[v] == (V)0) dangling += x;
    }
    all = group_sum(all, 32, 0xffffffffu);
    dangling = group_sum(dangling, 32, 0xffffffffu);
    if ((threadIdx.x & 31) == 0) {
        warp_totals[0][threadIdx.x >> 5] = all;
        warp_totals[1][threadIdx.x >> 5] = dangling;
    }
    __syncthreads();
    if (threadIdx.x < 2) {
        double total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += warp_totals[threadIdx.x][w];
        partial[2 * blockIdx.x + threadIdx.x] = total;
    }
}
