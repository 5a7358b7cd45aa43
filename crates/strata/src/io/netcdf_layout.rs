//! What a strata output file holds, independent of its format: dimensions, variables with their
//! CF attributes and values, global attributes. The NetCDF-3 and NetCDF-4 writers both write
//! this one description, so the two formats carry the same names, attributes and values.

use super::netcdf_types::OutputField;
use crate::problem::{cell_centre, Grading, ProblemParams, VerticalGrid};
use std::borrow::Cow;

/// A global or variable attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Attr {
    /// Text (NetCDF `char`).
    Text(String),
    /// One 32-bit integer.
    Int(i32),
    /// One double.
    Real(f64),
}

/// One variable: its dimensions (slowest first), text attributes and values.
#[derive(Debug, Clone)]
pub(crate) struct Var<'a> {
    pub name: &'a str,
    pub dims: Vec<&'static str>,
    pub attrs: Vec<(&'static str, String)>,
    pub values: Cow<'a, [f64]>,
    /// A field of the grid (not a coordinate): the NetCDF-4 writer chunks and may compress it.
    #[cfg_attr(not(feature = "netcdf4"), allow(dead_code))]
    pub field: bool,
}

/// The whole file.
#[derive(Debug, Clone)]
pub(crate) struct Layout<'a> {
    pub dims: Vec<(&'static str, usize)>,
    pub vars: Vec<Var<'a>>,
    pub globals: Vec<(&'static str, Attr)>,
}

/// The layout of `fields` on the grid of `p`: coordinates `x`, `y`, `z`, `z_face` with units,
/// axes and long names, each field with its CF attributes, every problem parameter as a global
/// attribute (CF-1.8).
pub(crate) fn layout<'a>(p: &ProblemParams, fields: &[OutputField<'a>]) -> Layout<'a> {
    let (n, nz) = (p.n, p.nz);
    let mut dims = vec![("y", n), ("x", n), ("z", nz), ("z_face", nz + 1)];
    // The sphere's fields are six panels, [panel][y][x][z] (docs/MODEL.md §16).
    let field_dims: Vec<&'static str> = if p.geometry.closed() {
        dims.push(("panel", p.panels()));
        vec!["panel", "y", "x", "z"]
    } else {
        vec!["y", "x", "z"]
    };
    let (zlong, hlong, zface_long) = if p.geometry.spherical() {
        (
            "radius of the cell centre, in Earth radii",
            "gnomonic coordinate of the cell centre (tangent of the central angle)",
            "radius of the vertical cell faces, in Earth radii",
        )
    } else {
        (
            "height of the cell centre",
            "coordinate of the cell centre",
            "height of the vertical cell faces",
        )
    };
    let vert = VerticalGrid::new(p);
    let xs: Vec<f64> = (0..n).map(|i| cell_centre(p.geometry, n, i, 0).0).collect();
    let coords: [(&'static str, &'static str, String, Vec<f64>); 4] = [
        ("x", "X", format!("x {hlong}"), xs.clone()),
        ("y", "Y", format!("y {hlong}"), xs),
        ("z", "Z", zlong.to_string(), vert.centres),
        ("z_face", "Z", zface_long.to_string(), vert.faces),
    ];
    let mut vars = Vec::with_capacity(coords.len() + fields.len());
    for (name, axis, long, values) in coords {
        let mut attrs = vec![
            ("long_name", long),
            ("units", "1".to_string()),
            ("axis", axis.to_string()),
        ];
        if axis == "Z" {
            attrs.push(("positive", "up".to_string()));
        }
        vars.push(Var {
            name,
            dims: vec![name],
            attrs,
            values: Cow::Owned(values),
            field: false,
        });
    }
    if let Some(o) = &p.orography {
        // Over orography z holds ζ; the height of a cell is z + orography (1 − z/H).
        vars.push(Var {
            name: "orography",
            dims: if o.panels > 1 {
                vec!["panel", "y", "x"]
            } else {
                vec!["y", "x"]
            },
            attrs: vec![
                (
                    "long_name",
                    "height of the ground under each column".to_string(),
                ),
                ("units", "1".to_string()),
            ],
            values: Cow::Owned(o.h.clone()),
            field: false,
        });
    }
    for f in fields {
        let mut attrs = vec![
            ("long_name", f.long_name.to_string()),
            ("units", f.units.to_string()),
        ];
        if let Some(c) = f.cell_methods {
            attrs.push(("cell_methods", c.to_string()));
        }
        vars.push(Var {
            name: f.name,
            dims: field_dims.clone(),
            attrs,
            values: Cow::Borrowed(f.values),
            field: true,
        });
    }
    let grading = match p.grading {
        Grading::Uniform => "uniform",
        Grading::Graded => "graded (faces at (k/nz)^2)",
    };
    let text = |s: &str| Attr::Text(s.to_string());
    let mut globals = vec![
        ("Conventions", text("CF-1.8")),
        ("title", text("strata: anisotropic elliptic solve")),
        (
            "source",
            Attr::Text(format!("strata {}", env!("CARGO_PKG_VERSION"))),
        ),
        (
            "equation",
            text("-omega^2 (laplace_S u + lambda^2 r^-2 d_r(r^2 d_r u)) + delta u = f"),
        ),
        ("geometry", text(p.geometry.describe())),
        ("vertical_grid", text(grading)),
    ];
    if !p.geometry.closed() {
        // The lateral conditions (docs/MODEL.md §20), as --boundary reads them back.
        use crate::names::Choice;
        globals.push(("boundary", Attr::Text(p.boundaries.describe())));
        globals.push(("boundary_x", text(p.boundaries.x.name())));
        globals.push(("boundary_y", text(p.boundaries.y.name())));
    }
    if p.orography.is_some() {
        globals.push((
            "vertical_coordinate",
            text("terrain-following (Gal-Chen & Somerville 1975): z is zeta, the height of a point is zeta + orography (1 - zeta/height)"),
        ));
    }
    for (k, v) in [("n", p.n), ("nz", p.nz)] {
        globals.push((k, Attr::Int(v.min(i32::MAX as usize) as i32)));
    }
    for (k, v) in [
        ("cfl", p.cfl),
        ("lambda", p.lambda),
        ("height", p.height),
        ("delta", p.delta),
        ("omega", p.omega()),
    ] {
        globals.push((k, Attr::Real(v)));
    }
    Layout {
        dims,
        vars,
        globals,
    }
}

impl Layout<'_> {
    /// The size of a dimension of this layout.
    #[cfg_attr(not(feature = "netcdf4"), allow(dead_code))]
    pub fn dim_len(&self, name: &str) -> usize {
        self.dims
            .iter()
            .find(|(d, _)| *d == name)
            .map(|&(_, l)| l)
            .unwrap_or(0)
    }
}
