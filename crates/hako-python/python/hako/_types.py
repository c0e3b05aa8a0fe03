"""How a Python payload type names itself to a service.

A service records its payload type's name, size and alignment; a Rust,
C or Python port opening it must bring the same three. Rust types name
themselves by their path (``my_crate::Frame``, ``u32``, ``[f32; 4]``),
slices as ``[T]``. Here:

* ``bytes`` (the default): a slice of bytes, Rust ``[u8]``;
* a ctypes scalar type: ``ctypes.c_uint32`` is ``u32``, ``ctypes.c_double``
  is ``f64``, ``ctypes.c_bool`` is ``bool`` and so on;
* a ctypes array type: ``ctypes.c_float * 4`` is ``[f32; 4]``;
* a ``ctypes.Structure`` (or ``Union``) class: the name in its
  ``_hako_type_name_`` attribute, which must be the Rust type's full name
  (or what ``#[hako(type_name = "...")]`` says); without one, its module
  path and qualified name joined by ``::`` (``app.msgs::Frame``), which
  matches other Python processes that import the same class;
* a numpy scalar type or dtype of a fixed-size number (``numpy.float32``).

With ``slice=True`` the payload is a slice of such elements, its length
chosen per loan, named ``[T]``.
"""

from __future__ import annotations

import ctypes
from typing import Any, Tuple

_SCALARS = {
    ctypes.c_uint8: "u8",
    ctypes.c_int8: "i8",
    ctypes.c_uint16: "u16",
    ctypes.c_int16: "i16",
    ctypes.c_uint32: "u32",
    ctypes.c_int32: "i32",
    ctypes.c_uint64: "u64",
    ctypes.c_int64: "i64",
    ctypes.c_float: "f32",
    ctypes.c_double: "f64",
    ctypes.c_bool: "bool",
}

# ctypes' platform aliases (c_int is c_int32, c_ubyte is c_uint8, ...)
# resolve to the classes above; c_char is a byte.
_SCALARS[ctypes.c_char] = "u8"

_NUMPY_KINDS = {"u": "u", "i": "i", "f": "f", "b": "bool"}


def _numpy_name(payload: Any) -> "Tuple[str, int, int] | None":
    try:
        import numpy
    except ImportError:  # numpy is optional
        return None
    try:
        dt = numpy.dtype(payload)
    except TypeError:
        return None
    if dt.kind not in _NUMPY_KINDS or dt.fields is not None or dt.subdtype is not None:
        return None
    if dt.kind == "b":
        return ("bool", 1, 1)
    return (f"{_NUMPY_KINDS[dt.kind]}{dt.itemsize * 8}", dt.itemsize, dt.alignment)


def element(payload: Any) -> Tuple[str, int, int]:
    """The (name, size, alignment) of one element of ``payload``."""
    if payload is bytes or payload is bytearray:
        return ("u8", 1, 1)
    if isinstance(payload, type) and issubclass(payload, ctypes._SimpleCData):
        for cls in payload.__mro__:
            if cls in _SCALARS:
                return (_SCALARS[cls], ctypes.sizeof(payload), ctypes.alignment(payload))
        raise TypeError(f"ctypes type {payload.__name__} has no shared-memory equivalent "
                        "(pointers and C strings cannot cross processes)")
    if isinstance(payload, type) and issubclass(payload, ctypes.Array):
        name, _, _ = element(payload._type_)
        return (f"[{name}; {payload._length_}]", ctypes.sizeof(payload),
                ctypes.alignment(payload))
    if isinstance(payload, type) and issubclass(payload, (ctypes.Structure, ctypes.Union)):
        for _field, ftype, *_ in payload._fields_:
            if issubclass(ftype, (ctypes._Pointer, ctypes.c_char_p, ctypes.c_wchar_p,
                                  ctypes.c_void_p)):
                raise TypeError(f"{payload.__name__}.{_field} is a pointer: "
                                "a pointer means nothing in another process")
        name = getattr(payload, "_hako_type_name_", None)
        if name is None:
            name = payload.__module__.replace(".", "::") + "::" + payload.__qualname__
        return (name, ctypes.sizeof(payload), ctypes.alignment(payload))
    named = _numpy_name(payload)
    if named is not None:
        return named
    raise TypeError(
        f"{payload!r} is not a payload type: use bytes, a ctypes scalar, array or "
        "Structure class, or a numpy number type")


def describe(payload: Any, slice: "bool | None") -> Tuple[str, int, int, bool]:
    """The (type_name, size, align, slice) a service records for ``payload``."""
    if payload is None:
        payload = bytes
    if slice is None:
        slice = payload is bytes or payload is bytearray
    name, size, align = element(payload)
    if size == 0:
        raise TypeError(f"{payload!r} has size zero")
    return (f"[{name}]" if slice else name, size, align, bool(slice))


def dtype(payload: Any) -> Any:
    """The numpy dtype of one element of ``payload`` (uint8 for bytes)."""
    import numpy

    if payload is None or payload is bytes or payload is bytearray:
        return numpy.dtype(numpy.uint8)
    return numpy.dtype(payload)


def view_form(payload: Any) -> "Tuple[Any, Tuple[int, ...]]":
    """The numpy dtype and shape a value of ``payload`` is viewed as: an
    array type's elements and length, else the type itself, one of it."""
    dt = dtype(payload)
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return (base, tuple(shape))
    return (dt, (1,))


def value_bytes(payload: Any, value: Any) -> bytes:
    """The bytes of ``value`` as a value of ``payload`` (bytes as they
    are; a number for a scalar type; a sequence for an array type; an
    instance for a Structure; anything numpy takes for a numpy type)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(payload, type) and issubclass(payload, ctypes._SimpleCData):
        return bytes(value if isinstance(value, payload) else payload(value))
    if isinstance(payload, type) and issubclass(payload, ctypes.Array):
        return bytes(value if isinstance(value, payload) else payload(*value))
    if isinstance(payload, type) and issubclass(payload, (ctypes.Structure, ctypes.Union)):
        return bytes(value)
    import numpy

    return numpy.asarray(value, dtype=dtype(payload)).tobytes()


def from_bytes(payload: Any, data: bytes) -> Any:
    """A value of ``payload`` from its bytes: the number of a scalar type,
    an instance of an array or Structure type, a numpy scalar or array."""
    if isinstance(payload, type) and issubclass(payload, ctypes._SimpleCData):
        return payload.from_buffer_copy(data).value
    if isinstance(payload, type) and issubclass(
            payload, (ctypes.Array, ctypes.Structure, ctypes.Union)):
        return payload.from_buffer_copy(data)
    import numpy

    dt, shape = view_form(payload)
    a = numpy.frombuffer(data, dtype=dt).copy()
    return a[0] if shape == (1,) else a.reshape(shape)
