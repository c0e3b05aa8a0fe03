//! Payload types as the Python side describes them: the class the user
//! gave, its element size, whether samples are slices of it, and the numpy
//! layout a loan was made for. Below the samples and the patterns, which
//! all carry one.

use std::sync::Arc;

use pyo3::prelude::*;

/// A payload type as the Python side knows it: the class the user gave
/// (for `numpy()` and `value`), its element size and whether samples are
/// slices of it.
#[derive(Clone)]
pub struct Payload {
    /// The type the user gave (`bytes`, a ctypes type, a numpy type).
    pub class: Arc<Py<PyAny>>,
    /// Bytes per element.
    pub elem_size: usize,
    /// Samples are slices of elements.
    pub slice: bool,
    /// The numpy dtype of an element, made at the first `numpy()`.
    pub dtype: Arc<pyo3::sync::PyOnceLock<Py<numpy::PyArrayDescr>>>,
}

impl Payload {
    /// The numpy dtype of one element (uint8 for bytes), made once.
    pub fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArrayDescr>> {
        let d = self.dtype.get_or_try_init(py, || {
            let d = py
                .import("hako._types")?
                .call_method1("dtype", (self.class.bind(py),))?;
            Ok::<_, PyErr>(crate::view::dtype_of(&d)?.unbind())
        })?;
        Ok(d.bind(py).clone())
    }

    /// Elements in `nbytes` bytes, or an error.
    pub fn elements_of(&self, nbytes: usize) -> PyResult<usize> {
        let size = self.elem_size;
        if nbytes % size != 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{nbytes} bytes are not a whole number of {size}-byte elements"
            )));
        }
        let n = nbytes / size;
        if !self.slice && n != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "the payload is one {size}-byte value, not {nbytes} bytes"
            )));
        }
        Ok(n)
    }

    /// The element count of a numpy array of `shape` and `dtype`,
    /// with the normalised shape and dtype.
    pub fn array<'py>(
        &self,
        py: Python<'py>,
        shape: Bound<'py, PyAny>,
        dtype: Bound<'py, PyAny>,
    ) -> PyResult<(usize, ArraySpec)> {
        let np = py.import("numpy")?;
        let dtype = np.call_method1("dtype", (dtype,))?;
        let shape = if shape.is_instance_of::<pyo3::types::PyInt>() {
            pyo3::types::PyTuple::new(py, [shape])?.into_any()
        } else {
            pyo3::types::PyTuple::new(py, shape.try_iter()?.collect::<PyResult<Vec<_>>>()?)?
                .into_any()
        };
        // Multiplied here, checked: numpy's prod wraps around silently
        // (2**32 x 2**32 gives 0), which would loan an empty array.
        let itemsize: usize = dtype.getattr("itemsize")?.extract()?;
        let mut bytes = Some(itemsize);
        for dim in shape.try_iter()? {
            let dim: i64 = dim?.extract()?;
            let dim = usize::try_from(dim).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "shape {shape}: a dimension is negative ({dim})"
                ))
            })?;
            bytes = bytes.and_then(|b| b.checked_mul(dim));
        }
        let bytes = bytes
            .filter(|&b| isize::try_from(b).is_ok())
            .ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "shape {shape} of {dtype} holds more bytes than any loan can"
                ))
            })?;
        let n = self.elements_of(bytes)?;
        Ok((
            n,
            ArraySpec {
                shape: shape.unbind(),
                dtype: dtype.unbind(),
            },
        ))
    }

    /// Describes `payload` (see `hako/_types.py`).
    pub(crate) fn describe(
        py: Python<'_>,
        payload: Option<Bound<'_, PyAny>>,
        slice: Option<bool>,
    ) -> PyResult<(Self, hako::TypeDetails)> {
        let class = payload.unwrap_or_else(|| py.get_type::<pyo3::types::PyBytes>().into_any());
        let d = py
            .import("hako._types")?
            .call_method1("describe", (&class, slice))?;
        let (type_name, size, align, slice): (String, u64, u64, bool) = d.extract()?;
        let elem_size = usize::try_from(size).unwrap_or(usize::MAX);
        Ok((
            Payload {
                class: Arc::new(class.unbind()),
                elem_size,
                slice,
                dtype: Arc::new(pyo3::sync::PyOnceLock::new()),
            },
            hako::TypeDetails {
                type_name,
                size,
                align,
                slice,
            },
        ))
    }
}

/// The numpy layout a loan was made for (`loan_array`).
pub struct ArraySpec {
    /// The array's shape.
    pub shape: Py<PyAny>,
    /// Its dtype.
    pub dtype: Py<PyAny>,
}
