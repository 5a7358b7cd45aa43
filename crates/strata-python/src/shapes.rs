//! The shapes of a solver's arrays as Python sees them: (n, n, nz) = (y, x, z) on a panel or
//! box (a rank's block: (ny, nx, nz)); on the sphere (tiles, ny, nx, nz) — (6, n, n, nz), one
//! panel after another, on one process, as the files and the C API order them — which strata
//! holds as its tiles stacked along y. Arrays of the stacked shape (6 n, n, nz), the sphere's
//! shape before 0.2, are still taken, with a DeprecationWarning.

use pyo3::exceptions::{PyDeprecationWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// One kind of array of a solver (the solution and right-hand side, or the coefficient fields).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// strata's layout: the tiles stacked along y.
    pub stacked: [usize; 3],
    /// On the sphere, the tiles the arrays hold (the leading axis Python sees).
    pub tiles: Option<usize>,
}

impl Shape {
    /// A panel's or box's arrays (or a rank's block).
    pub fn plain(shape: [usize; 3]) -> Self {
        Self {
            stacked: shape,
            tiles: None,
        }
    }

    /// The sphere's arrays: `tiles` tiles of ny × nx columns and nz levels.
    pub fn tiles(tiles: usize, ny: usize, nx: usize, nz: usize) -> Self {
        Self {
            stacked: [tiles * ny, nx, nz],
            tiles: Some(tiles),
        }
    }

    /// The shape Python sees.
    pub fn python(&self) -> Vec<usize> {
        let [y, x, z] = self.stacked;
        match self.tiles {
            Some(t) => vec![t, y / t, x, z],
            None => vec![y, x, z],
        }
    }

    /// The axes' names, for errors.
    pub fn axes(&self) -> &'static str {
        if self.tiles.is_some() {
            "(tile, y, x, z)"
        } else {
            "(y, x, z)"
        }
    }

    /// An error naming `name` unless `shape` is one this kind of array may have: the shape
    /// Python sees, or on the sphere the stacked one (deprecated: warns). Returns whether the
    /// array is in the 4D tile layout.
    pub fn check(&self, py: Python<'_>, name: &str, shape: &[usize]) -> PyResult<bool> {
        let want = self.python();
        if shape == want.as_slice() {
            return Ok(self.tiles.is_some());
        }
        if self.tiles.is_some() && shape == self.stacked.as_slice() {
            let [y, x, z] = self.stacked;
            let msg = std::ffi::CString::new(format!(
                "{name}: sphere arrays of shape ({y}, {x}, {z}) (the tiles stacked along y) are \
                 deprecated; pass shape {want:?} (tile, y, x, z): a.reshape{want:?}"
            ))
            .expect("no NUL in the message");
            PyErr::warn(py, &py.get_type::<PyDeprecationWarning>(), &msg, 2)?;
            return Ok(false);
        }
        Err(PyValueError::new_err(format!(
            "{name} has shape {shape:?}, the solver needs {want:?} {}",
            self.axes()
        )))
    }

    /// The shape of an array in the layout `four` says (the tiles' axis, or stacked).
    pub fn layout(&self, four: bool) -> Vec<usize> {
        if four {
            self.python()
        } else {
            self.stacked.to_vec()
        }
    }

    /// A host (NumPy) array of this kind as strata's stacked 3D layout, and whether it came in
    /// the tiles' 4D layout: a view where the array is 4D (it must be C-contiguous, as strata's
    /// host path needs), the array itself where it is stacked already.
    pub fn stacked_view<'py>(
        &self,
        name: &str,
        a: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, bool)> {
        let shape: Vec<usize> = a.getattr("shape")?.extract()?;
        if !self.check(a.py(), name, &shape)? {
            return Ok((a.clone(), false));
        }
        let contiguous: bool = a.getattr("flags")?.getattr("c_contiguous")?.extract()?;
        if !contiguous {
            return Err(PyValueError::new_err(format!(
                "{name} must be C-contiguous"
            )));
        }
        let view = a.call_method1("reshape", (PyTuple::new(a.py(), self.stacked)?,))?;
        Ok((view, true))
    }

    /// A new host array of the stacked layout as the caller gave its input: viewed in the
    /// tiles' layout where `four`, as it is otherwise.
    pub fn view<'py>(&self, stacked: Bound<'py, PyAny>, four: bool) -> PyResult<Bound<'py, PyAny>> {
        if !four || self.tiles.is_none() {
            return Ok(stacked);
        }
        stacked.call_method1("reshape", (PyTuple::new(stacked.py(), self.python())?,))
    }
}

/// The orography a solver is given: a float64 array of shape (n, n), (y, x) like the fields'
/// first two axes, or on the sphere (`panels` = 6) of shape (6, n, n), (panel, y, x); any
/// other type or shape is a ValueError saying what was expected.
pub(crate) fn orography(
    a: &Bound<'_, PyAny>,
    panels: usize,
    n: usize,
) -> PyResult<strata::problem::Orography> {
    use numpy::{PyReadonlyArrayDyn, PyUntypedArrayMethods};
    let want: Vec<usize> = if panels == 1 {
        vec![n, n]
    } else {
        vec![panels, n, n]
    };
    let named = if panels == 1 {
        "(y, x)"
    } else {
        "(panel, y, x)"
    };
    let arr: PyReadonlyArrayDyn<'_, f64> = a.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "orography must be a float64 NumPy array of shape {want:?} {named}"
        ))
    })?;
    let shape = arr.shape().to_vec();
    if shape != want {
        return Err(PyValueError::new_err(format!(
            "orography has shape {shape:?}, the problem's columns are {want:?} {named}"
        )));
    }
    let h: Vec<f64> = arr.as_array().iter().copied().collect();
    strata::problem::Orography::with_panels(panels, n, h)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}
