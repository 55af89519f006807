//! The [`JsonOut`] backend that builds a `serde_json::Value`.

use serde_json::{Map, Value};

use super::JsonOut;

/// Builds the `serde_json::Value` of what is written to it.
#[derive(Debug, Default)]
pub struct ValueBuilder {
    open: Vec<Open>,
    root: Option<Value>,
}

/// A container being filled.
#[derive(Debug)]
enum Open {
    /// An object and the key of its next value.
    Object(Map<String, Value>, Option<String>),
    Array(Vec<Value>),
}

/// The `Value` written by `write`.
pub fn to_value(write: impl FnOnce(&mut ValueBuilder)) -> Value {
    let mut b = ValueBuilder::default();
    write(&mut b);
    b.finish()
}

impl ValueBuilder {
    /// The value written (`null` if none); containers left open are closed.
    pub fn finish(mut self) -> Value {
        while !self.open.is_empty() {
            self.close();
        }
        self.root.unwrap_or(Value::Null)
    }

    fn put(&mut self, v: Value) {
        match self.open.last_mut() {
            Some(Open::Object(m, k)) => {
                m.insert(k.take().unwrap_or_default(), v);
            }
            Some(Open::Array(a)) => a.push(v),
            None => self.root = Some(v),
        }
    }

    fn close(&mut self) {
        let v = match self.open.pop() {
            Some(Open::Object(m, _)) => Value::Object(m),
            Some(Open::Array(a)) => Value::Array(a),
            None => return,
        };
        self.put(v);
    }
}

impl JsonOut for ValueBuilder {
    fn null(&mut self) {
        self.put(Value::Null);
    }
    fn bool(&mut self, v: bool) {
        self.put(v.into());
    }
    fn u64(&mut self, v: u64) {
        self.put(v.into());
    }
    fn i64(&mut self, v: i64) {
        self.put(v.into());
    }
    fn f64(&mut self, v: f64) {
        self.put(v.into());
    }
    fn str(&mut self, v: &str) {
        self.put(v.into());
    }
    fn str_with(&mut self, render: &mut dyn FnMut(&mut String)) {
        let mut s = String::new();
        render(&mut s);
        self.put(s.into());
    }
    fn base64(&mut self, bytes: &[u8]) {
        use base64::Engine;
        self.put(
            base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into(),
        );
    }
    fn hex(&mut self, bytes: &[u8]) {
        self.put(hex::encode(bytes).into());
    }
    fn begin_object(&mut self) {
        self.open.push(Open::Object(Map::new(), None));
    }
    fn key(&mut self, k: &str) {
        if let Some(Open::Object(_, key)) = self.open.last_mut() {
            *key = Some(k.to_owned());
        }
    }
    fn end_object(&mut self) {
        if matches!(self.open.last(), Some(Open::Object(..))) {
            self.close();
        }
    }
    fn begin_array(&mut self) {
        self.open.push(Open::Array(Vec::new()));
    }
    fn end_array(&mut self) {
        if matches!(self.open.last(), Some(Open::Array(_))) {
            self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_nested_values_with_map_semantics() {
        let v = to_value(|o| {
            o.begin_object();
            o.entry_str("b", "x");
            o.key("a");
            o.begin_array();
            o.u64(1);
            o.i64(-2);
            o.f64(f64::NAN);
            o.begin_object();
            o.end_object();
            o.end_array();
            o.entry_u64("b", 3);
            o.key("h");
            o.hex(&[0xab, 1]);
            o.key("r");
            o.base64(b"AMQP");
            o.end_object();
        });
        assert_eq!(
            v,
            json!({"a": [1, -2, null, {}], "b": 3, "h": "ab01", "r": "QU1RUA=="})
        );
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":[1,-2,null,{}],"b":3,"h":"ab01","r":"QU1RUA=="}"#
        );
    }
}
