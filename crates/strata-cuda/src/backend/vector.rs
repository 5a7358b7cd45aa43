//! Vector operations (kernels/vector.cu): fill, copy, axpy, xpby, dot.

use super::*;
use strata::backend::{Coef, VectorKernels};

impl VectorKernels for CudaBackend {
    fn fill(&self, op: &CudaLevel, x: &mut CudaField, v: f64) -> Result<()> {
        self.check(op, &[x])?;
        launch_columns!(self, op, K::Fill, segments; &mut x.data, &v)
    }

    fn copy(&self, op: &CudaLevel, x: &CudaField, y: &mut CudaField) -> Result<()> {
        self.check(op, &[x, y])?;
        launch_columns!(self, op, K::Copy, segments; &x.data, &mut y.data)
    }

    fn axpy(&self, op: &CudaLevel, a: f64, x: &CudaField, y: &mut CudaField) -> Result<()> {
        self.axpy_launch(op, Coef::value(a), x, y, &self.no_slots)
    }

    fn xpby(&self, op: &CudaLevel, x: &CudaField, beta: f64, y: &mut CudaField) -> Result<()> {
        self.check(op, &[x, y])?;
        launch_columns!(self, op, K::Xpby, segments; &x.data, &beta, &mut y.data)
    }

    fn axpy_from(
        &self,
        op: &CudaLevel,
        a: f64,
        from: &CudaLevel,
        x: &CudaField,
        y: &mut CudaField,
    ) -> Result<()> {
        if !self.check_f32_beside(op, &[y], from, x)? {
            return self.axpy(op, a, x, y);
        }
        launch_columns!(self, op, K::AxpyFromF32, segments; &a, &x.data, &mut y.data)
    }

    fn dot(&self, op: &CudaLevel, x: &CudaField, y: &CudaField) -> Result<f64> {
        self.check(op, &[x, y])?;
        let mut r = self.reduce_lock();
        launch_columns!(self, op, K::Dot, segments; &x.data, &y.data, &mut r.partials)?;
        Ok(self.finish_reduce_of(op, op.seg.1, &mut r, 1)?[0])
    }

    fn axpy_norm(&self, op: &CudaLevel, a: f64, x: &CudaField, y: &mut CudaField) -> Result<f64> {
        let mut r = self.reduce_lock();
        self.axpy_norm_launch(op, Coef::value(a), x, y, &self.no_slots, &mut r)?;
        Ok(self.finish_reduce_of(op, op.seg.1, &mut r, 1)?[0])
    }

    fn dot_pair(
        &self,
        op: &CudaLevel,
        x: &CudaField,
        y: &CudaField,
        w: &CudaField,
    ) -> Result<[f64; 2]> {
        self.check(op, &[x, y, w])?;
        let mut r = self.reduce_lock();
        launch_columns!(self, op, K::DotPair, segments; &x.data, &y.data, &w.data, &mut r.partials)?;
        self.finish_reduce_of(op, op.seg.1, &mut r, 2)
    }
}

impl CudaBackend {
    /// Launches y ← y + a x with `a` a [`Coef`] (a slot of `sc`).
    pub(super) fn axpy_launch(
        &self,
        op: &CudaLevel,
        a: Coef,
        x: &CudaField,
        y: &mut CudaField,
        sc: &CudaSlice<f64>,
    ) -> Result<()> {
        self.check(op, &[x, y])?;
        let (a, ia) = (a.value, a.slot_index());
        launch_columns!(self, op, K::Axpy, segments; &a, sc, &ia, &x.data, &mut y.data)
    }

    /// Launches y ← y + a x with the block partials of ‖y‖² into `red` (`op.seg.1` of them:
    /// the launch is segmented), `a` a [`Coef`].
    pub(super) fn axpy_norm_launch(
        &self,
        op: &CudaLevel,
        a: Coef,
        x: &CudaField,
        y: &mut CudaField,
        sc: &CudaSlice<f64>,
        red: &mut Reduce,
    ) -> Result<()> {
        self.check(op, &[x, y])?;
        let (a, ia) = (a.value, a.slot_index());
        launch_columns!(self, op, K::AxpyNorm, segments; &a, sc, &ia, &x.data, &mut y.data, &mut red.partials)
    }
}
