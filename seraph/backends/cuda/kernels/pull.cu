// Pull window kernel for the CUDA backend: one sweep over the pages of a window.
//
// value[v] = min(value[v], min over the page's in-edges (u -> v) of offer(value[u], w(u, v)))
//
// The offer is the edge operator's (values.cuh: Hop, Label, Distance, Width), the kernels'
// template argument Op; V, the value type, is the operator's.
//
// Work items are (window page, destination vertex) pairs, flattened through
// `vertex_prefix`. A group of lanes takes one item: its lanes stride over the vertex's
// in-edges within the page and reduce with shuffles. Power-law load balance: light
// vertices (nearly all) get small groups, so a warp works on several at once, heavy ones
// a whole warp each, and hubs (more than `hub_edges` in-edges) are cut into chunks
// (seraph/hubs.py, flattened through `chunk_prefix`), a warp each, so that a million
// in-edges are not serialised on one warp (see sweep_items).
//
// All pages of the window are swept in one launch, so a vertex whose in-edges span two
// adjacent pages can be updated by two warps at once: updates are atomicMin (values.cuh), and
// min is idempotent.
//
// Three entry points share the sweep: `pull_unsettled_*` is a bottom-up round (every
// vertex the strong rule leaves open pulls its in-edges from the whole CSC, see
// VertexItems, by warp tiles: pull_tiles), `pull_window_*` sweeps the window once, and
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
//
// The kernels' parameters (PULL_WINDOW_PARAMS, ...) and the constants (PRED_*, MAX_STATES,
// the counters' columns ATTEMPTED, ...) come from the header that
// seraph/backends/cuda/kernels/interface.py writes in front of this file.

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <typename V>
struct SweepShared {
    unsigned char table[4 * MAX_STATES];
    unsigned long long count[NUM_COUNTERS];
    V min;
};

template <typename V>
__device__ void init_shared(SweepShared<V>& sh, const unsigned char* table, int num_states,
                            int predictor, V inf) {
    if (threadIdx.x < NUM_COUNTERS) sh.count[threadIdx.x] = 0;
    if (threadIdx.x == 0) sh.min = inf;
    if (predictor & PRED_WEAK)
        for (int i = threadIdx.x; i < 4 * num_states; i += blockDim.x) sh.table[i] = table[i];
    __syncthreads();
}

// Adds the block's counts and minimum to the global ones and zeroes them for the next sweep.
template <typename V>
__device__ void flush_shared(SweepShared<V>& sh, unsigned long long* counters, V* min_written,
                             V inf) {
    __syncthreads();
    if (threadIdx.x < NUM_COUNTERS && sh.count[threadIdx.x]) {
        atomicAdd(&counters[threadIdx.x], sh.count[threadIdx.x]);
        sh.count[threadIdx.x] = 0;
    }
    if (threadIdx.x == 0) {
        // Read through volatile, so that it stays in thread 0: nvcc hoists a plain read
        // above the branch into every thread, where compute-sanitizer's racecheck sees it
        // race with the write below (harmless, as the others drop it, but it hides real
        // races in racecheck's report).
        const V block_min = *(volatile V*)&sh.min;
        if (less_value(block_min, inf)) {
            atomic_min_value(min_written, block_min);
            sh.min = inf;
        }
    }
    __syncthreads();
}

// Where a work item's in-edges lie: its vertex, the slice [lo, hi) of them that the item
// covers (edge ids) and `shift`, which maps an edge id to its position in `indices`.
struct Item {
    long long v, lo, hi, shift;
    bool whole;  // every in-edge of v is in this item
    bool hub;    // v has more than hub_edges in-edges: its chunks cover them, not this item
};

// A hub chunk's item (seraph/hubs.py: `hub_chunks` rows are vertex, first edge, end edge).
__device__ __forceinline__ Item chunk_item(const long long* hub_chunks, long long id,
                                           long long shift) {
    Item it;
    it.v = hub_chunks[3 * id];
    it.lo = hub_chunks[3 * id + 1];
    it.hi = hub_chunks[3 * id + 2];
    it.shift = shift;
    it.whole = false;  // a hub is always attempted, like a vertex split across pages
    it.hub = false;
    return it;
}

// The items of a window: (window page, destination vertex) pairs, then the hub chunks of
// the window's pages. `k` is the page index, advanced as the items a thread takes rise;
// each of sweep_items' loops restarts it.
struct WindowItems {
    static constexpr bool tiled = false;
    const long long *pages, *offsets, *vertex_prefix, *chunk_prefix, *page_first, *indptr,
        *page_chunks, *hub_chunks;
    long long page_edges, num_edges, hub_edges;
    int first_page, end_page, k;

    __device__ long long begin() const { return vertex_prefix[first_page]; }
    __device__ long long end() const { return vertex_prefix[end_page]; }
    __device__ long long chunks_begin() const { return chunk_prefix[first_page]; }
    __device__ long long chunks_end() const { return chunk_prefix[end_page]; }
    __device__ void restart() { k = first_page; }
    __device__ __forceinline__ Item operator()(long long item) {
        while (vertex_prefix[k + 1] <= item) ++k;
        const long long page = pages[k];
        const long long base = page * page_edges;
        const long long length = min(page_edges, num_edges - base);
        Item it;
        it.v = page_first[page] + (item - vertex_prefix[k]);
        const long long row_lo = indptr[it.v], row_hi = indptr[it.v + 1];
        it.lo = max(row_lo, base);
        it.hi = min(row_hi, base + length);
        it.shift = offsets[k] - base;
        it.whole = row_lo >= base && row_hi <= base + length;
        it.hub = row_hi - row_lo > hub_edges;
        return it;
    }
    __device__ __forceinline__ Item chunk(long long c) {
        while (chunk_prefix[k + 1] <= c) ++k;
        const long long page = pages[k];
        return chunk_item(hub_chunks, page_chunks[page] + (c - chunk_prefix[k]),
                          offsets[k] - page * page_edges);
    }
};

// The items of a bottom-up round: every vertex with all of its in-edges, then every hub
// chunk, read in place from an `indices` array that holds the whole CSC (the host's,
// mapped into the device's address space, or the resident pages).
struct VertexItems {
    static constexpr bool tiled = true;  // sweep_items pulls its vertices by pull_tiles
    const long long *indptr, *hub_chunks;
    long long num_vertices, num_chunks, hub_edges;

    __device__ long long begin() const { return 0; }
    __device__ long long end() const { return num_vertices; }
    __device__ long long chunks_begin() const { return 0; }
    __device__ long long chunks_end() const { return num_chunks; }
    __device__ void restart() {}
    __device__ __forceinline__ Item operator()(long long v) const {
        Item it;
        it.v = v;
        it.lo = indptr[v];
        it.hi = indptr[v + 1];
        it.shift = 0;
        it.whole = true;
        it.hub = it.hi - it.lo > hub_edges;
        return it;
    }
    __device__ __forceinline__ Item chunk(long long c) const {
        return chunk_item(hub_chunks, c, 0);
    }
};

// The end of an attempt on v: `best` (its pull's minimum) is written if it beats the
// value, and a success is marked for the scheduler (changed flag, block epoch, counts).
template <typename V>
__device__ __forceinline__ bool commit_pull(SweepShared<V>& sh, long long v, V old, V best,
                                            V* values, unsigned char* changed,
                                            long long* block_epoch, int block_shift,
                                            long long epoch) {
    const bool success =
        less_value(best, old) && less_value(best, atomic_min_value(&values[v], best));
    if (success) {
        changed[v] = 1;
        block_epoch[v >> block_shift] = epoch;
        atomicAdd(&sh.count[SUCCEEDED], 1ull);
        atomic_min_value(&sh.min, best);
    }
    return success;
}

// One vertex's pull by a group of `width` lanes (lane `glane` of it). Everything a branch
// depends on is read once and broadcast, so the group's lanes never part before a shuffle.
template <typename Op, typename V = typename Op::V>
__device__ void pull_vertex(SweepShared<V>& sh, const Item& it, int glane, int width,
                            unsigned mask, const int* __restrict__ indices,
                            const float* __restrict__ weights, V* values, V inf,
                            bool by_weight, int predictor, StrongRule<V> strong, int num_states,
                            unsigned char* states, unsigned char* changed,
                            long long* block_epoch, int block_shift, long long epoch) {
    const long long v = it.v;
    const V old = __shfl_sync(mask, values[v], 0, width);
    if ((predictor & PRED_STRONG) && strong.proven(old, v)) {
        if (glane == 0) atomicAdd(&sh.count[SKIPPED_STRONG], 1ull);
        return;
    }
    unsigned char state = 0;
    if (predictor & PRED_WEAK) {
        state = (unsigned char)__shfl_sync(mask, (int)(states[v] & STATE_MASK), 0, width);
        // A vertex split across pages always attempts (see the CPU kernel).
        if (it.whole && !sh.table[state]) {
            if (glane == 0) {
                states[v] = sh.table[3 * num_states + state] | OWES;
                atomicAdd(&sh.count[SKIPPED_WEAK], 1ull);
            }
            return;
        }
    }
    V best = old;
    // A lane's own minimum bounds the group's from above, so its stop is safe too.
    for (long long i = it.lo + glane; i < it.hi; i += width) {
        if (by_weight && weight_reaches(weights[i + it.shift], best)) break;
        best = min_value(best, Op::offer(values[indices[i + it.shift]], weights,
                                         i + it.shift, inf));
    }
    best = group_min(best, width, mask);
    if (glane != 0) return;
    atomicAdd(&sh.count[ATTEMPTED], 1ull);
    const bool success = commit_pull(sh, v, old, best, values, changed, block_epoch,
                                     block_shift, epoch);
    if (predictor & PRED_WEAK) states[v] = sh.table[(success ? 1 : 2) * num_states + state];
}

// A warp's minimum of x over its 32 lanes, in every lane.
__device__ __forceinline__ long long warp_min(long long x) {
    for (int off = 16; off > 0; off >>= 1) x = min(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

// A bottom-up round's pulls of every vertex that is not a hub (hubs: their chunks, in
// sweep_items), by tiles of 32 consecutive vertices, one a warp. In a bottom-up round the
// CSC is read in place over PCIe (the host's, mapped), where the number of read requests
// counts, not their bytes (docs/engine.md, "Tiles"): lane groups of 2 to 16 lanes
// striding over single rows all read at one rate, below these tiles'. A warp's fully
// coalesced, 128-byte-aligned read of 32 edges is one request. Consecutive vertices' rows are adjacent in the CSC, so the
// warp reads the aligned 32-edge chunks that cover its open vertices' rows, skipping
// chunks that hold none; each lane finds whose row its edge is in, and a segmented
// minimum over the lanes gives each row's best candidate of the chunk. A BFS row stops
// at the first chunk that offers the strong threshold, the lowest level an open vertex can
// get, as GAP's bottom-up step stops at its first parent (the CPU's pull_floor): its later
// chunks are not read. With rows lightest first (`by_weight`, SSSP) an edge whose weight
// reaches its row's best is not relaxed, and the row stops after the chunk whose last edge
// of it does: the heavier rest cannot help.
template <typename Op, typename V = typename Op::V>
__device__ void pull_tiles(SweepShared<V>& sh, const VertexItems& items,
                           const int* __restrict__ indices, const float* __restrict__ weights,
                           V* values, V inf, bool by_weight, bool levels,
                           StrongRule<V> strong,
                           unsigned char* changed, long long* block_epoch, int block_shift,
                           long long epoch) {
    constexpr unsigned ALL = 0xffffffffu;
    constexpr long long NO_CHUNK = 0x7fffffffffffffffll;
    // Per warp: each row's best of the current chunk, written by its last lane there.
    __shared__ V chunk_best[1024];
    V* const row_best = chunk_best + (threadIdx.x & ~31);
    // Per warp, with by_weight: the weight of each row's last edge in the current chunk.
    __shared__ float chunk_last_weight[1024];
    float* const row_last_weight = chunk_last_weight + (threadIdx.x & ~31);
    const int lane = threadIdx.x & 31;
    const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const long long num_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    // Chunks are aligned in memory, not in edge ids: `indices` may start anywhere.
    const long long skew = (long long)(((unsigned long long)indices >> 2) & 31);
    // The rounds count levels and the threshold is plain (no lightest-in-edge codes): BFS.
    const bool stops_at_threshold = levels && !less_value(0.0f, strong.unit);
    for (long long v0 = warp * 32; v0 < items.num_vertices; v0 += num_warps * 32) {
        const long long v = v0 + lane;
        // A lane past the last vertex holds an empty row beyond every edge.
        long long lo = NO_CHUNK, hi = NO_CHUNK;
        V old = inf;
        bool open = false;
        if (v < items.num_vertices) {
            lo = items.indptr[v];
            hi = items.indptr[v + 1];
            if (hi > lo && hi - lo <= items.hub_edges) {
                old = values[v];
                open = !strong.proven(old, v);
            }
        }
        const unsigned open_rows = __ballot_sync(ALL, open);
        const unsigned skipped = __ballot_sync(ALL, hi > lo && hi - lo <= items.hub_edges) &
                                 ~open_rows;
        if (lane == 0 && skipped)
            atomicAdd(&sh.count[SKIPPED_STRONG], (unsigned long long)__popc(skipped));
        if (!open_rows) continue;
        V best = old;
        bool pulling = open;  // open, and not yet offered the floor
        unsigned pulling_rows = open_rows;
        long long chunk = warp_min(open ? (lo + skew) >> 5 : NO_CHUNK);
        while (chunk != NO_CHUNK) {
            const long long e = (chunk << 5) + lane - skew;
            // The row holding edge e: the last lane whose row starts at or before it.
            int row = 0;
            for (int step = 16; step > 0; step >>= 1) {
                const long long start = __shfl_sync(ALL, lo, row + step);
                if (start <= e) row += step;
            }
            // Every lane shuffles (no short circuit may skip one).
            const long long row_lo = __shfl_sync(ALL, lo, row);
            const long long row_hi = __shfl_sync(ALL, hi, row);
            const V best_of_row = __shfl_sync(ALL, best, row);
            const bool mine = (pulling_rows >> row & 1) && row_lo <= e && e < row_hi;
            // Read once: in a bottom-up round the weights are the host's, over PCIe.
            const float w = by_weight && mine ? weights[e] : -1.0f;
            const bool helps = mine && !(by_weight && weight_reaches(w, best_of_row));
            V cand = helps ? Op::offer(values[indices[e]], weights, e, inf) : inf;
            // Segmented minimum: a row's edges are consecutive lanes of the chunk.
            const int key = mine ? row : 32 + lane;
            for (int d = 1; d < 32; d <<= 1) {
                const V other = __shfl_up_sync(ALL, cand, d);
                const int other_key = __shfl_up_sync(ALL, key, d);
                if (lane >= d && other_key == key) cand = min_value(cand, other);
            }
            const int next_key = __shfl_down_sync(ALL, key, 1);
            row_best[lane] = inf;
            if (by_weight) row_last_weight[lane] = -1.0f;  // no edge of the row in the chunk
            __syncwarp();
            if (mine && (lane == 31 || next_key != key)) {
                row_best[row] = cand;
                if (by_weight) row_last_weight[row] = w;
            }
            __syncwarp();
            best = min_value(best, row_best[lane]);
            if (by_weight && weight_reaches(row_last_weight[lane], best)) pulling = false;
            __syncwarp();
            if (stops_at_threshold && !less_value(strong.threshold, best)) pulling = false;
            pulling_rows = __ballot_sync(ALL, pulling);
            // The next chunk holding an edge of a row still pulling.
            const long long last = pulling ? (hi - 1 + skew) >> 5 : -1;
            chunk = warp_min(last > chunk ? max(chunk + 1, (lo + skew) >> 5) : NO_CHUNK);
        }
        if (lane == 0) atomicAdd(&sh.count[ATTEMPTED], (unsigned long long)__popc(open_rows));
        if (open) commit_pull(sh, v, old, best, values, changed, block_epoch, block_shift, epoch);
    }
}

// One sweep over `items` (a window's pages, or every vertex), in three parts for
// power-law in-degrees. Light items (at most `heavy_edges` in-edges: nearly all of them)
// go to groups of `light_lanes` lanes, so a warp pulls several small vertices at once
// instead of idling most lanes on one. Then every warp scans 32 items at a time and pulls
// each heavy one it finds with all 32 lanes, so its in-edges are not serialised on a few
// lanes. Last, each warp pulls hub chunks, so a hub's in-edges are spread over many warps.
// A bottom-up round's items (VertexItems, read over PCIe) go by pull_tiles instead of the
// first two parts.
template <typename Op, typename Items, typename V = typename Op::V>
__device__ void sweep_items(
    SweepShared<V>& sh, Items items, const int* __restrict__ indices,
    const float* __restrict__ weights, V* values, V inf, bool by_weight,
    bool levels, int predictor, StrongRule<V> strong, int num_states, unsigned char* states,
    unsigned char* changed, long long* block_epoch, int block_shift, long long epoch,
    int light_lanes, long long heavy_edges) {
    const int lane = threadIdx.x & 31;
    const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long num_threads = (long long)gridDim.x * blockDim.x;
    const long long begin = items.begin(), end = items.end();
#define PULL(IT, GLANE, WIDTH, MASK)                                                         \
    pull_vertex<Op>(sh, IT, GLANE, WIDTH, MASK, indices, weights, values, inf, by_weight,    \
                    predictor, strong, num_states, states, changed, block_epoch,             \
                    block_shift, epoch)

    if constexpr (Items::tiled) {
        pull_tiles<Op>(sh, items, indices, weights, values, inf, by_weight, levels, strong,
                       changed, block_epoch, block_shift, epoch);
    } else {
        const int glane = lane & (light_lanes - 1);
        const unsigned group_mask = light_lanes == 32 ? 0xffffffffu
            : ((1u << light_lanes) - 1) << (lane & ~(light_lanes - 1));
        items.restart();
        for (long long item = begin + thread / light_lanes; item < end;
             item += num_threads / light_lanes) {
            const Item it = items(item);
            if (it.lo >= it.hi || it.hub || it.hi - it.lo > heavy_edges) continue;
            PULL(it, glane, light_lanes, group_mask);
        }

        items.restart();
        for (long long first = begin + (thread >> 5) * 32; first < end; first += num_threads) {
            Item mine;
            bool heavy = false;
            if (first + lane < end) {
                mine = items(first + lane);
                heavy = !mine.hub && mine.hi - mine.lo > heavy_edges;
            }
            for (unsigned found = __ballot_sync(0xffffffffu, heavy); found;
                 found &= found - 1) {
                const int src = __ffs(found) - 1;
                Item it;
                it.v = __shfl_sync(0xffffffffu, mine.v, src);
                it.lo = __shfl_sync(0xffffffffu, mine.lo, src);
                it.hi = __shfl_sync(0xffffffffu, mine.hi, src);
                it.shift = __shfl_sync(0xffffffffu, mine.shift, src);
                it.whole = __shfl_sync(0xffffffffu, (int)mine.whole, src);
                PULL(it, lane, 32, 0xffffffffu);
            }
        }
    }

    items.restart();
    for (long long c = items.chunks_begin() + (thread >> 5); c < items.chunks_end();
         c += num_threads >> 5) {
        PULL(items.chunk(c), lane, 32, 0xffffffffu);
    }
#undef PULL
}

// One sweep of the window's pages [first, end) with pull_window's parameters, marking the
// blocks it changes with `sweep_epoch`.
template <typename Op, typename V = typename Op::V>
__device__ __forceinline__ void sweep_pages(SweepShared<V>& sh, int first, int end,
                                            long long sweep_epoch, PULL_WINDOW_PARAMS) {
    const WindowItems items{pages, offsets, vertex_prefix, chunk_prefix, page_first, indptr,
                            page_chunks, hub_chunks, page_edges, num_edges, hub_edges,
                            first, end, first};
    sweep_items<Op>(sh, items, indices, weights, values, inf, by_weight, levels, predictor,
                    StrongRule<V>{threshold, light_codes, light_unit}, num_states, states,
                    changed, block_epoch, block_shift, sweep_epoch, light_lanes, heavy_edges);
}

template <typename Op>
__global__ void pull_window(PULL_WINDOW_PARAMS) {
    using V = typename Op::V;
    __shared__ SweepShared<V> sh;
    init_shared(sh, table, num_states, predictor, inf);
    sweep_pages<Op>(sh, 0, num_window_pages, epoch, PULL_WINDOW_ARGS);
    flush_shared(sh, counters, min_written, inf);
}

// control: [0] passes begun, [1] pages swept in the last of them, [2] stop. Pass s marks
// the blocks it changes with epoch + s, so the scheduler can tell which changes a page has
// already pulled. It also stops after the page in which the host set live[0] (a signal
// stopped the run: seraph/interrupts.py); what it leaves is not read.
template <typename Op>
__global__ void pull_persistent(PULL_PERSISTENT_PARAMS) {
    using V = typename Op::V;
    __shared__ SweepShared<V> sh;
    __shared__ int stop;
    cg::grid_group grid = cg::this_grid();
    init_shared(sh, table, num_states, predictor, inf);
    unsigned long long pass_start = 0;  // successes before this pass (block 0 thread 0)
    for (long long unit = 0;; ++unit) {
        const int pass = (int)(unit / num_window_pages);
        const int page = (int)(unit % num_window_pages);
        sweep_pages<Op>(sh, page, page + 1, epoch + pass, PULL_WINDOW_ARGS);
        flush_shared(sh, counters, min_written, inf);
        grid.sync();  // every block's updates and counts of this page are visible
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            const bool pass_end = page + 1 == num_window_pages;
            const unsigned long long succeeded = counters[SUCCEEDED];
            const bool landed = incoming_slot >= 0 && unit + 1 >= mandatory &&
                *((volatile const long long*)&landed_seq[incoming_slot]) >= expected_seq;
            control[0] = pass + 1;
            control[1] = page + 1;
            const bool halted = *((volatile const long long*)&live[0]) != 0;
            control[2] = landed || halted || (pass_end && (succeeded == pass_start ||
                                                           pass + 1 == max_sweeps));
            if (pass_end) pass_start = succeeded;
        }
        grid.sync();  // every block reads the same decision
        if (threadIdx.x == 0) stop = *((volatile int*)&control[2]);
        __syncthreads();
        if (stop) break;
    }
}

// A bottom-up round (seraph/bottom_up.py): every vertex the strong rule leaves open pulls
// all of its in-edges, straight from `indices` (see VertexItems), so the round reads the
// edges of the few vertices it attempts and no page moves.
template <typename Op>
__global__ void pull_unsettled(PULL_UNSETTLED_PARAMS) {
    using V = typename Op::V;
    __shared__ SweepShared<V> sh;
    init_shared(sh, nullptr, 0, PRED_STRONG, inf);
    const VertexItems items{indptr, hub_chunks, num_vertices, num_chunks, hub_edges};
    // Lane groups and the heavy part are the window's (pull_tiles takes their place).
    sweep_items<Op>(sh, items, indices, weights, values, inf, by_weight, levels, PRED_STRONG,
                    StrongRule<V>{threshold, light_codes, light_unit}, 0, nullptr, changed,
                    block_epoch, block_shift, epoch, 32, 0);
    flush_shared(sh, counters, min_written, inf);
}
