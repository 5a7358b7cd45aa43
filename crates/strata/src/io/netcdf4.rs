//! NetCDF-4 (HDF5) through the system's libnetcdf and the `netcdf` crate (feature `netcdf4`):
//! what models, xarray and CDO write by default. The fields are stored chunked by rows of
//! columns (`(1, nx, nz)`, a panel's row on the sphere) and compressed with the shuffle filter
//! and deflate where the caller asks ([`super::NcFormat::Netcdf4`]'s level).

use super::netcdf_layout::{Attr, Layout};
use super::netcdf_types::{Attribute, VarInfo};
use netcdf::types::NcVariableType;
use netcdf::AttributeValue;
use std::path::Path;

fn m(e: netcdf::Error) -> String {
    e.to_string()
}

/// Turns off HDF5's printing of its error stack in the calling thread. libnetcdf turns it off
/// in the thread that first opens a file, but a thread-safe HDF5 (Debian's) keeps the setting
/// per thread: without this, a read from another thread (a Python or C caller's, a test's)
/// prints HDF5's internal probes of optional attributes and every error as pages on stderr,
/// beside the one-line error strata gives. HDF5 is loaded with libnetcdf; its function is
/// looked up rather than linked, so that strata links only libnetcdf.
fn quiet_hdf5() {
    type SetAuto = unsafe extern "C" fn(i64, *const libc::c_void, *mut libc::c_void) -> i32;
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"H5Eset_auto2".as_ptr()) };
    if !f.is_null() {
        // SAFETY: `H5Eset_auto2(hid_t estack, H5E_auto2_t func, void *data)` with hid_t =
        // int64_t (HDF5 1.10 and later); H5E_DEFAULT is 0, a null func turns printing off.
        unsafe {
            let set: SetAuto = std::mem::transmute::<*mut libc::c_void, SetAuto>(f);
            set(0, std::ptr::null(), std::ptr::null_mut());
        }
    }
}

/// Writes `layout` as a NetCDF-4 file at `path` (which must not exist); the fields (not the
/// coordinates) deflated at `deflate` (0: stored as they are), with the shuffle filter.
pub(crate) fn write(path: &Path, layout: &Layout, deflate: u8) -> Result<(), String> {
    quiet_hdf5();
    let mut f = netcdf::create_with(path, netcdf::Options::NETCDF4 | netcdf::Options::NOCLOBBER)
        .map_err(m)?;
    for &(dim, len) in &layout.dims {
        f.add_dimension(dim, len).map_err(m)?;
    }
    for (k, a) in &layout.globals {
        let value = match a {
            Attr::Text(s) => AttributeValue::Str(s.clone()),
            Attr::Int(i) => AttributeValue::Int(*i),
            Attr::Real(x) => AttributeValue::Double(*x),
        };
        f.add_attribute(k, value).map_err(m)?;
    }
    for v in &layout.vars {
        let mut var = f.add_variable::<f64>(v.name, &v.dims).map_err(m)?;
        if v.field {
            // One chunk per row of columns: what a reader of a horizontal slab or a column
            // range touches, a few MiB at the largest sizes.
            let chunk: Vec<usize> = v
                .dims
                .iter()
                .map(|d| match *d {
                    "panel" | "y" => 1,
                    other => layout.dim_len(other),
                })
                .collect();
            var.set_chunking(&chunk).map_err(m)?;
            if deflate > 0 {
                var.set_compression(deflate.into(), true).map_err(m)?;
            }
        }
        for (k, a) in &v.attrs {
            var.put_attribute(k, a.as_str()).map_err(m)?;
        }
        var.put_values(&v.values, ..).map_err(m)?;
    }
    f.close().map_err(m)
}

/// An open NetCDF-4 (or any libnetcdf-readable) file.
pub(crate) struct Hdf {
    file: netcdf::File,
}

impl Hdf {
    pub fn open(path: &Path) -> Result<Self, String> {
        quiet_hdf5();
        let file = netcdf::open(path).map_err(|e| {
            format!("not a readable NetCDF-4 file ({e}; the file may be truncated or damaged)")
        })?;
        Ok(Self { file })
    }

    pub fn variables(&self) -> Vec<String> {
        self.file.variables().map(|v| v.name()).collect()
    }

    pub fn var(&self, name: &str) -> Option<VarInfo> {
        let v = self.file.variable(name)?;
        Some(VarInfo {
            dims: v.dimensions().iter().map(|d| d.name()).collect(),
            shape: v.dimensions().iter().map(|d| d.len()).collect(),
            floating: matches!(v.vartype(), NcVariableType::Float(_)),
        })
    }

    pub fn read(&mut self, name: &str) -> Result<Vec<f64>, String> {
        quiet_hdf5();
        let v = self
            .file
            .variable(name)
            .ok_or_else(|| format!("no variable '{name}'"))?;
        if !matches!(v.vartype(), NcVariableType::Float(_)) {
            return Err(format!(
                "variable '{name}' is {:?}, expected a floating-point type",
                v.vartype()
            ));
        }
        // The buffer is reserved here, fallibly: a damaged file's dimensions may claim more
        // than memory holds, which must be an error, not an aborted process.
        let len = v
            .dimensions()
            .iter()
            .try_fold(1usize, |a, d| a.checked_mul(d.len()))
            .ok_or_else(|| format!("variable '{name}' has more values than can be addressed"))?;
        let mut values = Vec::new();
        values.try_reserve_exact(len).map_err(|_| {
            format!("variable '{name}' has {len} values, more than this machine's memory holds")
        })?;
        values.resize(len, 0.0);
        v.get_values_into(&mut values, ..)
            .map_err(|e| format!("variable '{name}' cannot be read ({e})"))?;
        Ok(values)
    }

    pub fn attribute(&self, var: Option<&str>, name: &str) -> Option<Attribute> {
        let value = match var {
            Some(v) => self.file.variable(v)?.attribute_value(name)?.ok()?,
            None => self.file.attribute(name)?.value().ok()?,
        };
        use AttributeValue as A;
        let numbers: Vec<f64> = match value {
            A::Str(s) => return Some(Attribute::Text(s)),
            A::Strs(s) => return Some(Attribute::Text(s.join("\n"))),
            A::Double(x) => vec![x],
            A::Doubles(x) => x,
            A::Float(x) => vec![x.into()],
            A::Floats(x) => x.into_iter().map(f64::from).collect(),
            A::Int(x) => vec![x.into()],
            A::Ints(x) => x.into_iter().map(f64::from).collect(),
            A::Short(x) => vec![x.into()],
            A::Shorts(x) => x.into_iter().map(f64::from).collect(),
            A::Schar(x) => vec![x.into()],
            A::Schars(x) => x.into_iter().map(f64::from).collect(),
            A::Uchar(x) => vec![x.into()],
            A::Uchars(x) => x.into_iter().map(f64::from).collect(),
            A::Ushort(x) => vec![x.into()],
            A::Ushorts(x) => x.into_iter().map(f64::from).collect(),
            A::Uint(x) => vec![x.into()],
            A::Uints(x) => x.into_iter().map(f64::from).collect(),
            A::Longlong(x) => vec![x as f64],
            A::Longlongs(x) => x.into_iter().map(|v| v as f64).collect(),
            A::Ulonglong(x) => vec![x as f64],
            A::Ulonglongs(x) => x.into_iter().map(|v| v as f64).collect(),
        };
        Some(Attribute::Numbers(numbers))
    }
}
