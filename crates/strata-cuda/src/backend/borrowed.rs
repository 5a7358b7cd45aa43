//! The caller's arrays in device memory (a model's fields already on the GPU, CuPy or PyTorch
//! arrays, Fortran device arrays): read into and written from the solver's fields on the device,
//! with no host round trip (kernels/transfer.cu).
//!
//! Any order of the three indices is accepted, with any (positive) strides. Two orders take the
//! fast path: k-fastest (`v[(j * nx + i) * nz + k]`, strata's host order, C `v[y][x][z]`,
//! Fortran `v(k, i, j)`) through the tiled transpose, and x-fastest (`v[(k * ny + j) * nx + i]`,
//! C `v[z][y][x]`, Fortran `v(i, j, k)`) by rows; both move each value once at full bandwidth.
//! Every other order is gathered element by element on the device (correct, slower).

use super::*;
use cudarc::driver::sys;

/// Memory orders of a block's array, named by the fastest index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// `v[(j * nx + i) * nz + k]`: a column's levels adjacent (strata's host order).
    KFastest,
    /// `v[(k * ny + j) * nx + i]`: rows of x adjacent (Fortran `v(i, j, k)`).
    XFastest,
}

/// A caller's array of one block in device memory, borrowed for one call: its address and the
/// strides of i, j and k, in values (f64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceArray {
    ptr: u64,
    strides: [i64; 3],
    /// On the sphere, the distance in values from one panel's (0, 0, 0) to the next's; 0 when
    /// not given.
    panel: i64,
}

impl DeviceArray {
    /// An array at device address `ptr` with the given strides (in values) of i, j, k.
    ///
    /// # Safety
    /// `ptr` must be a device address of the backend's context (the primary context of its
    /// device, which CuPy and PyTorch use) holding f64 values at every offset the strides reach
    /// for the block, and nothing else may use the memory while a call reads or writes it
    /// (the backend's stream is the legacy default stream, ordered with other blocking streams).
    pub unsafe fn new(ptr: u64, strides: [i64; 3]) -> Self {
        Self {
            ptr,
            strides,
            panel: 0,
        }
    }

    /// An array at `ptr` of an `nx × ny × nz` block in `order`.
    ///
    /// # Safety
    /// As [`DeviceArray::new`].
    pub unsafe fn with_order(ptr: u64, order: Order, nx: usize, ny: usize, nz: usize) -> Self {
        let (nx, ny, nz) = (nx as i64, ny as i64, nz as i64);
        let strides = match order {
            Order::KFastest => [nz, nx * nz, 1],
            Order::XFastest => [1, nx, nx * ny],
        };
        // A field of the sphere in either order is its panels one after the other.
        Self {
            ptr,
            strides,
            panel: nx * ny * nz,
        }
    }

    /// The same array with panels of the sphere `panel` values apart (the array of panel 0 is
    /// `self`): a field of the whole sphere, `[panel]` slowest.
    pub fn with_panel_stride(self, panel: i64) -> Self {
        Self { panel, ..self }
    }

    /// The part of a sphere's array that holds tile `b` (a block of one panel): the same
    /// strides from the tile's first cell. Needs the panel stride.
    pub fn tile(&self, b: &strata::grid::Block) -> Result<Self> {
        let panel = b.panel.unwrap_or(0) as i64;
        if panel > 0 && self.panel <= 0 {
            return Err(strata::StrataError::invalid(
                "array",
                "of the sphere needs the distance between panels (an order, or a panel stride)",
            ));
        }
        let [si, sj, _] = self.strides;
        let offset = panel * self.panel + b.i0 as i64 * si + b.j0 as i64 * sj;
        Ok(Self {
            ptr: self.ptr + 8 * offset as u64,
            ..*self
        })
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Strides of i, j, k in values.
    pub fn strides(&self) -> [i64; 3] {
        self.strides
    }
}

impl CudaBackend {
    /// Makes this backend's later work wait for the work queued so far on another stream of
    /// the device (a CUDA stream handle; 1 and 2 are the legacy and per-thread default
    /// streams, as in `__cuda_array_interface__`): by synchronising with it.
    ///
    /// # Safety
    /// `handle` must be a live stream of this backend's context, or 1 or 2.
    pub unsafe fn wait_for_stream(&self, handle: u64) -> Result<()> {
        cu(self.ctx.bind_to_thread())?;
        // SAFETY: a live stream handle (or a default-stream constant), promised by the caller.
        cu(unsafe { cudarc::driver::result::stream::synchronize(handle as sys::CUstream) })
    }

    /// Checks that `a` addresses a block of `l`'s size inside one allocation of this context.
    pub(super) fn check_array(&self, l: DeviceLayout, a: &DeviceArray, name: &str) -> Result<()> {
        if a.ptr == 0 {
            return Err(StrataError::invalid(name, "is a null pointer"));
        }
        if !a.ptr.is_multiple_of(8) {
            return Err(StrataError::invalid(name, "is not aligned to 8 bytes"));
        }
        if a.strides.iter().any(|&s| s <= 0) {
            return Err(StrataError::invalid(
                name,
                format!("has strides {:?}; they must be positive", a.strides),
            ));
        }
        let last = [l.nx, l.ny, l.nz]
            .iter()
            .zip(a.strides)
            .try_fold(0i64, |acc, (&n, s)| {
                (n as i64 - 1)
                    .checked_mul(s)
                    .and_then(|v| v.checked_add(acc))
            })
            .ok_or_else(|| StrataError::invalid(name, "has strides that overflow"))?;
        let end = (last as u64 + 1) * 8;
        cu(self.ctx.bind_to_thread())?;
        let (mut base, mut size) = (0u64, 0usize);
        // SAFETY: out-pointers to locals; the driver only looks the address up.
        let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, a.ptr) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(StrataError::invalid(
                name,
                format!(
                    "is not device memory of {} ({r:?}); pass a device array of this GPU, or a \
                     host array to the host-array call",
                    self.name
                ),
            ));
        }
        if a.ptr + end > base + size as u64 {
            return Err(StrataError::invalid(
                name,
                format!(
                    "reaches {} bytes past its address, its allocation holds {} from there",
                    end,
                    base + size as u64 - a.ptr
                ),
            ));
        }
        Ok(())
    }

    /// The strides of the k-fastest order of `l`, for the tiled path.
    fn k_fastest(l: DeviceLayout) -> [i64; 3] {
        [l.nz as i64, l.nx as i64 * l.nz as i64, 1]
    }

    /// `x ← a` (the block's interior), on the device.
    pub fn import(&self, op: &CudaLevel, a: &DeviceArray, x: &mut CudaField) -> Result<()> {
        self.check(op, &[x])?;
        self.check_array(op.layout, a, "input array")?;
        let (field, _sync) = x.data.device_ptr_mut(self.base());
        self.borrowed_launch(op, a, true, field)
    }

    /// `a ← x` (the block's interior), on the device.
    pub fn export(&self, op: &CudaLevel, x: &CudaField, a: &DeviceArray) -> Result<()> {
        self.check(op, &[x])?;
        self.check_array(op.layout, a, "output array")?;
        let (field, _sync) = x.data.device_ptr(self.base());
        self.borrowed_launch(op, a, false, field)
    }

    /// Launches the copy between the caller's array and the field at device address `field`
    /// (borrowed by the caller for the call).
    fn borrowed_launch(
        &self,
        op: &CudaLevel,
        a: &DeviceArray,
        into_field: bool,
        field: u64,
    ) -> Result<()> {
        let l = op.layout;
        if a.strides == Self::k_fastest(l) {
            // The tiled transpose, at most 65535 rows (the grid's z limit) per launch.
            let kernel = if into_field { K::ToDevice } else { K::ToHost };
            let row = l.nx as u64 * l.nz as u64 * 8;
            for j0 in (0..l.ny as usize).step_by(65535) {
                let rows = (l.ny as usize - j0).min(65535);
                let h = a.ptr + j0 as u64 * row;
                let j0i = j0 as i32;
                let mut b = self.builder(self.base(), op.k.get(kernel));
                b.arg(&l).arg(&j0i);
                if into_field {
                    b.arg(&h).arg(&field);
                } else {
                    b.arg(&field).arg(&h);
                }
                // SAFETY: check_array verified that the caller's block lies inside one device
                // allocation; rows j0..j0+rows are inside the field's layout.
                cu(unsafe { b.launch(self.transpose_cfg(op, rows)) })?;
            }
            return Ok(());
        }
        let kernel = if into_field { K::Gather } else { K::Scatter };
        let [si, sj, sk] = a.strides;
        let cfg = LaunchConfig {
            grid_dim: ((l.nx as u32).div_ceil(128), l.nz as u32, l.ny as u32),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        if l.ny > 65535 || l.nz > 65535 {
            return Err(StrataError::invalid(
                "array",
                "of more than 65535 rows or levels in a non-k-fastest order is not supported",
            ));
        }
        let mut b = self.builder(self.base(), op.k.get(kernel));
        b.arg(&l);
        if into_field {
            b.arg(&a.ptr).arg(&si).arg(&sj).arg(&sk).arg(&field);
        } else {
            b.arg(&field).arg(&si).arg(&sj).arg(&sk).arg(&a.ptr);
        }
        // SAFETY: check_array verified every offset the strides reach lies in the caller's
        // allocation; the kernel touches the field's interior only.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }
}
