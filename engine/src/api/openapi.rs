//! The OpenAPI 3.1 document of the control API (`engine/openapi.json`), served at `GET /v1/openapi.json`. A test
//! checks that it describes every endpoint the server has, and no other.

/// The document, as served.
pub const OPENAPI: &str = include_str!("../../openapi.json");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::routes::ROUTES;
    use std::collections::BTreeSet;

    fn document() -> serde_json::Value {
        serde_json::from_str(OPENAPI).expect("openapi.json is JSON")
    }

    #[test]
    fn the_document_has_every_route_and_no_other() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut documented = BTreeSet::new();
        for (path, methods) in doc["paths"].as_object().expect("paths") {
            for method in methods.as_object().expect("methods").keys() {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
        let served: BTreeSet<(String, String)> = ROUTES
            .iter()
            .map(|r| (r.method.to_owned(), r.pattern.to_owned()))
            .collect();
        assert_eq!(documented, served);
    }

    #[test]
    fn every_reference_resolves() {
        let doc = document();
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let pointer = r.strip_prefix('#').expect("a local reference");
            assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
        }
    }

    #[test]
    fn every_operation_documents_its_errors() {
        let doc = document();
        for (path, methods) in doc["paths"].as_object().expect("paths") {
            for (method, op) in methods.as_object().expect("methods") {
                let responses = op["responses"].as_object().expect("responses");
                for code in ["401", "405"] {
                    assert!(responses.contains_key(code), "{method} {path} lacks {code}");
                }
                let with_body = op.get("requestBody").is_some();
                if with_body {
                    assert!(responses.contains_key("400"), "{method} {path} lacks 400");
                }
            }
        }
    }

    fn collect_refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    if k == "$ref" {
                        out.extend(v.as_str().map(str::to_owned));
                    } else {
                        collect_refs(v, out);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
            _ => {}
        }
    }
}
