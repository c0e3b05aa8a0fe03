//! A value of a described type as the tool prints and parses it: numbers
//! for the primitive types (`u8` … `u64`, `i8` … `i64`, `f32`, `f64`,
//! `bool`) and arrays of them (`[f32; 3]`), hex for any other type.
//! Bytes are in this machine's order, as the processes sharing the memory
//! write them.

use serde_json::Value;

use crate::common::CliError;

/// A primitive element type: its name and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prim {
    U(usize),
    I(usize),
    F(usize),
    Bool,
}

impl Prim {
    fn of(name: &str) -> Option<Self> {
        Some(match name {
            "u8" => Prim::U(1),
            "u16" => Prim::U(2),
            "u32" => Prim::U(4),
            "u64" => Prim::U(8),
            "i8" => Prim::I(1),
            "i16" => Prim::I(2),
            "i32" => Prim::I(4),
            "i64" => Prim::I(8),
            "f32" => Prim::F(4),
            "f64" => Prim::F(8),
            "bool" => Prim::Bool,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Prim::U(n) | Prim::I(n) | Prim::F(n) => n,
            Prim::Bool => 1,
        }
    }

    fn decode(self, b: &[u8]) -> Value {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        let u = u64::from_ne_bytes(w);
        match self {
            Prim::U(_) => Value::from(u),
            Prim::I(n) => {
                let shift = 64 - 8 * n as u32;
                Value::from(((u << shift) as i64) >> shift)
            }
            Prim::F(4) => Value::from(f64::from(f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
            Prim::F(_) => Value::from(f64::from_bits(u)),
            Prim::Bool => Value::from(u != 0),
        }
    }

    fn encode(self, text: &str) -> Result<Vec<u8>, String> {
        let t = text.trim();
        let bad = |e: &dyn std::fmt::Display| format!("{t:?}: {e}");
        let le = |v: u64, n: usize| v.to_ne_bytes()[..n].to_vec();
        Ok(match self {
            Prim::U(n) => {
                let v: u64 = t.parse().map_err(|e| bad(&e))?;
                if n < 8 && v >> (8 * n) != 0 {
                    return Err(format!("{t} does not fit in {n} bytes"));
                }
                le(v, n)
            }
            Prim::I(n) => {
                let v: i64 = t.parse().map_err(|e| bad(&e))?;
                let lim = 1i64 << (8 * n - 1).min(62);
                if n < 8 && (v < -lim || v >= lim) {
                    return Err(format!("{t} does not fit in {n} bytes"));
                }
                le(v as u64, n)
            }
            Prim::F(4) => t
                .parse::<f32>()
                .map_err(|e| bad(&e))?
                .to_ne_bytes()
                .to_vec(),
            Prim::F(_) => t
                .parse::<f64>()
                .map_err(|e| bad(&e))?
                .to_ne_bytes()
                .to_vec(),
            Prim::Bool => vec![u8::from(t.parse::<bool>().map_err(|e| bad(&e))?)],
        })
    }
}

/// The element type and count of `name`: a primitive (count 1) or an
/// array of one (`[f32; 3]`).
fn shape(name: &str, size: u64) -> Option<(Prim, usize, bool)> {
    if let Some(p) = Prim::of(name) {
        return (p.size() as u64 == size).then_some((p, 1, false));
    }
    let inner = name.strip_prefix('[')?.strip_suffix(']')?;
    let (elem, n) = inner.split_once(';')?;
    let p = Prim::of(elem.trim())?;
    let n: usize = n.trim().parse().ok()?;
    (p.size() as u64 * n as u64 == size).then_some((p, n, true))
}

/// `bytes`, a value of type `name`, as JSON: a number, `true`/`false`, an
/// array of them, or `None` for a type this tool does not know (print hex).
pub(super) fn decode(name: &str, bytes: &[u8]) -> Option<Value> {
    let (p, n, array) = shape(name, bytes.len() as u64)?;
    let values: Vec<Value> = bytes
        .chunks(p.size())
        .take(n)
        .map(|c| p.decode(c))
        .collect();
    Some(if array {
        Value::Array(values)
    } else {
        values.into_iter().next()?
    })
}

/// The bytes of a value of type `name` (`size` bytes) spelled `text`: a
/// number, or numbers separated by commas (brackets optional) for an array.
pub(super) fn encode(name: &str, size: u64, text: &str) -> Result<Vec<u8>, CliError> {
    let Some((p, n, array)) = shape(name, size) else {
        return Err(CliError::usage(format!(
            "a value of type {name} ({size} B) cannot be given as text: give its bytes \
             with --hex"
        )));
    };
    let body = text.trim();
    let body = if array {
        body.trim_start_matches('[').trim_end_matches(']')
    } else {
        body
    };
    let parts: Vec<&str> = if array {
        body.split(',').collect()
    } else {
        vec![body]
    };
    if parts.len() != n {
        return Err(CliError::usage(format!(
            "a value of type {name} has {n} element(s), and {text:?} gives {}",
            parts.len()
        )));
    }
    let mut out = Vec::with_capacity(size as usize);
    for part in parts {
        out.extend(
            p.encode(part)
                .map_err(|e| CliError::usage(format!("a value of type {name}: {e}")))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_and_arrays_go_both_ways() {
        for (name, size, text, json) in [
            ("u32", 4, "7", "7"),
            ("i16", 2, "-3", "-3"),
            ("f64", 8, "1.5", "1.5"),
            ("bool", 1, "true", "true"),
            ("[f32; 3]", 12, "1, 2.5, -1", "[1.0,2.5,-1.0]"),
            ("[u8; 2]", 2, "[1,2]", "[1,2]"),
        ] {
            let bytes = encode(name, size, text).unwrap();
            assert_eq!(bytes.len() as u64, size);
            assert_eq!(decode(name, &bytes).unwrap().to_string(), json, "{name}");
        }
    }

    #[test]
    fn what_cannot_be_text_says_why() {
        let e = |n, s, t| encode(n, s, t).unwrap_err().message;
        assert!(e("my::Pose", 16, "1").contains("--hex"));
        assert!(e("u8", 1, "300").contains("does not fit"));
        assert!(e("i8", 1, "-129").contains("does not fit"));
        assert!(e("[u8; 2]", 2, "1").contains("2 element(s)"));
        assert!(e("u32", 4, "x").contains("\"x\""));
        assert_eq!(decode("my::Pose", &[0; 16]), None);
        assert_eq!(
            decode("u32", &[0; 8]),
            None,
            "a size that is not the type's"
        );
    }
}
