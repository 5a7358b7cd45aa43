//! What a smoother works with inside a V-cycle: the hierarchy, the backend, the communicator,
//! the timer and the fine right-hand side ([`Sweep`]), a level's fields borrowed apart, and the
//! halo exchange after a smoothing step.

use super::hierarchy::MgLevel;
use super::Hierarchy;
use crate::backend::{Backend, Fields};
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::profile::{Kernel, Timer};

/// Which halo cells an exchange fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halo {
    /// The faces.
    Faces,
    /// The faces, and the corners whose diagonal block is another rank's where the
    /// communicator prolongates into the halo ([`Comm::prolongation_sides`]): the last
    /// exchange of a coarse level, before the finer level's prolongation reads its halo.
    Corners,
}

/// A level's operator, right-hand side (`f0`, the caller's, on the finest level), iterate and
/// work field, borrowed apart.
pub(crate) type Parts<'a, B> = (
    &'a <B as Fields>::LevelOp,
    &'a <B as Fields>::Field,
    &'a mut <B as Fields>::Field,
    &'a mut <B as Fields>::Field,
);

/// The parts of level `lev`, whose right-hand side is `f0` on the finest level.
pub(crate) fn parts<'a, B: Backend>(
    l: &'a mut MgLevel<B>,
    lev: usize,
    f0: &'a B::Field,
) -> Parts<'a, B> {
    let MgLevel { op, u, work, f } = l;
    (op, if lev == 0 { f0 } else { f }, u, work)
}

/// Fills the halo of `u` (level `lev`, operator `op`) as `halo` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn exchange<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    timer: &mut Timer,
    lev: usize,
    op: &B::LevelOp,
    u: &mut B::Field,
    halo: Halo,
) -> Result<()> {
    let corners = halo == Halo::Corners && comm.prolongation_sides().is_some();
    timer.run(b, Kernel::Halo, lev, || {
        if corners {
            comm.exchange_with_corners(b, op, u)
        } else {
            comm.exchange(b, op, u)
        }
    })
}

/// The state a smoother acts on during one V-cycle.
pub(crate) struct Sweep<'a, B: Backend, C: Comm<B>> {
    /// The levels and the multigrid parameters.
    pub h: &'a mut Hierarchy<B>,
    /// The backend.
    pub b: &'a B,
    /// The communicator.
    pub comm: &'a C,
    /// The kernel timer.
    pub timer: &'a mut Timer,
    /// The fine level's right-hand side (the caller's).
    pub f0: &'a B::Field,
}

impl<B: Backend, C: Comm<B>> Sweep<'_, B, C> {
    /// Runs `kernel` (timed as `which` on level `lev`) on the level's parts, then fills the
    /// halo of its iterate as `halo` says (`None`: no exchange).
    pub(crate) fn step(
        &mut self,
        which: Kernel,
        lev: usize,
        halo: Option<Halo>,
        kernel: impl FnOnce(&B, Parts<'_, B>) -> Result<()>,
    ) -> Result<()> {
        let b = self.b;
        let (op, f, u, work) = parts(&mut self.h.levels[lev], lev, self.f0);
        self.timer
            .run(b, which, lev, || kernel(b, (op, f, u, work)))?;
        match halo {
            Some(halo) => self.exchange(lev, halo),
            None => Ok(()),
        }
    }

    /// Swaps level `lev`'s iterate and work field (after an out-of-place step).
    pub(crate) fn swap(&mut self, lev: usize) {
        let l = &mut self.h.levels[lev];
        std::mem::swap(&mut l.u, &mut l.work);
    }

    /// Fills the halo of level `lev`'s iterate as `halo` says.
    pub(crate) fn exchange(&mut self, lev: usize, halo: Halo) -> Result<()> {
        let l = &mut self.h.levels[lev];
        exchange(self.b, self.comm, self.timer, lev, &l.op, &mut l.u, halo)
    }
}
