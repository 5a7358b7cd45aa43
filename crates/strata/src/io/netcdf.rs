//! NetCDF files of fields on the fine grid: NetCDF-3 (64-bit offset) through the pure-Rust
//! `netcdf3` crate in every build, NetCDF-4 (HDF5) through libnetcdf with the `netcdf4` feature;
//! read by what the file is ([`Dataset`]), written as the caller asks ([`NcFormat`]).
//!
//! Variables are stored with dimensions `(y, x, z)`, z fastest: exactly the host layout
//! `u[(j * nx + i) * nz + k]`, so no transposition is needed. Coordinates `x`, `y` (gnomonic or
//! Cartesian, dimensionless) and `z` (radius in Earth radii on the panel, height on the box) carry
//! units and long names.

use super::dataset::Dataset;
use super::netcdf_layout::layout;
use super::netcdf_types::{NcFormat, OutputField};
use crate::error::{Result, StrataError};
use crate::grid::Block;
use crate::problem::{Coefficients, ProblemParams};
use std::path::Path;

/// The grid a file's fields live on.
#[derive(Debug, Clone)]
pub struct FieldGrid {
    /// The problem (geometry, sizes, parameters), recorded as global attributes.
    pub params: ProblemParams,
}

fn nc_err(path: &Path, msg: impl std::fmt::Display) -> StrataError {
    StrataError::NetCdf {
        path: path.to_path_buf(),
        msg: msg.to_string(),
    }
}

/// Whether [`write_fields`] may replace an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overwrite {
    /// Refuse when the file exists (the default: nothing is lost).
    #[default]
    Refuse,
    /// Replace it; the new file is written beside it and renamed over it only when complete.
    Replace,
}

/// Checks before any work is done that `path` can be written: its folder exists and takes new
/// files, it is not a folder, and it does not exist unless `overwrite` allows replacing it.
/// `what` names the parameter in the error (e.g. `"output"`).
pub fn check_writable(path: &Path, overwrite: Overwrite, what: &str) -> Result<()> {
    let e = |msg: String| StrataError::invalid(what, format!("{}: {msg}", path.display()));
    if path.is_dir() {
        return Err(e("is a folder".into()));
    }
    if path.exists() && overwrite == Overwrite::Refuse {
        return Err(e("exists; not overwriting it (--force replaces it)".into()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(e(format!("the folder {} does not exist", dir.display())));
    }
    // Permissions alone do not say it (root, read-only mounts): create and remove a probe file.
    let probe = dir.join(format!(".strata-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(err) => Err(e(format!(
            "cannot create files in {} ({err})",
            dir.display()
        ))),
    }
}

/// Writes fields with CF-1.8 attributes in the format [`NcFormat::default_output`] (NetCDF-4
/// where the build has it): see [`write_fields_as`].
pub fn write_fields(
    path: &Path,
    grid: &FieldGrid,
    fields: &[OutputField],
    overwrite: Overwrite,
) -> Result<()> {
    write_fields_as(path, grid, fields, overwrite, NcFormat::default_output())
}

/// Writes fields with CF-1.8 attributes in `format`: coordinates `x`, `y`, `z` and the vertical
/// faces `z_face`, every problem parameter as a global attribute. The file is written under a
/// temporary name beside `path` and renamed when complete, so an interrupted write leaves no
/// partial file and, with [`Overwrite::Replace`], the old file stays until the new one is whole.
pub fn write_fields_as(
    path: &Path,
    grid: &FieldGrid,
    fields: &[OutputField],
    overwrite: Overwrite,
    format: NcFormat,
) -> Result<()> {
    let p = &grid.params;
    let (n, nz) = (p.n, p.nz);
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    if overwrite == Overwrite::Refuse && path.exists() {
        return Err(e(&"exists; not overwriting it"));
    }
    let panels = p.panels();
    for f in fields {
        if f.values.len() != panels * n * n * nz {
            return Err(e(&format!(
                "field {} has {} values, the grid {panels}x{n}x{n}x{nz} needs {}",
                f.name,
                f.values.len(),
                panels * n * n * nz
            )));
        }
    }
    let layout = layout(p, fields);
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{}.part-{}",
        name.unwrap_or_else(|| "strata.nc".into()),
        std::process::id()
    ));
    let written = match format {
        NcFormat::Classic => super::netcdf_classic::write(&tmp, &layout),
        NcFormat::Netcdf4 { deflate } => write_netcdf4(&tmp, &layout, deflate),
    };
    if let Err(m) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e(&m));
    }
    if overwrite == Overwrite::Refuse && path.exists() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e(&"appeared while writing; not overwriting it"));
    }
    std::fs::rename(&tmp, path).map_err(|m| {
        let _ = std::fs::remove_file(&tmp);
        e(&format!("cannot move the finished file into place ({m})"))
    })
}

#[cfg(feature = "netcdf4")]
fn write_netcdf4(
    tmp: &Path,
    layout: &super::netcdf_layout::Layout,
    deflate: u8,
) -> std::result::Result<(), String> {
    if deflate > 9 {
        return Err(format!("deflate level {deflate}: levels are 0 to 9"));
    }
    super::netcdf4::write(tmp, layout, deflate)
}

#[cfg(not(feature = "netcdf4"))]
fn write_netcdf4(
    _: &Path,
    _: &super::netcdf_layout::Layout,
    _: u8,
) -> std::result::Result<(), String> {
    Err(
        "this strata was built without NetCDF-4 (the `netcdf4` feature, which needs \
         libnetcdf): write NetCDF-3 (`--format netcdf3`) or build with `--features netcdf4`"
            .into(),
    )
}

/// Reads a right-hand side variable of shape `(y, x, z) = (n, n, nz)` (f64 or f32), checking the
/// shape and that every value is finite.
pub fn read_rhs(path: &Path, var: &str, n: usize, nz: usize) -> Result<Vec<f64>> {
    read_panels(path, var, 1, n, nz)
}

/// [`read_rhs`] of a field of `panels` panels: with one panel of shape `(y, x, z) = (n, n, nz)`,
/// with six (the sphere, as strata writes it) of shape `(panel, y, x, z) = (6, n, n, nz)`.
pub fn read_panels(path: &Path, var: &str, panels: usize, n: usize, nz: usize) -> Result<Vec<f64>> {
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    let mut ds = Dataset::open(path)?;
    let Some(v) = ds.var(var) else {
        return Err(e(&format!(
            "no variable '{var}' (variables: {})",
            ds.variables().join(", ")
        )));
    };
    let (want, axes): (Vec<usize>, &str) = if panels == 1 {
        (vec![n, n, nz], "y, x, z")
    } else {
        (vec![panels, n, n, nz], "panel, y, x, z")
    };
    if v.shape != want {
        return Err(e(&format!(
            "variable '{var}' has shape {:?} ({}), the problem needs {want:?} ({axes})",
            v.shape,
            v.dims.join(", ")
        )));
    }
    let data = ds.read(var)?;
    if let Some(pos) = data.iter().position(|x| !x.is_finite()) {
        let q = pos % (n * n * nz);
        let (j, i, k) = (q / (n * nz), (q / nz) % n, q % nz);
        let panel = if panels > 1 {
            format!("panel={}, ", pos / (n * n * nz))
        } else {
            String::new()
        };
        return Err(e(&format!(
            "variable '{var}' has a non-finite value ({}) at ({panel}y={j}, x={i}, z={k})",
            data[pos]
        )));
    }
    Ok(data)
}

/// Reads the coefficient fields of the general operator from a NetCDF file: variables `kx`, `ky`,
/// `kz`, `beta` and the advection vector `xi_x`, `xi_y`, `xi_z`, of shape `(y, x, z) = (n, n, nz)`
/// (f64 or f32); a missing variable takes the model problem's value (1 for kx, ky, kz; `delta`
/// for β; 0 for a ξ component, and no advection at all when none is given). At least one must be
/// present; kx, ky, kz, β must be finite and positive, ξ finite.
pub fn read_coefficients(path: &Path, n: usize, nz: usize, delta: f64) -> Result<Coefficients> {
    read_coefficients_panels(path, 1, n, nz, delta)
}

/// [`read_coefficients`] for `panels` panels (6: the sphere, each variable of shape
/// `(panel, y, x, z)`, ξ_x and ξ_y along each panel's own axes).
pub fn read_coefficients_panels(
    path: &Path,
    panels: usize,
    n: usize,
    nz: usize,
    delta: f64,
) -> Result<Coefficients> {
    let [kx, ky, kz, beta, xx, xy, xz] = read_given(path, panels, n, nz, |v| v)?;
    let len = panels * n * n * nz;
    let mut c = Coefficients::constant_panels(panels, n, nz, delta);
    for (field, given) in [
        (&mut c.kx, kx),
        (&mut c.ky, ky),
        (&mut c.kz, kz),
        (&mut c.beta, beta),
    ] {
        if let Some(v) = given {
            *field = v;
        }
    }
    if xx.is_some() || xy.is_some() || xz.is_some() {
        let zero = || vec![0.0; len];
        c.xi = Some([
            xx.unwrap_or_else(zero),
            xy.unwrap_or_else(zero),
            xz.unwrap_or_else(zero),
        ]);
    }
    c.validate().map_err(|err| in_file(path, err))?;
    Ok(c)
}

/// [`read_coefficients`] of one rank's `block` of a panel or box of `n × n` columns (what
/// [`Coefficients::for_block`] takes, its ring to be filled by the ranks): each variable is
/// read whole, one at a time, and only the block's columns kept, so a rank holds at most one
/// whole field beside its block's. The whole variables are checked to be finite (each rank
/// reads them alike); the block's values to be positive where they must be.
pub fn read_coefficients_block(
    path: &Path,
    n: usize,
    nz: usize,
    delta: f64,
    block: Block,
) -> Result<Coefficients> {
    if block.panel.is_some() || block.n != n || block.i0 + block.nx > n || block.j0 + block.ny > n {
        return Err(StrataError::invalid(
            "coefficients",
            format!("a block of {block:?} is read from one panel's or box's fields of {n}x{n}"),
        ));
    }
    let given = read_given(path, 1, n, nz, |v| block.cut(&v, nz))?;
    let c = Coefficients::for_block(block, nz, delta, given.each_ref().map(|g| g.as_deref()))?;
    c.validate().map_err(|err| in_file(path, err))?;
    Ok(c)
}

/// The seven coefficient variables ([`Coefficients::FIELD_NAMES`]) that `path` has, each read
/// whole (shape and finiteness checked) and passed through `keep` before the next is read; an
/// error if it has none of them.
fn read_given(
    path: &Path,
    panels: usize,
    n: usize,
    nz: usize,
    keep: impl Fn(Vec<f64>) -> Vec<f64>,
) -> Result<[Option<Vec<f64>>; 7]> {
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    let names = Dataset::open(path)?.variables();
    let mut given: [Option<Vec<f64>>; 7] = Default::default();
    for (slot, name) in given.iter_mut().zip(Coefficients::FIELD_NAMES) {
        if names.iter().any(|v| v == name) {
            *slot = Some(keep(read_panels(path, name, panels, n, nz)?));
        }
    }
    if given.iter().all(Option::is_none) {
        return Err(e(&format!(
            "none of the variables kx, ky, kz, beta, xi_x, xi_y, xi_z (variables: {})",
            names.join(", ")
        )));
    }
    Ok(given)
}

/// A coefficient field's validation error as the file's: "variable 'kx' ...".
fn in_file(path: &Path, err: StrataError) -> StrataError {
    match err {
        StrataError::InvalidParameter { name, msg } => {
            nc_err(path, format!("variable '{name}' {msg}"))
        }
        other => other,
    }
}

/// The variable `orography` of `path`, the ground height of every column, of shape (y, x) =
/// (n, n), or (panel, y, x) = (6, n, n) on the sphere (`panels` = 6); checked like the
/// problem's own ([`crate::problem::Orography::validate`] against the model top `top`), the
/// error naming the file, the variable and the column.
pub fn read_orography(
    path: &Path,
    panels: usize,
    n: usize,
    top: f64,
) -> Result<crate::problem::Orography> {
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    let mut ds = Dataset::open(path)?;
    let Some(v) = ds.var("orography") else {
        return Err(e(&format!(
            "no variable 'orography' (variables: {})",
            ds.variables().join(", ")
        )));
    };
    let (want, dims) = if panels == 1 {
        (vec![n, n], "(y, x)")
    } else {
        (vec![panels, n, n], "(panel, y, x)")
    };
    if v.shape != want {
        return Err(e(&format!(
            "variable 'orography' has shape {:?} ({}), the problem needs {want:?} {dims}",
            v.shape,
            v.dims.join(", ")
        )));
    }
    let o = crate::problem::Orography::with_panels(panels, n, ds.read("orography")?)?;
    o.validate(top).map_err(|err| match err {
        StrataError::InvalidParameter { msg, .. } => e(&format!("variable 'orography' {msg}")),
        other => other,
    })?;
    Ok(o)
}

/// Reads any floating-point variable with its dimension sizes (as stored, slowest first).
pub fn read_field(path: &Path, var: &str) -> Result<(Vec<f64>, Vec<usize>)> {
    let mut ds = Dataset::open(path)?;
    let shape = ds.var(var).map(|v| v.shape).unwrap_or_default();
    let data = ds.read(var)?;
    Ok((data, shape))
}
