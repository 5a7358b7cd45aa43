/* strata's default solver against hypre's PCG preconditioned by PFMG (hypre's structured
 * semicoarsening multigrid, the field's reference for this kind of grid) on the same operator,
 * the same right-hand side and the same stopping test, on the CPU.
 *
 *   mpirun -n P pfmg [n] [nz] [repeats]
 *
 * The operator is strata's (the paper's panel at n x n x nz, nu = 8.4), taken from strata's
 * assembled matrix (strata_solver_matrix) into a hypre struct matrix, 7-point stencil, the
 * block of rows j0 .. j1 of each of the P ranks. Rank 0 first solves with strata alone (one
 * process, P threads: the same cores), the other ranks waiting; then all P ranks solve with
 * hypre (P processes of one thread). Both start from zero and stop when the residual's 2-norm is
 * below 1e-5 of the right-hand side's (strata's rtol; hypre PCG with SetTwoNorm); both answers'
 * true residuals are checked with the assembled matrix. Times are wall clock (MPI_Wtime), the
 * best of `repeats` (default 3): set-up (strata_solver_create; hypre's grid, matrix, vectors
 * and PCG/PFMG set-up) and solve. Prints one line per solver and the ratios. */
#define _POSIX_C_SOURCE 200809L
#include <HYPRE_struct_ls.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "strata.h"

static void die(const char *what)
{
  fprintf(stderr, "pfmg: %s failed: %s\n", what, strata_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A uniform value in [-1, 1) for cell c (a splitmix64 hash: the same on every rank). */
static double uniform(uint64_t c)
{
  uint64_t z = c + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* ||f - A x|| / ||f|| over rows [r0, r1) of the CSR matrix (x indexed by global row), summed
 * over the ranks. */
static double residual(const int64_t *rp, const int64_t *col, const double *val, const double *f,
                       const double *x, size_t r0, size_t r1)
{
  double s[2] = {0.0, 0.0}, t[2];
  for (size_t r = r0; r < r1; ++r) {
    double ax = 0.0;
    for (int64_t e = rp[r]; e < rp[r + 1]; ++e) ax += val[e] * x[col[e]];
    s[0] += (f[r] - ax) * (f[r] - ax);
    s[1] += f[r] * f[r];
  }
  MPI_Allreduce(s, t, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sqrt(t[0] / t[1]);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 128, nz = argc > 2 ? atoi(argv[2]) : 128;
  const int repeats = argc > 3 ? atoi(argv[3]) : 3;
  const double rtol = 1e-5;
  /* PFMG's settings (hypre's names): relax type 2 (symmetric red-black Gauss-Seidel; 1 weighted
   * Jacobi, 3 non-symmetric red-black), RAP type 0 (Galerkin; 1 non-Galerkin), skip relax 0,
   * one pre- and post-sweep: PFMG_RELAX, PFMG_RAP, PFMG_SKIP, PFMG_SWEEPS override them. */
  const char *env;
  const int relax = (env = getenv("PFMG_RELAX")) ? atoi(env) : 2;
  const int rap = (env = getenv("PFMG_RAP")) ? atoi(env) : 0;
  const int skip = (env = getenv("PFMG_SKIP")) ? atoi(env) : 0;
  const int sweeps = (env = getenv("PFMG_SWEEPS")) ? atoi(env) : 1;
  if (n < 8 || nz < 2 || repeats < 1 || n % size != 0) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -n P pfmg [n >= 8, divisible by P] [nz >= 2] [repeats]\n");
    MPI_Finalize();
    return 2;
  }
  StrataProblem problem;
  StrataOptions options;
  if (strata_problem_default(&problem) != STRATA_STATUS_OK) die("strata_problem_default");
  if (strata_options_default(&options) != STRATA_STATUS_OK) die("strata_options_default");
  problem.n = n;
  problem.nz = nz;
  options.backend = STRATA_BACKEND_CPU;
  options.rtol = rtol;
  const size_t cells = (size_t)n * n * nz;
  double *f = malloc(cells * sizeof *f), *u = calloc(cells, sizeof *u);
  for (size_t c = 0; c < cells; ++c) f[c] = 1e-6 * uniform(c);

  /* The assembled operator (one thread: this is not timed). */
  options.threads = 1;
  StrataSolver *s;
  if (strata_solver_create(&problem, &options, &s) != STRATA_STATUS_OK) die("strata_solver_create");
  size_t rows, nnz;
  if (strata_solver_matrix(s, &rows, &nnz, NULL, NULL, NULL) != STRATA_STATUS_OK) die("strata_solver_matrix");
  int64_t *rp = malloc((rows + 1) * sizeof *rp), *col = malloc(nnz * sizeof *col);
  double *val = malloc(nnz * sizeof *val);
  if (strata_solver_matrix(s, &rows, &nnz, rp, col, val) != STRATA_STATUS_OK) die("strata_solver_matrix");
  strata_solver_destroy(s);

  /* strata: rank 0 alone, `size` threads, the default configuration (mg, red-black, mixed). */
  double strata_setup = 1e30, strata_solve = 1e30, strata_res = 0.0;
  int strata_its = 0;
  if (rank == 0) {
    options.threads = size;
    for (int r = 0; r < repeats; ++r) {
      double t0 = MPI_Wtime();
      if (strata_solver_create(&problem, &options, &s) != STRATA_STATUS_OK) die("strata_solver_create");
      double t1 = MPI_Wtime();
      StrataInfo info;
      if (strata_solver_solve(s, f, u, 0, &info) != STRATA_STATUS_OK) die("strata_solver_solve");
      double t2 = MPI_Wtime();
      strata_solver_destroy(s);
      strata_setup = fmin(strata_setup, t1 - t0);
      strata_solve = fmin(strata_solve, t2 - t1);
      strata_its = info.iterations;
    }
  }
  /* The other ranks wait without spinning (an MPI barrier polls, and would take a core from
   * strata's threads). */
  MPI_Request done;
  MPI_Ibarrier(MPI_COMM_WORLD, &done);
  for (int flag = 0; !flag;) {
    MPI_Test(&done, &flag, MPI_STATUS_IGNORE);
    if (!flag) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  MPI_Bcast(u, (int)cells, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const int rows_per = n / size, j0 = rank * rows_per, j1 = j0 + rows_per;
  /* Rows of this rank in strata's numbering: ((j * n + i) * nz + k). */
  const size_t r0 = (size_t)j0 * n * nz, r1 = (size_t)j1 * n * nz;
  strata_res = residual(rp, col, val, f, u, r0, r1);

  /* hypre: index (k, i, j) — k fastest in hypre's boxes as in strata's arrays. */
  int ilower[3] = {0, 0, j0}, iupper[3] = {nz - 1, n - 1, j1 - 1};
  int offsets[7][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  const size_t local = r1 - r0;
  double *values = malloc(local * 7 * sizeof *values), *x = malloc(cells * sizeof *x);
  double *b = malloc(local * sizeof *b), *xl = malloc(local * sizeof *xl);
  for (size_t r = r0; r < r1; ++r) {
    size_t k = r % nz, i = (r / nz) % n, j = r / ((size_t)n * nz), l = r - r0;
    double *v = values + 7 * l;
    for (int e = 0; e < 7; ++e) v[e] = 0.0;
    for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
      size_t c = (size_t)col[e], ck = c % nz, ci = (c / nz) % n, cj = c / ((size_t)n * nz);
      /* The stencil entry of `offsets`: 1, 2 the column below and above (k -+ 1), 3, 4 west and
       * east (i -+ 1), 5, 6 south and north (j -+ 1), 0 the diagonal. */
      int slot = ck + 1 == k ? 1 : ck == k + 1 ? 2 : ci + 1 == i ? 3 : ci == i + 1 ? 4 : cj + 1 == j ? 5 : cj == j + 1 ? 6 : 0;
      v[slot] += val[e];
    }
    b[l] = f[r];
  }
  double hypre_setup = 1e30, hypre_solve = 1e30;
  int hypre_its = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    HYPRE_StructGrid grid;
    HYPRE_StructGridCreate(MPI_COMM_WORLD, 3, &grid);
    HYPRE_StructGridSetExtents(grid, ilower, iupper);
    HYPRE_StructGridAssemble(grid);
    HYPRE_StructStencil stencil;
    HYPRE_StructStencilCreate(3, 7, &stencil);
    for (int e = 0; e < 7; ++e) HYPRE_StructStencilSetElement(stencil, e, offsets[e]);
    HYPRE_StructMatrix A;
    HYPRE_StructMatrixCreate(MPI_COMM_WORLD, grid, stencil, &A);
    HYPRE_StructMatrixInitialize(A);
    int entries[7] = {0, 1, 2, 3, 4, 5, 6};
    HYPRE_StructMatrixSetBoxValues(A, ilower, iupper, 7, entries, values);
    HYPRE_StructMatrixAssemble(A);
    HYPRE_StructVector vb, vx;
    HYPRE_StructVectorCreate(MPI_COMM_WORLD, grid, &vb);
    HYPRE_StructVectorCreate(MPI_COMM_WORLD, grid, &vx);
    HYPRE_StructVectorInitialize(vb);
    HYPRE_StructVectorInitialize(vx);
    HYPRE_StructVectorSetBoxValues(vb, ilower, iupper, b);
    for (size_t l = 0; l < local; ++l) xl[l] = 0.0;
    HYPRE_StructVectorSetBoxValues(vx, ilower, iupper, xl);
    HYPRE_StructVectorAssemble(vb);
    HYPRE_StructVectorAssemble(vx);
    HYPRE_StructSolver pcg, pfmg;
    HYPRE_StructPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_StructPCGSetTol(pcg, rtol);
    HYPRE_StructPCGSetTwoNorm(pcg, 1);
    HYPRE_StructPCGSetMaxIter(pcg, 500);
    HYPRE_StructPFMGCreate(MPI_COMM_WORLD, &pfmg);
    HYPRE_StructPFMGSetMaxIter(pfmg, 1);
    HYPRE_StructPFMGSetTol(pfmg, 0.0);
    HYPRE_StructPFMGSetZeroGuess(pfmg);
    HYPRE_StructPFMGSetRelaxType(pfmg, relax);
    HYPRE_StructPFMGSetRAPType(pfmg, rap);
    HYPRE_StructPFMGSetSkipRelax(pfmg, skip);
    HYPRE_StructPFMGSetNumPreRelax(pfmg, sweeps);
    HYPRE_StructPFMGSetNumPostRelax(pfmg, sweeps);
    HYPRE_StructPCGSetPrecond(pcg, HYPRE_StructPFMGSolve, HYPRE_StructPFMGSetup, pfmg);
    HYPRE_StructPCGSetup(pcg, A, vb, vx);
    double t1 = MPI_Wtime();
    HYPRE_StructPCGSolve(pcg, A, vb, vx);
    double t2 = MPI_Wtime();
    HYPRE_StructPCGGetNumIterations(pcg, &hypre_its);
    HYPRE_StructVectorGetBoxValues(vx, ilower, iupper, xl);
    HYPRE_StructPCGDestroy(pcg);
    HYPRE_StructPFMGDestroy(pfmg);
    HYPRE_StructVectorDestroy(vb);
    HYPRE_StructVectorDestroy(vx);
    HYPRE_StructMatrixDestroy(A);
    HYPRE_StructStencilDestroy(stencil);
    HYPRE_StructGridDestroy(grid);
    double st = t1 - t0, so = t2 - t1, g[2], l2[2] = {st, so};
    MPI_Allreduce(l2, g, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    hypre_setup = fmin(hypre_setup, g[0]);
    hypre_solve = fmin(hypre_solve, g[1]);
  }
  /* hypre's answer gathered by global row for the residual check. */
  int *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs);
  for (int p = 0; p < size; ++p) {
    counts[p] = (int)local;
    displs[p] = (int)(p * local);
  }
  MPI_Allgatherv(xl, (int)local, MPI_DOUBLE, x, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  double hypre_res = residual(rp, col, val, f, x, r0, r1);
  if (rank == 0) {
    printf("n %d nz %d cores %d (strata: 1 process, %d threads; hypre: %d processes)\n", n, nz, size, size, size);
    printf("strata (default: mg)    %3d its  setup %.4f s  solve %.4f s  total %.4f s  |f-Au|/|f| %.2e\n",
           strata_its, strata_setup, strata_solve, strata_setup + strata_solve, strata_res);
    printf("hypre PCG+PFMG (relax %d, RAP %d, skip %d, %d+%d sweeps)\n", relax, rap, skip, sweeps, sweeps);
    printf("hypre PCG+PFMG          %3d its  setup %.4f s  solve %.4f s  total %.4f s  |f-Au|/|f| %.2e\n",
           hypre_its, hypre_setup, hypre_solve, hypre_setup + hypre_solve, hypre_res);
    printf("hypre / strata: solve %.2fx, setup + solve %.2fx\n", hypre_solve / strata_solve,
           (hypre_setup + hypre_solve) / (strata_setup + strata_solve));
  }
  int bad = strata_res > 1.01 * rtol || hypre_res > 1.01 * rtol;
  free(f), free(u), free(rp), free(col), free(val), free(values), free(x), free(b), free(xl);
  free(counts), free(displs);
  MPI_Finalize();
  return bad;
}
