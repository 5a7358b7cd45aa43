"""Type stubs of strata, the Python package of the strata solvers (a compiled module)."""

from typing import Any, Literal, Optional, final

__all__ = ["Solver", "NotConvergedError", "__version__"]
__version__: str

# The names of each choice, as strata's one table of names gives them (a test checks the stubs
# against the compiled module).
_Geometry = Literal["panel", "box", "sphere"]
_SolverKind = Literal["cg", "mg", "mg-cg", "gcr", "bicgstab"]
_Backend = Literal["auto", "cpu", "cuda", "reference"]
_Smoother = Literal["jacobi", "red-black"]
_Precision = Literal["f64", "mixed"]
_PreconditionerKind = Literal["line", "mg"]
_SphereStencil = Literal["nine-point", "two-point"]
_Halo = Literal["auto", "mpi", "nccl"]

# A float64 NumPy array, or a device array (CuPy, PyTorch, anything with
# __cuda_array_interface__ or DLPack) on a GPU solver.
_Array = Any

class NotConvergedError(RuntimeError):
    """A solve did not converge and the solver was made with error_if_not_converged=True (the
    solution array holds the last iterate)."""

@final
class Solver:
    """A strata solver, set up once for a problem and solved every time step (see help(strata.Solver))."""

    def __new__(
        cls,
        n: int,
        nz: int,
        *,
        geometry: _Geometry = "panel",
        cfl: float = 8.4,
        omega: Optional[float] = None,
        lambda_: float = 1.0,
        height: float = 0.01,
        delta: float = 1.0,
        graded: bool = False,
        solver: _SolverKind = "mg",
        levels: int | None = None,
        coarse_steps: int = 2,
        rtol: float = 1e-5,
        max_it: int = 500,
        preconditioner: _PreconditionerKind = "mg",
        restart: int = 5,
        threads: Optional[int] = None,
        backend: _Backend = "auto",
        device: int = 0,
        smoother: Optional[_Smoother] = None,
        rho: float = 2.0 / 3.0,
        precision: Optional[_Precision] = None,
        sphere_stencil: _SphereStencil = "nine-point",
        relaxation: Optional[float] = None,
        paper: bool = False,
        prolongate_halos: bool = True,
        comm: Optional[Any] = None,
        halo: _Halo = "auto",
        error_if_not_converged: bool = False,
        project_rhs: bool = False,
        boundary: str = "x=dirichlet,y=dirichlet",
        coarse_solve: Literal["smooth", "cg"] = "smooth",
        coarse_rtol: float = 1e-3,
        orography: Optional[_Array] = None,
        pre_smooth: Optional[int] = None,
        post_smooth: Optional[int] = None,
    ) -> "Solver": ...
    def solve(self, rhs: _Array, out: Optional[_Array] = None, x0: Optional[_Array] = None) -> _Array:
        """Solves A u = rhs; the solution in `out` if given, else a new array."""
    def apply(self, x: _Array) -> _Array:
        """A x with the solver's operator."""
    def precondition(self, r: _Array) -> _Array:
        """z = P r: the solver's preconditioner applied once (NumPy arrays), for another
        library's Krylov method (a petsc4py PCSHELL)."""
    def matrix(self) -> tuple[_Array, _Array, _Array]:
        """The operator in compressed sparse rows: (indptr, indices, data), int64/int64/float64."""
    def set_coefficients(
        self,
        kx: Optional[_Array] = None,
        ky: Optional[_Array] = None,
        kz: Optional[_Array] = None,
        beta: Optional[_Array] = None,
        xi: Optional[tuple[_Array, _Array, _Array]] = None,
    ) -> None:
        """Replaces the coefficient fields (None: the model problem's value)."""
    def set_omega(self, omega: float) -> None:
        """A new time step size, everything else kept."""
    @property
    def setup(self) -> dict[str, float]:
        """Seconds of each phase of the solver's creation."""
    @property
    def config(self) -> dict[str, Any]:
        """The configuration the solver runs with, every default resolved."""
    @property
    def backend(self) -> Literal["cpu", "cuda", "reference"]:
        """The backend the solver runs on."""
    @property
    def info(self) -> Optional[dict[str, Any]]:
        """The record of the last solve: converged, reason, iterations, initial_residual,
        relative_residual, residuals, seconds, incompatible (a singular problem's right-hand
        side's component along the null space, relative to its norm; None for a regular one);
        None before the first solve."""
    @property
    def block(self) -> tuple[int, int, int, int]:
        """This process's part of the horizontal grid, (i0, j0, nx, ny)."""
    @property
    def tiles(self) -> list[tuple[Optional[int], int, int, int, int]]:
        """This process's tiles, each (panel, i0, j0, nx, ny)."""
    @property
    def shape(self) -> tuple[int, ...]:
        """The arrays' shape: (n, n, nz) = (y, x, z); on the sphere (6, n, n, nz) (panel, y, x, z)."""
