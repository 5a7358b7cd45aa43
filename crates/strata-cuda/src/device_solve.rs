//! The persistent solver on device arrays: [`DeviceSolve`] for
//! `PersistentSolver<CudaBackend, _>`, the call a model with its fields on the GPU makes every
//! time step.

use crate::{CudaBackend, DeviceArray};
use strata::backend::prelude::*;
use strata::backend::tiled::{Handle, Tiled};
use strata::comm::Comm;
use strata::session::Session;
use strata::solver::SolveInfo;
use strata::{PersistentSolver, Result};

/// Solves and applies the operator with the caller's arrays in device memory: the right-hand
/// side is read into the solver's field and the solution written back on the device, one pass
/// each (no host round trip, no allocation); see [`DeviceArray`] for the accepted orders.
pub trait DeviceSolve {
    /// The backend the solver runs on: the CUDA backend, or the sphere's tiles over it.
    type Backend;

    /// Solves A u = rhs, starting from `x0` (it may be `u` itself: a model's warm start) or
    /// from zero. Returns when `u` holds the solution.
    fn solve_device(
        &mut self,
        backend: &Self::Backend,
        rhs: &DeviceArray,
        x0: Option<&DeviceArray>,
        u: &DeviceArray,
    ) -> Result<SolveInfo>;

    /// The values of a device array of the block, in strata's host order (k fastest): read on
    /// the device into a solver field, then copied to the host once (for coefficient fields,
    /// which strata prepares on the host; uses the solver's right-hand-side field as scratch).
    fn read_device(&mut self, backend: &Self::Backend, a: &DeviceArray) -> Result<Vec<f64>>;

    /// Sets the coefficient fields κx, κy, κz, β and the advection vector ξx, ξy, ξz from device
    /// arrays of the block (`None`: the model problem's value, 1, or δ for β; ξ all `None` for
    /// none, a `None` component 0), kept on the device: checked, averaged onto the coarse
    /// levels and made into every level's operator there, with no host copy and the same
    /// operator, bit for bit, as host arrays give ([`CudaBackend::resident_coefficients`],
    /// [`PersistentSolver::update_resident_coefficients`]). The arrays are read during the call
    /// only. For one process holding a whole panel or box; on the sphere or on ranks read the
    /// arrays with [`DeviceSolve::read_device`] and pass host fields to
    /// [`PersistentSolver::update_coefficients`].
    fn set_coefficients_device(
        &mut self,
        backend: &Self::Backend,
        fields: [Option<&DeviceArray>; 7],
    ) -> Result<()>;

    /// Sets the coefficient fields from host arrays (`None`: the model problem): the call of a
    /// model whose fields are in host memory, every step. On one process holding a whole panel
    /// or box, where the device has room for a copy of the fields, they are uploaded and made
    /// into the levels on the device as [`DeviceSolve::set_coefficients_device`] does (the same
    /// operator, bit for bit, as [`PersistentSolver::update_coefficients`], in a small part of
    /// its time), and the solver keeps them as that call does (a later ω rebuilds from them);
    /// otherwise (ranks, the sphere, no room, arrays of another size) it is
    /// [`PersistentSolver::update_coefficients`]. Returns whether the device made the levels.
    fn set_coefficients_host(
        &mut self,
        backend: &Self::Backend,
        coefficients: Option<strata::problem::Coefficients>,
    ) -> Result<bool>;

    /// Makes the levels on the device from the kept host fields where a rebuild is pending (ω
    /// changed after [`DeviceSolve::set_coefficients_host`] made them there), as that call
    /// does, instead of the host path the next solve would take; call it before a solve.
    /// Returns whether it did (nothing pending, the sphere, ranks or no room: the solve
    /// rebuilds on the host as before).
    fn rebuild_pending(&mut self, backend: &Self::Backend) -> Result<bool>;

    /// y = A x with the solver's operator (uses the solver's fields as scratch, as
    /// [`PersistentSolver::apply`]).
    fn apply_device(
        &mut self,
        backend: &Self::Backend,
        x: &DeviceArray,
        y: &DeviceArray,
    ) -> Result<()>;
}

impl<C: Comm<CudaBackend>> DeviceSolve for PersistentSolver<CudaBackend, C> {
    type Backend = CudaBackend;

    fn solve_device(
        &mut self,
        backend: &Self::Backend,
        rhs: &DeviceArray,
        x0: Option<&DeviceArray>,
        u: &DeviceArray,
    ) -> Result<SolveInfo> {
        let (op, f, x) = self.fields_mut();
        backend.import(op, rhs, f)?;
        match x0 {
            Some(x0) => backend.import(op, x0, x)?,
            None => backend.fill(op, x, 0.0)?,
        }
        let info = self.solve_resident(backend)?;
        let (op, _, x) = self.fields_mut();
        backend.export(op, x, u)?;
        backend.synchronize()?;
        self.config().stopping.outcome(info)
    }

    fn read_device(&mut self, backend: &Self::Backend, a: &DeviceArray) -> Result<Vec<f64>> {
        let mut host = vec![0.0; self.len()];
        let (op, f, _) = self.fields_mut();
        backend.import(op, a, f)?;
        backend.download(op, f, &mut host)?;
        Ok(host)
    }

    fn set_coefficients_device(
        &mut self,
        backend: &Self::Backend,
        fields: [Option<&DeviceArray>; 7],
    ) -> Result<()> {
        let p = self.problem().clone();
        if self.block() != p.whole_block() {
            return Err(strata::StrataError::invalid(
                "solver",
                "is one rank of several: coefficient fields from device arrays are taken by a solver of the whole panel",
            ));
        }
        let cfg = self.config();
        let symmetric = fields[4..].iter().all(Option::is_none);
        let cells =
            backend.resident_coefficients(fields, &p, cfg.num_levels(), cfg.multigrid.averaging)?;
        self.update_resident_coefficients(backend, cells, symmetric)?;
        backend.synchronize()
    }

    fn set_coefficients_host(
        &mut self,
        backend: &Self::Backend,
        coefficients: Option<strata::problem::Coefficients>,
    ) -> Result<bool> {
        let Some(c) = coefficients else {
            self.update_coefficients(backend, None)?;
            return Ok(false);
        };
        if !fields_fit(self, backend, &c)? {
            self.update_coefficients(backend, Some(c))?;
            return Ok(false);
        }
        host_fields_on_device(self, backend, std::sync::Arc::new(c))?;
        Ok(true)
    }

    fn rebuild_pending(&mut self, backend: &Self::Backend) -> Result<bool> {
        let Some(c) = self.pending_coefficients() else {
            return Ok(false);
        };
        if !fields_fit(self, backend, &c)? {
            return Ok(false);
        }
        host_fields_on_device(self, backend, c)?;
        Ok(true)
    }

    fn apply_device(
        &mut self,
        backend: &Self::Backend,
        x: &DeviceArray,
        y: &DeviceArray,
    ) -> Result<()> {
        self.apply_with(
            backend,
            |op, field| backend.import(op, x, field),
            |op, field| backend.export(op, field, y),
        )?;
        backend.synchronize()
    }
}

/// Whether host fields `c` can be made into the levels on the device: one process holding the
/// whole panel or box, arrays of its size, and room on the device for a copy of them (and about
/// a third more for the coarse levels' averages); never over orography, whose metric is folded
/// into the fields on the host (docs/MODEL.md §23).
fn fields_fit<C: Comm<CudaBackend>>(
    s: &PersistentSolver<CudaBackend, C>,
    backend: &CudaBackend,
    c: &strata::problem::Coefficients,
) -> Result<bool> {
    let n = s.problem().n;
    let len = n * n * s.problem().nz;
    let arrays = 4 + if c.xi.is_some() { 3 } else { 0 };
    let need = arrays * len * 8 / 3 * 4;
    let lengths = [&c.kx, &c.ky, &c.kz, &c.beta]
        .into_iter()
        .chain(c.xi.iter().flatten())
        .all(|v| v.len() == len);
    Ok(s.block() == s.problem().whole_block()
        && lengths
        && s.problem().orography.is_none()
        && backend.memory()?.0 >= need)
}

/// Uploads host fields `c` (through the page-locked staging pair) and makes them into the
/// levels on the device (the 2026-11-25 (58e9f6a)'s kernels: the host path's operator bit for bit); the
/// solver keeps `c` for a later ω.
fn host_fields_on_device<C: Comm<CudaBackend>>(
    s: &mut PersistentSolver<CudaBackend, C>,
    backend: &CudaBackend,
    c: std::sync::Arc<strata::problem::Coefficients>,
) -> Result<()> {
    use cudarc::driver::DevicePtr;
    let p = s.problem().clone();
    let (n, nz) = (p.n, p.nz);
    let mut host: Vec<&[f64]> = vec![&c.kx, &c.ky, &c.kz, &c.beta];
    if let Some(xi) = &c.xi {
        host.extend(xi.iter().map(Vec::as_slice));
    }
    let stream = backend.stream();
    let device = host
        .iter()
        .map(|v| backend.upload_f64(v))
        .collect::<Result<Vec<_>>>()?;
    let arrays: Vec<DeviceArray> = device
        .iter()
        .map(|d| {
            let (ptr, _sync) = d.device_ptr(&stream);
            // SAFETY: a live allocation of n·n·nz values of the backend's context (lengths
            // checked by `fields_fit`), k fastest, alive until the end of this call, after the
            // synchronisation below.
            unsafe { DeviceArray::with_order(ptr, crate::Order::KFastest, n, n, nz) }
        })
        .collect();
    let mut slots: [Option<&DeviceArray>; 7] = [None; 7];
    for (slot, a) in slots.iter_mut().zip(&arrays) {
        *slot = Some(a);
    }
    let cfg = s.config();
    let symmetric = c.xi.is_none();
    let cells =
        backend.resident_coefficients(slots, &p, cfg.num_levels(), cfg.multigrid.averaging)?;
    drop(host);
    s.update_resident_coefficients_kept(backend, cells, symmetric, Some(c))?;
    backend.synchronize()?;
    drop(device);
    Ok(())
}

/// The sphere: `DeviceArray`s of the whole sphere (panel 0's array with the panel stride,
/// [`DeviceArray::with_panel_stride`]; an order implies panels one after the other), read and
/// written tile by tile on the device.
impl<H: Handle<Inner = CudaBackend>, C: Comm<Tiled<H>>> DeviceSolve
    for PersistentSolver<Tiled<H>, C>
{
    type Backend = Tiled<H>;

    fn solve_device(
        &mut self,
        backend: &Tiled<H>,
        rhs: &DeviceArray,
        x0: Option<&DeviceArray>,
        u: &DeviceArray,
    ) -> Result<SolveInfo> {
        let (g, tiles) = (backend.inner(), self.tiles().to_vec());
        let (op, f, x) = self.fields_mut();
        for (t, b) in tiles.iter().enumerate() {
            g.import(&op.tiles[t], &rhs.tile(b)?, &mut f[t])?;
            match x0 {
                Some(x0) => g.import(&op.tiles[t], &x0.tile(b)?, &mut x[t])?,
                None => g.fill(&op.tiles[t], &mut x[t], 0.0)?,
            }
        }
        let info = self.solve_resident(backend)?;
        let (op, _, x) = self.fields_mut();
        for (t, b) in tiles.iter().enumerate() {
            g.export(&op.tiles[t], &x[t], &u.tile(b)?)?;
        }
        g.synchronize()?;
        self.config().stopping.outcome(info)
    }

    fn read_device(&mut self, backend: &Tiled<H>, a: &DeviceArray) -> Result<Vec<f64>> {
        let (g, tiles) = (backend.inner(), self.tiles().to_vec());
        let mut host = vec![0.0; self.len()];
        let (op, f, _) = self.fields_mut();
        for (t, b) in tiles.iter().enumerate() {
            g.import(&op.tiles[t], &a.tile(b)?, &mut f[t])?;
        }
        backend.download(op, f, &mut host)?;
        Ok(host)
    }

    fn set_coefficients_device(
        &mut self,
        _backend: &Tiled<H>,
        _fields: [Option<&DeviceArray>; 7],
    ) -> Result<()> {
        Err(strata::StrataError::invalid(
            "coefficients",
            "from device arrays are kept on the device for one panel, not yet for the sphere: read them with read_device and pass host fields",
        ))
    }

    fn set_coefficients_host(
        &mut self,
        backend: &Tiled<H>,
        coefficients: Option<strata::problem::Coefficients>,
    ) -> Result<bool> {
        // The sphere's levels are made on the host.
        self.update_coefficients(backend, coefficients)?;
        Ok(false)
    }

    fn rebuild_pending(&mut self, _backend: &Tiled<H>) -> Result<bool> {
        // The next solve rebuilds the sphere's levels on the host.
        Ok(false)
    }

    fn apply_device(&mut self, backend: &Tiled<H>, x: &DeviceArray, y: &DeviceArray) -> Result<()> {
        let (g, tiles) = (backend.inner(), self.tiles().to_vec());
        self.apply_with(
            backend,
            |op, field| {
                for (t, b) in tiles.iter().enumerate() {
                    g.import(&op.tiles[t], &x.tile(b)?, &mut field[t])?;
                }
                Ok(())
            },
            |op, field| {
                for (t, b) in tiles.iter().enumerate() {
                    g.export(&op.tiles[t], &field[t], &y.tile(b)?)?;
                }
                Ok(())
            },
        )?;
        g.synchronize()
    }
}

/// The device-array calls of a solver handle on the GPU ([`strata::session::Session`] over the
/// CUDA backend or the sphere's tiles over it): [`DeviceSolve`] without the backend argument,
/// object-safe, so that a front end reaches them through its one handle.
pub trait DeviceHandle {
    /// The CUDA backend (for the device, its stream, its memory).
    fn cuda(&self) -> &CudaBackend;
    /// [`DeviceSolve::solve_device`].
    fn solve_device(
        &mut self,
        rhs: &DeviceArray,
        x0: Option<&DeviceArray>,
        u: &DeviceArray,
    ) -> Result<SolveInfo>;
    /// [`DeviceSolve::read_device`].
    fn read_device(&mut self, a: &DeviceArray) -> Result<Vec<f64>>;
    /// [`DeviceSolve::set_coefficients_device`].
    fn set_coefficients_device(&mut self, fields: [Option<&DeviceArray>; 7]) -> Result<()>;
    /// [`DeviceSolve::set_coefficients_host`].
    fn set_coefficients_host(
        &mut self,
        coefficients: Option<strata::problem::Coefficients>,
    ) -> Result<bool>;
    /// [`DeviceSolve::rebuild_pending`].
    fn rebuild_pending(&mut self) -> Result<bool>;
    /// [`DeviceSolve::apply_device`].
    fn apply_device(&mut self, x: &DeviceArray, y: &DeviceArray) -> Result<()>;
}

/// Forwards [`DeviceHandle`] to the session's persistent solver's [`DeviceSolve`].
macro_rules! forward_device_handle {
    () => {
        fn solve_device(
            &mut self,
            rhs: &DeviceArray,
            x0: Option<&DeviceArray>,
            u: &DeviceArray,
        ) -> Result<SolveInfo> {
            let (b, s) = self.parts_mut();
            s.solve_device(b, rhs, x0, u)
        }
        fn read_device(&mut self, a: &DeviceArray) -> Result<Vec<f64>> {
            let (b, s) = self.parts_mut();
            s.read_device(b, a)
        }
        fn set_coefficients_device(&mut self, fields: [Option<&DeviceArray>; 7]) -> Result<()> {
            let (b, s) = self.parts_mut();
            s.set_coefficients_device(b, fields)
        }
        fn set_coefficients_host(
            &mut self,
            coefficients: Option<strata::problem::Coefficients>,
        ) -> Result<bool> {
            let (b, s) = self.parts_mut();
            s.set_coefficients_host(b, coefficients)
        }
        fn rebuild_pending(&mut self) -> Result<bool> {
            let (b, s) = self.parts_mut();
            s.rebuild_pending(b)
        }
        fn apply_device(&mut self, x: &DeviceArray, y: &DeviceArray) -> Result<()> {
            let (b, s) = self.parts_mut();
            s.apply_device(b, x, y)
        }
    };
}

impl<C: Comm<CudaBackend>> DeviceHandle for Session<CudaBackend, C> {
    fn cuda(&self) -> &CudaBackend {
        self.backend()
    }
    forward_device_handle!();
}

impl<H: Handle<Inner = CudaBackend>, C: Comm<Tiled<H>>> DeviceHandle for Session<Tiled<H>, C> {
    fn cuda(&self) -> &CudaBackend {
        self.backend().inner()
    }
    forward_device_handle!();
}
