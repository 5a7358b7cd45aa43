//! The whole cubed sphere (docs/MODEL.md §16): six gnomonic panels, how their edges meet, and
//! the geometry of a face shared by cells of two panels, and the tiles (blocks of panels) that
//! `--geometry sphere` is split into, with where each tile's halos come from.
//!
//! Panel `p` maps its gnomonic coordinates `(x, y) ∈ [−1, 1]²` to the unit sphere by
//! `P = (c + x·e_x + y·e_y) / |c + x·e_x + y·e_y|`, with `(c, e_x, e_y)` the panel's right-handed
//! frame ([`FRAMES`]). Which edge of which panel lies across each edge, and whether the cells
//! along it run the other way, is derived from this geometry ([`neighbour`]), not written out by
//! hand.

use super::{split, Block, Side};
use crate::error::{invalid, Result};
use std::sync::OnceLock;

/// Number of panels.
pub const PANELS: usize = 6;

/// The frame `(c, e_x, e_y)` of each panel: its centre and the directions of growing x and y.
/// 0–3 go round the equator (+x, +y, −x, −y), 4 is the north (+z) panel, 5 the south (−z).
pub const FRAMES: [[[f64; 3]; 3]; PANELS] = [
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    [[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    [[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0]],
    [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]],
    [[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
];

pub(super) fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(super) fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// The point of panel `panel` at gnomonic coordinates `(x, y)` on the unit sphere.
pub fn point(panel: usize, x: f64, y: f64) -> [f64; 3] {
    let [c, ex, ey] = FRAMES[panel];
    let v: [f64; 3] = std::array::from_fn(|d| c[d] + x * ex[d] + y * ey[d]);
    let r = dot(v, v).sqrt();
    v.map(|a| a / r)
}

/// The gnomonic coordinates of the point `p` on panel `panel` (`None` on the far hemisphere).
pub fn coords(panel: usize, p: [f64; 3]) -> Option<(f64, f64)> {
    let [c, ex, ey] = FRAMES[panel];
    let d = dot(p, c);
    (d > 0.0).then(|| (dot(p, ex) / d, dot(p, ey) / d))
}

/// The panel whose face contains `p` (the largest component along a panel centre).
pub fn panel_of(p: [f64; 3]) -> usize {
    (0..PANELS)
        .max_by(|&a, &b| dot(p, FRAMES[a][0]).total_cmp(&dot(p, FRAMES[b][0])))
        .expect("six panels")
}

/// Great-circle distance (the angle) between two points of the unit sphere.
pub fn arc(p: [f64; 3], q: [f64; 3]) -> f64 {
    let c = cross(p, q);
    dot(c, c).sqrt().atan2(dot(p, q))
}

/// Where an edge leads: the panel across it, the side of that panel it is, and whether the
/// cells along it are numbered the other way there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The panel across the edge.
    pub panel: usize,
    /// Which of its edges this is.
    pub side: Side,
    /// Whether the position along the edge runs the other way on that panel.
    pub reversed: bool,
}

/// Local coordinates of the point at position `t ∈ [−1, 1]` along edge `side`, `out` past it.
fn edge_coords(side: Side, t: f64, out: f64) -> (f64, f64) {
    let e = 1.0 + out;
    match side {
        Side::West => (-e, t),
        Side::East => (e, t),
        Side::South => (t, -e),
        Side::North => (t, e),
    }
}

/// The side of a panel on which local coordinates `(x, y)` of an edge point lie, and the
/// position along it.
fn side_of(x: f64, y: f64) -> (Side, f64) {
    if (x.abs() - 1.0).abs() < (y.abs() - 1.0).abs() {
        (if x < 0.0 { Side::West } else { Side::East }, y)
    } else {
        (if y < 0.0 { Side::South } else { Side::North }, x)
    }
}

/// The panel, side and orientation across edge `side` of panel `panel`.
pub fn neighbour(panel: usize, side: Side) -> Link {
    let (x, y) = edge_coords(side, 0.0, 1e-6);
    let other = panel_of(point(panel, x, y));
    let along = |t: f64| {
        let (x, y) = edge_coords(side, t, 0.0);
        let (u, v) = coords(other, point(panel, x, y)).expect("an edge point is on both panels");
        side_of(u, v)
    };
    let ((s, a), (_, b)) = (along(-0.5), along(0.5));
    Link {
        panel: other,
        side: s,
        reversed: b < a,
    }
}

impl Link {
    /// The position on the neighbouring panel's edge of position `f` (of `n`) on this one.
    pub fn along(&self, f: usize, n: usize) -> usize {
        if self.reversed {
            n - 1 - f
        } else {
            f
        }
    }
}

/// The cell across edge `side` of panel `panel` (`n` cells per direction) from this panel's
/// edge cell at position `along`: the link to the neighbouring panel, and the cell's `(i, j)`
/// there.
pub fn cell_across(panel: usize, side: Side, along: usize, n: usize) -> (Link, (usize, usize)) {
    let l = links()[panel][side.index()];
    (l, edge_cell(l.side, l.along(along, n), n))
}

/// [`neighbour`] of every panel and side, derived once.
pub fn links() -> &'static [[Link; 4]; PANELS] {
    static LINKS: OnceLock<[[Link; 4]; PANELS]> = OnceLock::new();
    LINKS.get_or_init(|| std::array::from_fn(|p| Side::ALL.map(|s| neighbour(p, s))))
}

/// The two end points of face `f` (0 ≤ f < n) along edge `side` of panel `panel` with `n` cells
/// per direction, in the order of growing position along the edge.
pub fn edge_face(panel: usize, side: Side, f: usize, n: usize) -> [[f64; 3]; 2] {
    let d = 2.0 / n as f64;
    [f, f + 1].map(|g| {
        let (x, y) = edge_coords(side, -1.0 + g as f64 * d, 0.0);
        point(panel, x, y)
    })
}

/// The centre of cell `(i, j)` of panel `panel` (`n` cells per direction) on the unit sphere.
pub fn cell_centre(panel: usize, i: usize, j: usize, n: usize) -> [f64; 3] {
    let d = 2.0 / n as f64;
    point(
        panel,
        -1.0 + (i as f64 + 0.5) * d,
        -1.0 + (j as f64 + 0.5) * d,
    )
}

/// The spherical area of the triangle `a, b, c` on the unit sphere (its excess, from
/// tan(E/2) = |a·(b×c)| / (1 + a·b + b·c + c·a)).
fn triangle_area(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    2.0 * dot(a, cross(b, c))
        .abs()
        .atan2(1.0 + dot(a, b) + dot(b, c) + dot(c, a))
}

/// The spherical area of cell `(i, j)` of panel `panel` with `n` cells per direction, from its
/// four corners (two triangles).
pub fn cell_area(panel: usize, i: usize, j: usize, n: usize) -> f64 {
    let d = 2.0 / n as f64;
    let corner = |a: usize, b: usize| point(panel, -1.0 + a as f64 * d, -1.0 + b as f64 * d);
    let (p00, p10, p01, p11) = (
        corner(i, j),
        corner(i + 1, j),
        corner(i, j + 1),
        corner(i + 1, j + 1),
    );
    triangle_area(p00, p10, p11) + triangle_area(p00, p11, p01)
}

/// The cell of panel `panel` next to edge `side` at position `f` along it.
pub fn edge_cell(side: Side, f: usize, n: usize) -> (usize, usize) {
    match side {
        Side::West => (0, f),
        Side::East => (n - 1, f),
        Side::South => (f, 0),
        Side::North => (f, n - 1),
    }
}

/// The horizontal coefficient of the face between edge cell `f` of edge `side` of `panel` and
/// the cell across it on the neighbouring panel: face length over the distance of the two cell
/// centres (both great-circle arcs of the unit sphere; a two-point flux). Computed from the
/// face's end points and the two centres taken in a fixed order, so both panels get the same
/// value bit for bit (the operator stays symmetric).
pub fn cross_face_coefficient(panel: usize, side: Side, f: usize, n: usize) -> f64 {
    let (link, (k, l)) = cell_across(panel, side, f, n);
    let g = link.along(f, n);
    let (i, j) = edge_cell(side, f, n);
    let mine = (panel, cell_centre(panel, i, j, n));
    let theirs = (link.panel, cell_centre(link.panel, k, l, n));
    // The lower panel's view of the face and of the pair of centres, whichever side asks.
    let ((p, s, ff), (a, b)) = if panel < link.panel {
        ((panel, side, f), (mine.1, theirs.1))
    } else {
        ((link.panel, link.side, g), (theirs.1, mine.1))
    };
    let [e0, e1] = edge_face(p, s, ff, n);
    arc(e0, e1) / arc(a, b)
}

/// The coefficient of the face across a panel edge at position `f` along it, on a sphere of
/// `n × n` panels: [`cross_face_coefficient`] of panel 0's east edge at `min(f, n − 1 − f)`.
/// All 24 panel edges are congruent (the cube's rotations and reflections map any one onto
/// any other, keeping lengths), so one canonical evaluation serves every edge; and since a face
/// is at position `f` on one side and `f` or `n − 1 − f` on the other, both rows read the same
/// evaluation: the operator is symmetric bit for bit on any tiling (docs/MODEL.md §16).
pub fn edge_coefficient(n: usize, f: usize) -> f64 {
    cross_face_coefficient(0, Side::East, f.min(n - 1 - f), n)
}

/// The tiles of a sphere of `n × n` panels, each panel split into `k × k` equal blocks: panel
/// after panel, rows of blocks south to north, west to east within a row. The order is the
/// order of a sphere field's tiles on the host (`[tile][j][i][k]`).
pub fn tiles(n: usize, k: usize) -> Vec<Block> {
    let m = n / k;
    let mut out = Vec::with_capacity(PANELS * k * k);
    for panel in 0..PANELS {
        for cy in 0..k {
            for cx in 0..k {
                out.push(Block {
                    n,
                    i0: cx * m,
                    j0: cy * m,
                    nx: m,
                    ny: m,
                    panel: Some(panel),
                    bc: super::Boundaries::DIRICHLET,
                });
            }
        }
    }
    out
}

/// The fine-level tiles of rank `rank` of `ranks` for a sphere of `n × n` panels solved with
/// `n_levels` multigrid levels: every panel split into `k × k` blocks, consecutive tiles per
/// rank. `k` is the smallest that gives every rank the same number of tiles (1, 2, 3 or 6
/// ranks: whole panels; 4, 8, 12, 24 ranks: 2 × 2 blocks; 16 or 32: 4 × 4), if one at most
/// twice the smallest that gives each rank a tile divides the coarsest level; else that
/// smallest (tile counts then differ by one: 5 ranks get 2, 1, 1, 1, 1 panels). Equal work is
/// what strong scaling needs: with whole panels 4 ranks hold 2, 2, 1 and 1, and the two with
/// two panels set the pace. Every level's tiles must halve exactly, and the blocks of a panel
/// must have equal sizes (a reversed edge would otherwise meet blocks of other sizes).
pub fn rank_tiles(n: usize, n_levels: usize, ranks: usize, rank: usize) -> Result<Vec<Block>> {
    let ranks = ranks.max(1);
    let mut k = 1;
    while PANELS * k * k < ranks {
        k += 1;
    }
    let coarse = n >> (n_levels.max(1) - 1);
    if let Some(b) = (k..=2 * k)
        .find(|&b| (PANELS * b * b).is_multiple_of(ranks) && coarse > 0 && coarse.is_multiple_of(b))
    {
        k = b;
    }
    if !(1..=63).contains(&n_levels) || coarse << (n_levels - 1) != n {
        return invalid(
            "levels",
            format!(
                "{n_levels} needs n divisible by 2^{} (n = {n})",
                n_levels.saturating_sub(1)
            ),
        );
    }
    if !coarse.is_multiple_of(k) {
        return invalid(
            "ranks",
            format!(
                "{ranks} ranks split every panel into {k}x{k} blocks, which needs the coarsest \
                 level's {coarse} cells per panel side to be divisible by {k} (n = {n}, {n_levels} levels)"
            ),
        );
    }
    let all = tiles(n, k);
    let (start, len) = split(all.len(), ranks, rank);
    Ok(all[start..start + len].to_vec())
}

/// Where the halo across `side` of the tile `b` comes from: the tile it is read from, the side
/// of that tile whose interior layer it is, and whether the cells run the other way along it.
/// `b` must be a tile of [`tiles`] (square, of a panel) or a coarsening of one.
pub fn tile_link(b: &Block, side: Side) -> (Block, Side, bool) {
    let (n, m) = (b.n, b.nx);
    let panel = b.panel.expect("a tile of the sphere");
    let inside = match side {
        Side::West => (b.i0 >= m).then(|| (b.i0 - m, b.j0)),
        Side::East => (b.i0 + m < n).then_some((b.i0 + m, b.j0)),
        Side::South => (b.j0 >= m).then(|| (b.i0, b.j0 - m)),
        Side::North => (b.j0 + m < n).then_some((b.i0, b.j0 + m)),
    };
    if let Some((i0, j0)) = inside {
        return (Block { i0, j0, ..*b }, side.opposite(), false);
    }
    let l = links()[panel][side.index()];
    let q = match side {
        Side::West | Side::East => b.j0,
        Side::South | Side::North => b.i0,
    };
    let along = if l.reversed { n - q - m } else { q };
    let (i0, j0) = match l.side {
        Side::West => (0, along),
        Side::East => (n - m, along),
        Side::South => (along, 0),
        Side::North => (along, n - m),
    };
    let other = Block {
        i0,
        j0,
        panel: Some(l.panel),
        ..*b
    };
    (other, l.side, l.reversed)
}

/// A corner of a tile that lies inside its panel: the halo cell diagonally across it is the
/// diagonal tile's corner cell (same panel, same orientation), which the nine-point operator
/// reads (docs/MODEL.md §16.1). Corners on a panel edge need none (no cross term there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CornerLink {
    /// Which corner: 0 north-east, 1 north-west, 2 south-east, 3 south-west.
    pub corner: usize,
    /// The diagonal tile.
    pub src: Block,
    /// The column read there (halo-inclusive indices: its interior corner cell).
    pub src_at: (usize, usize),
    /// The halo corner of this tile it fills (halo-inclusive).
    pub dst_at: (usize, usize),
}

impl CornerLink {
    /// This tile's own interior cell at the corner (halo-inclusive): what the diagonal tile
    /// reads for its corner across the same vertex.
    pub fn own_at(&self, m: usize) -> (usize, usize) {
        let (di, dj) = self.dst_at;
        (if di == 0 { 1 } else { m }, if dj == 0 { 1 } else { m })
    }
}

/// The corners of tile `b` (a tile of [`tiles`] or a coarsening of one) inside its panel.
pub fn tile_corners(b: &Block) -> Vec<CornerLink> {
    let (n, m) = (b.n, b.nx);
    // (corner, east?, north?)
    [
        (0, true, true),
        (1, false, true),
        (2, true, false),
        (3, false, false),
    ]
    .into_iter()
    .filter_map(|(corner, east, north)| {
        let i0 = if east {
            (b.i0 + m < n).then_some(b.i0 + m)?
        } else {
            b.i0.checked_sub(m)?
        };
        let j0 = if north {
            (b.j0 + m < n).then_some(b.j0 + m)?
        } else {
            b.j0.checked_sub(m)?
        };
        // Interior cell of the diagonal tile next to the corner; the halo cell of b.
        let (si, di) = if east { (1, m + 1) } else { (m, 0) };
        let (sj, dj) = if north { (1, m + 1) } else { (m, 0) };
        Some(CornerLink {
            corner,
            src: Block { i0, j0, ..*b },
            src_at: (si, sj),
            dst_at: (di, dj),
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [f64; 3], b: [f64; 3]) -> bool {
        (0..3).all(|d| (a[d] - b[d]).abs() < 1e-14)
    }

    #[test]
    fn every_edge_meets_one_edge_of_another_panel_and_back() {
        let mut edges = std::collections::HashSet::new();
        for p in 0..PANELS {
            let mut others = std::collections::HashSet::new();
            for side in Side::ALL {
                let l = neighbour(p, side);
                assert_ne!(l.panel, p);
                // Never the opposite panel (its centre is −c).
                let (c, o) = (point(p, 0.0, 0.0), point(l.panel, 0.0, 0.0));
                assert!(dot(c, o) > -0.5, "{p} {side:?} -> {l:?}");
                let back = neighbour(l.panel, l.side);
                assert_eq!(
                    back,
                    Link {
                        panel: p,
                        side,
                        reversed: l.reversed
                    }
                );
                others.insert(l.panel);
                edges.insert((p.min(l.panel), p.max(l.panel)));
            }
            assert_eq!(others.len(), 4, "panel {p}");
        }
        assert_eq!(edges.len(), 12, "a cube has 12 edges");
    }

    #[test]
    fn shared_faces_have_the_same_end_points_from_both_panels() {
        let n = 16;
        for p in 0..PANELS {
            for side in Side::ALL {
                let l = neighbour(p, side);
                for f in 0..n {
                    let g = if l.reversed { n - 1 - f } else { f };
                    let [a0, a1] = edge_face(p, side, f, n);
                    let [b0, b1] = edge_face(l.panel, l.side, g, n);
                    let (b0, b1) = if l.reversed { (b1, b0) } else { (b0, b1) };
                    assert!(close(a0, b0) && close(a1, b1), "{p} {side:?} face {f}");
                }
            }
        }
    }

    #[test]
    fn cross_panel_coefficients_are_symmetric_and_near_the_panel_interior() {
        let n = 32;
        for p in 0..PANELS {
            for side in Side::ALL {
                let l = neighbour(p, side);
                for f in 0..n {
                    let g = if l.reversed { n - 1 - f } else { f };
                    let a = cross_face_coefficient(p, side, f, n);
                    let b = cross_face_coefficient(l.panel, l.side, g, n);
                    assert_eq!(a.to_bits(), b.to_bits(), "{p} {side:?} {f}");
                    // Face length over centre distance is about 1 on a uniform-ish grid
                    // (within the gnomonic grid's distortion, at most √2 or so).
                    assert!(a > 0.4 && a < 1.6, "{p} {side:?} {f}: {a}");
                }
            }
        }
    }

    #[test]
    fn one_canonical_edge_coefficient_is_every_edge_s() {
        let n = 24;
        for p in 0..PANELS {
            for side in Side::ALL {
                for f in 0..n {
                    let a = cross_face_coefficient(p, side, f, n);
                    let c = edge_coefficient(n, f);
                    assert!((a - c).abs() < 1e-13 * c, "{p} {side:?} {f}: {a} {c}");
                }
            }
        }
        for f in 0..n {
            assert_eq!(edge_coefficient(n, f), edge_coefficient(n, n - 1 - f));
        }
    }

    #[test]
    fn tile_links_lead_back_and_cover_every_tile_side_once() {
        for k in [1, 2, 3] {
            let n = 6 * k;
            let all = tiles(n, k);
            let mut seen = std::collections::HashSet::new();
            for t in &all {
                for side in Side::ALL {
                    let (o, os, rev) = tile_link(t, side);
                    assert!(all.contains(&o), "{t:?} {side:?} -> {o:?}");
                    assert_eq!(tile_link(&o, os), (*t, side, rev), "{t:?} {side:?}");
                    assert!(seen.insert((o, os)), "{o:?} {os:?} read twice");
                    // Coarsened tiles link the coarsened way.
                    if k == 2 {
                        let (c, cs, crev) = tile_link(&t.coarsen(), side);
                        assert_eq!((c, cs, crev), (o.coarsen(), os, rev));
                    }
                }
            }
            assert_eq!(seen.len(), 4 * all.len());
        }
    }

    #[test]
    fn ranks_get_equal_blocks_of_every_panel() {
        let count = |ranks, rank| rank_tiles(64, 3, ranks, rank).unwrap().len();
        assert_eq!(count(1, 0), 6);
        // 4 ranks: 2 × 2 blocks of every panel, six to each (whole panels would be 2, 2, 1, 1).
        assert_eq!(
            [count(4, 0), count(4, 1), count(4, 2), count(4, 3)],
            [6, 6, 6, 6]
        );
        assert_eq!(rank_tiles(64, 3, 4, 3).unwrap()[0].nx, 32);
        assert_eq!(count(6, 5), 1);
        // 7 … 24 ranks: 2 × 2 blocks of every panel.
        assert_eq!(rank_tiles(64, 3, 24, 23).unwrap()[0].nx, 32);
        let e = rank_tiles(12, 3, 24, 0).unwrap_err().to_string();
        assert!(e.contains("divisible by 2"), "{e}");
        let all: Vec<Block> = (0..5)
            .flat_map(|r| rank_tiles(16, 2, 5, r).unwrap())
            .collect();
        assert_eq!(all, tiles(16, 1));
    }

    #[test]
    fn the_six_panels_cover_the_sphere() {
        let n = 24;
        let mut area = 0.0;
        for p in 0..PANELS {
            for j in 0..n {
                for i in 0..n {
                    area += cell_area(p, i, j, n);
                }
            }
        }
        assert!((area - 4.0 * std::f64::consts::PI).abs() < 1e-12, "{area}");
        // A point of each panel's face is claimed by that panel.
        for p in 0..PANELS {
            assert_eq!(panel_of(point(p, 0.3, -0.7)), p);
        }
    }
}

#[cfg(test)]
mod table {
    use super::*;

    /// Prints the connectivity table of docs/MODEL.md §16 (`cargo test -p strata --lib
    /// connectivity_table -- --nocapture`), and checks the one written there is it.
    #[test]
    fn connectivity_table() {
        let mut rows = String::new();
        for p in 0..PANELS {
            let cells: Vec<String> = Side::ALL
                .iter()
                .map(|&s| {
                    let l = neighbour(p, s);
                    format!(
                        "{} {:?}{}",
                        l.panel,
                        l.side,
                        if l.reversed { " (reversed)" } else { "" }
                    )
                })
                .collect();
            rows.push_str(&format!("| {p} | {} |\n", cells.join(" | ")));
        }
        println!("{rows}");
        let doc = include_str!("../../../../docs/MODEL.md");
        assert!(
            doc.contains(&rows),
            "docs/MODEL.md §16 is not this table:\n{rows}"
        );
    }
}
