/* strata's multigrid as a PETSc preconditioner: the type `strata` (strata_petsc.h).
 *
 * A PC implementation fills pc->ops from PETSc's private header, as PETSc's own types and the
 * external packages that register types do (PCRegister's manual page). */
#include <petsc/private/pcimpl.h>
#include <petscversion.h>
#include <stdlib.h>
#include <string.h>
#include "strata_petsc.h"

/* PETSC_SUCCESS came with PETSc 3.19. */
#ifndef PETSC_SUCCESS
#define PETSC_SUCCESS 0
#endif

/* PETSc 3.23 made PetscOptionItems a pointer type. */
#if PETSC_VERSION_GE(3, 23, 0)
#define STRATA_OPTION_ITEMS PetscOptionItems
#else
#define STRATA_OPTION_ITEMS PetscOptionItems *
#endif

typedef struct {
  StrataProblem problem;
  StrataOptions options;
  StrataSolver *solver;
  /* The coefficient fields to set (NULL: the model problem's), n*n*nz values each. */
  double *coef[4];
} PC_Strata;

/* A failed strata call as a PETSc error carrying strata's sentence. */
#define StrataCall(pc, call)                                                                 \
  do {                                                                                       \
    if ((call) != STRATA_STATUS_OK)                                                          \
      SETERRQ(PetscObjectComm((PetscObject)(pc)), PETSC_ERR_LIB, "strata: %s",               \
              strata_last_error());                                                          \
  } while (0)

/* A choice given by name in the options database, as strata names it (strata_choice). */
static PetscErrorCode StrataOptionChoice(PC pc, STRATA_OPTION_ITEMS PetscOptionsObject,
                                         const char *opt, const char *setting, const char *help,
                                         int32_t *value)
{
  char name[64];
  PetscBool set;

  PetscFunctionBegin;
  PetscCall(PetscOptionsString(opt, help, "PCStrataSetProblem", "", name, sizeof name, &set));
  if (set) StrataCall(pc, strata_choice(setting, name, value));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCSetFromOptions_Strata(PC pc, STRATA_OPTION_ITEMS PetscOptionsObject)
{
  PC_Strata *s = (PC_Strata *)pc->data;
  StrataProblem *p = &s->problem;
  StrataOptions *o = &s->options;
  PetscInt n = p->n, nz = p->nz, levels = o->levels, coarse = o->coarse_steps;
  PetscInt threads = o->threads, device = o->device;
  PetscInt pre = o->pre_smooth, post = o->post_smooth;
  PetscBool pre_set, post_set;
  PetscBool graded = p->graded ? PETSC_TRUE : PETSC_FALSE, paper = PETSC_FALSE;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "strata preconditioner options");
  PetscCall(PetscOptionsBool("-pc_strata_paper", "The paper's configuration (block-Jacobi, fp64)",
                             "PCStrataSetProblem", paper, &paper, NULL));
  if (paper) {
    int32_t solver = o->solver;
    StrataCall(pc, strata_options_init_paper(o, sizeof *o));
    o->solver = solver;
  }
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_geometry", "geometry",
                               "panel, box or sphere", &p->geometry));
  PetscCall(PetscOptionsInt("-pc_strata_n", "Horizontal cells per direction", "", n, &n, NULL));
  PetscCall(PetscOptionsInt("-pc_strata_nz", "Vertical cells", "", nz, &nz, NULL));
  PetscCall(PetscOptionsReal("-pc_strata_cfl", "Vertical Courant number", "", p->cfl, &p->cfl, NULL));
  PetscCall(PetscOptionsReal("-pc_strata_omega", "omega itself (> 0 overrides cfl)", "", p->omega,
                             &p->omega, NULL));
  PetscCall(PetscOptionsReal("-pc_strata_lambda", "Vertical anisotropy", "", p->lambda, &p->lambda,
                             NULL));
  PetscCall(PetscOptionsReal("-pc_strata_height", "Atmosphere height", "", p->height, &p->height,
                             NULL));
  PetscCall(PetscOptionsReal("-pc_strata_delta", "Zero-order coefficient", "", p->delta, &p->delta,
                             NULL));
  PetscCall(PetscOptionsBool("-pc_strata_graded", "Graded vertical grid", "", graded, &graded, NULL));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_boundary_x", "boundary",
                               "West and east sides: dirichlet, neumann or periodic", &p->boundary_x));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_boundary_y", "boundary",
                               "South and north sides: dirichlet, neumann or periodic", &p->boundary_y));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_solver", "solver",
                               "Whose preconditioner: mg-cg, mg, cg, gcr, bicgstab", &o->solver));
  PetscCall(PetscOptionsInt("-pc_strata_levels", "Multigrid levels (-1: the solver's: 5, deeper where the coarsest is too strongly coupled)", "", levels, &levels, NULL));
  PetscCall(PetscOptionsInt("-pc_strata_coarse_steps", "Smoother steps on the coarsest level", "",
                            coarse, &coarse, NULL));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_smoother", "smoother",
                               "jacobi or red-black", &o->smoother));
  PetscCall(PetscOptionsInt("-pc_strata_pre_smooth",
                            "Smoothing steps before the coarse correction (1-16; -1: the solver's)",
                            "", pre, &pre, &pre_set));
  PetscCall(PetscOptionsInt("-pc_strata_post_smooth",
                            "Smoothing steps after the coarse correction (1-16; -1: the solver's)",
                            "", post, &post, &post_set));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_coarse_solve", "coarse_solve",
                               "The coarsest level: smooth or cg", &o->coarse_solve));
  PetscCall(PetscOptionsReal("-pc_strata_coarse_rtol", "The coarse CG's relative tolerance", "",
                             o->coarse_rtol, &o->coarse_rtol, NULL));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_precision", "precision",
                               "fp64 or mixed", &o->precision));
  PetscCall(StrataOptionChoice(pc, PetscOptionsObject, "-pc_strata_backend", "backend",
                               "auto, cpu, cuda or reference", &o->backend));
  PetscCall(PetscOptionsInt("-pc_strata_threads", "CPU threads (0: all cores)", "", threads,
                            &threads, NULL));
  PetscCall(PetscOptionsInt("-pc_strata_device", "CUDA device", "", device, &device, NULL));
  PetscOptionsHeadEnd();
  p->n = (int32_t)n;
  p->nz = (int32_t)nz;
  p->graded = graded ? 1 : 0;
  o->levels = (int32_t)levels;
  o->coarse_steps = (int32_t)coarse;
  /* Only where given: -pc_strata_paper's cycle (V(1,1)) stays otherwise. */
  if (pre_set) o->pre_smooth = (int32_t)pre;
  if (post_set) o->post_smooth = (int32_t)post;
  o->threads = (int32_t)threads;
  o->device = (int32_t)device;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCStrataApplyCoefficients(PC pc)
{
  PC_Strata *s = (PC_Strata *)pc->data;

  PetscFunctionBegin;
  if (s->solver && (s->coef[0] || s->coef[1] || s->coef[2] || s->coef[3]))
    StrataCall(pc, strata_solver_set_coefficients(s->solver, s->coef[0], s->coef[1], s->coef[2],
                                                  s->coef[3], NULL, NULL, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCSetUp_Strata(PC pc)
{
  PC_Strata *s = (PC_Strata *)pc->data;
  PetscMPIInt size;
  PetscInt rows, cols;
  size_t len = 0;

  MPI_Comm comm = PetscObjectComm((PetscObject)pc);
  PetscInt grows, gcols;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  if (!s->solver) {
    /* On several ranks strata splits the grid over the KSP's communicator into blocks (the
     * most nearly square rank grid; the sphere's tiles): the matrix's rows of a rank must be
     * that rank's block, in strata's order (strata_solver_block via PCStrataGetSolver). */
    if (size == 1) StrataCall(pc, strata_solver_create(&s->problem, &s->options, &s->solver));
    else
      StrataCall(pc, strata_solver_create_mpi(&s->problem, &s->options,
                                              (int32_t)MPI_Comm_c2f(comm), &s->solver));
    PetscCall(PCStrataApplyCoefficients(pc));
  }
  StrataCall(pc, strata_solver_size(s->solver, &len));
  PetscCall(MatGetLocalSize(pc->pmat, &rows, &cols));
  PetscCall(MatGetSize(pc->pmat, &grows, &gcols));
  PetscCheck((size_t)rows == len && rows == cols, comm, PETSC_ERR_ARG_SIZ,
             "this rank holds %" PetscInt_FMT " x %" PetscInt_FMT " of the %" PetscInt_FMT
             " x %" PetscInt_FMT " matrix; strata's problem (n = %d, nz = %d, geometry %d) has "
             "%zu unknowns on this rank: set -pc_strata_n, -pc_strata_nz, -pc_strata_geometry or "
             "PCStrataSetProblem, and on ranks give each rank the rows of its strata block",
             rows, cols, grows, gcols, (int)s->problem.n, (int)s->problem.nz,
             (int)s->problem.geometry, len);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCApply_Strata(PC pc, Vec x, Vec y)
{
  PC_Strata *s = (PC_Strata *)pc->data;
  const PetscScalar *xa;
  PetscScalar *ya;
  StrataStatus st;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayWrite(y, &ya));
  st = strata_solver_precondition(s->solver, xa, ya);
  PetscCall(VecRestoreArrayWrite(y, &ya));
  PetscCall(VecRestoreArrayRead(x, &xa));
  StrataCall(pc, st);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCReset_Strata(PC pc)
{
  PC_Strata *s = (PC_Strata *)pc->data;

  PetscFunctionBegin;
  strata_solver_destroy(s->solver);
  s->solver = NULL;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCDestroy_Strata(PC pc)
{
  PC_Strata *s = (PC_Strata *)pc->data;

  PetscFunctionBegin;
  PetscCall(PCReset_Strata(pc));
  for (int i = 0; i < 4; i++) PetscCall(PetscFree(s->coef[i]));
  PetscCall(PetscFree(pc->data));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The name of a setting's value (strata_choice_name), or "default" for one the library has not
   resolved yet (before set-up). */
static const char *StrataName(const char *setting, int value)
{
  const char *name = strata_choice_name(setting, value);
  return name ? name : "default";
}

static PetscErrorCode PCView_Strata(PC pc, PetscViewer viewer)
{
  PC_Strata *s = (PC_Strata *)pc->data;
  PetscBool ascii;
  StrataOptions o = s->options;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  /* Once set up, the options the solver runs with: the library's defaults resolved. */
  if (s->solver) StrataCall(pc, strata_solver_options(s->solver, &o, sizeof o));
  if (ascii) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  strata %s: geometry %s, n = %d, nz = %d, %d levels, the "
                                     "preconditioner of solver %s, smoother %s, precision %s, "
                                     "V(%d,%d) cycle, backend %s (-1, default: the library's "
                                     "choice, before set-up)\n",
                                     strata_version(), StrataName("geometry", s->problem.geometry),
                                     (int)s->problem.n, (int)s->problem.nz, (int)o.levels,
                                     StrataName("solver", o.solver),
                                     StrataName("smoother", o.smoother),
                                     StrataName("precision", o.precision), (int)o.pre_smooth,
                                     (int)o.post_smooth, StrataName("backend", o.backend)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCCreate_Strata(PC pc)
{
  PC_Strata *s;

  PetscFunctionBegin;
  PetscCall(PetscNew(&s));
  pc->data = (void *)s;
  if (strata_problem_init(&s->problem, sizeof s->problem) != STRATA_STATUS_OK ||
      strata_options_init(&s->options, sizeof s->options) != STRATA_STATUS_OK)
    SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_LIB, "strata: %s", strata_last_error());
  s->options.solver = STRATA_SOLVER_MG_CG;
  pc->ops->setup = PCSetUp_Strata;
  pc->ops->apply = PCApply_Strata;
  pc->ops->reset = PCReset_Strata;
  pc->ops->destroy = PCDestroy_Strata;
  pc->ops->setfromoptions = PCSetFromOptions_Strata;
  pc->ops->view = PCView_Strata;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCStrataRegister(void)
{
  PetscFunctionBegin;
  PetscCall(PCRegister(PCSTRATA, PCCreate_Strata));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The PC's data, or an error where the PC is not of type strata. */
static PetscErrorCode PCStrataData(PC pc, PC_Strata **s)
{
  PetscBool is;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCSTRATA, &is));
  PetscCheck(is, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG,
             "the PC is not of type strata: PCSetType(pc, PCSTRATA) first");
  *s = (PC_Strata *)pc->data;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCStrataSetProblem(PC pc, const StrataProblem *problem, const StrataOptions *options)
{
  PC_Strata *s;

  PetscFunctionBegin;
  PetscCall(PCStrataData(pc, &s));
  PetscCheck(!s->solver, PetscObjectComm((PetscObject)pc), PETSC_ERR_ORDER,
             "PCStrataSetProblem after PCSetUp");
  PetscCheck(problem, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_NULL, "problem is NULL");
  PetscCheck(problem->size == sizeof s->problem, PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_WRONG, "problem was not made by strata_problem_default");
  s->problem = *problem;
  if (options) {
    PetscCheck(options->size == sizeof s->options, PetscObjectComm((PetscObject)pc),
               PETSC_ERR_ARG_WRONG, "options were not made by strata_options_default");
    s->options = *options;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCStrataSetCoefficients(PC pc, const double *kx, const double *ky, const double *kz,
                                       const double *beta)
{
  PC_Strata *s;
  const double *given[4] = {kx, ky, kz, beta};
  size_t len;

  PetscFunctionBegin;
  PetscCall(PCStrataData(pc, &s));
  if (s->solver) StrataCall(pc, strata_solver_size(s->solver, &len));
  else
    len = (size_t)(s->problem.geometry == STRATA_GEOMETRY_SPHERE ? 6 : 1) * (size_t)s->problem.n * (size_t)s->problem.n *
          (size_t)s->problem.nz;
  for (int i = 0; i < 4; i++) {
    PetscCall(PetscFree(s->coef[i]));
    if (given[i]) {
      PetscCall(PetscMalloc1(len, &s->coef[i]));
      PetscCall(PetscArraycpy(s->coef[i], given[i], len));
    }
  }
  PetscCall(PCStrataApplyCoefficients(pc));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCStrataGetSolver(PC pc, StrataSolver **solver)
{
  PC_Strata *s;

  PetscFunctionBegin;
  PetscCall(PCStrataData(pc, &s));
  *solver = s->solver;
  PetscFunctionReturn(PETSC_SUCCESS);
}
