//! The kernels built on the line solve (kernels/lines.cu): M⁻¹, the fused CG Tridiag, Smooth, RestrictSmooth.

use super::*;
use strata::backend::{Coef, LineKernels, StencilKernels, VectorKernels};

impl LineKernels for CudaBackend {
    fn line_solve(&self, op: &CudaLevel, r: &CudaField, z: &mut CudaField) -> Result<()> {
        self.check(op, &[r, z])?;
        self.line_solve_scaled(op, r, z, 1.0)
    }

    fn cg_tridiag(
        &self,
        op: &CudaLevel,
        q: &CudaField,
        r: &mut CudaField,
        z: &mut CudaField,
        alpha: f64,
    ) -> Result<[f64; 2]> {
        let mut red = self.reduce_lock();
        let blocks =
            self.cg_tridiag_launch(op, q, r, z, Coef::value(alpha), &self.no_slots, &mut red)?;
        self.finish_reduce_of(op, blocks, &mut red, 2)
    }

    fn smooth(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u_in: &CudaField,
        u_out: &mut CudaField,
        rho: f64,
    ) -> Result<()> {
        self.check(op, &[f, u_in, u_out])?;
        // The cross terms: the sphere's diagonal couplings (read by the -DDIAGONALS build) or
        // orography's slant ones (the per-cell kernels).
        if let Some(cfg) = op.pcr {
            return launch_op!(self, op, K::SmoothPcr, K::SmoothPcrCells, cross in cfg; &f.data, &u_in.data, &mut u_out.data, &rho);
        }
        let (k, cfg) = self.line_launch(
            op,
            K::Smooth,
            K::SmoothCells,
            op.layout.nx as usize,
            op.line_cfg,
        );
        launch_op!(self, op, k, k, cross in cfg; &f.data, &u_in.data, &mut u_out.data, &rho)
    }

    fn smooth_color(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &mut CudaField,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        op.stencil.check_colour(color)?;
        self.check(op, &[f, u])?;
        let (parity, rows) = colour_parity(op, color);
        if rows == 0 {
            return Ok(());
        }
        let (kernel, cfg) = match op.pcr {
            // PCR over the ⌈nx/2⌉ × rows slots of one colour (PCR_COLOR_COLUMN).
            Some(cfg) => {
                let slots = (op.layout.nx as u32).div_ceil(2) * rows as u32;
                (
                    op_kernel(op, K::SmoothColorPcr, K::SmoothColorPcrCells),
                    LaunchConfig {
                        grid_dim: (slots.div_ceil(cfg.block_dim.0), 1, 1),
                        ..cfg
                    },
                )
            }
            // Half as many threads in x: one (or two, TWIN_COLOR_COLUMN) per column of the
            // colour (kernels/lines.cu).
            None => {
                let xs = (op.layout.nx as usize).div_ceil(2);
                let whole = LaunchConfig {
                    shared_mem_bytes: op.k.line_smem(),
                    ..column_config(xs, rows, self.tuning.block_x).0
                };
                self.line_launch_rows(op, K::SmoothColor, K::SmoothColorCells, (xs, rows), whole)
            }
        };
        let sym = sym_flag(op);
        let mut l = self.builder(self.launch_stream(), op.k.get(kernel));
        l.arg(&op.layout);
        push_operator(&mut l, op, &sym);
        // The cross terms: the sphere's diagonal couplings (read by the -DDIAGONALS build) or
        // orography's slant ones (the per-cell kernels).
        push_cross(&mut l, op);
        l.arg(&f.data).arg(&mut u.data).arg(&parity).arg(&relax);
        // SAFETY: layouts checked; each thread (or pair of threads, each writing its own half)
        // solves one column of the colour of this level (inside the layout) and reads only its
        // neighbours (halo included; the slant couplings' too, lateral ones one level up and
        // down; the diagonal ones, where a quarter colour is swept), which have other colours
        // (check_colour: a level with diagonal couplings is swept by quarters) and are not
        // written.
        cu(unsafe { l.launch(cfg) }).map(|_| ())
    }

    fn line_solve_color(
        &self,
        op: &CudaLevel,
        r: &CudaField,
        z: &mut CudaField,
        color: usize,
    ) -> Result<()> {
        op.stencil.check_colour(color)?;
        self.check(op, &[r, z])?;
        let Some(cfg) = self.colour_split(op, color) else {
            return self.line_solve(op, r, z);
        };
        let (parity, _) = colour_parity(op, color);
        let kernel = op_kernel(op, K::LineSolveColorSplit, K::LineSolveColorSplitCells);
        let sym = sym_flag(op);
        let mut l = self.builder(self.launch_stream(), op.k.get(kernel));
        l.arg(&op.layout);
        push_operator(&mut l, op, &sym);
        l.arg(&r.data).arg(&mut z.data).arg(&parity);
        // SAFETY: layouts checked; each column of the colour is solved by its segment threads
        // (inside the layout), reading only its own column of r and writing its own of z.
        cu(unsafe { l.launch(cfg) }).map(|_| ())
    }

    fn smooth_color_after_solve(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &mut CudaField,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        op.stencil.check_colour(color)?;
        self.check(op, &[f, u])?;
        let Some(cfg) = self.colour_split(op, color) else {
            return self.smooth_color(op, f, u, color, relax);
        };
        let (parity, _) = colour_parity(op, color);
        let kernel = op_kernel(op, K::SmoothColorAfterSplit, K::SmoothColorAfterSplitCells);
        let sym = sym_flag(op);
        let mut l = self.builder(self.launch_stream(), op.k.get(kernel));
        l.arg(&op.layout);
        push_operator(&mut l, op, &sym);
        l.arg(&f.data).arg(&mut u.data).arg(&parity).arg(&relax);
        // SAFETY: layouts checked; each column of the colour is solved by its segment threads
        // (inside the layout), reading its neighbours (the other colour, halo included), which
        // are not written here, and writing only its own column, whose old values it does not
        // read.
        cu(unsafe { l.launch(cfg) }).map(|_| ())
    }

    fn smooth_color_correct(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        z: &mut CudaField,
        color: usize,
        relax: f64,
        outer: &CudaLevel,
        u: &mut CudaField,
    ) -> Result<()> {
        op.stencil.check_colour(color)?;
        self.check(op, &[f, z])?;
        let (parity, rows) = colour_parity(op, color);
        let xs = (op.layout.nx as usize).div_ceil(2);
        let nz = op.layout.nz as usize;
        // One kernel where the tuning allows it (Tuning::fuse_correction, and on per-cell
        // levels Tuning::fuse_correction_cells), the level runs the split half-sweep of a red
        // or black colour, and u is the fp64 preparation of z's layout; else the two calls.
        let tuned = self.tuning.fuse_correction
            && (op.cells.is_none() || self.tuning.fuse_correction_cells);
        let fused = match split_config(&self.tuning, op.pcr.is_some(), nz, xs, rows) {
            Some(cfg) if tuned && self.tuning.split_levels().is_power_of_two() && color < 2 => {
                self.check_f32_beside(outer, &[u], op, z)?.then_some(cfg)
            }
            _ => None,
        };
        let Some(cfg) = fused else {
            self.smooth_color(op, f, z, color, relax)?;
            return self.axpy_from(outer, 1.0, op, z, u);
        };
        let kernel = op_kernel(
            op,
            K::SmoothColorCorrectSplit,
            K::SmoothColorCorrectSplitCells,
        );
        let sym = sym_flag(op);
        let mut l = self.builder(self.launch_stream(), op.k.get(kernel));
        l.arg(&op.layout);
        push_operator(&mut l, op, &sym);
        push_cross(&mut l, op);
        l.arg(&f.data)
            .arg(&z.data)
            .arg(&parity)
            .arg(&relax)
            .arg(&mut u.data);
        // SAFETY: layouts checked (u: the fp64 field of z's layout, check_f32_beside); each
        // column of the colour is solved by its segment threads (inside the layout), reading
        // its neighbours of the other colour and writing only u's cells of its own column and
        // of the column beside it in its row (i ^ 1), which no other thread of the launch
        // writes; z is only read.
        cu(unsafe { l.launch(cfg) }).map(|_| ())
    }

    fn restrict_smooth(
        &self,
        fine: &CudaLevel,
        coarse: &CudaLevel,
        r_fine: &CudaField,
        f_coarse: &mut CudaField,
        u_coarse: &mut CudaField,
        rho: f64,
        scale: f64,
    ) -> Result<()> {
        self.check(fine, &[r_fine])?;
        self.check(coarse, &[f_coarse, u_coarse])?;
        super::stencil::check_twice(fine, coarse, "restrict_smooth")?;
        let (kernel, cfg) = match coarse.pcr {
            Some(cfg) => (
                op_kernel(coarse, K::RestrictSmoothPcr, K::RestrictSmoothPcrCells),
                cfg,
            ),
            None => self.line_launch(
                coarse,
                K::RestrictSmooth,
                K::RestrictSmoothCells,
                coarse.layout.nx as usize,
                coarse.line_cfg,
            ),
        };
        let sym = sym_flag(coarse);
        let mut b = self.builder(self.launch_stream(), coarse.k.get(kernel));
        b.arg(&fine.layout).arg(&coarse.layout);
        push_operator(&mut b, coarse, &sym);
        b.arg(&r_fine.data)
            .arg(&mut f_coarse.data)
            .arg(&mut u_coarse.data)
            .arg(&rho)
            .arg(&scale);
        // SAFETY: layouts checked (the fine block twice the coarse one); each coarse column
        // reads its four fine children and writes its own f_c and u_c.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn residual_restrict_smooth(
        &self,
        fine: &CudaLevel,
        coarse: &CudaLevel,
        f_fine: &CudaField,
        u_fine: &CudaField,
        r_fine: &mut CudaField,
        f_coarse: &mut CudaField,
        u_coarse: &mut CudaField,
        rho: f64,
        scale: f64,
    ) -> Result<()> {
        let (fields, solve) = (
            (f_fine, u_fine, r_fine, f_coarse, u_coarse),
            FromZero::Scaled(rho),
        );
        self.residual_restrict_then(fine, coarse, fields, scale, solve)
    }

    fn residual_restrict_solve_color(
        &self,
        fine: &CudaLevel,
        coarse: &CudaLevel,
        f_fine: &CudaField,
        u_fine: &CudaField,
        r_fine: &mut CudaField,
        f_coarse: &mut CudaField,
        u_coarse: &mut CudaField,
        scale: f64,
        color: usize,
    ) -> Result<()> {
        let (fields, solve) = (
            (f_fine, u_fine, r_fine, f_coarse, u_coarse),
            FromZero::Color(color),
        );
        self.residual_restrict_then(fine, coarse, fields, scale, solve)
    }
}

/// The coarse line solve that ends the way down's fused step from zero
/// ([`CudaBackend::residual_restrict_then`]).
#[derive(Clone, Copy)]
enum FromZero {
    /// ρ M⁻¹ f_c on every column (`LineKernels::residual_restrict_smooth`).
    Scaled(f64),
    /// T⁻¹ f_c on the columns of one colour where the level runs the split half-sweeps, on
    /// every column elsewhere (`LineKernels::residual_restrict_solve_color`).
    Color(usize),
}

/// The fine f, u and work field, the coarse f and u of the way down's fused step.
type DownFields<'a> = (
    &'a CudaField,
    &'a CudaField,
    &'a mut CudaField,
    &'a mut CudaField,
    &'a mut CudaField,
);

impl CudaBackend {
    /// The fine residual restricted into `f_coarse` and the coarse step from zero `solve`
    /// into `u_coarse`: one kernel on PCR levels of few columns, the residual stored then
    /// RestrictSmooth where the fused kernels do not serve, else the fused residual-restriction
    /// then the coarse line solve.
    fn residual_restrict_then(
        &self,
        fine: &CudaLevel,
        coarse: &CudaLevel,
        (f_fine, u_fine, r_fine, f_coarse, u_coarse): DownFields<'_>,
        scale: f64,
        solve: FromZero,
    ) -> Result<()> {
        let rho = match solve {
            FromZero::Scaled(rho) => rho,
            FromZero::Color(color) => {
                coarse.stencil.check_colour(color)?;
                1.0
            }
        };
        // Fused where the coarse level solves its columns by the Thomas sweep and the fine
        // operator has no diagonal couplings, on fp64 levels and (unless `Tuning::fuse_f32` is
        // off) fp32 ones — into one kernel where the coarse level runs PCR, has at most
        // `Tuning::fused_pcr_columns` columns and both levels have the model problem's columns
        // without cross terms; otherwise (PCR levels with
        // per-cell entries; the sphere's nine-point operator) the residual is stored first.
        // Orography's slant couplings are fused.
        let f32_unfused = fine.stencil.storage == Storage::F32 && !self.tuning.fuse_f32;
        if let (Some(cfg), false) = (coarse.pcr, f32_unfused) {
            let columns = coarse.layout.nx as usize * coarse.layout.ny as usize;
            if fine.cells.is_none()
                && coarse.cells.is_none()
                && fine.cross.1 == 0
                && columns <= self.tuning.fused_pcr_columns
            {
                // The model problem's columns, no cross terms: one PCR kernel.
                self.check(fine, &[f_fine, u_fine])?;
                self.check(coarse, &[f_coarse, u_coarse])?;
                super::stencil::check_twice(fine, coarse, "residual_restrict_smooth")?;
                let mut b = self.builder(
                    self.launch_stream(),
                    coarse.k.get(K::ResidualRestrictSmoothPcr),
                );
                b.arg(&fine.layout).arg(&coarse.layout);
                b.arg(&fine.cols)
                    .arg(&fine.vert)
                    .arg(&coarse.cols)
                    .arg(&coarse.vert);
                b.arg(&f_fine.data)
                    .arg(&u_fine.data)
                    .arg(&mut f_coarse.data)
                    .arg(&mut u_coarse.data)
                    .arg(&rho)
                    .arg(&scale);
                // SAFETY: layouts checked (the fine block twice the coarse one); each coarse
                // cell's thread reads its four fine children and their neighbours (halo
                // included) and writes its own f_c and u_c.
                return cu(unsafe { b.launch(cfg) }).map(|_| ());
            }
        }
        if f32_unfused || coarse.pcr.is_some() || has_diagonals(fine) {
            self.residual_only(fine, f_fine, u_fine, r_fine)?;
            return self.restrict_smooth(fine, coarse, r_fine, f_coarse, u_coarse, rho, scale);
        }
        self.check(fine, &[f_fine, u_fine])?;
        self.check(coarse, &[f_coarse, u_coarse])?;
        super::stencil::check_twice(fine, coarse, "residual_restrict_smooth")?;
        let (nx, ny) = (coarse.layout.nx as usize, coarse.layout.ny as usize);
        // Without cross terms one thread per coarse column, marching its four fine children
        // (kernels/stencil.cu, residual_restrict_quad and _quad_cells). With orography's slant
        // couplings one thread per fine column, the two rows of a coarse row side by side in x
        // (RESTRICT_CHILD): 4 nx threads in x (blocks at least 8 wide).
        let slant = fine.cells.as_ref().is_some_and(|c| c.cross.1 != 0);
        let threads_x = if slant { 4 * nx } else { nx };
        let cfg = column_config(threads_x, ny, self.tuning.block_x).0;
        let sym = sym_flag(fine);
        let mut b = self.builder(
            self.launch_stream(),
            fine.k.get(op_kernel(
                fine,
                K::ResidualRestrict,
                K::ResidualRestrictCells,
            )),
        );
        b.arg(&fine.layout);
        push_operator(&mut b, fine, &sym);
        if fine.cells.is_some() {
            // Orography's slant couplings (CELL_CROSS_PARAMS of the per-cell kernel).
            push_cross(&mut b, fine);
        }
        b.arg(&f_fine.data)
            .arg(&u_fine.data)
            .arg(&coarse.layout)
            .arg(&mut f_coarse.data)
            .arg(&scale);
        // SAFETY: layouts checked (the fine block twice the coarse one); each thread reads its
        // fine columns and their neighbours (halo included), and each coarse column's f_c is
        // written by one thread (its own, or one of its four children's).
        cu(unsafe { b.launch(cfg) })?;
        match solve {
            // u_c <- rho M^-1 f_c.
            FromZero::Scaled(rho) => self.line_solve_scaled(coarse, f_coarse, u_coarse, rho),
            FromZero::Color(color) => self.line_solve_color(coarse, f_coarse, u_coarse, color),
        }
    }
}

/// The launch of the line kernels with two threads per column (`thomas_twin`,
/// kernels/common.cuh) over `xs` columns in x and `ny` rows: blocks of 64 × 2 (32 × 4 on rows of
/// at most 16 columns), a multiple of a warp wide as `TWIN_COLUMN` needs; `None` on PCR levels
/// (`pcr`) and where one thread per column makes [`crate::kernels::Tuning::twin_threads`]
/// threads or more.
pub(super) fn twin_config(
    tuning: &crate::kernels::Tuning,
    pcr: bool,
    xs: usize,
    ny: usize,
) -> Option<LaunchConfig> {
    if pcr || xs * ny >= tuning.twin_threads {
        return None;
    }
    let threads_x = 2 * xs as u32;
    let bx: u32 = if threads_x <= 32 { 32 } else { 64 };
    Some(LaunchConfig {
        grid_dim: (
            threads_x.div_ceil(bx),
            (ny as u32).div_ceil(BLOCK_THREADS / bx),
            1,
        ),
        block_dim: (bx, BLOCK_THREADS / bx, 1),
        shared_mem_bytes: 0,
    })
}

/// The launch of the line kernels with [`crate::kernels::split_segments`] threads per column
/// (`thomas_split`, kernels/common.cuh) over `xs` columns in x and `ys` rows of a build for `nz`
/// levels: blocks of 32 columns × the segments, one row each; `None` on PCR levels (`pcr`),
/// where nz has no segments, and on launches of more than
/// [`crate::kernels::Tuning::split_columns`] columns.
pub(super) fn split_config(
    tuning: &crate::kernels::Tuning,
    pcr: bool,
    nz: usize,
    xs: usize,
    ys: usize,
) -> Option<LaunchConfig> {
    let segments = crate::kernels::split_segments(nz, tuning.split_levels())?;
    if pcr || xs * ys > tuning.split_columns || xs == 0 || ys == 0 {
        return None;
    }
    Some(LaunchConfig {
        grid_dim: ((xs as u32).div_ceil(32), ys as u32, 1),
        block_dim: (32, segments, 1),
        shared_mem_bytes: 0,
    })
}

/// The half-sweep kernels' `parity` for `color` on level `op` (kernels/common.cuh, colour_row):
/// the block's local parities of the colour, and the rows of the colour that a launch covers.
fn colour_parity(op: &CudaLevel, color: usize) -> (i32, usize) {
    let b = &op.stencil.block;
    let ny = op.layout.ny as usize;
    if color < 2 {
        (((b.i0 + b.j0 + color) % 2) as i32, ny)
    } else {
        let q = color - 2;
        let (pi, pj) = (((q & 1) + b.i0) % 2, ((q >> 1) + b.j0) % 2);
        (2 + (pi + 2 * pj) as i32, (ny - pj.min(ny)).div_ceil(2))
    }
}

/// Whether level `op` has the sphere's diagonal couplings (`has_cross` 1, or 3 with orography's
/// slant ones; which the fused residual-restriction does not take; the slant ones alone it does).
fn has_diagonals(op: &CudaLevel) -> bool {
    match &op.cells {
        None => op.cross.1 != 0,
        Some(c) => c.cross.1 & 1 == 1,
    }
}

impl CudaBackend {
    /// The launch of red-black's step from zero in its colour-only forms
    /// (`line_solve_color_split`, `smooth_color_after_split`) for `color` on level `op`: where
    /// the level runs the split half-sweeps and has no cross terms; `None` elsewhere, and both
    /// half-sweeps then take the trait's default forms (the line solve on every column, then
    /// `smooth_color` from its values). The two calls of a step decide alike: the same level and
    /// tuning, both colours red or black.
    fn colour_split(&self, op: &CudaLevel, color: usize) -> Option<LaunchConfig> {
        if color > 1 || op.stencil.has_cross() {
            return None;
        }
        let xs = (op.layout.nx as usize).div_ceil(2);
        split_config(
            &self.tuning,
            op.pcr.is_some(),
            op.layout.nz as usize,
            xs,
            op.layout.ny as usize,
        )
    }

    /// The kernel (`model`'s or `cells`' form, as level `op` has per-cell entries or not) and
    /// the launch of a line kernel over `xs` columns in x per row: its form with several
    /// threads per column ([`crate::kernels::Kernel::split`]) where [`split_config`] selects
    /// it, else with two ([`crate::kernels::Kernel::twin`]) where [`twin_config`] does, else
    /// one thread per column in `whole`.
    fn line_launch(
        &self,
        op: &CudaLevel,
        model: K,
        cells: K,
        xs: usize,
        whole: LaunchConfig,
    ) -> (K, LaunchConfig) {
        self.line_launch_rows(op, model, cells, (xs, op.layout.ny as usize), whole)
    }

    /// [`Self::line_launch`] over `ys` rows.
    fn line_launch_rows(
        &self,
        op: &CudaLevel,
        model: K,
        cells: K,
        (xs, ys): (usize, usize),
        whole: LaunchConfig,
    ) -> (K, LaunchConfig) {
        let k = op_kernel(op, model, cells);
        let split = split_config(
            &self.tuning,
            op.pcr.is_some(),
            op.layout.nz as usize,
            xs,
            ys,
        );
        if let (Some(s), Some(cfg)) = (k.split(), split) {
            return (s, cfg);
        }
        let twin = twin_config(&self.tuning, op.pcr.is_some(), xs, ys);
        match (k.twin(), twin) {
            (Some(t), Some(cfg)) => (t, cfg),
            _ => (k, whole),
        }
    }

    /// z ← w M⁻¹ r on level `op` (fields checked by the caller), one or two threads per column.
    fn line_solve_scaled(
        &self,
        op: &CudaLevel,
        r: &CudaField,
        z: &mut CudaField,
        w: f64,
    ) -> Result<()> {
        if let Some(cfg) = op.pcr {
            return launch_op!(self, op, K::LineSolvePcr, K::LineSolvePcrCells, in cfg; &r.data, &mut z.data, &w);
        }
        let (k, cfg) = self.line_launch(
            op,
            K::LineSolve,
            K::LineSolveCells,
            op.layout.nx as usize,
            op.line_cfg,
        );
        launch_op!(self, op, k, k, in cfg; &r.data, &mut z.data, &w)
    }

    /// Launches the CG Tridiag with α as a [`Coef`] (a slot of `sc`), its block partials into
    /// `red`; returns how many blocks wrote partials (more with two threads per column).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cg_tridiag_launch(
        &self,
        op: &CudaLevel,
        q: &CudaField,
        r: &mut CudaField,
        z: &mut CudaField,
        alpha: Coef,
        sc: &CudaSlice<f64>,
        red: &mut Reduce,
    ) -> Result<usize> {
        self.check(op, &[q, r, z])?;
        let (a, ia) = (alpha.value, alpha.slot_index());
        let (k, cfg) = self.line_launch(
            op,
            K::CgTridiag,
            K::CgTridiagCells,
            op.layout.nx as usize,
            op.line_cfg,
        );
        launch_op!(self, op, k, k, in cfg; &q.data, &mut r.data, &mut z.data, &a, sc, &ia, &mut red.partials)?;
        Ok((cfg.grid_dim.0 * cfg.grid_dim.1) as usize)
    }
}
