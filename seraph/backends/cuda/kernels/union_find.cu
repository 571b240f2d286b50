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

// Afforest's sampling: each vertex linked with the first `count` neighbours of its row, in
// one pass: read in place, a row's first edges share a line of the host's memory, so one
// pass moves it over PCIe once where a pass per neighbour moved it `count` times. (Afforest
// compresses between neighbours; linking them together gives the same forest's sets.)
__global__ void link_sampled(LINK_SAMPLED_PARAMS) {
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        const long long end = min(indptr[v] + count, indptr[v + 1]);
        for (long long e = indptr[v]; e < end; ++e) link_pair(parent, (int)v, indices[e]);
    }
}

// The rest of each row, from `first` on, for the vertices outside the component of
// `skip_root` (the largest one, found from a sample): on a symmetric graph an edge between
// that component and another vertex is also in the other vertex's row.
__global__ void link_rest(LINK_REST_PARAMS) {
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        if (find_root(parent, (int)v) == skip_root) continue;
        const long long end = indptr[v + 1];
        for (long long e = indptr[v] + first; e < end; ++e) link_pair(parent, (int)v, indices[e]);
    }
}

// Every vertex pointed straight at its root (while nothing links).
__global__ void compress(COMPRESS_PARAMS) {
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        parent[v] = find_root(parent, (int)v);
    }
}
