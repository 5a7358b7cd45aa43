//! Python bindings of strata: `strata.Solver`, the persistent solver over NumPy arrays on the
//! host and CuPy (or any `__cuda_array_interface__` / DLPack) arrays on the GPU, built with PyO3
//! (abi3) and maturin (`pip install ./python`). Arrays have shape `(n, n, nz)` = `(y, x, z)`
//! (on the sphere `(6 n, n, nz)`: the six panels stacked along y),
//! float64; NumPy arrays in C order (strata's own layout) pass without a copy, device arrays in
//! any strides without a host round trip. The GIL is released while strata solves; every strata
//! error is a Python exception (`ValueError` for bad arguments, `MemoryError`, `RuntimeError`
//! otherwise).

use ::strata::backend::cpu::CpuBackend;
use ::strata::backend::tiled::Tiled;
use ::strata::comm::SphereComm;
use ::strata::problem::{Coefficients, Geometry, Grading, ProblemParams};
use ::strata::solver::{Preconditioner, SolveInfo, SolverConfig, SolverKind};
use ::strata::{PersistentSolver, StrataError};
use numpy::{PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use strata_cuda::{CudaBackend, DeviceArray, DeviceSolve};

mod ranks;

/// A rank's persistent solver over MPI (a build with `--features mpi`).
#[cfg(feature = "mpi")]
type RankSolver<B> = ranks::Ranks<PersistentSolver<B, strata_mpi::MpiComm<B>>>;

/// A sphere rank's persistent solver over MPI.
#[cfg(feature = "mpi")]
type SphereRankSolver<B> = ranks::Ranks<PersistentSolver<Sphere<B>, strata_mpi::SphereMpiComm<B>>>;

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
///        preconditioner="mg", restart=5, threads=None, backend="auto", device=0,
///        smoother="jacobi", rho=2/3, precision="f64", sphere_stencil="nine-point",
///        relaxation=None, comm=None)
///
/// geometry is "panel" (one cubed-sphere panel with walls), "box" or "sphere" (the whole globe:
/// six n x n panels, every array of shape (6 n, n, nz), the panels stacked along y).
/// sphere_stencil is the sphere's horizontal stencil: "nine-point" (consistent with the sphere's
/// Laplacian, second order) or "two-point" (the paper's fluxes, not consistent on the sphere).
/// smoother is the multigrid smoother: "jacobi" (the paper's block-Jacobi line relaxation,
/// damped by rho; rho=0.8 takes fewer cycles) or "red-black" (line Gauss-Seidel, its half-sweeps
/// over-relaxed by `relaxation`, in (0, 2); None: the library's 1.15, which takes red-black mg
/// from 5 cycles to 4; mg-cg's symmetric cycle uses 1).
/// precision is "f64", or "mixed": the outer iteration and its stopping test in fp64, the
/// multigrid preconditioner's fields in fp32 (mg, mg-cg, and gcr/bicgstab with preconditioner
/// "mg"; the answer meets rtol on the fp64 residual as in "f64").
/// rtol stops a solve when |f - A u| < rtol |f| (2-norms of the volume-integrated fields; from a
/// zero guess the same as |r| / |r0| < rtol; a warm start must meet it too).
/// solver is one of "cg", "mg", "mg-cg", "gcr", "bicgstab"; preconditioner ("line" or "mg") is
/// that of gcr and bicgstab. backend is "auto" (the GPU where one is usable), "cpu" (all cores
/// unless `threads` is given) or "cuda" (GPU `device`). A solver on the GPU takes NumPy arrays
/// (copied through the host) and device arrays (CuPy, PyTorch, anything with
/// `__cuda_array_interface__` or DLPack: read and written on the device); a solver on the CPU
/// takes NumPy arrays.
/// comm (an mpi4py communicator, in a strata built with `--features mpi`) makes this process one
/// rank of a distributed panel or box solve: the ranks split the horizontal grid (the most
/// nearly square rank grid), `block` says which part this rank holds, and every array — the
/// right-hand side, the solution, the coefficient fields — is that block's, of shape (ny, nx,
/// nz). On the sphere a rank holds whole panels (up to six ranks) or blocks of every panel
/// (`tiles`), its arrays those tiles stacked along y, and takes the whole sphere's coefficient
/// fields. Creation and every solve, apply and set_coefficients are collective. A GPU rank
/// (backend="cuda", `device` its node-local GPU) exchanges halos through host memory.
#[pyclass(module = "strata")]
struct Solver {
    /// Dropped by hand (`Drop for Solver`): a rank's is leaked once MPI is finalised.
    engine: std::mem::ManuallyDrop<Engine>,
    /// The shape of the solution and right-hand side arrays: the tiles stacked along y.
    shape: [usize; 3],
    /// The shape of the coefficient arrays: `shape`, but the whole sphere's on its ranks.
    fields_shape: [usize; 3],
    last: Option<SolveInfo>,
}

impl Drop for Solver {
    fn drop(&mut self) {
        // SAFETY: the engine is taken once, here, and the solver is not used after.
        let engine = unsafe { std::mem::ManuallyDrop::take(&mut self.engine) };
        if engine.on_ranks() && ranks::finalized() {
            // Freeing its communicator after MPI_Finalize would be an MPI error.
            std::mem::forget(engine);
        }
    }
}

/// The backend and persistent solver of a [`Solver`] (one per solver, created once: the size of
/// the variants does not matter).
#[allow(clippy::large_enum_variant)]
enum Engine {
    Cpu(CpuBackend, PersistentSolver<CpuBackend>),
    Cuda(Box<CudaBackend>, PersistentSolver<CudaBackend>),
    CpuSphere(
        Sphere<CpuBackend>,
        PersistentSolver<Sphere<CpuBackend>, SphereComm>,
    ),
    CudaSphere(
        Sphere<CudaBackend>,
        PersistentSolver<Sphere<CudaBackend>, SphereComm>,
    ),
    /// A rank of a distributed panel or box solve.
    #[cfg(feature = "mpi")]
    CpuRank(CpuBackend, RankSolver<CpuBackend>),
    #[cfg(feature = "mpi")]
    CudaRank(Box<CudaBackend>, RankSolver<CudaBackend>),
    /// A rank of a distributed sphere: its tiles (whole panels, or blocks of every panel).
    #[cfg(feature = "mpi")]
    CpuSphereRank(Sphere<CpuBackend>, SphereRankSolver<CpuBackend>),
    #[cfg(feature = "mpi")]
    CudaSphereRank(Sphere<CudaBackend>, SphereRankSolver<CudaBackend>),
}

impl Engine {
    /// Whether this is a rank of a distributed solve.
    fn on_ranks(&self) -> bool {
        match self {
            #[cfg(feature = "mpi")]
            Engine::CpuRank(..)
            | Engine::CudaRank(..)
            | Engine::CpuSphereRank(..)
            | Engine::CudaSphereRank(..) => true,
            _ => false,
        }
    }
}

/// A backend over the six panels of the sphere, owning it.
type Sphere<B> = Tiled<Box<B>>;

/// Runs `$body` with `$b` the backend and `$p` the persistent solver of either engine.
macro_rules! engine {
    ($e:expr, $b:ident, $p:ident => $body:expr) => {
        match $e {
            Engine::Cpu($b, $p) => $body,
            Engine::Cuda($b, $p) => {
                let $b = $b.as_ref();
                $body
            }
            Engine::CpuSphere($b, $p) => $body,
            Engine::CudaSphere($b, $p) => $body,
            #[cfg(feature = "mpi")]
            Engine::CpuRank($b, $p) => $body,
            #[cfg(feature = "mpi")]
            Engine::CudaRank($b, $p) => {
                let $b = $b.as_ref();
                $body
            }
            #[cfg(feature = "mpi")]
            Engine::CpuSphereRank($b, $p) => $body,
            #[cfg(feature = "mpi")]
            Engine::CudaSphereRank($b, $p) => $body,
        }
    };
}

/// Runs `$body` with `$g` the CUDA backend (for stream waits), `$b` the solver's backend and `$p`
/// the persistent solver of an engine on the GPU (one panel or the sphere); `$else` otherwise.
macro_rules! engine_cuda {
    ($e:expr, $g:ident, $b:ident, $p:ident => $body:expr, else $other:expr) => {
        match $e {
            Engine::Cuda($b, $p) => {
                let $b = $b.as_ref();
                let $g = $b;
                $body
            }
            Engine::CudaSphere($b, $p) => {
                let $g = $b.inner();
                $body
            }
            #[cfg(feature = "mpi")]
            Engine::CudaRank($b, $p) => {
                let $b = $b.as_ref();
                let $g = $b;
                $body
            }
            #[cfg(feature = "mpi")]
            Engine::CudaSphereRank($b, $p) => {
                let $g = $b.inner();
                $body
            }
            _ => $other,
        }
    };
}

/// A device array of the caller, as `__cuda_array_interface__` describes it.
struct Device {
    array: DeviceArray,
    readonly: bool,
    stream: Option<u64>,
}

/// Whether `obj` is a GPU array (has `__cuda_array_interface__`, or DLPack on a CUDA device).
fn is_device(obj: &Bound<'_, PyAny>) -> bool {
    if obj.hasattr("__cuda_array_interface__").unwrap_or(false) {
        return true;
    }
    // DLPack device type 2 is kDLCUDA.
    obj.call_method0("__dlpack_device__")
        .and_then(|d| d.extract::<(i32, i32)>())
        .is_ok_and(|(t, _)| t == 2)
}

/// The `__cuda_array_interface__` of a device array; a DLPack-only array is viewed through
/// `cupy.from_dlpack` (no copy).
fn interface<'py>(obj: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let obj = if obj.hasattr("__cuda_array_interface__")? {
        obj.clone()
    } else {
        let cupy = obj.py().import("cupy").map_err(|_| {
            PyValueError::new_err(
                "a DLPack device array without __cuda_array_interface__ needs CuPy to be viewed",
            )
        })?;
        cupy.call_method1("from_dlpack", (obj,))?
    };
    let cai = obj
        .getattr("__cuda_array_interface__")?
        .downcast_into::<PyDict>()?;
    Ok((obj, cai))
}

/// The value named `got` among `options` for the keyword `what`, or a ValueError listing them.
fn choose<T: Copy>(what: &str, got: &str, options: &[(&str, T)]) -> PyResult<T> {
    match options.iter().find(|(name, _)| *name == got) {
        Some((_, v)) => Ok(*v),
        None => {
            let names: Vec<String> = options.iter().map(|(n, _)| format!("'{n}'")).collect();
            Err(PyValueError::new_err(format!(
                "{what} must be one of {} (got {got:?})",
                names.join(", ")
            )))
        }
    }
}

impl Solver {
    /// Reads a device array's interface: shape (n, n, nz), float64, strides into i, j, k.
    fn device(&self, name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Device> {
        let (_, cai) = interface(obj)?;
        let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
            cai.get_item(k)?
                .ok_or_else(|| PyValueError::new_err(format!("{name}: no {k:?} in its interface")))
        };
        let shape: Vec<usize> = get("shape")?.extract()?;
        self.check_shape(name, &shape)?;
        let typestr: String = get("typestr")?.extract()?;
        if typestr != "<f8" {
            return Err(PyValueError::new_err(format!(
                "{name} has type {typestr:?}, strata needs float64 ('<f8')"
            )));
        }
        let (ptr, readonly): (u64, bool) = get("data")?.extract()?;
        let strides: Option<Vec<i64>> = cai
            .get_item("strides")?
            .map(|s| s.extract())
            .transpose()?
            .flatten();
        let [ny, nx, nz] = self.shape;
        // Python axes (y, x, z); strata's strides are of (i = x, j = y, k = z), in values.
        let [sy, sx, sz] = match strides {
            None => [(nx * nz) as i64, nz as i64, 1],
            Some(s) if s.len() == 3 && s.iter().all(|v| v % 8 == 0) => {
                [s[0] / 8, s[1] / 8, s[2] / 8]
            }
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "{name} has strides {s:?} (bytes), not whole float64 values"
                )))
            }
        };
        let _ = ny;
        let stream: Option<u64> = cai
            .get_item("stream")?
            .map(|s| s.extract::<Option<u64>>())
            .transpose()?
            .flatten();
        Ok(Device {
            // SAFETY: the exporter promises a live device allocation at `ptr` with these shape
            // and strides while the object lives (we hold it for the call); the backend checks
            // the address range before any kernel touches it.
            // On the sphere the panels are stacked along y: panel p starts n rows further.
            array: unsafe { DeviceArray::new(ptr, [sx, sy, sz]) }.with_panel_stride(nx as i64 * sy),
            readonly,
            stream,
        })
    }

    /// The device path of `solve`.
    fn solve_on_device<'py>(
        &mut self,
        py: Python<'py>,
        rhs: &Bound<'py, PyAny>,
        out: Option<Bound<'py, PyAny>>,
        x0: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = match out {
            Some(o) if is_device(&o) => o,
            Some(_) => {
                return Err(PyValueError::new_err(
                    "out must be a device array when rhs is one",
                ))
            }
            None => new_device_array(py, self.shape)?,
        };
        let r = self.device("rhs", rhs)?;
        let u = self.device("out", &out)?;
        if u.readonly {
            return Err(PyValueError::new_err("out is read-only"));
        }
        let x = match &x0 {
            Some(x) if is_device(x) => Some(self.device("x0", x)?),
            Some(_) => {
                return Err(PyValueError::new_err(
                    "x0 must be a device array when rhs is one",
                ))
            }
            None => None,
        };
        let mut all = vec![&r, &u];
        all.extend(x.as_ref());
        let x0 = x.as_ref().map(|d| &d.array);
        let info = engine_cuda!(&mut *self.engine, g, b, p => {
            wait(g, &all)?;
            py.detach(|| p.solve_device(b, &r.array, x0, &u.array)).map_err(to_py)?
        }, else return Err(on_cpu("rhs")));
        self.last = Some(info);
        Ok(out)
    }

    /// On one GPU, levels a new ω left to rebuild from host fields made on the device are made
    /// there again (`DeviceSolve::rebuild_pending`) before a solve or an apply would rebuild
    /// them on the host.
    fn rebuild_pending(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Engine::Cuda(b, p) = &mut *self.engine {
            let b = b.as_ref();
            py.detach(|| p.rebuild_pending(b)).map_err(to_py)?;
        }
        Ok(())
    }

    /// The values of a coefficient array (shape `fields_shape`), NumPy or device, in strata's
    /// order (a copy).
    fn host_values<'py>(
        &self,
        name: &str,
        a: &Bound<'py, PyAny>,
    ) -> PyResult<PyReadonlyArray3<'py, f64>> {
        let a = if is_device(a) {
            let (view, _) = interface(a)?;
            a.py().import("cupy")?.call_method1("asnumpy", (view,))?
        } else {
            a.clone()
        };
        let a: PyReadonlyArray3<'py, f64> = a.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "{name} must be a float64 array of shape {:?}",
                self.fields_shape
            ))
        })?;
        check_shape(name, a.shape(), self.fields_shape)?;
        Ok(a)
    }

    /// An error unless `shape` is the solution's and right-hand side's.
    fn check_shape(&self, name: &str, shape: &[usize]) -> PyResult<()> {
        check_shape(name, shape, self.shape)
    }
}

/// An error naming `name` unless its `shape` is `want`.
fn check_shape(name: &str, shape: &[usize], want: [usize; 3]) -> PyResult<()> {
    if shape != want {
        return Err(PyValueError::new_err(format!(
            "{name} has shape {shape:?}, the solver needs {want:?} (y, x, z)"
        )));
    }
    Ok(())
}

#[pymethods]
impl Solver {
    #[new]
    #[pyo3(signature = (n, nz, *, geometry="panel", cfl=8.4, omega=None, lambda_=1.0, height=0.01,
        delta=1.0, graded=false, solver="mg", levels=5, coarse_steps=2, rtol=1e-5, max_it=500,
        preconditioner="mg", restart=5, threads=None, backend="auto", device=0, smoother="jacobi",
        rho=2.0/3.0, precision="f64", sphere_stencil="nine-point", relaxation=None, comm=None))]
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
        backend: &str,
        device: usize,
        smoother: &str,
        rho: f64,
        precision: &str,
        sphere_stencil: &str,
        relaxation: Option<f64>,
        comm: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let sphere_stencil = choose(
            "sphere_stencil",
            sphere_stencil,
            &[
                ("nine-point", ::strata::problem::SphereStencil::NinePoint),
                ("two-point", ::strata::problem::SphereStencil::TwoPoint),
            ],
        )?;
        use ::strata::solver::{Precision, Smoother};
        let precision = choose(
            "precision",
            precision,
            &[("f64", Precision::F64), ("mixed", Precision::Mixed)],
        )?;
        let smoother = choose(
            "smoother",
            smoother,
            &[
                ("jacobi", Smoother::Jacobi),
                ("red-black", Smoother::RedBlack),
            ],
        )?;
        let cuda = match choose(
            "backend",
            backend,
            &[("auto", None), ("cpu", Some(false)), ("cuda", Some(true))],
        )? {
            Some(c) => c,
            None => strata_cuda::unavailable_reason().is_none(),
        };
        let geometry = choose(
            "geometry",
            geometry,
            &[
                ("panel", Geometry::Panel),
                ("box", Geometry::Box),
                ("sphere", Geometry::Sphere),
            ],
        )?;
        let pc = choose(
            "preconditioner",
            preconditioner,
            &[
                ("line", Preconditioner::Line),
                ("mg", Preconditioner::Multigrid),
            ],
        )?;
        let kind = choose(
            "solver",
            solver,
            &[
                ("cg", SolverKind::Cg),
                ("mg", SolverKind::Mg),
                ("mg-cg", SolverKind::MgCg),
                ("gcr", SolverKind::Gcr),
                ("bicgstab", SolverKind::BiCgStab),
            ],
        )?;
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
            sphere_stencil,
        };
        let cfg = SolverConfig::new(kind)
            .with_levels(levels)
            .with_coarse_steps(coarse_steps)
            .with_rtol(rtol)
            .with_max_it(max_it)
            .with_preconditioner(pc)
            .with_restart(restart)
            .with_smoother(smoother)
            .with_rho(rho)
            .with_precision(precision);
        let cfg = match relaxation {
            Some(w) => cfg.with_relaxation(w),
            None => cfg,
        };
        let sphere = geometry == Geometry::Sphere;
        if let Some(comm) = comm {
            let engine = on_ranks(py, &comm, cuda, device, threads, &p, &cfg)?;
            let (t, count) = engine!(&engine, _b, s => (s.block(), s.tiles().len()));
            let shape = [count * t.ny, t.nx, nz];
            return Ok(Self {
                engine: std::mem::ManuallyDrop::new(engine),
                shape,
                // The sphere's ranks take the whole sphere's coefficient fields.
                fields_shape: if sphere { [6 * n, n, nz] } else { shape },
                last: None,
            });
        }
        let engine = if cuda && sphere {
            let b = Tiled::new(Box::new(CudaBackend::new(device).map_err(to_py)?));
            let s = py
                .detach(|| PersistentSolver::sphere(&b, &p, &cfg))
                .map_err(to_py)?;
            Engine::CudaSphere(b, s)
        } else if sphere {
            let b = Tiled::new(Box::new(CpuBackend::new(threads).map_err(to_py)?));
            let s = py
                .detach(|| PersistentSolver::sphere(&b, &p, &cfg))
                .map_err(to_py)?;
            Engine::CpuSphere(b, s)
        } else if cuda {
            let b = Box::new(CudaBackend::new(device).map_err(to_py)?);
            let s = py
                .detach(|| PersistentSolver::new(b.as_ref(), &p, &cfg))
                .map_err(to_py)?;
            Engine::Cuda(b, s)
        } else {
            let b = CpuBackend::new(threads).map_err(to_py)?;
            let s = py
                .detach(|| PersistentSolver::new(&b, &p, &cfg))
                .map_err(to_py)?;
            Engine::Cpu(b, s)
        };
        Ok(Self {
            engine: std::mem::ManuallyDrop::new(engine),
            // The sphere's six panels stacked along y: a.reshape(6, n, n, nz)[p] is panel p.
            shape: [p.panels() * n, n, nz],
            fields_shape: [p.panels() * n, n, nz],
            last: None,
        })
    }

    /// solve(rhs, out=None, x0=None) -> array
    ///
    /// Solves A u = rhs (volume-integrated, shape (n, n, nz), float64). The solution goes to
    /// `out` if given (it may be `x0`: a model's warm start), else to a new array. With `x0` the
    /// solve starts there, else from zero. Non-convergence is not an exception: see `info`.
    ///
    /// NumPy arrays (C order) on either backend; on a GPU solver also device arrays (CuPy,
    /// PyTorch, any `__cuda_array_interface__` or DLPack array) of any strides, read and written
    /// on the device with no host round trip (a new `out` is then a CuPy array). A (nz, n, n)
    /// array `a` in x-fastest order passes as `a.transpose(1, 2, 0)`, without a copy.
    #[pyo3(signature = (rhs, out=None, x0=None))]
    fn solve<'py>(
        &mut self,
        py: Python<'py>,
        rhs: &Bound<'py, PyAny>,
        out: Option<Bound<'py, PyAny>>,
        x0: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.rebuild_pending(py)?;
        if is_device(rhs) {
            return self.solve_on_device(py, rhs, out, x0);
        }
        let rhs: PyReadonlyArray3<'py, f64> = rhs.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "rhs must be a float64 NumPy array of shape {:?}, or a device array",
                self.shape
            ))
        })?;
        let out: Option<Bound<'py, PyArray3<f64>>> = out
            .map(|o| o.downcast_into::<PyArray3<f64>>())
            .transpose()
            .map_err(|_| {
                PyValueError::new_err("out must be a float64 NumPy array when rhs is one")
            })?;
        let x0: Option<PyReadonlyArray3<'py, f64>> =
            x0.map(|x| x.extract()).transpose().map_err(|_| {
                PyValueError::new_err("x0 must be a float64 NumPy array when rhs is one")
            })?;
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
            let info = engine!(&mut *self.engine, b, p => py.detach(|| p.solve(b, rhs, u, warm)))
                .map_err(to_py)?;
            self.last = Some(info);
        }
        Ok(out.into_any())
    }

    /// apply(x) -> array: A x with the solver's operator (to check a residual); a device array
    /// for a device `x` (on a GPU solver), else a NumPy array.
    fn apply<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.rebuild_pending(py)?;
        if is_device(x) {
            let xa = self.device("x", x)?;
            let y = new_device_array(py, self.shape)?;
            let ya = self.device("y", &y)?;
            engine_cuda!(&mut *self.engine, g, b, p => {
                wait(g, &[&xa])?;
                py.detach(|| p.apply_device(b, &xa.array, &ya.array)).map_err(to_py)?
            }, else return Err(on_cpu("x")));
            return Ok(y);
        }
        let x: PyReadonlyArray3<'py, f64> = x.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "x must be a float64 array of shape {:?}",
                self.shape
            ))
        })?;
        self.check_shape("x", x.shape())?;
        let x = x
            .as_slice()
            .map_err(|_| PyValueError::new_err("x must be C-contiguous"))?;
        let y = PyArray3::zeros(py, self.shape, false);
        {
            let mut guard = y.readwrite();
            let ys = guard.as_slice_mut().expect("a new array is contiguous");
            engine!(&mut *self.engine, b, p => py.detach(|| p.apply(b, x, ys))).map_err(to_py)?;
        }
        Ok(y.into_any())
    }

    /// set_coefficients(kx=None, ky=None, kz=None, beta=None, xi=None)
    ///
    /// Replaces the coefficient fields of the general operator (arrays of shape (n, n, nz); None:
    /// the model problem's value) and the advection vector `xi` (a tuple of three arrays, or
    /// None). All None: back to the model problem. NumPy or device arrays. On one panel or box
    /// of a GPU solver, device arrays stay on the GPU: checked, averaged onto the coarse levels
    /// and made into every level's operator there (nothing copied to the host: fast enough for
    /// every time step; after set_omega they must be set again before the next solve, as strata
    /// keeps no copy). Otherwise (NumPy arrays, the sphere) the fields are prepared on the host
    /// (set-up speed).
    #[pyo3(signature = (kx=None, ky=None, kz=None, beta=None, xi=None))]
    fn set_coefficients<'py>(
        &mut self,
        py: Python<'py>,
        kx: Option<Bound<'py, PyAny>>,
        ky: Option<Bound<'py, PyAny>>,
        kz: Option<Bound<'py, PyAny>>,
        beta: Option<Bound<'py, PyAny>>,
        xi: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    ) -> PyResult<()> {
        let (panels, n, nz) = engine!(&*self.engine, _b, p => {
            let q = p.problem();
            (q.panels(), q.n, q.nz)
        });
        let none = kx.is_none() && ky.is_none() && kz.is_none() && beta.is_none() && xi.is_none();
        let (xi_x, xi_y, xi_z) = match &xi {
            Some((x, y, z)) => (Some(x.clone()), Some(y.clone()), Some(z.clone())),
            None => (None, None, None),
        };
        let given = [
            (&kx, "kx"),
            (&ky, "ky"),
            (&kz, "kz"),
            (&beta, "beta"),
            (&xi_x, "xi[0]"),
            (&xi_y, "xi[1]"),
            (&xi_z, "xi[2]"),
        ];
        let on_device = !none
            && matches!(*self.engine, Engine::Cuda(..))
            && given.iter().all(|(a, _)| a.as_ref().is_none_or(is_device));
        if on_device {
            let mut devices = Vec::new();
            let mut arrays = [None; 7];
            for (slot, (a, name)) in arrays.iter_mut().zip(given) {
                if let Some(a) = a {
                    let d = self.device(name, a)?;
                    *slot = Some(d.array);
                    devices.push(d);
                }
            }
            let all: Vec<&Device> = devices.iter().collect();
            let fields = arrays.each_ref().map(Option::as_ref);
            engine_cuda!(&mut *self.engine, g, b, p => {
                wait(g, &all)?;
                py.detach(|| p.set_coefficients_device(b, fields)).map_err(to_py)?
            }, else return Err(on_cpu("kx")));
            return Ok(());
        }
        let delta = engine!(&*self.engine, _b, p => p.problem().delta);
        let coefficients = if none {
            None
        } else {
            // Each array read in place where it is C-contiguous (copied otherwise), then copied
            // into the solver's fields by the host's threads, the fields not given filled.
            let mut read = Vec::new();
            for (slot, (a, name)) in given.iter().enumerate() {
                if let Some(a) = a {
                    read.push((slot, self.host_values(name, a)?));
                }
            }
            let mut views = Vec::with_capacity(read.len());
            for (slot, a) in &read {
                let v = match a.as_slice() {
                    Ok(v) => std::borrow::Cow::Borrowed(v),
                    Err(_) => std::borrow::Cow::Owned(
                        a.to_vec()
                            .map_err(|e| PyValueError::new_err(e.to_string()))?,
                    ),
                };
                views.push((*slot, v));
            }
            let mut fields: [Option<&[f64]>; 7] = [None; 7];
            for (slot, v) in &views {
                fields[*slot] = Some(v.as_ref());
            }
            let block = engine!(&*self.engine, _b, p => p.block());
            let c = if self.engine.on_ranks() && panels == 1 {
                // A rank gives its block's fields; the ranks exchange the cells beside each block.
                Coefficients::for_block(block, nz, delta, fields)
            } else {
                py.detach(|| Coefficients::from_given(panels, n, nz, delta, fields))
            };
            Some(c.map_err(to_py)?)
        };
        // On one GPU the levels are made on the device from an uploaded copy (the same operator,
        // a small part of the time; the host path where the device has no room).
        if let Engine::Cuda(b, p) = &mut *self.engine {
            let b = b.as_ref();
            return py
                .detach(|| p.set_coefficients_host(b, coefficients))
                .map(|_| ())
                .map_err(to_py);
        }
        engine!(&mut *self.engine, b, p => py.detach(|| p.update_coefficients(b, coefficients)))
            .map_err(to_py)
    }

    /// set_omega(omega): a new time step size, everything else kept.
    fn set_omega(&mut self, py: Python<'_>, omega: f64) -> PyResult<()> {
        engine!(&mut *self.engine, b, p => py.detach(|| p.update_omega(b, omega))).map_err(to_py)
    }

    /// Seconds of each phase of the solver's creation (a dict: checks, stencils, operators and
    /// fields, communicator and fields).
    #[getter]
    fn setup<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, s) in engine!(&*self.engine, _b, p => p.setup_phases()) {
            d.set_item(*name, *s)?;
        }
        Ok(d)
    }

    /// The backend the solver runs on: "cpu" or "cuda".
    #[getter]
    fn backend(&self) -> &'static str {
        match *self.engine {
            Engine::Cpu(..) | Engine::CpuSphere(..) => "cpu",
            Engine::Cuda(..) | Engine::CudaSphere(..) => "cuda",
            #[cfg(feature = "mpi")]
            Engine::CpuRank(..) | Engine::CpuSphereRank(..) => "cpu",
            #[cfg(feature = "mpi")]
            Engine::CudaRank(..) | Engine::CudaSphereRank(..) => "cuda",
        }
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

    /// This process's part of the horizontal grid, (i0, j0, nx, ny): columns i0 .. i0 + nx (x)
    /// and rows j0 .. j0 + ny (y) of the n x n panel or box. The whole grid, (0, 0, n, n),
    /// without `comm`; on ranks every array is this block's, of shape (ny, nx, nz):
    /// `a[j0:j0 + ny, i0:i0 + nx, :]` of the whole field.
    #[getter]
    fn block(&self) -> (usize, usize, usize, usize) {
        let b = engine!(&*self.engine, _b, p => p.block());
        (b.i0, b.j0, b.nx, b.ny)
    }

    /// This process's tiles in the order of its arrays, each (panel, i0, j0, nx, ny): on the
    /// sphere the six panels (panel 0 .. 5, whole), or on ranks this rank's panels or blocks of
    /// panels, stacked along y in every array (tile t is rows t * ny .. (t + 1) * ny); on a
    /// panel or box the one block, with panel None.
    #[getter]
    fn tiles(&self) -> Vec<(Option<usize>, usize, usize, usize, usize)> {
        engine!(&*self.engine, _b, p => p.tiles()
            .iter()
            .map(|b| (b.panel, b.i0, b.j0, b.nx, b.ny))
            .collect())
    }

    /// The shape of every array: (n, n, nz) = (y, x, z); on the sphere (6 n, n, nz), the six
    /// panels stacked along y (`a.reshape(6, n, n, nz)[p]` is panel p, no copy). On ranks the
    /// shape of this rank's tiles stacked along y (`tiles`): (ny, nx, nz) for the block of a
    /// panel or box; the coefficient fields of a sphere's ranks are the whole sphere's.
    #[getter]
    fn shape(&self) -> (usize, usize, usize) {
        (self.shape[0], self.shape[1], self.shape[2])
    }

    fn __repr__(&self) -> String {
        let (p, kind) = engine!(&*self.engine, _b, s => (s.problem().clone(), s.config().kind));
        let block = if self.engine.on_ranks() {
            format!(", tiles={:?}", self.tiles())
        } else {
            String::new()
        };
        format!(
            "strata.Solver(n={}, nz={}, solver={:?}, backend={:?}{block})",
            p.n,
            p.nz,
            kind.name(),
            self.backend()
        )
    }
}

/// The engine of one rank of a distributed solve over `comm` (an mpi4py communicator), as the
/// C API's `strata_solver_create_mpi`: on a panel or box the most nearly square rank grid, every
/// multigrid level split alike; on the sphere whole panels or blocks of every panel. Collective.
#[allow(clippy::too_many_arguments)]
fn on_ranks(
    py: Python<'_>,
    comm: &Bound<'_, PyAny>,
    cuda: bool,
    device: usize,
    threads: Option<usize>,
    p: &ProblemParams,
    cfg: &SolverConfig,
) -> PyResult<Engine> {
    #[cfg(feature = "mpi")]
    {
        use strata_mpi::mpi::traits::Communicator;
        let world = ranks::duplicate(comm)?;
        if p.geometry == Geometry::Sphere {
            // Whole panels up to six ranks, blocks of every panel beyond (as the C API).
            p.validate().map_err(to_py)?;
            let (size, rank) = (world.size() as usize, world.rank() as usize);
            let tiles = ::strata::grid::sphere::rank_tiles(p.n, cfg.num_levels(), size, rank)
                .map_err(to_py)?;
            let k = p.n / tiles[0].nx;
            let engine = if cuda {
                let comm = strata_mpi::SphereMpiComm::new(world, k);
                let b = Tiled::new(Box::new(CudaBackend::new(device).map_err(to_py)?));
                let s = PersistentSolver::with_tiles(&b, comm, p, &tiles, cfg).map_err(to_py)?;
                Engine::CudaSphereRank(b, ranks::Ranks(s))
            } else {
                let comm = strata_mpi::SphereMpiComm::new(world, k);
                let b = Tiled::new(Box::new(CpuBackend::new(threads).map_err(to_py)?));
                let s = PersistentSolver::with_tiles(&b, comm, p, &tiles, cfg).map_err(to_py)?;
                Engine::CpuSphereRank(b, ranks::Ranks(s))
            };
            return Ok(engine);
        }
        let grid = ::strata::grid::RankGrid::choose(world.size() as usize);
        let rank = world.rank() as usize;
        let block = cfg.validate_for(p.n, grid).map_err(to_py)?.fine_block(rank);
        let engine = if cuda {
            let comm = strata_mpi::MpiComm::new(world, grid).map_err(to_py)?;
            let b = Box::new(CudaBackend::new(device).map_err(to_py)?);
            let s = PersistentSolver::with_comm(b.as_ref(), comm, p, block, cfg).map_err(to_py)?;
            Engine::CudaRank(b, ranks::Ranks(s))
        } else {
            let comm = strata_mpi::MpiComm::new(world, grid).map_err(to_py)?;
            let b = CpuBackend::new(threads).map_err(to_py)?;
            let s = PersistentSolver::with_comm(&b, comm, p, block, cfg).map_err(to_py)?;
            Engine::CpuRank(b, ranks::Ranks(s))
        };
        let _ = py;
        Ok(engine)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (py, comm, cuda, device, threads, p, cfg);
        Err(ranks::unavailable())
    }
}

/// The error for a device array given to a solver on the CPU.
fn on_cpu(name: &str) -> PyErr {
    PyValueError::new_err(format!(
        "{name} is a GPU array, but this solver runs on the CPU: create it with backend='cuda' \
         (or pass NumPy arrays)"
    ))
}

/// A new CuPy float64 array of `shape` (the output of a device solve without `out`).
fn new_device_array<'py>(py: Python<'py>, shape: [usize; 3]) -> PyResult<Bound<'py, PyAny>> {
    let cupy = py.import("cupy").map_err(|_| {
        PyValueError::new_err("pass out= (a device array): CuPy is not installed to make one")
    })?;
    cupy.call_method1("empty", ((shape[0], shape[1], shape[2]), "float64"))
}

/// Waits for the work the exporters queued on the arrays' streams (`__cuda_array_interface__`
/// version 3: None or 1, the legacy default stream, need nothing: the backend's stream is
/// ordered with it).
fn wait(b: &CudaBackend, arrays: &[&Device]) -> PyResult<()> {
    for d in arrays {
        if let Some(s) = d.stream.filter(|&s| s != 1) {
            // SAFETY: the exporter names a live stream of the array's device (or 2, the
            // per-thread default stream).
            unsafe { b.wait_for_stream(s) }.map_err(to_py)?;
        }
    }
    Ok(())
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
