// Connected components by union-find, on the device (docs/design.md, "Union-find CC"):
// the CPU backend's seraph/backends/cpu/union_find.py, as Afforest runs it (M. Sutton,
// T. Ben-Nun, A. Barak, IPDPS 2018) with ECL-CC's lock-free hooking (J. Jaiganesh,
// M. Burtscher, HPDC 2018). `parent` is CC's values: every vertex starts as its own root.
// A root is hooked only by compare-and-swap while it is still a root, and only under a
// smaller root, so parent[v] <= v always holds and each root is its set's smallest id.
// The edges are the CSC's (a symmetric graph's), on the device when resident or read in
// place from the host's pinned, mapped pages.

// The root of v's tree. Other threads hook roots meanwhile, so the reads are volatile:
// every step goes to a smaller id, and a stale read only stops the walk early, which the
// compare-and-swap in link_pair then catches.
__device__ __forceinline__ int find_root(const int* parent, int v) {
    const volatile int* p = parent;
    int up = p[v];
    while (up != v) {
        v = up;
        up = p[v];
    }
    return v;
}

// Unites the trees of u and v: the higher root is hooked under the lower one, retried
// when another thread hooked it first.
__device__ void link_pair(int* parent, int u, int v) {
    while (true) {
        u = find_root(parent, u);
        v = find_root(parent, v);
        if (u == v) return;
        const int high = max(u, v), low = min(u, v);
        if (atomicCAS(&parent[high], high, low) == high) return;
    }
}

// The edges of a row [start, end) in the 16-byte chunk that begins at edge `chunk` (a
// multiple of 4), -1 where an edge is outside the row: one vector load when the chunk is
// whole (the CSC's first edge on a 16-byte boundary), edge by edge at the CSC's end.
__device__ __forceinline__ int4 row_chunk(const int* indices, long long m, long long chunk,
                                          long long start, long long end) {
    const bool whole = (reinterpret_cast<unsigned long long>(indices) & 15) == 0 &&
                       chunk + 4 <= m;
    int4 w = whole ? *reinterpret_cast<const int4*>(indices + chunk) : make_int4(-1, -1, -1, -1);
    int* lane = reinterpret_cast<int*>(&w);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const long long e = chunk + i;
        if (e < start || e >= end) lane[i] = -1;
        else if (!whole) lane[i] = indices[e];
    }
    return w;
}

// Afforest's sampling, with one read of host memory for most vertices: read in place, each
// load costs a PCIe request however few of its bytes are used (a 4-byte load costs what a
// whole line's does), so each vertex links the neighbours in its row's first 16-byte chunk
// and, when that holds only one, in the next chunk too. It links two of them where the row
// has two, as Afforest's two sampling passes do: linking all a chunk holds changes no
// component but costs root walks and retried swaps.
__global__ void link_sampled(LINK_SAMPLED_PARAMS) {
    const long long m = indptr[n];
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        const long long start = indptr[v], end = indptr[v + 1];
        if (start == end) continue;
        const long long chunk = start & ~3LL;
        int4 a = row_chunk(indices, m, chunk, start, end), b = make_int4(-1, -1, -1, -1);
        if (chunk + 4 - start < 2 && chunk + 4 < end) b = row_chunk(indices, m, chunk + 4, start, end);
        const int sample[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        int linked = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            if (sample[i] >= 0 && linked < 2) {
                link_pair(parent, (int)v, sample[i]);
                ++linked;
            }
        }
    }
}

// Whole rows of the vertices outside the component of `skip_root` (the largest one, found
// from the sample; relinking a sampled edge changes nothing): on a symmetric graph an edge
// between that component and another vertex is also in the other vertex's row.
__global__ void link_rest(LINK_REST_PARAMS) {
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        if (find_root(parent, (int)v) == skip_root) continue;
        const long long end = indptr[v + 1];
        for (long long e = indptr[v]; e < end; ++e) link_pair(parent, (int)v, indices[e]);
    }
}

// Each vertex united with its parent in `other`, another forest of the same vertices (a
// partitioned run's workers uniting the forests of their parts).
__global__ void link_parents(LINK_PARENTS_PARAMS) {
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        const int up = other[v];
        if (up != (int)v) link_pair(parent, (int)v, up);
    }
}

// Every vertex pointed straight at its root (while nothing links).
__global__ void compress(COMPRESS_PARAMS) {
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        parent[v] = find_root(parent, (int)v);
    }
}
