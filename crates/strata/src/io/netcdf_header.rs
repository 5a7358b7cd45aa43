//! A walk over a NetCDF-3 header (classic, 64-bit offset and 64-bit data formats) that checks
//! every count it holds against the bytes the file has, before the `netcdf3` reader parses it:
//! that reader reserves memory for the counts it reads (`Vec::with_capacity`), so a damaged or
//! hostile header claiming 2³¹ dimensions would abort the process on a failed allocation
//! instead of giving an error. The walk allocates nothing that a count chooses.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The tags of the header's three lists (NetCDF classic format specification).
const DIMENSION: u32 = 0x0A;
const VARIABLE: u32 = 0x0B;
const ATTRIBUTE: u32 = 0x0C;

/// The header's bytes, read from the file as the walk needs them.
struct Header {
    file: std::fs::File,
    /// The file's length: no count may describe more than this.
    len: u64,
    buf: Vec<u8>,
    /// The walk's position.
    at: u64,
    /// 1 classic, 2 64-bit offset, 5 64-bit data.
    version: u8,
}

impl Header {
    /// Makes sure the bytes `at .. at + n` are in the buffer; an error where the file ends first.
    fn need(&mut self, n: u64) -> Result<(), String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                "the file is truncated or not NetCDF: its header runs past the end of the file"
                    .to_string()
            })?;
        if end as usize > self.buf.len() {
            // Read at least twice what is there (a header is read in a few steps).
            let want = (end as usize)
                .max(2 * self.buf.len())
                .min(self.len as usize);
            let start = self.buf.len();
            self.buf.resize(want, 0);
            self.file
                .seek(SeekFrom::Start(start as u64))
                .and_then(|_| self.file.read_exact(&mut self.buf[start..]))
                .map_err(|e| format!("cannot be read ({e})"))?;
        }
        Ok(())
    }

    fn u32(&mut self) -> Result<u64, String> {
        self.need(4)?;
        let a = self.at as usize;
        self.at += 4;
        Ok(u32::from_be_bytes(self.buf[a..a + 4].try_into().expect("4 bytes")) as u64)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.need(8)?;
        let a = self.at as usize;
        self.at += 8;
        Ok(u64::from_be_bytes(
            self.buf[a..a + 8].try_into().expect("8 bytes"),
        ))
    }

    /// A count (NON_NEG: 4 bytes, 8 in the 64-bit data format).
    fn count(&mut self) -> Result<u64, String> {
        if self.version == 5 {
            self.u64()
        } else {
            self.u32()
        }
    }

    /// Checks that `count` items of at least `each` bytes fit in the rest of the file.
    fn fits(&self, count: u64, each: u64, what: &str) -> Result<(), String> {
        let rest = self.len - self.at;
        if count.saturating_mul(each) > rest {
            return Err(format!(
                "the file is truncated or damaged: its header claims {count} {what}, more than its {} bytes can hold",
                self.len
            ));
        }
        Ok(())
    }

    /// Steps over `n` bytes padded to a multiple of 4.
    fn skip_padded(&mut self, n: u64) -> Result<(), String> {
        let padded = n
            .checked_add(3)
            .map(|v| v & !3)
            .ok_or("a header length overflows")?;
        self.need(padded)?;
        self.at += padded;
        Ok(())
    }

    /// A name: its length, then its bytes padded.
    fn name(&mut self) -> Result<(), String> {
        let n = self.count()?;
        self.fits(n, 1, "name bytes")?;
        self.skip_padded(n)
    }

    /// A list's tag and count; `None` for an absent list.
    fn list(&mut self, tag: u32, what: &str, each: u64) -> Result<Option<u64>, String> {
        let t = self.u32()?;
        let n = self.count()?;
        if t == 0 && n == 0 {
            return Ok(None);
        }
        if t != tag as u64 {
            return Err(format!(
                "not a valid NetCDF file: its header has tag {t:#x} where the {what} list belongs"
            ));
        }
        self.fits(n, each, what)?;
        Ok(Some(n))
    }

    /// An attribute list.
    fn attributes(&mut self) -> Result<(), String> {
        let n = self.list(ATTRIBUTE, "attributes", 12)?.unwrap_or(0);
        for _ in 0..n {
            self.name()?;
            let size = type_size(self.u32()?)?;
            let values = self.count()?;
            self.fits(values, size, "attribute values")?;
            self.skip_padded(values * size)?;
        }
        Ok(())
    }
}

/// Bytes per value of an `nc_type`.
fn type_size(t: u64) -> Result<u64, String> {
    Ok(match t {
        1 | 2 | 7 => 1,   // byte, char, ubyte
        3 | 8 => 2,       // short, ushort
        4 | 5 | 9 => 4,   // int, float, uint
        6 | 10 | 11 => 8, // double, int64, uint64
        _ => {
            return Err(format!(
                "not a valid NetCDF file: its header names data type {t}"
            ))
        }
    })
}

/// Checks the header of the NetCDF-3 file at `path`: every count it holds fits in the file.
/// An error (a sentence to follow the file's name) where it does not; files that are not
/// NetCDF-3 at all pass, for the reader to name.
pub(crate) fn check(path: &Path) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be read ({e})"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?
        .len();
    let mut h = Header {
        file,
        len,
        buf: Vec::new(),
        at: 0,
        version: 0,
    };
    if len < 4 {
        return Ok(());
    }
    h.need(4)?;
    if &h.buf[0..3] != b"CDF" || ![1, 2, 5].contains(&h.buf[3]) {
        return Ok(());
    }
    h.version = h.buf[3];
    h.at = 4;
    let _records = h.count()?;
    let dims = h.list(DIMENSION, "dimensions", 8)?.unwrap_or(0);
    for _ in 0..dims {
        h.name()?;
        h.count()?;
    }
    h.attributes()?;
    let vars = h.list(VARIABLE, "variables", 20)?.unwrap_or(0);
    let id = if h.version == 5 { 8 } else { 4 };
    for _ in 0..vars {
        h.name()?;
        let ids = h.count()?;
        h.fits(ids, id, "dimension ids")?;
        h.need(ids * id)?;
        for _ in 0..ids {
            let d = h.count()?;
            if d >= dims {
                return Err(format!(
                    "not a valid NetCDF file: a variable names dimension {d} of {dims}"
                ));
            }
        }
        h.attributes()?;
        type_size(h.u32()?)?;
        h.count()?; // vsize
        if h.version == 1 {
            h.u32()?;
        } else {
            h.u64()?;
        }
    }
    Ok(())
}
