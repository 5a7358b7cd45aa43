//! Python bindings of strata: `strata.Solver`, the persistent solver over NumPy arrays, built
//! with PyO3 (abi3) and maturin (`pip install ./python`). Arrays have shape `(n, n, nz)` =
//! `(y, x, z)`, float64, C order: strata's own layout, so they pass without a copy. The GIL is
//! released while strata solves; every strata error is a Python exception (`ValueError` for bad
//! arguments, `MemoryError`, `RuntimeError` otherwise).

use ::strata::backend::cpu::CpuBackend;
use ::strata::problem::{Coefficients, Geometry, Grading, ProblemParams};
use ::strata::solver::{Preconditioner, SolveInfo, SolverConfig, SolverKind};
use ::strata::{PersistentSolver, StrataError};
use numpy::{PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn to_py(e: StrataError) -> PyErr {
    match e {
        StrataError::InvalidParameter { .. } => PyValueError::new_err(e.to_string()),
        StrataError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A strata solver, set up once for a problem and solved every time step.
///
/// Solver(n, nz, *, geometry="panel", cfl=8.4, omega=None, lambda_=1.0, height=0.01, delta=1.0,
///        graded=False, solver="mg", levels=5, coarse_steps=2, rtol=1e-5, max_it=500,
///        preconditioner="mg", restart=5, threads=None)
///
/// solver is one of "cg", "mg", "mg-cg", "gcr", "bicgstab"; preconditioner ("line" or "mg") is
/// that of gcr and bicgstab. Runs on the CPU backend (all cores unless `threads` is given).
#[pyclass(module = "strata")]
struct Solver {
    backend: CpuBackend,
    inner: PersistentSolver<CpuBackend>,
    shape: [usize; 3],
    last: Option<SolveInfo>,
}

fn kind_of(name: &str) -> PyResult<SolverKind> {
    Ok(match name {
        "cg" => SolverKind::Cg,
        "mg" => SolverKind::Mg,
        "mg-cg" => SolverKind::MgCg,
        "gcr" => SolverKind::Gcr,
        "bicgstab" => SolverKind::BiCgStab,
        other => {
            return Err(PyValueError::new_err(format!(
                "solver must be one of cg, mg, mg-cg, gcr, bicgstab (got {other:?})"
            )))
        }
    })
}

impl Solver {
    /// A read-only view of an (n, n, nz) float64 array as a slice (no copy when C-contiguous).
    fn check_shape(&self, name: &str, shape: &[usize]) -> PyResult<()> {
        if shape != self.shape {
            return Err(PyValueError::new_err(format!(
                "{name} has shape {shape:?}, the solver needs {:?} (y, x, z)",
                self.shape
            )));
        }
        Ok(())
    }
}

#[pymethods]
impl Solver {
    #[new]
    #[pyo3(signature = (n, nz, *, geometry="panel", cfl=8.4, omega=None, lambda_=1.0, height=0.01,
        delta=1.0, graded=false, solver="mg", levels=5, coarse_steps=2, rtol=1e-5, max_it=500,
        preconditioner="mg", restart=5, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        n: usize,
        nz: usize,
        geometry: &str,
        cfl: f64,
        omega: Option<f64>,
        lambda_: f64,
        height: f64,
        delta: f64,
        graded: bool,
        solver: &str,
        levels: usize,
        coarse_steps: usize,
        rtol: f64,
        max_it: usize,
        preconditioner: &str,
        restart: usize,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        let geometry = match geometry {
            "panel" => Geometry::Panel,
            "box" => Geometry::Box,
            g => {
                return Err(PyValueError::new_err(format!(
                    "geometry must be 'panel' or 'box' (got {g:?})"
                )))
            }
        };
        let pc = match preconditioner {
            "line" => Preconditioner::Line,
            "mg" => Preconditioner::Multigrid,
            p => {
                return Err(PyValueError::new_err(format!(
                    "preconditioner must be 'line' or 'mg' (got {p:?})"
                )))
            }
        };
        let p = ProblemParams {
            geometry,
            n,
            nz,
            cfl,
            lambda: lambda_,
            height,
            delta,
            grading: if graded {
                Grading::Graded
            } else {
                Grading::Uniform
            },
            omega,
            coefficients: None,
        };
        let cfg = SolverConfig::new(kind_of(solver)?)
            .with_levels(levels)
            .with_coarse_steps(coarse_steps)
            .with_rtol(rtol)
            .with_max_it(max_it)
            .with_preconditioner(pc)
            .with_restart(restart);
        let backend = CpuBackend::new(threads).map_err(to_py)?;
        let inner = py
            .detach(|| PersistentSolver::new(&backend, &p, &cfg))
            .map_err(to_py)?;
        Ok(Self {
            backend,
            inner,
            shape: [n, n, nz],
            last: None,
        })
    }

    /// solve(rhs, out=None, x0=None) -> ndarray
    ///
    /// Solves A u = rhs (volume-integrated, shape (n, n, nz), float64). The solution goes to
    /// `out` if given (it may be `x0`: a model's warm start), else to a new array. With `x0` the
    /// solve starts there, else from zero. Non-convergence is not an exception: see `info`.
    #[pyo3(signature = (rhs, out=None, x0=None))]
    fn solve<'py>(
        &mut self,
        py: Python<'py>,
        rhs: PyReadonlyArray3<'py, f64>,
        out: Option<Bound<'py, PyArray3<f64>>>,
        x0: Option<PyReadonlyArray3<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        self.check_shape("rhs", rhs.shape())?;
        let out = match out {
            Some(o) => {
                self.check_shape("out", o.shape())?;
                o
            }
            None => PyArray3::zeros(py, self.shape, false),
        };
        let warm = match &x0 {
            Some(x) => {
                self.check_shape("x0", x.shape())?;
                true
            }
            None => false,
        };
        let x0: Option<Vec<f64>> = match x0 {
            // x0 may be `out` itself (a warm start in place): copy it, and release its read
            // borrow, before writing into out.
            Some(x) => Some(
                x.as_slice()
                    .map_err(|_| PyValueError::new_err("x0 must be C-contiguous"))?
                    .to_vec(),
            ),
            None => None,
        };
        let rhs = rhs
            .as_slice()
            .map_err(|_| PyValueError::new_err("rhs must be C-contiguous"))?;
        {
            let mut guard = out.try_readwrite().map_err(|_| {
                PyValueError::new_err("out must be a writable array other than rhs")
            })?;
            let u = guard
                .as_slice_mut()
                .map_err(|_| PyValueError::new_err("out must be C-contiguous"))?;
            if let Some(x0) = &x0 {
                u.copy_from_slice(x0);
            }
            let (backend, inner) = (&self.backend, &mut self.inner);
            let info = py
                .detach(|| inner.solve(backend, rhs, u, warm))
                .map_err(to_py)?;
            self.last = Some(info);
        }
        Ok(out)
    }

    /// apply(x) -> ndarray: A x with the solver's operator (to check a residual).
    fn apply<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray3<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        self.check_shape("x", x.shape())?;
        let x = x
            .as_slice()
            .map_err(|_| PyValueError::new_err("x must be C-contiguous"))?;
        let y = PyArray3::zeros(py, self.shape, false);
        {
            let mut guard = y.readwrite();
            let ys = guard.as_slice_mut().expect("a new array is contiguous");
            let (backend, inner) = (&self.backend, &mut self.inner);
            py.detach(|| inner.apply(backend, x, ys)).map_err(to_py)?;
        }
        Ok(y)
    }

    /// set_coefficients(kx=None, ky=None, kz=None, beta=None, xi=None)
    ///
    /// Replaces the coefficient fields of the general operator (arrays of shape (n, n, nz); None:
    /// the model problem's value) and the advection vector `xi` (a tuple of three arrays, or
    /// None). All None: back to the model problem.
    #[pyo3(signature = (kx=None, ky=None, kz=None, beta=None, xi=None))]
    fn set_coefficients<'py>(
        &mut self,
        py: Python<'py>,
        kx: Option<PyReadonlyArray3<'py, f64>>,
        ky: Option<PyReadonlyArray3<'py, f64>>,
        kz: Option<PyReadonlyArray3<'py, f64>>,
        beta: Option<PyReadonlyArray3<'py, f64>>,
        xi: Option<(
            PyReadonlyArray3<'py, f64>,
            PyReadonlyArray3<'py, f64>,
            PyReadonlyArray3<'py, f64>,
        )>,
    ) -> PyResult<()> {
        let [n, _, nz] = self.shape;
        let none = kx.is_none() && ky.is_none() && kz.is_none() && beta.is_none() && xi.is_none();
        let coefficients = if none {
            None
        } else {
            let mut c = Coefficients::constant(n, nz, self.inner.problem().delta);
            for (a, field, name) in [
                (&kx, &mut c.kx, "kx"),
                (&ky, &mut c.ky, "ky"),
                (&kz, &mut c.kz, "kz"),
                (&beta, &mut c.beta, "beta"),
            ] {
                if let Some(a) = a {
                    self.check_shape(name, a.shape())?;
                    *field = a
                        .to_vec()
                        .map_err(|e| PyValueError::new_err(e.to_string()))?;
                }
            }
            if let Some((x, y, z)) = &xi {
                let mut v = vec![];
                for (a, name) in [(x, "xi[0]"), (y, "xi[1]"), (z, "xi[2]")] {
                    self.check_shape(name, a.shape())?;
                    v.push(
                        a.to_vec()
                            .map_err(|e| PyValueError::new_err(e.to_string()))?,
                    );
                }
                let [a, b, c3]: [Vec<f64>; 3] = v.try_into().expect("three components");
                c.xi = Some([a, b, c3]);
            }
            Some(c)
        };
        let (backend, inner) = (&self.backend, &mut self.inner);
        py.detach(|| inner.update_coefficients(backend, coefficients))
            .map_err(to_py)
    }

    /// set_omega(omega): a new time step size, everything else kept.
    fn set_omega(&mut self, py: Python<'_>, omega: f64) -> PyResult<()> {
        let (backend, inner) = (&self.backend, &mut self.inner);
        py.detach(|| inner.update_omega(backend, omega))
            .map_err(to_py)
    }

    /// The record of the last solve: a dict with converged, reason, iterations, initial_residual,
    /// relative_residual, residuals (list), seconds; None before the first solve.
    #[getter]
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(i) = &self.last else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("converged", i.reason.converged())?;
        d.set_item("reason", format!("{:?}", i.reason))?;
        d.set_item("iterations", i.iterations)?;
        d.set_item("initial_residual", i.r0)?;
        d.set_item("relative_residual", i.relative_residual())?;
        d.set_item("residuals", i.residuals.clone())?;
        d.set_item("seconds", i.seconds)?;
        Ok(Some(d))
    }

    /// The shape of every array: (n, n, nz) = (y, x, z).
    #[getter]
    fn shape(&self) -> (usize, usize, usize) {
        (self.shape[0], self.shape[1], self.shape[2])
    }

    fn __repr__(&self) -> String {
        let p = self.inner.problem();
        format!(
            "strata.Solver(n={}, nz={}, solver={:?}, backend={:?})",
            p.n,
            p.nz,
            self.inner.config().kind.name(),
            "cpu"
        )
    }
}

/// strata: matrix-free solvers for the elliptic pressure-correction equation of atmospheric
/// models (Müller, Scheichl & Vainikko 2014), from Python.
#[pymodule]
#[pyo3(name = "strata")]
fn strata_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Solver>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
