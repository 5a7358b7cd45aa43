/* The whole sphere on several ranks from C: six panels of n x n columns split over the ranks
 * (whole panels up to six ranks, blocks of every panel beyond), each rank filling its own tiles
 * (strata_solver_tiles) from a field given on the sphere, solving, and checking the residual
 * summed over the ranks. Prints the iterations on rank 0: the same on any number of ranks.
 * Argument: the backend (0 auto, 1 cpu, 2 cuda).
 *
 *   mpicc -I crates/strata-capi/include examples/c/sphere_mpi.c -L target/release -lstrata -lm
 *   LD_LIBRARY_PATH=target/release mpirun -n 3 ./a.out 1
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

/* The gnomonic point (x, y) of panel p on the unit sphere (docs/MODEL.md section 16 frames). */
static void point(int p, double x, double y, double q[3]) {
    static const double frames[6][3][3] = {
        {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}},  {{0, 1, 0}, {-1, 0, 0}, {0, 0, 1}},
        {{-1, 0, 0}, {0, -1, 0}, {0, 0, 1}}, {{0, -1, 0}, {1, 0, 0}, {0, 0, 1}},
        {{0, 0, 1}, {0, 1, 0}, {-1, 0, 0}}, {{0, 0, -1}, {0, 1, 0}, {1, 0, 0}},
    };
    double r = 0;
    for (int d = 0; d < 3; d++) {
        q[d] = frames[p][0][d] + x * frames[p][1][d] + y * frames[p][2][d];
        r += q[d] * q[d];
    }
    for (int d = 0; d < 3; d++) q[d] /= sqrt(r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    StrataProblem problem;
    StrataOptions options;
    CHECK(strata_problem_default(&problem));
    CHECK(strata_options_default(&options));
    problem.geometry = 2; /* the sphere */
    /* 48 = 4 x 12: with 3 levels every panel splits into 2 x 2 (7 to 24 ranks) or 3 x 3 blocks
     * (25 to 54 ranks); 3 x 3 blocks have corners inside a panel where the nine-point operator's
     * diagonal couplings do not vanish. */
    problem.n = 48;
    problem.nz = 16;
    options.solver = 2; /* mg-cg */
    options.levels = 3;
    options.rtol = 1e-9;
    options.threads = 1;
    options.backend = argc > 1 ? atoi(argv[1]) : 0;
    StrataSolver *solver = NULL;
    CHECK(strata_solver_create_mpi(&problem, &options, (int32_t)MPI_Comm_c2f(MPI_COMM_WORLD), &solver));
    int count = 0;
    CHECK(strata_solver_tiles(solver, NULL, 0, &count));
    StrataTile *tiles = malloc((size_t)count * sizeof *tiles);
    CHECK(strata_solver_tiles(solver, tiles, count, &count));
    size_t len;
    CHECK(strata_solver_size(solver, &len));
    int n = problem.n, nz = problem.nz;
    double *f = malloc(len * sizeof *f), *u = calloc(len, sizeof *u), *au = malloc(len * sizeof *au);
    /* A smooth field of the position on the sphere, tile after tile, k fastest. */
    size_t at = 0;
    for (int t = 0; t < count; t++) {
        for (int j = tiles[t].j0; j < tiles[t].j0 + tiles[t].ny; j++)
            for (int i = tiles[t].i0; i < tiles[t].i0 + tiles[t].nx; i++) {
                double q[3];
                point(tiles[t].panel, -1 + (i + 0.5) * 2.0 / n, -1 + (j + 0.5) * 2.0 / n, q);
                for (int k = 0; k < nz; k++) f[at++] = 1e-6 * (q[0] * q[1] + q[2]) * cos(0.3 * k);
            }
    }
    StrataInfo info;
    CHECK(strata_solver_solve(solver, f, u, 0, &info));
    CHECK(strata_solver_apply(solver, u, au));
    double local[2] = {0, 0}, global[2];
    for (size_t m = 0; m < len; m++) {
        local[0] += (au[m] - f[m]) * (au[m] - f[m]);
        local[1] += f[m] * f[m];
    }
    MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double rel = sqrt(global[0] / global[1]);
    if (rank == 0) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        printf("sphere 6x%dx%dx%d on %d ranks (%d tiles on rank 0): %d iterations, |f - Au|/|f| = %.2e\n",
               n, n, nz, size, count, info.iterations, rel);
    }
    if (!info.converged || rel > 2e-9) {
        fprintf(stderr, "rank %d: not solved (converged %d, residual %.2e)\n", rank, info.converged, rel);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    strata_solver_destroy(solver);
    free(tiles);
    free(f);
    free(u);
    free(au);
    MPI_Finalize();
    return 0;
}
