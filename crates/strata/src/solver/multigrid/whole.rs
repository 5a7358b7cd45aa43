//! A coarse level gathered whole onto every rank from the ranks' blocks (docs/MODEL.md §9.4,
//! §24): the whole level's stencil, assembled from every rank's column coefficients, for the
//! coarse CG's gathered level and for the levels gathered under the cycle.

use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::stencil::LevelStencil;

/// A count read from the environment variable `name` (what is counted: `what`, for the error),
/// or `default` where it is not set.
pub(crate) fn env_count(name: &str, what: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| {
            crate::StrataError::invalid(name, format!("must be a count of {what} (got {v:?})"))
        }),
        Err(_) => Ok(default),
    }
}

/// Whether a level can be gathered from its column coefficients alone: no per-cell
/// coefficients, cross or slant terms, tiles (the sphere) or fields in a backend's memory.
pub(crate) fn plain(s: &LevelStencil) -> bool {
    s.cells.is_none()
        && s.cross.is_none()
        && s.slant.is_none()
        && s.tiles.is_none()
        && s.resident.is_none()
        && s.block.panel.is_none()
}

/// Values before a rank's columns in what [`whole_level`] gathers: a flag and the block.
const HEADER: usize = 5;

/// The whole level of which `s` is this rank's block, assembled on every rank from every rank's
/// column coefficients (collective: one all-gather through the host), with every rank's block
/// `[i0, j0, nx, ny]` in rank order; `None` on every rank where some rank `can`not give its
/// level's (see [`plain`]). An error where the communicator gathers nothing
/// or the blocks do not tile the level.
pub(crate) fn whole_level<B: Backend, C: Comm<B>>(
    comm: &C,
    s: &LevelStencil,
    can: bool,
) -> Result<Option<(LevelStencil, Vec<[usize; 4]>)>> {
    // What every rank sends: whether it can, its block, then (if it can) its columns, 6 values
    // each.
    let mut local = vec![f64::from(u8::from(can))];
    local.extend([s.block.i0, s.block.j0, s.block.nx, s.block.ny].map(|v| v as f64));
    if can {
        for c in s.columns.iter() {
            local.extend([
                c.area, c.alpha_e, c.alpha_w, c.alpha_n, c.alpha_s, c.alpha_t,
            ]);
        }
    }
    let parts = comm.all_gather(&local)?;
    if parts.len() != comm.size() || parts.iter().any(|p| p.first() != Some(&1.0)) {
        return Ok(None);
    }
    let n = s.block.n;
    let mut columns = vec![crate::problem::Column::default(); n * n];
    let mut blocks = Vec::with_capacity(parts.len());
    let mut covered = 0;
    for part in &parts {
        let [i0, j0, nx, ny] = [1, 2, 3, 4].map(|k| part.get(k).copied().unwrap_or(-1.0) as usize);
        if part.len() != HEADER + 6 * nx * ny || i0 + nx > n || j0 + ny > n {
            return Err(crate::StrataError::Comm(
                "a rank's block does not fit the level".into(),
            ));
        }
        for (m, c) in part[HEADER..].chunks_exact(6).enumerate() {
            let (i, j) = (i0 + m % nx, j0 + m / nx);
            columns[j * n + i] = crate::problem::Column {
                area: c[0],
                alpha_e: c[1],
                alpha_w: c[2],
                alpha_n: c[3],
                alpha_s: c[4],
                alpha_t: c[5],
            };
        }
        covered += nx * ny;
        blocks.push([i0, j0, nx, ny]);
    }
    if covered != n * n {
        return Err(crate::StrataError::Comm(
            "the ranks' blocks do not tile the level".into(),
        ));
    }
    let whole = LevelStencil {
        block: crate::grid::Block {
            i0: 0,
            j0: 0,
            nx: n,
            ny: n,
            ..s.block
        },
        columns: columns.into(),
        ..s.clone()
    };
    Ok(Some((whole, blocks)))
}
