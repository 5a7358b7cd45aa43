//! Vector operations (fill, copy, axpy, xpby, dot) over rows of columns.

use super::*;
use crate::backend::VectorKernels;

impl CpuBackend {
    fn fill_t<S: Real>(&self, x: &mut HostField<S>, v: f64) {
        let nz = x.nz;
        let v = S::from_f64(v);
        self.pool
            .install(|| rows(x).for_each(|r| inner_mut(r, nz).fill(v)));
    }

    fn dot_t<S: Real>(&self, s: &LevelStencil, x: &HostField<S>, y: &HostField<S>) -> f64 {
        let nz = s.nz;
        let [d, _] = self.reduce_rows(s.ny(), |parts| {
            parts
                .par_iter_mut()
                .zip(rows_ref(x).zip(rows_ref(y)))
                .for_each(|(part, (xr, yr))| {
                    let sum = inner(xr, nz)
                        .iter()
                        .zip(inner(yr, nz))
                        .fold(0.0, |a, (x, y)| a + x.to_f64() * y.to_f64());
                    *part = [sum, 0.0];
                })
        });
        d
    }
}

impl CpuBackend {
    fn axpy_norm_t<S: Real>(
        &self,
        s: &LevelStencil,
        a: f64,
        x: &HostField<S>,
        y: &mut HostField<S>,
    ) -> f64 {
        let nz = s.nz;
        let [d, _] = self.reduce_rows(s.ny(), |parts| {
            parts
                .par_iter_mut()
                .zip(rows(y).zip(rows_ref(x)))
                .for_each(|(part, (yr, xr))| {
                    let mut sum = 0.0;
                    for (yv, xv) in inner_mut(yr, nz).iter_mut().zip(inner(xr, nz)) {
                        *yv = S::from_f64(yv.to_f64() + a * xv.to_f64());
                        let v = yv.to_f64();
                        sum += v * v;
                    }
                    *part = [sum, 0.0];
                })
        });
        d
    }

    fn dot_pair_t<S: Real>(
        &self,
        s: &LevelStencil,
        x: &HostField<S>,
        y: &HostField<S>,
        w: &HostField<S>,
    ) -> [f64; 2] {
        let nz = s.nz;
        self.reduce_rows(s.ny(), |parts| {
            parts
                .par_iter_mut()
                .zip(rows_ref(x).zip(rows_ref(y).zip(rows_ref(w))))
                .for_each(|(part, (xr, (yr, wr)))| {
                    let mut sum = [0.0; 2];
                    for ((xv, yv), wv) in inner(xr, nz).iter().zip(inner(yr, nz)).zip(inner(wr, nz))
                    {
                        let y = yv.to_f64();
                        sum[0] += xv.to_f64() * y;
                        sum[1] += y * wv.to_f64();
                    }
                    *part = sum;
                })
        })
    }
}

impl VectorKernels for CpuBackend {
    fn axpy_norm(&self, s: &LevelStencil, a: f64, x: &CpuField, y: &mut CpuField) -> Result<f64> {
        Ok(by_precision!(s, S => self.axpy_norm_t(s, a, get::<S>(x)?, get_mut::<S>(y)?)))
    }

    fn dot_pair(
        &self,
        s: &LevelStencil,
        x: &CpuField,
        y: &CpuField,
        w: &CpuField,
    ) -> Result<[f64; 2]> {
        Ok(by_precision!(s, S => self.dot_pair_t(s, get::<S>(x)?, get::<S>(y)?, get::<S>(w)?)))
    }

    fn fill(&self, s: &LevelStencil, x: &mut CpuField, v: f64) -> Result<()> {
        by_precision!(s, S => self.fill_t(get_mut::<S>(x)?, v));
        Ok(())
    }

    fn copy(&self, s: &LevelStencil, x: &CpuField, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.map2(get::<S>(x)?, get_mut::<S>(y)?, |x, _| x));
        Ok(())
    }

    fn axpy(&self, s: &LevelStencil, a: f64, x: &CpuField, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.map2(get::<S>(x)?, get_mut::<S>(y)?, |x, y| y + a * x));
        Ok(())
    }

    fn xpby(&self, s: &LevelStencil, x: &CpuField, b: f64, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.map2(get::<S>(x)?, get_mut::<S>(y)?, |x, y| x + b * y));
        Ok(())
    }

    fn axpy_from(
        &self,
        s: &LevelStencil,
        a: f64,
        from: &LevelStencil,
        x: &CpuField,
        y: &mut CpuField,
    ) -> Result<()> {
        crate::backend::check_convert(from, s)?;
        by_precision!(from, X => by_precision!(s, Y => self.map2(
            get::<X>(x)?,
            get_mut::<Y>(y)?,
            |x, y| y + a * x
        )));
        Ok(())
    }

    fn dot(&self, s: &LevelStencil, x: &CpuField, y: &CpuField) -> Result<f64> {
        Ok(by_precision!(s, S => self.dot_t(s, get::<S>(x)?, get::<S>(y)?)))
    }
}
