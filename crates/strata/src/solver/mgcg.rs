//! Flexible CG preconditioned by one multigrid V-cycle (beyond the paper).
//!
//! The V-cycle with sum restriction and linear prolongation is not exactly symmetric (R ≠ Pᵀ), so
//! β uses the Polak–Ribière form ⟨z', r' − r⟩/⟨z, r⟩ = −α⟨z', q⟩/κ, which keeps CG robust for a
//! slightly non-symmetric preconditioner at the price of one more dot product.

use super::monitor::Monitor;
use super::multigrid::MgPreconditioner;
use super::profile::{Kernel, Timer};
use super::slots::*;
use super::{MgParams, SolveInfo, SolveParams};
use crate::backend::{Backend, Coef, ScalarOp};
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
    /// κ, σ, α, β, ‖r‖², ⟨r, z⟩, ⟨z, q⟩ (solver/slots.rs) in the backend's memory.
    sc: B::Scalars,
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
            sc: backend.alloc_scalars(MGCG_SLOTS)?,
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

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        self.pc.gathered_from()
    }

    /// Exchanges the halo of every level once (see [`super::Solver::prepare_comm`]).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.pc.prepare_comm(b, comm)
    }

    /// z ← P r, the symmetric V-cycle of the iteration ([`super::Solver::precondition`]).
    pub fn precondition<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        let mut timer = Timer::new(false, self.pc.n_levels());
        comm.exchange(b, self.pc.fine(), r)?;
        self.pc.apply(b, comm, &mut timer, r, z)
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
        let Self { pc, r, z, p, q, sc } = self;
        let mut mon = Monitor::start(b, comm, pc.fine(), f, u, r, params, monitor)?;
        let mut it = 0;
        let reason = if let Some(reason) = mon.initial() {
            reason
        } else {
            pc.apply(b, comm, &mut timer, r, z)?;
            let fine = pc.fine();
            // κ = ⟨r, z⟩, and α = β = 0 for the first SpMV.
            b.dot_slots(fine, r, z, sc, KAPPA)?;
            comm.sum_slots(b, sc, KAPPA, 1)?;
            b.write_scalars(sc, ALPHA, &[0.0, 0.0])?;
            b.fill(fine, p, 0.0)?;
            b.fill(fine, q, 0.0)?;
            let (alpha, beta) = (Coef::slot(1.0, ALPHA), Coef::slot(1.0, BETA));
            // The scalars stay in the backend's memory; the host reads σ and ‖r‖² once per
            // iteration, for the stopping test, before the V-cycle.
            loop {
                it += 1;
                let fine = pc.fine();
                timer.run(b, Kernel::Spmv, 0, || {
                    b.cg_spmv_slots(fine, z, u, p, q, sc, (alpha, beta), SIGMA)
                })?;
                comm.sum_slots(b, sc, SIGMA, 1)?;
                b.scalar_ops(sc, &[step_length()])?;
                // r ← r − α q and ‖r‖² in one pass.
                timer.run(b, Kernel::Vector, 0, || {
                    b.axpy_norm_slots(fine, Coef::slot(-1.0, ALPHA), q, r, sc, RR)
                })?;
                comm.sum_slots(b, sc, RR, 1)?;
                let mut v = [0.0; RR + 1];
                b.read_scalars(sc, &mut v)?;
                if let Some(reason) = Monitor::curvature(v[SIGMA]) {
                    break reason;
                }
                if let Some(reason) = mon.step(it, v[RR]) {
                    b.axpy_slots(fine, alpha, p, u, sc)?;
                    break reason;
                }
                pc.apply(b, comm, &mut timer, r, z)?;
                timer.run(b, Kernel::Vector, 0, || {
                    b.dot_pair_slots(pc.fine(), r, z, q, sc, RZ)
                })?;
                comm.sum_slots(b, sc, RZ, 2)?;
                // β = −α ⟨z', q⟩ / κ (Polak–Ribière), κ = ⟨r', z'⟩.
                let beta_pr = ScalarOp {
                    dst: BETA,
                    sign: -1.0,
                    num: ALPHA,
                    by: Some(ZQ),
                    den: Some(KAPPA),
                    guard: false,
                };
                b.scalar_ops(sc, &[beta_pr, ScalarOp::copy(KAPPA, RZ)])?;
            }
        };
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}
