/* strata's preconditioner inside a PETSc KSP, on the matrix of strata's operator assembled as a
 * PETSc AIJ matrix (strata_solver_matrix), on one process or on MPI ranks.
 *
 *   ksp -n 64 -nz 32 -ksp_type cg -pc_type strata          strata's V-cycle in PETSc's CG
 *   ksp -n 64 -nz 32 -ksp_type fgmres -pc_type strata
 *   ksp -n 64 -nz 32 -ksp_type cg -pc_type gamg            PETSc's own, for comparison
 *   mpirun -n 4 ksp -n 64 -nz 32                            on ranks (libstrata with `mpi`)
 *   ksp ... -check                                          exit 1 unless PETSc's iterations are
 *                                                           strata's own mg-cg count ± 1
 *   ksp ... -contrast 10                                    the operator with a coefficient field
 *                                                           kz varying tenfold across the domain;
 *   ksp ... -contrast 10 -nearby                            the preconditioner of the model
 *                                                           problem on it (a nearby operator)
 *   ksp ... -geometry box -boundary_x periodic -boundary_y neumann
 *                                                           a channel (strata's names)
 *
 * On ranks the rows are numbered as strata splits the grid: rank by rank, each rank's block
 * (strata_solver_block) in strata's order, z fastest. The right-hand side is random (uniform in
 * [0, 1)); the stopping test is strata's: the unpreconditioned residual's 2-norm below rtol
 * times the right-hand side's (-ksp_rtol, 1e-5 by default), from a zero initial guess. Prints
 * one line: the KSP, the PC, iterations, seconds (set-up and solve), the difference from strata's
 * own mg-cg solution, and its iterations. */
static const char help[] = "A PETSc KSP on strata's operator, with -pc_type strata.\n";

#include <petscksp.h>
#include <stdlib.h>
#include "strata_petsc.h"

#define StrataCheck(call)                                                                      \
  do {                                                                                         \
    if ((call) != STRATA_STATUS_OK)                                                            \
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "strata: %s", strata_last_error());              \
  } while (0)

/* kz = contrast^(x / n) of column i: smooth, varying by the factor `contrast` along x. */
static double kz_at(PetscReal contrast, PetscInt i, PetscInt n)
{
  return (double)PetscPowReal(contrast, ((PetscReal)i + 0.5) / (PetscReal)n);
}

int main(int argc, char **argv)
{
  PetscInt n = 32, nz = 16, levels = 4, its;
  PetscReal rtol = 1e-5, err, xnorm, contrast = 1.0;
  PetscBool check = PETSC_FALSE, nearby = PETSC_FALSE;
  PetscMPIInt size, rank;
  StrataProblem problem;
  StrataOptions options;
  StrataSolver *solver, *whole;
  StrataInfo info;
  size_t local, cells, nnz;
  int32_t i0, j0, bx, by;
  int *blocks;
  int64_t *rp, *col;
  PetscInt *perm, *cols, first;
  PetscScalar *val, *xa, *ba;
  double *kz = NULL, *kz_block = NULL;
  Mat A;
  Vec x, b, u;
  KSP ksp;
  PC pc;
  KSPType ktype;
  PCType ptype;
  PetscLogDouble t0, t1, t2;
  PetscRandom rnd;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PCStrataRegister());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nz", &nz, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-levels", &levels, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-ksp_rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-check", &check, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-contrast", &contrast, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-nearby", &nearby, NULL));

  /* The problem; strata's own mg-cg solver on this process or this rank (its block), and one of
   * the whole problem for the matrix (assembled on every rank: a small problem's example). */
  StrataCheck(strata_problem_default(&problem));
  StrataCheck(strata_options_default(&options));
  problem.n = (int32_t)n;
  problem.nz = (int32_t)nz;
  /* -geometry, -boundary_x, -boundary_y by strata's names (a box periodic in x: -geometry box
   * -boundary_x periodic); the PC takes the problem as it is. */
  {
    const char *opts[3] = {"-geometry", "-boundary_x", "-boundary_y"};
    const char *settings[3] = {"geometry", "boundary", "boundary"};
    int32_t *fields[3] = {&problem.geometry, &problem.boundary_x, &problem.boundary_y};
    for (int q = 0; q < 3; q++) {
      char name[64];
      PetscBool set;
      PetscCall(PetscOptionsGetString(NULL, NULL, opts[q], name, sizeof name, &set));
      if (set) StrataCheck(strata_choice(settings[q], name, fields[q]));
    }
  }
  options.solver = STRATA_SOLVER_MG_CG;
  options.levels = (int32_t)levels;
  options.rtol = rtol;
  if (size == 1) StrataCheck(strata_solver_create(&problem, &options, &solver));
  else
    StrataCheck(strata_solver_create_mpi(&problem, &options, (int32_t)MPI_Comm_c2f(PETSC_COMM_WORLD),
                                         &solver));
  StrataCheck(strata_solver_create(&problem, &options, &whole));
  StrataCheck(strata_solver_size(solver, &local));
  StrataCheck(strata_solver_size(whole, &cells));
  StrataCheck(strata_solver_block(solver, &i0, &j0, &bx, &by));
  if (contrast != 1.0) {
    PetscCall(PetscMalloc1(cells, &kz));
    PetscCall(PetscMalloc1(local, &kz_block));
    for (size_t c = 0; c < cells; c++) kz[c] = kz_at(contrast, (PetscInt)((c / (size_t)nz) % (size_t)n), n);
    for (size_t c = 0; c < local; c++) kz_block[c] = kz_at(contrast, i0 + (PetscInt)((c / (size_t)nz) % (size_t)bx), n);
    StrataCheck(strata_solver_set_coefficients(whole, NULL, NULL, kz, NULL, NULL, NULL, NULL));
    StrataCheck(strata_solver_set_coefficients(solver, NULL, NULL, kz_block, NULL, NULL, NULL, NULL));
  }

  /* The global numbering: rank by rank, each rank's block in strata's order. */
  PetscCall(PetscMalloc1(4 * (size_t)size, &blocks));
  {
    int mine[4] = {i0, j0, bx, by};
    PetscCallMPI(MPI_Allgather(mine, 4, MPI_INT, blocks, 4, MPI_INT, PETSC_COMM_WORLD));
  }
  PetscCall(PetscMalloc1(cells, &perm));
  first = 0;
  for (PetscMPIInt r = 0; r < size; r++) {
    int *q = &blocks[4 * r];
    for (int jl = 0; jl < q[3]; jl++)
      for (int il = 0; il < q[2]; il++)
        for (PetscInt k = 0; k < nz; k++)
          perm[((q[1] + jl) * n + q[0] + il) * nz + k] = first + ((PetscInt)jl * q[2] + il) * nz + k;
    first += (PetscInt)q[2] * q[3] * nz;
  }

  /* The matrix: this rank's rows, renumbered. */
  StrataCheck(strata_solver_matrix(whole, &cells, &nnz, NULL, NULL, NULL));
  PetscCall(PetscMalloc1(cells + 1, &rp));
  PetscCall(PetscMalloc1(nnz, &col));
  PetscCall(PetscMalloc1(nnz, &val));
  PetscCall(PetscMalloc1(nnz, &cols));
  StrataCheck(strata_solver_matrix(whole, &cells, &nnz, rp, col, val));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, (PetscInt)local, (PetscInt)local, (PetscInt)cells, (PetscInt)cells));
  PetscCall(MatSetType(A, MATAIJ));
  PetscCall(MatSeqAIJSetPreallocation(A, 16, NULL));
  PetscCall(MatMPIAIJSetPreallocation(A, 16, NULL, 16, NULL));
  for (int jl = 0; jl < by; jl++)
    for (int il = 0; il < bx; il++)
      for (PetscInt k = 0; k < nz; k++) {
        PetscInt r = ((j0 + jl) * n + i0 + il) * nz + k, row = perm[r], cnt = 0;
        for (int64_t e = rp[r]; e < rp[r + 1]; e++) cols[cnt++] = perm[col[e]];
        PetscCall(MatSetValues(A, 1, &row, cnt, cols, &val[rp[r]], INSERT_VALUES));
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));

  /* A random right-hand side; x: strata's own mg-cg solution of it (on this rank's block). */
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &u));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(b, rnd));
  PetscCall(VecGetArray(b, &ba));
  PetscCall(VecGetArray(x, &xa));
  StrataCheck(strata_solver_solve(solver, ba, xa, 0, &info));
  PetscCall(VecRestoreArray(x, &xa));
  PetscCall(VecRestoreArray(b, &ba));

  /* The KSP: CG with strata's preconditioner unless the options say otherwise. */
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetTolerances(ksp, rtol, 0.0, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCSTRATA));
  PetscCall(PCStrataSetProblem(pc, &problem, &options));
  if (kz_block && !nearby) PetscCall(PCStrataSetCoefficients(pc, NULL, NULL, kz_block, NULL));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSetUp(ksp));
  PetscCall(PetscTime(&t1));
  PetscCall(KSPSolve(ksp, b, u));
  PetscCall(PetscTime(&t2));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetType(ksp, &ktype));
  PetscCall(PCGetType(pc, &ptype));
  PetscCall(VecAXPY(u, -1.0, x));
  PetscCall(VecNorm(u, NORM_2, &err));
  PetscCall(VecNorm(x, NORM_2, &xnorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "ksp %s pc %s: %" PetscInt_FMT " iterations, set-up %.4f s, solve %.4f s, "
                        "differs from strata's by %.1e; strata mg-cg %d iterations in %.4f s "
                        "(n = %" PetscInt_FMT ", nz = %" PetscInt_FMT ", %d rank%s)\n",
                        ktype, ptype, its, t1 - t0, t2 - t1, (double)(err / xnorm),
                        (int)info.iterations, info.seconds, n, nz, (int)size, size > 1 ? "s" : ""));
  if (check) {
    KSPConvergedReason reason;
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED,
               "the KSP did not converge (%s)", KSPConvergedReasons[reason]);
    PetscCheck(PetscAbsInt(its - (PetscInt)info.iterations) <= 1, PETSC_COMM_WORLD,
               PETSC_ERR_PLIB, "%" PetscInt_FMT " iterations where strata's mg-cg takes %d", its,
               (int)info.iterations);
  }

  PetscCall(KSPDestroy(&ksp));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&u));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFree(cols));
  PetscCall(PetscFree(val));
  PetscCall(PetscFree(col));
  PetscCall(PetscFree(rp));
  PetscCall(PetscFree(perm));
  PetscCall(PetscFree(blocks));
  PetscCall(PetscFree(kz));
  PetscCall(PetscFree(kz_block));
  strata_solver_destroy(whole);
  strata_solver_destroy(solver);
  PetscCall(PetscFinalize());
  return 0;
}
