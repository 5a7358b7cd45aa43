//! The coarsest level's solve (docs/MODEL.md §9.4): smoothing steps (the paper's), or
//! preconditioned CG with vertical line relaxation to a relative tolerance, so that the cycle's
//! contraction no longer depends on how coarse the coarsest level is (how many levels there are,
//! how many steps it takes).

use crate::backend::Backend;
use crate::comm::{Comm, SerialComm};
use crate::error::{invalid, Result};
use crate::solver::profile::{Kernel, Timer};
use serde::{Deserialize, Serialize};

/// How the coarsest level is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoarseSolve {
    /// `coarse_steps` smoothing steps (the paper's; the default).
    #[default]
    Smooth,
    /// Preconditioned CG (line relaxation) from the restriction's smoothed guess until the
    /// coarse residual falls below `coarse_rtol` of its start (at most
    /// [`COARSE_MAX_IT`] iterations): symmetric operators only.
    Cg,
}

impl crate::names::Choice for CoarseSolve {
    const SETTING: &'static str = "coarse_solve";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (CoarseSolve::Smooth, "smooth", 0),
        (CoarseSolve::Cg, "cg", 1),
    ];
}

/// The most CG iterations of one coarse solve.
pub const COARSE_MAX_IT: usize = 200;

/// Default relative tolerance of the coarse CG.
pub const DEFAULT_COARSE_RTOL: f64 = 1e-3;

/// Checks a coarse tolerance: in (0, 1).
pub(crate) fn check_rtol(rtol: f64) -> Result<()> {
    if !(rtol.is_finite() && rtol > 0.0 && rtol < 1.0) {
        return invalid("coarse_rtol", format!("must be in (0, 1) (got {rtol})"));
    }
    Ok(())
}

/// The default bound on the cells of a coarsest level gathered whole onto every rank: 0, never.
/// Gathering (through the host: two downloads, an all-gather, two uploads per cycle, and the
/// whole level's work on every rank) cost more than the distributed CG's sums at every size
/// measured — four H200s with NCCL, coarsest levels of 16² to 128² × 128 columns, and two CPU
/// ranks (docs/PERFORMANCE.md) — so it is a choice, `STRATA_GATHER_CELLS=N` (every rank the
/// same N): it makes mg with the coarse CG give the serial solve's values on any number of
/// ranks, and may pay where a sum over many ranks costs more than the gather.
pub const GATHER_CELLS: usize = 0;

/// The bound on the cells of a gathered coarsest level: `STRATA_GATHER_CELLS`, or
/// [`GATHER_CELLS`].
fn gather_cells() -> Result<usize> {
    super::whole::env_count("STRATA_GATHER_CELLS", "cells", GATHER_CELLS)
}

/// The coarse CG's workspace on the coarsest level: residual, preconditioned residual, search
/// direction and its image; and, on several ranks, the whole level gathered onto every rank
/// where that was chosen ([`GATHER_CELLS`]).
pub(crate) struct CoarseCg<B: Backend> {
    work: Work<B>,
    gathered: Gathered<B>,
}

/// The CG's four fields on one level.
struct Work<B: Backend> {
    r: B::Field,
    z: B::Field,
    p: B::Field,
    q: B::Field,
}

/// Where the coarse CG runs on several ranks.
enum Gathered<B: Backend> {
    /// Not decided since the operators were made (the next solve decides, with every rank).
    Undecided,
    /// On the ranks' blocks, each dot product summed over the ranks (one rank; the default; a
    /// level with per-cell coefficients, cross or slant terms, or larger than the bound).
    Distributed,
    /// The whole level on every rank, solved there alike (PETSc's PCREDUNDANT): no sum and no
    /// exchange inside the CG, and on every count of ranks the serial solve's values.
    Whole(Box<Whole<B>>),
}

/// The whole coarsest level on this rank.
struct Whole<B: Backend> {
    op: B::LevelOp,
    f: B::Field,
    u: B::Field,
    work: Work<B>,
    /// Every rank's block (i0, j0, nx, ny), in rank order.
    blocks: Vec<[usize; 4]>,
    /// This rank.
    rank: usize,
    /// The level's cells per direction and vertically.
    n: usize,
    nz: usize,
    host: HostArrays,
}

impl<B: Backend> Work<B> {
    fn new(b: &B, op: &B::LevelOp) -> Result<Self> {
        Ok(Self {
            r: b.alloc(op)?,
            z: b.alloc(op)?,
            p: b.alloc(op)?,
            q: b.alloc(op)?,
        })
    }
}

impl<B: Backend> CoarseCg<B> {
    /// The workspace for the coarsest level `op`.
    pub(crate) fn new(b: &B, op: &B::LevelOp) -> Result<Self> {
        Ok(Self {
            work: Work::new(b, op)?,
            gathered: Gathered::Undecided,
        })
    }

    /// Forgets the whole level (the operators were made again): the next solve gathers it anew.
    pub(crate) fn forget(&mut self) {
        self.gathered = Gathered::Undecided;
    }

    /// Prepares the communicator's buffers for the level (once, at set-up).
    pub(crate) fn prepare_comm<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        op: &B::LevelOp,
    ) -> Result<()> {
        comm.exchange(b, op, &mut self.work.p)
    }

    /// Solves A u = f on the coarsest level `lev` (operator `op`) from the guess in `u` (its
    /// halo current) until ‖r‖ ≤ `rtol` ‖r₀‖ or [`COARSE_MAX_IT`] iterations: PCG with the
    /// line relaxation M (the `cg` solver's preconditioner). On several ranks each dot product
    /// is summed over the ranks, unless the whole level is gathered onto every rank and solved
    /// there (the serial solve's values: `STRATA_GATHER_CELLS`, [`GATHER_CELLS`]).
    /// `u`'s halo is left stale (the caller exchanges it as the cycle needs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        op: &B::LevelOp,
        f: &B::Field,
        u: &mut B::Field,
        rtol: f64,
    ) -> Result<()> {
        if matches!(self.gathered, Gathered::Undecided) {
            self.gathered = gather_level(b, comm, op)?;
        }
        match &mut self.gathered {
            Gathered::Whole(w) => {
                let w = &mut **w;
                timer.run(b, Kernel::Halo, lev, || w.gather(b, comm, op, f, u))?;
                // The whole level's halo: its walls' zeros, or its own far side across a
                // periodic edge.
                SerialComm.exchange(b, &w.op, &mut w.u)?;
                let serial = SerialComm;
                pcg(
                    b,
                    &serial,
                    timer,
                    lev,
                    &w.op,
                    &w.f,
                    &mut w.u,
                    rtol,
                    &mut w.work,
                )?;
                timer.run(b, Kernel::Halo, lev, || w.scatter(b, op, u))
            }
            _ => pcg(b, comm, timer, lev, op, f, u, rtol, &mut self.work),
        }
    }
}

impl<B: Backend> Whole<B> {
    /// The whole level's f and u ← every rank's blocks of `f` and `u` (one all-gather).
    fn gather<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        op: &B::LevelOp,
        f: &B::Field,
        u: &B::Field,
    ) -> Result<()> {
        let cells = b.stencil(op).cells();
        let local = &mut self.host.local;
        local.resize(2 * cells, 0.0);
        let (lf, lu) = local.split_at_mut(cells);
        b.download(op, f, lf)?;
        b.download(op, u, lu)?;
        let parts = comm.all_gather(local)?;
        let (n, nz) = (self.n, self.nz);
        let [whole_f, whole_u] = &mut self.host.whole;
        for (part, &[i0, j0, nx, ny]) in parts.iter().zip(&self.blocks) {
            let cells = nx * ny * nz;
            if part.len() != 2 * cells {
                return Err(crate::StrataError::Comm(format!(
                    "a rank sent {} values of its coarsest block, not {}",
                    part.len(),
                    2 * cells
                )));
            }
            let (pf, pu) = part.split_at(cells);
            place(whole_f, pf, (i0, j0, nx, ny), n, nz);
            place(whole_u, pu, (i0, j0, nx, ny), n, nz);
        }
        b.upload(&self.op, whole_f, &mut self.f)?;
        b.upload(&self.op, whole_u, &mut self.u)
    }

    /// This rank's block of `u` ← the whole level's solution.
    fn scatter(&mut self, b: &B, op: &B::LevelOp, u: &mut B::Field) -> Result<()> {
        let (n, nz) = (self.n, self.nz);
        let whole = &mut self.host.whole[1];
        b.download(&self.op, &self.u, whole)?;
        let [i0, j0, nx, ny] = self.blocks[self.rank];
        let local = &mut self.host.local;
        local.resize(nx * ny * nz, 0.0);
        for j in 0..ny {
            let at = ((j0 + j) * n + i0) * nz;
            local[j * nx * nz..(j + 1) * nx * nz].copy_from_slice(&whole[at..at + nx * nz]);
        }
        b.upload(op, local, u)
    }
}

/// The host arrays a gathered level travels through, kept from cycle to cycle: the whole
/// level's f and u, and this rank's block of both.
struct HostArrays {
    whole: [Vec<f64>; 2],
    local: Vec<f64>,
}

/// Copies a block's z-contiguous values (`[j][i][k]`, block `(i0, j0, nx, ny)`) into the whole
/// level's (`n × n` columns of `nz`).
fn place(
    whole: &mut [f64],
    block: &[f64],
    (i0, j0, nx, ny): (usize, usize, usize, usize),
    n: usize,
    nz: usize,
) {
    for j in 0..ny {
        let at = ((j0 + j) * n + i0) * nz;
        whole[at..at + nx * nz].copy_from_slice(&block[j * nx * nz..(j + 1) * nx * nz]);
    }
}

/// Decides, with every rank (collective), where the coarse CG on level `op` runs: the whole
/// level on every rank where there are several, every rank's level is
/// [`super::whole::plain`] (per-cell coefficients, cross or slant terms, tiles or fields in
/// a backend's memory would have to be gathered too) and no larger than the bound
/// ([`gather_cells`]), and the communicator gathers; otherwise where it lies.
fn gather_level<B: Backend, C: Comm<B>>(b: &B, comm: &C, op: &B::LevelOp) -> Result<Gathered<B>> {
    if comm.size() == 1 {
        return Ok(Gathered::Distributed);
    }
    let s = b.stencil(op);
    let whole_cells = s.block.n * s.block.n * s.nz;
    let bound = gather_cells();
    // A bound some rank could not read: an error on every rank alike (none waits for another
    // in a collective call that rank never makes).
    let mut unread = [f64::from(u8::from(bound.is_err()))];
    comm.sum(&mut unread)?;
    let bound = bound?;
    if unread[0] > 0.0 {
        return Err(crate::StrataError::Comm(
            "a rank could not read STRATA_GATHER_CELLS (each rank must be given the same count)"
                .into(),
        ));
    }
    let can = super::whole::plain(s) && whole_cells <= bound;
    let Ok(gathered) = super::whole::whole_level(comm, s, can) else {
        return Ok(Gathered::Distributed);
    };
    let Some((whole, blocks)) = gathered else {
        return Ok(Gathered::Distributed);
    };
    let n = s.block.n;
    let op = b.prepare_level(&whole)?;
    Ok(Gathered::Whole(Box::new(Whole {
        f: b.alloc(&op)?,
        u: b.alloc(&op)?,
        work: Work::new(b, &op)?,
        op,
        blocks,
        rank: comm.rank(),
        n,
        nz: s.nz,
        host: HostArrays {
            whole: [vec![0.0; n * n * s.nz], vec![0.0; n * n * s.nz]],
            local: Vec::new(),
        },
    })))
}

/// PCG with the line relaxation M on level `lev` (operator `op`) from the guess in `u` (its halo
/// current) until ‖r‖ ≤ `rtol` ‖r₀‖ or [`COARSE_MAX_IT`] iterations, each dot product summed
/// over the ranks of `comm`.
#[allow(clippy::too_many_arguments)]
fn pcg<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    timer: &mut Timer,
    lev: usize,
    op: &B::LevelOp,
    f: &B::Field,
    u: &mut B::Field,
    rtol: f64,
    work: &mut Work<B>,
) -> Result<()> {
    let Work { r, z, p, q } = work;
    timer.run(b, Kernel::Residual, lev, || b.residual(op, f, u, r))?;
    timer.run(b, Kernel::LineSolve, lev, || b.line_solve(op, r, z))?;
    let mut s = [b.dot(op, r, z)?, b.dot(op, r, r)?];
    comm.sum(&mut s)?;
    let [mut rz, rr0] = s;
    if !(rr0 > 0.0 && rz.is_finite()) {
        return Ok(());
    }
    timer.run(b, Kernel::Vector, lev, || b.copy(op, z, p))?;
    for _ in 0..COARSE_MAX_IT {
        timer.run(b, Kernel::Halo, lev, || comm.exchange(b, op, p))?;
        timer.run(b, Kernel::Residual, lev, || b.apply(op, p, q))?;
        let mut pq = [b.dot(op, p, q)?];
        comm.sum(&mut pq)?;
        // A breakdown (a singular direction, or rounding at the solution): stop here.
        if !(pq[0] > 0.0 && pq[0].is_finite()) {
            break;
        }
        let alpha = rz / pq[0];
        timer.run(b, Kernel::Vector, lev, || b.axpy(op, alpha, p, u))?;
        timer.run(b, Kernel::Vector, lev, || b.axpy(op, -alpha, q, r))?;
        timer.run(b, Kernel::LineSolve, lev, || b.line_solve(op, r, z))?;
        let mut s = [b.dot(op, r, z)?, b.dot(op, r, r)?];
        comm.sum(&mut s)?;
        if s[1] <= rtol * rtol * rr0 || s[0].is_nan() || s[0] <= 0.0 {
            break;
        }
        let beta = s[0] / rz;
        rz = s[0];
        timer.run(b, Kernel::Vector, lev, || b.xpby(op, z, beta, p))?;
    }
    Ok(())
}
