//! Who asked for an operator action: logged with the action and kept with the state it set, so that an alert's
//! resolution undoes only what that alert did.

use std::fmt;

/// Who asked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Requester {
    /// A client of the control API, by its address (`ip:port`).
    Api { peer: String },
    /// An Alertmanager notification, by the alert's name and its fingerprint.
    Alert { alert: String, fingerprint: String },
    /// The process itself (a config reload, startup).
    Process,
}

impl Requester {
    /// True when this is the alert `fingerprint` (an alert only undoes what it did itself).
    pub fn is_alert(&self, fingerprint: &str) -> bool {
        matches!(self, Requester::Alert { fingerprint: f, .. } if f == fingerprint)
    }
}

impl fmt::Display for Requester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requester::Api { peer } => write!(f, "api {peer}"),
            Requester::Alert { alert, .. } => write!(f, "alert {alert}"),
            Requester::Process => f.write_str("process"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_and_round_trips() {
        let a = Requester::Alert {
            alert: "CrawlHostThrottling".into(),
            fingerprint: "f1".into(),
        };
        assert_eq!(a.to_string(), "alert CrawlHostThrottling");
        assert!(a.is_alert("f1") && !a.is_alert("f2"));
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Requester>(&json).unwrap(), a);
        let api = Requester::Api {
            peer: "127.0.0.1:5000".into(),
        };
        assert_eq!(api.to_string(), "api 127.0.0.1:5000");
        assert!(!api.is_alert("f1"));
    }
}
