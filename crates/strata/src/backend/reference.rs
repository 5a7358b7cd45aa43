//! The serial reference backend: plain loops over the formulas of docs/MODEL.md, no fusion, no
//! parallelism, written to be obviously correct. Every other backend is tested against it.

use super::{Fields, LineKernels, StencilKernels, TransferKernels, VectorKernels};
use crate::error::Result;
use crate::field::HostField;
use crate::perf::Probes;
use crate::precision::Storage;
use crate::stencil::LevelStencil;

/// The reference backend (serial, unfused). Slow by design.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReferenceBackend;

/// Reads u at halo-inclusive column `(ih, jh)`, level `k`.
fn at(u: &HostField, ih: usize, jh: usize, k: usize) -> f64 {
    u.data[u.offset(ih, jh) + k]
}

/// (A u) at interior cell (i, j, k): docs/MODEL.md §3.4 term by term, and the cross terms of
/// the sphere (§16.1).
fn apply_cell(s: &LevelStencil, u: &HostField, i: usize, j: usize, k: usize) -> f64 {
    apply7_cell(s, u, i, j, k) + cross_cell(s, u, i, j, k)
}

/// (C u) at interior cell (i, j, k): the couplings to the diagonal neighbours (the sphere) and
/// to the lateral neighbours' cells above and below (orography, §23).
fn cross_cell(s: &LevelStencil, u: &HostField, i: usize, j: usize, k: usize) -> f64 {
    let (ih, jh) = (i + 1, j + 1);
    let uc = at(u, ih, jh, k);
    let mut slant = 0.0;
    if let Some(w) = &s.slant {
        let e = w.row(i, j, k);
        for (&(di, dj, dk), e) in crate::problem::SLANT_NEIGHBOURS.iter().zip(e) {
            let kk = k as i64 + dk as i64;
            if kk >= 0 && (kk as usize) < s.nz {
                let (a, b) = (
                    (ih as i64 + di as i64) as usize,
                    (jh as i64 + dj as i64) as usize,
                );
                slant += e * (at(u, a, b, kk as usize) - uc);
            }
        }
    }
    if s.cross.is_none() {
        return slant;
    }
    let [ne, nw, se, sw] = s.diagonal_row(i, j, k);
    slant
        + ne * (at(u, ih + 1, jh + 1, k) - uc)
        + nw * (at(u, ih - 1, jh + 1, k) - uc)
        + se * (at(u, ih + 1, jh - 1, k) - uc)
        + sw * (at(u, ih - 1, jh - 1, k) - uc)
}

/// (A₇ u) at interior cell (i, j, k).
fn apply7_cell(s: &LevelStencil, u: &HostField, i: usize, j: usize, k: usize) -> f64 {
    if s.cells.is_some() {
        // The general operator (docs/MODEL.md §15.1): the row's seven entries.
        let r = s.row(i, j, k);
        let (ih, jh) = (i + 1, j + 1);
        let mut out = r.diag * at(u, ih, jh, k)
            + r.east * at(u, ih + 1, jh, k)
            + r.west * at(u, ih - 1, jh, k)
            + r.north * at(u, ih, jh + 1, k)
            + r.south * at(u, ih, jh - 1, k);
        if k + 1 < s.nz {
            out += r.up * at(u, ih, jh, k + 1);
        }
        if k > 0 {
            out += r.down * at(u, ih, jh, k - 1);
        }
        return out;
    }
    let v = &s.vertical;
    let col = &s.columns[j * s.nx() + i];
    let (ih, jh) = (i + 1, j + 1);
    let uc = at(u, ih, jh, k);
    let mut vert = v.a[k] * uc;
    if k + 1 < s.nz {
        vert += v.b[k] * (at(u, ih, jh, k + 1) - uc);
    }
    if k > 0 {
        vert += v.c[k] * (at(u, ih, jh, k - 1) - uc);
    }
    let horiz = col.alpha_e * (at(u, ih + 1, jh, k) - uc)
        + col.alpha_w * (at(u, ih - 1, jh, k) - uc)
        + col.alpha_n * (at(u, ih, jh + 1, k) - uc)
        + col.alpha_s * (at(u, ih, jh - 1, k) - uc);
    col.area * vert + v.d[k] * horiz
}

/// Thomas algorithm for the column block A_T of column (i, j): returns z with A_T z = r.
fn thomas(s: &LevelStencil, i: usize, j: usize, r: &[f64]) -> Vec<f64> {
    let nz = s.nz;
    let mut cp = vec![0.0; nz];
    let mut z = vec![0.0; nz];
    let e = s.row(i, j, 0);
    cp[0] = e.up / e.diag;
    z[0] = r[0] / e.diag;
    for k in 1..nz {
        let e = s.row(i, j, k);
        let m = e.diag - e.down * cp[k - 1];
        cp[k] = e.up / m;
        z[k] = (r[k] - e.down * z[k - 1]) / m;
    }
    for k in (0..nz - 1).rev() {
        z[k] -= cp[k] * z[k + 1];
    }
    z
}

fn interior(s: &LevelStencil) -> impl Iterator<Item = (usize, usize)> {
    let (nx, ny) = (s.nx(), s.ny());
    (0..ny).flat_map(move |j| (0..nx).map(move |i| (i, j)))
}

/// Fields of a level prepared in single precision hold fp64 values rounded to fp32 on every
/// store (each kernel's outputs, rounded once: its arithmetic and temporaries stay fp64), which
/// is what the fp32 fields of the other backends hold.
impl ReferenceBackend {
    /// y ← f(x, y) on the interior, stored in precision `p`.
    fn map2(
        &self,
        s: &LevelStencil,
        p: Storage,
        x: &HostField,
        y: &mut HostField,
        f: impl Fn(f64, f64) -> f64,
    ) {
        for (i, j) in interior(s) {
            let o = x.offset(i + 1, j + 1);
            for k in 0..s.nz {
                y.data[o + k] = p.round(f(x.data[o + k], y.data[o + k]));
            }
        }
    }

    /// y ← A x, stored in precision `p`.
    fn apply_in(&self, s: &LevelStencil, p: Storage, x: &HostField, y: &mut HostField) {
        for (i, j) in interior(s) {
            for k in 0..s.nz {
                let v = apply_cell(s, x, i, j, k);
                y.column_mut(i, j)[k] = p.round(v);
            }
        }
    }

    /// z ← M⁻¹ r, stored in precision `p`.
    fn line_solve_in(&self, s: &LevelStencil, p: Storage, r: &HostField, z: &mut HostField) {
        Self::line_solve_where(s, p, r, z, |_, _| true);
    }

    /// z ← T⁻¹ r on the columns (i, j) that `keep` takes, stored in precision `p`; the others
    /// keep their values.
    fn line_solve_where(
        s: &LevelStencil,
        p: Storage,
        r: &HostField,
        z: &mut HostField,
        keep: impl Fn(usize, usize) -> bool,
    ) {
        for (i, j) in interior(s).filter(|&(i, j)| keep(i, j)) {
            let col = thomas(s, i, j, r.column(i, j));
            for (z, c) in z.column_mut(i, j).iter_mut().zip(col) {
                *z = p.round(c);
            }
        }
    }

    /// An fp64 temporary of the level's size.
    fn temp(&self, s: &LevelStencil) -> HostField {
        HostField::zeros(s.nx(), s.ny(), s.nz)
    }

    /// Rounds the interior and halo of `x` to precision `p` (after an upload or an unpack).
    fn round_all(p: Storage, x: &mut HostField) {
        x.data.iter_mut().for_each(|v| *v = p.round(*v));
    }
}

impl Fields for ReferenceBackend {
    type Field = HostField;

    type LevelOp = LevelStencil;

    fn name(&self) -> String {
        "reference".into()
    }

    fn prepare_level(&self, stencil: &LevelStencil) -> Result<LevelStencil> {
        stencil.check_single()?;
        stencil.check_host_cells()?;
        Ok(stencil.clone())
    }

    fn stencil<'a>(&self, op: &'a LevelStencil) -> &'a LevelStencil {
        op
    }

    fn alloc(&self, s: &LevelStencil) -> Result<HostField> {
        Ok(HostField::zeros(s.nx(), s.ny(), s.nz))
    }
}

impl VectorKernels for ReferenceBackend {
    fn fill(&self, s: &LevelStencil, x: &mut HostField, v: f64) -> Result<()> {
        for (i, j) in interior(s) {
            x.column_mut(i, j).fill(s.storage.round(v));
        }
        Ok(())
    }

    fn copy(&self, s: &LevelStencil, x: &HostField, y: &mut HostField) -> Result<()> {
        self.map2(s, s.storage, x, y, |x, _| x);
        Ok(())
    }

    fn axpy(&self, s: &LevelStencil, a: f64, x: &HostField, y: &mut HostField) -> Result<()> {
        self.map2(s, s.storage, x, y, |x, y| y + a * x);
        Ok(())
    }

    fn xpby(&self, s: &LevelStencil, x: &HostField, b: f64, y: &mut HostField) -> Result<()> {
        self.map2(s, s.storage, x, y, |x, y| x + b * y);
        Ok(())
    }

    fn axpy_from(
        &self,
        s: &LevelStencil,
        a: f64,
        from: &LevelStencil,
        x: &HostField,
        y: &mut HostField,
    ) -> Result<()> {
        super::check_convert(from, s)?;
        self.map2(s, s.storage, x, y, |x, y| y + a * x);
        Ok(())
    }

    fn dot(&self, s: &LevelStencil, x: &HostField, y: &HostField) -> Result<f64> {
        let mut sum = 0.0;
        for (i, j) in interior(s) {
            for (a, b) in x.column(i, j).iter().zip(y.column(i, j)) {
                sum += a * b;
            }
        }
        Ok(sum)
    }
}

impl StencilKernels for ReferenceBackend {
    fn apply(&self, s: &LevelStencil, x: &HostField, y: &mut HostField) -> Result<()> {
        self.apply_in(s, s.storage, x, y);
        Ok(())
    }

    fn residual(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u: &HostField,
        r: &mut HostField,
    ) -> Result<f64> {
        self.apply_in(s, Storage::F64, u, r);
        self.map2(s, s.storage, f, r, |f, au| f - au);
        self.dot(s, r, r)
    }

    fn residual_to(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u: &HostField,
        to: &LevelStencil,
        r: &mut HostField,
    ) -> Result<f64> {
        super::check_convert(s, to)?;
        let mut sum = 0.0;
        for (i, j) in interior(s) {
            for k in 0..s.nz {
                let v = f.column(i, j)[k] - apply_cell(s, u, i, j, k);
                sum += v * v;
                r.column_mut(i, j)[k] = to.storage.round(v);
            }
        }
        Ok(sum)
    }

    fn cg_spmv(
        &self,
        s: &LevelStencil,
        z: &HostField,
        u: &mut HostField,
        p: &mut HostField,
        q: &mut HostField,
        alpha: f64,
        beta: f64,
    ) -> Result<f64> {
        self.axpy(s, alpha, p, u)?;
        self.xpby(s, z, beta, p)?;
        let mut az = self.temp(s);
        self.apply_in(s, Storage::F64, z, &mut az);
        self.xpby(s, &az, beta, q)?;
        self.dot(s, p, q)
    }

    fn prolongate(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &HostField,
        u_fine: &mut HostField,
    ) -> Result<()> {
        let cells = interior(fine).map(|(i, j)| (i as isize, j as isize));
        prolongate_cells(coarse, fine, u_coarse, u_fine, cells);
        Ok(())
    }

    fn prolongate_faces(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &HostField,
        u_fine: &mut HostField,
        sides: [bool; 4],
    ) -> Result<()> {
        // prolongate's arithmetic, on the halo cells.
        let cells = super::prolong::face_cells(fine.nx(), fine.ny(), sides);
        prolongate_cells(coarse, fine, u_coarse, u_fine, cells);
        Ok(())
    }
}

/// u_f ← u_f + P u_c on the fine cells `cells` (interior coordinates; −1 and n are the halo):
/// the parent, its neighbours on the child's side, a wall's ghost as a multiple of the parent.
fn prolongate_cells(
    coarse: &LevelStencil,
    fine: &LevelStencil,
    u_coarse: &HostField,
    u_fine: &mut HostField,
    cells: impl Iterator<Item = (isize, isize)>,
) {
    for (i, j) in cells {
        let p = super::prolong::parents(coarse, i, j);
        let o = u_fine.offset((i + 1) as usize, (j + 1) as usize);
        for k in 0..fine.nz {
            let up = at(u_coarse, p.ip, p.jp, k);
            let ux = match p.ghost_x {
                Some(g) => g * up,
                None => at(u_coarse, p.ix, p.jp, k),
            };
            let uy = match p.ghost_y {
                Some(g) => g * up,
                None => at(u_coarse, p.ip, p.jy, k),
            };
            let v = &mut u_fine.data[o + k];
            *v = fine.storage.round(*v + 0.5 * up + 0.25 * ux + 0.25 * uy);
        }
    }
}

impl LineKernels for ReferenceBackend {
    fn line_solve(&self, s: &LevelStencil, r: &HostField, z: &mut HostField) -> Result<()> {
        self.line_solve_in(s, s.storage, r, z);
        Ok(())
    }

    fn cg_tridiag(
        &self,
        s: &LevelStencil,
        q: &HostField,
        r: &mut HostField,
        z: &mut HostField,
        alpha: f64,
    ) -> Result<[f64; 2]> {
        self.axpy(s, -alpha, q, r)?;
        self.line_solve(s, r, z)?;
        Ok([self.dot(s, r, r)?, self.dot(s, r, z)?])
    }

    fn smooth(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u_in: &HostField,
        u_out: &mut HostField,
        rho: f64,
    ) -> Result<()> {
        let mut r = self.temp(s);
        self.apply_in(s, Storage::F64, u_in, &mut r);
        self.map2(s, Storage::F64, f, &mut r, |f, au| f - au);
        let mut z = self.temp(s);
        self.line_solve_in(s, Storage::F64, &r, &mut z);
        self.copy(s, u_in, u_out)?;
        self.axpy(s, rho, &z, u_out)
    }

    fn smooth_color(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u: &mut HostField,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        s.check_colour(color)?;
        let nz = s.nz;
        let (mut cp, mut z) = (vec![0.0; nz], vec![0.0; nz]);
        for (i, j) in interior(s) {
            if !super::line_gs::has_color(s, i, j, color) {
                continue;
            }
            let (ih, jh) = (i + 1, j + 1);
            let col = |a: usize, b: usize| &u.data[u.offset(a, b)..][..nz];
            let nbrs = [
                col(ih + 1, jh),
                col(ih - 1, jh),
                col(ih, jh + 1),
                col(ih, jh - 1),
            ];
            // The diagonal neighbours (ne, nw, se, sw) on a nine-point level, swept by quarters.
            let diagonal = s.cross.is_some().then(|| {
                [
                    col(ih + 1, jh + 1),
                    col(ih - 1, jh + 1),
                    col(ih + 1, jh - 1),
                    col(ih - 1, jh - 1),
                ]
            });
            let own = u.column(i, j);
            super::line_gs::solve_given_neighbours(
                s,
                i,
                j,
                f.column(i, j),
                nbrs,
                diagonal,
                own,
                &mut cp,
                &mut z,
            );
            super::line_gs::over_relax(u.column(i, j), &mut z, relax);
            for (u, z) in u.column_mut(i, j).iter_mut().zip(&z) {
                *u = s.storage.round(*z);
            }
        }
        Ok(())
    }

    /// The colour's columns only, the other colour's keeping their values; on a level with
    /// cross terms every column (the default's form, which `smooth_color_after_solve` there
    /// takes too).
    fn line_solve_color(
        &self,
        s: &LevelStencil,
        r: &HostField,
        z: &mut HostField,
        color: usize,
    ) -> Result<()> {
        s.check_colour(color)?;
        if s.has_cross() {
            return self.line_solve(s, r, z);
        }
        Self::line_solve_where(s, s.storage, r, z, |i, j| {
            super::line_gs::has_color(s, i, j, color)
        });
        Ok(())
    }

    /// T_c⁻¹ (f − w H u)_c on the colour's columns, their old values not read; on a level with
    /// cross terms (whose couplings read the column's own values) `smooth_color` from the values
    /// `line_solve_color` left there.
    fn smooth_color_after_solve(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u: &mut HostField,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        s.check_colour(color)?;
        if s.has_cross() {
            return self.smooth_color(s, f, u, color, relax);
        }
        let nz = s.nz;
        let (mut cp, mut z) = (vec![0.0; nz], vec![0.0; nz]);
        for (i, j) in interior(s) {
            if !super::line_gs::has_color(s, i, j, color) {
                continue;
            }
            let (ih, jh) = (i + 1, j + 1);
            // The neighbours scaled by w: T z = f − H (w u).
            let col = |a: usize, b: usize| -> Vec<f64> {
                u.data[u.offset(a, b)..][..nz]
                    .iter()
                    .map(|v| relax * v)
                    .collect()
            };
            let nbrs = [
                col(ih + 1, jh),
                col(ih - 1, jh),
                col(ih, jh + 1),
                col(ih, jh - 1),
            ];
            let own = u.column(i, j);
            super::line_gs::solve_given_neighbours(
                s,
                i,
                j,
                f.column(i, j),
                [&nbrs[0], &nbrs[1], &nbrs[2], &nbrs[3]],
                None,
                own,
                &mut cp,
                &mut z,
            );
            for (u, z) in u.column_mut(i, j).iter_mut().zip(&z) {
                *u = s.storage.round(*z);
            }
        }
        Ok(())
    }

    fn restrict_smooth(
        &self,
        _fine: &LevelStencil,
        coarse: &LevelStencil,
        r_fine: &HostField,
        f_coarse: &mut HostField,
        u_coarse: &mut HostField,
        rho: f64,
        scale: f64,
    ) -> Result<()> {
        for (ic, jc) in interior(coarse) {
            for k in 0..coarse.nz {
                let mut sum = 0.0;
                for (di, dj) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    sum += r_fine.column(2 * ic + di, 2 * jc + dj)[k];
                }
                f_coarse.column_mut(ic, jc)[k] = coarse.storage.round(scale * sum);
            }
        }
        self.line_solve_in(coarse, Storage::F64, f_coarse, u_coarse);
        for (i, j) in interior(coarse) {
            for v in u_coarse.column_mut(i, j) {
                *v = coarse.storage.round(*v * rho);
            }
        }
        Ok(())
    }
}

impl TransferKernels for ReferenceBackend {
    super::host_face_buffers!();

    fn upload(&self, s: &LevelStencil, host: &[f64], x: &mut HostField) -> Result<()> {
        x.set_interior(host);
        Self::round_all(s.storage, x);
        Ok(())
    }

    fn convert(
        &self,
        from: &LevelStencil,
        x: &HostField,
        to: &LevelStencil,
        y: &mut HostField,
    ) -> Result<()> {
        super::check_convert(from, to)?;
        for (y, x) in y.data.iter_mut().zip(&x.data) {
            *y = to.storage.round(*x);
        }
        Ok(())
    }

    fn download(&self, _s: &LevelStencil, x: &HostField, host: &mut [f64]) -> Result<()> {
        x.get_interior(host);
        Ok(())
    }

    fn pack_face(
        &self,
        s: &LevelStencil,
        x: &HostField,
        side: crate::grid::Side,
        buf: &mut Vec<f64>,
    ) -> Result<()> {
        assert_eq!(buf.len(), crate::backend::face_len(s, side));
        x.pack_face(side, buf);
        Ok(())
    }

    fn unpack_face(
        &self,
        s: &LevelStencil,
        x: &mut HostField,
        side: crate::grid::Side,
        buf: &Vec<f64>,
    ) -> Result<()> {
        assert_eq!(buf.len(), crate::backend::face_len(s, side));
        x.unpack_face(side, buf);
        // What an fp32 field's halo holds.
        Self::round_all(s.storage, x);
        Ok(())
    }

    fn pack_column(
        &self,
        s: &LevelStencil,
        x: &HostField,
        at: (usize, usize),
        buf: &mut Vec<f64>,
    ) -> Result<()> {
        crate::backend::check_column(s, at, buf.len())?;
        x.pack_column(at, buf);
        Ok(())
    }

    fn unpack_column(
        &self,
        s: &LevelStencil,
        x: &mut HostField,
        at: (usize, usize),
        buf: &Vec<f64>,
    ) -> Result<()> {
        crate::backend::check_column(s, at, buf.len())?;
        // What an fp32 field's column holds.
        let rounded: Vec<f64> = buf.iter().map(|&v| s.storage.round(v)).collect();
        x.unpack_column(at, &rounded);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn copy_halo(
        &self,
        src_op: &LevelStencil,
        src: &HostField,
        src_side: crate::grid::Side,
        op: &LevelStencil,
        x: &mut HostField,
        side: crate::grid::Side,
        reversed: bool,
    ) -> Result<()> {
        assert_eq!(
            crate::backend::face_len(src_op, src_side),
            crate::backend::face_len(op, side)
        );
        x.copy_halo_from(side, src, src_side, reversed);
        Ok(())
    }

    fn wrap_halo(
        &self,
        _op: &LevelStencil,
        x: &mut HostField,
        side: crate::grid::Side,
    ) -> Result<()> {
        x.wrap_halo(side);
        Ok(())
    }
}

impl Probes for ReferenceBackend {
    fn moved_values(&self, kernel: crate::perf::Kernel) -> Option<f64> {
        crate::perf::host_moved_values(kernel)
    }

    fn coefficient_values(&self, kernel: crate::perf::Kernel, symmetric: bool) -> Option<f64> {
        crate::perf::host_coefficient_values(kernel, symmetric)
    }

    fn copy_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        let len = (bytes / 16).max(1);
        let src: Vec<f64> = (0..len).map(|i| i as f64).collect();
        let mut dst = vec![0.0f64; len];
        let mut best = f64::INFINITY;
        for _ in 0..repeats.max(1) {
            let t = std::time::Instant::now();
            dst.copy_from_slice(&src);
            best = best.min(t.elapsed().as_secs_f64());
        }
        std::hint::black_box(&dst);
        Ok((2 * len * 8) as f64 / best)
    }

    fn update_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        let len = (bytes / 8).max(1);
        let x = vec![0.5f64; len];
        let mut y = vec![1.0f64; len];
        let mut best = f64::INFINITY;
        for _ in 0..repeats.max(1) {
            let t = std::time::Instant::now();
            y.iter_mut().zip(&x).for_each(|(y, x)| *y += 1e-3 * x);
            best = best.min(t.elapsed().as_secs_f64());
        }
        std::hint::black_box(&y);
        Ok((3 * len * 8) as f64 / best)
    }
}

/// The solver's scalars in a host vector (the defaults of every slot kernel).
impl super::ScalarKernels for ReferenceBackend {
    super::host_scalars!();
}
