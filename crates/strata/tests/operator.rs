//! Structural checks of the operator (docs/MODEL.md §12.2): symmetry, positivity, panel area, Thomas
//! exactness, the constant field.
#![allow(clippy::needless_range_loop)] // dense-matrix index loops read best as loops

mod common;

use common::{random_field, Rng};
use strata::backend::prelude::*;
use strata::backend::reference::ReferenceBackend;
use strata::field::HostField;
use strata::grid::Block;
use strata::problem::{Geometry, Grading, ProblemParams};
use strata::stencil::{build_levels, LevelStencil};

fn stencil(geometry: Geometry, grading: Grading, n: usize, nz: usize) -> LevelStencil {
    let p = ProblemParams {
        geometry,
        grading,
        n,
        nz,
        ..Default::default()
    };
    build_levels(&p, Block::whole(n), 1).unwrap().remove(0)
}

/// The dense matrix of A, column by column from unit vectors.
fn dense(s: &LevelStencil) -> Vec<Vec<f64>> {
    let b = ReferenceBackend;
    let n = s.cells();
    let mut cols = Vec::with_capacity(n);
    let mut host = vec![0.0; n];
    let mut e = b.alloc(s).unwrap();
    let mut y = b.alloc(s).unwrap();
    for c in 0..n {
        host.fill(0.0);
        host[c] = 1.0;
        b.upload(s, &host, &mut e).unwrap();
        b.apply(s, &e, &mut y).unwrap();
        let mut out = vec![0.0; n];
        b.download(s, &y, &mut out).unwrap();
        cols.push(out);
    }
    cols
}

#[test]
fn operator_is_symmetric_and_positive() {
    for (g, gr) in [
        (Geometry::Panel, Grading::Uniform),
        (Geometry::Panel, Grading::Graded),
        (Geometry::Box, Grading::Uniform),
    ] {
        let s = stencil(g, gr, 5, 4);
        let a = dense(&s);
        let n = a.len();
        let scale = a.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..n {
            for j in 0..n {
                let asym = (a[i][j] - a[j][i]).abs();
                assert!(
                    asym <= 1e-14 * scale,
                    "{g:?} {gr:?}: A[{i}][{j}] asymmetric by {asym}"
                );
            }
            // Strict diagonal dominance with positive diagonal: SPD.
            let off: f64 = (0..n).filter(|&j| j != i).map(|j| a[j][i].abs()).sum();
            assert!(a[i][i] > off, "{g:?}: row {i} not diagonally dominant");
        }
        let mut rng = Rng::new(7);
        for _ in 0..5 {
            let x: Vec<f64> = (0..n).map(|_| rng.next()).collect();
            let xax: f64 = (0..n)
                .map(|i| x[i] * (0..n).map(|j| a[j][i] * x[j]).sum::<f64>())
                .sum();
            assert!(xax > 0.0, "{g:?}: x.Ax = {xax}");
        }
    }
}

#[test]
fn panel_area_sums_to_a_sixth_of_the_sphere() {
    for n in [1, 7, 64] {
        let s = stencil(Geometry::Panel, Grading::Uniform, n, 2);
        let total: f64 = s.columns.iter().map(|c| c.area).sum();
        let exact = 2.0 * std::f64::consts::PI / 3.0;
        assert!((total - exact).abs() < 1e-13, "n = {n}: {total} vs {exact}");
    }
}

#[test]
fn thomas_solves_every_column_block() {
    // A_T z = r for every column: apply the column block (A with the horizontal neighbours
    // zeroed, i.e. the line operator M) to z = M⁻¹ r.
    let b = ReferenceBackend;
    for g in [Geometry::Panel, Geometry::Box] {
        let s = stencil(g, Grading::Graded, 9, 17);
        let mut rng = Rng::new(3);
        let r = random_field(9, 9, 17, &mut rng);
        let mut z = b.alloc(&s).unwrap();
        b.line_solve(&s, &r, &mut z).unwrap();
        let v = &s.vertical;
        for j in 0..9 {
            for i in 0..9 {
                let c = &s.columns[j * 9 + i];
                let zc = z.column(i, j);
                let rc = r.column(i, j);
                for k in 0..17 {
                    let diag = c.area * (v.a[k] - v.b[k] - v.c[k]) - c.alpha_t * v.d[k];
                    let mut mz = diag * zc[k];
                    let mut size = (diag * zc[k]).abs();
                    if k + 1 < 17 {
                        mz += c.area * v.b[k] * zc[k + 1];
                        size += (c.area * v.b[k] * zc[k + 1]).abs();
                    }
                    if k > 0 {
                        mz += c.area * v.c[k] * zc[k - 1];
                        size += (c.area * v.c[k] * zc[k - 1]).abs();
                    }
                    // Round-off of the sum is relative to the size of its terms.
                    let err = (mz - rc[k]).abs();
                    assert!(
                        err < 1e-13 * size,
                        "{g:?} ({i},{j},{k}): {err:e} vs {size:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn constant_field_sees_only_volume_and_boundary_faces() {
    let b = ReferenceBackend;
    let (n, nz) = (6, 5);
    let s = stencil(Geometry::Panel, Grading::Uniform, n, nz);
    let mut one = HostField::zeros(n, n, nz);
    b.fill(&s, &mut one, 1.0).unwrap();
    let mut y = b.alloc(&s).unwrap();
    b.apply(&s, &one, &mut y).unwrap();
    let v = &s.vertical;
    for j in 0..n {
        for i in 0..n {
            let c = &s.columns[j * n + i];
            // Faces on the boundary see the zero halo: −d_k α (0 − 1).
            let mut bnd = 0.0;
            if i == 0 {
                bnd += c.alpha_w;
            }
            if i == n - 1 {
                bnd += c.alpha_e;
            }
            if j == 0 {
                bnd += c.alpha_s;
            }
            if j == n - 1 {
                bnd += c.alpha_n;
            }
            for k in 0..nz {
                let expect = c.area * v.a[k] - v.d[k] * bnd;
                let got = y.column(i, j)[k];
                assert!(
                    (got - expect).abs() < 1e-14 * expect.abs(),
                    "({i},{j},{k}) {got} {expect}"
                );
                if bnd == 0.0 {
                    assert!((got - c.area * v.a[k]).abs() < 1e-14 * got.abs());
                }
            }
        }
    }
}

/// The panel's operator is symmetric bit for bit at any size (each face's coefficient is
/// evaluated at the face's own coordinate, the same for both cells beside it; before, the two
/// cells computed the midpoint from their centres and could differ in the last bit, as at
/// n = 12), and so is the box's.
#[test]
fn assembled_operators_are_symmetric_bit_for_bit() {
    for (g, n) in [
        (Geometry::Panel, 12),
        (Geometry::Panel, 24),
        (Geometry::Panel, 100),
        (Geometry::Box, 12),
    ] {
        let p = ProblemParams {
            geometry: g,
            n,
            nz: 4,
            ..Default::default()
        };
        let m = strata::matrix::assemble(&p).unwrap();
        assert!(common::symmetric_bits(&m), "{g:?} n = {n}: A ≠ Aᵀ");
    }
}
