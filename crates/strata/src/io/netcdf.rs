//! NetCDF-3 (64-bit offset) files of fields on the fine grid, through the pure-Rust `netcdf3`
//! crate, so that the default build needs no system library.
//!
//! Variables are stored with dimensions `(y, x, z)`, z fastest: exactly the host layout
//! `u[(j * nx + i) * nz + k]`, so no transposition is needed. Coordinates `x`, `y` (gnomonic or
//! Cartesian, dimensionless) and `z` (radius in Earth radii on the panel, height on the box) carry
//! units and long names.

use crate::error::{Result, StrataError};
use crate::problem::{cell_centre, Geometry, ProblemParams, VerticalGrid};
use netcdf3::{DataSet, FileReader, FileWriter, Version};
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

/// Writes fields (name, long name, values in host layout) with coordinates and the problem's
/// parameters as global attributes.
pub fn write_fields(path: &Path, grid: &FieldGrid, fields: &[(&str, &str, &[f64])]) -> Result<()> {
    let p = &grid.params;
    let (n, nz) = (p.n, p.nz);
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    let mut ds = DataSet::new();
    for (dim, len) in [("y", n), ("x", n), ("z", nz)] {
        ds.add_fixed_dim(dim, len)
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    let (zname, zunits) = match p.geometry {
        Geometry::Panel => ("radius of the cell centre", "earth_radius"),
        Geometry::Box => ("height of the cell centre", "1"),
    };
    let hunits = match p.geometry {
        Geometry::Panel => "1 (gnomonic coordinate, tan of the central angle)",
        Geometry::Box => "1",
    };
    let coords = [
        ("x", "x coordinate of the cell centre", hunits),
        ("y", "y coordinate of the cell centre", hunits),
        ("z", zname, zunits),
    ];
    for (name, long, units) in coords {
        ds.add_var_f64(name, &[name])
            .map_err(|m| e(&format!("{m:?}")))?;
        ds.add_var_attr_string(name, "long_name", long)
            .map_err(|m| e(&format!("{m:?}")))?;
        ds.add_var_attr_string(name, "units", units)
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    for (name, long, values) in fields {
        if values.len() != n * n * nz {
            return Err(e(&format!(
                "field {name} has {} values, the grid {n}x{n}x{nz} needs {}",
                values.len(),
                n * n * nz
            )));
        }
        ds.add_var_f64(name, &["y", "x", "z"])
            .map_err(|m| e(&format!("{m:?}")))?;
        ds.add_var_attr_string(name, "long_name", long)
            .map_err(|m| e(&format!("{m:?}")))?;
        ds.add_var_attr_string(name, "units", "volume-integrated (cell volume times value)")
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    let geometry = match p.geometry {
        Geometry::Panel => "panel",
        Geometry::Box => "box",
    };
    let attrs = [
        ("geometry", geometry.to_string()),
        ("title", "strata: anisotropic elliptic solve".to_string()),
    ];
    for (k, v) in attrs {
        ds.add_global_attr_string(k, v)
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    for (k, v) in [
        ("cfl", p.cfl),
        ("lambda", p.lambda),
        ("height", p.height),
        ("delta", p.delta),
        ("omega", p.omega()),
    ] {
        ds.add_global_attr_f64(k, vec![v])
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    let vert = VerticalGrid::new(p);
    let xs: Vec<f64> = (0..n).map(|i| cell_centre(p.geometry, n, i, 0).0).collect();
    let mut w = FileWriter::create_new(path).map_err(|m| e(&format!("{m:?}")))?;
    w.set_def(&ds, Version::Offset64Bit, 0)
        .map_err(|m| e(&format!("{m:?}")))?;
    for (name, data) in [("x", &xs), ("y", &xs), ("z", &vert.centres)] {
        w.write_var_f64(name, data)
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    for (name, _, values) in fields {
        w.write_var_f64(name, values)
            .map_err(|m| e(&format!("{m:?}")))?;
    }
    w.close().map_err(|m| e(&format!("{m:?}")))
}

/// Reads a right-hand side variable of shape `(y, x, z) = (n, n, nz)` (f64 or f32), checking the
/// shape and that every value is finite.
pub fn read_rhs(path: &Path, var: &str, n: usize, nz: usize) -> Result<Vec<f64>> {
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    if !path.exists() {
        return Err(e(&"no such file"));
    }
    let mut r = FileReader::open(path).map_err(|m| e(&format!("not a NetCDF-3 file ({m:?})")))?;
    let ds = r.data_set();
    let Some(v) = ds.get_var(var) else {
        return Err(e(&format!(
            "no variable '{var}' (variables: {})",
            ds.get_var_names().join(", ")
        )));
    };
    let shape: Vec<usize> = v.get_dims().iter().map(|d| d.size()).collect();
    if shape != [n, n, nz] {
        return Err(e(&format!(
            "variable '{var}' has shape {shape:?} ({}), the problem needs [{n}, {n}, {nz}] (y, x, z)",
            v.dim_names().join(", ")
        )));
    }
    let data: Vec<f64> = match r.read_var(var).map_err(|m| e(&format!("{m:?}")))? {
        netcdf3::DataVector::F64(d) => d,
        netcdf3::DataVector::F32(d) => d.into_iter().map(f64::from).collect(),
        other => {
            return Err(e(&format!(
                "variable '{var}' is {:?}, expected a floating-point type",
                other.data_type()
            )))
        }
    };
    if let Some(pos) = data.iter().position(|x| !x.is_finite()) {
        let (j, i, k) = (pos / (n * nz), (pos / nz) % n, pos % nz);
        return Err(e(&format!(
            "variable '{var}' has a non-finite value ({}) at (y={j}, x={i}, z={k})",
            data[pos]
        )));
    }
    Ok(data)
}

/// Reads any floating-point variable with its dimension sizes (as stored, slowest first).
pub fn read_field(path: &Path, var: &str) -> Result<(Vec<f64>, Vec<usize>)> {
    let e = |m: &dyn std::fmt::Display| nc_err(path, m);
    if !path.exists() {
        return Err(e(&"no such file"));
    }
    let mut r = FileReader::open(path).map_err(|m| e(&format!("not a NetCDF-3 file ({m:?})")))?;
    let shape: Vec<usize> = match r.data_set().get_var(var) {
        Some(v) => v.get_dims().iter().map(|d| d.size()).collect(),
        None => return Err(e(&format!("no variable '{var}'"))),
    };
    let data = match r.read_var(var).map_err(|m| e(&format!("{m:?}")))? {
        netcdf3::DataVector::F64(d) => d,
        netcdf3::DataVector::F32(d) => d.into_iter().map(f64::from).collect(),
        _ => return Err(e(&format!("variable '{var}' is not floating-point"))),
    };
    Ok((data, shape))
}
