//! The kernels built on the line solve (kernels/lines.cu): M⁻¹, the fused CG Tridiag, Smooth, RestrictSmooth.

use super::*;
use strata::backend::LineKernels;

impl LineKernels for CudaBackend {
    fn line_solve(&self, op: &CudaLevel, r: &CudaField, z: &mut CudaField) -> Result<()> {
        self.check(op, &[r, z]);
        launch_columns!(self, op, K::LineSolve; &op.cols, &op.vert, &r.data, &mut z.data)
    }

    fn cg_tridiag(
        &self,
        op: &CudaLevel,
        q: &CudaField,
        r: &mut CudaField,
        z: &mut CudaField,
        alpha: f64,
    ) -> Result<[f64; 2]> {
        self.check(op, &[q, r, z]);
        let mut red = self.reduce_lock();
        launch_columns!(self, op, K::CgTridiag; &op.cols, &op.vert, &q.data, &mut r.data, &mut z.data, &alpha, &mut red.partials)?;
        self.finish_reduce(op, &mut red, 2)
    }

    fn smooth(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u_in: &CudaField,
        u_out: &mut CudaField,
        rho: f64,
    ) -> Result<()> {
        self.check(op, &[f, u_in, u_out]);
        launch_columns!(self, op, K::Smooth; &op.cols, &op.vert, &f.data, &u_in.data, &mut u_out.data, &rho)
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
        self.check(fine, &[r_fine]);
        self.check(coarse, &[f_coarse, u_coarse]);
        assert_eq!(
            (fine.layout.nx, fine.layout.ny),
            (2 * coarse.layout.nx, 2 * coarse.layout.ny)
        );
        let mut b = self.stream.launch_builder(coarse.k.get(K::RestrictSmooth));
        b.arg(&fine.layout)
            .arg(&coarse.layout)
            .arg(&coarse.cols)
            .arg(&coarse.vert)
            .arg(&r_fine.data)
            .arg(&mut f_coarse.data)
            .arg(&mut u_coarse.data)
            .arg(&rho)
            .arg(&scale);
        // SAFETY: layouts checked; each coarse thread reads its 4 fine children (inside the fine
        // block, checked to be exactly twice the coarse one) and writes its own coarse column.
        cu(unsafe { b.launch(coarse.cfg) }).map(|_| ())
    }
}
