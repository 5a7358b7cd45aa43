// What a chain of small dependent kernels costs per kernel inside a CUDA graph, three ways:
//   plain     - ordinary launches, captured into a graph (what strata does today);
//   pdl       - Programmatic Dependent Launch (Hopper): each kernel launched with
//               cudaLaunchAttributeProgrammaticStreamSerialization, waits on its predecessor with
//               griddepcontrol.wait and lets its successor launch with griddepcontrol.launch_dependents;
//   coop      - one cooperative kernel, the same steps separated by grid-wide syncs.
// Each step: every thread reads LOADS values of the previous step's buffer (dependent chain of
// global loads, as a PCR step's), writes one value. Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o /tmp/lg docs/results/2026-11-27-launch-gaps.cu && /tmp/lg
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int LOADS = 4;

__device__ __forceinline__ void step(const float* __restrict__ in, float* __restrict__ out, int n, int tid) {
    if (tid < n) {
        float s = 0.f;
        int j = tid;
        for (int l = 0; l < LOADS; ++l) {
            s += in[j];
            j = (j * 7 + 13 + (int)(s > 1e30f)) % n;
        }
        out[tid] = s * 0.25f;
    }
}

__global__ void k_plain(const float* in, float* out, int n) {
    step(in, out, n, blockIdx.x * blockDim.x + threadIdx.x);
}

__global__ void k_pdl(const float* in, float* out, int n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
    step(in, out, n, blockIdx.x * blockDim.x + threadIdx.x);
}

__global__ void k_coop(float* a, float* b, int n, int steps) {
    cg::grid_group g = cg::this_grid();
    for (int s = 0; s < steps; ++s) {
        const float* in = (s & 1) ? b : a;
        float* out = (s & 1) ? a : b;
        for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < n; t += gridDim.x * blockDim.x) step(in, out, n, t);
        g.sync();
    }
}

int main() {
    const int steps = 30, threads = 128, reps = 200;
    float *a, *b;
    const int nmax = 1 << 22;
    CK(cudaMalloc(&a, nmax * 4));
    CK(cudaMalloc(&b, nmax * 4));
    CK(cudaMemset(a, 0, nmax * 4));
    CK(cudaMemset(b, 0, nmax * 4));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    int dev = 0, sms = 0, per_sm = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_coop, threads, 0));
    printf("# SMs %d, coop blocks per SM %d; %d dependent steps per graph, us per step (median of %d)\n", sms,
           per_sm, steps, reps);
    printf("%8s %8s %10s %10s %10s\n", "blocks", "cells", "plain", "pdl", "coop");
    for (int blocks : {1, 2, 8, 32, 128, 512, 2048}) {
        const int n = blocks * threads;
        double res[3];
        for (int mode = 0; mode < 3; ++mode) {
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            if (mode == 2) {
                int cb = std::min(blocks, sms * per_sm);
                int nn = n, ss = steps;
                void* args[] = {&a, &b, &nn, &ss};
                CK(cudaLaunchCooperativeKernel((void*)k_coop, dim3(cb), dim3(threads), args, 0, st));
            } else {
                for (int s = 0; s < steps; ++s) {
                    const float* in = (s & 1) ? b : a;
                    float* out = (s & 1) ? a : b;
                    if (mode == 0) {
                        k_plain<<<blocks, threads, 0, st>>>(in, out, n);
                    } else {
                        cudaLaunchConfig_t cfg = {};
                        cfg.gridDim = dim3(blocks);
                        cfg.blockDim = dim3(threads);
                        cfg.stream = st;
                        cudaLaunchAttribute at[1];
                        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
                        at[0].val.programmaticStreamSerializationAllowed = 1;
                        cfg.attrs = at;
                        cfg.numAttrs = 1;
                        CK(cudaLaunchKernelEx(&cfg, k_pdl, in, out, n));
                    }
                }
            }
            CK(cudaStreamEndCapture(st, &graph));
            CK(cudaGraphInstantiate(&exec, graph, 0));
            for (int w = 0; w < 10; ++w) CK(cudaGraphLaunch(exec, st));
            std::vector<float> t(reps);
            for (int r = 0; r < reps; ++r) {
                CK(cudaEventRecord(e0, st));
                CK(cudaGraphLaunch(exec, st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&t[r], e0, e1));
            }
            std::sort(t.begin(), t.end());
            res[mode] = t[reps / 2] * 1000.0 / steps;
            CK(cudaGraphExecDestroy(exec));
            CK(cudaGraphDestroy(graph));
        }
        printf("%8d %8d %10.2f %10.2f %10.2f\n", blocks, n, res[0], res[1], res[2]);
    }
    return 0;
}
