// The summing kernel for the CUDA backend: a summing program's one pass over a window of
// pages (docs/design.md, "Summing programs"), the CPU's seraph/backends/cpu/gather.py.
//
// into[v] += sum over the window's in-edges (u -> v) of operand[u]
//
// Work items are (window page, destination vertex) pairs, flattened through
// `vertex_prefix`, as pull.cu's are. A light item (at most `heavy_edges` in-edges in the
// page) goes to a group of `light_lanes` lanes, a heavy one to a whole warp, and a hub
// (more than `hub_edges` in-edges: seraph/hubs.py) is summed by its chunks, a warp each,
// instead of its items. The lanes of a group stride over the item's in-edges and add in
// double; the group's sum is added to into[v] with one atomicAdd. The atomic is what joins
// the pieces of a vertex summed by several warps of one launch, a vertex split across two
// pages of the window or a hub's chunks; a sum, unlike pull.cu's min, must count each
// edge exactly once, and each (page, vertex) item and chunk is taken by exactly one group.
//
// The parameters (GATHER_SUM_PARAMS) come from the header that
// seraph/backends/cuda/kernels/interface.py writes in front of this file.

// The sum of x over the `width` lanes of a group, in its first lane.
__device__ __forceinline__ double group_sum(double x, int width, unsigned mask) {
    for (int off = width >> 1; off > 0; off >>= 1) x += __shfl_down_sync(mask, x, off, width);
    return x;
}

// Edges [lo, hi) of `indices` (shifted by `shift`), summed by lane `glane` of `width`.
__device__ __forceinline__ void sum_edges(long long v, long long lo, long long hi,
                                          long long shift, int glane, int width, unsigned mask,
                                          const int* __restrict__ indices,
                                          const double* __restrict__ operand, double* into) {
    double total = 0.0;
    for (long long i = lo + glane; i < hi; i += width) total += operand[indices[i + shift]];
    total = group_sum(total, width, mask);
    if (glane == 0) atomicAdd(&into[v], total);
}

__global__ void gather_sum(GATHER_SUM_PARAMS) {
    const int lane = threadIdx.x & 31;
    const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long num_threads = (long long)gridDim.x * blockDim.x;
    const long long end = vertex_prefix[num_window_pages];
    // The item's vertex and in-page edges; k (its window page) rises with the items a
    // thread takes, and each loop below starts it again.
    int k = 0;
    auto item_at = [&](long long item, long long& v, long long& lo, long long& hi,
                       long long& shift, bool& hub) {
        while (vertex_prefix[k + 1] <= item) ++k;
        const long long page = pages[k];
        const long long base = page * page_edges;
        const long long length = min(page_edges, num_edges - base);
        v = page_first[page] + (item - vertex_prefix[k]);
        const long long row_lo = indptr[v], row_hi = indptr[v + 1];
        lo = max(row_lo, base);
        hi = min(row_hi, base + length);
        shift = offsets[k] - base;
        hub = row_hi - row_lo > hub_edges;
    };

    // Light items, a group of light_lanes lanes each.
    const int glane = lane & (light_lanes - 1);
    const unsigned group_mask = light_lanes == 32 ? 0xffffffffu
        : ((1u << light_lanes) - 1) << (lane & ~(light_lanes - 1));
    for (long long item = thread / light_lanes; item < end; item += num_threads / light_lanes) {
        long long v, lo, hi, shift;
        bool hub;
        item_at(item, v, lo, hi, shift, hub);
        if (lo >= hi || hub || hi - lo > heavy_edges) continue;
        sum_edges(v, lo, hi, shift, glane, light_lanes, group_mask, indices, operand, into);
    }

    // Heavy items: each warp scans 32 items at a time and sums each heavy one it finds.
    k = 0;
    for (long long first = (thread >> 5) * 32; first < end; first += num_threads) {
        long long v = 0, lo = 0, hi = 0, shift = 0;
        bool hub = false, heavy = false;
        if (first + lane < end) {
            item_at(first + lane, v, lo, hi, shift, hub);
            heavy = !hub && hi - lo > heavy_edges;
        }
        for (unsigned found = __ballot_sync(0xffffffffu, heavy); found; found &= found - 1) {
            const int src = __ffs(found) - 1;
            sum_edges(__shfl_sync(0xffffffffu, v, src), __shfl_sync(0xffffffffu, lo, src),
                      __shfl_sync(0xffffffffu, hi, src), __shfl_sync(0xffffffffu, shift, src),
                      lane, 32, 0xffffffffu, indices, operand, into);
        }
    }

    // Hub chunks (seraph/hubs.py: rows of vertex, first edge, end edge), a warp each.
    k = 0;
    const long long chunks_end = chunk_prefix[num_window_pages];
    for (long long c = thread >> 5; c < chunks_end; c += num_threads >> 5) {
        while (chunk_prefix[k + 1] <= c) ++k;
        const long long page = pages[k];
        const long long id = page_chunks[page] + (c - chunk_prefix[k]);
        sum_edges(hub_chunks[3 * id], hub_chunks[3 * id + 1], hub_chunks[3 * id + 2],
                  offsets[k] - page * page_edges, lane, 32, 0xffffffffu, indices, operand,
                  into);
    }
}
