//! One V-cycle from zero as a preconditioner, z = P r, with its fields stored in fp64 or in
//! fp32 (mixed precision, docs/MODEL.md §17): then r is converted into the fp32 finest level,
//! the cycle runs there, and its result (halo included) is converted back. The sphere's
//! nine-point levels are relaxed with their diagonal couplings (four-colour sweeps,
//! docs/MODEL.md §16.1).

use super::{Hierarchy, MgParams};
use crate::backend::{Backend, Recording};
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::precision::Storage;
use crate::solver::profile::{Kernel, Timer};
use crate::stencil::LevelStencil;

/// The outer side of a preconditioner whose hierarchy is stored in fp32 (mixed precision).
struct Outer<B: Backend> {
    /// The finest level prepared in fp64 with all its terms: the operator the outer iteration
    /// applies.
    fine: B::LevelOp,
    /// r and z in fp32 (the cycle's right-hand side and iterate).
    fp32: (B::Field, B::Field),
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
    /// The cycle's kernels as the backend recorded them (a CUDA graph), keyed by the fields'
    /// arrangement ([`MgPreconditioner::arrangement`]); cleared when the operators or the
    /// communicator change.
    rec: Recording,
    /// For each recorded arrangement, which fields the cycle swaps on the host (the Jacobi
    /// smoother's out-of-place steps): repeated when the recording is replayed.
    swaps: Vec<(Vec<u64>, Vec<bool>)>,
    /// Whether the cycle is symmetric (see [`MgPreconditioner::new`]).
    symmetric: bool,
}

impl<B: Backend> MgPreconditioner<B> {
    /// Prepares the hierarchy from `stencils` (finest first, fp64 as built) with its fields
    /// stored in `storage`. A `symmetric` cycle (for CG) post-smooths in the reverse order of
    /// its pre-smoothing; otherwise (mg's defect correction, GCR, BiCGStab) the red-black
    /// smoother post-smooths the finest level in the forward order, which contracts more
    /// (docs/PERFORMANCE.md, mg's red-black cycles).
    pub fn new(
        b: &B,
        stencils: &[LevelStencil],
        params: MgParams,
        storage: Storage,
        symmetric: bool,
    ) -> Result<Self> {
        let stored = with_storage(stencils, storage);
        let h = Hierarchy::new(b, &stored, params)?;
        let op0 = &h.levels[0].op;
        let zero = b.alloc(op0)?;
        let outer_side = match storage {
            Storage::F64 => None,
            Storage::F32 => Some(Outer {
                fine: b.prepare_level(&stencils[0])?,
                corners: stencils[0].reads_tile_corners(),
                fp32: (b.alloc(op0)?, b.alloc(op0)?),
            }),
        };
        Ok(Self {
            h,
            zero,
            outer: outer_side,
            rec: Recording::new(),
            swaps: Vec::new(),
            symmetric,
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
            Some(_) => Storage::F32,
            None => Storage::F64,
        }
    }

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        self.h.gathered_from()
    }

    /// Levels of the hierarchy.
    pub fn n_levels(&self) -> usize {
        self.h.levels.len()
    }

    /// Prepares every operator again from `stencils` (fp64 as built), keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        let storage = self.storage();
        self.forget_recordings();
        // The outer fine level (fp64) and the hierarchy's, all or none.
        let mut all = Vec::new();
        let mut ops = Vec::new();
        if let Some(m) = &mut self.outer {
            all.push(stencils[0].clone());
            ops.push(&mut m.fine);
        }
        let n = self.h.levels.len();
        all.extend(with_storage(&stencils[..n], storage));
        ops.extend(self.h.ops_mut());
        crate::backend::replace_levels(b, ops, &all)?;
        if let Some(m) = &mut self.outer {
            m.corners = stencils[0].reads_tile_corners();
        }
        Ok(())
    }

    /// Sets the cycle's smoothing steps ([`Hierarchy::set_smoothing_steps`]); a recorded cycle
    /// is recorded again.
    pub fn set_smoothing_steps(&mut self, pre: usize, post: usize) -> Result<()> {
        self.forget_recordings();
        self.h.set_smoothing_steps(pre, post)
    }

    /// Lets `comm` allocate what every level's exchanges need (and the fp64 finest level's).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.forget_recordings();
        if let Some(m) = &mut self.outer {
            comm.prepare(b, &m.fine)?;
        }
        self.h.prepare_comm(b, comm)
    }

    /// z ← P r: one V-cycle on A z = r from zero; z's halo is exchanged (for the outer
    /// operator, the corners of tiles included). `r` and `z` are fine fp64 fields of the outer
    /// iteration. Where nothing in the cycle waits on the host (a communicator that only
    /// queues kernels, no timer), the backend may record the cycle once per pair r, z and
    /// replay it ([`crate::backend::Fields::replay`]: one CUDA graph launch on the GPU).
    pub fn apply<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        r: &B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        self.cycle(b, comm, timer, Ends::Outer(r, z))
    }

    /// The fp32 right-hand side of the cycle ← f − A u on the fp64 outer operator, in one pass
    /// ([`crate::backend::StencilKernels::residual_to`]); returns the local ‖f − A u‖². With
    /// [`MgPreconditioner::correct`] this is mixed-precision defect correction without fp64
    /// r and z fields. Refused where the hierarchy is fp64.
    pub fn residual_in(
        &mut self,
        b: &B,
        timer: &mut Timer,
        f: &B::Field,
        u: &B::Field,
    ) -> Result<f64> {
        let (fine, r32, _) = fp32_pair(&mut self.outer, "residual_in")?;
        let op0 = &self.h.levels[0].op;
        timer.run(b, Kernel::Residual, 0, || {
            b.residual_to(fine, f, u, op0, r32)
        })
    }

    /// [`MgPreconditioner::residual_in`] with the local ‖f − A u‖² into slot `out` of `s`
    /// instead of the host (for an iteration run on the device).
    pub fn residual_in_slot(
        &mut self,
        b: &B,
        f: &B::Field,
        u: &B::Field,
        s: &mut B::Scalars,
        out: usize,
    ) -> Result<()> {
        let (fine, r32, _) = fp32_pair(&mut self.outer, "residual_in")?;
        let op0 = &self.h.levels[0].op;
        b.residual_to_slots(fine, f, u, op0, r32, s, out)
    }

    /// Whether [`MgPreconditioner::correct`] can be recorded with `comm` (see
    /// [`MgPreconditioner::apply`]): no coarse CG (it reads its dot products on the host) and
    /// a communicator that only queues kernels.
    pub fn replayable<C: Comm<B>>(&self, comm: &C) -> bool {
        comm.queues_only() && !self.h.coarse_cg()
    }

    /// The addresses of the fields defect correction on `f` and `u` touches: the cycle's
    /// ([`MgPreconditioner::arrangement`]), then f and u.
    pub fn correction_key(&self, b: &B, f: &B::Field, u: &B::Field) -> Vec<u64> {
        let mut key = self.arrangement(b, &Ends::Inner { hold: false });
        key.push(b.address(f));
        key.push(b.address(u));
        key
    }

    /// u ← u + V(r), the cycle on the right-hand side left by [`MgPreconditioner::residual_in`]
    /// (recorded and replayed as [`MgPreconditioner::apply`]'s), its fp32 result added to the
    /// fp64 `u` in one pass ([`crate::backend::VectorKernels::axpy_from`]), or, where the
    /// smoother can leave the cycle's last half-sweep ([`Hierarchy::held_colour`]), in that
    /// half-sweep ([`crate::backend::LineKernels::smooth_color_correct`]: one kernel fewer and,
    /// on the GPU, 6 B per unknown less); u's halo is then exchanged with the outer operator.
    pub fn correct<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        u: &mut B::Field,
    ) -> Result<()> {
        fp32_pair(&mut self.outer, "correct")?;
        let held = self.h.held_colour::<C>(b, self.symmetric);
        let hold = held.is_some();
        self.cycle(b, comm, timer, Ends::Inner { hold })?;
        let (fine, r32, z32) = fp32_pair(&mut self.outer, "correct")?;
        let op0 = &self.h.levels[0].op;
        match held {
            Some(colour) => {
                let relax = self.h.relaxation(self.symmetric);
                timer.run(b, Kernel::SmoothColorCorrect, 0, || {
                    b.smooth_color_correct(op0, r32, z32, colour, relax, fine, u)
                })?
            }
            None => timer.run(b, Kernel::Vector, 0, || b.axpy_from(fine, 1.0, op0, z32, u))?,
        }
        timer.run(b, Kernel::Halo, 0, || comm.exchange(b, fine, u))
    }

    /// One cycle from zero between `ends`, recorded and replayed where the backend can
    /// (see [`MgPreconditioner::apply`]).
    fn cycle<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        mut ends: Ends<'_, B>,
    ) -> Result<()> {
        // A coarse CG reads its dot products back on the host: such a cycle is not replayed.
        if !comm.queues_only() || timer.enabled() || self.h.coarse_cg() {
            return self.cycle_now(b, comm, timer, &mut ends);
        }
        let key = self.arrangement(b, &ends);
        // Recorded once it has run `record_after` times (at once, but on NCCL ranks).
        let after = comm.record_after();
        if after > 0 && !self.rec.contains(&key) && self.rec.count_run(&key) < after {
            return self.cycle_now(b, comm, timer, &mut ends);
        }
        let mut rec = std::mem::take(&mut self.rec);
        let ran = b.replay(&mut rec, &key, &mut || {
            self.cycle_now(b, comm, timer, &mut ends)
        });
        self.rec = rec;
        if !ran? {
            // Replayed: the recorded kernels ran on this arrangement; make the host's swaps.
            let Some((_, swaps)) = self.swaps.iter().find(|(k, _)| *k == key) else {
                return Err(crate::error::StrataError::Backend {
                    backend: b.name(),
                    msg: "a V-cycle was replayed that was never recorded here".into(),
                });
            };
            let swaps = swaps.clone();
            self.swap(&mut ends, &swaps);
            return Ok(());
        }
        // Ran: learn its swaps, and check that they are all it changed; otherwise nothing
        // recorded for it may be replayed.
        let after = self.arrangement(b, &ends);
        let pairs = self.swap_pairs();
        let swaps = swaps_between(&key, &after, &pairs);
        if apply_swaps(&key, &pairs, &swaps) == after {
            // Kept only for what the backend recorded (nothing, on the host backends).
            if self.rec.contains(&key) && !self.swaps.iter().any(|(k, _)| *k == key) {
                self.swaps.push((key, swaps));
            }
        } else {
            self.rec
                .refuse("the cycle moved its fields in a way a replay cannot repeat".into());
        }
        Ok(())
    }

    /// [`MgPreconditioner::cycle`], its kernels queued one by one.
    fn cycle_now<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        ends: &mut Ends<'_, B>,
    ) -> Result<()> {
        let Self {
            h,
            zero,
            outer,
            symmetric,
            ..
        } = self;
        let sym = *symmetric;
        let (r, z) = match ends {
            Ends::Outer(r, z) => (*r, &mut **z),
            Ends::Inner { hold } => {
                let (_, r32, z32) = fp32_pair(outer, "correct")?;
                return h.precondition(b, comm, timer, r32, z32, zero, sym, *hold);
            }
        };
        let Some(m) = outer else {
            return h.precondition(b, comm, timer, r, z, zero, sym, false);
        };
        let (r32, z32) = &mut m.fp32;
        let op0 = &h.levels[0].op;
        timer.run(b, Kernel::Vector, 0, || b.convert(&m.fine, r, op0, r32))?;
        h.precondition(b, comm, timer, r32, z32, zero, sym, false)?;
        let op0 = &h.levels[0].op;
        timer.run(b, Kernel::Vector, 0, || b.convert(op0, z32, &m.fine, z))?;
        if m.corners {
            // The outer operator's cross terms read the corners of tiles inside a panel: z's
            // halo with the fp64 operator's exchange.
            timer.run(b, Kernel::Halo, 0, || comm.exchange(b, &m.fine, z))?;
        }
        Ok(())
    }

    /// Forgets what was recorded (operators or communicator changed).
    fn forget_recordings(&mut self) {
        self.rec.clear();
        self.swaps.clear();
    }

    /// The addresses of the fields a cycle touches: r, z, the fp32 r and z of mixed precision
    /// (0 without), then each level's u and work field, then those of the levels gathered whole
    /// onto every rank (the first one's u is the whole iterate swapped into it).
    fn arrangement(&self, b: &B, ends: &Ends<'_, B>) -> Vec<u64> {
        let (r32, z32) = match self.outer.as_ref().map(|m| &m.fp32) {
            Some((r32, z32)) => (b.address(r32), b.address(z32)),
            None => (0, 0),
        };
        let (r, z) = match ends {
            Ends::Outer(r, z) => (b.address(r), b.address(z)),
            Ends::Inner { .. } => (0, 0),
        };
        let mut a = vec![r, z, r32, z32];
        for l in &self.h.levels {
            a.push(b.address(&l.u));
            a.push(b.address(&l.work));
        }
        if let Some((whole, u)) = self.h.gathered() {
            for (lev, l) in whole.levels.iter().enumerate() {
                a.push(b.address(if lev == 0 { u } else { &l.u }));
                a.push(b.address(&l.work));
            }
        }
        a
    }

    /// The pairs of [`MgPreconditioner::arrangement`]'s entries a cycle may swap, one per
    /// level: its iterate (on the finest level z, or the fp32 z) and its work field.
    fn swap_pairs(&self) -> Vec<(usize, usize)> {
        let fine = if self.storage() == Storage::F32 { 3 } else { 1 };
        let gathered = self.h.gathered().map_or(0, |(whole, _)| whole.levels.len());
        (0..self.h.levels.len() + gathered)
            .map(|lev| (if lev == 0 { fine } else { 4 + 2 * lev }, 5 + 2 * lev))
            .collect()
    }

    /// Makes the swaps of a replayed cycle on the host (see [`swaps_between`]).
    fn swap(&mut self, ends: &mut Ends<'_, B>, swaps: &[bool]) {
        let Self { h, outer, .. } = self;
        let fine = match (outer.as_mut().map(|m| &mut m.fp32), ends) {
            (Some((_, z32)), _) => z32,
            (None, Ends::Outer(_, z)) => &mut **z,
            // Inner ends exist only with an fp32 hierarchy (checked before the cycle ran).
            (None, Ends::Inner { .. }) => return,
        };
        let n = h.levels.len();
        for (lev, l) in h.levels.iter_mut().enumerate() {
            if swaps[lev] {
                let u = if lev == 0 { &mut *fine } else { &mut l.u };
                std::mem::swap(u, &mut l.work);
            }
        }
        if let Some((whole, u0)) = h.gathered_mut() {
            for (lev, l) in whole.levels.iter_mut().enumerate() {
                if swaps[n + lev] {
                    let u = if lev == 0 { &mut *u0 } else { &mut l.u };
                    std::mem::swap(u, &mut l.work);
                }
            }
        }
    }
}

/// The fp64 outer operator and the fp32 r and z of an fp32 hierarchy's outer side; refused
/// (naming `what`) where the hierarchy is fp64.
fn fp32_pair<'a, B: Backend>(
    outer: &'a mut Option<Outer<B>>,
    what: &str,
) -> Result<(&'a B::LevelOp, &'a mut B::Field, &'a mut B::Field)> {
    match outer {
        Some(Outer {
            fine,
            fp32: (r32, z32),
            ..
        }) => Ok((fine, r32, z32)),
        None => invalid(what, "the hierarchy is not stored in fp32"),
    }
}

/// Where a cycle's right-hand side comes from and its result goes.
enum Ends<'a, B: Backend> {
    /// The outer iteration's fine fields r and z (converted to and from the fp32 pair where
    /// the hierarchy is fp32).
    Outer(&'a B::Field, &'a mut B::Field),
    /// The fp32 pair held by the preconditioner ([`MgPreconditioner::residual_in`],
    /// [`MgPreconditioner::correct`]); `hold`: the cycle leaves its last half-sweep to
    /// `correct` ([`Hierarchy::held_colour`], a property of the hierarchy, so not part of the
    /// recorded cycle's arrangement).
    Inner { hold: bool },
}

/// Per pair of `pairs`, whether a cycle swapped the two fields, from the arrangements
/// ([`MgPreconditioner::arrangement`]) before and after it.
fn swaps_between(before: &[u64], after: &[u64], pairs: &[(usize, usize)]) -> Vec<bool> {
    pairs
        .iter()
        .map(|&(i, j)| before[i] != before[j] && after[i] == before[j])
        .collect()
}

/// The arrangement `before` with the pairs of `swaps` swapped (see [`swaps_between`]).
fn apply_swaps(before: &[u64], pairs: &[(usize, usize)], swaps: &[bool]) -> Vec<u64> {
    let mut a = before.to_vec();
    for (&(i, j), &s) in pairs.iter().zip(swaps) {
        if s {
            a.swap(i, j);
        }
    }
    a
}

/// `stencils` with their fields stored in `storage`, as the hierarchy relaxes them.
fn with_storage(stencils: &[LevelStencil], storage: Storage) -> Vec<LevelStencil> {
    stencils
        .iter()
        .map(|s| s.clone().with_storage(storage))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{apply_swaps, swaps_between};

    #[test]
    fn a_cycles_swaps_are_learnt_and_repeated() {
        // r, z, r32, z32, then (u, work) of two levels; z swapped with the finest work field,
        // the coarse level's u with its work field.
        let pairs = [(1, 5), (6, 7)];
        let before = [10, 11, 0, 0, 12, 13, 14, 15];
        let after = [10, 13, 0, 0, 12, 11, 15, 14];
        let swaps = swaps_between(&before, &after, &pairs);
        assert_eq!(swaps, [true, true]);
        assert_eq!(apply_swaps(&before, &pairs, &swaps), after);
        // Nothing moved.
        assert_eq!(swaps_between(&before, &before, &pairs), [false, false]);
        // A move that is not a swap of a pair is not mistaken for one.
        let odd = [10, 13, 0, 0, 11, 12, 14, 15];
        let swaps = swaps_between(&before, &odd, &pairs);
        assert_ne!(apply_swaps(&before, &pairs, &swaps), odd);
        // Host backends give every field address 0: no swap is seen, and none is made.
        let zeros = [0; 8];
        assert_eq!(swaps_between(&zeros, &zeros, &pairs), [false, false]);
    }
}
