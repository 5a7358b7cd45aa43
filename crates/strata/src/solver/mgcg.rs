//! Flexible CG preconditioned by one multigrid V-cycle (beyond the paper).
//!
//! The V-cycle with sum restriction and linear prolongation is not exactly symmetric (R ≠ Pᵀ), so
//! β uses the Polak–Ribière form ⟨z', r' − r⟩/⟨z, r⟩ = −α⟨z', q⟩/κ, which keeps CG robust for a
//! slightly non-symmetric preconditioner at the price of one more dot product.

use super::monitor::Monitor;
use super::multigrid::MgPreconditioner;
use super::profile::{Kernel, Timer};
use super::{MgParams, SolveInfo, SolveParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::precision::Storage;
use crate::stencil::LevelStencil;
use std::time::Instant;

/// Multigrid-preconditioned flexible CG.
pub struct MgCg<B: Backend> {
    pc: MgPreconditioner<B>,
    r: B::Field,
    z: B::Field,
    p: B::Field,
    q: B::Field,
}

impl<B: Backend> MgCg<B> {
    /// Prepares the hierarchy, its fields stored in `storage` (fp32 for mixed precision), and
    /// the fp64 CG workspace.
    pub fn new(
        backend: &B,
        stencils: &[LevelStencil],
        params: MgParams,
        storage: Storage,
    ) -> Result<Self> {
        let pc = MgPreconditioner::new(backend, stencils, params, storage, true)?;
        let fine = pc.fine();
        Ok(Self {
            r: backend.alloc(fine)?,
            z: backend.alloc(fine)?,
            p: backend.alloc(fine)?,
            q: backend.alloc(fine)?,
            pc,
        })
    }

    /// Prepares every level's operator again from `stencils`, keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        self.pc.replace_operators(b, stencils)
    }

    /// The prepared fine level (fp64).
    pub fn fine(&self) -> &B::LevelOp {
        self.pc.fine()
    }

    /// Exchanges the halo of every level once (see [`super::Solver::prepare_comm`]).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.pc.prepare_comm(b, comm)
    }

    /// Solves A u = f from the initial guess in `u`.
    pub fn solve<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        f: &B::Field,
        u: &mut B::Field,
        params: &SolveParams,
        monitor: &mut dyn FnMut(usize, f64),
    ) -> Result<SolveInfo> {
        let start = Instant::now();
        let mut timer = Timer::new(params.profile, self.pc.n_levels());
        let Self { pc, r, z, p, q } = self;
        let mut mon = Monitor::start(b, comm, pc.fine(), f, u, r, params, monitor)?;
        let mut it = 0;
        let reason = if let Some(reason) = mon.initial() {
            reason
        } else {
            let (mut alpha, mut beta) = (0.0, 0.0);
            pc.apply(b, comm, &mut timer, r, z)?;
            let mut kappa = [b.dot(pc.fine(), r, z)?];
            comm.sum(&mut kappa)?;
            let mut kappa = kappa[0];
            let fine = pc.fine();
            b.fill(fine, p, 0.0)?;
            b.fill(fine, q, 0.0)?;
            loop {
                it += 1;
                let fine = pc.fine();
                let mut sigma = [timer.run(b, Kernel::Spmv, 0, || {
                    b.cg_spmv(fine, z, u, p, q, alpha, beta)
                })?];
                comm.sum(&mut sigma)?;
                if let Some(reason) = Monitor::curvature(sigma[0]) {
                    break reason;
                }
                alpha = kappa / sigma[0];
                // r ← r − α q and ‖r‖² in one pass.
                let mut rr = [timer.run(b, Kernel::Vector, 0, || b.axpy_norm(fine, -alpha, q, r))?];
                comm.sum(&mut rr)?;
                if let Some(reason) = mon.step(it, rr[0]) {
                    b.axpy(fine, alpha, p, u)?;
                    break reason;
                }
                pc.apply(b, comm, &mut timer, r, z)?;
                let mut rz_zq =
                    timer.run(b, Kernel::Vector, 0, || b.dot_pair(pc.fine(), r, z, q))?;
                comm.sum(&mut rz_zq)?;
                let [rz, zq] = rz_zq;
                beta = -alpha * zq / kappa;
                kappa = rz;
            }
        };
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}
