//! Levels with per-cell coefficients on the device (docs/MODEL.md §15; the `CellOp` of
//! kernels/common.cuh): the row entries of [`LevelStencil::row`], stored in the field layout.
//!
//! A symmetric level stores four values per cell (the diagonal and the east, north and up
//! entries; a row's west, south and down entries are its neighbours' east, north and up), a
//! non-symmetric one (advection) seven. The symmetric form is used only when the entries are
//! symmetric bit for bit, so both forms give the CPU backend's operator.

use super::*;
use strata::stencil::RowEntries;

/// The per-cell entries of one level on the device.
pub struct CellArrays {
    /// The diagonal, east, north and up entries.
    dnu: [DeviceValues; 4],
    /// West, south and down entries, for an operator that is not symmetric.
    wsb: Option<[DeviceValues; 3]>,
    /// The cross terms and their kind (the kernels' `has_cross`, `CELL_CROSS_PARAMS`): the
    /// sphere's north-east, north-west, south-east and south-west entries of every row in the
    /// field layout, then orography's slant weights of the east and north faces; 1 with the
    /// diagonal entries only, 2 with the slant weights only, 3 with both (orography on the
    /// sphere), 0 with none. One-value placeholders (not read) stand for the arrays a level
    /// does not have.
    pub(super) cross: ([DeviceValues; 6], i32),
}

impl CellArrays {
    /// Builds the entries of `s` on the host and copies them to the device, stored as the
    /// level's fields are (fp32 on a level prepared in single precision).
    pub(super) fn new(backend: &CudaBackend, s: &LevelStencil, l: DeviceLayout) -> Result<Self> {
        let host = HostEntries::build(s, l);
        let symmetric = host.is_symmetric(l);
        let up = |v: &[f64]| backend.upload_values(v, s.storage);
        let [d, e, n, u, w, so, b] = &host.0;
        let none = || up(&[0.0]);
        let diagonals = match &s.cross {
            Some(_) => {
                let [ne, nw, se, sw] = diagonal_entries(s, l);
                [up(&ne)?, up(&nw)?, up(&se)?, up(&sw)?]
            }
            None => [none()?, none()?, none()?, none()?],
        };
        let slant = match &s.slant {
            Some(w) => {
                let [we, wn] = slant_weights(w, l);
                [up(&we)?, up(&wn)?]
            }
            None => [none()?, none()?],
        };
        let kind = i32::from(s.cross.is_some()) + 2 * i32::from(s.slant.is_some());
        let [ne, nw, se, sw] = diagonals;
        let [we, wn] = slant;
        let cross = ([ne, nw, se, sw, we, wn], kind);
        Ok(Self {
            cross,
            dnu: [up(d)?, up(e)?, up(n)?, up(u)?],
            wsb: if symmetric {
                None
            } else {
                Some([up(w)?, up(so)?, up(b)?])
            },
        })
    }

    /// The arrays made elsewhere (on the device): d, e, n, u, the west, south and down entries
    /// where the operator is not symmetric, and six one-value placeholders for the cross terms
    /// (none).
    pub(super) fn from_parts(
        dnu: [DeviceValues; 4],
        wsb: Option<[DeviceValues; 3]>,
        no_cross: [DeviceValues; 6],
    ) -> Self {
        Self {
            dnu,
            wsb,
            cross: (no_cross, 0),
        }
    }

    /// The entry arrays d, e, n, u and the west, south and down ones where the operator is not
    /// symmetric, to be written in place.
    pub(super) fn arrays_mut(
        &mut self,
    ) -> (&mut [DeviceValues; 4], &mut Option<[DeviceValues; 3]>) {
        (&mut self.dnu, &mut self.wsb)
    }

    /// Whether the level is stored in the symmetric form (`csym` of the kernels).
    pub fn symmetric(&self) -> bool {
        self.wsb.is_none()
    }

    /// The kernels' `CELL_PARAMS`: d, e, n, u, w, s, b (e, n, u again when symmetric).
    pub(super) fn params(&self) -> [&DeviceValues; 7] {
        let [d, e, n, u] = &self.dnu;
        match &self.wsb {
            Some([w, s, b]) => [d, e, n, u, w, s, b],
            None => [d, e, n, u, e, n, u],
        }
    }

    /// `csym` of the kernels.
    pub(super) fn sym_flag(&self) -> i32 {
        self.symmetric() as i32
    }
}

/// The diagonal entries of every row (`[ne, nw, se, sw]` of [`LevelStencil::diagonal_row`]) in
/// the device layout.
fn diagonal_entries(s: &LevelStencil, l: DeviceLayout) -> [Vec<f64>; 4] {
    let (nx, ny, nz) = (s.nx(), s.ny(), s.nz);
    let (plane, sx) = (l.plane as usize, l.sx as usize);
    let xp = l.x_positions();
    let mut a: [Vec<f64>; 4] = std::array::from_fn(|_| vec![0.0; l.len()]);
    for (m, v) in a.iter_mut().enumerate() {
        v[plane..(ny + 1) * plane]
            .par_chunks_mut(plane)
            .enumerate()
            .for_each(|(j, row)| {
                for k in 0..nz {
                    for i in 0..nx {
                        row[k * sx + xp[i + 1]] = s.diagonal_row(i, j, k)[m];
                    }
                }
            });
    }
    a
}

/// Orography's slant weights ([`strata::problem::Slant`]) in the device layout: each cell's east
/// face and north face, the block's west faces in the halo slots i = −1 and its south faces in
/// the halo row j = −1 (the kernels' `SCellOp`).
fn slant_weights(w: &strata::problem::Slant, l: DeviceLayout) -> [Vec<f64>; 2] {
    let (nx, ny, nz) = (w.nx, w.ny, w.nz);
    let (plane, sx) = (l.plane as usize, l.sx as usize);
    let xp = l.x_positions();
    let mut we = vec![0.0; l.len()];
    let mut wn = vec![0.0; l.len()];
    for j in 0..ny {
        for k in 0..nz {
            for f in 0..=nx {
                // Face f is the west face of cell f, the east face of cell f − 1.
                we[(j + 1) * plane + k * sx + xp[f]] = w.wx[(j * (nx + 1) + f) * nz + k];
            }
        }
    }
    for f in 0..=ny {
        for k in 0..nz {
            for i in 0..nx {
                // Face row f is the south face of row f, the north face of row f − 1.
                wn[f * plane + k * sx + xp[i + 1]] = w.wy[(f * nx + i) * nz + k];
            }
        }
    }
    [we, wn]
}

/// The seven entries of every row, in the device layout: d, e, n, u, w, s, b. The halo slot
/// i = −1 of e holds the west entry of the block's first column, the slot j = −1 of n the south
/// entry of its first row.
struct HostEntries([Vec<f64>; 7]);

impl HostEntries {
    fn build(s: &LevelStencil, l: DeviceLayout) -> Self {
        let (nx, ny, nz) = (s.nx(), s.ny(), s.nz);
        let (plane, sx) = (l.plane as usize, l.sx as usize);
        let xp = l.x_positions();
        let mut a: [Vec<f64>; 7] = std::array::from_fn(|_| vec![0.0; l.len()]);
        {
            let [d, e, n, u, w, so, b] = &mut a;
            // Planes 1..=ny hold rows j = 0..ny.
            fn chunks(v: &mut [f64], plane: usize, ny: usize) -> rayon::slice::ChunksMut<'_, f64> {
                v[plane..(ny + 1) * plane].par_chunks_mut(plane)
            }
            (
                chunks(d, plane, ny),
                chunks(e, plane, ny),
                chunks(n, plane, ny),
                chunks(u, plane, ny),
                chunks(w, plane, ny),
                chunks(so, plane, ny),
                chunks(b, plane, ny),
            )
                .into_par_iter()
                .enumerate()
                .for_each(|(j, (d, e, n, u, w, so, b))| {
                    for k in 0..nz {
                        for i in 0..nx {
                            let at = k * sx + xp[i + 1];
                            let RowEntries {
                                diag,
                                east,
                                west,
                                north,
                                south,
                                up,
                                down,
                            } = s.row(i, j, k);
                            (d[at], e[at], n[at], u[at]) = (diag, east, north, up);
                            (w[at], so[at], b[at]) = (west, south, down);
                            if i == 0 {
                                e[k * sx + xp[0]] = west;
                            }
                        }
                    }
                });
        }
        // The south entries of row j = 0 into the halo row of n.
        let (lo, hi) = a.split_at_mut(5);
        let (n, so) = (&mut lo[2], &hi[0]);
        for k in 0..nz {
            for i in 0..nx {
                let at = k * sx + xp[i + 1];
                n[at] = so[plane + at];
            }
        }
        Self(a)
    }

    /// Whether every west, south and down entry equals the neighbour's east, north and up entry
    /// bit for bit (and the bottom row's down entry is zero).
    fn is_symmetric(&self, l: DeviceLayout) -> bool {
        let [_, e, n, u, w, so, b] = &self.0;
        let (plane, sx, nx, nz) = (
            l.plane as usize,
            l.sx as usize,
            l.nx as usize,
            l.nz as usize,
        );
        let xp = l.x_positions();
        (1..=l.ny as usize).into_par_iter().all(|jj| {
            (0..nz).all(|k| {
                (0..nx).all(|i| {
                    let o = jj * plane + k * sx + xp[i + 1];
                    let o_west = jj * plane + k * sx + xp[i];
                    let down = if k > 0 { u[o - sx] } else { 0.0 };
                    w[o].to_bits() == e[o_west].to_bits()
                        && so[o].to_bits() == n[o - plane].to_bits()
                        && b[o].to_bits() == down.to_bits()
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use strata::grid::Block;
    use strata::problem::{Geometry, Grading, ProblemParams, VerticalGrid};

    /// The symmetric four-value form is chosen for every symmetric level (so that the kernels'
    /// traffic model of `coefficient_values` holds), never for one with advection, and its
    /// entries are those of `LevelStencil::row`.
    #[test]
    fn symmetric_form_exactly_when_the_rows_are() {
        for g in [Geometry::Panel, Geometry::Box] {
            let p = ProblemParams {
                geometry: g,
                grading: Grading::Graded,
                nz: 7,
                n: 16,
                ..Default::default()
            };
            let v = Arc::new(VerticalGrid::new(&p));
            let mut c = strata_conformance::coefficient_fields(16, 7, 3);
            let block = Block {
                n: 16,
                i0: 4,
                j0: 2,
                nx: 9,
                ny: 11,
                panel: None,
                bc: Default::default(),
            };
            let l = DeviceLayout::new(block.nx, block.ny, 7).unwrap();
            let advected = LevelStencil::with_coefficients(&p, block, v.clone(), Some(&c));
            assert!(!HostEntries::build(&advected, l).is_symmetric(l), "{g:?}");
            c.xi = None;
            for coeffs in [c.clone(), c.coarsen()] {
                let b = if coeffs.n == 16 {
                    block
                } else {
                    block.coarsen()
                };
                let l = DeviceLayout::new(b.nx, b.ny, 7).unwrap();
                let s = LevelStencil::with_coefficients(&p, b, v.clone(), Some(&coeffs));
                let h = HostEntries::build(&s, l);
                assert!(h.is_symmetric(l), "{g:?} {b:?}");
                let [d, e, n, u, ..] = &h.0;
                let plane = l.plane as usize;
                for (i, j, k) in [(0, 0, 0), (b.nx - 1, b.ny - 1, 6), (3, 2, 4)] {
                    let r = s.row(i, j, k);
                    let o = l.offset(i as isize, j as isize, k);
                    let o_west = l.offset(i as isize - 1, j as isize, k);
                    assert_eq!(
                        [d[o], e[o], n[o], u[o], e[o_west], n[o - plane]],
                        [r.diag, r.east, r.north, r.up, r.west, r.south]
                    );
                }
            }
        }
    }
}
