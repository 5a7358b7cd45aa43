/* strata's preconditioner inside a PETSc KSP, on the matrix of strata's operator assembled as a
 * PETSc AIJ matrix (strata_solver_matrix).
 *
 *   ksp -n 64 -nz 32 -ksp_type cg -pc_type strata          strata's V-cycle in PETSc's CG
 *   ksp -n 64 -nz 32 -ksp_type fgmres -pc_type strata
 *   ksp -n 64 -nz 32 -ksp_type cg -pc_type gamg            PETSc's own, for comparison
 *   ksp ... -check                                          exit 1 unless PETSc's iterations are
 *                                                           strata's own mg-cg count ± 1
 *   ksp ... -contrast 10                                    the operator with a coefficient field
 *                                                           kz varying tenfold across the domain;
 *   ksp ... -contrast 10 -nearby                            the preconditioner of the model
 *                                                           problem on it (a nearby operator)
 *
 * The right-hand side is random (uniform in [0, 1), every cell); the stopping test is strata's:
 * the unpreconditioned residual's 2-norm below rtol times the right-hand side's (-ksp_rtol, 1e-5
 * by default), from a zero initial guess. Prints one line: the KSP, the PC, iterations, seconds
 * (set-up and solve), the difference from strata's own mg-cg solution, and its iterations. */
static const char help[] = "A PETSc KSP on strata's operator, with -pc_type strata.\n";

#include <petscksp.h>
#include <stdlib.h>
#include "strata_petsc.h"

#define StrataCheck(call)                                                                      \
  do {                                                                                         \
    if ((call) != STRATA_STATUS_OK)                                                            \
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "strata: %s", strata_last_error());              \
  } while (0)

int main(int argc, char **argv)
{
  PetscInt n = 32, nz = 16, levels = 4, its;
  PetscReal rtol = 1e-5, err, xnorm;
  PetscBool check = PETSC_FALSE, nearby = PETSC_FALSE;
  PetscReal contrast = 1.0;
  double *kz = NULL;
  StrataProblem problem;
  StrataOptions options;
  StrataSolver *solver;
  StrataInfo info;
  size_t size, nnz;
  int64_t *rp64, *col64;
  PetscInt *rp, *col;
  PetscScalar *val, *xa, *ba;
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
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nz", &nz, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-levels", &levels, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-ksp_rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-check", &check, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-contrast", &contrast, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-nearby", &nearby, NULL));

  /* The problem and strata's own mg-cg solver (its matrix, and its count for the check). */
  StrataCheck(strata_problem_default(&problem));
  StrataCheck(strata_options_default(&options));
  problem.n = (int32_t)n;
  problem.nz = (int32_t)nz;
  options.solver = STRATA_SOLVER_MG_CG;
  options.levels = (int32_t)levels;
  options.rtol = rtol;
  StrataCheck(strata_solver_create(&problem, &options, &solver));
  StrataCheck(strata_solver_size(solver, &size));
  if (contrast != 1.0) {
    /* kz = contrast^(x / n): smooth, varying by the factor `contrast` along x. */
    PetscCall(PetscMalloc1(size, &kz));
    for (size_t c = 0; c < size; c++) {
      size_t i = (c / (size_t)nz) % (size_t)n;
      kz[c] = PetscPowReal(contrast, ((PetscReal)i + 0.5) / (PetscReal)n);
    }
    StrataCheck(strata_solver_set_coefficients(solver, NULL, NULL, kz, NULL, NULL, NULL, NULL));
  }
  StrataCheck(strata_solver_matrix(solver, &size, &nnz, NULL, NULL, NULL));
  PetscCall(PetscMalloc1(size + 1, &rp64));
  PetscCall(PetscMalloc1(nnz, &col64));
  PetscCall(PetscMalloc1(size + 1, &rp));
  PetscCall(PetscMalloc1(nnz, &col));
  PetscCall(PetscMalloc1(nnz, &val));
  StrataCheck(strata_solver_matrix(solver, &size, &nnz, rp64, col64, val));
  for (size_t i = 0; i <= size; i++) rp[i] = (PetscInt)rp64[i];
  for (size_t k = 0; k < nnz; k++) col[k] = (PetscInt)col64[k];
  PetscCall(MatCreateSeqAIJWithArrays(PETSC_COMM_SELF, (PetscInt)size, (PetscInt)size, rp, col,
                                      val, &A));

  /* A random right-hand side; x: strata's own mg-cg solution of it. */
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &u));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(b, rnd));
  PetscCall(VecGetArray(b, &ba));
  PetscCall(VecGetArray(x, &xa));
  StrataCheck(strata_solver_solve(solver, ba, xa, 0, &info));
  PetscCall(VecRestoreArray(x, &xa));
  PetscCall(VecRestoreArray(b, &ba));

  /* The KSP: CG with strata's preconditioner unless the options say otherwise. */
  PetscCall(KSPCreate(PETSC_COMM_SELF, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetTolerances(ksp, rtol, 0.0, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCSTRATA));
  PetscCall(PCStrataSetProblem(pc, &problem, &options));
  if (kz && !nearby) PetscCall(PCStrataSetCoefficients(pc, NULL, NULL, kz, NULL));
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
  PetscCall(PetscPrintf(PETSC_COMM_SELF,
                        "ksp %s pc %s: %" PetscInt_FMT " iterations, set-up %.4f s, solve %.4f s, "
                        "differs from strata's by %.1e; strata mg-cg %d iterations in %.4f s (n = %" PetscInt_FMT
                        ", nz = %" PetscInt_FMT ")\n",
                        ktype, ptype, its, t1 - t0, t2 - t1, (double)(err / xnorm),
                        (int)info.iterations, info.seconds, n, nz));
  if (check) {
    KSPConvergedReason reason;
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCheck(reason > 0, PETSC_COMM_SELF, PETSC_ERR_NOT_CONVERGED, "the KSP did not converge (%s)",
               KSPConvergedReasons[reason]);
    PetscCheck(PetscAbsInt(its - (PetscInt)info.iterations) <= 1, PETSC_COMM_SELF,
               PETSC_ERR_PLIB, "%" PetscInt_FMT " iterations where strata's mg-cg takes %d", its,
               (int)info.iterations);
  }

  PetscCall(KSPDestroy(&ksp));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&u));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFree(val));
  PetscCall(PetscFree(col));
  PetscCall(PetscFree(rp));
  PetscCall(PetscFree(col64));
  PetscCall(PetscFree(rp64));
  PetscCall(PetscFree(kz));
  strata_solver_destroy(solver);
  PetscCall(PetscFinalize());
  return 0;
}
