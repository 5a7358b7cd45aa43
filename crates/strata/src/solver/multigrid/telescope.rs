//! Coarse levels gathered whole onto every rank (docs/MODEL.md §24; PETSc's PCTELESCOPE in its
//! one-step, redundant form): below a size where a level's halo exchanges cost more than its
//! work, every rank holds the whole level and runs the rest of the V-cycle on it alone, with no
//! exchange and no sum, then takes its own block, halo included, back out for the prolongation.
//! One sum per cycle (the restricted right-hand side and the first smoothing step, each rank's
//! block in zeros elsewhere, so the sum is exact) replaces every exchange of the gathered
//! levels, and the values are one process's, bit for bit, on any number of ranks.

use super::{Hierarchy, MgParams};
use crate::backend::Backend;
use crate::comm::{Comm, SerialComm};
use crate::error::{Result, StrataError};
use crate::solver::profile::{Kernel, Timer};

/// The bound on the columns of a gathered level: `STRATA_GATHER_COLUMNS` (0: never gather), or
/// by default the backend's ([`crate::backend::Fields::gather_columns`]) where the coarsest level
/// is solved by CG (`cg`), none where it is smoothed. Every rank must be given the same value
/// (checked together).
///
/// Measured on H200s with NCCL (docs/PERFORMANCE.md, several GPUs; 2026-11-28): gathering
/// smoothed coarse levels from 64² changed mg's cycle at global 512² and 1024² × 128 on four
/// GPUs by −0.2 % and +1.8 % (mg-cg's by −4 % and +1.6 %): the exchanges it saves there cost
/// about what the whole level's sum costs. The coarse CG's two sums per iteration are saved
/// too: 8 % (512², `--coarse-solve cg`) and 15 % (400² at ν_CFL = 84) of the solve on two GPUs.
fn gather_columns<B: Backend>(b: &B, cg: bool) -> Result<usize> {
    let default = if cg { b.gather_columns() } else { 0 };
    super::whole::env_count("STRATA_GATHER_COLUMNS", "columns", default)
}

/// The gathered levels of a hierarchy on several ranks.
pub(crate) struct Telescope<B: Backend> {
    /// The finest gathered level (an index of the ranks' hierarchy).
    pub(crate) at: usize,
    /// The gathered levels, whole, as a hierarchy of their own (its level 0 is level `at`; its
    /// finest u and f are placeholders, as every hierarchy's are).
    pub(crate) whole: Hierarchy<B>,
    /// The whole level `at`'s right-hand side and iterate.
    pub(crate) f: B::Field,
    pub(crate) u: B::Field,
    /// This rank's block of level `at` in a whole field of zeros (what the sum gathers).
    send_f: B::Field,
    send_u: B::Field,
    /// This rank's block of level `at`: first column, first row, columns, rows.
    block: [usize; 4],
}

/// Decides, with every rank (collective), which levels of `h` are gathered whole: from the
/// first coarse level of at most [`gather_columns`] columns (n²; by default only where the
/// coarsest level is solved by CG) down, where there are several
/// ranks, those levels are [`super::whole::plain`] and have no periodic side on every rank (a block's halo
/// across a periodic edge, corners included, would have to be wrapped out of the whole level);
/// `None` where nothing is gathered.
pub(crate) fn decide<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    h: &Hierarchy<B>,
) -> Result<Option<Telescope<B>>> {
    if comm.size() == 1 {
        return Ok(None);
    }
    let bound = gather_columns(b, h.params.coarse_solve == super::CoarseSolve::Cg);
    let n = |l: usize| b.stencil(&h.levels[l].op).block.n;
    let at = match &bound {
        Ok(bound) => (1..h.levels.len()).find(|&l| n(l) * n(l) <= *bound),
        Err(_) => None,
    };
    // Whether this rank's gathered levels are all plain, with no periodic side.
    let can = at.is_some_and(|at| {
        h.levels[at..].iter().all(|l| {
            let s = b.stencil(&l.op);
            super::whole::plain(s) && !s.block.bc.any_periodic()
        })
    });
    // Every rank the same level (or none), a bound every rank could read, and whether every
    // rank can gather.
    let code = at.map_or(0.0, |a| a as f64 + 1.0);
    let mut agree = [
        f64::from(u8::from(bound.is_err())),
        code,
        code * code,
        f64::from(u8::from(can)),
    ];
    comm.sum(&mut agree)?;
    bound?;
    if agree[0] > 0.0 {
        return Err(StrataError::Comm(
            "a rank could not read STRATA_GATHER_COLUMNS (each rank must be given the same count)"
                .into(),
        ));
    }
    let size = comm.size() as f64;
    if agree[1] * agree[1] != size * agree[2] {
        return Err(StrataError::Comm(
            "the ranks chose different levels to gather (each rank must be given the same \
             STRATA_GATHER_COLUMNS)"
                .into(),
        ));
    }
    let (Some(at), true) = (at, agree[3] == size) else {
        return Ok(None);
    };
    let mut stencils = Vec::new();
    let mut block = [0; 4];
    for l in at..h.levels.len() {
        let s = b.stencil(&h.levels[l].op);
        let Some((whole, blocks)) = super::whole::whole_level(comm, s, true)? else {
            return Ok(None);
        };
        if l == at {
            block = blocks[comm.rank()];
        }
        stencils.push(whole);
    }
    let params = MgParams {
        n_levels: stencils.len(),
        ..h.params.clone()
    };
    let mut whole = Hierarchy::new(b, &stencils, params)?;
    whole.prepare_comm(b, &SerialComm)?;
    let op = &whole.levels[0].op;
    Ok(Some(Telescope {
        at,
        f: b.alloc(op)?,
        u: b.alloc(op)?,
        send_f: b.alloc(op)?,
        send_u: b.alloc(op)?,
        whole,
        block,
    }))
}

impl<B: Backend> Telescope<B> {
    /// The whole level's f and u on every rank ← every rank's block of level `lev` (operator
    /// `op`, right-hand side `f`, iterate `u`, the restriction's fused smoothing step done):
    /// each rank's block copied into whole fields of zeros, summed over the ranks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gather<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        op: &B::LevelOp,
        f: &B::Field,
        u: &B::Field,
    ) -> Result<()> {
        let [i0, j0, nx, ny] = self.block;
        let Self {
            whole,
            f: wf,
            u: wu,
            send_f,
            send_u,
            ..
        } = self;
        let wop = &whole.levels[0].op;
        timer.run(b, Kernel::Halo, lev, || {
            b.copy_columns(op, f, (1, 1), wop, send_f, (i0 + 1, j0 + 1), (nx, ny))?;
            b.copy_columns(op, u, (1, 1), wop, send_u, (i0 + 1, j0 + 1), (nx, ny))?;
            comm.sum_fields(b, wop, &mut [(&*send_f, &mut *wf), (&*send_u, &mut *wu)])
        })
    }

    /// This rank's block of level `lev` (operator `op`), halo and corners included, ← the whole
    /// level's iterate.
    pub(crate) fn scatter(
        &self,
        b: &B,
        timer: &mut Timer,
        lev: usize,
        op: &B::LevelOp,
        u: &mut B::Field,
    ) -> Result<()> {
        let [i0, j0, nx, ny] = self.block;
        let wop = &self.whole.levels[0].op;
        timer.run(b, Kernel::Halo, lev, || {
            b.copy_columns(wop, &self.u, (i0, j0), op, u, (0, 0), (nx + 2, ny + 2))
        })
    }

    /// The gathered levels' hierarchy, the whole level's iterate (to swap into its finest
    /// level) and right-hand side, borrowed apart.
    pub(crate) fn nested(&mut self) -> (&mut Hierarchy<B>, &mut B::Field, &B::Field) {
        (&mut self.whole, &mut self.u, &self.f)
    }
}
