// After a reach from a hub (seraph.algorithms.REACH, the first phase of paged connected
// components), the device's cpu_kernels.label_from_reach: every reached vertex takes
// `*smallest`, the smallest reached id and so its component's label, and every other
// vertex its own id. The unreached vertices with out-edges, whose labels must still
// spread, get their `spreads` flag set (the backend's changed flags, all zero before), for
// select.cu to count and list. Done where the values are, it spares their trip over PCIe
// and back (2 x 268 MB at 2**26 vertices).

extern "C" __global__ void label_from_reach(int* value, int inf, const long long* smallest,
                                            const long long* out_indptr, long long n,
                                            unsigned char* spreads) {
    const int label = (int)*smallest;
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < n;
         v += (long long)gridDim.x * blockDim.x) {
        if (value[v] == inf) {
            value[v] = (int)v;
            if (out_indptr[v + 1] > out_indptr[v]) spreads[v] = 1;
        } else {
            value[v] = label;
        }
    }
}
