//! NetCDF round trip and the errors of reading a right-hand side.

use strata::grid::Block;
use strata::io::{
    read_rhs, write_fields, write_fields_as, Dataset, FieldGrid, NcFormat, OutputField, Overwrite,
};
use strata::problem::{build_rhs, ProblemParams, RhsKind};

fn grid(n: usize, nz: usize) -> FieldGrid {
    FieldGrid {
        params: ProblemParams {
            n,
            nz,
            ..Default::default()
        },
    }
}

/// The formats this build writes: NetCDF-3 always, NetCDF-4 (stored and deflated) with the
/// `netcdf4` feature.
fn formats() -> Vec<NcFormat> {
    let mut f = vec![NcFormat::Classic];
    if NcFormat::NETCDF4_BUILT {
        f.extend([NcFormat::Netcdf4 { deflate: 0 }, NcFormat::NETCDF4]);
    }
    f
}

#[test]
fn fields_round_trip_exactly() {
    for format in formats() {
        round_trip(format);
    }
}

fn round_trip(format: NcFormat) {
    let dir = std::env::temp_dir().join(format!("strata-nc-{}-{format:?}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rt.nc");
    let _ = std::fs::remove_file(&path);
    let g = grid(6, 5);
    let rhs = build_rhs(&g.params, RhsKind::Random, 3, &Block::whole(6));
    let u: Vec<f64> = rhs.iter().map(|v| 2.0 * v + 1.0).collect();
    let fields = [OutputField::solution(&u), OutputField::rhs(&rhs)];
    write_fields_as(&path, &g, &fields, Overwrite::Refuse, format).unwrap();
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.format().name(), format.name());
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
    write_fields_as(
        &nan_path,
        &g,
        &[OutputField::rhs(&bad)],
        Overwrite::Refuse,
        format,
    )
    .unwrap();
    let e = read_rhs(&nan_path, "rhs", 6, 5).unwrap_err().to_string();
    assert!(e.contains("non-finite") && e.contains("z=2"), "{e}");

    std::fs::write(dir.join("junk.nc"), b"not a netcdf file").unwrap();
    let e = read_rhs(&dir.join("junk.nc"), "rhs", 6, 5)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not NetCDF"), "{e}");

    // A file cut short (an interrupted copy) is named as truncated, not as an I/O error code.
    let whole = std::fs::read(&path).unwrap();
    for keep in [whole.len() - 100, 40] {
        let cut = dir.join(format!("cut{keep}.nc"));
        std::fs::write(&cut, &whole[..keep]).unwrap();
        let e = read_rhs(&cut, "rhs", 6, 5).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{keep} bytes: {e}");
    }
    // A NetCDF-4 (HDF5) file is recognised by its signature: refused, saying how to read it,
    // by a build without NetCDF-4; named as damaged by a build with it.
    std::fs::write(dir.join("h5.nc"), b"\x89HDF\r\n\x1a\n and more").unwrap();
    let e = read_rhs(&dir.join("h5.nc"), "rhs", 6, 5)
        .unwrap_err()
        .to_string();
    if NcFormat::NETCDF4_BUILT {
        assert!(e.contains("NetCDF-4") && e.contains("damaged"), "{e}");
    } else {
        assert!(
            e.contains("NetCDF-4") && e.contains("--features netcdf4"),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_is_never_lost_or_clobbered() {
    let dir = std::env::temp_dir().join(format!("strata-nc-ow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("u.nc");
    let _ = std::fs::remove_file(&path);
    let g = grid(4, 3);
    let a = vec![1.0; 48];
    let b = vec![2.0; 48];
    write_fields(&path, &g, &[OutputField::rhs(&a)], Overwrite::Refuse).unwrap();
    let e = write_fields(&path, &g, &[OutputField::rhs(&b)], Overwrite::Refuse).unwrap_err();
    assert!(e.to_string().contains("exists"), "{e}");
    assert_eq!(read_rhs(&path, "rhs", 4, 3).unwrap(), a);
    // A failed write (wrong size) leaves the old file and no partial file.
    let short = vec![3.0; 5];
    assert!(write_fields(&path, &g, &[OutputField::rhs(&short)], Overwrite::Replace).is_err());
    assert_eq!(read_rhs(&path, "rhs", 4, 3).unwrap(), a);
    write_fields(&path, &g, &[OutputField::rhs(&b)], Overwrite::Replace).unwrap();
    assert_eq!(read_rhs(&path, "rhs", 4, 3).unwrap(), b);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "left behind: {names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_carries_cf_attributes_and_every_parameter() {
    for format in formats() {
        cf_attributes(format);
    }
}

fn cf_attributes(format: NcFormat) {
    let dir = std::env::temp_dir().join(format!("strata-nc-cf-{}-{format:?}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cf.nc");
    let _ = std::fs::remove_file(&path);
    let mut g = grid(4, 3);
    g.params.grading = strata::problem::Grading::Graded;
    g.params.geometry = strata::problem::Geometry::Box;
    g.params.boundaries = strata::grid::Boundaries::parse("x=periodic,y=neumann").unwrap();
    let u = vec![0.5; 48];
    let fields = [OutputField::solution(&u), OutputField::rhs(&u)];
    write_fields_as(&path, &g, &fields, Overwrite::Refuse, format).unwrap();
    let mut ds = Dataset::open(&path).unwrap();
    let faces = ds.read("z_face").unwrap();
    let text = |v: &str, a: &str| ds.text(Some(v), a);
    let global = |a: &str| ds.text(None, a);
    assert_eq!(global("Conventions").as_deref(), Some("CF-1.8"));
    assert!(global("vertical_grid").unwrap().starts_with("graded"));
    assert_eq!(text("u", "units").as_deref(), Some("1"));
    assert!(text("u", "long_name").unwrap().contains("cell centre"));
    assert_eq!(text("rhs", "cell_methods").as_deref(), Some("y: x: z: sum"));
    assert_eq!(text("z", "axis").as_deref(), Some("Z"));
    for a in ["cfl", "lambda", "height", "delta", "omega"] {
        let v = ds.number(None, a).unwrap_or_else(|| panic!("no {a}"));
        assert!(v.is_finite(), "{a}");
    }
    assert_eq!(ds.number(None, "nz"), Some(3.0));
    // The lateral conditions, as --boundary reads them back (docs/MODEL.md §20).
    let bc = global("boundary").expect("a boundary attribute");
    assert_eq!(
        strata::grid::Boundaries::parse(&bc).unwrap(),
        g.params.boundaries
    );
    assert_eq!(global("boundary_x").as_deref(), Some("periodic"));
    assert_eq!(global("boundary_y").as_deref(), Some("neumann"));
    let expected = strata::problem::VerticalGrid::new(&g.params).faces;
    assert_eq!(faces, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The sphere's fields are written with a panel dimension and read back exactly; coefficient
/// fields of six panels too; a panel's field is refused for the sphere.
#[test]
fn sphere_fields_round_trip_with_a_panel_dimension() {
    use strata::grid::sphere;
    use strata::io::{read_coefficients_panels, read_field, read_panels};
    use strata::problem::{build_rhs_tiles, Geometry};
    let dir = std::env::temp_dir().join(format!("strata-nc-sphere-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sphere.nc");
    let _ = std::fs::remove_file(&path);
    let g = FieldGrid {
        params: ProblemParams {
            geometry: Geometry::Sphere,
            n: 4,
            nz: 3,
            ..Default::default()
        },
    };
    let rhs = build_rhs_tiles(&g.params, RhsKind::Random, 3, &sphere::tiles(4, 1));
    let kz: Vec<f64> = rhs.iter().map(|v| 2.0 + v).collect();
    let fields = [
        OutputField::rhs(&rhs),
        OutputField {
            name: "kz",
            ..OutputField::rhs(&kz)
        },
    ];
    write_fields(&path, &g, &fields, Overwrite::Refuse).unwrap();
    assert_eq!(read_field(&path, "rhs").unwrap().1, [6, 4, 4, 3]);
    assert_eq!(read_panels(&path, "rhs", 6, 4, 3).unwrap(), rhs);
    let c = read_coefficients_panels(&path, 6, 4, 3, 1.0).unwrap();
    assert_eq!((c.panels, &c.kz), (6, &kz));
    assert!(c.kx.iter().all(|&v| v == 1.0));
    let e = read_rhs(&path, "rhs", 4, 3).unwrap_err().to_string();
    assert!(e.contains("[4, 4, 3] (y, x, z)"), "{e}");
}

#[test]
fn a_ranks_block_of_a_coefficient_file_is_the_whole_files_block() {
    use strata::io::{read_coefficients, read_coefficients_block};
    let dir = std::env::temp_dir().join(format!("strata-nc-block-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (n, nz) = (12, 4);
    let g = grid(n, nz);
    let base = build_rhs(&g.params, RhsKind::Random, 5, &Block::whole(n));
    let kx: Vec<f64> = base.iter().map(|v| 2.0 + v).collect();
    let beta: Vec<f64> = base.iter().rev().map(|v| 1.5 + v).collect();
    let xi_y: Vec<f64> = base.iter().map(|v| 0.5 * v).collect();
    let path = dir.join("c.nc");
    let _ = std::fs::remove_file(&path);
    let block_of = |i0, j0, nx, ny| Block {
        n,
        i0,
        j0,
        nx,
        ny,
        panel: None,
        bc: Default::default(),
    };
    let field = |name, v| OutputField {
        name,
        ..OutputField::rhs(v)
    };
    let fields = [field("kx", &kx), field("beta", &beta), field("xi_y", &xi_y)];
    write_fields(&path, &g, &fields, Overwrite::Refuse).unwrap();
    let whole = read_coefficients(&path, n, nz, 0.3).unwrap();
    // Blocks of a 3 x 2 rank grid and a strip; each equal to the whole file's block, field by
    // field (κy, κz are the model's 1, ξ_x and ξ_z 0).
    for block in [
        Block::whole(n),
        block_of(4, 0, 4, 6),
        block_of(8, 6, 4, 6),
        block_of(0, 3, 12, 3),
    ] {
        let read = read_coefficients_block(&path, n, nz, 0.3, block).unwrap();
        let cut = whole.block_of(block).unwrap();
        assert_eq!(read.window, Some(block));
        for ((name, a), (_, b)) in read.fields().into_iter().zip(cut.fields()) {
            assert!(
                a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{name} {block:?}"
            );
        }
        for ((name, a), (_, b)) in read.xi_fields().into_iter().zip(cut.xi_fields()) {
            assert!(
                a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{name} {block:?}"
            );
        }
        assert_eq!(read.xi_fields().len(), 3);
    }
    // A bad value is found by the rank whose block holds it, named at its place in the file.
    let mut bad = kx.clone();
    let (i, j, k) = (9, 7, 2);
    bad[(j * n + i) * nz + k] = -1.0;
    let bad_path = dir.join("bad.nc");
    let _ = std::fs::remove_file(&bad_path);
    write_fields(&bad_path, &g, &[field("kx", &bad)], Overwrite::Refuse).unwrap();
    assert!(read_coefficients_block(&bad_path, n, nz, 1.0, block_of(0, 0, 6, 6)).is_ok());
    let e = read_coefficients_block(&bad_path, n, nz, 1.0, block_of(6, 6, 6, 6))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("variable 'kx'") && e.contains("y=7, x=9, z=2"),
        "{e}"
    );
    // A block outside the grid, or of the sphere's tiles, is refused; a file without any
    // coefficient variable too.
    assert!(read_coefficients_block(&path, n, nz, 1.0, block_of(8, 0, 6, 6)).is_err());
    let rhs_only = dir.join("rhs.nc");
    let _ = std::fs::remove_file(&rhs_only);
    write_fields(&rhs_only, &g, &[OutputField::rhs(&base)], Overwrite::Refuse).unwrap();
    let e = read_coefficients_block(&rhs_only, n, nz, 1.0, Block::whole(n))
        .unwrap_err()
        .to_string();
    assert!(e.contains("none of the variables"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
