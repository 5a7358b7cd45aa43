//! Vector operations (kernels/vector.cu): fill, copy, axpy, xpby, dot.

use super::*;
use strata::backend::VectorKernels;

impl VectorKernels for CudaBackend {
    fn fill(&self, op: &CudaLevel, x: &mut CudaField, v: f64) -> Result<()> {
        self.check(op, &[x])?;
        launch_columns!(self, op, K::Fill; &mut x.data, &v)
    }

    fn copy(&self, op: &CudaLevel, x: &CudaField, y: &mut CudaField) -> Result<()> {
        self.check(op, &[x, y])?;
        launch_columns!(self, op, K::Copy; &x.data, &mut y.data)
    }

    fn axpy(&self, op: &CudaLevel, a: f64, x: &CudaField, y: &mut CudaField) -> Result<()> {
        self.check(op, &[x, y])?;
        launch_columns!(self, op, K::Axpy; &a, &x.data, &mut y.data)
    }

    fn xpby(&self, op: &CudaLevel, x: &CudaField, beta: f64, y: &mut CudaField) -> Result<()> {
        self.check(op, &[x, y])?;
        launch_columns!(self, op, K::Xpby; &x.data, &beta, &mut y.data)
    }

    fn dot(&self, op: &CudaLevel, x: &CudaField, y: &CudaField) -> Result<f64> {
        self.check(op, &[x, y])?;
        let mut r = self.reduce_lock();
        launch_columns!(self, op, K::Dot; &x.data, &y.data, &mut r.partials)?;
        Ok(self.finish_reduce(op, &mut r, 1)?[0])
    }

    fn axpy_norm(&self, op: &CudaLevel, a: f64, x: &CudaField, y: &mut CudaField) -> Result<f64> {
        self.check(op, &[x, y])?;
        let mut r = self.reduce_lock();
        launch_columns!(self, op, K::AxpyNorm; &a, &x.data, &mut y.data, &mut r.partials)?;
        Ok(self.finish_reduce(op, &mut r, 1)?[0])
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
        launch_columns!(self, op, K::DotPair; &x.data, &y.data, &w.data, &mut r.partials)?;
        self.finish_reduce(op, &mut r, 2)
    }
}
