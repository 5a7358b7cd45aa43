//! One V-cycle from zero as a preconditioner, z = P r, with its fields stored in fp64 or in
//! fp32 (mixed precision, docs/MODEL.md §17): then r is converted into the fp32 finest level,
//! the cycle runs there, and its result (halo included) is converted back.

use super::{Hierarchy, MgParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::precision::Storage;
use crate::solver::profile::{Kernel, Timer};
use crate::stencil::LevelStencil;

/// The fp64 side of a preconditioner whose hierarchy is stored in fp32.
struct Mixed<B: Backend> {
    /// The finest level prepared in fp64: the operator the outer iteration applies.
    fine: B::LevelOp,
    /// r in fp32 (the cycle's right-hand side).
    r: B::Field,
    /// z in fp32 (the cycle's iterate).
    z: B::Field,
}

/// A multigrid V-cycle from zero as a preconditioner.
pub struct MgPreconditioner<B: Backend> {
    /// The hierarchy (stored in the preconditioner's precision).
    pub h: Hierarchy<B>,
    /// A finest-level field of zeros in the hierarchy's precision (the cycle's initial guess).
    zero: B::Field,
    mixed: Option<Mixed<B>>,
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
        let h = Hierarchy::new(b, &stored, params)?;
        let op0 = &h.levels[0].op;
        let zero = b.alloc(op0)?;
        let mixed = match storage {
            Storage::F64 => None,
            Storage::F32 => Some(Mixed {
                fine: b.prepare_level(&stencils[0])?,
                r: b.alloc(op0)?,
                z: b.alloc(op0)?,
            }),
        };
        Ok(Self { h, zero, mixed })
    }

    /// The finest level prepared in fp64: the operator of the outer iteration.
    pub fn fine(&self) -> &B::LevelOp {
        match &self.mixed {
            Some(m) => &m.fine,
            None => &self.h.levels[0].op,
        }
    }

    /// How the hierarchy's fields are stored.
    pub fn storage(&self) -> Storage {
        match self.mixed {
            Some(_) => Storage::F32,
            None => Storage::F64,
        }
    }

    /// Levels of the hierarchy.
    pub fn n_levels(&self) -> usize {
        self.h.levels.len()
    }

    /// Prepares every operator again from `stencils` (fp64 as built), keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        let storage = self.storage();
        let fine = match &self.mixed {
            Some(_) => Some(b.prepare_level(&stencils[0])?),
            None => None,
        };
        self.h
            .replace_operators(b, &with_storage(stencils, storage))?;
        if let (Some(m), Some(fine)) = (&mut self.mixed, fine) {
            m.fine = fine;
        }
        Ok(())
    }

    /// Lets `comm` allocate what every level's exchanges need (and the fp64 finest level's).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        if let Some(m) = &mut self.mixed {
            comm.prepare(b, &m.fine)?;
        }
        self.h.prepare_comm(b, comm)
    }

    /// z ← P r: one V-cycle on A z = r from zero; z's halo is exchanged. `r` and `z` are fine
    /// fp64 fields of the outer iteration.
    pub fn apply<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        r: &B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        let Self { h, zero, mixed } = self;
        let Some(m) = mixed else {
            return h.precondition(b, comm, timer, r, z, zero);
        };
        let op0 = &h.levels[0].op;
        timer.run(b, Kernel::Vector, 0, || {
            b.convert(&m.fine, r, op0, &mut m.r)
        })?;
        h.precondition(b, comm, timer, &m.r, &mut m.z, zero)?;
        let op0 = &h.levels[0].op;
        timer.run(b, Kernel::Vector, 0, || b.convert(op0, &m.z, &m.fine, z))
    }
}

/// `stencils` with their fields stored in `storage`.
fn with_storage(stencils: &[LevelStencil], storage: Storage) -> Vec<LevelStencil> {
    stencils.iter().map(|s| s.with_storage(storage)).collect()
}
