//! The backend trait: every kernel the solvers need, declared once.
//!
//! A backend owns its fields' memory layout and its copy of each level's stencil. The solvers in
//! [`crate::solver`] are written once over this trait (and [`crate::comm::Comm`]); they never name
//! a backend. Every kernel works on the interior of a block and reads neighbours from the halo,
//! which holds zeros at the physical boundary (homogeneous Dirichlet) and neighbours' values in a
//! decomposition. Reductions return the block's local partial; the communicator sums them.
//!
//! Traffic comments use the paper's unit: one 8-byte value read or written per cell.

pub mod cpu;
mod line_gs;
mod prolong;
mod recording;
pub mod reference;
mod scalars;
pub mod tiled;

pub use recording::Recording;
pub(crate) use scalars::host_scalars;
pub use scalars::{
    check_scalar_ops, check_slots, host_slots, Coef, DeviceTest, ScalarKernels, ScalarOp,
    MAX_DEVICE_ITERATIONS, MAX_SCALAR_OPS,
};

/// The backend traits, for calling kernels on a concrete backend type:
/// `use strata::backend::prelude::*;`.
pub mod prelude {
    pub use super::{
        Backend, Fields, LineKernels, ScalarKernels, StencilKernels, TransferKernels, VectorKernels,
    };
}

/// The face-buffer methods of a backend whose face buffers are host vectors of `f64` (the CPU
/// and reference backends; packing and unpacking, which depend on the field's storage, are
/// each backend's own).
macro_rules! host_face_buffers {
    () => {
        type FaceBuffer = Vec<f64>;

        fn alloc_face(&self, len: usize) -> Result<Vec<f64>> {
            Ok(vec![0.0; len])
        }

        fn face_host<'a>(&self, buf: &'a Vec<f64>) -> Option<&'a [f64]> {
            Some(buf)
        }

        fn face_host_mut<'a>(&self, buf: &'a mut Vec<f64>) -> Option<&'a mut [f64]> {
            Some(buf)
        }

        fn reverse_face(&self, op: &LevelStencil, buf: &mut Vec<f64>) -> Result<()> {
            $crate::field::reverse_columns(buf, op.nz);
            Ok(())
        }

        fn face_to_host(&self, buf: &Vec<f64>, host: &mut [f64]) -> Result<()> {
            host.copy_from_slice(buf);
            Ok(())
        }

        fn face_from_host(&self, host: &[f64], buf: &mut Vec<f64>) -> Result<()> {
            buf.copy_from_slice(host);
            Ok(())
        }
    };
}
pub(crate) use host_face_buffers;

use crate::error::Result;
pub use crate::grid::Side;
use crate::precision::Storage;

/// One halo filled from another block of the same process ([`TransferKernels::copy_halos`]):
/// the halo of block `dst` across `side` from the interior layer of block `src` next to
/// `src_side`, the other way along the face if `reversed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaloLink {
    /// The block whose halo is filled (an index into the blocks).
    pub dst: usize,
    /// Its side.
    pub side: Side,
    /// The block read (another index).
    pub src: usize,
    /// The side of `src` whose interior layer is read.
    pub src_side: Side,
    /// Whether the cells run the other way along the face.
    pub reversed: bool,
}

/// One part of a rank's halo exchange ([`TransferKernels::pack_halo`]): a face, or the column at
/// a corner (0 north-east, 1 north-west, 2 south-east, 3 south-west; the block's own corner cell
/// is sent, the halo corner filled: [`crate::grid::corner_cells`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloPart {
    /// The face across a side: its interior layer is sent, its halo filled.
    Face(Side),
    /// The column at a corner.
    Corner(usize),
}

impl HaloPart {
    /// Values the part holds on a level: a face's [`face_len`], a corner's `nz`.
    pub fn len(&self, s: &LevelStencil) -> usize {
        match *self {
            HaloPart::Face(side) => face_len(s, side),
            HaloPart::Corner(_) => s.nz,
        }
    }

    /// Halo-inclusive (own cell, halo cell) of a corner part; `None` for a face or a corner
    /// number above 3.
    pub fn corner_cells(&self, s: &LevelStencil) -> Option<((usize, usize), (usize, usize))> {
        match *self {
            HaloPart::Corner(c) if c < 4 => {
                let (halo, own) = crate::grid::corner_cells(s.nx(), s.ny(), c);
                Some((own, halo))
            }
            _ => None,
        }
    }
}

/// One part of the halo exchange of several blocks of one process with other processes
/// ([`TransferKernels::pack_blocks`], [`TransferKernels::unpack_blocks`]): `part` of block
/// `block` (an index into the blocks), whose received values run the other way along the face
/// if `reversed` (a face across an edge of the sphere's cube that runs the other way there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPart {
    /// The block (an index into the blocks).
    pub block: usize,
    /// Its face or corner.
    pub part: HaloPart,
    /// Whether the received columns run the other way along the face (unpacking only).
    pub reversed: bool,
}

/// The default [`TransferKernels::pack_blocks`]: one [`TransferKernels::pack_halo`] per part.
pub fn pack_blocks_one_by_one<B: TransferKernels + ?Sized>(
    b: &B,
    ops: &[B::LevelOp],
    x: &[B::Field],
    parts: &mut [(BlockPart, &mut B::FaceBuffer)],
) -> Result<()> {
    for (p, buf) in parts.iter_mut() {
        check_block(ops.len(), x.len(), p.block)?;
        b.pack_halo(&ops[p.block], &x[p.block], &mut [(p.part, &mut **buf)])?;
    }
    Ok(())
}

/// The default [`TransferKernels::unpack_blocks`]: per part, the buffer reversed in place where
/// the part says so ([`TransferKernels::reverse_face`]), then one
/// [`TransferKernels::unpack_halo`].
pub fn unpack_blocks_one_by_one<B: TransferKernels + ?Sized>(
    b: &B,
    ops: &[B::LevelOp],
    x: &mut [B::Field],
    parts: &mut [(BlockPart, &mut B::FaceBuffer)],
) -> Result<()> {
    for (p, buf) in parts.iter_mut() {
        check_block(ops.len(), x.len(), p.block)?;
        let op = &ops[p.block];
        if p.reversed {
            b.reverse_face(op, buf)?;
        }
        b.unpack_halo(op, &mut x[p.block], &[(p.part, &**buf)])?;
    }
    Ok(())
}

/// An error unless block `i` is among `ops` operators and `fields` fields.
pub fn check_block(ops: usize, fields: usize, i: usize) -> Result<()> {
    if i >= ops || i >= fields {
        return crate::error::invalid(
            "halo part",
            format!("block {i} of {ops} operators and {fields} fields"),
        );
    }
    Ok(())
}

/// The default [`TransferKernels::pack_halo`]: one `pack_face` or `pack_column` per part.
pub fn pack_halo_one_by_one<B: TransferKernels + ?Sized>(
    b: &B,
    op: &B::LevelOp,
    x: &B::Field,
    parts: &mut [(HaloPart, &mut B::FaceBuffer)],
) -> Result<()> {
    for (part, buf) in parts.iter_mut() {
        match *part {
            HaloPart::Face(side) => b.pack_face(op, x, side, buf)?,
            HaloPart::Corner(_) => {
                let (own, _) = corner_part(b.stencil(op), part)?;
                b.pack_column(op, x, own, buf)?
            }
        }
    }
    Ok(())
}

/// The default [`TransferKernels::unpack_halo`]: one `unpack_face` or `unpack_column` per part.
pub fn unpack_halo_one_by_one<B: TransferKernels + ?Sized>(
    b: &B,
    op: &B::LevelOp,
    x: &mut B::Field,
    parts: &[(HaloPart, &B::FaceBuffer)],
) -> Result<()> {
    for (part, buf) in parts {
        match *part {
            HaloPart::Face(side) => b.unpack_face(op, x, side, buf)?,
            HaloPart::Corner(_) => {
                let (_, halo) = corner_part(b.stencil(op), part)?;
                b.unpack_column(op, x, halo, buf)?
            }
        }
    }
    Ok(())
}

/// A corner part's cells, or an error for a corner number above 3.
fn corner_part(s: &LevelStencil, part: &HaloPart) -> Result<((usize, usize), (usize, usize))> {
    match part.corner_cells(s) {
        Some(cells) => Ok(cells),
        None => crate::error::invalid("halo part", format!("{part:?} is not a corner 0..=3")),
    }
}

/// Checks a column index (halo-inclusive, within the block and its halo) and a buffer of `nz`
/// values for [`TransferKernels::pack_column`] and [`TransferKernels::unpack_column`].
pub fn check_column(s: &LevelStencil, (ih, jh): (usize, usize), len: usize) -> Result<()> {
    if ih > s.nx() + 1 || jh > s.ny() + 1 || len != s.nz {
        return crate::error::invalid(
            "column",
            format!(
                "({ih}, {jh}) with {len} values is not a column of a {}x{}x{} block with its halo",
                s.nx(),
                s.ny(),
                s.nz
            ),
        );
    }
    Ok(())
}

/// Checks the rectangles of [`TransferKernels::copy_columns`]: `w` columns from `src_at` of the
/// source level `s` and from `at` of the destination level `d`, each within its block and halo,
/// on levels of one `nz`.
pub fn check_columns(
    s: &LevelStencil,
    src_at: (usize, usize),
    d: &LevelStencil,
    at: (usize, usize),
    (wx, wy): (usize, usize),
) -> Result<()> {
    let inside =
        |l: &LevelStencil, (i, j): (usize, usize)| i + wx <= l.nx() + 2 && j + wy <= l.ny() + 2;
    if s.nz != d.nz || !inside(s, src_at) || !inside(d, at) {
        return crate::error::invalid(
            "columns",
            format!(
                "{wx}x{wy} columns from ({}, {}) of a {}x{}x{} block into ({}, {}) of a {}x{}x{} \
                 block do not fit their halo-inclusive blocks",
                src_at.0,
                src_at.1,
                s.nx(),
                s.ny(),
                s.nz,
                at.0,
                at.1,
                d.nx(),
                d.ny(),
                d.nz
            ),
        );
    }
    Ok(())
}

/// Prepares the operators of `stencils` into `ops` (as many, in order): every new operator first,
/// so that a failure leaves the old ones in place — unless every stencil's coefficient fields
/// are in the backend's memory ([`LevelStencil::resident`], a model's fields set every step):
/// then each level is made in place where the backend can ([`Fields::refresh_level`]: no
/// second set of entry arrays, which a large problem may have no memory for), and a failure may
/// leave some levels new and others old (the caller sets the fields again).
pub fn replace_levels<B: Fields + ?Sized>(
    b: &B,
    ops: Vec<&mut B::LevelOp>,
    stencils: &[LevelStencil],
) -> Result<()> {
    if ops.len() != stencils.len() {
        return crate::error::invalid(
            "operator",
            format!(
                "{} levels given for {} prepared ones",
                stencils.len(),
                ops.len()
            ),
        );
    }
    if stencils.iter().all(|s| s.resident.is_some()) {
        for (op, s) in ops.into_iter().zip(stencils) {
            if !b.refresh_level(op, s)? {
                *op = b.prepare_level(s)?;
            }
        }
        return Ok(());
    }
    let new = stencils
        .iter()
        .map(|s| b.prepare_level(s))
        .collect::<Result<Vec<_>>>()?;
    for (op, n) in ops.into_iter().zip(new) {
        *op = n;
    }
    Ok(())
}

/// [`TransferKernels::copy_halos`] as one [`TransferKernels::copy_halo`] per link: the default,
/// and the fallback of a backend whose batched form does not apply.
pub fn copy_halos_one_by_one<B: TransferKernels + ?Sized>(
    b: &B,
    ops: &[B::LevelOp],
    x: &mut [B::Field],
    links: &[HaloLink],
) -> Result<()> {
    for l in links {
        let (src, dst) = pair(x, l.src, l.dst);
        b.copy_halo(
            &ops[l.src],
            src,
            l.src_side,
            &ops[l.dst],
            dst,
            l.side,
            l.reversed,
        )?;
    }
    Ok(())
}

/// Checks that two level stencils passed to [`TransferKernels::convert`] are of the same block.
pub fn check_convert(from: &LevelStencil, to: &LevelStencil) -> Result<()> {
    if (from.block, from.nz) != (to.block, to.nz) {
        return crate::error::invalid(
            "convert",
            format!(
                "the two levels are of different blocks ({}×{}×{} and {}×{}×{})",
                from.nx(),
                from.ny(),
                from.nz,
                to.nx(),
                to.ny(),
                to.nz
            ),
        );
    }
    Ok(())
}

/// `(&v[a], &mut v[b])` for `a ≠ b`.
pub fn pair<T>(v: &mut [T], a: usize, b: usize) -> (&T, &mut T) {
    assert_ne!(a, b, "a block is never its own neighbour");
    if a < b {
        let (l, r) = v.split_at_mut(b);
        (&l[a], &mut r[0])
    } else {
        let (l, r) = v.split_at_mut(a);
        (&r[0], &mut l[b])
    }
}
use crate::stencil::LevelStencil;

/// Values on one face of a level's block: `ny * nz` for west/east, `nx * nz` for south/north.
pub fn face_len(stencil: &LevelStencil, side: Side) -> usize {
    stencil.block.face_len(side, stencil.nz)
}

/// Kernels run and host launches made by a backend ([`Fields::launches`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Launches {
    /// Kernels run (a replayed recording's kernels counted each time it is replayed).
    pub kernels: u64,
    /// Launches the host made: a kernel launched directly, or a recording replayed, is one.
    pub host: u64,
}

impl std::ops::Sub for Launches {
    type Output = Launches;
    fn sub(self, o: Launches) -> Launches {
        Launches {
            kernels: self.kernels - o.kernels,
            host: self.host - o.host,
        }
    }
}

/// The fields and level operators of a backend: `Field` is a 3D field of one block of one level
/// (with halo); `LevelOp` is a level's operator prepared by the backend (its copy of a
/// [`LevelStencil`]). In the solvers `lev` is always a level's index (0 = finest) and `op` its
/// prepared operator.
pub trait Fields: Sync {
    /// A 3D field of one level.
    type Field: Send;

    /// A level's operator as the backend prepared it (uploaded coefficients, kernels).
    type LevelOp: Send + Sync;

    /// A short name for reports ("cpu", "reference", "cuda:NVIDIA H200", ...).
    fn name(&self) -> String;

    /// Prepares (uploads) a level's stencil.
    fn prepare_level(&self, stencil: &LevelStencil) -> Result<Self::LevelOp>;

    /// Makes `op` the operator of `stencil` in place where the backend can — a GPU backend
    /// writing the level's new entries, made from coefficient fields in its memory
    /// ([`LevelStencil::resident`]), into the arrays `op` already has — and says whether it
    /// did; `op` is untouched when not. Used by [`replace_levels`]. None can by default.
    fn refresh_level(&self, op: &mut Self::LevelOp, stencil: &LevelStencil) -> Result<bool> {
        let _ = (op, stencil);
        Ok(false)
    }

    /// The host stencil a level was prepared from.
    fn stencil<'a>(&self, op: &'a Self::LevelOp) -> &'a LevelStencil;

    /// Allocates a zero field (halo included) for a level.
    fn alloc(&self, op: &Self::LevelOp) -> Result<Self::Field>;

    /// Bytes one fp64 field of an `nx × ny × nz` block occupies (halo and padding included).
    fn field_bytes(&self, nx: usize, ny: usize, nz: usize) -> u64 {
        ((nx + 2) * (ny + 2) * nz * 8) as u64
    }

    /// Bytes one field of an `nx × ny × nz` block stored in `precision` occupies.
    fn field_bytes_in(&self, nx: usize, ny: usize, nz: usize, storage: Storage) -> u64 {
        self.field_bytes(nx, ny, nz) / 8 * storage.bytes() as u64
    }

    /// Free memory of the backend's own device, or `None` when fields live in host memory.
    fn device_memory(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Waits for all queued work (a no-op on synchronous backends); used around timed kernels.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// The most columns (n²) of a coarse level that a multigrid cycle on several ranks gathers
    /// whole onto every rank by default, with every coarser level, where its coarsest level is
    /// solved by CG (docs/MODEL.md §24; `STRATA_GATHER_COLUMNS` overrides it, for smoothed
    /// coarsest levels too). Worth it where a level's kernels cost their launch latency
    /// whatever their size (a GPU): then the sums and exchanges it saves cost more than doing
    /// the whole level on every rank. 0 (never) by default: a host backend's work grows with
    /// the level, and every rank would do all of it.
    fn gather_columns(&self) -> usize {
        0
    }

    /// The calls that follow, up to [`Fields::join_tiles`], are one kernel on each of `tiles`
    /// independent tiles of `columns` columns each, announced by [`Fields::on_tile`]: a backend
    /// may run them concurrently (a GPU: one stream per tile where a tile alone does not fill the
    /// device). By default they run in order.
    fn fork_tiles(&self, _tiles: usize, _columns: usize) -> Result<()> {
        Ok(())
    }

    /// The next call is tile `t`'s (see [`Fields::fork_tiles`]).
    fn on_tile(&self, _t: usize) {}

    /// Orders all that follows after every tile's call since [`Fields::fork_tiles`].
    fn join_tiles(&self) -> Result<()> {
        Ok(())
    }

    /// Runs `body`, which queues the same kernels on the same fields at every call and never
    /// waits on the host (no reduction read back, no host communication). A backend that can
    /// replay queued work cheaply (a CUDA graph: one launch for the whole body) records the
    /// body's work into `rec` under `key` (the addresses of the fields it touches,
    /// [`Fields::address`]) at the first call and replays it at later calls; if the body
    /// cannot be recorded, it runs directly and `rec` remembers that (so a body must give the
    /// same result when run again after a partial run whose kernels never executed: the
    /// V-cycle from zero, which reads only its right-hand side, does). Returns whether `body`
    /// ran (false: its recorded work was replayed, and whatever the body does on the host —
    /// swapping fields, say — is the caller's to repeat). By default (the host backends) it
    /// just runs `body`.
    fn replay(
        &self,
        rec: &mut Recording,
        key: &[u64],
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<bool> {
        let _ = (rec, key);
        body().map(|()| true)
    }

    /// How many kernels the backend has run and how many launches the host made for them
    /// since it was created (a replayed recording is one launch of all its kernels), where it
    /// counts them (the CUDA backend: what latency costs, docs/PERFORMANCE.md); `None` by
    /// default (the host backends).
    fn launches(&self) -> Option<Launches> {
        None
    }

    /// The identity of a field's memory, for the keys of [`Fields::replay`] (a device
    /// address). By default 0: a backend that records nothing needs no key.
    fn address(&self, x: &Self::Field) -> u64 {
        let _ = x;
        0
    }
}

/// Vector operations on the interior of a block (kernels/vector.cu on the GPU, `vector.rs` on
/// the CPU).
pub trait VectorKernels: Fields {
    /// x ← v.
    fn fill(&self, op: &Self::LevelOp, x: &mut Self::Field, v: f64) -> Result<()>;

    /// y ← x.
    fn copy(&self, op: &Self::LevelOp, x: &Self::Field, y: &mut Self::Field) -> Result<()>;

    /// y ← y + a x.
    fn axpy(&self, op: &Self::LevelOp, a: f64, x: &Self::Field, y: &mut Self::Field) -> Result<()>;

    /// y ← x + b y.
    fn xpby(&self, op: &Self::LevelOp, x: &Self::Field, b: f64, y: &mut Self::Field) -> Result<()>;

    /// Local ⟨x, y⟩.
    fn dot(&self, op: &Self::LevelOp, x: &Self::Field, y: &Self::Field) -> Result<f64>;

    /// y ← y + a x; returns the local ⟨y, y⟩ of the new y, in one pass (traffic 3, where
    /// `axpy` then `dot` move 4 and wait twice). By default those two.
    fn axpy_norm(
        &self,
        op: &Self::LevelOp,
        a: f64,
        x: &Self::Field,
        y: &mut Self::Field,
    ) -> Result<f64> {
        self.axpy(op, a, x, y)?;
        self.dot(op, y, y)
    }

    /// y ← y + a x on the interior, with `x` a field of `from`: another preparation of `op`'s
    /// block that may store its fields in another precision (the fp32 correction of a
    /// mixed-precision cycle added to the fp64 iterate). Traffic: read x, read and write y —
    /// one pass where [`TransferKernels::convert`] then `axpy` make two.
    fn axpy_from(
        &self,
        op: &Self::LevelOp,
        a: f64,
        from: &Self::LevelOp,
        x: &Self::Field,
        y: &mut Self::Field,
    ) -> Result<()>;

    /// Local [⟨x, y⟩, ⟨y, w⟩] in one pass (traffic 3, where two `dot`s move 4 and wait
    /// twice). By default two `dot`s.
    fn dot_pair(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        y: &Self::Field,
        w: &Self::Field,
    ) -> Result<[f64; 2]> {
        Ok([self.dot(op, x, y)?, self.dot(op, y, w)?])
    }
}

/// Kernels that apply the 7-point operator: A x, the residual, the fused CG SpMV, and the
/// prolongation (kernels/stencil.cu, `stencil.rs`).
pub trait StencilKernels: Fields {
    /// y ← A x. Traffic 2.
    fn apply(&self, op: &Self::LevelOp, x: &Self::Field, y: &mut Self::Field) -> Result<()>;

    /// r ← f − A u; returns the local ‖r‖². Traffic 3 (the paper's Residual + norm).
    fn residual(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        r: &mut Self::Field,
    ) -> Result<f64>;

    /// r ← f − A u where the norm is not needed (the V-cycle's coarse-grid residuals): a GPU
    /// then does not wait for the norm's reduction to reach the host. By default
    /// [`StencilKernels::residual`] with the norm dropped.
    fn residual_only(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        r: &mut Self::Field,
    ) -> Result<()> {
        self.residual(op, f, u, r).map(|_| ())
    }

    /// The local ‖f − A u‖² where r itself is not needed (the stopping test of mg, whose next
    /// cycle computes its own residual after smoothing); `work` may be overwritten. By default
    /// [`StencilKernels::residual`] into `work` (traffic 3); a backend that skips the store
    /// moves 2.
    fn residual_norm(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        work: &mut Self::Field,
    ) -> Result<f64> {
        self.residual(op, f, u, work)
    }

    /// r ← f − A u with `r` a field of `to`: another preparation of `op`'s block that may
    /// store its fields in another precision (the fp32 right-hand side of a mixed-precision
    /// cycle); returns the local ‖f − A u‖² of the values before they are rounded into `r`.
    /// Traffic: read f and u, write r — one pass where `residual` then
    /// [`TransferKernels::convert`] make two.
    fn residual_to(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        to: &Self::LevelOp,
        r: &mut Self::Field,
    ) -> Result<f64>;

    /// Fused CG SpMV (docs/MODEL.md §8.2): u ← u + α p; p ← z + β p; q ← A z + β q; returns the local
    /// Σ p·q.
    #[allow(clippy::too_many_arguments)]
    fn cg_spmv(
        &self,
        op: &Self::LevelOp,
        z: &Self::Field,
        u: &mut Self::Field,
        p: &mut Self::Field,
        q: &mut Self::Field,
        alpha: f64,
        beta: f64,
    ) -> Result<f64>;

    /// u_f ← u_f + P u_c, horizontal linear interpolation with weights (½, ¼, ¼) from the parent
    /// and its x and y neighbours on the child's side; outside the physical boundary the ghost
    /// parent is −u_P.
    fn prolongate(
        &self,
        coarse: &Self::LevelOp,
        fine: &Self::LevelOp,
        u_coarse: &Self::Field,
        u_fine: &mut Self::Field,
    ) -> Result<()>;

    /// u_f ← u_f + P u_c on the halo cells of the sides set in `sides` ([`Side::index`]; the
    /// faces, not the corners): what the block across each side computes for those cells with
    /// [`StencilKernels::prolongate`], from the same coarse values (u_c's halo exchanged) in the
    /// same arithmetic, bit for bit. With the neighbour's u_f in the halo before, the halo then
    /// holds the neighbour's new u_f, and a rank decomposition of one panel or box needs no
    /// exchange after the prolongation ([`crate::comm::Comm::prolongation_sides`]). The sphere's
    /// tiles (whose halos may be rotated) refuse it.
    fn prolongate_faces(
        &self,
        coarse: &Self::LevelOp,
        fine: &Self::LevelOp,
        u_coarse: &Self::Field,
        u_fine: &mut Self::Field,
        sides: [bool; 4],
    ) -> Result<()>;
}

/// Kernels built on the vertical line solve M⁻¹ (one Thomas solve per column): the
/// preconditioner, the fused CG Tridiag, the smoother and the fused restriction + smoother
/// (kernels/lines.cu, `lines.rs`).
pub trait LineKernels: Fields {
    /// z ← M⁻¹ r, one Thomas solve per column (vertical line relaxation). Traffic 2.
    fn line_solve(&self, op: &Self::LevelOp, r: &Self::Field, z: &mut Self::Field) -> Result<()>;

    /// Fused CG Tridiag: r ← r − α q; z ← M⁻¹ r; returns the local [Σ r·r, Σ r·z].
    fn cg_tridiag(
        &self,
        op: &Self::LevelOp,
        q: &Self::Field,
        r: &mut Self::Field,
        z: &mut Self::Field,
        alpha: f64,
    ) -> Result<[f64; 2]>;

    /// One block-Jacobi line-relaxation step, out of place:
    /// u_out ← u_in + ρ M⁻¹ (f − A u_in).
    fn smooth(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u_in: &Self::Field,
        u_out: &mut Self::Field,
        rho: f64,
    ) -> Result<()>;

    /// One half-sweep of red-black line relaxation (line Gauss–Seidel): every column (i, j) of
    /// `color` — `(i0 + i + j0 + j) % 2 == color` in global indices, so that a decomposition
    /// colours as one block does — is solved exactly given its neighbours' current values and
    /// over-relaxed by w = `relax`, `u_c ← (1 − w) u_c + w T_c⁻¹ (f − H u)_c` (T_c the column's
    /// block of A, H the horizontal couplings), in place; with w = 1 exactly the solve (the
    /// column's old values are not read). Columns of the other colour are neither written nor
    /// needed from this call.
    fn smooth_color(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &mut Self::Field,
        color: usize,
        relax: f64,
    ) -> Result<()>;

    /// The first half-sweep of a red-black step from zero: z ← T⁻¹ r on the columns of
    /// `color` (w = 1: the half-sweep of a zero iterate). The other colour's columns are left
    /// for [`LineKernels::smooth_color_after_solve`], and a backend overrides the two together:
    /// by default [`LineKernels::line_solve`] on every column, which leaves T⁻¹ r in them (the
    /// default second half-sweep reads it); a backend may solve only the colour's columns and
    /// leave the others unspecified (the reference and, on levels of its split half-sweeps,
    /// the CUDA backend: half the line solve).
    fn line_solve_color(
        &self,
        op: &Self::LevelOp,
        r: &Self::Field,
        z: &mut Self::Field,
        color: usize,
    ) -> Result<()> {
        let _ = color;
        self.line_solve(op, r, z)
    }

    /// The second half-sweep of a red-black step from zero, after
    /// [`LineKernels::line_solve_color`] of the other colour: every column of `color` becomes
    /// (1 − w) T_c⁻¹ f_c + w T_c⁻¹ (f − H u)_c = T_c⁻¹ (f − w H u)_c (w = `relax`): the
    /// over-relaxed half-sweep of a column holding T_c⁻¹ f_c, its neighbours the first
    /// half-sweep's. On levels with cross terms (the sphere's diagonal couplings, orography's
    /// slant ones, which read the column's own values) the backends that override the pair
    /// take the default forms. By default [`LineKernels::smooth_color`], which reads the T⁻¹ f
    /// the default first half-sweep left in the column.
    fn smooth_color_after_solve(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &mut Self::Field,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        self.smooth_color(op, f, u, color, relax)
    }

    /// The last half-sweep of mixed-precision defect correction's cycle and the correction
    /// it ends with: [`LineKernels::smooth_color`] of `color` on the cycle's iterate `z`
    /// (level `op`, right-hand side `f`, weight `relax`), then u ← u + z on the interior of the
    /// outer iterate `u` of `outer` (the finest level prepared in fp64;
    /// [`VectorKernels::axpy_from`]). By default those two calls; a backend may make them one
    /// pass and leave z's columns of `color` unspecified, the result being in `u` (the CUDA
    /// backend, on levels of its split half-sweep: 6 B less per unknown in fp32).
    #[allow(clippy::too_many_arguments)]
    fn smooth_color_correct(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        z: &mut Self::Field,
        color: usize,
        relax: f64,
        outer: &Self::LevelOp,
        u: &mut Self::Field,
    ) -> Result<()>
    where
        Self: VectorKernels,
    {
        self.smooth_color(op, f, z, color, relax)?;
        self.axpy_from(outer, 1.0, op, z, u)
    }

    /// Restriction fused with the first smoothing step from a zero guess:
    /// f_c ← scale · Σ_children r_f (sum restriction for scale = 1); u_c ← ρ M⁻¹ f_c.
    #[allow(clippy::too_many_arguments)]
    fn restrict_smooth(
        &self,
        fine: &Self::LevelOp,
        coarse: &Self::LevelOp,
        r_fine: &Self::Field,
        f_coarse: &mut Self::Field,
        u_coarse: &mut Self::Field,
        rho: f64,
        scale: f64,
    ) -> Result<()>;

    /// The V-cycle's way down from `fine` to `coarse` in one call: the fine residual
    /// r = f − A u restricted and smoothed from zero as [`LineKernels::restrict_smooth`] does,
    /// f_c ← scale · Σ_children r; u_c ← ρ M⁻¹ f_c. `r_fine` is a fine work field: by default
    /// the residual is stored there first ([`StencilKernels::residual_only`], then
    /// `restrict_smooth`); a backend may instead restrict the residual as it computes it and
    /// leave `r_fine` unspecified (the CUDA backend: traffic per fine cell 2 + ¼ where the two
    /// calls move 3 + 1 + ¾). `fine`'s halo of `u` must be current.
    #[allow(clippy::too_many_arguments)]
    fn residual_restrict_smooth(
        &self,
        fine: &Self::LevelOp,
        coarse: &Self::LevelOp,
        f_fine: &Self::Field,
        u_fine: &Self::Field,
        r_fine: &mut Self::Field,
        f_coarse: &mut Self::Field,
        u_coarse: &mut Self::Field,
        rho: f64,
        scale: f64,
    ) -> Result<()>
    where
        Self: StencilKernels,
    {
        self.residual_only(fine, f_fine, u_fine, r_fine)?;
        self.restrict_smooth(fine, coarse, r_fine, f_coarse, u_coarse, rho, scale)
    }

    /// Red-black's step from zero on the way down: [`LineKernels::residual_restrict_smooth`]
    /// with ρ = 1, its coarse line solve that of [`LineKernels::line_solve_color`] of `color`,
    /// so that [`LineKernels::smooth_color_after_solve`] of the other colour finishes the step.
    /// By default the fused call on every column; a backend that solves only the colour's
    /// columns in `line_solve_color` may do so here too, leaving the others unspecified (the
    /// CUDA backend on levels of its split half-sweeps).
    #[allow(clippy::too_many_arguments)]
    fn residual_restrict_solve_color(
        &self,
        fine: &Self::LevelOp,
        coarse: &Self::LevelOp,
        f_fine: &Self::Field,
        u_fine: &Self::Field,
        r_fine: &mut Self::Field,
        f_coarse: &mut Self::Field,
        u_coarse: &mut Self::Field,
        scale: f64,
        color: usize,
    ) -> Result<()>
    where
        Self: StencilKernels,
    {
        let _ = color;
        self.residual_restrict_smooth(
            fine, coarse, f_fine, u_fine, r_fine, f_coarse, u_coarse, 1.0, scale,
        )
    }
}

/// Moving data in and out of the backend's layout: host arrays to fields and back, and the halo
/// faces communicators exchange (kernels/transfer.cu, `transfer.rs`).
pub trait TransferKernels: Fields {
    /// Copies a z-contiguous host array `host[(j * nx + i) * nz + k]` into the field's interior.
    fn upload(&self, op: &Self::LevelOp, host: &[f64], x: &mut Self::Field) -> Result<()>;

    /// Copies the field's interior into a z-contiguous host array.
    fn download(&self, op: &Self::LevelOp, x: &Self::Field, host: &mut [f64]) -> Result<()>;

    /// y ← x, the whole field (halo included), between two preparations of the same block that
    /// may store their fields in different precisions (rounded to nearest into fp32, exact into
    /// fp64): the hand-over between the fp64 Krylov vectors and the fp32 multigrid of a
    /// mixed-precision solve. Traffic: read x, write y.
    fn convert(
        &self,
        from: &Self::LevelOp,
        x: &Self::Field,
        to: &Self::LevelOp,
        y: &mut Self::Field,
    ) -> Result<()>;

    /// One face of a block in the backend's own memory (a vector on the host, device memory on
    /// a GPU). Communicators allocate theirs once per level, at set-up
    /// ([`crate::comm::Comm::prepare`]), and reuse them for every exchange.
    type FaceBuffer: Send;

    /// A face buffer of `len` values ([`face_len`]).
    fn alloc_face(&self, len: usize) -> Result<Self::FaceBuffer>;

    /// Copies the interior layer next to `side` into `buf`.
    fn pack_face(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        side: Side,
        buf: &mut Self::FaceBuffer,
    ) -> Result<()>;

    /// Writes `buf` into the halo on `side`.
    fn unpack_face(
        &self,
        op: &Self::LevelOp,
        x: &mut Self::Field,
        side: Side,
        buf: &Self::FaceBuffer,
    ) -> Result<()>;

    /// Fills the halo of `x` across `side` with the interior layer of `src` next to `src_side`
    /// (another block of this process, of the same face length), the other way along the face
    /// if `reversed`: a halo exchange with no buffer, for the tiles of the sphere
    /// (docs/MODEL.md §16), whose edges may meet rotated or reversed.
    #[allow(clippy::too_many_arguments)]
    fn copy_halo(
        &self,
        src_op: &Self::LevelOp,
        src: &Self::Field,
        src_side: Side,
        op: &Self::LevelOp,
        x: &mut Self::Field,
        side: Side,
        reversed: bool,
    ) -> Result<()>;

    /// Fills the halo of `x` across `side` with its own interior layer next to the opposite
    /// side: the halo exchange of a block whose neighbour across a periodic edge is itself
    /// (docs/MODEL.md §20). By default through a face buffer allocated for the call; the
    /// backends copy directly.
    fn wrap_halo(&self, op: &Self::LevelOp, x: &mut Self::Field, side: Side) -> Result<()> {
        let mut buf = self.alloc_face(face_len(self.stencil(op), side))?;
        self.pack_face(op, x, side.opposite(), &mut buf)?;
        self.unpack_face(op, x, side, &buf)
    }

    /// [`TransferKernels::wrap_halo`] for every side set in `sides` ([`Side::index`]) at once:
    /// the exchange of a level periodic in one or both directions on one process. By default
    /// one `wrap_halo` per side; the CUDA backend fills them in one launch.
    fn wrap_halos(&self, op: &Self::LevelOp, x: &mut Self::Field, sides: [bool; 4]) -> Result<()> {
        for side in Side::ALL.into_iter().filter(|s| sides[s.index()]) {
            self.wrap_halo(op, x, side)?;
        }
        Ok(())
    }

    /// Copies the column at halo-inclusive `(ih, jh)` of `x` into `buf` (`nz` values): a corner
    /// of a tile of the sphere, which its nine-point operator reads (docs/MODEL.md §16.1).
    fn pack_column(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        at: (usize, usize),
        buf: &mut Self::FaceBuffer,
    ) -> Result<()>;

    /// Fills the column at halo-inclusive `(ih, jh)` of `x` (a halo corner) from `buf`.
    fn unpack_column(
        &self,
        op: &Self::LevelOp,
        x: &mut Self::Field,
        at: (usize, usize),
        buf: &Self::FaceBuffer,
    ) -> Result<()>;

    /// Copies column `src_at` of `src` into column `at` of `x` (halo-inclusive indices; `x`
    /// another block of this process): a tile corner of the sphere's nine-point operator.
    /// [`TransferKernels::copy_columns`] of one column.
    fn copy_column(
        &self,
        src_op: &Self::LevelOp,
        src: &Self::Field,
        src_at: (usize, usize),
        op: &Self::LevelOp,
        x: &mut Self::Field,
        at: (usize, usize),
    ) -> Result<()> {
        self.copy_columns(src_op, src, src_at, op, x, at, (1, 1))
    }

    /// Copies the `wx × wy` columns of `src` from `src_at` into those of `x` from `at`
    /// (halo-inclusive indices; two fields of one precision, on levels of one `nz`): a rank's
    /// block placed into the whole level gathered onto every rank, and its block with its halo
    /// taken back out of it (docs/MODEL.md §24). By default one
    /// [`TransferKernels::pack_column`] and [`TransferKernels::unpack_column`] per column; the
    /// CUDA backend copies them all in one launch.
    #[allow(clippy::too_many_arguments)]
    fn copy_columns(
        &self,
        src_op: &Self::LevelOp,
        src: &Self::Field,
        src_at: (usize, usize),
        op: &Self::LevelOp,
        x: &mut Self::Field,
        at: (usize, usize),
        (wx, wy): (usize, usize),
    ) -> Result<()> {
        check_columns(self.stencil(src_op), src_at, self.stencil(op), at, (wx, wy))?;
        let mut buf = self.alloc_face(self.stencil(op).nz)?;
        for j in 0..wy {
            for i in 0..wx {
                self.pack_column(src_op, src, (src_at.0 + i, src_at.1 + j), &mut buf)?;
                self.unpack_column(op, x, (at.0 + i, at.1 + j), &buf)?;
            }
        }
        Ok(())
    }

    /// Packs what this block sends for each of `parts` into the part's buffer (of
    /// [`HaloPart::len`] values): a face's interior layer as [`TransferKernels::pack_face`], a
    /// corner's own cell as [`TransferKernels::pack_column`]. What a communicator sends to its
    /// neighbours and diagonal ranks; by default one call per part, on a GPU one launch.
    fn pack_halo(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        parts: &mut [(HaloPart, &mut Self::FaceBuffer)],
    ) -> Result<()> {
        pack_halo_one_by_one(self, op, x, parts)
    }

    /// Writes each of `parts`' buffers into the halo of `x`: a face across its side as
    /// [`TransferKernels::unpack_face`], a corner into the halo corner as
    /// [`TransferKernels::unpack_column`]. By default one call per part, on a GPU one launch.
    fn unpack_halo(
        &self,
        op: &Self::LevelOp,
        x: &mut Self::Field,
        parts: &[(HaloPart, &Self::FaceBuffer)],
    ) -> Result<()> {
        unpack_halo_one_by_one(self, op, x, parts)
    }

    /// Reverses the order of a face buffer's columns (`nz` values each, kept in order): a face
    /// received across a panel edge of the sphere that runs the other way there.
    fn reverse_face(&self, op: &Self::LevelOp, buf: &mut Self::FaceBuffer) -> Result<()>;

    /// [`TransferKernels::pack_halo`] over several blocks of one process (`ops` and `x` the
    /// blocks' operators and fields; a part's [`BlockPart::reversed`] is ignored here): what the
    /// sphere's tiles on a rank send to other ranks. By default one `pack_halo` per part; the
    /// CUDA backend packs them all in one launch.
    fn pack_blocks(
        &self,
        ops: &[Self::LevelOp],
        x: &[Self::Field],
        parts: &mut [(BlockPart, &mut Self::FaceBuffer)],
    ) -> Result<()> {
        pack_blocks_one_by_one(self, ops, x, parts)
    }

    /// [`TransferKernels::unpack_halo`] over several blocks of one process, a part's columns
    /// taken in the reverse order where [`BlockPart::reversed`]. A reversed part's buffer may be
    /// left reversed (the default reverses it in place, then unpacks; the CUDA backend reads it
    /// backwards in one launch for all parts).
    fn unpack_blocks(
        &self,
        ops: &[Self::LevelOp],
        x: &mut [Self::Field],
        parts: &mut [(BlockPart, &mut Self::FaceBuffer)],
    ) -> Result<()> {
        unpack_blocks_one_by_one(self, ops, x, parts)
    }

    /// [`TransferKernels::copy_halo`] for every link of `links` (`ops` and `x` the blocks'
    /// operators and fields): the halo exchange between the tiles of one process, which a GPU
    /// does in one launch rather than one per face. By default one `copy_halo` per link.
    fn copy_halos(
        &self,
        ops: &[Self::LevelOp],
        x: &mut [Self::Field],
        links: &[HaloLink],
    ) -> Result<()> {
        copy_halos_one_by_one(self, ops, x, links)
    }

    /// The face buffer's values where the buffer is host memory (the host backends): then a
    /// communicator that moves host memory (MPI) sends from and receives into it directly, with
    /// no staging copy. `None`, the default, for device memory.
    fn face_host<'a>(&self, buf: &'a Self::FaceBuffer) -> Option<&'a [f64]> {
        let _ = buf;
        None
    }

    /// [`TransferKernels::face_host`], writable.
    fn face_host_mut<'a>(&self, buf: &'a mut Self::FaceBuffer) -> Option<&'a mut [f64]> {
        let _ = buf;
        None
    }

    /// Copies a face buffer into host memory (`host.len()` values), for communicators that move
    /// host memory (MPI) when the buffer is device memory; waits until the copy is done.
    fn face_to_host(&self, buf: &Self::FaceBuffer, host: &mut [f64]) -> Result<()>;

    /// Copies host memory into a face buffer.
    fn face_from_host(&self, host: &[f64], buf: &mut Self::FaceBuffer) -> Result<()>;
}

/// A compute backend: every kernel the solvers need, declared once, grouped by concept in the
/// traits above (the files of each backend mirror them). Implemented for every type that
/// implements the six.
pub trait Backend:
    Fields + VectorKernels + StencilKernels + LineKernels + TransferKernels + ScalarKernels
{
}

impl<T> Backend for T where
    T: Fields + VectorKernels + StencilKernels + LineKernels + TransferKernels + ScalarKernels
{
}
