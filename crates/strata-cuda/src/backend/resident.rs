//! Coefficient fields that stay on the device (docs/MODEL.md §15): a model's device arrays of κ
//! and β checked and averaged onto the coarse levels on the GPU (kernels/coefficients.cu), handed
//! to the solver as [`ResidentCells`], from which [`CudaBackend`]'s `prepare_level` makes every
//! level's per-cell entries on the GPU. No value crosses to the host and nothing is computed
//! there but the column coefficients (O(n²)); the entries are bit for bit those of the host path
//! (`LevelStencil::row` from host fields), so a solve is the same either way.

use super::*;
use crate::DeviceArray;
use cudarc::driver::{DevicePtr, DeviceRepr};
use strata::problem::{face_length, Averaging, Geometry, ProblemParams};
use strata::stencil::ResidentCells;

/// One coefficient field of a level as the kernels read it (the C `Src`): device address and
/// strides of i, j, k in values.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Src {
    ptr: u64,
    si: i64,
    sj: i64,
    sk: i64,
}

// SAFETY: a plain #[repr(C)] struct of a u64 and three i64 (32 bytes, no padding), laid out as
// the C struct `Src` of kernels/coefficients.cu (a pointer and three long long).
unsafe impl DeviceRepr for Src {}

/// One level's fields κx, κy, κz, β and, with advection, ξx, ξy, ξz on the device, for
/// [`ResidentCells`].
pub(crate) struct LevelFields {
    /// Cells per side of the level's panel.
    n: usize,
    nz: usize,
    src: [Src; 7],
    /// Whether ξ was given (else its sources are not read).
    advection: bool,
    geometry: Geometry,
    /// ω², the advection term's factor.
    omega2: f64,
    /// The memory the sources point into where the level owns it (coarse levels' means, the
    /// one-value constants of fields not given); the finest level's given fields are the
    /// caller's arrays, read while the call that borrowed them lasts.
    _owned: Vec<CudaSlice<f64>>,
}

/// What a prepared level keeps of its coefficient fields: a mark that its entries were made from
/// fields (device fields, whose arrays were borrowed for one call, or host fields), which it
/// does not keep.
struct Consumed;

/// The names of the fields, in [`CudaBackend::resident_coefficients`]'s order.
const NAMES: [&str; 7] = ["kx", "ky", "kz", "beta", "xi_x", "xi_y", "xi_z"];

impl Src {
    /// Whether k is the array's fastest index (the kernels then read along k).
    fn k_fastest(&self) -> bool {
        self.sk < self.si
    }
}

/// One thread per value, along k when `kfast` (grid (⌈nz / 128⌉, nx, ny)), else along x (grid
/// (⌈nx / 128⌉, nz, ny)).
fn values_cfg(nx: usize, ny: usize, nz: usize, kfast: bool) -> LaunchConfig {
    let (fast, other) = if kfast { (nz, nx) } else { (nx, nz) };
    LaunchConfig {
        grid_dim: ((fast as u32).div_ceil(128), other as u32, ny as u32),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl CudaBackend {
    /// The coefficient fields of `levels` levels (finest first) of problem `p` (one panel or box,
    /// `n × n × nz`, ω) from a model's device arrays of the whole panel, κx, κy, κz, β, ξx, ξy,
    /// ξz (`None`: the model problem's value, 1, or δ for β; ξ all `None` for no advection, a
    /// `None` component 0), for [`strata::PersistentSolver::update_resident_coefficients`]: each
    /// given array checked (finite, and κ and β positive; the error names the first bad cell as
    /// the host check does) and averaged onto the coarser levels with `averaging` (ξ by its plain
    /// mean), on the device. The returned fields borrow the finest level's arrays: they must be
    /// used (the operators prepared) while the arrays are alive and unchanged, and are useless
    /// afterwards.
    pub fn resident_coefficients(
        &self,
        fields: [Option<&DeviceArray>; 7],
        p: &ProblemParams,
        levels: usize,
        averaging: Averaging,
    ) -> Result<Vec<ResidentCells>> {
        let (n, nz) = (p.n, p.nz);
        if p.geometry.closed() {
            return Err(StrataError::invalid(
                "coefficients",
                "from device arrays are kept on the device for one panel or box, not yet for the sphere",
            ));
        }
        if p.boundaries.any_periodic() {
            return Err(StrataError::invalid(
                "coefficients",
                format!(
                    "from device arrays are kept on the device for walled domains only, not yet \
                     with periodic sides ({}): give them as host arrays",
                    p.boundaries
                ),
            ));
        }
        if n > 65535 || nz > 65535 {
            return Err(StrataError::invalid(
                "n",
                "coefficient fields from device arrays need n and nz below 65536",
            ));
        }
        let advection = fields[4..].iter().any(Option::is_some);
        let k = self.kernels(crate::kernels::Build::f64(nz))?;
        let fine = DeviceLayout::new(n, n, nz)?;
        let mut owned = Vec::new();
        let mut src = [Src {
            ptr: 0,
            si: 0,
            sj: 0,
            sk: 0,
        }; 7];
        for (m, (a, name)) in fields.iter().zip(NAMES).enumerate() {
            if m >= 4 && !advection {
                continue;
            }
            src[m] = match a {
                Some(a) => {
                    self.check_array(fine, a, name)?;
                    let [si, sj, sk] = a.strides();
                    let s = Src {
                        ptr: a.ptr(),
                        si,
                        sj,
                        sk,
                    };
                    // κ positive, β non-negative (zero: a Poisson problem), ξ any sign.
                    let sign = match m {
                        0..=2 => Sign::Positive,
                        3 => Sign::NonNegative,
                        _ => Sign::Any,
                    };
                    self.check_values(&k, s, n, nz, name, sign)?;
                    s
                }
                None => {
                    let value = match m {
                        3 => p.delta,
                        0..=2 => 1.0,
                        _ => 0.0,
                    };
                    let c = cu(self.stream.clone_htod(&[value]))?;
                    let s = Src {
                        ptr: c.device_ptr(&self.stream).0,
                        si: 0,
                        sj: 0,
                        sk: 0,
                    };
                    owned.push(c);
                    s
                }
            };
        }
        let (geometry, omega2) = (p.geometry, p.omega() * p.omega());
        let level = |n, src, owned| LevelFields {
            n,
            nz,
            src,
            advection,
            geometry,
            omega2,
            _owned: owned,
        };
        let mut out = vec![level(n, src, owned)];
        let harmonic = matches!(averaging, Averaging::Harmonic) as i32;
        let (mut finer_n, mut finer_src) = (n, src);
        for _ in 1..levels {
            if finer_n % 2 != 0 {
                return Err(StrataError::invalid(
                    "levels",
                    format!(
                        "{levels} levels of an {n}x{n} panel: a level of odd size is coarsened"
                    ),
                ));
            }
            let nc = finer_n / 2;
            let mut owned = Vec::with_capacity(7);
            let mut src = finer_src;
            let given = if advection { 7 } else { 4 };
            for (m, s) in finer_src.iter().enumerate().take(given) {
                // κ and β by the chosen mean, ξ (a velocity) by the plain one.
                let harmonic = if m < 4 { harmonic } else { 0 };
                self.check_free(nc * nc * nz, 8)?;
                let mut c = cu(self.stream.alloc_zeros::<f64>(nc * nc * nz))?;
                let mut b = self.builder(&self.stream, k.get(K::CoefCoarsen));
                // The coarse field keeps the fine one's fastest index (k or x).
                let kfast = s.k_fastest();
                let (nci, nzi, harm, kf) = (nc as i32, nz as i32, harmonic, kfast as i32);
                b.arg(&nci)
                    .arg(&nci)
                    .arg(&nzi)
                    .arg(s)
                    .arg(&harm)
                    .arg(&kf)
                    .arg(&mut c);
                // SAFETY: `s` addresses a 2nc × 2nc × nz field (checked for the caller's
                // arrays, allocated so for the coarser ones; a constant is one value with
                // strides 0, averaged like the rest so that the means are the host's per-cell
                // ones); the kernel writes c's nc × nc × nz values.
                cu(unsafe { b.launch(values_cfg(nc, nc, nz, kfast)) })?;
                let ptr = c.device_ptr(&self.stream).0;
                let (nc, nz) = (nc as i64, nz as i64);
                let [si, sj, sk] = if kfast {
                    [nz, nc * nz, 1]
                } else {
                    [1, nc, nc * nc]
                };
                src[m] = Src { ptr, si, sj, sk };
                owned.push(c);
            }
            out.push(level(nc, src, owned));
            (finer_n, finer_src) = (nc, src);
        }
        Ok(out
            .into_iter()
            .map(|l| ResidentCells(Arc::new(l)))
            .collect())
    }

    /// Checks that every value of the field at `s` (n × n × nz) is finite and of the sign
    /// `sign` allows (Coefficients::validate's rules, its messages).
    fn check_values(
        &self,
        k: &Kernels,
        s: Src,
        n: usize,
        nz: usize,
        name: &str,
        sign: Sign,
    ) -> Result<()> {
        let mut first = cu(self.stream.clone_htod(&[u64::MAX]))?;
        let kfast = s.k_fastest();
        let pos = match sign {
            Sign::Any => 0i32,
            Sign::Positive => 1,
            Sign::NonNegative => 2,
        };
        let (ni, nzi, kf) = (n as i32, nz as i32, kfast as i32);
        let mut b = self.builder(&self.stream, k.get(K::CoefCheck));
        b.arg(&ni)
            .arg(&nzi)
            .arg(&s)
            .arg(&pos)
            .arg(&kf)
            .arg(&mut first);
        // SAFETY: check_array verified that every offset of the n × n × nz block lies in the
        // caller's allocation; the kernel only reads it and writes `first`.
        cu(unsafe { b.launch(values_cfg(n, n, nz, kfast)) })?;
        let q = cu(self.stream.clone_dtoh(&first))?[0];
        if q == u64::MAX {
            return Ok(());
        }
        let q = q as usize;
        let (j, i, kk) = (q / (n * nz), (q / nz) % n, q % nz);
        let at = i as i64 * s.si + j as i64 * s.sj + kk as i64 * s.sk;
        let mut v = [0.0f64];
        cu(self.stream.synchronize())?;
        // SAFETY: an offset inside the caller's checked allocation; a synchronous copy of one
        // value after the stream's work is done.
        cu(unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut v, s.ptr + 8 * at as u64) })?;
        let at = format!("(y={j}, x={i}, z={kk})");
        let why = match sign {
            Sign::NonNegative => strata::problem::refused_beta(v[0], &at),
            _ => strata::problem::refused_value(v[0], sign == Sign::Positive, &at),
        };
        Err(StrataError::invalid(name, why))
    }
}

/// What sign a coefficient field's values must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sign {
    /// Any (ξ).
    Any,
    /// Positive (κ).
    Positive,
    /// Zero or positive (β).
    NonNegative,
}

impl cells::CellArrays {
    /// Makes the entries of level `s` on the device from its [`ResidentCells`] (made by
    /// [`CudaBackend::resident_coefficients`]) into new arrays: the symmetric four-array form,
    /// or the seven arrays where the kernel finds a pair of entries that would differ (always
    /// with advection). `level_cols` are the level's column coefficients as uploaded for it
    /// (used as they are when fp64).
    pub(super) fn from_resident(
        backend: &CudaBackend,
        s: &LevelStencil,
        l: DeviceLayout,
        k: &Kernels,
        r: &ResidentCells,
        level_cols: &DeviceValues,
    ) -> Result<Self> {
        let alloc = || backend.alloc_stored(l.len(), s.storage);
        let mut four = [alloc()?, alloc()?, alloc()?, alloc()?];
        let mut wsb = None;
        fill_entries(backend, s, l, k, r, level_cols, &mut four, &mut wsb)?;
        let up = |v: &[f64]| backend.upload_values(v, s.storage);
        Ok(Self::from_parts(
            four,
            wsb,
            [
                up(&[0.0])?,
                up(&[0.0])?,
                up(&[0.0])?,
                up(&[0.0])?,
                up(&[0.0])?,
                up(&[0.0])?,
            ],
        ))
    }
}

/// The fields of `r`, or why they cannot be read here.
fn level_fields(r: &ResidentCells) -> Result<&LevelFields> {
    r.0.downcast_ref::<LevelFields>().ok_or_else(|| {
        let why = if r.0.is::<Consumed>() {
            "of this level were made into a prepared level and are not kept: set them again"
        } else {
            "are held by another backend"
        };
        StrataError::invalid("coefficients", why)
    })
}

/// Writes the entries of level `s` from its [`ResidentCells`] into `four` (d, e, n, u, arrays of
/// layout `l` holding zeros, or an earlier operator's entries, outside the elements the kernel
/// writes) and, where the operator is not symmetric, into `wsb` (allocated if it is `None`); a
/// symmetric operator leaves `wsb` `None`.
#[allow(clippy::too_many_arguments)]
fn fill_entries(
    backend: &CudaBackend,
    s: &LevelStencil,
    l: DeviceLayout,
    k: &Kernels,
    r: &ResidentCells,
    level_cols: &DeviceValues,
    four: &mut [DeviceValues; 4],
    wsb: &mut Option<[DeviceValues; 3]>,
) -> Result<()> {
    let f = level_fields(r)?;
    if (f.n, f.n, f.nz) != (s.nx(), s.ny(), s.nz) || s.block.n != f.n {
        return Err(StrataError::invalid(
            "coefficients",
            format!(
                "from device arrays are of a {0}x{0}x{1} level; the level is a {2}x{3}x{4} block (one block of the whole panel is supported)",
                f.n, f.nz, s.nx(), s.ny(), s.nz
            ),
        ));
    }
    let v = &s.vertical;
    let vert: Vec<f64> = [&v.d, &v.b, &v.c, &v.vol]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    let stream = &backend.stream;
    // The kernel computes in fp64: an fp32 level's columns are uploaded again in fp64.
    let wide;
    let cols = match level_cols {
        DeviceValues::F64(_) => level_cols,
        DeviceValues::F32(_) => {
            wide = backend.upload_values(column_values(&s.columns), Storage::F64)?;
            &wide
        }
    };
    let vert = cu(stream.clone_htod(&vert))?;
    // With advection: the level's face lengths, flen[f · n + j] for face f of row j (the y
    // faces of column i are flen[f · n + i]), and the radial surface factor of each level's
    // upper face (1 on the box), as strata::stencil's `advection` takes them.
    let tables = if f.advection {
        // (n + 1) n lengths of two arc tangents each: in parallel (4.2 million at n = 2048).
        let nn = f.n;
        let mut flen = vec![0.0; (nn + 1) * nn];
        flen.par_chunks_mut(nn).enumerate().for_each(|(face, row)| {
            for (j, v) in row.iter_mut().enumerate() {
                *v = face_length(f.geometry, nn, face, j);
            }
        });
        let surf: Vec<f64> = (0..s.nz)
            // (The vertical grid has nz + 1 faces: every k + 1 is one.)
            .map(|k| v.faces.get(k + 1).map_or(0.0, |&r| f.geometry.surface(r)))
            .collect();
        Some((
            backend.upload_values(&flen, Storage::F64)?,
            cu(stream.clone_htod(&surf))?,
        ))
    } else {
        None
    };
    let mut asym = cu(stream.alloc_zeros::<i32>(1))?;
    // Tiles of 32 columns × 16 levels of a row (ENTRY_IT, ENTRY_KT), 256 threads.
    let cfg = LaunchConfig {
        grid_dim: (
            (l.nx as u32).div_ceil(32),
            (l.nz as u32).div_ceil(16),
            l.ny as u32,
        ),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let launch = |four: &mut [DeviceValues; 4],
                  three: Option<&mut [DeviceValues; 3]>,
                  asym: &mut CudaSlice<i32>|
     -> Result<()> {
        let null = 0u64;
        let adv = f.advection as i32;
        let mut b = backend.builder(stream, k.get(K::CellEntries));
        b.arg(&l);
        for src in &f.src {
            b.arg(src);
        }
        b.arg(cols).arg(&vert);
        match &tables {
            Some((flen, surf)) => b.arg(flen).arg(surf),
            None => b.arg(&null).arg(&null),
        };
        b.arg(&f.omega2).arg(&adv);
        for a in four.iter_mut() {
            b.arg(a);
        }
        match three {
            Some(t) => {
                for a in t.iter_mut() {
                    b.arg(a);
                }
            }
            None => {
                b.arg(&null).arg(&null).arg(&null);
            }
        }
        b.arg(asym);
        // SAFETY: the sources address this level's n × n × nz fields (checked or allocated
        // so; ξ's are read only with advection); the outputs are arrays of the level's layout,
        // written at interior elements and the e / n halo slots; `cols` and `vert` hold the
        // level's 6·nx·ny and 4·nz values, the tables (n + 1)·n and nz.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    };
    // With advection the operator is not symmetric: the seven arrays at once.
    let symmetric = !f.advection && {
        launch(four, None, &mut asym)?;
        cu(stream.clone_dtoh(&asym))?[0] == 0
    };
    if symmetric {
        *wsb = None;
        return Ok(());
    }
    let three = match wsb {
        Some(t) => t,
        None => {
            let alloc = || backend.alloc_stored(l.len(), s.storage);
            wsb.insert([alloc()?, alloc()?, alloc()?])
        }
    };
    launch(four, Some(three), &mut asym)
}

/// [`strata::backend::Fields::refresh_level`] on the GPU: a level prepared for the same block
/// and precision that has per-cell entries gets the entries of `s`'s device fields written into
/// its arrays (the seven-array form made or dropped as the new operator needs), so that no
/// second set of entry arrays is allocated; its column coefficients are uploaded again only when
/// `s` has others (ω changed). False (and `op` untouched) for anything else.
pub(super) fn refresh(backend: &CudaBackend, op: &mut CudaLevel, s: &LevelStencil) -> Result<bool> {
    let (Some(r), Some(cells)) = (&s.resident, &mut op.cells) else {
        return Ok(false);
    };
    let old = &op.stencil;
    if s.cells.is_some()
        || s.tiles.is_some()
        || s.cross.is_some()
        || cells.cross.1 != 0
        || (old.block, old.nz, old.storage) != (s.block, s.nz, s.storage)
    {
        return Ok(false);
    }
    level_fields(r)?;
    if !Arc::ptr_eq(&old.columns, &s.columns) || !Arc::ptr_eq(&old.vertical, &s.vertical) {
        op.cols = backend.upload_values(column_values(&s.columns), s.storage)?;
        op.vert = backend.upload_values(&vertical_values(s), s.storage)?;
    }
    let (four, wsb) = cells.arrays_mut();
    fill_entries(backend, s, op.layout, &op.k, r, &op.cols, four, wsb)?;
    op.stencil = consumed(s);
    Ok(true)
}

/// `s` as a prepared level keeps it: its coefficient fields, host (`cells`) or device
/// ([`ResidentCells`]), replaced by a mark. The entries are on the device; the host's face
/// factors (four values per cell, 23 GB at 2048² × 128 over five levels) and the caller's
/// borrowed arrays are not kept, and nothing can prepare the level again from fields that are
/// gone or take it for the model problem.
pub(super) fn consumed(s: &LevelStencil) -> LevelStencil {
    let fields = s.cells.is_some() || s.resident.is_some();
    LevelStencil {
        cells: None,
        resident: fields.then(|| ResidentCells(Arc::new(Consumed))),
        ..s.clone()
    }
}
