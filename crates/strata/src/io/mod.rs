//! Input and output of fields.

mod dataset;
mod netcdf;
#[cfg(feature = "netcdf4")]
mod netcdf4;
mod netcdf_classic;
mod netcdf_header;
mod netcdf_layout;
mod netcdf_types;

pub use dataset::Dataset;
pub use netcdf::{
    check_writable, read_coefficients, read_coefficients_block, read_coefficients_panels,
    read_field, read_orography, read_panels, read_rhs, write_fields, write_fields_as, FieldGrid,
    Overwrite,
};
pub use netcdf_types::{Attribute, NcFormat, OutputField, VarInfo};

mod matrix_market;

pub use matrix_market::{read_matrix_market, write_matrix_market, write_vector_market};
