//! One V-cycle from zero as a preconditioner, z = P r, with its fields stored in fp64 or in
//! fp32 (mixed precision, docs/MODEL.md §17): then r is converted into the fp32 finest level,
//! the cycle runs there, and its result (halo included) is converted back. Where the operator
//! has the sphere's cross terms (docs/MODEL.md §16.1), the hierarchy is of its 7-point parts
//! and the outer iteration applies the whole operator: relaxing the cross terms in the cycle
//! made its level-0 Smooth and Residual 49 % and 67 % slower to save one mg-cg iteration in
//! eight (docs/PERFORMANCE.md).

use super::{Hierarchy, MgParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::precision::Storage;
use crate::solver::profile::{Kernel, Timer};
use crate::stencil::LevelStencil;

/// The outer side of a preconditioner whose hierarchy is not the outer operator: stored in
/// fp32, or of the 7-point parts of an operator with cross terms, or both.
struct Outer<B: Backend> {
    /// The finest level prepared in fp64 with all its terms: the operator the outer iteration
    /// applies.
    fine: B::LevelOp,
    /// r and z in fp32 (the cycle's right-hand side and iterate); `None` when the hierarchy is
    /// fp64 (the outer fields serve it directly).
    fp32: Option<(B::Field, B::Field)>,
    /// Whether `fine` reads tile corners the cycle's exchanges leave alone
    /// ([`LevelStencil::reads_tile_corners`]).
    corners: bool,
}

/// A multigrid V-cycle from zero as a preconditioner.
pub struct MgPreconditioner<B: Backend> {
    /// The hierarchy (stored in the preconditioner's precision).
    pub h: Hierarchy<B>,
    /// A finest-level field of zeros in the hierarchy's precision (the cycle's initial guess).
    zero: B::Field,
    /// The outer side, where the hierarchy is not the outer operator.
    outer: Option<Outer<B>>,
}

impl<B: Backend> MgPreconditioner<B> {
    /// Prepares the hierarchy from `stencils` (finest first, fp64 as built) with its fields
    /// stored in `storage`.
    pub fn new(
        b: &B,
        stencils: &[LevelStencil],
        params: MgParams,
        storage: Storage,
    ) -> Result<Self> {
        let stored = with_storage(stencils, storage);
        let outer = needs_outer(stencils);
        let h = Hierarchy::new(b, &stored, params)?;
        let op0 = &h.levels[0].op;
        let zero = b.alloc(op0)?;
        let outer_side = match (storage, outer) {
            (Storage::F64, false) => None,
            (storage, _) => Some(Outer {
                fine: b.prepare_level(&stencils[0])?,
                corners: stencils[0].reads_tile_corners(),
                fp32: match storage {
                    Storage::F64 => None,
                    Storage::F32 => Some((b.alloc(op0)?, b.alloc(op0)?)),
                },
            }),
        };
        Ok(Self {
            h,
            zero,
            outer: outer_side,
        })
    }

    /// The finest level prepared in fp64: the operator of the outer iteration.
    pub fn fine(&self) -> &B::LevelOp {
        match &self.outer {
            Some(m) => &m.fine,
            None => &self.h.levels[0].op,
        }
    }

    /// How the hierarchy's fields are stored.
    pub fn storage(&self) -> Storage {
        match &self.outer {
            Some(Outer { fp32: Some(_), .. }) => Storage::F32,
            _ => Storage::F64,
        }
    }

    /// Levels of the hierarchy.
    pub fn n_levels(&self) -> usize {
        self.h.levels.len()
    }

    /// Prepares every operator again from `stencils` (fp64 as built), keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        let storage = self.storage();
        let fine =
            match (&self.outer, needs_outer(stencils)) {
                (Some(_), _) => Some(b.prepare_level(&stencils[0])?),
                (None, false) => None,
                (None, true) => return invalid(
                    "operator",
                    "the new operator has cross terms that the prepared hierarchy does not relax",
                ),
            };
        self.h
            .replace_operators(b, &with_storage(stencils, storage))?;
        if let (Some(m), Some(fine)) = (&mut self.outer, fine) {
            m.fine = fine;
            m.corners = stencils[0].reads_tile_corners();
        }
        Ok(())
    }

    /// Lets `comm` allocate what every level's exchanges need (and the fp64 finest level's).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        if let Some(m) = &mut self.outer {
            comm.prepare(b, &m.fine)?;
        }
        self.h.prepare_comm(b, comm)
    }

    /// z ← P r: one V-cycle on A z = r from zero; z's halo is exchanged (for the outer
    /// operator, the corners of tiles included). `r` and `z` are fine fp64 fields of the outer
    /// iteration.
    pub fn apply<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        r: &B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        let Self { h, zero, outer } = self;
        let Some(m) = outer else {
            return h.precondition(b, comm, timer, r, z, zero);
        };
        match &mut m.fp32 {
            None => h.precondition(b, comm, timer, r, z, zero)?,
            Some((r32, z32)) => {
                let op0 = &h.levels[0].op;
                timer.run(b, Kernel::Vector, 0, || b.convert(&m.fine, r, op0, r32))?;
                h.precondition(b, comm, timer, r32, z32, zero)?;
                let op0 = &h.levels[0].op;
                timer.run(b, Kernel::Vector, 0, || b.convert(op0, z32, &m.fine, z))?;
            }
        }
        if m.corners {
            // The cycle exchanged z's faces (its levels are 7-point); the outer operator's cross
            // terms also read the corners of tiles inside a panel.
            timer.run(b, Kernel::Halo, 0, || comm.exchange(b, &m.fine, z))?;
        }
        Ok(())
    }
}

/// Whether the hierarchy for `stencils` relaxes another operator than the outer iteration's:
/// the 7-point parts of an operator with cross terms.
pub(crate) fn needs_outer(stencils: &[LevelStencil]) -> bool {
    stencils[0].has_cross()
}

/// `stencils` with their fields stored in `storage`, as the hierarchy relaxes them (their
/// 7-point parts).
fn with_storage(stencils: &[LevelStencil], storage: Storage) -> Vec<LevelStencil> {
    stencils
        .iter()
        .map(|s| s.seven_point().with_storage(storage))
        .collect()
}

/// The 7-point parts of `stencils`, as a hierarchy relaxes them.
pub(crate) fn seven_point(stencils: &[LevelStencil]) -> Vec<LevelStencil> {
    stencils.iter().map(LevelStencil::seven_point).collect()
}
