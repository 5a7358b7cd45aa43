/* strata's multigrid as a PETSc preconditioner.
 *
 * After one call of PCStrataRegister(), `-pc_type strata` (or PCSetType(pc, "strata")) makes
 * strata's solver the preconditioner of any KSP: each PCApply is one application of strata's
 * preconditioner (mg-cg's symmetric V-cycle by default), set up from the problem's description
 * (geometry, sizes, parameters; coefficient fields by PCStrataSetCoefficients), not from the
 * matrix: the KSP's matrix is the same operator (strata_solver_matrix assembles it) or a nearby
 * one. Unknowns are numbered as strata's arrays: (j * n + i) * nz + k, z fastest.
 *
 * Options (-pc_strata_*): geometry panel|box|sphere, n, nz, cfl, omega, lambda, height, delta,
 * graded, solver (whose preconditioner: mg-cg, mg, cg, gcr, bicgstab), levels, coarse_steps,
 * smoother, precision, paper (the paper's configuration), backend, threads, device.
 * On several ranks the preconditioner is strata's distributed solver over the KSP's
 * communicator (libstrata built with the `mpi` feature): each rank's rows of the matrix must be
 * its strata block (strata_solver_block / strata_solver_tiles of PCStrataGetSolver's solver), in
 * strata's order, ranks in rank order; a rank whose row count differs is refused at set-up. */
#ifndef STRATA_PETSC_H
#define STRATA_PETSC_H

#include <petscpc.h>
#include "strata.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The type's name: PCSetType(pc, PCSTRATA). */
#define PCSTRATA "strata"

/* Registers the type `strata` with PETSc (once, after PetscInitialize). */
PetscErrorCode PCStrataRegister(void);

/* Sets the problem and the options from code (they override -pc_strata_* for the fields they
 * hold; the options database still applies where the caller leaves the defaults). `options`
 * may be NULL (strata's defaults for mg-cg). Before PCSetUp. */
PetscErrorCode PCStrataSetProblem(PC pc, const StrataProblem *problem, const StrataOptions *options);

/* Coefficient fields of the general operator, each NULL or n*n*nz values in strata's order
 * (copied): as strata_solver_set_coefficients. Applied at set-up, or at once if set up. */
PetscErrorCode PCStrataSetCoefficients(PC pc, const double *kx, const double *ky, const double *kz,
                                       const double *beta);

/* The strata solver behind the preconditioner (NULL before PCSetUp), for its other calls. */
PetscErrorCode PCStrataGetSolver(PC pc, StrataSolver **solver);

#ifdef __cplusplus
}
#endif

#endif
