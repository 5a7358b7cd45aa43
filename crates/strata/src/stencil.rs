//! Per-level stencils: the column coefficients of a rectangular block of one level plus the shared
//! vertical vectors. Nothing of the size of a 3D field is stored for the operator.
//!
//! Levels are numbered `lev = 0` (finest) to `levels − 1` (coarsest). Level `lev` has
//! `n / 2^lev` cells per direction (horizontal semi-coarsening, nz fixed).

use crate::error::Result;
pub use crate::grid::Block;
use crate::grid::{check_levels, sphere, Boundary, Side};
use crate::precision::Storage;
use crate::problem::{
    face_length, fold_terrain, Advection, Averaging, CellCoefficients, Coefficients, Column,
    Diagonals, HorizontalGrid, Orography, ProblemParams, Slant, VerticalGrid,
};
use std::borrow::Cow;
use std::sync::Arc;

/// The operator of one level on one block: column coefficients (row-major, `j * nx + i`) and the
/// vertical vectors shared by all levels.
#[derive(Debug, Clone)]
pub struct LevelStencil {
    /// The block of the level.
    pub block: Block,
    /// Vertical cells.
    pub nz: usize,
    /// Column coefficients, `nx * ny`, row-major.
    pub columns: Arc<[Column]>,
    /// Vertical vectors a, b, c, d (shared by every level).
    pub vertical: Arc<VerticalGrid>,
    /// Per-cell coefficient factors of the general operator; `None` for the model problem
    /// (the fast path: everything per column and per level).
    pub cells: Option<Arc<CellCoefficients>>,
    /// On the sphere, the level's tiles (blocks of panels), each a stencil of its own; this
    /// stencil then only counts them (`block.ny` is the tiles' rows together, `columns` is
    /// empty) and is prepared by [`crate::backend::tiled::Tiled`] alone. `None` elsewhere.
    pub tiles: Option<Arc<[LevelStencil]>>,
    /// How the level's fields are stored (fp64 but for the fp32 multigrid levels of a mixed-
    /// precision solve); the operator's coefficients are the same either way.
    pub storage: Storage,
    /// On a sphere panel, the couplings to the four diagonal neighbours (the cross terms of
    /// the non-orthogonal grid, docs/MODEL.md §16.1), one [`Diagonals`] per column: the
    /// operator is then `A₇ + C` with `(C u)_ijk = d_k Σ_D α_D g_D (u_D − u_ijk)` (`g_D` the
    /// coefficient fields' factor, 1 without them); [`LevelStencil::row`] is `A₇`'s row. The
    /// kernels that apply the operator (apply, residual, the CG SpMV) add `C`, and so do the
    /// relaxations: block Jacobi's residual, and the quarter colours' sweeps that a level with
    /// these couplings is relaxed by ([`LevelStencil::check_colour`]).
    pub cross: Option<Arc<[Diagonals]>>,
    /// Coefficient fields held in a backend's memory (a GPU's), from which that backend makes
    /// this level's per-cell entries itself ([`ResidentCells`]); `cells` is then `None`, and
    /// [`LevelStencil::row`] does not describe the operator. Backends that compute on the host
    /// refuse such a stencil ([`LevelStencil::check_host_cells`]). `None` elsewhere.
    pub resident: Option<ResidentCells>,
    /// Over orography (docs/MODEL.md §23), the metric cross terms: couplings to the lateral
    /// neighbours' cells above and below, part of the operator `A = A₇ + C` that every kernel
    /// applies; the relaxations put them into the columns' right-hand sides with the current
    /// values (a column's slant neighbours are lateral ones: the other colour of a red-black
    /// sweep), so the hierarchy relaxes and coarsens `A` itself.
    /// Only with `cells` (the terrain's metric is folded into the face factors). `None`
    /// elsewhere.
    pub slant: Option<Arc<Slant>>,
    /// Whether this is the finest level of its hierarchy, so that no level reads its fields
    /// with its own kernels from a finer level's (a restriction reads the finer level's
    /// residual with the coarse level's kernels): a backend may then address its fields with
    /// offsets sized for them alone (the CUDA backend's 32-bit offsets, `Tuning::narrow` in
    /// strata-cuda). Set on the first level [`build_levels_with`] and the functions like it
    /// return; `false` (the cautious choice) on any other stencil, the sphere's tiles included.
    pub finest: bool,
}

/// Coefficient fields of one level in a backend's memory (for the CUDA backend, fields on the
/// device, read from a model's device arrays and averaged onto the coarse levels there): opaque
/// here, made and read by that backend only. The operator is the general one of docs/MODEL.md
/// §15 (κ, β and, with advection, ξ fields).
#[derive(Clone)]
pub struct ResidentCells(pub Arc<dyn std::any::Any + Send + Sync>);

impl std::fmt::Debug for ResidentCells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResidentCells(..)")
    }
}

/// The seven entries of one row of A: the diagonal and the couplings to the neighbours (the
/// off-diagonal entries, all negative for the SPD operator).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowEntries {
    /// A_(ijk),(ijk).
    pub diag: f64,
    /// Coupling to (i + 1, j, k).
    pub east: f64,
    /// Coupling to (i − 1, j, k).
    pub west: f64,
    /// Coupling to (i, j + 1, k).
    pub north: f64,
    /// Coupling to (i, j − 1, k).
    pub south: f64,
    /// Coupling to (i, j, k + 1) (0 in the top cell).
    pub up: f64,
    /// Coupling to (i, j, k − 1) (0 in the bottom cell).
    pub down: f64,
}

impl LevelStencil {
    /// Builds the stencil of a block by rediscretisation on that level's grid.
    pub fn new(p: &ProblemParams, block: Block, vertical: Arc<VerticalGrid>) -> Self {
        Self::with_coefficients(p, block, vertical, p.coefficients.as_deref())
    }

    /// Builds the stencil of a block with the coefficient fields `coeffs` of its level (`None`
    /// for the model problem).
    ///
    /// # Panics
    /// If `coeffs` is of another level than `block` (a caller's error).
    pub fn with_coefficients(
        p: &ProblemParams,
        block: Block,
        vertical: Arc<VerticalGrid>,
        coeffs: Option<&Coefficients>,
    ) -> Self {
        let tensors = p
            .nine_point_sphere()
            .then(|| crate::grid::dual::vertex_tensors(block.n));
        let oro = p.orography.as_deref().filter(|o| o.n == block.n);
        Self::with_tensors(p, block, vertical, coeffs, tensors.as_deref(), oro)
    }

    /// [`LevelStencil::with_coefficients`] with the sphere's vertex tensors of the level given
    /// (the same for every panel and tile: [`build_sphere_levels`] computes them once per level).
    fn with_tensors(
        p: &ProblemParams,
        block: Block,
        vertical: Arc<VerticalGrid>,
        coeffs: Option<&Coefficients>,
        tensors: Option<&[crate::grid::dual::VertexTensor]>,
        oro: Option<&Orography>,
    ) -> Self {
        if let Some(c) = coeffs {
            assert_eq!(
                (c.n, c.nz),
                (block.n, p.nz),
                "coefficients of another level"
            );
        }
        let grid = HorizontalGrid {
            geometry: p.geometry,
            n: block.n,
        };
        // In parallel, written in place: O(n²) evaluations of the panel geometry, and the pages
        // of the array, are most of a large set-up. The sphere's columns come from the dual
        // elements' tensors, evaluated once per vertex.
        let nx = block.nx;
        let at = |c: usize| (block.i0 + c % nx, block.j0 + c / nx);
        let lookup = tensors.map(|t| move |a: usize, b: usize| t[b * (block.n + 1) + a]);
        let columns: Arc<[Column]> = par_collect(block.nx * block.ny, |c| {
            let (i, j) = at(c);
            match &lookup {
                Some(t) => grid.sphere_column(t, i, j),
                None => grid.column_bounded(i, j, p.sphere_stencil, block.bc),
            }
        });
        let cross = lookup.as_ref().map(|t| {
            par_collect(block.nx * block.ny, |c| {
                let (i, j) = at(c);
                grid.sphere_diagonals(t, i, j)
            })
        });
        // Over orography the operator is the general one (constant fields if none are given)
        // with the terrain's metric folded in.
        let flat;
        let coeffs = match (coeffs, oro) {
            (None, Some(_)) => {
                flat = Coefficients::constant_for(&block, p.geometry.panels(), p.nz, p.delta);
                Some(&flat)
            }
            (c, _) => c,
        };
        let mut slant = None;
        let cells = coeffs.map(|c| {
            let mut cells = c.cells(&block);
            cells.advection = advection(p, &block, &vertical, c);
            if let Some(o) = oro {
                slant = Some(Arc::new(fold_terrain(
                    p, &block, &vertical, o, c, tensors, &mut cells,
                )));
            }
            Arc::new(cells)
        });
        Self {
            block,
            nz: p.nz,
            columns,
            vertical,
            cells,
            tiles: None,
            storage: Storage::F64,
            cross,
            resident: None,
            slant,
            finest: false,
        }
    }

    /// This stencil without its cross terms (`A₇`; its tiles' too).
    pub fn seven_point(&self) -> Self {
        Self {
            cross: None,
            slant: None,
            tiles: self
                .tiles
                .as_ref()
                .map(|t| t.iter().map(Self::seven_point).collect::<Arc<[_]>>()),
            ..self.clone()
        }
    }

    /// Whether the operator has the sphere's diagonal couplings (on this block or any of its
    /// tiles), which the relaxations sweep by quarter colours ([`LevelStencil::check_colour`]).
    pub fn has_diagonals(&self) -> bool {
        self.cross.is_some()
            || self
                .tiles
                .iter()
                .flat_map(|t| t.iter())
                .any(Self::has_diagonals)
    }

    /// Whether the operator has cross terms (on this block or any of its tiles).
    pub fn has_cross(&self) -> bool {
        self.cross.is_some()
            || self.slant.is_some()
            || self
                .tiles
                .iter()
                .flat_map(|t| t.iter())
                .any(Self::has_cross)
    }

    /// Whether applying the operator reads halo corners that a 7-point exchange leaves alone:
    /// it has cross terms and a tile of it ends inside its panel (a tile corner with a diagonal
    /// tile, [`crate::grid::sphere::tile_corners`]). Every tile of a level splits its panel
    /// alike, so this is the same on every rank.
    pub fn reads_tile_corners(&self) -> bool {
        let corners = |s: &LevelStencil| {
            s.cross.is_some() && !crate::grid::sphere::tile_corners(&s.block).is_empty()
        };
        match &self.tiles {
            Some(t) => t.iter().any(corners),
            None => corners(self),
        }
    }

    /// Refuses a stencil whose coefficient fields live in another backend's memory
    /// ([`LevelStencil::resident`]): a backend that computes with [`LevelStencil::row`] and
    /// `cells` would otherwise take it for the model problem.
    pub fn check_host_cells(&self) -> Result<()> {
        if self.resident.is_some() {
            return crate::error::invalid(
                "coefficients",
                "are held in a GPU's memory (set from device arrays): this backend needs them as host arrays",
            );
        }
        Ok(())
    }

    /// Refuses a colour of the line relaxations' sweeps ([`crate::backend::LineKernels::smooth_color`])
    /// that is not one, or one that would write neighbours together: 0 and 1 are the
    /// checkerboard's halves, 2 + q the quarters (columns with i ≡ q & 1 and j ≡ q >> 1 mod 2);
    /// a level with the sphere's diagonal couplings is swept by quarters (a column's diagonal
    /// neighbours have its checkerboard colour, and other quarter colours: docs/MODEL.md §16.1).
    pub fn check_colour(&self, color: usize) -> Result<()> {
        if color >= 6 {
            return crate::error::invalid(
                "color",
                format!("{color} is no colour of a sweep: 0, 1 (the checkerboard's) or 2..=5 (the quarters')"),
            );
        }
        if color < 2 && self.has_diagonals() {
            return crate::error::invalid(
                "color",
                "a level with diagonal couplings (the sphere's nine-point operator) is swept by quarter colours (2..=5): a checkerboard half-sweep would write diagonal neighbours together",
            );
        }
        Ok(())
    }

    /// The entries of row (i, j, k) (block-local) for the diagonal neighbours, `[ne, nw, se,
    /// sw]` (docs/MODEL.md §16.1); `C`'s diagonal is minus their sum. Zero without cross terms.
    /// With coefficient fields each pair is scaled by the mean of the four face factors at the
    /// vertex between them ([`CellCoefficients::vertex`]).
    pub fn diagonal_row(&self, i: usize, j: usize, k: usize) -> [f64; 4] {
        let Some(x) = &self.cross else {
            return [0.0; 4];
        };
        let dg = x[j * self.nx() + i];
        let d = self.vertical.d[k];
        let (nx, nz) = (self.nx(), self.nz);
        // The factor of vertex (a, b) of the block (its cells (a − 1, b − 1) … (a, b)).
        let g = |a: usize, b: usize| match self.cells.as_ref().and_then(|c| c.vertex.as_ref()) {
            None => 1.0,
            Some(v) => v[(b * (nx + 1) + a) * nz + k],
        };
        let e = |alpha: f64, a: usize, b: usize| {
            if alpha == 0.0 {
                0.0
            } else {
                d * alpha * g(a, b)
            }
        };
        [
            e(dg.ne, i + 1, j + 1),
            e(dg.nw, i, j + 1),
            e(dg.se, i + 1, j),
            e(dg.sw, i, j),
        ]
    }

    /// This stencil with its fields stored in `precision` (its tiles' too); the coefficients are
    /// shared, not copied.
    pub fn with_storage(&self, storage: Storage) -> Self {
        Self {
            storage,
            tiles: self.tiles.as_ref().map(|t| {
                t.iter()
                    .map(|s| s.with_storage(storage))
                    .collect::<Arc<[_]>>()
            }),
            ..self.clone()
        }
    }

    /// Checks that this is the stencil of one block, which every backend but
    /// [`crate::backend::tiled::Tiled`] requires.
    pub fn check_single(&self) -> Result<()> {
        if self.tiles.is_some() {
            return crate::error::invalid(
                "geometry",
                "sphere: the level is a set of tiles, prepared by the tiled backend (strata::backend::tiled::Tiled) only",
            );
        }
        Ok(())
    }

    /// The entries of row (i, j, k) (block-local indices), with or without cell coefficients
    /// (docs/MODEL.md §3.4 and §15.1).
    pub fn row(&self, i: usize, j: usize, k: usize) -> RowEntries {
        let v = &self.vertical;
        let col = &self.columns[j * self.nx() + i];
        let nz = self.nz;
        let Some(c) = &self.cells else {
            return RowEntries {
                diag: col.area * v.amb[k] - col.alpha_t * v.d[k],
                east: v.d[k] * col.alpha_e,
                west: v.d[k] * col.alpha_w,
                north: v.d[k] * col.alpha_n,
                south: v.d[k] * col.alpha_s,
                up: col.area * v.b[k],
                down: col.area * v.c[k],
            };
        };
        let (nx, at) = (self.nx(), (j * self.nx() + i) * nz + k);
        let fx = |f: usize| c.fx[(j * (nx + 1) + f) * nz + k];
        let fy = |f: usize| c.fy[(f * nx + i) * nz + k];
        let east = v.d[k] * col.alpha_e * fx(i + 1);
        let west = v.d[k] * col.alpha_w * fx(i);
        let north = v.d[k] * col.alpha_n * fy(j + 1);
        let south = v.d[k] * col.alpha_s * fy(j);
        let up = col.area * v.b[k] * c.fz[at];
        let down = if k > 0 {
            col.area * v.c[k] * c.fz[at - 1]
        } else {
            0.0
        };
        let mut e = RowEntries {
            diag: col.area * c.beta[at] * v.vol[k] - up - down - east - west - north - south,
            east,
            west,
            north,
            south,
            up,
            down,
        };
        if let Some(a) = &c.advection {
            // −ω² ∇·(ξ u): the outward flux through each face, u_face = (u + u_neighbour)/2.
            let (ex, wx) = (
                a.ax[(j * (nx + 1) + i + 1) * nz + k],
                a.ax[(j * (nx + 1) + i) * nz + k],
            );
            let (ny_, sy) = (
                a.ay[((j + 1) * nx + i) * nz + k],
                a.ay[(j * nx + i) * nz + k],
            );
            let flux = [
                (v.d[k] * ex, &mut e.east),
                (-v.d[k] * wx, &mut e.west),
                (v.d[k] * ny_, &mut e.north),
                (-v.d[k] * sy, &mut e.south),
                (-a.omega2 * col.area * a.az[at], &mut e.up),
            ];
            let mut diag = 0.0;
            for (f, entry) in flux {
                *entry += 0.5 * f;
                diag += 0.5 * f;
            }
            if k > 0 {
                let f = a.omega2 * col.area * a.az[at - 1];
                e.down += 0.5 * f;
                diag += 0.5 * f;
            }
            e.diag += diag;
        }
        e
    }

    /// Local cells in x.
    pub fn nx(&self) -> usize {
        self.block.nx
    }

    /// Local cells in y.
    pub fn ny(&self) -> usize {
        self.block.ny
    }

    /// Local unknowns nx · ny · nz.
    pub fn cells(&self) -> usize {
        self.block.nx * self.block.ny * self.nz
    }
}

/// Builds the stencils of `levels` levels, finest first, for a fine block of problem `p`.
pub fn build_levels(p: &ProblemParams, fine: Block, n_levels: usize) -> Result<Vec<LevelStencil>> {
    build_levels_with(p, fine, n_levels, Averaging::default())
}

/// [`build_levels`] with the given averaging of coefficient fields onto coarse levels.
pub fn build_levels_with(
    p: &ProblemParams,
    fine: Block,
    n_levels: usize,
    averaging: Averaging,
) -> Result<Vec<LevelStencil>> {
    // Nothing fills rings here: coefficients of a block with neighbours are refused.
    build_block_levels(p, fine, n_levels, averaging, &mut |c| {
        c.set_rings([None, None, None, None])
    })
}

/// [`build_levels_with`] for a rank's block `fine` whose coefficient fields may be the block's
/// own ([`Coefficients::window`]): `fill` fills their ring from the neighbouring ranks on every
/// level ([`crate::comm::fill_rings`]; called on every rank for the same levels in the same
/// order), after the fine fields are copied and after each coarsening.
pub fn build_block_levels(
    p: &ProblemParams,
    fine: Block,
    n_levels: usize,
    averaging: Averaging,
    fill: &mut dyn FnMut(&mut Coefficients) -> Result<()>,
) -> Result<Vec<LevelStencil>> {
    p.validate()?;
    if p.geometry.closed() {
        return crate::error::invalid(
            "geometry",
            "sphere: its levels are tiles of six panels, built by build_sphere_levels",
        );
    }
    // The problem's lateral conditions travel with the block to every level.
    let fine = fine.with_bc(p.boundaries);
    check_levels(&fine, n_levels)?;
    let vertical = Arc::new(VerticalGrid::new(p));
    let mut out = Vec::with_capacity(n_levels);
    let mut b = fine;
    // The coefficients of each level: the fine fields, then their averages (docs/MODEL.md §15.3).
    let mut coeffs = p.coefficients.as_deref().map(Cow::Borrowed);
    if let Some(c) = coeffs.as_mut().filter(|c| c.window.is_some()) {
        if c.window.map(|w| w.with_bc(fine.bc)) != Some(fine) {
            return crate::error::invalid(
                "coefficients",
                format!("are of the block {:?}, this rank's is {fine:?}", c.window),
            );
        }
        if p.boundaries.any_periodic() {
            return crate::error::invalid(
                "coefficients",
                format!(
                    "of one rank's block on a domain periodic in a direction ({}): give every \
                     rank the whole level's fields (the block keeps no ring across a periodic \
                     edge yet)",
                    p.boundaries
                ),
            );
        }
        c.to_mut().window = Some(fine);
        fill(c.to_mut())?;
    }
    // The orography of each level: the fine heights, then the means of four (§23.4).
    let mut oro = p.orography.as_deref().map(Cow::Borrowed);
    for l in 0..n_levels {
        if l > 0 {
            b = b.coarsen();
            coeffs = coeffs.map(|c| Cow::Owned(c.coarsen_with(averaging)));
            if let Some(c) = coeffs.as_mut().filter(|c| c.window.is_some()) {
                fill(c.to_mut())?;
            }
            oro = oro.map(|o| Cow::Owned(o.coarsen()));
        }
        out.push(LevelStencil {
            finest: l == 0,
            ..LevelStencil::with_tensors(
                p,
                b,
                vertical.clone(),
                coeffs.as_deref(),
                None,
                oro.as_deref(),
            )
        });
    }
    Ok(out)
}

/// Builds the levels of a sphere problem `p` (`geometry = Sphere`) for this rank's fine tiles
/// `tiles` (from [`crate::grid::sphere::rank_tiles`]), finest first: each level a stencil of
/// tiles ([`LevelStencil::tiles`]), every tile coarsened as one block is.
pub fn build_sphere_levels(
    p: &ProblemParams,
    tiles: &[Block],
    n_levels: usize,
    averaging: Averaging,
) -> Result<Vec<LevelStencil>> {
    p.validate()?;
    if !p.geometry.closed() {
        return crate::error::invalid("geometry", "sphere levels need geometry = sphere");
    }
    let Some(first) = tiles.first() else {
        return crate::error::invalid("tiles", "none were given");
    };
    for t in tiles {
        if t.panel.is_none() || t.nx != t.ny || t.nx != first.nx || t.n != p.n {
            return crate::error::invalid(
                "tiles",
                format!(
                    "{t:?} is not a square tile of an {0}x{0} panel like the others",
                    p.n
                ),
            );
        }
        check_levels(t, n_levels)?;
    }
    let vertical = Arc::new(VerticalGrid::new(p));
    let mut out = Vec::with_capacity(n_levels);
    let mut level: Vec<Block> = tiles.to_vec();
    // The coefficients and the orography of each level, coarsened panel by panel.
    let mut coeffs = p.coefficients.as_deref().map(Cow::Borrowed);
    let mut oro = p.orography.as_deref().map(Cow::Borrowed);
    for l in 0..n_levels {
        if l > 0 {
            oro = oro.map(|o| Cow::Owned(o.coarsen()));
        }
        let tensors = p
            .nine_point_sphere()
            .then(|| crate::grid::dual::vertex_tensors(level[0].n));
        // Over orography without coefficient fields, the constant fields the terrain is folded
        // into: made once for the level's tiles, not once per tile (each holds the whole level).
        let flat = (coeffs.is_none() && oro.is_some())
            .then(|| Coefficients::constant_panels(6, level[0].n, p.nz, p.delta));
        let stencils: Arc<[LevelStencil]> = level
            .iter()
            .map(|&b| {
                LevelStencil::with_tensors(
                    p,
                    b,
                    vertical.clone(),
                    coeffs.as_deref().or(flat.as_ref()),
                    tensors.as_deref(),
                    oro.as_deref(),
                )
            })
            .collect();
        coeffs = coeffs.map(|c| Cow::Owned(c.coarsen_with(averaging)));
        let t = level[0];
        out.push(LevelStencil {
            block: Block {
                ny: t.ny * level.len(),
                ..Block::whole(t.n)
            }
            .with_nx(t.nx),
            nz: p.nz,
            columns: Arc::from(Vec::new()),
            vertical: vertical.clone(),
            cells: None,
            tiles: Some(stencils),
            storage: Storage::F64,
            cross: None,
            resident: None,
            slant: None,
            finest: false,
        });
        level = level.iter().map(Block::coarsen).collect();
    }
    Ok(out)
}

/// The face coefficients of the advection term on `block` (docs/MODEL.md §15.5), if `c` has ξ.
/// On the sphere (a tile of panel `block.panel`) a face on a panel edge takes the mean of this
/// cell's normal component and the neighbouring panel's cell's component along the same
/// direction (its ξ_x or ξ_y, signed by how the two panels' axes meet there), and the edge's
/// canonical length: both sides store the same value (negated where both count it outward),
/// so the fluxes through the edge cancel (docs/MODEL.md §16).
fn advection(
    p: &ProblemParams,
    block: &Block,
    vertical: &VerticalGrid,
    c: &Coefficients,
) -> Option<Advection> {
    let [xx, xy, xz] = c.xi.as_ref()?;
    let (nx, ny, nz, n) = (block.nx, block.ny, p.nz, block.n);
    let panel = block.panel.unwrap_or(0);
    let at = |v: &[f64], pnl: usize, i: usize, j: usize, k: usize| v[c.column_at(pnl, i, j) + k];
    // The neighbouring panel's cell across `side` at position `along`, its ξ along this
    // panel's +x (west/east faces) or +y (south/north faces) at the edge.
    let across = |side: Side, along: usize, k: usize| -> f64 {
        let (l, (i, j)) = sphere::cell_across(panel, side, along, n);
        // Its outward normal: ± its x or y axis.
        let (v, out) = match l.side {
            Side::West => (xx, -1.0),
            Side::East => (xx, 1.0),
            Side::South => (xy, -1.0),
            Side::North => (xy, 1.0),
        };
        // This panel's +x or +y at its east/north edge is the neighbour's inward normal, at
        // its west/south edge the neighbour's outward normal.
        let this = match side {
            Side::East | Side::North => -1.0,
            Side::West | Side::South => 1.0,
        };
        this * out * at(v, l.panel, i, j, k)
    };
    let closed = block.panel.is_some();
    // The length of face `f` of row `j`; on a panel edge of the sphere the canonical one (the
    // same bits from both panels).
    let length = |f: usize, j: usize| {
        if closed && (f == 0 || f == n) {
            face_length(p.geometry, n, 0, j.min(n - 1 - j))
        } else {
            face_length(p.geometry, n, f, j)
        }
    };
    let mut ax = vec![0.0; (nx + 1) * ny * nz];
    let mut ay = vec![0.0; nx * (ny + 1) * nz];
    let mut az = vec![0.0; nx * ny * nz];
    for j in 0..ny {
        let gj = block.j0 + j;
        for f in 0..=nx {
            let gi = block.i0 + f;
            let wrap = !closed && (gi == 0 || gi == n) && block.bc.x == Boundary::Periodic;
            if !closed && !wrap && (gi == 0 || gi == n) {
                continue; // a wall (Dirichlet or zero-flux): no flux
            }
            let len = length(gi, gj);
            for k in 0..nz {
                let (w, e) = match (gi.checked_sub(1), gi < n) {
                    // A periodic edge: the last and first cells' mean, the same from both sides.
                    _ if wrap => (at(xx, panel, n - 1, gj, k), at(xx, panel, 0, gj, k)),
                    (Some(w), true) => (at(xx, panel, w, gj, k), at(xx, panel, gi, gj, k)),
                    (Some(w), false) => (at(xx, panel, w, gj, k), across(Side::East, gj, k)),
                    (None, _) => (across(Side::West, gj, k), at(xx, panel, gi, gj, k)),
                };
                ax[(j * (nx + 1) + f) * nz + k] = len * (0.5 * (w + e));
            }
        }
    }
    for f in 0..=ny {
        let gj = block.j0 + f;
        let wrap = !closed && (gj == 0 || gj == n) && block.bc.y == Boundary::Periodic;
        if !closed && !wrap && (gj == 0 || gj == n) {
            continue;
        }
        for i in 0..nx {
            let gi = block.i0 + i;
            let len = length(gj, gi);
            for k in 0..nz {
                let (s_, n_) = match (gj.checked_sub(1), gj < n) {
                    _ if wrap => (at(xy, panel, gi, n - 1, k), at(xy, panel, gi, 0, k)),
                    (Some(s_), true) => (at(xy, panel, gi, s_, k), at(xy, panel, gi, gj, k)),
                    (Some(s_), false) => (at(xy, panel, gi, s_, k), across(Side::North, gi, k)),
                    (None, _) => (across(Side::South, gi, k), at(xy, panel, gi, gj, k)),
                };
                ay[(f * nx + i) * nz + k] = len * (0.5 * (s_ + n_));
            }
        }
    }
    let surface = |r: f64| p.geometry.surface(r);
    for j in 0..ny {
        for i in 0..nx {
            let (gi, gj) = (block.i0 + i, block.j0 + j);
            for k in 0..nz - 1 {
                let xi = 0.5 * (at(xz, panel, gi, gj, k) + at(xz, panel, gi, gj, k + 1));
                az[(j * nx + i) * nz + k] = surface(vertical.faces[k + 1]) * xi;
            }
        }
    }
    Some(Advection {
        omega2: p.omega() * p.omega(),
        ax,
        ay,
        az,
    })
}

/// `len` values `f(0), f(1), …` computed in parallel and written in place.
fn par_collect<T: Send>(len: usize, f: impl Fn(usize) -> T + Sync) -> Arc<[T]> {
    use rayon::prelude::*;
    let mut out = Arc::<[T]>::new_uninit_slice(len);
    Arc::get_mut(&mut out)
        .expect("a new Arc is unique")
        .par_iter_mut()
        .enumerate()
        .for_each(|(c, slot)| {
            slot.write(f(c));
        });
    // SAFETY: every element was written by the loop above.
    unsafe { out.assume_init() }
}
