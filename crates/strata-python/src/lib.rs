//! Python bindings of strata: `strata.Solver`, the persistent solver over NumPy arrays on the
//! host and CuPy (or any `__cuda_array_interface__` / DLPack) arrays on the GPU, built with PyO3
//! (abi3) and maturin (`pip install ./python`). Arrays have shape `(n, n, nz)` = `(y, x, z)`
//! (on the sphere `(6 n, n, nz)`: the six panels stacked along y),
//! float64; NumPy arrays in C order (strata's own layout) pass without a copy, device arrays in
//! any strides without a host round trip. The GIL is released while strata solves; every strata
//! error is a Python exception (`ValueError` for bad arguments, `MemoryError`, `RuntimeError`
//! otherwise).

use ::strata::names::{BackendKind, Choice, HaloPath};
use ::strata::problem::{Coefficients, Geometry, Grading, ProblemParams, SphereStencil};
use ::strata::solver::{Precision, Preconditioner, Smoother, SolveInfo, SolverConfig, SolverKind};
use ::strata::StrataError;
use held::Held;
use numpy::{PyArray1, PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use strata_cuda::{CudaBackend, DeviceArray};
use strata_session::Place;

mod held;
mod ranks;
mod shapes;

use shapes::Shape;

/// A matrix in compressed sparse rows as NumPy arrays: (indptr, indices, data).
type Csr<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
);

pyo3::create_exception!(
    strata,
    NotConvergedError,
    pyo3::exceptions::PyRuntimeError,
    "A solve did not converge and the solver was made with error_if_not_converged=True (the \
     solution array holds the last iterate)."
);

fn to_py(e: StrataError) -> PyErr {
    match e {
        StrataError::NotConverged { .. } => NotConvergedError::new_err(e.to_string()),
        StrataError::InvalidParameter { .. } => PyValueError::new_err(e.to_string()),
        StrataError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A strata solver, set up once for a problem and solved every time step.
///
/// Solver(n, nz, *, geometry="panel", cfl=8.4, omega=None, lambda_=1.0, height=0.01, delta=1.0,
///        graded=False, solver="mg", levels=None, coarse_steps=2, rtol=1e-5, max_it=500,
///        preconditioner="mg", restart=5, threads=None, backend="auto", device=0,
///        smoother=None, rho=2/3, precision=None, sphere_stencil="nine-point",
///        relaxation=None, paper=False, prolongate_halos=True, comm=None, halo="auto",
///        error_if_not_converged=False, project_rhs=False, boundary="x=dirichlet,y=dirichlet",
///        coarse_solve="smooth", coarse_rtol=1e-3, orography=None, pre_smooth=None,
///        post_smooth=None)
///
/// geometry is "panel" (one cubed-sphere panel with walls), "box" or "sphere" (the whole globe:
/// six n x n panels, every array of shape (6 n, n, nz), the panels stacked along y).
/// sphere_stencil is the sphere's horizontal stencil: "nine-point" (consistent with the sphere's
/// Laplacian, second order) or "two-point" (the paper's fluxes, not consistent on the sphere).
/// smoother is the multigrid smoother: "jacobi" (the paper's block-Jacobi line relaxation,
/// damped by rho; rho=0.8 takes fewer cycles) or "red-black" (line Gauss-Seidel, its half-sweeps
/// over-relaxed by `relaxation`, in (0, 2); None: the library's 1.15, which takes red-black mg
/// from 5 cycles to 4; mg-cg's symmetric cycle uses 1); None: the solver's default, red-black.
/// precision is "f64", or "mixed": the outer iteration and its stopping test in fp64, the
/// multigrid preconditioner's fields in fp32 (mg, mg-cg, and gcr/bicgstab with preconditioner
/// "mg"; the answer meets rtol on the fp64 residual as in "f64"); None: the solver's default,
/// mixed wherever there is a multigrid cycle, f64 for cg and preconditioner "line".
/// levels is the number of multigrid levels, exactly (deeper only for a singular problem); None:
/// 5, as many as the grid allows where the coarsest of 5 is too strongly coupled for its
/// smoothing to solve it (delta = 0 or small, long time steps), the levels the grid has where it
/// halves fewer times, and the coarsest level solved by CG where smoothing is far from solving it.
/// paper=True starts from the paper's configuration instead (jacobi and f64 for every solver);
/// smoother and precision, when given, still apply.
/// prolongate_halos=False makes the ranks' multigrid cycle exchange halos after every
/// prolongation, as the paper's does, instead of prolongating into them (the same iterates).
/// rtol stops a solve when |f - A u| < rtol |f| (2-norms of the volume-integrated fields; from a
/// zero guess the same as |r| / |r0| < rtol; a warm start must meet it too).
/// error_if_not_converged=True makes a solve that did not converge raise
/// strata.NotConvergedError (a RuntimeError; the solution array holds the last iterate), as
/// PETSc's -ksp_error_if_not_converged; by default it returns and `converged` says so.
/// pre_smooth and post_smooth are the smoothing steps before and after the coarse correction on
/// every multigrid level but the coarsest, 1 to 16 (mg-cg's symmetric cycle needs them equal,
/// and one given sets both); None: the solver's default (mg-cg 2 and 2; mg 2 and 2 with
/// horizontally anisotropic coefficient fields from 512² columns, the Rust crate's
/// strata::solver::steps_for_operator; otherwise 1 and 1; docs/PERFORMANCE.md).
/// coarse_solve is how the coarsest multigrid level is solved: "smooth" (coarse_steps smoothing
/// steps, the paper's) or "cg" (preconditioned CG to coarse_rtol, in (0, 1): the cycle count
/// then no longer depends on levels or coarse_steps; symmetric operators only).
/// boundary gives the lateral conditions of the box and the panel per direction:
/// "x=COND,y=COND" or one COND for both, each "dirichlet" (u = 0, the paper's), "neumann" (zero
/// flux) or "periodic" (the box only); docs/MODEL.md section 20.
/// orography: the ground height under every column, a float64 array of shape (n, n) = (y, x),
/// or (6, n, n) = (panel, y, x) on the sphere, with values on [0, height), for
/// terrain-following coordinates (docs/MODEL.md section 23); None: flat ground.
/// project_rhs=True: for a singular problem (delta=0 on the sphere, or on a box or panel with no
/// Dirichlet side, whose null space is the constants) the right-hand side's component along the constants is removed before each
/// solve; by default a right-hand side whose component is above rtol of its norm raises
/// ValueError. The answer has zero volume-weighted mean; info["incompatible"] gives the
/// component as found (relative to the right-hand side's norm).
/// solver is one of "cg", "mg", "mg-cg", "gcr", "bicgstab"; preconditioner ("line" or "mg") is
/// that of gcr and bicgstab. backend is "auto" (the GPU where one is usable), "reference" (the
/// serial reference backend, for checking), "cpu" (all cores
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
/// (backend="cuda", `device` its node-local GPU) exchanges halos by NCCL between device buffers
/// where the package has it (built with `--features nccl`) and finds libnccl.so, else through
/// host memory (halo="auto", the default; "nccl" or "mpi" to choose; one GPU per rank).
#[pyclass(module = "strata")]
struct Solver {
    /// Dropped by hand (`Drop for Solver`): a rank's is leaked once MPI is finalised.
    engine: std::mem::ManuallyDrop<Held>,
    /// The shape of the solution and right-hand side arrays.
    shape: Shape,
    /// The shape of the coefficient arrays: `shape`, but the whole sphere's on its ranks.
    fields_shape: Shape,
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

/// A device array of the caller, as `__cuda_array_interface__` describes it.
struct Device {
    array: DeviceArray,
    readonly: bool,
    stream: Option<u64>,
    /// Whether it is in the sphere's (tile, y, x, z) layout (not the deprecated stacked one).
    four: bool,
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

/// The value of the choice named `got`, or a ValueError listing the names.
fn choose<T: Choice>(got: &str) -> PyResult<T> {
    T::parse(got).map_err(to_py)
}

/// A count given as a Python int: a negative one is a ValueError naming the parameter, where an
/// unsigned argument would raise an OverflowError that names none.
fn count(name: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| {
        to_py(StrataError::invalid(
            name,
            format!("must not be negative (got {v})"),
        ))
    })
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
        let four = self.shape.check(obj.py(), name, &shape)?;
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
        let [stacked_y, nx, nz] = self.shape.stacked;
        // Rows of one tile (on the sphere), of the whole array otherwise.
        let ny = stacked_y / self.shape.tiles.unwrap_or(1);
        // Python axes ([tile,] y, x, z); strata's strides are of (i = x, j = y, k = z) and of the
        // tiles, in values. Contiguous: the C order of the array's shape.
        let c_order: Vec<i64> = if four {
            vec![(ny * nx * nz) as i64, (nx * nz) as i64, nz as i64, 1]
        } else {
            vec![(nx * nz) as i64, nz as i64, 1]
        };
        let s: Vec<i64> = match strides {
            None => c_order,
            Some(s) if s.len() == c_order.len() && s.iter().all(|v| v % 8 == 0) => {
                s.iter().map(|v| v / 8).collect()
            }
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "{name} has strides {s:?} (bytes), not whole float64 values"
                )))
            }
        };
        let (st, [sy, sx, sz]) = match s.as_slice() {
            [st, sy, sx, sz] => (*st, [*sy, *sx, *sz]),
            [sy, sx, sz] => (ny as i64 * sy, [*sy, *sx, *sz]),
            _ => unreachable!("strides of the array's rank"),
        };
        let stream: Option<u64> = cai
            .get_item("stream")?
            .map(|s| s.extract::<Option<u64>>())
            .transpose()?
            .flatten();
        Ok(Device {
            // SAFETY: the exporter promises a live device allocation at `ptr` with these shape
            // and strides while the object lives (we hold it for the call); the backend checks
            // the address range before any kernel touches it.
            // On the sphere tile t starts `st` values further (its own axis, or ny rows of the
            // deprecated stacked layout).
            array: unsafe { DeviceArray::new(ptr, [sx, sy, sz]) }.with_panel_stride(st),
            readonly,
            stream,
            four,
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
        let r = self.device("rhs", rhs)?;
        let out = match out {
            Some(o) if is_device(&o) => o,
            Some(_) => {
                return Err(PyValueError::new_err(
                    "out must be a device array when rhs is one",
                ))
            }
            None => new_device_array(py, &self.shape.layout(r.four))?,
        };
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
        let h = self.gpu("rhs", &all)?;
        let info = py
            .detach(|| h.on_device(|d| d.solve_device(&r.array, x0, &u.array)))
            .map_err(to_py)?;
        self.last = Some(info);
        Ok(out)
    }

    /// On one GPU, levels a new ω left to rebuild from host fields made on the device are made
    /// there again (`DeviceSolve::rebuild_pending`) before a solve or an apply would rebuild
    /// them on the host.
    fn rebuild_pending(&mut self, py: Python<'_>) -> PyResult<()> {
        let h = &mut *self.engine;
        py.detach(|| h.rebuild_pending()).map_err(to_py)
    }

    /// The solver handle of a solver on the GPU, after the work queued on the streams of
    /// `arrays` (the first named `name`); an error for a solver on the CPU.
    fn gpu(&mut self, name: &str, arrays: &[&Device]) -> PyResult<&mut Held> {
        let h = &mut *self.engine;
        match h.device() {
            Some(d) => wait(d.cuda(), arrays)?,
            None => return Err(on_cpu(name)),
        }
        Ok(h)
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
        let (a, _) = self.fields_shape.stacked_view(name, &a)?;
        let a: PyReadonlyArray3<'py, f64> = a.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "{name} must be a float64 array of shape {:?}",
                self.fields_shape.python()
            ))
        })?;
        check_shape(name, a.shape(), self.fields_shape.stacked)?;
        Ok(a)
    }

    /// An error unless `shape` (of an array in the stacked layout) is the solution's and
    /// right-hand side's.
    /// `op(x, y)` on a host array `x` of the solver's shape into a new array of that shape (in
    /// the caller's layout): apply's and precondition's host path.
    fn host_map<'py>(
        &mut self,
        py: Python<'py>,
        name: &str,
        x: &Bound<'py, PyAny>,
        op: impl FnOnce(&mut Held, &[f64], &mut [f64]) -> ::strata::Result<()> + Send,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (x, four) = self.shape.stacked_view(name, x)?;
        let x: PyReadonlyArray3<'py, f64> = x.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "{name} must be a float64 array of shape {:?}",
                self.shape.python()
            ))
        })?;
        self.check_shape(name, x.shape())?;
        let x = x
            .as_slice()
            .map_err(|_| PyValueError::new_err(format!("{name} must be C-contiguous")))?;
        let y = PyArray3::zeros(py, self.shape.stacked, false);
        {
            let mut guard = y.readwrite();
            let ys = guard.as_slice_mut().expect("a new array is contiguous");
            let h = &mut *self.engine;
            py.detach(|| op(h, x, ys)).map_err(to_py)?;
        }
        self.shape.view(y.into_any(), four)
    }

    fn check_shape(&self, name: &str, shape: &[usize]) -> PyResult<()> {
        check_shape(name, shape, self.shape.stacked)
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
        delta=1.0, graded=false, solver="mg", levels=None, coarse_steps=2, rtol=1e-5, max_it=500,
        preconditioner="mg", restart=5, threads=None, backend="auto", device=0, smoother=None,
        rho=2.0/3.0, precision=None, sphere_stencil="nine-point", relaxation=None, paper=false,
        prolongate_halos=true, comm=None, halo="auto", error_if_not_converged=false,
        project_rhs=false, boundary="x=dirichlet,y=dirichlet", coarse_solve="smooth",
        coarse_rtol=1e-3, orography=None, pre_smooth=None, post_smooth=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        n: i64,
        nz: i64,
        geometry: &str,
        cfl: f64,
        omega: Option<f64>,
        lambda_: f64,
        height: f64,
        delta: f64,
        graded: bool,
        solver: &str,
        levels: Option<i64>,
        coarse_steps: i64,
        rtol: f64,
        max_it: i64,
        preconditioner: &str,
        restart: i64,
        threads: Option<i64>,
        backend: &str,
        device: i64,
        smoother: Option<&str>,
        rho: f64,
        precision: Option<&str>,
        sphere_stencil: &str,
        relaxation: Option<f64>,
        paper: bool,
        prolongate_halos: bool,
        comm: Option<Bound<'_, PyAny>>,
        halo: &str,
        error_if_not_converged: bool,
        project_rhs: bool,
        boundary: &str,
        coarse_solve: &str,
        coarse_rtol: f64,
        orography: Option<Bound<'_, PyAny>>,
        pre_smooth: Option<i64>,
        post_smooth: Option<i64>,
    ) -> PyResult<Self> {
        let (n, nz) = (count("n", n)?, count("nz", nz)?);
        let levels = levels.map(|l| count("levels", l)).transpose()?;
        let (coarse_steps, max_it) = (
            count("coarse_steps", coarse_steps)?,
            count("max_it", max_it)?,
        );
        let (restart, device) = (count("restart", restart)?, count("device", device)?);
        let given = |name: &str, v: Option<i64>| v.map(|v| count(name, v)).transpose();
        let threads = given("threads", threads)?;
        let (pre_smooth, post_smooth) = (
            given("pre_smooth", pre_smooth)?,
            given("post_smooth", post_smooth)?,
        );
        let geometry: Geometry = choose(geometry)?;
        let orography = orography
            .map(|a| shapes::orography(&a, geometry.panels(), n))
            .transpose()?
            .map(std::sync::Arc::new);
        let coarse_solve: strata::solver::CoarseSolve = choose(coarse_solve)?;
        let boundaries = strata::grid::Boundaries::parse(boundary).map_err(to_py)?;
        let sphere_stencil: SphereStencil = choose(sphere_stencil)?;
        let precision: Option<Precision> = precision.map(choose).transpose()?;
        let smoother: Option<Smoother> = smoother.map(choose).transpose()?;
        let backend: BackendKind = choose(backend)?;
        let pc: Preconditioner = choose(preconditioner)?;
        let kind: SolverKind = choose(solver)?;
        let halo: HaloPath = choose(halo)?;
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
            boundaries,
            orography,
        };
        let cfg = if paper {
            SolverConfig::paper(kind)
        } else {
            SolverConfig::new(kind)
        };
        let cfg = match levels {
            Some(l) => cfg.with_levels(l),
            None => cfg,
        };
        let cfg = cfg
            .with_coarse_steps(coarse_steps)
            .with_rtol(rtol)
            .with_max_it(max_it)
            .with_preconditioner(pc)
            .with_restart(restart)
            .with_rho(rho)
            .with_prolongated_halos(prolongate_halos)
            .with_error_if_not_converged(error_if_not_converged)
            .with_project_rhs(project_rhs)
            .with_coarse_solve(coarse_solve, coarse_rtol);
        let cfg = match smoother {
            Some(s) => cfg.with_smoother(s),
            None => cfg,
        };
        let cfg = match precision {
            Some(p) => cfg.with_precision(p),
            None => cfg,
        };
        let cfg = match relaxation {
            Some(w) => cfg.with_relaxation(w),
            None => cfg,
        };
        let cfg = cfg.with_given_smoothing_steps(pre_smooth, post_smooth);
        let place = move || {
            Place::new(backend)
                .with_threads(threads)
                .with_device(device)
                .with_halo(halo)
        };
        if let Some(comm) = comm {
            let engine = on_ranks(&comm, place(), &p, &cfg)?;
            let (t, count) = (engine.block(), engine.tiles().len());
            // A rank of a panel or box takes its block's coefficient fields, the sphere's ranks
            // the whole sphere's.
            let (shape, fields_shape) = if p.geometry.closed() {
                (
                    Shape::tiles(count, t.ny, t.nx, nz),
                    Shape::tiles(6, n, n, nz),
                )
            } else {
                let block = Shape::plain([t.ny, t.nx, nz]);
                (block, block)
            };
            return Ok(Self {
                engine: std::mem::ManuallyDrop::new(engine),
                shape,
                fields_shape,
                last: None,
            });
        }
        let engine = py
            .detach(|| strata_session::open(&p, &cfg, place()).map(Held))
            .map_err(to_py)?;
        // The sphere's six panels, (panel, y, x, z) as in the files and the C API.
        let shape = if p.geometry.closed() {
            Shape::tiles(p.panels(), n, n, nz)
        } else {
            Shape::plain([n, n, nz])
        };
        Ok(Self {
            engine: std::mem::ManuallyDrop::new(engine),
            shape,
            fields_shape: shape,
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
        let given_out = out.clone();
        let (rhs, four) = self.shape.stacked_view("rhs", rhs)?;
        let rhs: PyReadonlyArray3<'py, f64> = rhs.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "rhs must be a float64 NumPy array of shape {:?}, or a device array",
                self.shape.python()
            ))
        })?;
        let out = out
            .map(|o| self.shape.stacked_view("out", &o).map(|v| v.0))
            .transpose()?;
        let out: Option<Bound<'py, PyArray3<f64>>> = out
            .map(|o| o.downcast_into::<PyArray3<f64>>())
            .transpose()
            .map_err(|_| {
                PyValueError::new_err("out must be a float64 NumPy array when rhs is one")
            })?;
        let x0 = x0
            .map(|x| self.shape.stacked_view("x0", &x).map(|v| v.0))
            .transpose()?;
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
            None => PyArray3::zeros(py, self.shape.stacked, false),
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
            let h = &mut *self.engine;
            let info = py.detach(|| h.solve(rhs, u, warm)).map_err(to_py)?;
            self.last = Some(info);
        }
        // The caller's own `out` (the same object), else the new array as Python sees it.
        match given_out {
            Some(o) => Ok(o),
            None => self.shape.view(out.into_any(), four),
        }
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
            let y = new_device_array(py, &self.shape.layout(xa.four))?;
            let ya = self.device("y", &y)?;
            let h = self.gpu("x", &[&xa])?;
            py.detach(|| h.on_device(|d| d.apply_device(&xa.array, &ya.array)))
                .map_err(to_py)?;
            return Ok(y);
        }
        self.host_map(py, "x", x, |h, x, y| h.apply(x, y))
    }

    /// precondition(r) -> array: z = P r, the solver's preconditioner applied once as its own
    /// iteration applies it (mg-cg's symmetric V-cycle, mg's cycle from zero, cg's line
    /// relaxation, gcr's and bicgstab's configured one): for the Krylov method of another
    /// library (a petsc4py PCSHELL: examples/petsc/ksp.py). NumPy arrays.
    fn precondition<'py>(
        &mut self,
        py: Python<'py>,
        r: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if is_device(r) {
            return Err(PyValueError::new_err(
                "precondition takes NumPy arrays (copy a device array to the host first)",
            ));
        }
        self.rebuild_pending(py)?;
        self.host_map(py, "r", r, |h, r, z| h.precondition(r, z))
    }

    /// matrix() -> (indptr, indices, data): the solver's operator (with its coefficient fields
    /// and ω) in compressed sparse rows, rows numbered as the arrays' flattened order (z
    /// fastest): `scipy.sparse.csr_matrix((data, indices, indptr))`, or a PETSc AIJ matrix.
    /// One process only.
    fn matrix<'py>(&self, py: Python<'py>) -> PyResult<Csr<'py>> {
        if self.engine.on_ranks() {
            return Err(PyValueError::new_err(
                "matrix() assembles the operator of a solver of one process, not of ranks",
            ));
        }
        let m = strata::matrix::assemble(self.engine.problem()).map_err(to_py)?;
        let mut indptr = vec![0i64; m.size + 1];
        for &r in &m.rows {
            indptr[r + 1] += 1;
        }
        for i in 0..m.size {
            indptr[i + 1] += indptr[i];
        }
        let indices: Vec<i64> = m.cols.iter().map(|&c| c as i64).collect();
        Ok((
            PyArray1::from_vec(py, indptr),
            PyArray1::from_vec(py, indices),
            PyArray1::from_vec(py, m.values),
        ))
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
        let (panels, n, nz) = {
            let q = self.engine.problem();
            (q.panels(), q.n, q.nz)
        };
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
            && !self.engine.on_ranks()
            && panels == 1
            && self.engine.backend() == BackendKind::Cuda
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
            let h = self.gpu("kx", &all)?;
            py.detach(|| h.on_device(|d| d.set_coefficients_device(fields)))
                .map_err(to_py)?;
            return Ok(());
        }
        let delta = self.engine.problem().delta;
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
            let c = if let Some(block) = self.engine.block_fields() {
                // A rank gives its block's fields; the ranks exchange the cells beside each block.
                Coefficients::for_block(block, nz, delta, fields)
            } else {
                py.detach(|| Coefficients::from_given(panels, n, nz, delta, fields))
            };
            Some(c.map_err(to_py)?)
        };
        // On one GPU the levels are made on the device from an uploaded copy (the same operator,
        // a small part of the time; the host path where the device has no room).
        let h = &mut *self.engine;
        py.detach(|| h.set_coefficients(coefficients))
            .map_err(to_py)
    }

    /// set_omega(omega): a new time step size, everything else kept.
    fn set_omega(&mut self, py: Python<'_>, omega: f64) -> PyResult<()> {
        let h = &mut *self.engine;
        py.detach(|| h.update_omega(omega)).map_err(to_py)
    }

    /// Seconds of each phase of the solver's creation (a dict: checks, stencils, operators and
    /// fields, communicator and fields).
    #[getter]
    fn setup<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, s) in self.engine.setup_phases() {
            d.set_item(*name, *s)?;
        }
        Ok(d)
    }

    /// The configuration the solver runs with, every default resolved: a dict of the
    /// constructor's names — solver, preconditioner, levels, coarse_steps, smoother, rho,
    /// relaxation, pre_smooth, post_smooth, coarse_solve, coarse_rtol, precision, restart,
    /// rtol, max_it (e.g. mg-cg's "red-black" smoother, its V(2,2) cycle and "mixed" precision
    /// where the constructor was given None).
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.engine.config();
        let mg = &c.multigrid;
        let d = PyDict::new(py);
        d.set_item("solver", c.kind.name())?;
        d.set_item("preconditioner", c.preconditioner.name())?;
        d.set_item("levels", mg.n_levels)?;
        d.set_item("coarse_steps", mg.coarse_steps)?;
        d.set_item("smoother", mg.smoother.name())?;
        d.set_item("rho", mg.rho)?;
        d.set_item("relaxation", mg.relaxation)?;
        d.set_item("pre_smooth", mg.pre_smooth)?;
        d.set_item("post_smooth", mg.post_smooth)?;
        d.set_item("coarse_solve", mg.coarse_solve.name())?;
        d.set_item("coarse_rtol", mg.coarse_rtol)?;
        d.set_item("precision", c.precision.name())?;
        d.set_item("restart", c.restart)?;
        d.set_item("rtol", c.stopping.rtol)?;
        d.set_item("max_it", c.stopping.max_it)?;
        Ok(d)
    }

    /// The backend the solver runs on: "cpu", "cuda" or "reference".
    #[getter]
    fn backend(&self) -> &'static str {
        self.engine.backend().name()
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
        d.set_item("incompatible", i.incompatible)?;
        Ok(Some(d))
    }

    /// This process's part of the horizontal grid, (i0, j0, nx, ny): columns i0 .. i0 + nx (x)
    /// and rows j0 .. j0 + ny (y) of the n x n panel or box. The whole grid, (0, 0, n, n),
    /// without `comm`; on ranks every array is this block's, of shape (ny, nx, nz):
    /// `a[j0:j0 + ny, i0:i0 + nx, :]` of the whole field.
    #[getter]
    fn block(&self) -> (usize, usize, usize, usize) {
        let b = self.engine.block();
        (b.i0, b.j0, b.nx, b.ny)
    }

    /// This process's tiles in the order of its arrays, each (panel, i0, j0, nx, ny): on the
    /// sphere the six panels (panel 0 .. 5, whole), or on ranks this rank's panels or blocks of
    /// panels, stacked along y in every array (tile t is rows t * ny .. (t + 1) * ny); on a
    /// panel or box the one block, with panel None.
    #[getter]
    fn tiles(&self) -> Vec<(Option<usize>, usize, usize, usize, usize)> {
        self.engine
            .tiles()
            .iter()
            .map(|b| (b.panel, b.i0, b.j0, b.nx, b.ny))
            .collect()
    }

    /// The shape of the solution and right-hand side: (n, n, nz) = (y, x, z); on the sphere
    /// (6, n, n, nz) = (panel, y, x, z), as the files and the C API order it (`a[p]` is panel
    /// p). On ranks this rank's: (ny, nx, nz) for the block of a panel or box, (tiles, ny, nx,
    /// nz) of the sphere (`tiles` says which); the coefficient fields of a sphere's ranks are
    /// the whole sphere's, (6, n, n, nz). The sphere's shape before 0.2, the panels stacked
    /// along y ((6 n, n, nz)), is still taken, with a DeprecationWarning.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.shape.python())
    }

    fn __repr__(&self) -> String {
        let (p, kind) = (self.engine.problem().clone(), self.engine.config().kind);
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

/// The solver of one rank of a distributed solve over `comm` (an mpi4py communicator), as the
/// C API's `strata_solver_create_mpi` ([`strata_session::open`] on ranks). Collective.
fn on_ranks(
    comm: &Bound<'_, PyAny>,
    place: Place,
    p: &ProblemParams,
    cfg: &SolverConfig,
) -> PyResult<Held> {
    #[cfg(feature = "mpi")]
    {
        let world = ranks::duplicate(comm)?;
        strata_session::open(p, cfg, place.with_comm(world))
            .map(Held)
            .map_err(to_py)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (comm, place, p, cfg);
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
fn new_device_array<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let cupy = py.import("cupy").map_err(|_| {
        PyValueError::new_err("pass out= (a device array): CuPy is not installed to make one")
    })?;
    cupy.call_method1("empty", (PyTuple::new(py, shape)?, "float64"))
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
    m.add("NotConvergedError", m.py().get_type::<NotConvergedError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
