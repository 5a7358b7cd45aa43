//! NetCDF round trip and the errors of reading a right-hand side.

use strata::io::{read_rhs, write_fields, FieldGrid};
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::stencil::Block;

fn grid(n: usize, nz: usize) -> FieldGrid {
    FieldGrid {
        params: ProblemParams {
            n,
            nz,
            ..Default::default()
        },
    }
}

#[test]
fn fields_round_trip_exactly() {
    let dir = std::env::temp_dir().join(format!("strata-nc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rt.nc");
    let _ = std::fs::remove_file(&path);
    let g = grid(6, 5);
    let rhs = build_rhs(&g.params, RhsKind::Random, 3, &Block::whole(6));
    let u: Vec<f64> = rhs.iter().map(|v| 2.0 * v + 1.0).collect();
    write_fields(&path, &g, &[("u", "solution", &u), ("rhs", "rhs", &rhs)]).unwrap();
    assert_eq!(read_rhs(&path, "rhs", 6, 5).unwrap(), rhs);
    assert_eq!(read_rhs(&path, "u", 6, 5).unwrap(), u);

    let e = read_rhs(&path, "rhs", 6, 4).unwrap_err().to_string();
    assert!(e.contains("shape") && e.contains("[6, 6, 4]"), "{e}");
    let e = read_rhs(&path, "f", 6, 5).unwrap_err().to_string();
    assert!(e.contains("no variable 'f'") && e.contains("rhs"), "{e}");
    let e = read_rhs(&dir.join("missing.nc"), "rhs", 6, 5)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such file"), "{e}");

    let nan_path = dir.join("nan.nc");
    let _ = std::fs::remove_file(&nan_path);
    let mut bad = rhs.clone();
    bad[7] = f64::NAN;
    write_fields(&nan_path, &g, &[("rhs", "rhs", &bad)]).unwrap();
    let e = read_rhs(&nan_path, "rhs", 6, 5).unwrap_err().to_string();
    assert!(e.contains("non-finite") && e.contains("z=2"), "{e}");

    std::fs::write(dir.join("junk.nc"), b"not a netcdf file").unwrap();
    let e = read_rhs(&dir.join("junk.nc"), "rhs", 6, 5)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a NetCDF-3 file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
