//! Encoding [`Value`]s to bytes, each in its smallest encoding (the tests' and tools' side:
//! the relay never re-encodes).

use super::*;

/// Why a value could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// An array element does not have the array's element type.
    #[error("array element of type {found} in an array of {expected}")]
    MixedArray {
        /// The array's element type.
        expected: &'static str,
        /// The offending element's type.
        found: &'static str,
    },
    /// A compound larger than 2^32 - 1 bytes or elements.
    #[error("value too large to encode")]
    TooLarge,
}

fn len32(n: usize) -> Result<u32, EncodeError> {
    u32::try_from(n).map_err(|_| EncodeError::TooLarge)
}

impl Value {
    /// Append this value's smallest encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        use code::*;
        match self {
            Value::Null => out.push(NULL),
            Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
            Value::Ubyte(v) => out.extend_from_slice(&[UBYTE, *v]),
            Value::Ushort(v) => {
                out.push(USHORT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Uint(0) => out.push(UINT0),
            Value::Uint(v) if *v < 256 => out.extend_from_slice(&[SMALLUINT, *v as u8]),
            Value::Uint(v) => {
                out.push(UINT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Ulong(0) => out.push(ULONG0),
            Value::Ulong(v) if *v < 256 => out.extend_from_slice(&[SMALLULONG, *v as u8]),
            Value::Ulong(v) => {
                out.push(ULONG);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Byte(v) => out.extend_from_slice(&[BYTE, *v as u8]),
            Value::Short(v) => {
                out.push(SHORT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Int(v) if i8::try_from(*v).is_ok() => {
                out.extend_from_slice(&[SMALLINT, *v as i8 as u8])
            }
            Value::Int(v) => {
                out.push(INT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Long(v) if i8::try_from(*v).is_ok() => {
                out.extend_from_slice(&[SMALLLONG, *v as i8 as u8])
            }
            Value::Long(v) => {
                out.push(LONG);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Binary(b) => encode_var(out, VBIN8, VBIN32, b)?,
            Value::String(s) => encode_var(out, STR8, STR32, s.as_bytes())?,
            Value::Symbol(s) => encode_var(out, SYM8, SYM32, s.0.as_bytes())?,
            Value::List(items) if items.is_empty() => out.push(LIST0),
            Value::List(items) => {
                let mut body = Vec::new();
                for v in items {
                    v.encode(&mut body)?;
                }
                encode_compound(out, LIST8, LIST32, items.len(), &body)?;
            }
            Value::Map(pairs) => {
                let mut body = Vec::new();
                for (k, v) in pairs {
                    k.encode(&mut body)?;
                    v.encode(&mut body)?;
                }
                encode_compound(out, MAP8, MAP32, pairs.len().saturating_mul(2), &body)?;
            }
            Value::Array(a) => {
                let mut body = Vec::new();
                a.encode_elements(&mut body)?;
                encode_compound(out, ARRAY8, ARRAY32, a.items.len(), &body)?;
            }
            Value::Described(d) => {
                out.push(DESCRIBED);
                d.descriptor.encode(out)?;
                d.value.encode(out)?;
            }
            other => {
                // Fixed-width types with one encoding each.
                out.push(fixed_code(other));
                encode_fixed_body(other, out);
            }
        }
        Ok(())
    }

    /// This value's encoding as a new buffer.
    pub fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }
}

impl Descriptor {
    /// Append the descriptor's encoding (without the 0x00 constructor).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Descriptor::Code(c) => Value::Ulong(*c).encode(out),
            Descriptor::Name(s) => Value::Symbol(s.clone()).encode(out),
        }
    }
}

fn fixed_code(v: &Value) -> u8 {
    use code::*;
    match v {
        Value::Float(_) => FLOAT,
        Value::Double(_) => DOUBLE,
        Value::Decimal32(_) => DECIMAL32,
        Value::Decimal64(_) => DECIMAL64,
        Value::Decimal128(_) => DECIMAL128,
        Value::Char(_) => CHAR,
        Value::Timestamp(_) => TIMESTAMP,
        Value::Uuid(_) => UUID,
        _ => NULL,
    }
}

fn encode_fixed_body(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Float(f) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
        Value::Double(f) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
        Value::Decimal32(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Decimal64(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Decimal128(d) => out.extend_from_slice(d),
        Value::Char(c) => out.extend_from_slice(&u32::from(*c).to_be_bytes()),
        Value::Timestamp(t) => out.extend_from_slice(&t.to_be_bytes()),
        Value::Uuid(u) => out.extend_from_slice(u),
        _ => {}
    }
}

fn encode_var(out: &mut Vec<u8>, c8: u8, c32: u8, b: &[u8]) -> Result<(), EncodeError> {
    if let Ok(n) = u8::try_from(b.len()) {
        out.extend_from_slice(&[c8, n]);
    } else {
        out.push(c32);
        out.extend_from_slice(&len32(b.len())?.to_be_bytes());
    }
    out.extend_from_slice(b);
    Ok(())
}

fn encode_compound(
    out: &mut Vec<u8>,
    c8: u8,
    c32: u8,
    count: usize,
    body: &[u8],
) -> Result<(), EncodeError> {
    match (u8::try_from(count), u8::try_from(body.len() + 1)) {
        (Ok(n), Ok(size)) => out.extend_from_slice(&[c8, size, n]),
        _ => {
            out.push(c32);
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(count)?.to_be_bytes());
        }
    }
    out.extend_from_slice(body);
    Ok(())
}

impl Array {
    /// The element format code this encoder uses for the array's elements.
    fn element_code(&self) -> u8 {
        use code::*;
        let all = |f: fn(&Value) -> bool| self.items.iter().all(f);
        match self.kind {
            Kind::Null => NULL,
            Kind::Boolean => BOOLEAN,
            Kind::Ubyte => UBYTE,
            Kind::Ushort => USHORT,
            Kind::Uint => UINT,
            Kind::Ulong => ULONG,
            Kind::Byte => BYTE,
            Kind::Short => SHORT,
            Kind::Int => INT,
            Kind::Long => LONG,
            Kind::Float => FLOAT,
            Kind::Double => DOUBLE,
            Kind::Decimal32 => DECIMAL32,
            Kind::Decimal64 => DECIMAL64,
            Kind::Decimal128 => DECIMAL128,
            Kind::Char => CHAR,
            Kind::Timestamp => TIMESTAMP,
            Kind::Uuid => UUID,
            Kind::Binary if all(|v| matches!(v, Value::Binary(b) if b.len() < 256)) => VBIN8,
            Kind::Binary => VBIN32,
            Kind::String if all(|v| matches!(v, Value::String(s) if s.len() < 256)) => STR8,
            Kind::String => STR32,
            Kind::Symbol if all(|v| matches!(v, Value::Symbol(s) if s.0.len() < 256)) => SYM8,
            Kind::Symbol => SYM32,
            Kind::List => LIST32,
            Kind::Map => MAP32,
            Kind::Array => ARRAY32,
        }
    }

    /// Encode the element constructor and the elements (the part after count).
    fn encode_elements(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if let Some(d) = &self.descriptor {
            out.push(code::DESCRIBED);
            d.encode(out)?;
        }
        let ec = self.element_code();
        out.push(ec);
        for item in &self.items {
            if item.kind() != Some(self.kind) {
                return Err(EncodeError::MixedArray {
                    expected: self.kind.name(),
                    found: item.type_name(),
                });
            }
            encode_element(item, ec, out)?;
        }
        Ok(())
    }
}

/// Encode one array element's body under element code `ec` (no constructor).
fn encode_element(v: &Value, ec: u8, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    use code::*;
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Ubyte(x) => out.push(*x),
        Value::Ushort(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Uint(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Ulong(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Byte(x) => out.push(*x as u8),
        Value::Short(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Int(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Long(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Binary(b) => var_body(out, ec == VBIN8, b)?,
        Value::String(s) => var_body(out, ec == STR8, s.as_bytes())?,
        Value::Symbol(s) => var_body(out, ec == SYM8, s.0.as_bytes())?,
        Value::List(items) => {
            let mut body = Vec::new();
            for i in items {
                i.encode(&mut body)?;
            }
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(items.len())?.to_be_bytes());
            out.extend_from_slice(&body);
        }
        Value::Map(pairs) => {
            let mut body = Vec::new();
            for (k, x) in pairs {
                k.encode(&mut body)?;
                x.encode(&mut body)?;
            }
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(pairs.len().saturating_mul(2))?.to_be_bytes());
            out.extend_from_slice(&body);
        }
        Value::Array(a) => {
            let mut body = Vec::new();
            a.encode_elements(&mut body)?;
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(a.items.len())?.to_be_bytes());
            out.extend_from_slice(&body);
        }
        Value::Described(_) => {
            return Err(EncodeError::MixedArray {
                expected: "primitive",
                found: "described",
            });
        }
        other => encode_fixed_body(other, out),
    }
    Ok(())
}

fn var_body(out: &mut Vec<u8>, short: bool, b: &[u8]) -> Result<(), EncodeError> {
    if short {
        out.push(u8::try_from(b.len()).map_err(|_| EncodeError::TooLarge)?);
    } else {
        out.extend_from_slice(&len32(b.len())?.to_be_bytes());
    }
    out.extend_from_slice(b);
    Ok(())
}
