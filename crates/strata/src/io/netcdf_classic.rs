//! NetCDF-3 (64-bit offset) through the pure-Rust `netcdf3` crate: the format every build reads
//! and writes, with no system library. The header is walked and bounded
//! ([`super::netcdf_header`]) before the crate parses it.

use super::netcdf_layout::{Attr, Layout};
use super::netcdf_types::{Attribute, VarInfo};
use netcdf3::error::ReadError;
use netcdf3::{DataSet, DataType, FileReader, FileWriter, Version};
use std::cell::RefCell;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;
use std::rc::Rc;

/// Writes `layout` as a NetCDF-3 64-bit-offset file at `path` (which must not exist).
pub(crate) fn write(path: &Path, layout: &Layout) -> Result<(), String> {
    let m = |x: netcdf3::error::InvalidDataSet| format!("{x:?}");
    let mut ds = DataSet::new();
    for &(dim, len) in &layout.dims {
        ds.add_fixed_dim(dim, len).map_err(m)?;
    }
    for v in &layout.vars {
        ds.add_var_f64(v.name, &v.dims).map_err(m)?;
        for (k, a) in &v.attrs {
            ds.add_var_attr_string(v.name, k, a).map_err(m)?;
        }
    }
    for (k, a) in &layout.globals {
        match a {
            Attr::Text(s) => ds.add_global_attr_string(k, s),
            Attr::Int(i) => ds.add_global_attr_i32(k, vec![*i]),
            Attr::Real(x) => ds.add_global_attr_f64(k, vec![*x]),
        }
        .map_err(m)?;
    }
    let e = |x: netcdf3::error::WriteError| format!("{x:?}");
    // The crate's own file writes each value with a system call of its own (a 1024² × 128
    // solution took minutes): it writes through a buffer here instead, flushed below so that a
    // failed write is an error rather than lost when the buffer is dropped.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|x| x.to_string())?;
    let buffered = Shared(Rc::new(RefCell::new(BufWriter::with_capacity(
        1 << 20,
        file,
    ))));
    let name = path.to_string_lossy();
    let mut w = FileWriter::open_seek_write(&name, Box::new(buffered.clone())).map_err(e)?;
    w.set_def(&ds, Version::Offset64Bit, 0).map_err(e)?;
    for v in &layout.vars {
        w.write_var_f64(v.name, &v.values).map_err(e)?;
    }
    w.close().map_err(e)?;
    let flushed = buffered.0.borrow_mut().flush();
    flushed.map_err(|x| x.to_string())
}

/// A buffered file shared with the `netcdf3` writer, which owns what it writes through.
#[derive(Clone)]
struct Shared(Rc<RefCell<BufWriter<std::fs::File>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

impl Seek for Shared {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.0.borrow_mut().seek(pos)
    }
}

/// An open NetCDF-3 file.
pub(crate) struct Classic {
    reader: FileReader,
}

impl Classic {
    /// Opens `path`, its header checked first.
    pub fn open(path: &Path) -> Result<Self, String> {
        super::netcdf_header::check(path)?;
        let reader = FileReader::open(path).map_err(|e| read_error(&e))?;
        Ok(Self { reader })
    }

    pub fn variables(&self) -> Vec<String> {
        self.reader.data_set().get_var_names()
    }

    pub fn var(&self, name: &str) -> Option<VarInfo> {
        let v = self.reader.data_set().get_var(name)?;
        Some(VarInfo {
            dims: v.dim_names(),
            shape: v.get_dims().iter().map(|d| d.size()).collect(),
            floating: matches!(v.data_type(), DataType::F32 | DataType::F64),
        })
    }

    pub fn read(&mut self, name: &str) -> Result<Vec<f64>, String> {
        match self.reader.read_var(name).map_err(|e| read_error(&e))? {
            netcdf3::DataVector::F64(d) => Ok(d),
            netcdf3::DataVector::F32(d) => Ok(d.into_iter().map(f64::from).collect()),
            other => Err(format!(
                "variable '{name}' is {:?}, expected a floating-point type",
                other.data_type()
            )),
        }
    }

    pub fn attribute(&self, var: Option<&str>, name: &str) -> Option<Attribute> {
        let ds = self.reader.data_set();
        let a = match var {
            Some(v) => ds.get_var_attr(v, name)?,
            None => ds.get_global_attr(name)?,
        };
        if let Some(s) = a.get_as_string() {
            return Some(Attribute::Text(s));
        }
        let numbers: Vec<f64> = if let Some(x) = a.get_f64() {
            x.to_vec()
        } else if let Some(x) = a.get_f32() {
            x.iter().map(|&v| v.into()).collect()
        } else if let Some(x) = a.get_i32() {
            x.iter().map(|&v| v.into()).collect()
        } else if let Some(x) = a.get_i16() {
            x.iter().map(|&v| v.into()).collect()
        } else {
            a.get_i8()?.iter().map(|&v| v.into()).collect()
        };
        Some(Attribute::Numbers(numbers))
    }
}

/// A sentence for an error of the NetCDF-3 reader.
fn read_error(err: &ReadError) -> String {
    match err {
        ReadError::IOErrorKind(std::io::ErrorKind::UnexpectedEof) => {
            "the file is truncated: it ends before the data its header describes".into()
        }
        e if e.header_is_incomplete() => {
            "the file is truncated or not NetCDF: its header is incomplete".into()
        }
        ReadError::ParseHeader(_) => "not a NetCDF-3 file (its header cannot be read)".into(),
        ReadError::IOErrorKind(k) => format!("cannot be read ({k})"),
        other => format!("cannot be read ({other:?})"),
    }
}
