// bench_gpu.py's zero-copy read: the device reads pinned host memory in place, as the
// bottom-up rounds read the host's CSC (seraph/backends/cuda/kernels/pull.cu, pull_tiles): each warp
// loads 32 consecutive ints, 128 aligned bytes, per step. The words are summed into one
// value so that the loads are not optimised away.
extern "C" __global__ void read_mapped(const int* __restrict__ src, long long count,
                                       unsigned long long* sink) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    unsigned long long sum = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += stride)
        sum += (unsigned int)src[i];
    atomicAdd(sink, sum);
}
