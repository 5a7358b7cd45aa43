//! The operator kernels (kernels/stencil.cu): A x, the residual, the fused CG SpMV, the prolongation.

use super::*;
use strata::backend::{Coef, StencilKernels};

impl CudaBackend {
    /// Launches residual kernel `model` (or `cells`, for per-cell coefficients) of `op` on f, u
    /// and r; with `read`, waits for its block partials and returns the local ‖f − A u‖².
    fn residual_launch(
        &self,
        op: &CudaLevel,
        (model, cells): (K, K),
        f: &CudaField,
        u: &CudaField,
        r: &mut CudaField,
        read: bool,
    ) -> Result<Option<f64>> {
        self.check(op, &[f, u, r])?;
        let mut red = self.reduce_lock();
        launch_op!(self, op, model, cells, cross in op.seg.0; &f.data, &u.data, &mut r.data, &mut red.partials)?;
        if !read {
            return Ok(None);
        }
        Ok(Some(self.finish_reduce_of(op, op.seg.1, &mut red, 1)?[0]))
    }
}

impl StencilKernels for CudaBackend {
    fn apply(&self, op: &CudaLevel, x: &CudaField, y: &mut CudaField) -> Result<()> {
        self.check(op, &[x, y])?;
        launch_op!(self, op, K::Apply, K::ApplyCells, cross; &x.data, &mut y.data)
    }

    fn residual(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &CudaField,
        r: &mut CudaField,
    ) -> Result<f64> {
        self.residual_launch(op, (K::Residual, K::ResidualCells), f, u, r, true)
            .map(|s| s.unwrap_or_default())
    }

    fn residual_only(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &CudaField,
        r: &mut CudaField,
    ) -> Result<()> {
        // The same kernel; its block partials are left unread (no wait for the host).
        self.residual_launch(op, (K::Residual, K::ResidualCells), f, u, r, false)
            .map(|_| ())
    }

    fn residual_norm(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &CudaField,
        work: &mut CudaField,
    ) -> Result<f64> {
        // The residual kernel without its store (`work` is passed, not written).
        self.residual_launch(
            op,
            (K::ResidualNorm, K::ResidualNormCells),
            f,
            u,
            work,
            true,
        )
        .map(|s| s.unwrap_or_default())
    }

    fn residual_to(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &CudaField,
        to: &CudaLevel,
        r: &mut CudaField,
    ) -> Result<f64> {
        if !self.check_f32_beside(op, &[f, u], to, r)? {
            return self.residual(op, f, u, r);
        }
        let mut red = self.reduce_lock();
        self.residual_to_launch(op, f, u, r, &mut red)?;
        Ok(self.finish_reduce_of(op, op.seg.1, &mut red, 1)?[0])
    }

    fn cg_spmv(
        &self,
        op: &CudaLevel,
        z: &CudaField,
        u: &mut CudaField,
        p: &mut CudaField,
        q: &mut CudaField,
        alpha: f64,
        beta: f64,
    ) -> Result<f64> {
        let mut red = self.reduce_lock();
        let (a, b) = (Coef::value(alpha), Coef::value(beta));
        let blocks = self.cg_spmv_launch(op, z, u, p, q, (a, b), &self.no_slots, &mut red)?;
        Ok(self.finish_reduce_of(op, blocks, &mut red, 1)?[0])
    }

    fn prolongate(
        &self,
        coarse: &CudaLevel,
        fine: &CudaLevel,
        u_coarse: &CudaField,
        u_fine: &mut CudaField,
    ) -> Result<()> {
        self.check(coarse, &[u_coarse])?;
        self.check(fine, &[u_fine])?;
        check_twice(fine, coarse, "prolongate")?;
        let mut b = self.builder(self.launch_stream(), fine.k.get(K::Prolongate));
        b.arg(&coarse.layout)
            .arg(&fine.layout)
            .arg(&coarse.phys)
            .arg(&u_coarse.data)
            .arg(&mut u_fine.data);
        // SAFETY: layouts checked; each fine thread reads coarse columns in [−1, n_c] (halo
        // included) and writes its own fine column.
        cu(unsafe { b.launch(fine.seg.0) }).map(|_| ())
    }

    fn prolongate_faces(
        &self,
        coarse: &CudaLevel,
        fine: &CudaLevel,
        u_coarse: &CudaField,
        u_fine: &mut CudaField,
        sides: [bool; 4],
    ) -> Result<()> {
        self.check(coarse, &[u_coarse])?;
        self.check(fine, &[u_fine])?;
        check_twice(fine, coarse, "prolongate_faces")?;
        let (nx, ny) = (fine.layout.nx as u32, fine.layout.ny as u32);
        let mut mask = 0i32;
        let mut count = 0u32;
        for (s, &on) in sides.iter().enumerate() {
            if on {
                mask |= 1 << s;
                count += if s < 2 { ny } else { nx };
            }
        }
        if count == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (count.div_ceil(128), fine.layout.nz as u32, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.launch_stream(), fine.k.get(K::ProlongateFaces));
        b.arg(&coarse.layout)
            .arg(&fine.layout)
            .arg(&coarse.phys)
            .arg(&mask)
            .arg(&u_coarse.data)
            .arg(&mut u_fine.data);
        // SAFETY: layouts checked; each thread writes one halo cell of u_fine (a face cell of a
        // side asked for, at the level k of the grid's y) and reads coarse columns in [−1, n_c]
        // (halo included); threads of y ≥ nz return.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }
}

/// Refuses a `fine` level that is not twice `coarse` in x and y.
pub(super) fn check_twice(fine: &CudaLevel, coarse: &CudaLevel, what: &str) -> Result<()> {
    let (f, c) = (&fine.layout, &coarse.layout);
    if (f.nx, f.ny) != (2 * c.nx, 2 * c.ny) {
        return Err(backend_err(format!(
            "{what}: the fine block is {} x {}, not twice the coarse {} x {}",
            f.nx, f.ny, c.nx, c.ny
        )));
    }
    Ok(())
}

impl CudaBackend {
    /// Launches the residual of the fp64 level `op` into the fp32 field `r` (checked by the
    /// caller to be beside it), its `op.seg.1` block partials of ‖f − A u‖² into `red`.
    pub(super) fn residual_to_launch(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &CudaField,
        r: &mut CudaField,
        red: &mut Reduce,
    ) -> Result<()> {
        launch_op!(self, op, K::ResidualToF32, K::ResidualToF32Cells, cross in op.seg.0; &f.data, &u.data, &mut r.data, &mut red.partials)
    }

    /// Launches the CG SpMV with α and β as [`Coef`]s (slots of `sc`), its block partials into
    /// `red`; returns how many blocks wrote partials. Its columns are cut into the level's
    /// grid-z segments where there are 8 or more (levels of at most 128² columns at nz = 128):
    /// measured on one H200 (2026-11-27, docs/results/2026-11-27-small-kernels.txt), segments
    /// took cg 0.110 → 0.096 ms per iteration at 64² and 0.190 → 0.177 at 128², but 0.288 →
    /// 0.314 at 256² (4 segments), which keeps whole columns.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cg_spmv_launch(
        &self,
        op: &CudaLevel,
        z: &CudaField,
        u: &mut CudaField,
        p: &mut CudaField,
        q: &mut CudaField,
        (alpha, beta): (Coef, Coef),
        sc: &CudaSlice<f64>,
        red: &mut Reduce,
    ) -> Result<usize> {
        self.check(op, &[z, u, p, q])?;
        let (cfg, blocks) = if op.seg.0.grid_dim.2 >= 8 {
            op.seg
        } else {
            (op.cfg, op.blocks)
        };
        let (a, ia, b, ib) = (
            alpha.value,
            alpha.slot_index(),
            beta.value,
            beta.slot_index(),
        );
        launch_op!(self, op, K::CgSpmv, K::CgSpmvCells, cross in cfg; &z.data, &mut u.data, &mut p.data, &mut q.data, &a, &b, sc, &ia, &ib, &mut red.partials)?;
        Ok(blocks)
    }
}
