//! Coefficient fields of one rank's block (docs/MODEL.md §15.7): a block's own fields, their ring
//! filled from the blocks across its sides, give the operator of the whole level's fields on
//! that block bit for bit (face factors, β, advection), on every coarse level too; wrong inputs
//! are errors.

use std::sync::Arc;
use strata::grid::{Block, Decomposition, RankGrid, Side};
use strata::problem::{Coefficients, ProblemParams, VerticalGrid};
use strata::stencil::LevelStencil;

/// Fields of an `n × n × nz` level that differ in every cell (positive ones for κ and β; ξ of
/// either sign).
fn fields(n: usize, nz: usize) -> Coefficients {
    let len = n * n * nz;
    let value = |seed: usize, c: usize| {
        let h = (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (seed as u64 * 0x2545_F491);
        (h >> 11) as f64 / (1u64 << 53) as f64
    };
    let positive = |s| {
        (0..len)
            .map(|c| 0.1 + 3.0 * value(s, c))
            .collect::<Vec<_>>()
    };
    let signed = |s| (0..len).map(|c| value(s, c) - 0.5).collect::<Vec<_>>();
    Coefficients {
        panels: 1,
        n,
        nz,
        kx: positive(1),
        ky: positive(2),
        kz: positive(3),
        beta: positive(4),
        xi: Some([signed(5), signed(6), signed(7)]),
        window: None,
    }
}

/// The values of `v` (a whole-level field) on `b`, block-local order.
fn block_values(c: &Coefficients, v: &[f64], b: &Block) -> Vec<f64> {
    let nz = c.nz;
    let mut out = Vec::with_capacity(b.nx * b.ny * nz);
    for j in b.j0..b.j0 + b.ny {
        out.extend_from_slice(&v[(j * c.n + b.i0) * nz..][..b.nx * nz]);
    }
    out
}

/// Fills every block's ring from the others' edges, as the ranks' messages would.
fn fill(blocks: &[Block], local: &mut [Coefficients], grid: RankGrid) {
    let edges: Vec<_> = local.iter().map(Coefficients::edges).collect();
    for (r, c) in local.iter_mut().enumerate() {
        let rings = Side::ALL.map(|side| {
            let other = grid.neighbour(r, side)?;
            edges[other][side.opposite().index()].clone()
        });
        assert_eq!(blocks[r], c.window.unwrap());
        c.set_rings(rings).unwrap();
    }
}

#[test]
fn a_blocks_own_fields_give_the_whole_levels_operator_on_every_level() {
    let (n, nz) = (24, 5);
    let p = ProblemParams {
        n,
        nz,
        omega: Some(0.7),
        ..Default::default()
    };
    let vertical = Arc::new(VerticalGrid::new(&p));
    for (px, py) in [(2, 1), (1, 3), (2, 2), (3, 2)] {
        let grid = RankGrid { px, py };
        let dec = Decomposition::new(n, 3, grid).unwrap();
        let mut blocks: Vec<Block> = (0..grid.size()).map(|r| dec.fine_block(r)).collect();
        let mut whole = fields(n, nz);
        let mut local: Vec<Coefficients> = blocks
            .iter()
            .map(|b| {
                let given = [
                    Some(block_values(&whole, &whole.kx, b)),
                    Some(block_values(&whole, &whole.ky, b)),
                    Some(block_values(&whole, &whole.kz, b)),
                    Some(block_values(&whole, &whole.beta, b)),
                ];
                let xi = whole.xi.as_ref().unwrap();
                let xi = xi.each_ref().map(|v| Some(block_values(&whole, v, b)));
                let [a, b2, c, d] = given;
                let [e, f, g] = xi;
                let all = [a, b2, c, d, e, f, g];
                let refs = all.each_ref().map(|v| v.as_deref());
                let c = Coefficients::for_block(*b, nz, 1.0, refs).unwrap();
                // The same block, taken from the whole fields by the library.
                let taken = whole.block_of(*b).unwrap();
                let nan_eq = |x: &[f64], y: &[f64]| {
                    x.len() == y.len()
                        && x.iter()
                            .zip(y)
                            .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
                };
                assert!(nan_eq(&c.kx, &taken.kx) && nan_eq(&c.beta, &taken.beta));
                assert_eq!(c.window, taken.window);
                c
            })
            .collect();
        for level in 0..3 {
            fill(&blocks, &mut local, grid);
            for (b, c) in blocks.iter().zip(&local) {
                c.validate().unwrap();
                assert_eq!(
                    c.cells(b),
                    whole.cells(b),
                    "{px}x{py}, level {level}, {b:?}"
                );
                let lp = ProblemParams {
                    n: b.n,
                    ..p.clone()
                };
                let mine = LevelStencil::with_coefficients(&lp, *b, vertical.clone(), Some(c));
                let theirs =
                    LevelStencil::with_coefficients(&lp, *b, vertical.clone(), Some(&whole));
                assert_eq!(mine.cells, theirs.cells, "{px}x{py}, level {level}, {b:?}");
                assert!(mine.cells.as_ref().unwrap().advection.is_some());
            }
            whole = whole.coarsen();
            local = local.iter().map(Coefficients::coarsen).collect();
            blocks = blocks.iter().map(Block::coarsen).collect();
        }
    }
}

#[test]
fn wrong_block_fields_are_errors() {
    let block = Block {
        n: 16,
        i0: 8,
        j0: 0,
        nx: 8,
        ny: 16,
        panel: None,
        bc: Default::default(),
    };
    let short = vec![1.0; 8 * 16 * 4 - 1];
    let e = Coefficients::for_block(
        block,
        4,
        1.0,
        [None, Some(&short), None, None, None, None, None],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("ky") && e.contains("8x16x4"), "{e}");
    // A bad value of the block's own is named by its cell of the level.
    let mut kz = vec![1.0; 8 * 16 * 4];
    kz[(3 * 8 + 2) * 4 + 1] = -1.0;
    let c = Coefficients::for_block(
        block,
        4,
        1.0,
        [None, None, Some(&kz), None, None, None, None],
    )
    .unwrap();
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("kz") && e.contains("y=3, x=10, z=1"), "{e}");
    // A ring that does not come (the block has a neighbour across its west side) is an error,
    // not a silent NaN.
    let mut c = c;
    let e = c
        .set_rings([None, None, None, None])
        .unwrap_err()
        .to_string();
    assert!(e.contains("West"), "{e}");
    // The whole-level builder has no neighbours to fill rings from.
    let p = ProblemParams {
        n: 16,
        nz: 4,
        coefficients: Some(Arc::new(
            Coefficients::for_block(block, 4, 1.0, [None; 7]).unwrap(),
        )),
        ..Default::default()
    };
    let e = strata::stencil::build_levels_with(&p, block, 2, Default::default())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("West"), "{e}");
    // Fields of the sphere's tiles are not taken per block.
    let tile = Block {
        panel: Some(0),
        ..block
    };
    assert!(Coefficients::for_block(tile, 4, 1.0, [None; 7]).is_err());
}

/// Over orography without coefficient fields, a rank's block makes constant fields of its own
/// cells and ring only ([`Coefficients::constant_for`]), and its stencil is the one the whole
/// level's constant fields give, bit for bit (entries and slant couplings); the sphere's tiles,
/// a whole level and a block with a periodic side keep the whole level's fields.
#[test]
fn constant_fields_under_terrain_hold_a_blocks_window_only() {
    let (n, nz) = (24, 5);
    let bc = strata::grid::Boundaries::DIRICHLET;
    let p = ProblemParams {
        n,
        nz,
        height: 0.1,
        orography: Some(Arc::new(strata::problem::Orography::schaer(
            n,
            &strata::problem::Schaer::default(),
        ))),
        ..Default::default()
    };
    let vertical = Arc::new(VerticalGrid::new(&p));
    let grid = RankGrid { px: 2, py: 2 };
    let dec = Decomposition::new(n, 3, grid).unwrap();
    for r in 0..grid.size() {
        let b = dec.fine_block(r).with_bc(bc);
        let c = Coefficients::constant_for(&b, 1, nz, p.delta);
        let (_, _, wx, wy) = b.with_ring();
        assert_eq!((c.window, c.kx.len()), (Some(b), wx * wy * nz), "{b:?}");
        let whole = Coefficients::constant(n, nz, p.delta);
        let mine = LevelStencil::with_coefficients(&p, b, vertical.clone(), None);
        let theirs = LevelStencil::with_coefficients(&p, b, vertical.clone(), Some(&whole));
        assert_eq!(mine.cells, theirs.cells, "{b:?}");
        assert_eq!(mine.slant, theirs.slant, "{b:?}");
        assert!(mine.slant.is_some());
    }
    let whole_level = Coefficients::constant_for(&Block::whole(n), 1, nz, 1.0);
    assert_eq!(whole_level.window, None);
    let periodic = dec.fine_block(0).with_bc(strata::grid::Boundaries::all(
        strata::grid::Boundary::Periodic,
    ));
    assert_eq!(
        Coefficients::constant_for(&periodic, 1, nz, 1.0).window,
        None
    );
}
