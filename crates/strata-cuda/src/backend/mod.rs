//! [`CudaBackend`]: the kernels of `strata::backend::Backend` on an NVIDIA GPU, one file per
//! concept, mirroring kernels/*.cu and the CPU backend: vector, stencil, lines, transfer.

use crate::kernels::{backend_err, Build, Kernel as K, Kernels, Origin, Tuning, BLOCK_THREADS};
use crate::layout::DeviceLayout;
use crate::staging::{chunk_rows, par_copy, Buffer, Pinned};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use strata::backend::{face_len, Fields, Side};
use strata::perf::{Kernel, Probes};
use strata::precision::Storage;
use strata::stencil::LevelStencil;
use strata::{Result, StrataError};

/// Launches kernel `$kernel` of level `$op` over its columns with the given arguments (the
/// level's layout first).
macro_rules! launch_columns {
    ($self:ident, $op:expr, $kernel:expr; $($arg:expr),* $(,)?) => {{
        let mut b = $self.builder($self.launch_stream(), $op.k.get($kernel));
        b.arg(&$op.layout);
        $( b.arg($arg); )*
        // SAFETY: every field argument was checked to have this level's layout, and the column
        // kernels touch only that layout's elements (interior, or halo for reads).
        cu(unsafe { b.launch($op.cfg) }).map(|_| ())
    }};
    // Over the level's columns cut into grid-z segments (`seg`: the kernels with SEGMENT).
    ($self:ident, $op:expr, $kernel:expr, segments; $($arg:expr),* $(,)?) => {{
        let mut b = $self.builder($self.launch_stream(), $op.k.get($kernel));
        b.arg(&$op.layout);
        $( b.arg($arg); )*
        // SAFETY: as above; a segment touches only its column's levels [k0, k1).
        cu(unsafe { b.launch($op.seg.0) }).map(|_| ())
    }};
}

/// Launches the kernel of level `$op`'s operator over its columns: `$model` with the column
/// coefficients, or `$cells` with the per-cell entries ([`cells::CellArrays`]); the level's
/// layout and operator arguments ([`push_operator`]) first, then — with `cross`, for the
/// kernels that apply the whole operator (apply, residual, CG SpMV) — its cross terms
/// ([`push_cross`]; `cell_cross`: the per-cell form's only, for the relaxations, which take
/// orography's slant couplings), then the given arguments; over the level's columns, or with
/// the launch given after `in` (the PCR kernels).
macro_rules! launch_op {
    ($self:ident, $op:expr, $model:expr, $cells:expr; $($arg:expr),* $(,)?) => {
        launch_op!(@go $self, $op, $model, $cells, false, false, None; $($arg),*)
    };
    ($self:ident, $op:expr, $model:expr, $cells:expr, cross; $($arg:expr),* $(,)?) => {
        launch_op!(@go $self, $op, $model, $cells, true, true, None; $($arg),*)
    };
    ($self:ident, $op:expr, $model:expr, $cells:expr, in $cfg:expr; $($arg:expr),* $(,)?) => {
        launch_op!(@go $self, $op, $model, $cells, false, false, Some($cfg); $($arg),*)
    };
    ($self:ident, $op:expr, $model:expr, $cells:expr, cross in $cfg:expr; $($arg:expr),* $(,)?) => {
        launch_op!(@go $self, $op, $model, $cells, true, true, Some($cfg); $($arg),*)
    };
    ($self:ident, $op:expr, $model:expr, $cells:expr, cell_cross in $cfg:expr; $($arg:expr),* $(,)?) => {
        launch_op!(@go $self, $op, $model, $cells, false, true, Some($cfg); $($arg),*)
    };
    (@go $self:ident, $op:expr, $model:expr, $cells:expr, $cross:expr, $cell_cross:expr, $cfg:expr; $($arg:expr),*) => {{
        let op = $op;
        let sym = sym_flag(op);
        let mut b = $self.builder($self.launch_stream(), op.k.get(op_kernel(op, $model, $cells)));
        b.arg(&op.layout);
        push_operator(&mut b, op, &sym);
        if $cross || ($cell_cross && op.cells.is_some()) {
            push_cross(&mut b, op);
        }
        $( b.arg($arg); )*
        let cfg: Option<LaunchConfig> = $cfg;
        // SAFETY: every field argument was checked to have this level's layout, and the column
        // kernels (one or two threads per column, or one per cell of a column for PCR) touch
        // only that layout's elements (interior, or halo for reads).
        cu(unsafe { b.launch(cfg.unwrap_or(op.cfg)) }).map(|_| ())
    }};
}

/// The kernel of level `op`'s operator: `model` with column coefficients, `cells` with
/// per-cell entries.
fn op_kernel(op: &CudaLevel, model: K, cells: K) -> K {
    if op.cells.is_some() {
        cells
    } else {
        model
    }
}

/// Pushes the arguments of level `op`'s operator: the column coefficients and vertical vectors,
/// or the per-cell entries and `sym` (`CELL_PARAMS`, which `sym` must hold the flag of).
fn push_operator<'a>(b: &mut cudarc::driver::LaunchArgs<'a>, op: &'a CudaLevel, sym: &'a i32) {
    match &op.cells {
        None => {
            b.arg(&op.cols).arg(&op.vert);
        }
        Some(c) => {
            for a in c.params() {
                b.arg(a);
            }
            b.arg(sym);
        }
    }
}

/// Pushes the cross terms of level `op` (`CROSS_PARAMS` or `CELL_CROSS_PARAMS`), after its
/// operator, for the kernels that apply the whole operator (apply, residual, CG SpMV).
fn push_cross<'a>(b: &mut cudarc::driver::LaunchArgs<'a>, op: &'a CudaLevel) {
    match &op.cells {
        None => {
            b.arg(&op.cross.0).arg(&op.cross.1);
        }
        Some(c) => {
            for a in &c.cross.0 {
                b.arg(a);
            }
            b.arg(&c.cross.1);
        }
    }
}

/// The `csym` flag of level `op` (0 without per-cell entries).
fn sym_flag(op: &CudaLevel) -> i32 {
    op.cells.as_ref().map_or(0, |c| c.sym_flag())
}

/// A CUDA driver result as strata's.
pub(crate) fn cu<T>(r: std::result::Result<T, cudarc::driver::DriverError>) -> Result<T> {
    r.map_err(|e| backend_err(format!("CUDA driver: {e}")))
}

/// Device values of a field or a coefficient array: fp64, or fp32 on a level prepared in single
/// precision.
pub enum DeviceValues {
    /// fp64 values.
    F64(CudaSlice<f64>),
    /// fp32 values.
    F32(CudaSlice<f32>),
}

impl DeviceValues {
    /// How the values are stored.
    pub fn storage(&self) -> Storage {
        match self {
            DeviceValues::F64(_) => Storage::F64,
            DeviceValues::F32(_) => Storage::F32,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            DeviceValues::F64(v) => v.len(),
            DeviceValues::F32(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device address, read access (see cudarc's `DevicePtr`).
    pub(crate) fn device_ptr<'a>(
        &'a self,
        s: &'a CudaStream,
    ) -> (u64, cudarc::driver::SyncOnDrop<'a>) {
        use cudarc::driver::DevicePtr;
        match self {
            DeviceValues::F64(v) => v.device_ptr(s),
            DeviceValues::F32(v) => v.device_ptr(s),
        }
    }

    /// The device address, write access.
    pub(crate) fn device_ptr_mut<'a>(
        &'a mut self,
        s: &'a CudaStream,
    ) -> (u64, cudarc::driver::SyncOnDrop<'a>) {
        use cudarc::driver::DevicePtrMut;
        match self {
            DeviceValues::F64(v) => v.device_ptr_mut(s),
            DeviceValues::F32(v) => v.device_ptr_mut(s),
        }
    }
}

// SAFETY: pushes the wrapped slice exactly as cudarc pushes a `&CudaSlice` (its device pointer,
// and the slice's events when the context tracks them).
unsafe impl<'a, 'b: 'a> PushKernelArg<&'b DeviceValues> for cudarc::driver::LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b DeviceValues) -> &mut Self {
        match arg {
            DeviceValues::F64(v) => self.arg(v),
            DeviceValues::F32(v) => self.arg(v),
        }
    }
}

// SAFETY: as above, for a `&mut CudaSlice`.
unsafe impl<'a, 'b: 'a> PushKernelArg<&'b mut DeviceValues> for cudarc::driver::LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b mut DeviceValues) -> &mut Self {
        match arg {
            DeviceValues::F64(v) => self.arg(v),
            DeviceValues::F32(v) => self.arg(v),
        }
    }
}

/// The most columns of a coarse level that a multigrid cycle on several GPUs gathers whole onto
/// every GPU by default where its coarsest level is solved by CG
/// ([`strata::backend::Fields::gather_columns`]): measured on two and four H200s
/// (docs/PERFORMANCE.md, several GPUs).
pub const GATHER_COLUMNS: usize = 64 * 64;

impl CudaLevel {
    /// The layout of the level's fields.
    pub fn layout(&self) -> DeviceLayout {
        self.layout
    }
}

/// A field on the device.
pub struct CudaField {
    data: DeviceValues,
    layout: DeviceLayout,
}

impl CudaField {
    /// The field's layout.
    pub fn layout(&self) -> DeviceLayout {
        self.layout
    }

    /// How the field's values are stored.
    pub fn storage(&self) -> Storage {
        self.data.storage()
    }

    /// The field's device address and its count of values (halo and padding included), for a
    /// communicator that queues its own operations on the fields in `b`'s current stream (NCCL's
    /// all-reduce of a whole level). The address is valid while the field lives; the backend's
    /// context does not track events, so nothing waits on the caller's use of it.
    pub fn raw(&self, b: &CudaBackend) -> (u64, usize) {
        let stream = b.stream();
        let (ptr, _sync) = self.data.device_ptr(&stream);
        (ptr, self.data.len())
    }
}

/// A level prepared on the device: layout, column coefficients, vertical vectors, kernels.
pub struct CudaLevel {
    stencil: LevelStencil,
    layout: DeviceLayout,
    cols: DeviceValues,
    vert: DeviceValues,
    /// The sphere's cross terms, 4 values per column, and whether there are any (else 4
    /// zeros, not read).
    cross: (DeviceValues, i32),
    /// Physical-boundary bits: 1 west, 2 east, 4 south, 8 north.
    phys: i32,
    /// Per-cell entries, for a level with coefficient fields.
    cells: Option<cells::CellArrays>,
    cfg: LaunchConfig,
    /// `cfg` with the shared memory the line kernels need ([`Kernels::line_smem`]).
    line_cfg: LaunchConfig,
    blocks: usize,
    /// The launch of the PCR line kernels, for a level with few columns
    /// ([`crate::kernels::Tuning::pcr_columns`]); `None`: one thread per column.
    pcr: Option<LaunchConfig>,
    /// The launch of Residual, Prolongate and the vector kernels without a reduction, each
    /// column cut into grid-z segments on a level with few columns
    /// ([`crate::kernels::segments`]), and its number of blocks.
    seg: (LaunchConfig, usize),
    k: Arc<Kernels>,
}

/// Device scratch for reductions: one partial per block and component, and the final values.
struct Reduce {
    partials: CudaSlice<f64>,
    out: CudaSlice<f64>,
}

/// The CUDA backend: one device, one stream.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    /// The device's compute capability (major, minor).
    cc: (u32, u32),
    modules: Mutex<HashMap<Build, Arc<Kernels>>>,
    reduce: Mutex<Reduce>,
    pinned: Pinned,
    tuning: Tuning,
    /// Streams for the tiles of a concurrent group ([`Fields::fork_tiles`]), made on first use.
    /// The open group is the backend's, not a thread's: while one is open every level kernel
    /// goes to the current tile's stream, so two threads must not solve on one backend at once
    /// (each solver of the C, Fortran and Python interfaces owns its backend).
    tile_streams: OnceLock<Vec<Arc<CudaStream>>>,
    /// The streams of the group now open (0: none; kernels go to `stream`).
    tiles_open: AtomicUsize,
    /// The tile stream of the next launch, while a group is open.
    tile_now: AtomicUsize,
    /// The stream [`Fields::replay`] records on, made on first use.
    capture: OnceLock<Arc<CudaStream>>,
    /// Whether a recording is under way (every launch then goes to `capture`).
    capturing: AtomicBool,
    /// Kernels run, host launches made ([`Fields::launches`]), and kernels queued into the
    /// recording being captured.
    counts: [AtomicU64; 3],
    /// One slot, never read: what the Krylov kernels get for their scalars when every
    /// coefficient is a value (slot index −1).
    no_slots: CudaSlice<f64>,
    /// The device-side stopping test ([`crate::kernels::load_loop_test`]), loaded on first use,
    /// or why it could not be.
    loop_test: OnceLock<std::result::Result<cudarc::driver::CudaFunction, String>>,
}

/// Most streams of a concurrent group of tiles (tiles beyond share them in turn).
const TILE_STREAMS: usize = 8;

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBackend({})", self.name)
    }
}

/// Why no GPU can be used, in one line, or `None` if one can.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: only tries to dlopen the libraries; no symbol is called.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("the CUDA driver library (libcuda.so) was not found".into());
    }
    match CudaContext::device_count() {
        Ok(0) => Some("no CUDA device was found".into()),
        Ok(_) => None,
        Err(e) => Some(format!("the CUDA driver reports: {e}")),
    }
}

/// Number of CUDA devices (an error when the driver is missing).
pub fn device_count() -> Result<usize> {
    if let Some(why) = unavailable_reason() {
        return Err(backend_err(why));
    }
    Ok(cu(CudaContext::device_count())? as usize)
}

impl CudaBackend {
    /// Opens device `ordinal` with the kernel options of the environment ([`Tuning::from_env`],
    /// read here, once). Fails with a clear message when the driver, NVRTC or the device is
    /// missing, or a tuning variable has a value it does not take.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_tuning(ordinal, Tuning::from_env()?)
    }

    /// Opens device `ordinal` with the given kernel options.
    pub fn with_tuning(ordinal: usize, tuning: Tuning) -> Result<Self> {
        if let Some(why) = unavailable_reason() {
            return Err(backend_err(why));
        }
        let ctx = cu(CudaContext::new(ordinal))?;
        // One stream, in order: cudarc's per-allocation event tracking is not needed.
        // SAFETY: every launch and copy of this backend goes to `stream`, so stream order alone
        // orders all accesses.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let (major, minor) = cu(ctx.compute_capability())?;
        let name = format!("cuda:{} (sm_{major}{minor})", cu(ctx.name())?);
        let no_slots = cu(stream.alloc_zeros::<f64>(1))?;
        let reduce = Reduce {
            partials: cu(stream.alloc_zeros::<f64>(2))?,
            out: cu(stream.alloc_zeros::<f64>(2))?,
        };
        Ok(Self {
            ctx,
            stream,
            name,
            cc: (major as u32, minor as u32),
            modules: Mutex::new(HashMap::new()),
            reduce: Mutex::new(reduce),
            pinned: Pinned::default(),
            tuning,
            tile_streams: OnceLock::new(),
            tiles_open: AtomicUsize::new(0),
            tile_now: AtomicUsize::new(0),
            capture: OnceLock::new(),
            capturing: AtomicBool::new(false),
            counts: Default::default(),
            no_slots,
            loop_test: OnceLock::new(),
        })
    }

    /// The stream of the next level kernel: the current tile's while a concurrent group is
    /// open ([`Fields::fork_tiles`]), else the backend's one stream.
    fn launch_stream(&self) -> &Arc<CudaStream> {
        match (
            self.tiles_open.load(Ordering::Relaxed),
            self.tile_streams.get(),
        ) {
            (n, Some(side)) if n > 0 => &side[self.tile_now.load(Ordering::Relaxed) % n],
            _ => self.base(),
        }
    }

    /// The stream every kernel and copy of this backend goes to: the one stream, or while a
    /// [`Fields::replay`] body is being recorded, the capture stream (the legacy default
    /// stream, which the backend runs on so that callers' arrays written on it are ordered
    /// with its kernels, cannot be captured).
    fn base(&self) -> &Arc<CudaStream> {
        match (self.capturing.load(Ordering::Relaxed), self.capture.get()) {
            (true, Some(c)) => c,
            _ => &self.stream,
        }
    }

    /// A launch of kernel `f` on `stream`, counted ([`Fields::launches`]): while a recording
    /// is captured, as one of its kernels; otherwise as a kernel run and a host launch.
    fn builder<'a>(
        &self,
        stream: &'a Arc<CudaStream>,
        f: &'a cudarc::driver::CudaFunction,
    ) -> cudarc::driver::LaunchArgs<'a> {
        if self.capturing.load(Ordering::Relaxed) {
            self.counts[2].fetch_add(1, Ordering::Relaxed);
        } else {
            self.counts[0].fetch_add(1, Ordering::Relaxed);
            self.counts[1].fetch_add(1, Ordering::Relaxed);
        }
        stream.launch_builder(f)
    }

    /// A loaded kernel module, for kernels that do not depend on a level (the scalar
    /// arithmetic): any will do; there is one once a level was prepared.
    fn any_kernels(&self) -> Result<Arc<Kernels>> {
        let modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        modules
            .values()
            .next()
            .cloned()
            .ok_or_else(|| backend_err("no kernels are loaded yet: prepare a level first"))
    }

    /// The streams of concurrent tiles ([`Fields::fork_tiles`]), made on first use.
    fn tile_streams(&self) -> Result<&Vec<Arc<CudaStream>>> {
        if self.tile_streams.get().is_none() {
            let side = (0..TILE_STREAMS)
                .map(|_| cu(self.stream.fork()))
                .collect::<Result<Vec<_>>>()?;
            // Another thread may have set them first: then these are dropped unused.
            let _ = self.tile_streams.set(side);
        }
        Ok(self.tile_streams.get().expect("set above"))
    }

    /// Whether the Smooth kernel was built to store its right-hand side (`-DSMOOTH_STORE_RHS`).
    fn smooth_stores_rhs(&self) -> bool {
        self.tuning.smooth_stores_rhs()
    }

    /// The kernel build options this backend was created with.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// The stream every kernel and copy of this backend runs on outside a recording.
    pub fn stream(&self) -> Arc<CudaStream> {
        self.stream.clone()
    }

    /// The stream the backend queues its next copy or kernel on: its one stream, or while a
    /// [`Fields::replay`] body is being recorded, the capture stream. Work another library
    /// queues there (NCCL's halo messages) is ordered with the backend's, and recorded with
    /// the body. (Not a tile stream: no communication happens inside a group of tiles.)
    pub fn queue_stream(&self) -> cudarc::driver::sys::CUstream {
        self.base().cu_stream()
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize)> {
        cu(self.ctx.mem_get_info())
    }

    /// Compiles (or reads from the disk cache) and loads the kernels for `nz` levels now,
    /// instead of at the first level prepared: to time or to hide the first set-up.
    /// Both offset widths are loaded: a hierarchy uses 32-bit offsets on the levels whose
    /// fields are small enough ([`Tuning::narrow`]) and 64-bit ones on the others.
    pub fn load_kernels(&self, nz: usize) -> Result<()> {
        self.kernels(Build::f64(nz))?;
        if self.tuning.narrow_values > 0 {
            self.kernels(Build {
                narrow: true,
                ..Build::f64(nz)
            })?;
        }
        Ok(())
    }

    /// Where the machine code of each kernel module loaded so far came from, by build.
    pub fn kernel_origins(&self) -> Vec<(Build, Origin)> {
        let m = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<_> = m.iter().map(|(b, k)| (*b, k.origin())).collect();
        v.sort_by_key(|(b, _)| (b.nz, b.storage.bytes(), b.narrow, b.slant, b.diagonals));
        v
    }

    /// The kernels of `build`, loaded on first use.
    fn kernels(&self, build: Build) -> Result<Arc<Kernels>> {
        let mut m = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = m.get(&build) {
            return Ok(k.clone());
        }
        let k = Arc::new(Kernels::load(&self.ctx, build, self.cc, &self.tuning)?);
        m.insert(build, k.clone());
        Ok(k)
    }

    /// A zero device array of `len` values stored in `storage` (refused, not failed, when the
    /// device has too little free memory).
    fn alloc_stored(&self, len: usize, storage: Storage) -> Result<DeviceValues> {
        Ok(match storage {
            Storage::F64 => DeviceValues::F64(self.alloc_values(len)?),
            Storage::F32 => {
                self.check_free(len, 4)?;
                DeviceValues::F32(cu(self.stream.alloc_zeros::<f32>(len))?)
            }
        })
    }

    fn check_free(&self, len: usize, bytes_per_value: u64) -> Result<()> {
        let (free, _) = self.memory()?;
        let bytes = len as u64 * bytes_per_value;
        if bytes > free as u64 {
            return Err(StrataError::OutOfMemory {
                what: format!("a device array of {len} values"),
                needed: bytes,
                available: free as u64,
            });
        }
        Ok(())
    }

    fn alloc_values(&self, len: usize) -> Result<CudaSlice<f64>> {
        self.check_free(len, 8)?;
        cu(self.stream.alloc_zeros::<f64>(len))
    }

    /// Checks that every field is one of level `op`'s (its layout and precision): a caller's
    /// mistake otherwise, reported as an error before anything is launched.
    fn check(&self, op: &CudaLevel, fields: &[&CudaField]) -> Result<()> {
        for f in fields {
            if f.layout != op.layout {
                return Err(backend_err("a field of another level was passed"));
            }
            if f.storage() != op.stencil.storage {
                return Err(backend_err(format!(
                    "a field stored in {:?} was passed with a level stored in {:?}",
                    f.storage(),
                    op.stencil.storage
                )));
            }
        }
        Ok(())
    }

    /// Checks the fields of a kernel that reads or writes a field `x` of `other`, another
    /// preparation of `op`'s block stored in fp32, beside `op`'s fp64 `fields`: the pairs
    /// `residual_to` and `axpy_from` have a kernel for (one fp64 build kernel, one fp32
    /// field). Returns false where both levels are stored alike (the caller's plain kernel
    /// serves), an error for any other pair.
    fn check_f32_beside(
        &self,
        op: &CudaLevel,
        fields: &[&CudaField],
        other: &CudaLevel,
        x: &CudaField,
    ) -> Result<bool> {
        strata::backend::check_convert(&op.stencil, &other.stencil)?;
        self.check(op, fields)?;
        self.check(other, &[x])?;
        match (op.stencil.storage, other.stencil.storage) {
            (a, b) if a == b => Ok(false),
            (Storage::F64, Storage::F32) if other.layout == op.layout => Ok(true),
            (a, b) => Err(backend_err(format!(
                "no kernel between a level stored in {a:?} and one in {b:?} of this layout"
            ))),
        }
    }

    /// Runs the final reduction of `ncomp` components over the partials of `blocks` blocks (the
    /// launch's: `op.blocks` over whole columns, `op.seg.1` segmented) and reads it back.
    fn finish_reduce_of(
        &self,
        op: &CudaLevel,
        blocks: usize,
        r: &mut Reduce,
        ncomp: usize,
    ) -> Result<[f64; 2]> {
        let Reduce { partials, out } = r;
        self.launch_reduce(op, blocks, partials, ncomp, &mut out.slice_mut(..ncomp))?;
        let mut host = [0.0; 2];
        cu(self.base().memcpy_dtoh(&*out, &mut host))?;
        Ok(host)
    }

    /// Queues the final reduction of `ncomp` components over `blocks` block partials into
    /// `dst` (`ncomp` values: the reduction's own output, or slots of a solver's scalars).
    fn launch_reduce(
        &self,
        op: &CudaLevel,
        blocks: usize,
        partials: &CudaSlice<f64>,
        ncomp: usize,
        dst: &mut cudarc::driver::CudaViewMut<'_, f64>,
    ) -> Result<()> {
        let (nb, nc) = (blocks as i32, ncomp as i32);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), op.k.get(K::Reduce));
        b.arg(partials).arg(&nb).arg(&nc).arg(dst);
        // SAFETY: partials holds at least blocks × ncomp values (sized in prepare_level for the
        // level's largest launch), dst ncomp values (sliced by the callers).
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    /// Best wall time of `repeats` synchronised runs of `work`, after one warm-up run.
    fn best_time(&self, repeats: usize, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
        let mut best = f64::INFINITY;
        for run in 0..repeats.max(1) + 1 {
            self.synchronize()?;
            let t = Instant::now();
            work()?;
            self.synchronize()?;
            if run > 0 {
                best = best.min(t.elapsed().as_secs_f64());
            }
        }
        Ok(best)
    }

    fn reduce_lock(&self) -> std::sync::MutexGuard<'_, Reduce> {
        self.reduce.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn transpose_cfg(&self, op: &CudaLevel, rows: usize) -> LaunchConfig {
        let l = op.layout;
        LaunchConfig {
            grid_dim: (
                (l.nz as u32).div_ceil(32),
                (l.nx as u32).div_ceil(32),
                rows as u32,
            ),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Launches a face kernel ([`K::PackFace`]: field → buffer, [`K::UnpackFace`]: buffer →
    /// halo) over the count × nz values of one side.
    fn face_launch(&self, op: &CudaLevel, kernel: K, side: Side, src: u64, dst: u64) -> Result<()> {
        let count = match side {
            Side::West | Side::East => op.layout.ny,
            Side::South | Side::North => op.layout.nx,
        };
        let s = side_index(side);
        let n = count as u32 * op.layout.nz as u32;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), op.k.get(kernel));
        b.arg(&op.layout).arg(&s).arg(&count).arg(&src).arg(&dst);
        // SAFETY: `src` and `dst` are the device addresses of a live field of this level and a
        // buffer of count × nz values (checked by the callers, who hold them borrowed for the
        // call); the kernel touches one face layer of the field (interior for pack, halo for
        // unpack).
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }
}

fn side_index(side: Side) -> i32 {
    match side {
        Side::West => 0,
        Side::East => 1,
        Side::South => 2,
        Side::North => 3,
    }
}

/// The PCR launch of a block of `columns` columns of `nz` cells (kernels/lines.cu): `nz` rounded
/// up to a power of two threads per column, [`pcr_columns_per_block`] columns per block; `None`
/// where `nz` > 1024 or `decide` (the columns the choice is made on: the block's, or its whole
/// level's, [`crate::kernels::Tuning::pcr_by_block`]) is `threshold` or more.
fn pcr_config(columns: usize, decide: usize, nz: usize, threshold: usize) -> Option<LaunchConfig> {
    if nz > 1024 || decide >= threshold {
        return None;
    }
    let per_column = nz.next_power_of_two() as u32;
    let per_block = pcr_columns_per_block(per_column);
    Some(LaunchConfig {
        grid_dim: ((columns as u32).div_ceil(per_block), 1, 1),
        // The column fastest (threadIdx.x), its level second: coalesced loads.
        block_dim: (per_block, per_column, 1),
        shared_mem_bytes: 0,
    })
}

/// Columns per block of the PCR kernels for `per_column` (a power of two) threads per column:
/// `PCR_COLS` of kernels/lines.cu, which must agree.
fn pcr_columns_per_block(per_column: u32) -> u32 {
    match per_column {
        512.. => 1,
        128.. => 512 / per_column,
        32.. => 4,
        _ => 128 / per_column,
    }
}

/// 128 threads per block: bx × (128 / bx) with bx = 64 where the level is wide enough, narrower
/// blocks on coarse levels.
fn column_config(nx: usize, ny: usize, block_x: u32) -> (LaunchConfig, usize) {
    let bx = (nx.next_power_of_two() as u32).clamp(8, block_x);
    let by = BLOCK_THREADS / bx;
    let grid = ((nx as u32).div_ceil(bx), (ny as u32).div_ceil(by));
    (
        LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (bx, by, 1),
            shared_mem_bytes: 0,
        },
        (grid.0 * grid.1) as usize,
    )
}

/// The vertical vectors a level's kernels take: amb, b, c, d, a (nz values each).
fn vertical_values(s: &LevelStencil) -> Vec<f64> {
    let v = &s.vertical;
    [&v.amb, &v.b, &v.c, &v.d, &v.a]
        .into_iter()
        .flatten()
        .copied()
        .collect()
}

/// The columns' coefficients as one array of six values per column (area, α^E, α^W, α^N, α^S,
/// α_T), which the kernels read.
fn column_values(c: &[strata::problem::Column]) -> &[f64] {
    const _: () = assert!(std::mem::size_of::<strata::problem::Column>() == 6 * 8);
    // SAFETY: `Column` is `repr(C)` with exactly six f64 fields (checked above: no padding), so
    // `c` is 6·len initialised, aligned f64 values; the borrow keeps them alive.
    unsafe { std::slice::from_raw_parts(c.as_ptr().cast::<f64>(), 6 * c.len()) }
}

impl Fields for CudaBackend {
    type Field = CudaField;

    type LevelOp = CudaLevel;

    fn name(&self) -> String {
        // Once kernels are loaded, where they came from (built in, or compiled at run time).
        let mut origins: Vec<String> = self
            .kernel_origins()
            .into_iter()
            .map(|(_, o)| o.to_string())
            .collect();
        origins.sort();
        origins.dedup();
        if origins.is_empty() {
            self.name.clone()
        } else {
            format!("{}, kernels {}", self.name, origins.join(" and "))
        }
    }

    /// [`GATHER_COLUMNS`].
    fn gather_columns(&self) -> usize {
        GATHER_COLUMNS
    }

    fn launches(&self) -> Option<strata::backend::Launches> {
        Some(strata::backend::Launches {
            kernels: self.counts[0].load(Ordering::Relaxed),
            host: self.counts[1].load(Ordering::Relaxed),
        })
    }

    fn prepare_level(&self, s: &LevelStencil) -> Result<CudaLevel> {
        s.check_single()?;
        let layout = DeviceLayout::new(s.nx(), s.ny(), s.nz)?;
        // A level with slant or diagonal couplings takes the build that relaxes them
        // (common.cuh's SLANT_CASE, WITH_RELAX_COL).
        let k = self.kernels(Build {
            nz: s.nz,
            storage: s.storage,
            narrow: self.tuning.narrow(layout.len(), s.finest),
            slant: s.slant.is_some(),
            diagonals: s.cross.is_some(),
        })?;
        let vert = vertical_values(s);
        let (cfg, blocks) = column_config(s.nx(), s.ny(), self.tuning.block_x);
        let segs = crate::kernels::segments(s.nx() * s.ny(), s.nz, self.tuning.segment_threads);
        let seg = (
            LaunchConfig {
                grid_dim: (cfg.grid_dim.0, cfg.grid_dim.1, segs),
                ..cfg
            },
            blocks * segs as usize,
        );
        // PCR or the Thomas sweep: chosen on the level's whole panel or box, so that a block of
        // a rank decomposition runs the kernels one process runs, and the answer is the same
        // bit for bit on any number of ranks (docs/MODEL.md §22); on the block's own columns
        // where the tuning asks (faster on small blocks, different rounding).
        let decide = if self.tuning.pcr_by_block {
            s.nx() * s.ny()
        } else {
            s.block.n * s.block.n
        };
        let pcr = pcr_config(s.nx() * s.ny(), decide, s.nz, self.tuning.pcr_columns);
        // The blocks of the reductions: the segmented launch's, or CG Tridiag's with two
        // threads per column.
        let twin_blocks = lines::twin_config(&self.tuning, pcr.is_some(), s.nx(), s.ny())
            .map_or(0, |c| (c.grid_dim.0 * c.grid_dim.1) as usize);
        {
            let mut r = self.reduce_lock();
            let need = 2 * seg.1.max(twin_blocks);
            if r.partials.len() < need {
                r.partials = self.alloc_values(need)?;
            }
        }
        // The prolongation's walls: bit Side::index for a wall, bit 4 + index for a zero-flux one.
        let phys = Side::ALL
            .iter()
            .map(|&d| match s.block.edge(d) {
                strata::grid::Edge::Cells => 0,
                strata::grid::Edge::Dirichlet => 1 << d.index(),
                strata::grid::Edge::Neumann => (1 << d.index()) | (1 << (4 + d.index())),
            })
            .sum::<i32>();
        // Six values per column, in `Column`'s field order.
        let cols = self.upload_values(column_values(&s.columns), s.storage)?;
        let cells = match (&s.cells, &s.resident) {
            (Some(_), _) => Some(cells::CellArrays::new(self, s, layout)?),
            (None, Some(r)) => Some(cells::CellArrays::from_resident(
                self, s, layout, &k, r, &cols,
            )?),
            (None, None) => None,
        };
        Ok(CudaLevel {
            stencil: resident::consumed(s),
            layout,
            cols,
            vert: self.upload_values(&vert, s.storage)?,
            cross: match &s.cross {
                Some(x) => {
                    let v: Vec<f64> = x.iter().flat_map(|d| [d.ne, d.nw, d.se, d.sw]).collect();
                    (self.upload_values(&v, s.storage)?, 1)
                }
                None => (self.upload_values(&[0.0; 4], s.storage)?, 0),
            },
            phys,
            cells,
            line_cfg: LaunchConfig {
                shared_mem_bytes: k.line_smem(),
                ..cfg
            },
            cfg,
            blocks,
            pcr,
            seg,
            k,
        })
    }

    fn refresh_level(&self, op: &mut CudaLevel, s: &LevelStencil) -> Result<bool> {
        resident::refresh(self, op, s)
    }

    fn stencil<'a>(&self, op: &'a CudaLevel) -> &'a LevelStencil {
        &op.stencil
    }

    fn alloc(&self, op: &CudaLevel) -> Result<CudaField> {
        Ok(CudaField {
            data: self.alloc_stored(op.layout.len(), op.stencil.storage)?,
            layout: op.layout,
        })
    }

    fn synchronize(&self) -> Result<()> {
        cu(self.base().synchronize())
    }

    fn fork_tiles(&self, tiles: usize, columns: usize) -> Result<()> {
        if tiles < 2 || columns > self.tuning.tile_streams_columns {
            return Ok(());
        }
        let side = self.tile_streams()?;
        let n = tiles.min(TILE_STREAMS);
        // Each tile stream waits for the work queued so far (the fields the tiles read).
        for s in &side[..n] {
            cu(s.join(self.base()))?;
        }
        self.tile_now.store(0, Ordering::Relaxed);
        self.tiles_open.store(n, Ordering::Relaxed);
        Ok(())
    }

    fn replay(
        &self,
        rec: &mut strata::backend::Recording,
        key: &[u64],
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<bool> {
        self.replay_graph(rec, key, body)
    }

    fn address(&self, x: &CudaField) -> u64 {
        x.data.device_ptr(&self.stream).0
    }

    fn on_tile(&self, t: usize) {
        self.tile_now.store(t, Ordering::Relaxed);
    }

    fn join_tiles(&self) -> Result<()> {
        let n = self.tiles_open.swap(0, Ordering::Relaxed);
        if let (true, Some(side)) = (n > 0, self.tile_streams.get()) {
            for s in &side[..n] {
                cu(self.base().join(s))?;
            }
        }
        Ok(())
    }

    fn field_bytes(&self, nx: usize, ny: usize, nz: usize) -> u64 {
        // The padded device layout; a block too large for it is refused elsewhere, with a
        // message: count it as the host layout here.
        DeviceLayout::new(nx, ny, nz)
            .map(|l| l.bytes())
            .unwrap_or(((nx + 2) * (ny + 2) * nz * 8) as u64)
    }

    fn device_memory(&self) -> Result<Option<u64>> {
        // Frees are stream-ordered: a solver dropped just before (the previous solve of a
        // series) holds its memory until the stream reaches the frees, and the pool releases
        // it at a synchronisation; without this wait the check saw it as taken.
        self.synchronize()?;
        Ok(Some(self.memory()?.0 as u64))
    }
}

impl Probes for CudaBackend {
    fn moved_values(&self, kernel: Kernel) -> Option<f64> {
        let split = crate::layout::colour_split().unwrap_or(false);
        // The checkpointed Thomas sweeps read their right-hand side twice (kernels/lines.cu).
        Some(match kernel {
            Kernel::Spmv => 7.0,    // read z, u, p, q; write u, p, q
            Kernel::Tridiag => 5.0, // read q, r, r again; write r, z
            Kernel::Smooth if self.smooth_stores_rhs() => 6.0, // read f, u, u_out, u; write u_out twice
            Kernel::Smooth => 5.0,                             // read f, u twice; write u_out
            // The split levels (which carry a large solve's bytes) read r once and write z (3
            // on whole-column levels); the colour's form on half the columns.
            Kernel::LineSolve => 2.0,
            Kernel::LineSolveColor => 1.0,
            // A half-sweep reads f, the colour's old values and the other colour's (its
            // neighbours) and writes the colour's; in the colour-split layout (the default)
            // each on the colour's slots only: 4 × ½ (`smooth_color_after_solve`, which does not
            // read the old values, moves 1.5: counted as 2). In the plain layout every other
            // column of a row shares its memory sectors: f and the neighbours read in full,
            // twice; u written (half, in full sectors).
            Kernel::SmoothColor if split => 2.0,
            Kernel::SmoothColor => 5.0,
            // Mixed precision only (fp32 values, the fp64 u as two each): one kernel reads f
            // and z as the half-sweep does and u, and writes u (z not written): 1.5 + 4 (4.5 +
            // 4 in the plain layout); or the half-sweep and then axpy_from (read z, u; write u):
            // 2 + 5 (5 + 5). (Per kernel, not per level: a per-cell level, which runs the two
            // unless asked, is counted as fused.)
            Kernel::SmoothColorCorrect if self.tuning.fuse_correction => {
                if split {
                    5.5
                } else {
                    8.5
                }
            }
            Kernel::SmoothColorCorrect if split => 7.0,
            Kernel::SmoothColorCorrect => 10.0,
            Kernel::RestrictSmooth => 7.0, // per coarse cell: read 4 children, f_c; write f_c, u_c
            // Per coarse cell: read f and u of 4 children; write f_c; read it twice, write u_c
            // (fused; 19 where it is not: PCR levels, cross terms, fp32 levels with the fusion off);
            // with the coarse line solve on one colour (split levels) read f_c and write u_c on
            // half the columns.
            Kernel::ResidualRestrictSmooth => 12.0,
            Kernel::ResidualRestrictSolveColor => 10.0,
            Kernel::Residual => 3.0,     // read f, u; write r
            Kernel::ResidualNorm => 2.0, // read f, u
            Kernel::Prolongate => 2.25,  // read u_f and a quarter u_c; write u_f
            Kernel::Vector | Kernel::Halo => return None,
        })
    }

    fn coefficient_values(&self, kernel: Kernel, symmetric: bool) -> Option<f64> {
        // The entries of cells::CellArrays: d, e, n, u (and w, s, b when not symmetric); the
        // line solves read the tridiagonal part (d, u and b) in the forward sweep and again in
        // the backward sweep's recomputation.
        let (all, tridiag) = if symmetric { (4.0, 2.0) } else { (7.0, 3.0) };
        Some(match kernel {
            Kernel::Spmv | Kernel::Residual | Kernel::ResidualNorm => all,
            Kernel::Tridiag | Kernel::RestrictSmooth => 2.0 * tridiag,
            // The line solves of the split levels (on half the columns for the colour's).
            Kernel::LineSolve | Kernel::LineSolveColor => tridiag,
            Kernel::ResidualRestrictSmooth => 4.0 * all + 2.0 * tridiag,
            Kernel::ResidualRestrictSolveColor => 4.0 * all + tridiag,
            Kernel::Smooth => 2.0 * all,
            Kernel::SmoothColor | Kernel::SmoothColorCorrect => all,
            Kernel::Prolongate => 0.0,
            Kernel::Vector | Kernel::Halo => return None,
        })
    }

    fn copy_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        let len = (bytes / 16).max(1);
        let src = self.alloc_values(len)?;
        let mut dst = self.alloc_values(len)?;
        let best = self.best_time(repeats, || cu(self.stream.memcpy_dtod(&src, &mut dst)))?;
        Ok((2 * len * 8) as f64 / best)
    }

    fn update_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        let len = (bytes / 8).max(1);
        // Any loaded module has the update kernel; compile one only if none is loaded yet.
        let loaded = self
            .modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(b, _)| b.storage == Storage::F64)
            .map(|(_, k)| k.clone());
        let k = match loaded {
            Some(k) => k,
            None => self.kernels(Build::f64(128))?,
        };
        let x = self.alloc_values(len)?;
        let mut y = self.alloc_values(len)?;
        let cfg = LaunchConfig {
            grid_dim: (((len as u64).div_ceil(256)).min(1 << 20) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let (n, a) = (len as i64, 1e-3f64);
        let best = self.best_time(repeats, || {
            let mut b = self.builder(&self.stream, k.get(K::Update));
            b.arg(&n).arg(&a).arg(&x).arg(&mut y);
            // SAFETY: x and y hold n values; the grid-stride loop stays below n.
            cu(unsafe { b.launch(cfg) }).map(|_| ())
        })?;
        Ok((3 * len * 8) as f64 / best)
    }
}

pub use borrowed::{DeviceArray, Order};
pub use shared_buffers::PartAt;

// After `launch_columns!`, which they use (macros are in scope from their definition on).
mod borrowed;
mod cells;
mod device_loop;
mod graph;
mod lines;
mod resident;
mod scalars;
mod shared_buffers;
mod stencil;
mod transfer;
mod upload;
mod vector;

#[cfg(test)]
mod tests {
    use super::{pcr_columns_per_block, pcr_config};

    #[test]
    fn pcr_blocks_hold_neighbouring_columns() {
        // nz = 128: 4 columns of 128 threads, the column fastest.
        let cfg = pcr_config(1000, 1000, 128, 65536).unwrap();
        assert_eq!((cfg.block_dim, cfg.grid_dim.0), ((4, 128, 1), 250));
        // At most 512 threads per block, 1024 where one column needs them, 128 at least.
        for nz in [1, 2, 8, 16, 32, 64, 100, 128, 256, 512, 1024] {
            let per_column = (nz as u32).next_power_of_two();
            let threads = per_column * pcr_columns_per_block(per_column);
            assert!(
                (128..=512).contains(&threads) || per_column == 1024,
                "nz {nz}: {threads}"
            );
        }
        assert!(pcr_config(65536, 65536, 128, 65536).is_none());
        assert!(pcr_config(10, 10, 2048, 65536).is_none());
        // A quarter of a level of 256² columns decides as the whole level does, and launches
        // for its own columns.
        assert!(pcr_config(128 * 128, 256 * 256, 128, 32768).is_none());
        let cfg = pcr_config(64 * 64, 128 * 128, 128, 32768).unwrap();
        assert_eq!(cfg.grid_dim.0, 64 * 64 / 4);
    }
}
