/* A model with its fields on the GPU calling strata from C: the right-hand side and the solution
 * live in device memory (cudaMalloc), strata reads and writes them there. Set up once (timed),
 * then solve several time steps, warm-started, each timed around the call and compared with the
 * solver's own time; the residual of the last solution checked with strata's operator on the
 * device. Arguments: n nz steps order (0: k fastest, 1: x fastest) solver (0 cg .. 4 bicgstab).
 *
 *   nvcc -O2 -I crates/strata-capi/include examples/c/device_timesteps.c -L target/release \
 *        -lstrata -o device_timesteps && LD_LIBRARY_PATH=target/release ./device_timesteps
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata.h>
#include <time.h>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        StrataStatus s_ = (call);                                                         \
        if (s_ != STRATA_STATUS_OK) {                                                     \
            fprintf(stderr, "%s failed (%d): %s\n", #call, (int)s_, strata_last_error()); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)
#define CUDA(call)                                                                  \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));      \
            return 1;                                                               \
        }                                                                           \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256, nz = argc > 2 ? atoi(argv[2]) : 128;
    int steps = argc > 3 ? atoi(argv[3]) : 5, order = argc > 4 ? atoi(argv[4]) : 0;
    int kind = argc > 5 ? atoi(argv[5]) : 1;
    StrataProblem problem;
    StrataOptions options;
    CHECK(strata_problem_default(&problem));
    CHECK(strata_options_default(&options));
    problem.n = n;
    problem.nz = nz;
    options.solver = kind;
    options.backend = 2; /* cuda */

    size_t size = (size_t)n * n * nz;
    double *f = malloc(size * sizeof *f), *y = malloc(size * sizeof *y);
    for (size_t c = 0; c < size; c++) f[c] = 1e-6 * sin(0.001 * (double)c);
    double *df, *du, *dy;
    CUDA(cudaMalloc((void **)&df, size * sizeof *df));
    CUDA(cudaMalloc((void **)&du, size * sizeof *du));
    CUDA(cudaMalloc((void **)&dy, size * sizeof *dy));
    CUDA(cudaMemcpy(df, f, size * sizeof *f, cudaMemcpyHostToDevice));
    CUDA(cudaMemset(du, 0, size * sizeof *du));

    StrataSolver *solver = NULL;
    double t0 = now();
    CHECK(strata_solver_create(&problem, &options, &solver));
    double create = now() - t0;
    printf("C API, device arrays (order %s), n = %d, nz = %d, solver %d: created in %.3f s\n",
           order ? "x fastest" : "k fastest", n, nz, kind, create);

    /* A host array where a device one is expected is refused with a message. */
    if (strata_solver_solve_device(solver, f, du, order, 0, NULL) != STRATA_STATUS_INVALID_ARGUMENT) {
        fprintf(stderr, "a host pointer was accepted as a device array\n");
        return 1;
    }
    printf("refused as expected: %s\n", strata_last_error());

    double worst = 0.0;
    for (int step = 0; step < steps; step++) {
        StrataInfo info;
        double t = now();
        CHECK(strata_solver_solve_device(solver, df, du, order, 0, &info));
        double wall = now() - t;
        printf("step %d: %d iterations, converged %d, call %.4f s, solver %.4f s, ratio %.4f\n",
               step, info.iterations, info.converged, wall, info.seconds, wall / info.seconds);
        if (!info.converged) return 1;
        if (step > 0 && wall / info.seconds > worst) worst = wall / info.seconds;
    }
    /* The model's state changed: a stiffer upper atmosphere, the field given on the device. */
    double *kz = malloc(size * sizeof *kz), *dkz;
    for (size_t c = 0; c < size; c++) {
        size_t k = order ? c / ((size_t)n * n) : c % nz;
        kz[c] = k >= (size_t)nz / 2 ? 100.0 : 1.0;
    }
    CUDA(cudaMalloc((void **)&dkz, size * sizeof *dkz));
    CUDA(cudaMemcpy(dkz, kz, size * sizeof *kz, cudaMemcpyHostToDevice));
    double t1 = now();
    CHECK(strata_solver_set_coefficients_device(solver, NULL, NULL, dkz, NULL, NULL, NULL, NULL, order));
    printf("coefficients from the device in %.3f s\n", now() - t1);
    StrataInfo info;
    CHECK(strata_solver_solve_device(solver, df, du, order, 1, &info));
    printf("with kz: %d iterations, converged %d\n", info.iterations, info.converged);
    if (!info.converged) return 1;
    CHECK(strata_solver_apply_device(solver, du, dy, order));
    CUDA(cudaMemcpy(y, dy, size * sizeof *y, cudaMemcpyDeviceToHost));
    double r = 0.0, s = 0.0;
    for (size_t c = 0; c < size; c++) {
        /* f was written in the k-fastest order; in the x-fastest order it is another rhs of
         * the same values, and A u = f holds in either as long as u and f share the order. */
        r += (y[c] - f[c]) * (y[c] - f[c]);
        s += f[c] * f[c];
    }
    printf("|f - A u| / |f| = %.2e; worst call / solver time after the first: %.4f\n",
           sqrt(r / s), worst);
    strata_solver_destroy(solver);
    cudaFree(df);
    cudaFree(du);
    cudaFree(dy);
    cudaFree(dkz);
    free(kz);
    free(f);
    free(y);
    if (sqrt(r / s) > 1e-4) return 1;
    printf("ok\n");
    return 0;
}
