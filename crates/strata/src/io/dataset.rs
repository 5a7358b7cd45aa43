//! One reader over both NetCDF formats: a file is opened by what its first bytes say it is
//! (`CDF` NetCDF-3, `\x89HDF` NetCDF-4), so every reader of strata takes either.

use super::netcdf_classic::Classic;
use super::netcdf_types::{Attribute, NcFormat, VarInfo};
use crate::error::{Result, StrataError};
use std::path::{Path, PathBuf};

enum Inner {
    Classic(Box<Classic>),
    #[cfg(feature = "netcdf4")]
    Hdf(super::netcdf4::Hdf),
}

/// A NetCDF file open for reading, NetCDF-3 or NetCDF-4.
pub struct Dataset {
    path: PathBuf,
    inner: Inner,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset")
            .field("path", &self.path)
            .field("format", &self.format().name())
            .finish()
    }
}

fn nc_err(path: &Path, msg: impl std::fmt::Display) -> StrataError {
    StrataError::NetCdf {
        path: path.to_path_buf(),
        msg: msg.to_string(),
    }
}

/// What the first bytes of a file say it is.
fn magic(path: &Path) -> std::io::Result<[u8; 8]> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut m = [0u8; 8];
    let mut got = 0;
    while got < m.len() {
        match f.read(&mut m[got..])? {
            0 => break,
            k => got += k,
        }
    }
    Ok(m)
}

const HDF5_MAGIC: [u8; 8] = *b"\x89HDF\r\n\x1a\n";

impl Dataset {
    /// Opens `path` for reading; an error naming the file and, in a sentence, what is wrong
    /// with it (missing, not NetCDF, truncated, NetCDF-4 in a build without it).
    pub fn open(path: &Path) -> Result<Self> {
        let e = |m: &dyn std::fmt::Display| nc_err(path, m);
        if !path.exists() {
            return Err(e(&"no such file"));
        }
        if path.is_dir() {
            return Err(e(&"is a folder, not a NetCDF file"));
        }
        let head = magic(path).map_err(|err| e(&format!("cannot be read ({err})")))?;
        let inner = if head[..3] == *b"CDF" {
            Inner::Classic(Box::new(Classic::open(path).map_err(|m| e(&m))?))
        } else if head == HDF5_MAGIC {
            Self::open_hdf(path)?
        } else {
            return Err(e(
                &"not NetCDF (neither NetCDF-3 nor NetCDF-4/HDF5: its first bytes \
                 are neither `CDF` nor the HDF5 signature)",
            ));
        };
        Ok(Self {
            path: path.to_path_buf(),
            inner,
        })
    }

    #[cfg(feature = "netcdf4")]
    fn open_hdf(path: &Path) -> Result<Inner> {
        super::netcdf4::Hdf::open(path)
            .map(Inner::Hdf)
            .map_err(|m| nc_err(path, m))
    }

    #[cfg(not(feature = "netcdf4"))]
    fn open_hdf(path: &Path) -> Result<Inner> {
        Err(nc_err(
            path,
            "a NetCDF-4 (HDF5) file, and this strata was built without NetCDF-4: build it \
             with `--features netcdf4` (needs libnetcdf, e.g. Debian's libnetcdf-dev; \
             scripts/run and scripts/install do when it is there), or convert the file with \
             `nccopy -k 64-bit-offset IN OUT`",
        ))
    }

    /// The file's format (a NetCDF-4 file reports deflate 0: its filters are per variable).
    pub fn format(&self) -> NcFormat {
        match &self.inner {
            Inner::Classic(_) => NcFormat::Classic,
            #[cfg(feature = "netcdf4")]
            Inner::Hdf(_) => NcFormat::Netcdf4 { deflate: 0 },
        }
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names of its variables (of the root group).
    pub fn variables(&self) -> Vec<String> {
        match &self.inner {
            Inner::Classic(c) => c.variables(),
            #[cfg(feature = "netcdf4")]
            Inner::Hdf(h) => h.variables(),
        }
    }

    /// A variable's dimensions and type; `None` when it has no such variable.
    pub fn var(&self, name: &str) -> Option<VarInfo> {
        match &self.inner {
            Inner::Classic(c) => c.var(name),
            #[cfg(feature = "netcdf4")]
            Inner::Hdf(h) => h.var(name),
        }
    }

    /// A floating-point variable's values as f64 (f32 widened), slowest dimension first.
    pub fn read(&mut self, name: &str) -> Result<Vec<f64>> {
        if self.var(name).is_none() {
            return Err(nc_err(
                &self.path,
                format!(
                    "no variable '{name}' (variables: {})",
                    self.variables().join(", ")
                ),
            ));
        }
        let r = match &mut self.inner {
            Inner::Classic(c) => c.read(name),
            #[cfg(feature = "netcdf4")]
            Inner::Hdf(h) => h.read(name),
        };
        r.map_err(|m| nc_err(&self.path, m))
    }

    /// A global attribute (`var` `None`) or an attribute of variable `var`.
    pub fn attribute(&self, var: Option<&str>, name: &str) -> Option<Attribute> {
        match &self.inner {
            Inner::Classic(c) => c.attribute(var, name),
            #[cfg(feature = "netcdf4")]
            Inner::Hdf(h) => h.attribute(var, name),
        }
    }

    /// A text attribute; `None` where it is missing or not text.
    pub fn text(&self, var: Option<&str>, name: &str) -> Option<String> {
        match self.attribute(var, name)? {
            Attribute::Text(s) => Some(s),
            Attribute::Numbers(_) => None,
        }
    }

    /// The first value of a numeric attribute; `None` where it is missing, empty or text.
    pub fn number(&self, var: Option<&str>, name: &str) -> Option<f64> {
        match self.attribute(var, name)? {
            Attribute::Numbers(v) => v.first().copied(),
            Attribute::Text(_) => None,
        }
    }
}
