//! Communicators: halo exchange and global sums between the ranks of a decomposition.
//!
//! The solvers call [`Comm::exchange`] where the paper exchanges halos (after Tridiag in CG;
//! after every multigrid kernel but Residual) and [`Comm::sum`] for every global reduction.
//! A communicator is typed by the backend whose fields it exchanges (`Comm<B>`), so a
//! communicator that moves device memory directly (NCCL) is a `Comm` of the CUDA backend only,
//! and the compiler, not a run-time check, says which pairs work. [`SerialComm`] is the
//! single-process communicator: the halo keeps its walls' zeros, a periodic edge's halo is
//! the block's own far side, and sums are local.

use crate::backend::tiled::{Handle, InnerField, Tiled, TiledLevel};
use crate::backend::{face_len, Backend, Fields, TransferKernels};
use crate::error::{invalid, Result};
use crate::grid::Side;
use crate::problem::{Coefficients, ProblemParams};
use crate::stencil::LevelStencil;

/// Halo exchange and global reductions for fields of backend `B`.
pub trait Comm<B: Backend> {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Allocates, once, what exchanges on level `lev` need (face buffers); called for every
    /// level at set-up, so that no exchange allocates. Calling it again for a level of the same
    /// size does nothing.
    fn prepare(&self, b: &B, lev: &B::LevelOp) -> Result<()>;
    /// Fills the halo of `x` with the neighbouring ranks' boundary values (the physical boundary
    /// keeps its zeros).
    fn exchange(&self, b: &B, lev: &B::LevelOp, x: &mut B::Field) -> Result<()>;
    /// Replaces each value by its sum over all ranks.
    fn sum(&self, values: &mut [f64]) -> Result<()>;
    /// Returns once every rank has called it (a sum of nothing).
    fn barrier(&self) -> Result<()> {
        self.sum(&mut [0.0])
    }
    /// Replaces slots `at .. at + n` of `s` by their sums over all ranks. By default through
    /// the host with [`Comm::sum`] (nothing to do on one rank).
    fn sum_slots(&self, b: &B, s: &mut B::Scalars, at: usize, n: usize) -> Result<()> {
        if self.size() == 1 {
            return Ok(());
        }
        let mut v = crate::backend::host_slots(b, s)?;
        self.sum(&mut v[at..at + n])?;
        b.write_scalars(s, at, &v[at..at + n])
    }
    /// For each pair `(x, y)` of fields of level `op`: `y` ← the sum of `x` over all ranks
    /// (every rank gives fields of the same level): the whole coarse level gathered onto every
    /// rank, each rank's `x` holding its own block and zeros elsewhere (docs/MODEL.md §24), so
    /// the sum is exact. By default through the host: the interiors downloaded, summed with
    /// [`Comm::sum`], uploaded (`y`'s halo is left as it was); NCCL sums the device fields, all
    /// pairs in one group, on the backend's stream.
    fn sum_fields(
        &self,
        b: &B,
        op: &B::LevelOp,
        pairs: &mut [(&B::Field, &mut B::Field)],
    ) -> Result<()> {
        let cells = b.stencil(op).cells();
        let mut all = vec![0.0; cells * pairs.len()];
        for ((x, _), host) in pairs.iter().zip(all.chunks_exact_mut(cells.max(1))) {
            b.download(op, x, host)?;
        }
        if self.size() > 1 {
            self.sum(&mut all)?;
        }
        for ((_, y), host) in pairs.iter_mut().zip(all.chunks_exact(cells.max(1))) {
            b.upload(op, host, y)?;
        }
        Ok(())
    }
    /// Whether [`Comm::exchange`] only queues the backend's own kernels (no host
    /// communication, no wait): then work that exchanges halos may be recorded and replayed
    /// ([`crate::backend::Fields::replay`]). False by default.
    fn queues_only(&self) -> bool {
        false
    }
    /// How many times a piece of work runs directly before it is recorded, where
    /// [`Comm::queues_only`]: 0 (the default) records it at its first run. A communicator whose
    /// messages cost much to record (NCCL's) waits until the work has shown itself repeated, so
    /// that a one-off solve does not pay for a recording it never replays.
    fn record_after(&self) -> usize {
        0
    }
    /// The sides ([`Side::index`]) whose halo holds cells of a neighbouring rank's block of the
    /// same panel or box, in the same frame: after a prolongation the multigrid cycle fills
    /// them with [`crate::backend::StencilKernels::prolongate_faces`] (the neighbour's values,
    /// bit for bit) instead of exchanging. `None` (the default): exchange. A communicator that
    /// returns sides in both x and y fills the halo corners in
    /// [`Comm::exchange_with_corners`] (a face's end cells read the coarse halo's corner).
    fn prolongation_sides(&self) -> Option<[bool; 4]> {
        None
    }
    /// [`Comm::exchange`], and the halo corners whose diagonal block is another rank's (where
    /// both sides at a corner have a neighbour) in the same round of messages: the last
    /// exchange of a coarse level in the multigrid cycle, whose corners the prolongation into
    /// the finer level's halo reads ([`Comm::prolongation_sides`]). By default `exchange`.
    fn exchange_with_corners(&self, b: &B, lev: &B::LevelOp, x: &mut B::Field) -> Result<()> {
        self.exchange(b, lev, x)
    }
    /// Sends `send[s]` (host values; [`Side::index`]) to the rank across side `s` of this
    /// rank's block and returns, per side, what that rank sent back across the same line (as
    /// long as what was sent that way): the rings of coefficient fields of a block
    /// ([`fill_rings`]), once per level at set-up. A side whose `send` is `None` exchanges
    /// nothing. By default only nothing can be exchanged (a communicator without neighbouring
    /// ranks).
    fn swap_faces(&self, send: [Option<Vec<f64>>; 4]) -> Result<[Option<Vec<f64>>; 4]> {
        if send.iter().any(Option::is_some) {
            return invalid(
                "comm",
                "this communicator has no neighbouring ranks to exchange coefficient rings with",
            );
        }
        Ok([None, None, None, None])
    }
    /// Every rank's `local` host values (any length per rank), in rank order, on every rank:
    /// an all-gather, for the coarsest level solved whole on every rank
    /// (docs/MODEL.md §9.4). By default only one rank's (a communicator of one process); a
    /// communicator of several ranks without it refuses, and the coarse solve then stays
    /// distributed.
    fn all_gather(&self, local: &[f64]) -> Result<Vec<Vec<f64>>> {
        if self.size() == 1 {
            return Ok(vec![local.to_vec()]);
        }
        Err(crate::StrataError::Comm(
            "this communicator gathers nothing between ranks".into(),
        ))
    }
}

/// Validates `p` on every rank of a distributed solve together (collective: every rank calls it
/// for the same set-up): each rank checks its own fields
/// (coefficient fields of its block, [`Coefficients::window`], are seen by that rank alone), and
/// all learn whether any rank's were refused, or whether the ranks disagree on what they gave
/// (fields or none, a block's or the whole level's, an advection vector or none), so that all
/// return an error together instead of some waiting for the others' rings.
pub fn validate_on_ranks<B: Backend, C: Comm<B>>(comm: &C, p: &ProblemParams) -> Result<()> {
    let local = p.validate();
    if comm.size() == 1 {
        return local;
    }
    let c = p.coefficients.as_deref();
    let flag = |b: bool| f64::from(u8::from(b));
    let mut counts = [
        flag(local.is_err()),
        flag(c.is_some()),
        flag(c.is_some_and(|c| c.window.is_some())),
        flag(c.is_some_and(|c| c.xi.is_some())),
    ];
    comm.sum(&mut counts)?;
    let size = comm.size() as f64;
    let [refused, given, blocks, with_xi] = counts;
    let split = |count: f64| count > 0.0 && count < size;
    let why = if refused > 0.0 {
        format!("of {refused} rank(s) were refused (each of those ranks' errors says why)")
    } else if split(given) {
        format!("were given on {given} of {size} ranks: give them on all or none")
    } else if split(blocks) {
        format!("were a block's own on {blocks} of {size} ranks, the whole level's on the others")
    } else if split(with_xi) {
        format!("have an advection vector on {with_xi} of {size} ranks: give it on all or none")
    } else {
        return local;
    };
    local.and_then(|()| invalid("coefficients", why))
}

/// Fills the ring of the coefficient fields of a rank's block ([`Coefficients::window`]) from
/// the ranks across its sides (their [`Coefficients::edges`], through [`Comm::swap_faces`]):
/// every rank of the job calls it for the same level at once. Nothing for whole-level fields.
pub fn fill_rings<B: Backend, C: Comm<B>>(comm: &C, c: &mut Coefficients) -> Result<()> {
    if c.window.is_none() {
        return Ok(());
    }
    let rings = comm.swap_faces(c.edges())?;
    c.set_rings(rings)
}

/// [`Comm::prolongation_sides`] of a communicator of a rank grid over one panel or box whose
/// block has a neighbour across the sides set in `neighbours` ([`Side::index`]), and which
/// fills the diagonal ranks' corners in [`Comm::exchange_with_corners`] (a face cell at the end
/// of a face reads a corner of the coarse halo): those sides, or `None` where there is no
/// neighbour. (The cycle uses them unless [`crate::solver::MgParams::prolongate_halos`] is off.)
pub fn prolongation_sides(neighbours: [bool; 4]) -> Option<[bool; 4]> {
    neighbours.contains(&true).then_some(neighbours)
}

/// The communicator of a single process.
#[derive(Debug, Default, Clone, Copy)]
pub struct SerialComm;

impl<B: Backend> Comm<B> for SerialComm {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn prepare(&self, b: &B, lev: &B::LevelOp) -> Result<()> {
        refuse_tiles(b.stencil(lev))
    }

    fn exchange(&self, b: &B, lev: &B::LevelOp, x: &mut B::Field) -> Result<()> {
        wrap_periodic(b, lev, x)
    }

    fn sum(&self, _values: &mut [f64]) -> Result<()> {
        Ok(())
    }

    fn queues_only(&self) -> bool {
        true
    }
}

/// Fills the halos of `x` across the periodic edges of its block from its own far side
/// ([`TransferKernels::wrap_halo`]): the exchange of a block that is its own neighbour there
/// (the whole level in one process, or a rank alone in its row or column of the rank grid).
/// Nothing on a level with no periodic edge.
pub fn wrap_periodic<B: Backend>(b: &B, lev: &B::LevelOp, x: &mut B::Field) -> Result<()> {
    let block = b.stencil(lev).block;
    if !block.bc.any_periodic() {
        return Ok(());
    }
    // Its own neighbour only where the block spans the whole direction.
    let sides = Side::ALL.map(|side| {
        let own = match side {
            Side::West | Side::East => block.nx == block.n,
            Side::South | Side::North => block.ny == block.n,
        };
        own && block.periodic(side)
    });
    if sides.contains(&true) {
        b.wrap_halos(lev, x, sides)?;
    }
    Ok(())
}

/// Refuses the levels of the sphere: their halos join tiles, which only [`SphereComm`] fills
/// (a communicator that left them at zero would solve six walled panels instead, silently).
pub fn refuse_tiles(s: &LevelStencil) -> Result<()> {
    if s.tiles.is_some() {
        return invalid(
            "comm",
            "the sphere's tiles need the sphere's communicator (SphereComm) to fill their halos",
        );
    }
    Ok(())
}

/// The communicator of a sphere whose tiles are all in this process: each halo is filled from
/// the tile across it ([`crate::grid::sphere::tile_link`], rotated or reversed across panel
/// edges) by the inner backend's [`crate::backend::TransferKernels::copy_halos`]; sums are
/// local (the tiled backend already adds its tiles' partials).
#[derive(Debug, Default, Clone, Copy)]
pub struct SphereComm;

/// Fills every halo of the tiles of `x` whose source tile is local (all of them for a
/// single-process sphere): the level's [`TiledLevel::local_links`] in one
/// [`TransferKernels::copy_halos`].
pub fn exchange_local_tiles<H: Handle>(
    b: &Tiled<H>,
    lev: &TiledLevel<H::Inner>,
    x: &mut [InnerField<H>],
) -> Result<()> {
    b.inner().copy_halos(&lev.tiles, x, &lev.local_links)?;
    // The corners inside a panel, after the faces (the nine-point operator's diagonal cells).
    for (dst, c, src) in &lev.local_corners {
        let (s, d) = crate::backend::pair(x, *src, *dst);
        b.inner()
            .copy_column(&lev.tiles[*src], s, c.src_at, &lev.tiles[*dst], d, c.dst_at)?;
    }
    Ok(())
}

fn tile_stencils(s: &LevelStencil) -> Result<&[LevelStencil]> {
    match &s.tiles {
        Some(t) => Ok(t),
        None => invalid(
            "comm",
            "the sphere's communicator serves the sphere's levels only",
        ),
    }
}

impl<H: Handle> Comm<Tiled<H>> for SphereComm {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn prepare(&self, b: &Tiled<H>, lev: &TiledLevel<H::Inner>) -> Result<()> {
        let tiles = tile_stencils(b.stencil(lev))?;
        let missing = |tile: &LevelStencil, what: String| {
            invalid(
                "tiles",
                format!(
                    "{:?} has no {what} in this process: a sphere on one process needs all its tiles",
                    tile.block
                ),
            )
        };
        for (t, tile) in tiles.iter().enumerate() {
            for side in Side::ALL {
                if !lev.local_links.iter().any(|l| l.dst == t && l.side == side) {
                    return missing(tile, format!("neighbour across {side:?}"));
                }
            }
            if tile.cross.is_some() {
                for c in crate::grid::sphere::tile_corners(&tile.block) {
                    if !lev
                        .local_corners
                        .iter()
                        .any(|(d, l, _)| *d == t && l.corner == c.corner)
                    {
                        return missing(tile, format!("diagonal tile at corner {}", c.corner));
                    }
                }
            }
        }
        Ok(())
    }

    fn exchange(
        &self,
        b: &Tiled<H>,
        lev: &TiledLevel<H::Inner>,
        x: &mut Vec<InnerField<H>>,
    ) -> Result<()> {
        exchange_local_tiles(b, lev, x)
    }

    fn sum(&self, _values: &mut [f64]) -> Result<()> {
        Ok(())
    }

    fn queues_only(&self) -> bool {
        true
    }
}

/// The send and receive buffers of the faces of one block size that have a neighbour.
pub struct Faces<F> {
    /// Values per face, west/east and south/north: identifies the block size.
    key: (usize, usize),
    /// Send buffer per side ([`Side::index`]), `None` where there is no neighbour.
    pub send: [Option<F>; 4],
    /// Receive buffer per side, `None` where there is no neighbour.
    pub recv: [Option<F>; 4],
}

/// Face buffers per block size, allocated at set-up and reused by every exchange: what a
/// communicator keeps for the levels it serves. Communicators choose what `F` is (the
/// backend's own face buffer, host vectors, ...).
pub struct FaceStore<F> {
    levels: Vec<Faces<F>>,
}

impl<F> Default for FaceStore<F> {
    fn default() -> Self {
        Self { levels: Vec::new() }
    }
}

impl<F> FaceStore<F> {
    /// The buffers for the level `lev` of backend `b`, allocated with `alloc(len)` for each side
    /// with a neighbour (`neighbours[side.index()]`) the first time this block size is seen.
    pub fn level<B: Backend>(
        &mut self,
        b: &B,
        lev: &B::LevelOp,
        neighbours: [bool; 4],
        mut alloc: impl FnMut(usize) -> Result<F>,
    ) -> Result<&mut Faces<F>> {
        let s = b.stencil(lev);
        refuse_tiles(s)?;
        let key = (face_len(s, Side::West), face_len(s, Side::South));
        let at = match self.levels.iter().position(|f| f.key == key) {
            Some(at) => at,
            None => {
                let mut faces = Faces {
                    key,
                    send: [None, None, None, None],
                    recv: [None, None, None, None],
                };
                for side in Side::ALL {
                    let t = side.index();
                    if neighbours[t] {
                        faces.send[t] = Some(alloc(face_len(s, side))?);
                        faces.recv[t] = Some(alloc(face_len(s, side))?);
                    }
                }
                self.levels.push(faces);
                self.levels.len() - 1
            }
        };
        Ok(&mut self.levels[at])
    }
}

/// The send and receive buffers of the halo corners that have a diagonal rank, one column
/// (`nz` values) each, per corner (0 north-east … 3 south-west, [`crate::grid::corner_cells`]):
/// what [`Comm::exchange_with_corners`] moves besides the faces. Allocated once (the column
/// length is every level's).
pub struct Corners<F> {
    nz: usize,
    /// Send buffer per corner, `None` where there is no diagonal rank.
    pub send: [Option<F>; 4],
    /// Receive buffer per corner, `None` where there is no diagonal rank.
    pub recv: [Option<F>; 4],
}

impl<F> Default for Corners<F> {
    fn default() -> Self {
        Self {
            nz: 0,
            send: [None, None, None, None],
            recv: [None, None, None, None],
        }
    }
}

impl<F> Corners<F> {
    /// The buffers for columns of `nz` values, allocated with `alloc(nz)` for each corner with
    /// a diagonal rank (`diagonals[corner]`) the first time (or when `nz` changed).
    pub fn columns(
        &mut self,
        nz: usize,
        diagonals: [bool; 4],
        mut alloc: impl FnMut(usize) -> Result<F>,
    ) -> Result<&mut Self> {
        if self.nz != nz {
            *self = Self::default();
            for (c, has) in diagonals.into_iter().enumerate() {
                if has {
                    self.send[c] = Some(alloc(nz)?);
                    self.recv[c] = Some(alloc(nz)?);
                }
            }
            self.nz = nz;
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::prolongation_sides as neighbour_sides;

    #[test]
    fn blocks_with_a_neighbour_prolongate_into_their_halos() {
        assert_eq!(
            neighbour_sides([true, true, false, false]),
            Some([true, true, false, false])
        );
        assert_eq!(
            neighbour_sides([false, true, false, true]),
            Some([false, true, false, true])
        );
        assert_eq!(neighbour_sides([true; 4]), Some([true; 4]));
        // No neighbour: nothing to leave out.
        assert_eq!(neighbour_sides([false; 4]), None);
    }
}
