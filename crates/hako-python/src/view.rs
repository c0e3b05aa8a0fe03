//! numpy arrays over hako's shared memory, made through NumPy's C API.
//!
//! `numpy.frombuffer(obj, dtype).reshape(shape)` over a loan or a sample
//! costs two Python calls, a buffer request and two array objects; an
//! array made here costs one C call and one small object: the array's
//! base, [`ViewBase`], which holds the loan or sample alive and one of its
//! counted views (the count that makes `send()` and `release()` refuse
//! while a view lives, as a memoryview's does).

use std::os::raw::c_int;

use numpy::npyffi::{npy_intp, NpyTypes, PyArrayObject, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::common::Exports;

/// The base of an array made by [`array_over`]: keeps `owner` (the loan,
/// sample or request whose memory the array shows) alive, and one of its
/// views counted until the array goes.
#[pyclass(module = "hako", frozen)]
pub struct ViewBase {
    owner: Py<PyAny>,
    /// The owner's count of views (a field of `owner`, which never moves
    /// while this holds it).
    exports: ExportsRef,
}

/// A reference to an [`Exports`] inside a Python object kept alive
/// alongside it.
struct ExportsRef(*const Exports);

// SAFETY: it points into a frozen pyclass object that the same ViewBase
// keeps alive; Exports is itself Send and Sync (atomics).
unsafe impl Send for ExportsRef {}
// SAFETY: as above.
unsafe impl Sync for ExportsRef {}

impl Drop for ViewBase {
    fn drop(&mut self) {
        // SAFETY: `owner` is still held (fields drop after this), so the
        // Exports it contains is alive.
        unsafe { (*self.exports.0).release() };
        let _ = &self.owner;
    }
}

/// What an array shows: `len` bytes at `ptr`, writable or not.
pub struct Memory {
    /// The first byte.
    pub ptr: *mut u8,
    /// Bytes.
    pub len: usize,
    /// Whether numpy may write through the array.
    pub writable: bool,
}

/// A numpy array of `dtype` and `shape` over `mem`, which `owner` exported
/// (its count of views is `exports`). `shape` `None`: a flat array of
/// every element. The shape must cover the memory exactly (one dimension
/// may be -1, inferred), as `frombuffer(...).reshape(...)` requires.
///
/// # Safety
/// `mem` stays valid (and, if writable, written by nobody else) while a
/// view counted by `exports` lives, and `exports` lies inside `owner`;
/// the caller holds the lock that guards `mem` against `send` or
/// `release` (as `__getbuffer__` does).
pub unsafe fn array_over<'py>(
    owner: &Bound<'py, PyAny>,
    exports: &Exports,
    mem: Memory,
    dtype: &Bound<'py, PyArrayDescr>,
    shape: Option<&[isize]>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = owner.py();
    let itemsize = dtype.itemsize();
    let mut dims: Vec<npy_intp> = match shape {
        Some(s) => s.to_vec(),
        None => vec![-1],
    };
    fit(&mut dims, mem.len, itemsize)?;
    exports.count();
    // Made first: should the array fail, its drop takes the count back.
    let base = Py::new(
        py,
        ViewBase {
            owner: owner.clone().unbind(),
            exports: ExportsRef(exports),
        },
    )?;
    let flags: c_int = if mem.writable { NPY_ARRAY_WRITEABLE } else { 0 };
    // SAFETY: NumPy's C API with the GIL held: the descriptor's reference
    // is given to the array (NewFromDescr steals it, so one is added);
    // `dims` has `dims.len()` entries; the data outlives the array, whose
    // base (set below, which steals `base`) holds its owner.
    unsafe {
        let descr = dtype.clone().into_ptr().cast();
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            PY_ARRAY_API.get_type_object(py, NpyTypes::PyArray_Type),
            descr,
            dims.len() as c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            mem.ptr.cast(),
            flags,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        let arr_ptr: *mut PyArrayObject = arr.as_ptr().cast();
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr_ptr, base.into_ptr()) != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}

/// Fills in a -1 of `dims` and checks that they cover `len` bytes of
/// `itemsize`-byte elements exactly.
fn fit(dims: &mut [npy_intp], len: usize, itemsize: usize) -> PyResult<()> {
    let bad = |why: String| PyValueError::new_err(why);
    if itemsize == 0 || len % itemsize != 0 {
        return Err(bad(format!(
            "{len} bytes are not a whole number of {itemsize}-byte elements"
        )));
    }
    let count = (len / itemsize) as npy_intp;
    let mut known: npy_intp = 1;
    let mut free = None;
    for (i, &d) in dims.iter().enumerate() {
        match d {
            -1 if free.is_none() => free = Some(i),
            d if d < 0 => return Err(bad(format!("shape {dims:?}: a dimension is negative"))),
            d => {
                known = known
                    .checked_mul(d)
                    .ok_or_else(|| bad("shape too large".into()))?
            }
        }
    }
    match free {
        Some(i) if known != 0 && count % known == 0 => dims[i] = count / known,
        None if known == count => {}
        _ => {
            return Err(bad(format!(
                "shape {dims:?} does not cover the {count} elements of {len} bytes"
            )))
        }
    }
    Ok(())
}

/// A dtype as numpy reads `obj` (`np.uint8`, `"f4"`, a dtype, a ctypes
/// type...).
pub fn dtype_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArrayDescr>> {
    if let Ok(d) = obj.cast::<PyArrayDescr>() {
        return Ok(d.clone());
    }
    PyArrayDescr::new(obj.py(), obj)
}

/// A shape as Python gives it: an int or a sequence of ints.
pub fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<isize>> {
    if let Ok(n) = obj.extract::<isize>() {
        return Ok(vec![n]);
    }
    obj.try_iter()?.map(|d| d?.extract::<isize>()).collect()
}
