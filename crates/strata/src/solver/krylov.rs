//! Krylov methods for non-symmetric operators (docs/MODEL.md §15.4): restarted GCR(k), as LFRic
//! and IFS-FVM use, and BiCGStab, as ENDGame uses; both right-preconditioned by the vertical line
//! relaxation M⁻¹ or by one tensor-product multigrid V-cycle, and written once over
//! [`Backend`] and [`Comm`]. GCR is flexible (the preconditioner may change between
//! iterations), so an inexact V-cycle is fine; BiCGStab assumes a fixed preconditioner, which a
//! V-cycle from zero is.

use super::monitor::{ConvergedReason, Monitor};
use super::multigrid::MgPreconditioner;
use super::profile::{Kernel, Timer};
use super::{MgParams, SolveInfo, SolveParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::precision::Storage;
use crate::stencil::LevelStencil;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The preconditioner of a Krylov method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preconditioner {
    /// One vertical line relaxation, z = M⁻¹ r (one Thomas solve per column).
    Line,
    /// One tensor-product multigrid V(1,1) cycle from zero.
    #[default]
    Multigrid,
}

/// A preconditioner prepared on a backend: z = P r.
enum Prepared<B: Backend> {
    /// Line relaxation: the fine level's operator alone.
    Line(B::LevelOp),
    /// A V-cycle from zero.
    Multigrid(Box<MgPreconditioner<B>>),
}

impl<B: Backend> Prepared<B> {
    fn new(
        b: &B,
        stencils: &[LevelStencil],
        mg: MgParams,
        kind: Preconditioner,
        storage: Storage,
    ) -> Result<Self> {
        Ok(match kind {
            Preconditioner::Line => Prepared::Line(b.prepare_level(&stencils[0])?),
            Preconditioner::Multigrid => Prepared::Multigrid(Box::new(MgPreconditioner::new(
                b, stencils, mg, storage, false,
            )?)),
        })
    }

    /// The fine level's prepared operator.
    fn op(&self) -> &B::LevelOp {
        match self {
            Prepared::Line(op) => op,
            Prepared::Multigrid(pc) => pc.fine(),
        }
    }

    /// Levels the preconditioner works on (for the profile).
    fn gathered_from(&self) -> Option<usize> {
        match self {
            Prepared::Line(_) => None,
            Prepared::Multigrid(pc) => pc.gathered_from(),
        }
    }

    fn n_levels(&self) -> usize {
        match self {
            Prepared::Line(_) => 1,
            Prepared::Multigrid(pc) => pc.n_levels(),
        }
    }

    /// Prepares the operators again from `stencils`, keeping the fields.
    fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        match self {
            Prepared::Line(op) => crate::backend::replace_levels(b, vec![op], &stencils[..1])?,
            Prepared::Multigrid(pc) => pc.replace_operators(b, stencils)?,
        }
        Ok(())
    }

    /// Lets `comm` allocate its buffers and exchanges one field of every level once (`scratch`,
    /// a fine field of the solver's, serves the line preconditioner).
    fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C, scratch: &mut B::Field) -> Result<()> {
        match self {
            Prepared::Line(op) => {
                comm.prepare(b, op)?;
                comm.exchange(b, op, scratch)
            }
            Prepared::Multigrid(pc) => pc.prepare_comm(b, comm),
        }
    }

    /// z ← P r on its own, r's halo exchanged first, untimed (an outer method's call).
    fn once<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        let mut timer = Timer::new(false, self.n_levels());
        comm.exchange(b, self.op(), r)?;
        self.apply(b, comm, &mut timer, r, z)
    }

    /// z ← P r (r is not changed; the V-cycle borrows it).
    fn apply<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        match self {
            Prepared::Line(op) => {
                timer.run(b, Kernel::LineSolve, 0, || b.line_solve(op, r, z))?;
                timer.run(b, Kernel::Halo, 0, || comm.exchange(b, op, z))
            }
            Prepared::Multigrid(pc) => pc.apply(b, comm, timer, r, z),
        }
    }
}

/// Global ⟨x, y⟩.
fn gdot<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    op: &B::LevelOp,
    x: &B::Field,
    y: &B::Field,
) -> Result<f64> {
    let mut s = [b.dot(op, x, y)?];
    comm.sum(&mut s)?;
    Ok(s[0])
}

/// A reason to stop if a scalar the method divides by is unusable.
fn breakdown(denominator: f64) -> Option<ConvergedReason> {
    if !denominator.is_finite() {
        Some(ConvergedReason::DivergedNanOrInf)
    } else if denominator == 0.0 {
        Some(ConvergedReason::DivergedBreakdown)
    } else {
        None
    }
}

/// Restarted, flexible GCR(k), right-preconditioned.
pub struct Gcr<B: Backend> {
    pc: Prepared<B>,
    r: B::Field,
    /// Search directions z_i = P r and their images q_i = A z_i, k of each.
    z: Vec<B::Field>,
    q: Vec<B::Field>,
    /// ⟨q_i, q_i⟩ of the current cycle.
    qq: Vec<f64>,
}

impl<B: Backend> Gcr<B> {
    /// z ← P r with the configured preconditioner ([`super::Solver::precondition`]).
    pub fn precondition<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        self.pc.once(b, comm, r, z)
    }

    /// Prepares GCR(`restart`) with preconditioner `pc` on the level stencils (finest first).
    pub fn new(
        b: &B,
        stencils: &[LevelStencil],
        mg: MgParams,
        pc: Preconditioner,
        restart: usize,
        storage: Storage,
    ) -> Result<Self> {
        if restart < 1 {
            return crate::error::invalid("restart", "must be at least 1 (got 0)");
        }
        let pc = Prepared::new(b, stencils, mg, pc, storage)?;
        let op = pc.op();
        let fields = |n: usize| (0..n).map(|_| b.alloc(op)).collect::<Result<Vec<_>>>();
        Ok(Self {
            r: b.alloc(op)?,
            z: fields(restart)?,
            q: fields(restart)?,
            qq: vec![0.0; restart],
            pc,
        })
    }

    /// Prepares every level's operator again from `stencils`, keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        self.pc.replace_operators(b, stencils)
    }

    /// The prepared fine level.
    pub fn fine(&self) -> &B::LevelOp {
        self.pc.op()
    }

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        self.pc.gathered_from()
    }

    /// Allocates the communicator's buffers and exchanges every level once.
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.pc.prepare_comm(b, comm, &mut self.r)
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
        let Self { pc, r, z, q, qq } = self;
        let k = z.len();
        let mut mon = Monitor::start(b, comm, pc.op(), f, u, r, params, monitor)?;
        let mut it = 0;
        let reason = if let Some(reason) = mon.initial() {
            reason
        } else {
            'outer: loop {
                for j in 0..k {
                    it += 1;
                    pc.apply(b, comm, &mut timer, r, &mut z[j])?;
                    let op = pc.op();
                    timer.run(b, Kernel::Spmv, 0, || b.apply(op, &z[j], &mut q[j]))?;
                    // Orthogonalise q_j against the cycle's earlier q_i (modified Gram–Schmidt),
                    // carrying z_j along so that q_j = A z_j stays true.
                    let (zs, zj) = z.split_at_mut(j);
                    let (qs, qj) = q.split_at_mut(j);
                    let (zj, qj) = (&mut zj[0], &mut qj[0]);
                    for i in 0..j {
                        let beta = gdot(b, comm, op, qj, &qs[i])? / qq[i];
                        b.axpy(op, -beta, &qs[i], qj)?;
                        b.axpy(op, -beta, &zs[i], zj)?;
                    }
                    qq[j] = gdot(b, comm, op, qj, qj)?;
                    if let Some(reason) = breakdown(qq[j]) {
                        break 'outer reason;
                    }
                    let alpha = gdot(b, comm, op, r, qj)? / qq[j];
                    b.axpy(op, alpha, zj, u)?;
                    b.axpy(op, -alpha, qj, r)?;
                    let rr = gdot(b, comm, op, r, r)?;
                    if let Some(reason) = mon.step(it, rr) {
                        break 'outer reason;
                    }
                }
                // Restart: the next cycle builds new directions from the current residual.
            }
        };
        comm.exchange(b, pc.op(), u)?;
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}

/// BiCGStab, right-preconditioned (van der Vorst 1992); one iteration applies the preconditioner
/// and the operator twice each.
pub struct BiCgStab<B: Backend> {
    pc: Prepared<B>,
    r: B::Field,
    rhat: B::Field,
    p: B::Field,
    v: B::Field,
    y: B::Field,
    t: B::Field,
}

impl<B: Backend> BiCgStab<B> {
    /// z ← P r with the configured preconditioner ([`super::Solver::precondition`]).
    pub fn precondition<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        self.pc.once(b, comm, r, z)
    }

    /// Prepares BiCGStab with preconditioner `pc` on the level stencils (finest first).
    pub fn new(
        b: &B,
        stencils: &[LevelStencil],
        mg: MgParams,
        pc: Preconditioner,
        storage: Storage,
    ) -> Result<Self> {
        let pc = Prepared::new(b, stencils, mg, pc, storage)?;
        let op = pc.op();
        Ok(Self {
            r: b.alloc(op)?,
            rhat: b.alloc(op)?,
            p: b.alloc(op)?,
            v: b.alloc(op)?,
            y: b.alloc(op)?,
            t: b.alloc(op)?,
            pc,
        })
    }

    /// Prepares every level's operator again from `stencils`, keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        self.pc.replace_operators(b, stencils)
    }

    /// The prepared fine level.
    pub fn fine(&self) -> &B::LevelOp {
        self.pc.op()
    }

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        self.pc.gathered_from()
    }

    /// Allocates the communicator's buffers and exchanges every level once.
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.pc.prepare_comm(b, comm, &mut self.r)
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
        let Self {
            pc,
            r,
            rhat,
            p,
            v,
            y,
            t,
        } = self;
        let mut mon = Monitor::start(b, comm, pc.op(), f, u, r, params, monitor)?;
        let mut it = 0;
        let reason = if let Some(reason) = mon.initial() {
            reason
        } else {
            let op = pc.op();
            b.copy(op, r, rhat)?;
            b.fill(op, p, 0.0)?;
            b.fill(op, v, 0.0)?;
            let (mut rho, mut alpha, mut omega) = (1.0, 1.0, 1.0);
            loop {
                it += 1;
                let op = pc.op();
                let rho_new = gdot(b, comm, op, rhat, r)?;
                if let Some(reason) = breakdown(rho_new) {
                    break reason;
                }
                let beta = (rho_new / rho) * (alpha / omega);
                // p = r + β (p − ω v)
                b.axpy(op, -omega, v, p)?;
                b.xpby(op, r, beta, p)?;
                pc.apply(b, comm, &mut timer, p, y)?;
                let op = pc.op();
                timer.run(b, Kernel::Spmv, 0, || b.apply(op, y, v))?;
                let rv = gdot(b, comm, op, rhat, v)?;
                if let Some(reason) = breakdown(rv) {
                    break reason;
                }
                alpha = rho_new / rv;
                // s = r − α v (in r), u += α y.
                b.axpy(op, -alpha, v, r)?;
                b.axpy(op, alpha, y, u)?;
                let ss = gdot(b, comm, op, r, r)?;
                if !params.fixed_iterations && ss.sqrt() < params.rtol * mon.r0 {
                    if let Some(reason) = mon.step(it, ss) {
                        break reason;
                    }
                }
                pc.apply(b, comm, &mut timer, r, y)?;
                let op = pc.op();
                timer.run(b, Kernel::Spmv, 0, || b.apply(op, y, t))?;
                let tt = gdot(b, comm, op, t, t)?;
                if let Some(reason) = breakdown(tt) {
                    break reason;
                }
                omega = gdot(b, comm, op, t, r)? / tt;
                // u += ω z (z in y); r = s − ω t.
                b.axpy(op, omega, y, u)?;
                b.axpy(op, -omega, t, r)?;
                let rr = gdot(b, comm, op, r, r)?;
                if let Some(reason) = mon.step(it, rr) {
                    break reason;
                }
                if let Some(reason) = breakdown(omega) {
                    break reason;
                }
                rho = rho_new;
            }
        };
        comm.exchange(b, pc.op(), u)?;
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}

impl crate::names::Choice for Preconditioner {
    const SETTING: &'static str = "preconditioner";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (Preconditioner::Line, "line", 0),
        (Preconditioner::Multigrid, "mg", 1),
    ];
}
