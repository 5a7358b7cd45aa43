/* The C time loop on several ranks: MPI initialised by the program, strata given its
 * communicator (as a Fortran handle, MPI_Comm_c2f); each rank fills and solves its own block,
 * the residual summed over the ranks; from the second step on with coefficient fields, each rank
 * giving its own block of them. Arguments: the backend (0 auto: the GPU where usable, 1 cpu,
 * 2 cuda), the GPUs per node (a GPU rank uses device node-local rank modulo those), and the halo
 * path of GPU ranks (0 MPI through host memory, 1 NCCL: libstrata built with `--features nccl`,
 * 2 auto, the default: NCCL where built and found, else MPI).
 *
 *   mpicc -I crates/strata-capi/include examples/c/timesteps_mpi.c -L target/release -lstrata -lm
 *   LD_LIBRARY_PATH=target/release mpirun -n 2 ./a.out 1
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata.h>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        StrataStatus s_ = (call);                                                         \
        if (s_ != STRATA_STATUS_OK) {                                                     \
            fprintf(stderr, "%s failed (%d): %s\n", #call, (int)s_, strata_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                 \
        }                                                                                 \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, local_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    int gpus = argc > 2 ? atoi(argv[2]) : 1;

    StrataProblem problem;
    StrataOptions options;
    CHECK(strata_problem_default(&problem));
    CHECK(strata_options_default(&options));
    problem.n = 64;
    problem.nz = 32;
    options.solver = 2; /* mg-cg */
    options.levels = 4;
    options.threads = 1;
    options.backend = argc > 1 ? atoi(argv[1]) : 0;
    options.device = local_rank % (gpus > 0 ? gpus : 1);
    options.halo = argc > 3 ? atoi(argv[3]) : STRATA_HALO_AUTO;
    StrataSolver *solver = NULL;
    CHECK(strata_solver_create_mpi(&problem, &options, (int32_t)MPI_Comm_c2f(MPI_COMM_WORLD), &solver));
    int i0, j0, nx, ny, nz = problem.nz;
    CHECK(strata_solver_block(solver, &i0, &j0, &nx, &ny));
    size_t len = (size_t)nx * ny * nz;
    double *f = malloc(len * sizeof *f), *u = calloc(len, sizeof *u), *au = malloc(len * sizeof *au);
    /* Coefficient fields from step 1 on, each rank giving its own block of them only: a vertical
     * conductivity that jumps tenfold halfway up and a horizontal one that varies in x, functions
     * of the global cell, so that every decomposition solves the same problem. */
    double *kx = malloc(len * sizeof *kx), *kz = malloc(len * sizeof *kz);
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++)
            for (int k = 0; k < nz; k++) {
                size_t c = ((size_t)j * nx + i) * nz + k;
                kx[c] = 1.0 + 0.5 * sin(0.3 * (i0 + i));
                kz[c] = k < nz / 2 ? 1.0 : 10.0;
            }
    for (int step = 0; step < 3; step++) {
        if (step == 1) CHECK(strata_solver_set_coefficients(solver, kx, NULL, kz, NULL, NULL, NULL, NULL));
        /* The global field on this rank's block, k fastest. */
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++)
                for (int k = 0; k < nz; k++)
                    f[((size_t)j * nx + i) * nz + k] =
                        1e-6 * sin(0.2 * (i0 + i) + 0.1 * (j0 + j) + 0.3 * step) * cos(0.4 * k);
        StrataInfo info;
        CHECK(strata_solver_solve(solver, f, u, step > 0, &info));
        CHECK(strata_solver_apply(solver, u, au));
        double local[2] = {0.0, 0.0}, total[2];
        for (size_t c = 0; c < len; c++) {
            local[0] += (au[c] - f[c]) * (au[c] - f[c]);
            local[1] += f[c] * f[c];
        }
        MPI_Allreduce(local, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double rel = sqrt(total[0] / total[1]);
        if (rank == 0)
            printf("ranks %d (backend %d, halo %d), step %d: %d iterations, |f - A u| / |f| = %.2e\n",
                   size, options.backend, options.halo, step, info.iterations, rel);
        if (!info.converged || rel > 1e-4) {
            fprintf(stderr, "rank %d: the residual check failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    strata_solver_destroy(solver);
    free(f);
    free(u);
    free(au);
    free(kx);
    free(kz);
    if (rank == 0) printf("ok\n");
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
