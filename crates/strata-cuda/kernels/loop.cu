// The stopping test of an iteration run on the device as a CUDA graph's WHILE node
// (src/backend/device_loop.rs): its own translation unit, compiled to PTX, which the driver
// links with the device runtime's cudaGraphSetConditional when it loads the module (a cubin
// would need that library linked at build time). One thread, after each iteration's work.
//
// log[0]: iterations run so far (set to 0 before each launch), log[1]: the bound of the
// stopping rule (rtol times the reference norm), then per iteration it = 1, 2, ...:
// log[2 it] = s[rr] (the residual's squared norm), log[2 it + 1] = s[sigma] (CG's curvature;
// 1 where there is none). The test is the host's (strata::solver::Monitor), in its order:
// a curvature that is not finite and positive, a residual that is not finite, then either
// it >= max_it (fixed iterations) or sqrt(rr) < bound or it >= max_it.

typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                     unsigned int value);

extern "C" __global__ void loop_test(cudaGraphConditionalHandle handle, const double* __restrict__ s, int rr,
                                     int sigma, double* __restrict__ log, int max_it, int fixed) {
    const int it = (int)log[0] + 1;
    const double r2 = s[rr];
    const double sg = sigma >= 0 ? s[sigma] : 1.0;
    log[0] = (double)it;
    log[2 * it] = r2;
    log[2 * it + 1] = sg;
    bool stop;
    if (!(isfinite(sg) && sg > 0.0)) {
        stop = true;
    } else if (!isfinite(r2)) {
        stop = true;
    } else if (fixed) {
        stop = it >= max_it;
    } else {
        stop = sqrt(r2) < log[1] || it >= max_it;
    }
    cudaGraphSetConditional(handle, stop ? 0u : 1u);
}
