//! Input and output of fields.

mod netcdf;
mod netcdf_header;

pub use netcdf::{
    check_writable, read_coefficients, read_coefficients_block, read_coefficients_panels,
    read_field, read_panels, read_rhs, write_fields, FieldGrid, OutputField, Overwrite,
};

mod matrix_market;

pub use matrix_market::{read_matrix_market, write_matrix_market, write_vector_market};
