//! The tiled backend: the fields of a sphere problem as tiles (blocks of panels) of another
//! backend (docs/MODEL.md §16).
//!
//! [`Tiled`] wraps any backend: a field is one inner field per tile, a level's operator one
//! inner operator per tile ([`LevelStencil::tiles`]), and every kernel runs tile after tile
//! (reductions add the tiles' partials). The solvers, written over [`Backend`], run on the
//! sphere unchanged. Halos between tiles, which may meet rotated or reversed across a panel
//! edge, are filled by the sphere's communicators ([`crate::comm::SphereComm`] in one process,
//! `strata_mpi::SphereMpiComm` / `SphereNcclComm` over ranks) with
//! [`TransferKernels::copy_halos`] of the inner backend (one launch per exchange on a GPU) and,
//! between ranks, its face buffers; the tiled backend's own face methods refuse, so a
//! communicator that knows nothing of tiles cannot leave them unfilled.
//!
//! A host array of a tiled field is the tiles' host arrays one after the other, each
//! `[j][i][k]` (z-contiguous) — for whole panels, `[panel][j][i][k]`.

use super::{
    Backend, Fields, HaloLink, LineKernels, Side, StencilKernels, TransferKernels, VectorKernels,
};
use crate::error::{invalid, Result};
use crate::grid::sphere;
use crate::stencil::LevelStencil;

/// Any backend, over the tiles of the sphere: `H` is how the tiled backend holds the inner one
/// (a reference `&B` for a solve, a `Box<B>` or `Arc<B>` where both live together, as in a
/// persistent solver behind the C and Python interfaces).
pub struct Tiled<H> {
    inner: H,
}

/// How [`Tiled`] holds its inner backend: anything that dereferences to a backend.
pub trait Handle: Sync {
    /// The inner backend.
    type Inner: Backend;
    /// The inner backend.
    fn backend(&self) -> &Self::Inner;
}

impl<T: std::ops::Deref + Sync> Handle for T
where
    T::Target: Backend + Sized,
{
    type Inner = T::Target;

    fn backend(&self) -> &T::Target {
        self
    }
}

/// A field of the inner backend of `H`.
pub type InnerField<H> = <<H as Handle>::Inner as Fields>::Field;

/// A level operator of the inner backend of `H`.
pub type InnerOp<H> = <<H as Handle>::Inner as Fields>::LevelOp;

impl<H: Handle> Tiled<H> {
    /// The tiled view of `inner`.
    pub fn new(inner: H) -> Self {
        Self { inner }
    }

    /// The backend every tile runs on.
    pub fn inner(&self) -> &H::Inner {
        self.inner.backend()
    }
}

/// A level of the tiled backend: the stencil of tiles, each tile's prepared operator, and the
/// halos filled from tiles of this process (derived once, here, not at every exchange).
pub struct TiledLevel<B: Fields> {
    stencil: LevelStencil,
    /// The tiles' operators, in the order of [`LevelStencil::tiles`].
    pub tiles: Vec<B::LevelOp>,
    /// Every tile side whose source tile is among this level's tiles (indices into `tiles`);
    /// the other sides face tiles of other ranks.
    pub local_links: Vec<HaloLink>,
    /// On a level with cross terms, every tile corner inside a panel whose diagonal tile is
    /// among this level's tiles: `(tile, its corner, the source tile)`; the others face tiles
    /// of other ranks. Empty on 7-point levels (their corners are never read).
    pub local_corners: Vec<(usize, sphere::CornerLink, usize)>,
}

/// The corners of `tiles` whose diagonal tile is among them (see [`TiledLevel::local_corners`]).
fn local_corners(tiles: &[LevelStencil]) -> Vec<(usize, sphere::CornerLink, usize)> {
    let mut out = Vec::new();
    for (dst, t) in tiles.iter().enumerate() {
        if t.cross.is_none() {
            continue;
        }
        for c in sphere::tile_corners(&t.block) {
            if let Some(src) = tiles.iter().position(|x| x.block == c.src) {
                out.push((dst, c, src));
            }
        }
    }
    out
}

/// The halos of `tiles` (a level's tiles of one process) that come from tiles among them.
fn local_links(tiles: &[LevelStencil]) -> Vec<HaloLink> {
    let mut links = Vec::with_capacity(4 * tiles.len());
    for (dst, t) in tiles.iter().enumerate() {
        for side in Side::ALL {
            let (block, src_side, reversed) = sphere::tile_link(&t.block, side);
            if let Some(src) = tiles.iter().position(|x| x.block == block) {
                links.push(HaloLink {
                    dst,
                    side,
                    src,
                    src_side,
                    reversed,
                });
            }
        }
    }
    links
}

fn refuse<T>() -> Result<T> {
    invalid(
        "comm",
        "the tiles of the sphere exchange halos through the sphere's communicator (SphereComm), not through face buffers",
    )
}

impl<H: Handle> Fields for Tiled<H> {
    type Field = Vec<InnerField<H>>;
    type LevelOp = TiledLevel<H::Inner>;

    fn name(&self) -> String {
        format!("{} (sphere tiles)", self.inner().name())
    }

    fn prepare_level(&self, stencil: &LevelStencil) -> Result<TiledLevel<H::Inner>> {
        let Some(tiles) = &stencil.tiles else {
            return invalid(
                "geometry",
                "the tiled backend prepares the levels of the sphere (built by build_sphere_levels) only",
            );
        };
        Ok(TiledLevel {
            stencil: stencil.clone(),
            tiles: tiles
                .iter()
                .map(|s| self.inner().prepare_level(s))
                .collect::<Result<_>>()?,
            local_links: local_links(tiles),
            local_corners: local_corners(tiles),
        })
    }

    fn stencil<'a>(&self, op: &'a TiledLevel<H::Inner>) -> &'a LevelStencil {
        &op.stencil
    }

    fn alloc(&self, op: &TiledLevel<H::Inner>) -> Result<Vec<InnerField<H>>> {
        op.tiles.iter().map(|o| self.inner().alloc(o)).collect()
    }

    fn field_bytes_in(&self, nx: usize, ny: usize, nz: usize, p: crate::precision::Storage) -> u64 {
        self.inner().field_bytes_in(nx, ny, nz, p)
    }

    fn field_bytes(&self, nx: usize, ny: usize, nz: usize) -> u64 {
        self.inner().field_bytes(nx, ny, nz)
    }

    fn device_memory(&self) -> Result<Option<u64>> {
        self.inner().device_memory()
    }

    fn synchronize(&self) -> Result<()> {
        self.inner().synchronize()
    }

    fn replay(
        &self,
        rec: &mut super::Recording,
        key: &[u64],
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<bool> {
        // Every tile's kernels go to the inner backend, so it records them all.
        self.inner().replay(rec, key, body)
    }

    fn launches(&self) -> Option<super::Launches> {
        self.inner().launches()
    }

    fn address(&self, x: &Self::Field) -> u64 {
        // The tiles of a field are allocated together and live together: the first names them.
        x.first().map_or(0, |t| self.inner().address(t))
    }
}

impl<H: Handle> VectorKernels for Tiled<H> {
    fn fill(&self, op: &Self::LevelOp, x: &mut Self::Field, v: f64) -> Result<()> {
        for (o, x) in op.tiles.iter().zip(x) {
            self.inner().fill(o, x, v)?;
        }
        Ok(())
    }

    fn copy(&self, op: &Self::LevelOp, x: &Self::Field, y: &mut Self::Field) -> Result<()> {
        for ((o, x), y) in op.tiles.iter().zip(x).zip(y) {
            self.inner().copy(o, x, y)?;
        }
        Ok(())
    }

    fn axpy(&self, op: &Self::LevelOp, a: f64, x: &Self::Field, y: &mut Self::Field) -> Result<()> {
        for ((o, x), y) in op.tiles.iter().zip(x).zip(y) {
            self.inner().axpy(o, a, x, y)?;
        }
        Ok(())
    }

    fn xpby(&self, op: &Self::LevelOp, x: &Self::Field, b: f64, y: &mut Self::Field) -> Result<()> {
        for ((o, x), y) in op.tiles.iter().zip(x).zip(y) {
            self.inner().xpby(o, x, b, y)?;
        }
        Ok(())
    }

    fn axpy_from(
        &self,
        op: &Self::LevelOp,
        a: f64,
        from: &Self::LevelOp,
        x: &Self::Field,
        y: &mut Self::Field,
    ) -> Result<()> {
        for (((o, fo), x), y) in op.tiles.iter().zip(&from.tiles).zip(x).zip(y) {
            self.inner().axpy_from(o, a, fo, x, y)?;
        }
        Ok(())
    }

    fn dot(&self, op: &Self::LevelOp, x: &Self::Field, y: &Self::Field) -> Result<f64> {
        let mut s = 0.0;
        for ((o, x), y) in op.tiles.iter().zip(x).zip(y) {
            s += self.inner().dot(o, x, y)?;
        }
        Ok(s)
    }

    fn axpy_norm(
        &self,
        op: &Self::LevelOp,
        a: f64,
        x: &Self::Field,
        y: &mut Self::Field,
    ) -> Result<f64> {
        let mut s = 0.0;
        for ((o, x), y) in op.tiles.iter().zip(x).zip(y) {
            s += self.inner().axpy_norm(o, a, x, y)?;
        }
        Ok(s)
    }

    fn dot_pair(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        y: &Self::Field,
        w: &Self::Field,
    ) -> Result<[f64; 2]> {
        let mut s = [0.0; 2];
        for (((o, x), y), w) in op.tiles.iter().zip(x).zip(y).zip(w) {
            let [a, b] = self.inner().dot_pair(o, x, y, w)?;
            s[0] += a;
            s[1] += b;
        }
        Ok(s)
    }
}

impl<H: Handle> StencilKernels for Tiled<H> {
    fn apply(&self, op: &Self::LevelOp, x: &Self::Field, y: &mut Self::Field) -> Result<()> {
        for ((o, x), y) in op.tiles.iter().zip(x).zip(y) {
            self.inner().apply(o, x, y)?;
        }
        Ok(())
    }

    fn residual(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        r: &mut Self::Field,
    ) -> Result<f64> {
        let mut s = 0.0;
        for (i, o) in op.tiles.iter().enumerate() {
            s += self.inner().residual(o, &f[i], &u[i], &mut r[i])?;
        }
        Ok(s)
    }

    fn residual_norm(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        work: &mut Self::Field,
    ) -> Result<f64> {
        let mut s = 0.0;
        for (i, o) in op.tiles.iter().enumerate() {
            s += self.inner().residual_norm(o, &f[i], &u[i], &mut work[i])?;
        }
        Ok(s)
    }

    fn residual_to(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        to: &Self::LevelOp,
        r: &mut Self::Field,
    ) -> Result<f64> {
        let mut s = 0.0;
        for (i, (o, t)) in op.tiles.iter().zip(&to.tiles).enumerate() {
            s += self.inner().residual_to(o, &f[i], &u[i], t, &mut r[i])?;
        }
        Ok(s)
    }

    fn residual_only(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        r: &mut Self::Field,
    ) -> Result<()> {
        let o = &op.tiles;
        self.each_tile(o.len(), self.columns(o), |i| {
            self.inner().residual_only(&o[i], &f[i], &u[i], &mut r[i])
        })
    }

    fn cg_spmv(
        &self,
        op: &Self::LevelOp,
        z: &Self::Field,
        u: &mut Self::Field,
        p: &mut Self::Field,
        q: &mut Self::Field,
        alpha: f64,
        beta: f64,
    ) -> Result<f64> {
        let mut s = 0.0;
        for (i, o) in op.tiles.iter().enumerate() {
            s += self
                .inner()
                .cg_spmv(o, &z[i], &mut u[i], &mut p[i], &mut q[i], alpha, beta)?;
        }
        Ok(s)
    }

    fn prolongate(
        &self,
        coarse: &Self::LevelOp,
        fine: &Self::LevelOp,
        u_coarse: &Self::Field,
        u_fine: &mut Self::Field,
    ) -> Result<()> {
        let (c, f) = (&coarse.tiles, &fine.tiles);
        self.each_tile(f.len(), self.columns(f), |i| {
            self.inner()
                .prolongate(&c[i], &f[i], &u_coarse[i], &mut u_fine[i])
        })
    }

    fn prolongate_faces(
        &self,
        _coarse: &Self::LevelOp,
        _fine: &Self::LevelOp,
        _u_coarse: &Self::Field,
        _u_fine: &mut Self::Field,
        _sides: [bool; 4],
    ) -> Result<()> {
        // A tile's halo may come rotated or reversed from across a panel edge, where the
        // neighbour's prolongation reads other coarse cells: the sphere's communicators
        // exchange after every prolongation.
        invalid(
            "comm",
            "the sphere's tiles fill their halos by exchange, not by prolongating into them",
        )
    }
}

impl<H: Handle> LineKernels for Tiled<H> {
    fn line_solve(&self, op: &Self::LevelOp, r: &Self::Field, z: &mut Self::Field) -> Result<()> {
        for ((o, r), z) in op.tiles.iter().zip(r).zip(z) {
            self.inner().line_solve(o, r, z)?;
        }
        Ok(())
    }

    fn cg_tridiag(
        &self,
        op: &Self::LevelOp,
        q: &Self::Field,
        r: &mut Self::Field,
        z: &mut Self::Field,
        alpha: f64,
    ) -> Result<[f64; 2]> {
        let mut s = [0.0; 2];
        for (i, o) in op.tiles.iter().enumerate() {
            let [a, b] = self
                .inner()
                .cg_tridiag(o, &q[i], &mut r[i], &mut z[i], alpha)?;
            s[0] += a;
            s[1] += b;
        }
        Ok(s)
    }

    fn smooth(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u_in: &Self::Field,
        u_out: &mut Self::Field,
        rho: f64,
    ) -> Result<()> {
        let o = &op.tiles;
        self.each_tile(o.len(), self.columns(o), |i| {
            self.inner()
                .smooth(&o[i], &f[i], &u_in[i], &mut u_out[i], rho)
        })
    }

    fn smooth_color(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &mut Self::Field,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        let o = &op.tiles;
        self.each_tile(o.len(), self.columns(o), |i| {
            self.inner()
                .smooth_color(&o[i], &f[i], &mut u[i], color, relax)
        })
    }

    fn restrict_smooth(
        &self,
        fine: &Self::LevelOp,
        coarse: &Self::LevelOp,
        r_fine: &Self::Field,
        f_coarse: &mut Self::Field,
        u_coarse: &mut Self::Field,
        rho: f64,
        scale: f64,
    ) -> Result<()> {
        let (fo, co) = (&fine.tiles, &coarse.tiles);
        self.each_tile(co.len(), self.columns(co), |i| {
            self.inner().restrict_smooth(
                &fo[i],
                &co[i],
                &r_fine[i],
                &mut f_coarse[i],
                &mut u_coarse[i],
                rho,
                scale,
            )
        })
    }

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
    ) -> Result<()> {
        let (fo, co) = (&fine.tiles, &coarse.tiles);
        self.each_tile(co.len(), self.columns(co), |i| {
            self.inner().residual_restrict_smooth(
                &fo[i],
                &co[i],
                &f_fine[i],
                &u_fine[i],
                &mut r_fine[i],
                &mut f_coarse[i],
                &mut u_coarse[i],
                rho,
                scale,
            )
        })
    }
}

impl<H: Handle> Tiled<H> {
    /// Runs `call(i)` for each of the `tiles` tiles (of `columns` columns each) as one
    /// concurrent group of the inner backend ([`Fields::fork_tiles`]); joins also on failure.
    fn each_tile(
        &self,
        tiles: usize,
        columns: usize,
        mut call: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        let b = self.inner();
        b.fork_tiles(tiles, columns)?;
        let out = (0..tiles).try_for_each(|i| {
            b.on_tile(i);
            call(i)
        });
        let joined = b.join_tiles();
        out.and(joined)
    }

    /// Columns of the largest of `tiles`.
    fn columns(&self, tiles: &[InnerOp<H>]) -> usize {
        let b = self.inner();
        tiles
            .iter()
            .map(|o| {
                let s = b.stencil(o);
                s.nx() * s.ny()
            })
            .max()
            .unwrap_or(0)
    }

    /// The tiles' parts of a host array of the whole level, as (operator, start, length).
    fn parts<'o>(
        &self,
        op: &'o TiledLevel<H::Inner>,
        len: usize,
    ) -> Result<impl Iterator<Item = (&'o InnerOp<H>, usize, usize)> + 'o> {
        let sizes: Vec<usize> = op
            .stencil
            .tiles
            .iter()
            .flat_map(|t| t.iter().map(LevelStencil::cells))
            .collect();
        let total: usize = sizes.iter().sum();
        if len != total {
            return invalid(
                "host array",
                format!("has {len} values, the tiles need {total}"),
            );
        }
        let starts: Vec<usize> = sizes
            .iter()
            .scan(0, |a, &s| {
                let at = *a;
                *a += s;
                Some(at)
            })
            .collect();
        Ok(op
            .tiles
            .iter()
            .zip(starts.into_iter().zip(sizes))
            .map(|(o, (s, l))| (o, s, l)))
    }
}

impl<H: Handle> TransferKernels for Tiled<H> {
    fn upload(&self, op: &Self::LevelOp, host: &[f64], x: &mut Self::Field) -> Result<()> {
        for ((o, s, l), x) in self.parts(op, host.len())?.zip(x) {
            self.inner().upload(o, &host[s..s + l], x)?;
        }
        Ok(())
    }

    fn download(&self, op: &Self::LevelOp, x: &Self::Field, host: &mut [f64]) -> Result<()> {
        for ((o, s, l), x) in self.parts(op, host.len())?.zip(x) {
            self.inner().download(o, x, &mut host[s..s + l])?;
        }
        Ok(())
    }

    fn convert(
        &self,
        from: &Self::LevelOp,
        x: &Self::Field,
        to: &Self::LevelOp,
        y: &mut Self::Field,
    ) -> Result<()> {
        for (((fo, x), to), y) in from.tiles.iter().zip(x).zip(&to.tiles).zip(y) {
            self.inner().convert(fo, x, to, y)?;
        }
        Ok(())
    }

    type FaceBuffer = ();

    fn alloc_face(&self, _len: usize) -> Result<()> {
        refuse()
    }

    fn pack_face(&self, _: &Self::LevelOp, _: &Self::Field, _: Side, _: &mut ()) -> Result<()> {
        refuse()
    }

    fn unpack_face(&self, _: &Self::LevelOp, _: &mut Self::Field, _: Side, _: &()) -> Result<()> {
        refuse()
    }

    fn pack_column(
        &self,
        _: &Self::LevelOp,
        _: &Self::Field,
        _: (usize, usize),
        _: &mut (),
    ) -> Result<()> {
        refuse()
    }

    fn unpack_column(
        &self,
        _: &Self::LevelOp,
        _: &mut Self::Field,
        _: (usize, usize),
        _: &(),
    ) -> Result<()> {
        refuse()
    }

    fn copy_halo(
        &self,
        _: &Self::LevelOp,
        _: &Self::Field,
        _: Side,
        _: &Self::LevelOp,
        _: &mut Self::Field,
        _: Side,
        _: bool,
    ) -> Result<()> {
        refuse()
    }

    fn reverse_face(&self, _: &Self::LevelOp, _: &mut ()) -> Result<()> {
        refuse()
    }

    fn face_to_host(&self, _: &(), _: &mut [f64]) -> Result<()> {
        refuse()
    }

    fn face_from_host(&self, _: &[f64], _: &mut ()) -> Result<()> {
        refuse()
    }
}

/// The solver's scalars in a host vector: each slot kernel calls the tiles' kernels, whose
/// partials are summed on the host (as every reduction of the tiled backend is).
impl<H: Handle> super::ScalarKernels for Tiled<H> {
    super::host_scalars!();
}
