// Push rounds for the CUDA backend's sparse phases, all of them in one cooperative launch:
// the frontier, its edge offsets and the decisions between rounds stay on the device, and
// the host waits once per sparse phase, not once per round. On a grid or a road network a
// BFS has thousands of levels, and a round trip to the host per level cost more than the
// level's work (docs/engine.md, "Sparse phases on the device").
//
// Every out-edge (u -> v) of the frontier relaxes
//
//     value[v] = min(value[v], offer(value[u], w(u, v)))
//
// (the edge operator's offer, values.cuh: the kernel's template argument Op, whose value
// type is V), and the vertices a round lowers are the next frontier. With a finite
// `delta` (SSSP) the rounds are near-far (A. Davidson, S. Baxter, M. Garland, J. Owens.
// Work-efficient parallel GPU methods for single-source shortest paths. IPDPS 2014), a
// two-bucket delta-stepping: a lowered vertex whose value is at most `split` joins the
// next round, one above it is flagged far; when no near vertex is left, split moves to the
// smallest far value plus the bucket's width and the far vertices up to it come near. Pushing only
// vertices that are (nearly) final keeps a weighted grid from re-pushing each vertex dozens
// of times, as unordered Bellman-Ford rounds do. The width starts at `delta` and follows
// the work a bucket offers (next_width). Exactness does not depend on the order: every
// lowered vertex is listed near or flagged far, and the loop ends only when neither is
// left, so every vertex pushes its final value.
//
// The out-edges are read where they are: the host's pinned CSR mapped into the device's
// address space (zero-copy), or the device's own copy of a resident symmetric graph. A
// round is edge-balanced, so a hub's million out-edges are spread over the grid: `ends`
// holds the near list's out-degree prefix sums (a grid-wide scan), and the thread taking
// round edge e finds its vertex by binary search, so consecutive threads read consecutive
// edges of a row (coalesced reads over PCIe).
//
// Each vertex has a byte in `claimed` (the backend's changed flags, all zero when a phase
// starts): a near bit while it is in the next near list (set by a word-wide atomicOr, so
// it is listed once; two bits, alternating by round: near_bit), FAR_BIT while it waits
// far. The near lists have room for `capacity`
// vertices; appends beyond it are counted, not listed. In near-far such a vertex waits far
// instead; without it (BFS, CC) the phase ends there and a dense round takes over. A
// lowered vertex also gets its block marked and its weak predictor state reset, as a
// pull's success does.
//
// The phase ends when nothing waits (converged), when a list overflows (not in near-far),
// or, after at least one round, when the near list has `edge_limit` out-edges or more.
// `result` then holds: rounds, edges relaxed, near vertices waiting, which buffer holds
// the near list, and whether it overflowed; `counters[2]` the vertices lowered and `mins`
// the smallest waiting value (the strong rule's threshold: every later update descends
// from a waiting vertex).
//
// `live` is host memory mapped into the device's. Every HOST_LOOK_ROUNDS rounds the loop
// writes the rounds so far and the near list's length there ([1], [2]), for the host to
// show while it waits, and reads [0], which the host sets when a signal stops the run
// (seraph/interrupts.py); it then ends the phase at the round's end, its lists as
// consistent as at any other end (the host does not read them).
//
// The kernels' parameters (PUSH_LOOP_PARAMS) and OWES come from the header that
// seraph/backends/cuda/kernels/interface.py writes in front of this file.

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define NEAR_BIT 1u
#define FAR_BIT 2u
#define NEAR_BIT_ODD 4u
// Rounds between looks at the host's memory: a read and two writes over PCIe by one
// thread, which the grid sync after them waits for, against rounds of a few microseconds.
#define HOST_LOOK_ROUNDS 64

// The claim bit of the near list relaxed in round r. The lists alternate between two bits,
// so a round clears its own list's bit while it claims the next list's: no vertex's two
// claims can meet, and no grid sync has to separate them.
__device__ __forceinline__ unsigned near_bit(long long round) {
    return (round & 1) ? NEAR_BIT_ODD : NEAR_BIT;
}
#define ALL_LANES 0xffffffffu

__device__ __forceinline__ int add_value(int a, int b) { return a + b; }

// Sets `bit` of v's flag byte; true when this thread set it.
__device__ __forceinline__ bool claim(unsigned int* claimed, int v, unsigned bit) {
    const unsigned int word_bit = bit << (8 * (v & 3));
    return !(atomicOr(&claimed[v >> 2], word_bit) & word_bit);
}

__device__ __forceinline__ unsigned char& flag(unsigned int* claimed, int v) {
    return reinterpret_cast<unsigned char*>(claimed)[v];
}

// Reads a word another block wrote before the last grid sync, past this SM's L1.
template <typename T>
__device__ __forceinline__ T fresh(const T* p) {
    return *(volatile const T*)p;
}

// Appends v (where `want`) to `list`, one atomic per warp; every lane of the warp calls it.
// `end` counts every append to the list in the phase, beyond `capacity` too; `start` is
// its count when the list was last emptied. Returns whether v found room.
__device__ __forceinline__ bool append(bool want, int v, unsigned long long* end,
                                       unsigned long long start, int* list,
                                       long long capacity) {
    const unsigned ballot = __ballot_sync(ALL_LANES, want);
    if (!ballot) return false;
    const int lane = threadIdx.x & 31;
    unsigned long long base = 0;
    if (lane == 0) base = atomicAdd(end, (unsigned long long)__popc(ballot));
    base = __shfl_sync(ALL_LANES, base, 0);
    const unsigned long long at = base - start + __popc(ballot & ((1u << lane) - 1));
    const bool room = want && at < (unsigned long long)capacity;
    if (room) list[at] = v;
    return room;
}

// The inclusive prefix sum of x over the block, and the block's total.
__device__ long long block_scan(long long x, long long& total) {
    __shared__ long long warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int d = 1; d < 32; d <<= 1) {
        const long long y = __shfl_up_sync(ALL_LANES, x, d);
        if (lane >= d) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        long long s = lane < warps ? warp_sums[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            const long long y = __shfl_up_sync(ALL_LANES, s, d);
            if (lane >= d) s += y;
        }
        if (lane < warps) warp_sums[lane] = s;
    }
    __syncthreads();
    if (warp > 0) x += warp_sums[warp - 1];
    total = warp_sums[warps - 1];
    __syncthreads();  // warp_sums is read before the next call writes it
    return x;
}

// The smallest x over the block, folded into *out with one atomic.
template <typename V>
__device__ void block_min_into(V x, V* out, V inf) {
    __shared__ V warp_mins[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    x = group_min(x, 32, ALL_LANES);
    if (lane == 0) warp_mins[warp] = x;
    __syncthreads();
    if (warp == 0) {
        x = group_min(lane < warps ? warp_mins[lane] : inf, 32, ALL_LANES);
        if (lane == 0 && less_value(x, inf)) atomic_min_value(out, x);
    }
    __syncthreads();
}

// ends[i + 1] = out-edges of list[0..i]; returns their total. Each block scans a contiguous
// chunk, then adds the totals of the chunks before it.
__device__ long long scan_out_degrees(cg::grid_group& grid, const int* list, long long count,
                                      const long long* out_indptr, long long* ends,
                                      long long* block_sums) {
    const long long chunk = (count + gridDim.x - 1) / gridDim.x;
    const long long lo = min(count, blockIdx.x * chunk), hi = min(count, lo + chunk);
    long long carry = 0, tile;
    for (long long base = lo; base < hi; base += blockDim.x) {
        const long long i = base + threadIdx.x;
        long long degree = 0;
        if (i < hi) degree = out_indptr[list[i] + 1] - out_indptr[list[i]];
        const long long prefix = block_scan(degree, tile);
        if (i < hi) ends[i + 1] = carry + prefix;
        carry += tile;
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = carry;
    grid.sync();
    long long mine = 0, before;
    for (int b = threadIdx.x; b < blockIdx.x; b += blockDim.x) mine += fresh(&block_sums[b]);
    block_scan(mine, before);
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) ends[i + 1] += before;
    if (grid.thread_rank() == 0) ends[0] = 0;
    grid.sync();
    return fresh(&ends[count]);
}

// The near list position owning round edge e (< total): the last i with ends[i] <= e.
// With `guess` the search starts where the average out-degree puts e and widens by
// doubling steps, at most GUESS_STEPS of them, until it brackets the answer; then it
// halves the bracket, or the rest of the list when the guess was far off (a hub's edges
// skew the average). Without it, it halves the whole list. A round whose edges each have
// a thread of their own is bound by this chain of dependent loads: on a grid or a road
// network, whose vertices have about the same degree, the guess lands a few places off,
// in the cache line it reads first, where a binary search chained a dozen loads into
// every one of thousands of rounds. A round of many edges a thread is bound by the loads'
// number instead, which a far guess only adds to, so it searches the whole list.
#define GUESS_STEPS 3
__device__ __forceinline__ long long owner(const long long* ends, long long count,
                                           long long total, long long e, bool guess) {
    long long lo = 0, hi = count - 1;
    if (guess) {
        lo = min(count - 1, (long long)((double)e / (double)total * (double)count));
        if (ends[lo] <= e) {  // at lo or after it
            long long step = 1;
            for (int k = 0;; ++k, step <<= 1) {
                const long long probe = lo + step;
                if (probe >= count || k == GUESS_STEPS) { hi = count - 1; break; }
                if (ends[probe] > e) { hi = probe - 1; break; }
                lo = probe;
            }
        } else {  // before lo; ends[0] = 0 <= e
            hi = lo - 1;
            long long step = 1;
            for (int k = 0;; ++k, step <<= 1) {
                const long long probe = hi + 1 - step;
                if (probe <= 0 || k == GUESS_STEPS) { lo = 0; break; }
                if (ends[probe] <= e) { lo = probe; break; }
                hi = probe - 1;
            }
        }
    }
    while (lo < hi) {  // ends[lo] <= e; the answer is in [lo, hi]
        const long long mid = (lo + hi + 1) >> 1;
        if (ends[mid] <= e) lo = mid; else hi = mid - 1;
    }
    return lo;
}

template <typename V>
struct Phase {
    int* near;
    int* next;
    unsigned long long* next_end;
    unsigned long long next_start;  // *next_end when the next list was emptied (append)
    unsigned long long* lowered;
    long long capacity;
    bool far_mode;  // a finite delta: near-far
    unsigned near_bit;  // the next list's claim bit (near_bit)
};

// What a round reads and writes besides its lists.
template <typename V>
struct Edges {
    const long long* out_indptr;
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    V* values;
    V inf, split;
    unsigned int* claimed;
    unsigned char* states;
    unsigned char initial_state;
    long long* block_epoch;
    int block_shift;
    long long epoch;
};

// Relaxes out-edge `edge` of u (where `active`): a lowered head joins the next near list
// (value <= split) or is flagged far; in near-far a head the list has no room for is
// flagged far too (without near-far the overflow ends the phase: BFS's strong rule needs
// every vertex of a level pushed in the level's round). Every lane of the warp calls it.
template <typename Op, typename V = typename Op::V>
__device__ __forceinline__ void relax_edge(const Phase<V>& p, const Edges<V>& g, bool active,
                                           int u, long long edge, V& lowest) {
    bool lowered = false, near = false;
    int v = 0;
    if (active) {
        v = g.indices[edge];
        const V cand = Op::offer(g.values[u], g.weights, edge, g.inf);
        if (less_value(cand, g.values[v]) &&
            less_value(cand, atomic_min_value(&g.values[v], cand))) {
            lowered = true;
            g.block_epoch[v >> g.block_shift] = g.epoch;
            if (g.states) g.states[v] = g.initial_state | (g.states[v] & OWES);
            lowest = min_value(lowest, cand);
            if (!less_value(g.split, cand)) near = claim(g.claimed, v, p.near_bit);
            else claim(g.claimed, v, FAR_BIT);
        }
    }
    const unsigned ballot = __ballot_sync(ALL_LANES, lowered);
    if ((threadIdx.x & 31) == 0 && ballot) atomicAdd(p.lowered, __popc(ballot));
    const bool listed = append(near, v, p.next_end, p.next_start, p.next, p.capacity);
    if (p.far_mode && near) {
        // Listed: pushed next round with its value then, so no longer far; no room:
        // left far (and unclaimed, or no later lowering could list it).
        const unsigned shift = 8 * (v & 3);
        if (listed) {
            atomicAnd(&g.claimed[v >> 2], ~(FAR_BIT << shift));
        } else {
            atomicAnd(&g.claimed[v >> 2], ~(p.near_bit << shift));
            atomicOr(&g.claimed[v >> 2], FAR_BIT << shift);
        }
    }
}

// One round over the `total` out-edges of near[0..count), edge-balanced over the grid by
// `ends` (scan_out_degrees). The smallest value written goes into *written.
template <typename Op, typename V = typename Op::V>
__device__ void relax(const Phase<V>& p, const Edges<V>& g, long long count, long long total,
                      const long long* ends, V* written) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    // Every lane of a warp runs the same number of iterations, so the ballots are whole.
    const long long trips = (total + stride - 1) / stride;
    V lowest = g.inf;
    for (long long r = 0; r < trips; ++r) {
        const long long e = r * stride + blockIdx.x * (long long)blockDim.x + threadIdx.x;
        int u = 0;
        long long edge = 0;
        if (e < total) {
            const long long i = owner(ends, count, total, e, trips == 1);
            u = p.near[i];
            edge = g.out_indptr[u] + (e - ends[i]);
        }
        relax_edge<Op>(p, g, e < total, u, edge, lowest);
    }
    block_min_into(lowest, written, g.inf);
}

// One round over near[0..count) where no vertex has more than LOCAL_MAX_DEGREE out-edges
// (a grid, a road network, a mesh): each block takes a contiguous chunk of the list and
// balances its edges over its own threads, tile by tile, by a scan in shared memory, so
// the round needs no grid-wide scan and its two grid syncs. Bounded degrees keep the
// chunks' work even. The edges relaxed are added to *round_edges.
#define LOCAL_MAX_DEGREE 32
#define LOCAL_TILE 256  // the push loop's block size (CudaBackend's _THREADS)
template <typename Op, typename V = typename Op::V>
__device__ void relax_local(const Phase<V>& p, const Edges<V>& g, long long count,
                            V* written, unsigned long long* round_edges) {
    __shared__ int tile_vertex[LOCAL_TILE];
    __shared__ long long tile_row[LOCAL_TILE], tile_first[LOCAL_TILE];
    const long long chunk = (count + gridDim.x - 1) / gridDim.x;
    const long long lo = min(count, blockIdx.x * chunk), hi = min(count, lo + chunk);
    V lowest = g.inf;
    long long relaxed = 0;
    for (long long base = lo; base < hi; base += blockDim.x) {
        const long long i = base + threadIdx.x;
        int u = 0;
        long long row = 0, degree = 0, tile_edges;
        if (i < hi) {
            u = p.near[i];
            row = g.out_indptr[u];
            degree = g.out_indptr[u + 1] - row;
        }
        const long long first = block_scan(degree, tile_edges) - degree;
        tile_vertex[threadIdx.x] = u;
        tile_row[threadIdx.x] = row;
        tile_first[threadIdx.x] = first;
        __syncthreads();
        const int tile_count = (int)min((long long)blockDim.x, hi - base);
        for (long long e0 = 0; e0 < tile_edges; e0 += blockDim.x) {
            const long long e = e0 + threadIdx.x;
            int at = 0;
            if (e < tile_edges) {  // the last vertex of the tile whose first edge is <= e
                int top = tile_count - 1;
                while (at < top) {
                    const int mid = (at + top + 1) >> 1;
                    if (tile_first[mid] <= e) at = mid; else top = mid - 1;
                }
            }
            relax_edge<Op>(p, g, e < tile_edges, tile_vertex[at],
                           tile_row[at] + (e - tile_first[at]), lowest);
        }
        relaxed += tile_edges;
        __syncthreads();  // the tile is read before the next one is written
    }
    if (threadIdx.x == 0 && relaxed) atomicAdd(round_edges, (unsigned long long)relaxed);
    block_min_into(lowest, written, g.inf);
}

// The next bucket's width, from the out-edges the last two buckets pushed. Every round
// costs the grid's syncs whatever its work, so a bucket of fewer edges than the grid has
// threads leaves the device mostly idle. On a weighted grid or road network a width of
// `delta` makes tens of thousands of such rounds, bucket after bucket of about the same
// size, and the next bucket is twice as wide. Where the buckets still grow fast (a
// low-diameter graph's first buckets, each several times the last) the width stays: the
// frontier is about to fill the device by itself, and a wider bucket would only hand the
// phase to the dense rounds sooner. A bucket of many times the threads re-pushes vertices
// that a narrower one would have pushed once, and the next is half as wide, never below
// `delta`. Every thread computes the same width: the edge counts come from grid-wide scans.
template <typename V>
__device__ __forceinline__ V next_width(V width, V delta, long long bucket_edges,
                                        long long last_bucket_edges, long long threads) {
    if (bucket_edges < threads && bucket_edges < 2 * last_bucket_edges)
        return add_value(width, width);
    if (bucket_edges > 16 * threads && less_value(delta, width)) {
        const V half = width / 2;  // only an order: subnormals cannot matter here
        return less_value(half, delta) ? delta : half;
    }
    return width;
}

// Near-far's step when the near list is empty: split moves to the smallest far value plus
// the bucket's `width`, and the far vertices up to it, as many as the list holds, come
// near. Returns false when no vertex is far (the phase has converged).
template <typename V>
__device__ bool advance(cg::grid_group& grid, long long n, int* near,
                        unsigned long long* near_end, unsigned long long near_start,
                        long long capacity, const V* values, V inf, V width, V* lowest,
                        unsigned int* claimed, unsigned bit, V& split) {
    V mine = inf;
    for (long long v = grid.thread_rank(); v < n; v += grid.size())
        if (flag(claimed, (int)v) & FAR_BIT) mine = min_value(mine, values[v]);
    block_min_into(mine, lowest, inf);
    grid.sync();
    const V low = fresh(lowest);
    if (!less_value(low, inf)) return false;
    split = add_value(low, width);
    const long long stride = grid.size();
    const long long trips = (n + stride - 1) / stride;
    for (long long r = 0; r < trips; ++r) {
        const long long v = r * stride + grid.thread_rank();
        const bool want = v < n && (flag(claimed, (int)v) & FAR_BIT) &&
                          !less_value(split, values[v]);
        // One thread per vertex: a plain store.
        if (append(want, (int)v, near_end, near_start, near, capacity))
            flag(claimed, (int)v) = bit;
    }
    grid.sync();
    if (grid.thread_rank() == 0) *lowest = inf;  // read by every thread before the sync
    return true;
}

// Every near vertex's claim `bit` cleared, so that a later round lowering it lists it
// again; by an atomic, as the round's claims of the other bits may meet it in the byte.
__device__ void unclaim_near(cg::grid_group& grid, const int* near, long long count,
                             unsigned int* claimed, unsigned bit) {
    for (long long i = grid.thread_rank(); i < count; i += grid.size())
        atomicAnd(&claimed[near[i] >> 2], ~(bit << (8 * (near[i] & 3))));
}

// The smallest value of the vertices waiting: listed in near[0..count), or flagged far.
template <typename V>
__device__ void waiting_minimum(cg::grid_group& grid, const int* near, long long count,
                                long long n, const unsigned int* claimed, const V* values,
                                V inf, V* out) {
    V mine = inf;
    for (long long i = grid.thread_rank(); i < count; i += grid.size())
        mine = min_value(mine, values[near[i]]);
    for (long long v = grid.thread_rank(); v < n; v += grid.size())
        if (reinterpret_cast<const unsigned char*>(claimed)[v] & FAR_BIT)
            mine = min_value(mine, values[v]);
    block_min_into(mine, out, inf);
}

// Lists near_a and near_b (each `capacity` long); the initial frontier is in
// near_a[0..count). counters: [0, 1] the appends to each near list (never reset: a block
// may append to a list before another has read its last count), [2] the vertices lowered, [3]
// the edges of local rounds (relax_local, where max_degree allows them); mins:
// [0] an advance's smallest far value, [1] the smallest waiting value, [2] the smallest
// value the phase wrote (what the host takes with [1] when the list overflowed: unlisted
// waiting vertices were written in the phase); all zero / inf at launch. block_sums: a word
// per block. result: see the top of this file.
template <typename Op>
__global__ void push_loop(PUSH_LOOP_PARAMS) {
    using V = typename Op::V;
    cg::grid_group grid = cg::this_grid();
    int* lists[2] = {near_a, near_b};
    const bool far_mode = less_value(delta, inf);
    const bool local = max_degree <= LOCAL_MAX_DEGREE;  // relax_local's rounds
    const Edges<V> g{out_indptr, indices, weights, values, inf, inf, claimed, states,
                     initial_state, block_epoch, block_shift, epoch};
    int nq = 0;  // which buffer holds the near list
    unsigned long long starts[2] = {0, 0};  // counters[k] when list k was last emptied
    long long near_count = count, rounds = 0, edges = 0;
    unsigned long long local_edges = 0;  // counters[3]'s last reading
    long long bucket_edges = 0, last_bucket_edges = 0;  // pushed in this bucket, the last
    V split = inf, width = delta;
    bool overflow = false;
    if (far_mode) {
        // The frontier starts far: the first advance takes its nearest vertices.
        for (long long i = grid.thread_rank(); i < count; i += grid.size())
            flag(claimed, near_a[i]) = FAR_BIT;
        near_count = 0;
        grid.sync();
    }
    while (true) {
        if (near_count == 0) {
            // The near list is empty: counters[nq] is starts[nq].
            if (far_mode && rounds > 0)
                width = next_width<V>(width, delta, bucket_edges, last_bucket_edges,
                                      (long long)grid.size());
            last_bucket_edges = bucket_edges;
            bucket_edges = 0;
            if (!far_mode || !advance<V>(grid, n, lists[nq], &counters[nq], starts[nq],
                                         capacity, values, inf, width, &mins[0], claimed,
                                         near_bit(rounds), split))
                break;  // converged
            const unsigned long long end = fresh(&counters[nq]);
            near_count = min((long long)(end - starts[nq]), capacity);
            starts[nq] = end;
        }
        unclaim_near(grid, lists[nq], near_count, claimed, near_bit(rounds));
        const Phase<V> p{lists[nq], lists[nq ^ 1], &counters[nq ^ 1], starts[nq ^ 1],
                         &counters[2], capacity, far_mode, near_bit(rounds + 1)};
        Edges<V> round = g;
        round.split = split;
        long long total = 0;
        if (local) {
            relax_local<Op>(p, round, near_count, &mins[2], &counters[3]);
        } else {
            total = scan_out_degrees(grid, lists[nq], near_count, out_indptr, ends, block_sums);
            if (rounds > 0 && total >= edge_limit) break;
            relax<Op>(p, round, near_count, total, ends, &mins[2]);
        }
        // Every HOST_LOOK_ROUNDS rounds thread 0 passes on the host's stop word in result[5]
        // or [6], by the parity of the look, and every thread reads it after this sync; the
        // same word is written again only two looks on, after syncs every reader has passed.
        // Other rounds read nothing more than before.
        const bool look = rounds % HOST_LOOK_ROUNDS == 0;
        const int word = 5 + (int)((rounds / HOST_LOOK_ROUNDS) & 1);
        if (look && grid.thread_rank() == 0) {
            result[word] = fresh(&live[0]);
            *(volatile long long*)&live[1] = rounds;
            *(volatile long long*)&live[2] = near_count;
        }
        grid.sync();
        const bool halted = look && fresh(&result[word]) != 0;
        if (local) {  // counters[3] sums every local round's edges, so it is never reset
            const unsigned long long so_far = fresh(&counters[3]);
            total = (long long)(so_far - local_edges);
            local_edges = so_far;
        }
        const unsigned long long end = fresh(&counters[nq ^ 1]);
        const long long next = (long long)(end - starts[nq ^ 1]);
        starts[nq ^ 1] = end;
        rounds += 1;
        edges += total;
        bucket_edges += total;
        nq ^= 1;
        near_count = far_mode ? min(next, capacity) : next;
        if (halted) break;
        if (near_count > capacity) {
            overflow = true;
            break;
        }
        // A local round learns its edges as it relaxes them: the list it pushed had
        // edge_limit of them or more, so the next goes back to the dense rounds.
        if (local && total >= edge_limit && near_count > 0) break;
    }
    waiting_minimum<V>(grid, lists[nq], min(near_count, capacity), n, claimed, values, inf,
                       &mins[1]);
    if (grid.thread_rank() == 0) {
        result[0] = rounds;
        result[1] = edges;
        result[2] = near_count;
        result[3] = nq;
        result[4] = overflow;
    }
}
