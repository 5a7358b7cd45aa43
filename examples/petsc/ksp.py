"""strata's preconditioner in a petsc4py KSP: a PCSHELL whose apply is strata.Solver.precondition,
on strata's operator assembled as a PETSc AIJ matrix (Solver.matrix), beside PETSc's own
preconditioners on the same matrix.

    python3 examples/petsc/ksp.py [-n 64] [-nz 32] [-ksp_type cg|fgmres] [-pc_type strata|gamg|hypre]
                                  [-check]

The right-hand side is random (uniform in [0, 1)); the stopping test is strata's (the
unpreconditioned residual below -ksp_rtol, 1e-5, times the right-hand side's). Prints one line as
examples/petsc/ksp.c does; -check exits 1 unless PETSc's iterations are strata's mg-cg count ± 1.
"""
import sys

import numpy as np
import petsc4py

petsc4py.init(sys.argv)
from petsc4py import PETSc  # noqa: E402  (after init, which reads the options)

import strata  # noqa: E402


class StrataPC:
    """A petsc4py PCSHELL context: apply is one application of strata's preconditioner."""

    def __init__(self, solver: strata.Solver):
        self.solver = solver
        self.shape = solver.shape

    def apply(self, pc, x, y):
        z = self.solver.precondition(x.getArray(readonly=True).reshape(self.shape))
        y.setArray(z.ravel())


def main() -> int:
    opts = PETSc.Options()
    n, nz = opts.getInt("n", 32), opts.getInt("nz", 16)
    rtol = opts.getReal("ksp_rtol", 1e-5)
    solver = strata.Solver(n, nz, solver="mg-cg", levels=opts.getInt("levels", 4), rtol=rtol,
                           backend="cpu")
    indptr, indices, data = solver.matrix()
    size = indptr.size - 1
    A = PETSc.Mat().createAIJ(size=(size, size), csr=(indptr.astype(PETSc.IntType),
                                                      indices.astype(PETSc.IntType), data),
                              comm=PETSc.COMM_SELF)
    b = A.createVecLeft()
    rnd = PETSc.Random().create(comm=PETSc.COMM_SELF)
    rnd.setSeed(7)
    b.setRandom(rnd)
    own = solver.solve(b.getArray(readonly=True).reshape(solver.shape).copy())
    own_its = solver.info["iterations"]

    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=rtol, atol=0.0, max_it=500)
    pc = ksp.getPC()
    if opts.getString("pc_type", "strata") == "strata":
        opts.delValue("pc_type")
        pc.setType("python")
        pc.setPythonContext(StrataPC(solver))
    ksp.setFromOptions()
    u = b.duplicate()
    t0 = PETSc.Log.getTime()
    ksp.setUp()
    t1 = PETSc.Log.getTime()
    ksp.solve(b, u)
    t2 = PETSc.Log.getTime()
    its = ksp.getIterationNumber()
    diff = np.linalg.norm(u.getArray() - own.ravel()) / np.linalg.norm(own)
    name = "strata (PCSHELL)" if pc.getType() == "python" else pc.getType()
    print(f"petsc4py ksp {ksp.getType()} pc {name}: {its} iterations, set-up {t1 - t0:.4f} s, "
          f"solve {t2 - t1:.4f} s, differs from strata's by {diff:.1e}; strata mg-cg {own_its} "
          f"iterations in {solver.info['seconds']:.4f} s (n = {n}, nz = {nz})")
    if opts.getBool("check", False):
        if ksp.getConvergedReason() <= 0:
            print(f"the KSP did not converge ({ksp.getConvergedReason()})", file=sys.stderr)
            return 1
        if abs(its - own_its) > 1:
            print(f"{its} iterations where strata's mg-cg takes {own_its}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
