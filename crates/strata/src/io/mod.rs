//! Input and output of fields.

mod netcdf;

pub use netcdf::{read_field, read_rhs, write_fields, FieldGrid};
