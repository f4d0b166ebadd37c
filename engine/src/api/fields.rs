//! JSON request bodies field by field, so that every error names the field at fault: a body that is not JSON
//! (`malformed_json`, with serde_json's line and column), not an object (`invalid_body`), a field nobody asked for
//! (`unknown_field`), or a value of the wrong type (`invalid_type`, naming `field` or `field[i]` for an element).

use super::answer::ErrorAnswer;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The fields of a JSON object body, taken one at a time.
#[derive(Debug)]
pub struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    /// Parses `body` (empty = `{}`) as an object whose keys are all in `allowed`.
    pub fn parse(body: &[u8], allowed: &[&str]) -> Result<Fields, ErrorAnswer> {
        if body.trim_ascii().is_empty() {
            return Ok(Fields { map: Map::new() });
        }
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            ErrorAnswer::bad_request("malformed_json", format!("the body is not valid JSON: {e}"))
        })?;
        let Value::Object(map) = value else {
            return Err(ErrorAnswer::bad_request(
                "invalid_body",
                format!("the body must be a JSON object, found {}", kind(&value)),
            ));
        };
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            let expected = allowed
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ErrorAnswer::field(
                "unknown_field",
                unknown.clone(),
                format!("unknown field `{unknown}`; expected {expected}"),
            ));
        }
        Ok(Fields { map })
    }

    /// The field `key`; None when absent or null.
    pub fn take<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, ErrorAnswer> {
        match self.map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => typed(v, key).map(Some),
        }
    }

    /// The array field `key`, each element typed on its own (an error names `key[i]`); None when absent or null.
    pub fn take_list<T: DeserializeOwned>(
        &mut self,
        key: &str,
    ) -> Result<Option<Vec<T>>, ErrorAnswer> {
        let items = match self.map.remove(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(ErrorAnswer::field(
                    "invalid_type",
                    key,
                    format!("`{key}`: expected an array, found {}", kind(&other)),
                ));
            }
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, v)| typed(v, &format!("{key}[{i}]")))
            .collect::<Result<Vec<T>, _>>()
            .map(Some)
    }
}

/// `v` as a `T`, or the 400 naming `field`.
fn typed<T: DeserializeOwned>(v: Value, field: &str) -> Result<T, ErrorAnswer> {
    let shown = kind(&v);
    serde_json::from_value(v).map_err(|e| {
        ErrorAnswer::field(
            "invalid_type",
            field,
            format!("`{field}`: {e} (found {shown})"),
        )
    })
}

/// What a JSON value is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWED: &[&str] = &["urls", "depth", "force"];

    #[test]
    fn fields_are_taken_by_type() {
        let mut f = Fields::parse(br#"{"urls": ["a", "b"], "depth": 2}"#, ALLOWED).unwrap();
        assert_eq!(
            f.take_list::<String>("urls").unwrap(),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(f.take::<u32>("depth").unwrap(), Some(2));
        assert_eq!(f.take::<bool>("force").unwrap(), None);
        let mut empty = Fields::parse(b" \n", ALLOWED).unwrap();
        assert_eq!(empty.take::<u32>("depth").unwrap(), None);
        let mut null = Fields::parse(br#"{"depth": null}"#, ALLOWED).unwrap();
        assert_eq!(null.take::<u32>("depth").unwrap(), None);
    }

    #[test]
    fn every_error_names_its_field() {
        let e = Fields::parse(br#"{"urls": [}"#, ALLOWED).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code, e.field.as_deref()),
            (400, "malformed_json", None)
        );
        assert!(e.message.contains("line 1 column"), "{}", e.message);
        let e = Fields::parse(b"[1]", ALLOWED).unwrap_err();
        assert_eq!(e.code, "invalid_body");
        let e = Fields::parse(br#"{"urls": [], "deep": 1}"#, ALLOWED).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("unknown_field", Some("deep"))
        );
        assert_eq!(
            e.message,
            "unknown field `deep`; expected `urls`, `depth`, `force`"
        );
        let mut f =
            Fields::parse(br#"{"depth": "2", "urls": ["a", 3], "force": 1}"#, ALLOWED).unwrap();
        let e = f.take::<u32>("depth").unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("invalid_type", Some("depth"))
        );
        assert!(
            e.message.starts_with("`depth`: invalid type: string \"2\""),
            "{}",
            e.message
        );
        let e = f.take_list::<String>("urls").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("urls[1]"));
        let e = f.take::<bool>("force").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("force"));
        let mut f = Fields::parse(br#"{"urls": "a"}"#, ALLOWED).unwrap();
        let e = f.take_list::<String>("urls").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("urls"));
        assert_eq!(e.message, "`urls`: expected an array, found a string");
        let mut f = Fields::parse(br#"{"depth": -1}"#, ALLOWED).unwrap();
        assert_eq!(
            f.take::<u32>("depth").unwrap_err().field.as_deref(),
            Some("depth")
        );
    }
}
