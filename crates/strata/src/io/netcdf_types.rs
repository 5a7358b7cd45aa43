//! The vocabulary of strata's NetCDF files, shared by the readers and the writers: the formats,
//! an output variable, a variable's description and an attribute's value.

/// A NetCDF file format strata writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcFormat {
    /// NetCDF-3, 64-bit offset (CDF-2): read and written by every build, with no system library.
    Classic,
    /// NetCDF-4 (HDF5), the fields deflated at this level (0 stores them as they are, 1–9)
    /// with the shuffle filter; needs a build with the `netcdf4` feature (libnetcdf).
    Netcdf4 {
        /// zlib level of the fields' deflate filter, 0–9.
        deflate: u8,
    },
}

impl NcFormat {
    /// NetCDF-4 at the deflate level measured to pay: level 1 with shuffle (docs/USING.md,
    /// "Files": higher levels cost write time for little more saving on fp64 fields).
    pub const NETCDF4: Self = Self::Netcdf4 { deflate: 1 };

    /// Whether this build writes NetCDF-4.
    pub const NETCDF4_BUILT: bool = cfg!(feature = "netcdf4");

    /// What `--output` writes unless told: NetCDF-4 where this build has it, else NetCDF-3.
    pub fn default_output() -> Self {
        if Self::NETCDF4_BUILT {
            Self::NETCDF4
        } else {
            Self::Classic
        }
    }

    /// The format's name as the CLI and the docs write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Classic => "netcdf3",
            Self::Netcdf4 { .. } => "netcdf4",
        }
    }
}

/// A variable's dimensions and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarInfo {
    /// Dimension names, slowest first.
    pub dims: Vec<String>,
    /// Dimension sizes, slowest first.
    pub shape: Vec<usize>,
    /// Whether it holds floating-point values (f32 or f64), the only ones strata reads.
    pub floating: bool,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attribute {
    /// Text.
    Text(String),
    /// Numbers of any type, as f64.
    Numbers(Vec<f64>),
}

/// One variable of an output file: values in host layout with their CF attributes.
#[derive(Debug, Clone, Copy)]
pub struct OutputField<'a> {
    /// Variable name.
    pub name: &'a str,
    /// CF `long_name`.
    pub long_name: &'a str,
    /// CF `units` (UDUNITS; `"1"` for the dimensionless fields of the nondimensional problem).
    pub units: &'a str,
    /// CF `cell_methods`, e.g. `"y: x: z: sum"` for a value integrated over the cell.
    pub cell_methods: Option<&'a str>,
    /// Values, `(y, x, z)` with z fastest.
    pub values: &'a [f64],
}

impl<'a> OutputField<'a> {
    /// The solution u: its value at the cell centre (not volume-integrated).
    pub fn solution(values: &'a [f64]) -> Self {
        Self {
            name: "u",
            long_name: "solution u (value at the cell centre)",
            units: "1",
            cell_methods: Some("y: x: z: point"),
            values,
        }
    }

    /// The right-hand side f, integrated over the cell volume (|T| V_k times the source).
    pub fn rhs(values: &'a [f64]) -> Self {
        Self {
            name: "rhs",
            long_name: "right-hand side, integrated over the cell volume",
            units: "1",
            cell_methods: Some("y: x: z: sum"),
            values,
        }
    }
}
