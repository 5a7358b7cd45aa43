//! The solver's scalars in device memory ([`ScalarKernels`]): reductions end in a slot instead
//! of the host, coefficients are read from slots by the kernels (`coef` in kernels/common.cuh),
//! and the scalar arithmetic runs in one thread on the device (`scalar_ops_f64`,
//! kernels/vector.cu). Nothing here waits for the device but [`ScalarKernels::read_scalars`].

use super::*;
use strata::backend::{
    check_scalar_ops, Coef, DeviceTest, Recording, ScalarKernels, ScalarOp, MAX_SCALAR_OPS,
};

/// `ScalarOp` of kernels/vector.cu, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct OpDesc {
    dst: i32,
    num: i32,
    by: i32,
    den: i32,
    guard: i32,
    pad: i32,
    sign: f64,
}

/// `ScalarOps` of kernels/vector.cu, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct OpsDesc {
    n: i32,
    pad: i32,
    op: [OpDesc; MAX_SCALAR_OPS],
}

// SAFETY: plain #[repr(C)] data laid out as the C structs `ScalarOp` (six i32, then a double at
// offset 24: 32 bytes) and `ScalarOps` (two i32, then the ops at offset 8) of kernels/vector.cu;
// the kernel reads the slot indices only after they were checked against the slots' length.
unsafe impl cudarc::driver::DeviceRepr for OpsDesc {}

/// [`strata::backend::check_slots`] on `s`.
fn check_slots(s: &CudaSlice<f64>, coefs: &[Coef], out: Option<(usize, usize)>) -> Result<()> {
    strata::backend::check_slots(s.len(), coefs, out)
}

impl CudaBackend {
    /// Finishes a reduction of `ncomp` components over `blocks` block partials into slots
    /// `out ..` of `s` (no wait; the slots were checked by the caller).
    fn reduce_into(
        &self,
        op: &CudaLevel,
        blocks: usize,
        red: &Reduce,
        ncomp: usize,
        s: &mut CudaSlice<f64>,
        out: usize,
    ) -> Result<()> {
        self.launch_reduce(
            op,
            blocks,
            &red.partials,
            ncomp,
            &mut s.slice_mut(out..out + ncomp),
        )
    }
}

impl ScalarKernels for CudaBackend {
    type Scalars = CudaSlice<f64>;

    fn alloc_scalars(&self, n: usize) -> Result<CudaSlice<f64>> {
        cu(self.stream.alloc_zeros::<f64>(n.max(1)))
    }

    fn read_scalars(&self, s: &CudaSlice<f64>, out: &mut [f64]) -> Result<()> {
        check_slots(s, &[], Some((0, out.len())))?;
        cu(self.base().memcpy_dtoh(&s.slice(..out.len()), out))
    }

    fn write_scalars(&self, s: &mut CudaSlice<f64>, at: usize, v: &[f64]) -> Result<()> {
        check_slots(s, &[], Some((at, v.len())))?;
        cu(self
            .base()
            .memcpy_htod(v, &mut s.slice_mut(at..at + v.len())))
    }

    fn scalars_len(&self, s: &CudaSlice<f64>) -> usize {
        s.len()
    }

    fn scalars_address(&self, s: &CudaSlice<f64>) -> u64 {
        use cudarc::driver::DevicePtr;
        s.device_ptr(&self.stream).0
    }

    fn device_iterations(&self) -> bool {
        self.tuning.graphs && self.tuning.loops
    }

    fn iterate_on_device(
        &self,
        rec: &mut Recording,
        key: &[u64],
        scalars: u64,
        test: &DeviceTest,
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Vec<[f64; 2]>>> {
        self.device_loop(rec, key, scalars, test, body)
    }

    fn residual_to_slots(
        &self,
        op: &CudaLevel,
        f: &CudaField,
        u: &CudaField,
        to: &CudaLevel,
        r: &mut CudaField,
        s: &mut CudaSlice<f64>,
        out: usize,
    ) -> Result<()> {
        check_slots(s, &[], Some((out, 1)))?;
        if !self.check_f32_beside(op, &[f, u], to, r)? {
            let rr = strata::backend::StencilKernels::residual(self, op, f, u, r)?;
            return self.write_scalars(s, out, &[rr]);
        }
        let mut red = self.reduce_lock();
        self.residual_to_launch(op, f, u, r, &mut red)?;
        self.reduce_into(op, op.seg.1, &red, 1, s, out)
    }

    fn scalar_ops(&self, s: &mut CudaSlice<f64>, ops: &[ScalarOp]) -> Result<()> {
        check_scalar_ops(ops, s.len())?;
        let mut desc = OpsDesc {
            n: ops.len() as i32,
            ..Default::default()
        };
        let slot = |i: Option<usize>| i.map_or(-1, |i| i as i32);
        for (d, o) in desc.op.iter_mut().zip(ops) {
            *d = OpDesc {
                dst: o.dst as i32,
                num: o.num as i32,
                by: slot(o.by),
                den: slot(o.den),
                guard: i32::from(o.guard),
                pad: 0,
                sign: o.sign,
            };
        }
        // Any level's module holds the kernel: the smallest nz loaded is as good as another.
        let k = self.any_kernels()?;
        // One thread: the operations are few and in order.
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), k.get(K::ScalarOps));
        b.arg(s).arg(&desc);
        // SAFETY: every slot index was checked against the slots' length above.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn cg_spmv_slots(
        &self,
        op: &CudaLevel,
        z: &CudaField,
        u: &mut CudaField,
        p: &mut CudaField,
        q: &mut CudaField,
        s: &mut CudaSlice<f64>,
        (alpha, beta): (Coef, Coef),
        out: usize,
    ) -> Result<()> {
        check_slots(s, &[alpha, beta], Some((out, 1)))?;
        let mut red = self.reduce_lock();
        let blocks = self.cg_spmv_launch(op, z, u, p, q, (alpha, beta), s, &mut red)?;
        self.reduce_into(op, blocks, &red, 1, s, out)
    }

    fn cg_tridiag_slots(
        &self,
        op: &CudaLevel,
        q: &CudaField,
        r: &mut CudaField,
        z: &mut CudaField,
        s: &mut CudaSlice<f64>,
        alpha: Coef,
        out: usize,
    ) -> Result<()> {
        check_slots(s, &[alpha], Some((out, 2)))?;
        let mut red = self.reduce_lock();
        let blocks = self.cg_tridiag_launch(op, q, r, z, alpha, s, &mut red)?;
        self.reduce_into(op, blocks, &red, 2, s, out)
    }

    fn axpy_norm_slots(
        &self,
        op: &CudaLevel,
        a: Coef,
        x: &CudaField,
        y: &mut CudaField,
        s: &mut CudaSlice<f64>,
        out: usize,
    ) -> Result<()> {
        check_slots(s, &[a], Some((out, 1)))?;
        let mut red = self.reduce_lock();
        self.axpy_norm_launch(op, a, x, y, s, &mut red)?;
        self.reduce_into(op, op.seg.1, &red, 1, s, out)
    }

    fn axpy_slots(
        &self,
        op: &CudaLevel,
        a: Coef,
        x: &CudaField,
        y: &mut CudaField,
        s: &CudaSlice<f64>,
    ) -> Result<()> {
        check_slots(s, &[a], None)?;
        self.axpy_launch(op, a, x, y, s)
    }

    fn dot_slots(
        &self,
        op: &CudaLevel,
        x: &CudaField,
        y: &CudaField,
        s: &mut CudaSlice<f64>,
        out: usize,
    ) -> Result<()> {
        check_slots(s, &[], Some((out, 1)))?;
        self.check(op, &[x, y])?;
        let mut red = self.reduce_lock();
        launch_columns!(self, op, K::Dot, segments; &x.data, &y.data, &mut red.partials)?;
        self.reduce_into(op, op.seg.1, &red, 1, s, out)
    }

    fn dot_pair_slots(
        &self,
        op: &CudaLevel,
        x: &CudaField,
        y: &CudaField,
        w: &CudaField,
        s: &mut CudaSlice<f64>,
        out: usize,
    ) -> Result<()> {
        check_slots(s, &[], Some((out, 2)))?;
        self.check(op, &[x, y, w])?;
        let mut red = self.reduce_lock();
        launch_columns!(self, op, K::DotPair, segments; &x.data, &y.data, &w.data, &mut red.partials)?;
        self.reduce_into(op, op.seg.1, &red, 2, s, out)
    }
}
