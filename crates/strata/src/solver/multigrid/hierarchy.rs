//! The multigrid hierarchy: per level the prepared operator and the fields u, f and one work
//! field (the residual, and the out-of-place smoother's second buffer). The finest level keeps
//! only its work field: its u is the caller's (swapped in for a cycle) and its f is the caller's
//! right-hand side (passed to the cycle), so a solve holds no copy of either.

use super::MgParams;
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::stencil::LevelStencil;

/// One level's operator and fields. The block-Jacobi smoother is out of place: it writes `work`
/// and the two are swapped, which needs no second kernel to avoid the race on u. The residual
/// lives in `work` too: in a V-cycle it is written after the pre-smoothing (whose swap left the
/// old iterate there, dead) and read by the next level's restriction before the post-smoothing
/// writes `work` again (three fields per level, not four: docs/PERFORMANCE.md, memory).
pub struct MgLevel<B: Backend> {
    /// The level's prepared stencil.
    pub op: B::LevelOp,
    /// Current iterate (the correction on coarse levels). On the finest level a field of the
    /// coarsest level's size while no cycle runs: the caller's iterate is swapped in for a
    /// cycle and out after it.
    pub u: B::Field,
    /// The residual, and the second buffer of the out-of-place smoother.
    pub work: B::Field,
    /// Right-hand side (the restricted residual on coarse levels). Never read on the finest
    /// level (the cycle reads the caller's right-hand side): a field of the coarsest level's
    /// size.
    pub f: B::Field,
}

/// The levels, finest first, and the multigrid parameters.
pub struct Hierarchy<B: Backend> {
    /// Levels, 0 = finest.
    pub levels: Vec<MgLevel<B>>,
    /// Parameters.
    pub params: MgParams,
    /// The coarse CG's workspace on the coarsest level ([`super::CoarseSolve::Cg`]).
    pub(crate) coarse: Option<super::coarse::CoarseCg<B>>,
    /// The coarse levels gathered whole onto every rank, where the ranks chose to
    /// ([`crate::backend::Fields::gather_columns`]; decided by [`Hierarchy::prepare_comm`]).
    pub(crate) telescope: Option<Box<super::telescope::Telescope<B>>>,
}

impl<B: Backend> Hierarchy<B> {
    /// Prepares `params.n_levels` levels from `stencils` (finest first).
    pub fn new(b: &B, stencils: &[LevelStencil], params: MgParams) -> Result<Self> {
        params.validate()?;
        if stencils.len() < params.n_levels {
            return invalid(
                "levels",
                format!(
                    "= {}: multigrid needs as many level stencils, {} were built",
                    params.n_levels,
                    stencils.len()
                ),
            );
        }
        let ops = stencils[..params.n_levels]
            .iter()
            .map(|s| b.prepare_level(s))
            .collect::<Result<Vec<_>>>()?;
        let coarsest = ops.last().expect("at least one level");
        // The finest level's u and f are the caller's: here small placeholders to swap with.
        let (u0, f0) = (b.alloc(coarsest)?, b.alloc(coarsest)?);
        let mut parked = Some((u0, f0));
        let levels = ops
            .into_iter()
            .map(|op| {
                let (u, f) = match parked.take() {
                    Some(uf) => uf,
                    None => (b.alloc(&op)?, b.alloc(&op)?),
                };
                Ok(MgLevel {
                    u,
                    work: b.alloc(&op)?,
                    f,
                    op,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let coarse = match params.coarse_solve {
            super::CoarseSolve::Cg => {
                let op = &levels.last().expect("at least one level").op;
                Some(super::coarse::CoarseCg::new(b, op)?)
            }
            super::CoarseSolve::Smooth => None,
        };
        Ok(Self {
            levels,
            params,
            coarse,
            telescope: None,
        })
    }

    /// Sets the smoothing steps of every level but the coarsest ([`MgParams::pre_smooth`],
    /// [`MgParams::post_smooth`]); checked as the parameters are.
    pub fn set_smoothing_steps(&mut self, pre: usize, post: usize) -> Result<()> {
        let params = MgParams {
            pre_smooth: pre,
            post_smooth: post,
            ..self.params.clone()
        };
        params.validate()?;
        self.params = params;
        Ok(())
    }

    /// Prepares every level's operator again from `stencils` (new coefficients or ω on the same
    /// grids), keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        let n = self.levels.len();
        // Levels gathered whole are gathered again from the new operators by the next
        // `prepare_comm` (collective); until then the cycle runs on the ranks' blocks.
        self.telescope = None;
        // A coarsest level gathered whole is made again from the new operators at the next
        // coarse solve.
        if let Some(c) = self.coarse.as_mut() {
            c.forget();
        }
        crate::backend::replace_levels(b, self.ops_mut().collect(), &stencils[..n])
    }

    /// Every level's operator, finest first.
    pub(crate) fn ops_mut(&mut self) -> impl Iterator<Item = &mut B::LevelOp> {
        self.levels.iter_mut().map(|l| &mut l.op)
    }

    /// Exchanges the halo of every level's `u` once (see [`crate::solver::Solver::prepare_comm`];
    /// on the finest level its work field, of the level's size), and decides with every rank
    /// which coarse levels are gathered whole onto every rank (collective).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        for (lev, l) in self.levels.iter_mut().enumerate() {
            comm.prepare(b, &l.op)?;
            let x = if lev == 0 { &mut l.work } else { &mut l.u };
            comm.exchange(b, &l.op, x)?;
        }
        if let (Some(c), Some(l)) = (self.coarse.as_mut(), self.levels.last()) {
            c.prepare_comm(b, comm, &l.op)?;
        }
        self.telescope = super::telescope::decide(b, comm, self)?.map(Box::new);
        Ok(())
    }

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        self.telescope.as_ref().map(|t| t.at)
    }

    /// Whether a cycle reads values back on the host: a coarse CG, on the ranks' coarsest
    /// level or on the gathered one.
    pub(crate) fn coarse_cg(&self) -> bool {
        self.coarse.is_some()
            || self
                .telescope
                .as_ref()
                .is_some_and(|t| t.whole.coarse.is_some())
    }

    /// The levels gathered whole onto every rank and the whole iterate of the first (what the
    /// cycle swaps into that hierarchy's finest level); `None` where none is.
    pub(crate) fn gathered(&self) -> Option<(&Hierarchy<B>, &B::Field)> {
        self.telescope.as_deref().map(|t| (&t.whole, &t.u))
    }

    /// [`Hierarchy::gathered`], mutably.
    pub(crate) fn gathered_mut(&mut self) -> Option<(&mut Hierarchy<B>, &mut B::Field)> {
        self.telescope
            .as_deref_mut()
            .map(|t| (&mut t.whole, &mut t.u))
    }

    /// Runs `cycle` with `u` (a fine-level field of the caller) as the finest level's iterate,
    /// and swaps it back out afterwards, also when `cycle` fails: the caller never keeps the
    /// placeholder.
    pub(crate) fn with_fine_u<T>(
        &mut self,
        u: &mut B::Field,
        cycle: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        std::mem::swap(u, &mut self.levels[0].u);
        let out = cycle(self);
        std::mem::swap(u, &mut self.levels[0].u);
        out
    }
}
